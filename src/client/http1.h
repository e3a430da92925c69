/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The API client's transport: HTTP/1.1 over one kept-alive TCP connection, with TLS through
 * GnuTLS when the URL is https. It replaces libcurl, whose thirty libraries (OpenSSL's libcrypto,
 * Kerberos, LDAP, libssh2, ...) cost each CLI call milliseconds of loading and the agent megabytes
 * of resident pages, for the little the API needs: one server, bearer tokens, a CA, JSON bodies,
 * Content-Length and chunked answers, and streams that last as long as the server keeps them open.
 */

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "xpool/error.h"

/* What went wrong below HTTP: the client words each for the user (client.c). */
enum http1_failure {
        HTTP1_OK,
        HTTP1_BAD_URL,     /* not http(s)://HOST[:PORT][/PREFIX] */
        HTTP1_UNREACHABLE, /* no address of the host takes the connection */
        HTTP1_UNTRUSTED,   /* the certificate, or the CA we were given, does not verify */
        HTTP1_TIMEOUT,
        HTTP1_CANCELLED,
        HTTP1_OTHER, /* a broken connection, a malformed answer: detail says what */
};

struct http1_conn {
        /* from the URL (http1_init) */
        char *host, *port, *prefix; /* prefix: the URL's path without a trailing '/', or "" */
        bool tls;
        /* the TLS settings: a CA file or PEM text, or none (the system's trust store) */
        char *ca_file, *ca_pem;
        size_t ca_pem_len;
        bool insecure;
        const atomic_bool *cancelled; /* borrowed: checked at least every 200 ms */
        /* the connection, kept between requests */
        int fd;
        void *session; /* gnutls_session_t, NULL for plain HTTP */
        void *cred;    /* gnutls_certificate_credentials_t, made once */
        char local_ip[64];
        /* what the last failure was */
        enum http1_failure failure;
        char detail[256];
};

/* The answer, as it arrives: fn gets the status code first (data NULL), then the body in pieces.
 * A negative return stops the request with it. */
typedef int (*http1_data_fn)(long code, const char *data, size_t len, void *userdata);

/* Reads url (and copies the CA settings); HTTP1_BAD_URL goes to the first request. -ENOMEM. */
int http1_init(struct http1_conn *c,
               const char *url,
               const char *ca_file,
               const char *ca_pem,
               size_t ca_pem_len,
               bool insecure,
               const atomic_bool *cancelled);
void http1_done(struct http1_conn *c);

/*
 * One request: method, path (below the URL's prefix), headers (complete "Name: value\r\n"
 * lines), an optional body. timeout_ms bounds the whole request (0: none; connecting takes 10 s
 * at most). Returns 0 when the answer was read whole, fn's negative return, or -EIO with
 * c->failure and c->detail set. A kept-alive connection the server has closed meanwhile is
 * replaced once, before anything of the answer arrived.
 */
int http1_request(struct http1_conn *c,
                  const char *method,
                  const char *path,
                  const char *headers,
                  const char *body,
                  size_t body_len,
                  long timeout_ms,
                  http1_data_fn fn,
                  void *userdata);
