/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The HTTP client of the CLI's client verbs (get, apply, describe, delete, logs): finds the
 * kubeconfig, talks to the API server over libcurl (bearer token, TLS with the kubeconfig's CA,
 * one kept-alive connection) and turns failures into messages that say what to do next.
 */

#include <getopt.h>
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "cli.h"
#include "xpool/error.h"
#include "xpool/macro.h"

/* The flags every client verb takes. Strings are borrowed from argv. */
struct xp_client_options {
        const char *kubeconfig; /* --kubeconfig FILE */
        const char *context;    /* --context NAME */
        const char *server;     /* --server URL: overrides the kubeconfig's */
        const char *token;      /* --token TOKEN: overrides the kubeconfig's */
        const char *namespace;  /* -n/--namespace NS */
};

/* getopt_long codes of the shared long options (beyond any character). */
enum {
        XP_CLIENT_OPT_KUBECONFIG = 0x100,
        XP_CLIENT_OPT_CONTEXT,
        XP_CLIENT_OPT_SERVER,
        XP_CLIENT_OPT_TOKEN,
};

/* Rows for a command's `struct option` array: append to its own. */
#define XP_CLIENT_LONG_OPTIONS                                                                     \
        {"kubeconfig", required_argument, NULL, XP_CLIENT_OPT_KUBECONFIG},                         \
            {"context", required_argument, NULL, XP_CLIENT_OPT_CONTEXT},                           \
            {"server", required_argument, NULL, XP_CLIENT_OPT_SERVER},                             \
            {"token", required_argument, NULL, XP_CLIENT_OPT_TOKEN},                               \
        {                                                                                          \
                "namespace", required_argument, NULL, 'n'                                          \
        }

/* The usage lines of the shared options. */
#define XP_CLIENT_USAGE                                                                            \
        "  -n, --namespace NS   the namespace (default: the kubeconfig context's, else default)\n" \
        "      --kubeconfig FILE  credentials and server (default: $KUBECONFIG, else the\n"        \
        "                       server's DATA_DIR/admin.kubeconfig, else ~/.kube/config)\n"        \
        "      --context NAME   the kubeconfig context (default: its current-context)\n"           \
        "      --server URL     the API server, overriding the kubeconfig's\n"                     \
        "      --token TOKEN    the bearer token, overriding the kubeconfig's\n"

/*
 * xp_cli_getopt() for a client verb: its options end with XP_CLIENT_LONG_OPTIONS, and the shared
 * ones go into *opts before fn sees the command's own. Returns as xp_cli_getopt().
 */
int xp_client_getopt(int argc,
                     char **argv,
                     const char *shortopts,
                     const struct option *options,
                     const char *usage,
                     struct xp_client_options *opts,
                     xp_cli_option_fn *fn,
                     void *userdata);

struct xp_client;

/*
 * Resolves the kubeconfig and flags into a client. Kubeconfig lookup: --kubeconfig, else the
 * first file of $KUBECONFIG, else DATA_DIR/admin.kubeconfig (the default data directory,
 * xp_datadir_default()) when it exists, else ~/.kube/config when it exists; with --server none
 * is needed. -EINVAL/-ENOENT with err saying which file and what is wrong; -ENOMEM.
 */
int xp_client_new(const struct xp_client_options *opts,
                  struct xp_client **ret,
                  struct xp_error *err);
void xp_client_free(struct xp_client *client);
XP_DEFINE_FREEP(struct xp_client, xp_client_free)

/* The namespace to use: -n, else the context's, else "default". Borrowed from the client. */
const char *xp_client_namespace(const struct xp_client *client);
/* True when -n was given (apply refuses a manifest naming another namespace then). */
bool xp_client_namespace_explicit(const struct xp_client *client);

/* Accept value asking for a meta.k8s.io/v1 Table, with plain JSON as the fallback. */
#define XP_CLIENT_ACCEPT_TABLE "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"

/*
 * One request: method on path (with its query), an optional JSON body (borrowed) sent as
 * content_type (NULL: application/json), accept (NULL: application/json). On a 2xx answer
 * returns the HTTP code and *ret holds the parsed JSON answer (caller decrefs). Otherwise
 * nothing is returned and err says what to do next:
 *   -ECONNREFUSED and the like: `cannot reach the xpool server at URL: is it running? ...`;
 *   -EACCES (401): `the server rejected the credentials in FILE: MESSAGE`;
 *   -ENOENT (404), -EEXIST (409), -EINVAL (400, 422), -EPERM (403), -EIO (others): kubectl's
 *   `Error from server (Reason): message` from the Status the server answered.
 */
int xp_client_json(struct xp_client *client,
                   const char *method,
                   const char *path,
                   const char *content_type,
                   const json_t *body,
                   const char *accept,
                   json_t **ret,
                   struct xp_error *err);

/* GET path as JSON, the answer's text as it came (xp_apiclient_get_text()): caller frees. */
int xp_client_get_text(
    struct xp_client *client, const char *path, char **ret, size_t *ret_len, struct xp_error *err);

/* Called with each piece of a streamed answer; a negative return stops the stream with it. */
typedef int (*xp_client_data_fn)(const char *data, size_t len, void *userdata);

/*
 * GET path and hand each piece of a 2xx answer to fn as it arrives (watch, logs -f) until the
 * server ends it. Errors as xp_client_json(), or fn's own negative return.
 */
int xp_client_stream(struct xp_client *client,
                     const char *path,
                     const char *accept,
                     xp_client_data_fn fn,
                     void *userdata,
                     struct xp_error *err);

/*
 * Prints err for the user: kubectl's `Error from server (...)` lines as they are, everything
 * else as `error: MESSAGE`.
 */
void xp_client_report(const struct xp_error *err);

/* Appends `&key=value` (or `?key=value` when buf has no query yet), value percent-encoded.
 * -ENAMETOOLONG when it does not fit. */
int xp_client_add_query(char *buf, size_t size, const char *key, const char *value);

/* ---- output shared by the client verbs ---- */

/* Prints value as `kubectl -o json` does (4-space indentation) and a newline. -EIO. */
int xp_cli_print_json(FILE *out, const json_t *value);
/* Prints value as one YAML document (xp_yaml_dump). -EINVAL, -ENOMEM, -EIO. */
int xp_cli_print_yaml(FILE *out, const json_t *value);
/* A v1 List of items (borrowed), as kubectl prints several objects. NULL on -ENOMEM. */
json_t *xp_cli_list_new(const json_t *items);
