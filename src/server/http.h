/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The HTTP layer (http.c): serves the routes table over libmicrohttpd, behind the front door
 * (include/http/xpool/http_door.h), on a listening socket that the server's assembly (server.c)
 * opened.
 */

#include <stdbool.h>

#include "internal.h"
#include "xpool/error.h"

struct auth;
struct http;

struct http_options {
        int listen_fd;        /* bound and listening; taken in every case */
        bool ipv6;            /* listen_fd is an IPv6 socket */
        const char *tls_cert; /* PEM; both NULL: plain HTTP */
        const char *tls_key;
        int64_t watch_stall_ms;  /* 0: STREAM_HUB_STALL_MS */
        int64_t idle_timeout_ms; /* 0: the door's (xp_http_door_server_limits) */
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

/* ---- routing (http_route.c) ------------------------------------------------------------------ */

/* "GET", ... as enum http_method; HTTP_OTHER for any other. */
enum http_method http_method_from_string(const char *method);

/* What a pattern's {placeholders} captured: one path segment each. */
struct http_captures {
        char group[XP_STORE_KEY_MAX + 1];
        char resource[XP_STORE_KEY_MAX + 1];
        char namespace[XP_STORE_KEY_MAX + 1];
        char name[XP_STORE_KEY_MAX + 1];
        char version[XP_STORE_KEY_MAX + 1];
        bool has_group, has_resource, has_namespace, has_name, has_version;
};

/*
 * The route of the routes table (api_routes) that serves method on path (decoded), with its
 * kind set for resource routes: 1 with *ret_route and *ret filled; 0 when routes match the path
 * but none with that method (405); -ENOENT when none matches it (404).
 */
int http_route_lookup(enum http_method method,
                      const char *path,
                      struct route *ret_route,
                      struct http_captures *ret);

/* ---- authorisation (http_authz.c) ------------------------------------------------------------ */

struct auth_identity;

/* The paths anyone may read (GET /version and the health checks), as Kubernetes allows. */
bool http_path_is_public(const char *method, const char *path);

/*
 * The node authorizer's rule for Secrets and ConfigMaps (resource "secrets" or "configmaps"):
 * whether a pod bound to node names ns/name (xpool/podrefs.h), from the graph of what the nodes'
 * pods name (xpool/nodegraph.h). False when the pods cannot be read.
 */
struct xp_node_graph;
bool http_node_references(struct xp_node_graph *graph,
                          const char *resource,
                          const char *ns,
                          const char *name,
                          const char *node);

/*
 * Authorises an authenticated request for a route: 1 when it may go on, else 0 with ret filled
 * (403 Forbidden; 404 for a node acting on a pod that does not exist), as Kubernetes answers;
 * -errno on failure.
 */
int http_authorize(const struct route *route,
                   const struct request *req,
                   const struct auth_identity *who,
                   struct reply *ret);
