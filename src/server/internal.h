/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Shared by the HTTP layer (http.c) and the API handlers (api_*.c): the request a handler sees,
 * the reply it fills, the routes table, and the helpers every handler uses.
 */

#include <jansson.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "xpool/error.h"
#include "xpool/kind.h"
#include "xpool/registry.h"
#include "xpool/store.h"
#include "xpool/table.h"

enum http_method {
        HTTP_GET,
        HTTP_POST,
        HTTP_PUT,
        HTTP_PATCH,
        HTTP_DELETE,
        HTTP_OTHER,
};

/* What every handler shares: the store, the registry over it, and the server's lifecycle. */
struct api {
        struct xp_store *store;
        struct xp_registry *registry; /* the writes handlers share with the controllers */
        const char *server_address;   /* host:port clients reach us on */
        atomic_bool stopping;         /* set before the HTTP daemon stops: streams end */
        struct auth *auth;            /* the tokens; signs log requests to agents (logproxy.c) */
};

struct auth_identity;

/* One request, as a handler sees it; everything borrowed for the call. */
struct request {
        enum http_method method;
        const char *path;
        const char *body; /* NUL-terminated; "" when none */
        size_t body_len;
        struct api *api;
        const char *group;     /* {group} from the path ("" for the core group) */
        const char *namespace; /* {namespace} from the path, NULL when the route has none */
        const char *name;      /* {name} from the path, NULL when the route has none */
        const struct auth_identity *who; /* the authenticated caller; NULL when auth is off */
        void *connection; /* the HTTP layer's: use request_query(), request_header() */
};

/* A query parameter (?watch=true) or NULL when absent. */
const char *request_query(const struct request *req, const char *key);
/* A request header (case-insensitive name) or NULL when absent. */
const char *request_header(const struct request *req, const char *name);
/* The client's socket (to notice a client that went away while a stream waits), or -1. */
int request_socket(const struct request *req);

/*
 * A body produced piece by piece (watch streams, logs): read() fills buf with up to max bytes and
 * returns the count (> 0), 0 at the end of the stream, or -errno to drop the connection. It may
 * block (each connection has its own thread) but must return within about a second once
 * api->stopping is set. free() releases state when the connection ends, whatever the reason.
 */
struct stream {
        ssize_t (*read)(void *state, char *buf, size_t max);
        void (*free)(void *state);
        void *state;
};

/* What a handler answers: an HTTP code and one body: JSON (owned), text (owned) or a stream. */
struct reply {
        unsigned code;
        json_t *body;
        char *text;
        struct stream stream;
        const char *content_type; /* for text and streams; JSON bodies are application/json */
};

struct route;
typedef int (*route_handler)(const struct request *req,
                             const struct route *route,
                             struct reply *ret);

enum route_flags {
        ROUTE_NAMESPACED = 1u << 0, /* {resource} must be a namespaced kind */
        ROUTE_CLUSTER = 1u << 1,    /* {resource} must be a cluster-scoped kind */
        ROUTE_ANY_SCOPE = ROUTE_NAMESPACED | ROUTE_CLUSTER,
        ROUTE_STATUS = 1u << 2, /* {resource} must have a status subresource */
        ROUTE_PODS = 1u << 3,   /* the resource is pods (a literal in the pattern) */
};

struct route {
        enum http_method method;
        /* "/api/v1/namespaces/{namespace}/{resource}/{name}": {group}, {resource}, {namespace},
         * {name} each capture one path segment */
        const char *pattern;
        route_handler handler;
        unsigned flags;          /* enum route_flags; 0 for the discovery documents */
        const char *subresource; /* "status", "binding", "log", NULL */
        /* Set per request by the dispatcher from {resource} (or ROUTE_PODS); NULL otherwise. */
        const struct xp_kind *kind;
};

/* ?watch=true (or 1) (http.c). */
bool request_is_watch(const struct request *req);
/* The Accept header asks for a meta.k8s.io Table (kubectl get) (api_query.c). */
bool request_wants_table(const struct request *req);
/* ?includeObject's value (NULL or "" is Metadata); false when it is none of the three. */
bool table_include_parse(const char *value, enum xp_table_include *ret);

/* Kinds whose status is written through /status only: pods, nodes, namespaces (routes.c). */
bool kind_has_status(const struct xp_kind *kind);

extern const struct route api_routes[];
extern const size_t api_routes_n;

