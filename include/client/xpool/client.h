/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The HTTP client of the API server, shared by the CLI and the node agent: a server URL, a bearer
 * token and a CA (file or PEM), JSON requests, and streamed GETs (watches, logs) handed to a
 * callback piece by piece or line by line. One client holds one kept-alive
 * connection: a client is used by one thread at a time, so each thread makes its own.
 */

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "xpool/error.h"
#include "xpool/macro.h"

struct xp_apiclient_options {
        const char *server;  /* http://HOST:PORT or https://HOST:PORT; a trailing '/' is dropped */
        const char *token;   /* bearer token; NULL: none */
        const char *ca_file; /* PEM file of the CA that signed the server's certificate; NULL */
        const char *ca_pem;  /* the same as PEM text (ca_pem_len bytes); NULL: none */
        size_t ca_pem_len;
        bool insecure;          /* do not verify the server's certificate */
        const char *cred_where; /* where the token came from, for messages; NULL: "the token" */
        long timeout_ms;        /* per JSON request; 0: none (streams never time out) */
};

struct xp_apiclient;

/* Copies what options points to. -EINVAL (no server) or -errno with err; -ENOMEM. */
int xp_apiclient_new(const struct xp_apiclient_options *options,
                     struct xp_apiclient **ret,
                     struct xp_error *err);
void xp_apiclient_free(struct xp_apiclient *client);
XP_DEFINE_FREEP(struct xp_apiclient, xp_apiclient_free)

/*
 * The local IP address of the client's last connection to the server (the address the server
 * sees: an agent's InternalIP by default). Caller frees. -ENOTCONN before any request.
 */
int xp_apiclient_local_address(struct xp_apiclient *client, char **ret);

/*
 * Makes the request in progress on client (from another thread) and every later one fail with
 * -ECANCELED within about a second: how a thread blocked in a watch is stopped.
 */
void xp_apiclient_cancel(struct xp_apiclient *client);

/*
 * One request: method on path (with its query), an optional JSON body (borrowed) sent as
 * content_type (NULL: application/json), accept (NULL: application/json). On a 2xx answer
 * returns the HTTP code and *ret (when ret is not NULL) holds the parsed answer (caller decrefs).
 * Otherwise nothing is returned and err says what happened:
 *   -ECONNREFUSED and the like: `cannot reach the xpool server at URL: is it running? ...`;
 *   -EACCES (401): `the server rejected the credentials in WHERE: MESSAGE`;
 *   -ENOENT (404), -EEXIST (409), -ESTALE (410), -EINVAL (400, 422), -EPERM (403), -EIO (others):
 *   kubectl's `Error from server (Reason): message` from the Status the server answered;
 *   -ECANCELED after xp_apiclient_cancel(); -EBADMSG for a 2xx answer that is not JSON.
 */
int xp_apiclient_json(struct xp_apiclient *client,
                      const char *method,
                      const char *path,
                      const char *content_type,
                      const json_t *body,
                      const char *accept,
                      json_t **ret,
                      struct xp_error *err);

/*
 * GET path as JSON, and the answer's text as it came: for a reader that decodes only part of it
 * (xp_table_list_decode()). On a 2xx answer returns the HTTP code, *ret the text (NUL-terminated,
 * caller frees) and *ret_len its length. Errors as xp_apiclient_json(), less -EBADMSG: the text is
 * not looked at.
 */
int xp_apiclient_get_text(struct xp_apiclient *client,
                          const char *path,
                          char **ret,
                          size_t *ret_len,
                          struct xp_error *err);

/* Called with each piece of a streamed answer; a negative return stops the stream with it. */
typedef int (*xp_apiclient_data_fn)(const char *data, size_t len, void *userdata);

/*
 * GET path and hand each piece of a 2xx answer to fn as it arrives until the server ends it.
 * Errors as xp_apiclient_json(), or fn's own negative return.
 */
int xp_apiclient_stream(struct xp_apiclient *client,
                        const char *path,
                        const char *accept,
                        xp_apiclient_data_fn fn,
                        void *userdata,
                        struct xp_error *err);

/*
 * As xp_apiclient_stream(), but fn gets each complete line (without its '\n', NUL-terminated,
 * borrowed for the call): the events of a watch. A line longer than 64 MiB fails with -E2BIG;
 * a last line without '\n' is handed over when the stream ends.
 */
int xp_apiclient_stream_lines(struct xp_apiclient *client,
                              const char *path,
                              const char *accept,
                              xp_apiclient_data_fn fn,
                              void *userdata,
                              struct xp_error *err);

/* Appends `&key=value` (or `?key=value` when buf has no query yet), value percent-encoded.
 * -ENAMETOOLONG when it does not fit (buf is unchanged then). */
int xp_apiclient_add_query(char *buf, size_t size, const char *key, const char *value);
