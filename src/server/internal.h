/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Shared between the HTTP layer (http.c) and the API handlers (api.c). */

#include <jansson.h>
#include <stddef.h>

#include "xpool/store.h"

enum http_method {
        HTTP_GET,
        HTTP_POST,
        HTTP_PUT,
        HTTP_DELETE,
        HTTP_OTHER,
};

#define ROUTE_PARAMS_MAX 2

/* One request, as a handler sees it; everything borrowed for the call. */
struct request {
        enum http_method method;
        const char *path;
        const char *body; /* NUL-terminated; "" when none */
        size_t body_len;
        struct xp_store *store;
        const char *server_address; /* host:port clients reach us on */
        const char *namespace;      /* {namespace} from the path, NULL when the route has none */
        const char *name;           /* {name} from the path, NULL when the route has none */
};

/* What a handler answers: an HTTP code and a JSON body (owned). */
struct reply {
        unsigned code;
        json_t *body;
};

struct route {
        enum http_method method;
        const char *pattern; /* "/api/v1/namespaces/{namespace}/pods/{name}" */
        int (*handler)(const struct request *req, const void *data, struct reply *ret);
        const void *data; /* passed to the handler: the resource kind for object routes */
};

extern const struct route api_routes[];
extern const size_t api_routes_n;

/*
 * Fills ret with a Kubernetes Status object (status Failure). reason is NotFound, Conflict, ...;
 * name and kind go in details when not NULL. Returns 0, or -ENOMEM.
 */
int reply_status(struct reply *ret,
                 unsigned code,
                 const char *reason,
                 const char *name,
                 const char *kind,
                 const char *fmt,
                 ...) __attribute__((format(printf, 6, 7)));
