/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The HTTP layer (http.c): serves the routes table over libmicrohttpd on a listening socket that
 * the server's assembly (server.c) opened.
 */

#include <stdbool.h>

#include "xpool/error.h"

struct api;
struct auth;
struct http;

struct http_options {
        int listen_fd;        /* bound and listening; taken on success */
        bool ipv6;            /* listen_fd is an IPv6 socket */
        const char *tls_cert; /* PEM; both NULL: plain HTTP */
        const char *tls_key;
};

/*
 * Starts serving on its own threads. api and auth (NULL: no authentication) are borrowed until
 * http_stop(); the PEM texts are read at once. -errno with err saying why.
 */
int http_start(struct api *api,
               struct auth *auth,
               const struct http_options *o,
               struct http **ret,
               struct xp_error *err);

/* Stops accepting, ends the requests in flight and closes the socket. NULL is fine. */
void http_stop(struct http *http);