/* ---- replies (reply.c) ---------------------------------------------------------------------- */

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
/* Takes body (NULL means out of memory: -ENOMEM). */
int reply_json(struct reply *ret, unsigned code, json_t *body);
/* Maps a store error (-ENOENT, -EEXIST, -ESTALE, ...) to the Status Kubernetes answers with. */
int reply_store_error(struct reply *ret,
                      int r,
                      const struct xp_kind *kind,
                      const char *name,
                      const struct xp_error *err);
/*
 * A Status for an object that fails validation: 422 Invalid with the problem ("field: what") as a
 * cause kubectl prints, or 400 BadRequest for a field strict validation does not know, in the
 * API server's words. problem is the codec's message.
 */
int reply_invalid(struct reply *ret,
                  const struct xp_kind *kind,
                  const char *name,
                  const char *problem);
/* A successful Status ({"status":"Success"}), as Kubernetes answers binding and some deletes. */
int reply_success(struct reply *ret, unsigned code);

/* ---- shared handler helpers ------------------------------------------------------------------ */

/* The store's namespace key: the request's for namespaced kinds, "" otherwise. */
const char *store_namespace(const struct request *req, const struct xp_kind *kind);

/*
 * Holds the request's namespace for a write (xp_registry_namespace_hold()): 1 when it exists and
 * is Active (or the kind is cluster-scoped), else 0 with ret filled: 404 namespaces "x" not
 * found, 403 when it is being deleted. On 1 the caller must namespace_release() after its write.
 */
int namespace_check(const struct request *req, const struct xp_kind *kind, struct reply *ret);
void namespace_release(const struct request *req, const struct xp_kind *kind);

/* DELETE of a namespace (xp_registry_namespace_delete()), answered as Kubernetes does. */
int namespace_delete(const struct request *req,
                     const struct xp_kind *kind,
                     uint64_t expected,
                     bool dry,
                     struct reply *ret);

struct xp_label_selector;
struct xp_field_selector;
/* ?labelSelector= and ?fieldSelector= (either may be absent): 1 with both set, 0 with ret filled.
 */
int selectors_parse(const struct request *req,
                    const struct xp_kind *kind,
                    struct xp_label_selector **ret_labels,
                    struct xp_field_selector **ret_fields,
                    struct reply *ret);
bool selectors_match(const struct xp_label_selector *labels,
                     const struct xp_field_selector *fields,
                     const json_t *object);

/* ---- handlers (api_*.c) ---------------------------------------------------------------------- */

int handle_version(const struct request *req, const struct route *route, struct reply *ret);
int handle_health(const struct request *req, const struct route *route, struct reply *ret);
int handle_api(const struct request *req, const struct route *route, struct reply *ret);
int handle_apis(const struct request *req, const struct route *route, struct reply *ret);
int handle_api_group(const struct request *req, const struct route *route, struct reply *ret);
int handle_api_resources(const struct request *req, const struct route *route, struct reply *ret);
int handle_openapi_v3(const struct request *req, const struct route *route, struct reply *ret);
int handle_openapi_v3_group(const struct request *req,
                            const struct route *route,
                            struct reply *ret);

int handle_create(const struct request *req, const struct route *route, struct reply *ret);
int handle_get(const struct request *req, const struct route *route, struct reply *ret);
int handle_list(const struct request *req, const struct route *route, struct reply *ret);
int handle_update(const struct request *req, const struct route *route, struct reply *ret);
int handle_patch(const struct request *req, const struct route *route, struct reply *ret);
int handle_delete(const struct request *req, const struct route *route, struct reply *ret);

int handle_binding(const struct request *req, const struct route *route, struct reply *ret);
int handle_log(const struct request *req, const struct route *route, struct reply *ret);

/*
 * Proxies GET path_query to the agent at host:port (logproxy.c), signed with the node token's id
 * and key (follow: the agent may take its time before the first byte): a 200 streams through
 * (text/plain, chunk by chunk as it arrives), the agent's 400 and 404 come back as Status objects
 * with its message, and an agent that cannot be reached, or that refuses the signature, is 503
 * naming node. Returns 0 or -ENOMEM.
 */
int log_proxy(const struct request *req,
              const char *node,
              const char *host,
              unsigned port,
              const char *path_query,
              const char *token_id,
              const uint8_t key[static 32],
              bool follow,
              struct reply *ret);

/* Starts a watch stream (api_watch.c); called by handle_list for ?watch=true. */
int watch_start(const struct request *req, const struct route *route, struct reply *ret);
