/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The API server: a Kubernetes-shaped REST API (v1 Pods and Nodes, discovery documents) over the
 * durable store, served over HTTP by libmicrohttpd. docs/server.md describes the endpoints.
 *
 * Lifecycle: xp_server_new() opens the store and starts serving on its own threads at once;
 * xp_server_free() stops accepting, waits for the requests in flight, and closes the store.
 * The caller handles signals (block SIGINT/SIGTERM before xp_server_new() so that the server's
 * threads inherit the mask, then sigwait()).
 */

#include <stdint.h>

#include "xpool/error.h"

#define XP_SERVER_DEFAULT_PORT 6443
#define XP_SERVER_BODY_MAX     (3 * 1024 * 1024) /* request bodies: larger ones are 413 */

struct xp_server;

struct xp_server_options {
        const char *host;     /* an IPv4 or IPv6 literal; NULL means 127.0.0.1 */
        uint16_t port;        /* 0 picks a free port: xp_server_port() tells which */
        const char *data_dir; /* must exist; the store is DATA_DIR/state.db */
};

/*
 * Opens the store and starts listening. -errno with err saying what failed: the store's errors
 * (xp_store_open()), -EINVAL for a bad host, -EADDRINUSE (or another) when it cannot listen.
 * Caller frees with xp_server_free().
 */
int xp_server_new(const struct xp_server_options *options,
                  struct xp_server **ret,
                  struct xp_error *err);

/* The port it listens on (the chosen one when options.port was 0). */
uint16_t xp_server_port(const struct xp_server *server);

/* Stops serving (requests in flight finish) and closes the store. NULL is fine. */
void xp_server_free(struct xp_server *server);
