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
#include "xpool/kube_version.h"
#include "xpool/patch.h"
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

struct satoken_key;
struct servingcert_signer;
struct agent_tls;
struct srv_metrics;
struct srv_usage;

/* What every handler shares: the store, the registry over it, and the server's lifecycle. */
struct api {
        struct xp_store *store;
        struct xp_registry *registry; /* the writes handlers share with the controllers */
        const char *server_address;   /* host:port clients reach us on */
        const char *local_node;       /* reached at 127.0.0.1 (xp_server_options) */
        atomic_bool stopping;         /* set before the HTTP daemon stops: streams end */
        struct auth *auth;            /* the tokens; signs log requests to agents (logproxy.c) */
        struct satoken_key *satoken;  /* signs service account tokens (satoken.h); NULL: none */
        /* The not-ready and unreachable tolerations' tolerationSeconds a new pod gets
         * (DefaultTolerationSeconds): the pod eviction timeout, in whole seconds. */
        int64_t pod_toleration_seconds;
        struct srv_metrics *metrics;     /* /metrics (metrics.h); NULL: not counted */
        struct srv_usage *usage;         /* the agents' usage samples (usage.h): metrics.k8s.io */
        struct xp_history *history;      /* the dashboard's last hour (controller/history.h) */
        struct service_ips *service_ips; /* Services' cluster IPs (api_service.c) */
        struct node_ports *node_ports;   /* Services' node ports (api_nodeport.c) */
        struct watch_batches *watch_batches; /* watches' shared reads (watch_shared.h) */
        /* what the nodes' pods name, for the node authorizer (xpool/nodegraph.h) */
        struct xp_node_graph *node_graph;
        /* signs the agents' serving certificates (servingcert.h); NULL under --no-tls */
        struct servingcert_signer *serving_signer;
        /* how the server reaches agents: HTTPS verified against the cluster CA (agent_tls.h);
         * NULL under --no-tls, plain HTTP */
        struct agent_tls *agent_tls;
};

struct auth_identity;
struct xp_history;

/* One request, as a handler sees it; everything borrowed for the call. */
struct request {
        enum http_method method;
        const char *path;
        const char *body; /* NUL-terminated; "" when none */
        size_t body_len;
        struct api *api;
        const char *group;       /* {group} from the path ("" for the core group) */
        const char *version;     /* {version} from the path ("v1" for the core group) */
        const char *namespace;   /* {namespace} from the path, NULL when the route has none */
        const char *name;        /* {name} from the path, NULL when the route has none */
        const char *subresource; /* the route's ("status", "scale"...), NULL for the object */
        const struct auth_identity *who; /* the authenticated caller; NULL when auth is off */
        void *connection; /* the HTTP layer's: use request_query(), request_header() */
        /* the pod the authorisation read (a node's request on a pod bound to it), else NULL: the
         * handler's first read of it takes this copy (read_stored()) rather than read it again */
        struct prefetched *prefetched;
};

struct prefetched {
        /* req's namespace and name, as stored at version: shared with the store's readers
         * (xp_store_get_shared()), read-only */
        json_t *pod;
        uint64_t version;
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
        /* NULL, or the stream as the HTTP layer's stream hub asks for it (stream_pump_fn in
         * stream_hub.h): then one thread writes it with every other such stream, and read() is
         * what serves it where the hub cannot take the connection */
        int (*pump)(void *state,
                    int64_t now_ms,
                    const char **ret_data,
                    size_t *ret_len,
                    int64_t *ret_due_ms);
        void (*free)(void *state);
        void *state;
};

/*
 * A connection handed over after a 101 (exec, attach, port-forward: api_stream.c): headers are
 * the response's (name, value, ..., NULL; borrowed from state). run() gets the client's socket on
 * a thread of its own and the bytes the client sent past the request; it returns when the stream
 * ends, within about a second once api->stopping is set, and must not close fd. free() releases
 * state in every case, run or not.
 */
struct upgrade {
        const char *const *headers;
        void (*run)(void *state, int fd, const char *early, size_t early_len);
        void (*free)(void *state);
        void *state;
};

/* What a handler answers: an HTTP code and one body: JSON (owned), text (owned) or a stream;
 * or an upgrade (code 101). */
struct reply {
        unsigned code;
        json_t *body;
        char *text;
        struct stream stream;
        struct upgrade upgrade;
        const char *content_type; /* for text and streams; JSON bodies are application/json */
        const char *headers[13];  /* more headers: name, value, ..., NULL (borrowed: static) */
        char warning[640];        /* the value of a Warning header in headers, when one is */
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
        ROUTE_SCALE = 1u << 4,  /* {resource} must have a scale subresource */
};

struct route {
        enum http_method method;
        /* "/api/v1/namespaces/{namespace}/{resource}/{name}": {group}, {resource}, {namespace},
         * {name} each capture one path segment */
        const char *pattern;
        route_handler handler;
        unsigned flags;          /* enum route_flags; 0 for the discovery documents */
        const char *subresource; /* "status", "binding", "log", NULL */
        /* For a route without a kind, the resource authorisation sees (the reviews, the
         * metrics), or NULL: then a non-resource path, which a service account without a role
         * may read under /api/ and /apis/ (discovery) */
        const char *resource;
        /* Set per request by the dispatcher from {resource} (or ROUTE_PODS); NULL otherwise. */
        const struct xp_kind *kind;
        /* The API group of resource where the pattern names it literally (metrics.k8s.io). */
        const char *group;
};

/*
 * A boolean query parameter as kube-apiserver decodes one (Convert_Slice_string_To_bool): absent,
 * "0" and "false" (any case) are false, every other value is true, so ?watch=True (the Python
 * client's) and ?watch= are watches (api_query.c).
 */
bool query_flag(const char *value);
/* ?watch as query_flag() reads it (http.c). */
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
/* As reply_status(), with details.group beside details.kind (an empty group: none). */
int reply_status_group(struct reply *ret,
                       unsigned code,
                       const char *reason,
                       const char *name,
                       const char *group,
                       const char *kind,
                       const char *fmt,
                       ...) __attribute__((format(printf, 7, 8)));
/* "leases.coordination.k8s.io" (resource) or "Lease.coordination.k8s.io"; core: "pods", "Pod". */
void kind_qualified(const struct xp_kind *kind, bool resource, char buf[static 128]);
/*
 * The StatusCause type of a field error's message in field.ErrorList's words: "Required value"
 * is FieldValueRequired, "Unsupported value" FieldValueNotSupported, "Forbidden"
 * FieldValueForbidden, "Duplicate value" FieldValueDuplicate; anything else FieldValueInvalid.
 */
const char *cause_type(const char *message);
/* Takes body (NULL means out of memory: -ENOMEM). */
int reply_json(struct reply *ret, unsigned code, json_t *body);
/* Whether len bytes of text are all ASCII (what an answer may pass on unescaped). */
bool text_is_ascii(const char *text, size_t len);
/*
 * Answers with an object as the store wrote it: *text (xp_store_written's, taken and set to NULL
 * when used), else, when it is NULL or not ASCII, *object (taken and set to NULL) as reply_json().
 */
int reply_written(struct reply *ret, unsigned code, char **text, json_t **object);
/* Maps a store error (-ENOENT, -EEXIST, -ESTALE, ...) to the Status Kubernetes answers with. */
int reply_store_error(struct reply *ret,
                      int r,
                      const struct xp_kind *kind,
                      const char *name,
                      const struct xp_error *err);
/*
 * 422 Invalid for a JSON patch that does not apply, as kube-apiserver answers it ("the server
 * rejected our request due to an error in our request", details {}), so that kubectl prints a
 * cluster's line; why (the failure in the JSON patch library's words, which kube-apiserver
 * drops) goes out as a Warning header, which kubectl prints above it.
 */
int reply_patch_failed(struct reply *ret, const char *why);
/*
 * A Status for an object that fails validation: 422 Invalid with the problem ("field: what") as a
 * cause kubectl prints, or 400 BadRequest for a field strict validation does not know, in the
 * API server's words. problem is the codec's message.
 */
int reply_invalid(struct reply *ret,
                  const struct xp_kind *kind,
                  const char *name,
                  const char *problem);
/* 404 "the server could not find the requested resource: METHOD PATH", as for a path no route
 * serves. */
int reply_no_resource(struct reply *ret, const char *method, const char *path);
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

/* ---- list options (api_list.c) -------------------------------------------------------------- */

enum list_match {
        LIST_MATCH_NONE,
        LIST_MATCH_EXACT,
        LIST_MATCH_NOT_OLDER,
        LIST_MATCH_OTHER
};

/* A list's or a watch's ListOptions beyond the selectors. */
struct list_options {
        int64_t limit;              /* 0: no limit */
        const char *continue_token; /* NULL when none */
        uint64_t version;           /* ?resourceVersion; 0 when absent or "0" */
        enum list_match match;      /* ?resourceVersionMatch */
        int send_initial;           /* ?sendInitialEvents: -1 absent, 0, 1 */
        bool bookmarks;             /* ?allowWatchBookmarks */
        int64_t continue_rv;        /* the token's: the snapshot it continues; -1: the current */
        char start[3 * 253 + 8];    /* the token's start key: after the last listed key */
        size_t start_len;
};

/* Reads and validates them as kube-apiserver does: 1, or 0 with ret filled (400, 422). */
int list_options_parse(const struct request *req,
                       const struct xp_kind *kind,
                       bool watch,
                       struct list_options *o,
                       struct reply *ret);
/*
 * The current list answered from the store's text (api_list_text.c), streamed, without a tree of
 * its objects: *ret_answered with 0 (ret filled) or -errno; else 1 and the caller answers (a
 * Table, a page, an older version).
 */
int list_text(const struct request *req,
              const struct xp_kind *kind,
              const struct list_options *o,
              bool *ret_answered,
              struct reply *ret);
/*
 * 1 when the object's text matches the selectors, 0 when not, -ENOMEM. Labels alone need only
 * the labels' text: a pod's metadata also holds its managedFields, most of its size.
 */
int text_matches(const struct xp_label_selector *labels,
                 const struct xp_field_selector *fields,
                 const char *text,
                 size_t len);
/*
 * The items of a list's Table (api_list_table.c), as list_read() and list_filter() give them but
 * decoded from the store's text less what no row reads (xp_table_object_decode()): 1 with
 * *ret_items, *ret_version and *ret_filtered; 0 with ret filled; -errno; 2 when the Table is not
 * one it can build (the whole object asked, or a list at an older version): the caller reads it.
 * With ?includeObject=Metadata (the default) *ret_metadata_texts is a JSON object of each item's
 * metadata text (its JSON, ASCII-escaped) by "namespace/name", for reply_table_text(); else NULL.
 */
int list_table_read(const struct request *req,
                    const struct xp_kind *kind,
                    const struct list_options *o,
                    json_t **ret_items,
                    uint64_t *ret_version,
                    bool *ret_filtered,
                    json_t **ret_metadata_texts,
                    struct reply *ret);
/*
 * Answers the Table of page (borrowed, list_table_read()'s items), its ListMeta list_meta
 * (borrowed), each row's PartialObjectMetadata with its metadata copied from metadata_texts as
 * text, as reply_json() would write the Table of whole objects: 0 or -ENOMEM.
 */
int reply_table_text(const struct xp_kind *kind,
                     const json_t *page,
                     json_t *list_meta,
                     const json_t *metadata_texts,
                     struct reply *ret);
/*
 * The streamed list itself: open reads the snapshot's version and writes the head (takes labels
 * and fields, either may be NULL); read hands out the answer's next bytes (0 at its end, -errno
 * when it must be cut short) as a stream's read does; free takes it in any state.
 */
struct list_stream;
int list_stream_open(struct xp_store *store,
                     const struct xp_kind *kind,
                     const char *namespace,
                     struct xp_label_selector *labels,
                     struct xp_field_selector *fields,
                     struct list_stream **ret,
                     struct xp_error *err);
ssize_t list_stream_read(void *state, char *buf, size_t max);
void list_stream_free(void *state);
/*
 * Records a create (live NULL), update or patch other than an apply in object's
 * metadata.managedFields as an Update by the request's manager (api_managed.c). 0 or -ENOMEM.
 */
int managed_fields_record(const struct request *req,
                          const struct xp_kind *kind,
                          const json_t *live,
                          json_t *object);
/*
 * Waits up to 3 s for the store to reach ?resourceVersion rv (NULL, "0" or unreadable: no wait):
 * 1, or 0 with ret filled (504 Timeout "Too large resource version", as kube-apiserver)
 * (api_fresh.c).
 */
int wait_fresh(const struct request *req, const char *rv, struct reply *ret);
/* The list to page through (the token's snapshot, or Exact's): 1, or 0 with ret filled (410). */
int list_read(const struct request *req,
              const struct xp_kind *kind,
              const struct list_options *o,
              json_t **ret_items,
              uint64_t *ret_version,
              struct reply *ret);
/*
 * The page of items (borrowed) after the token's start, at most o->limit: *ret_page new,
 * *ret_continue the next token (NULL on the last page), *ret_remaining the items after the page
 * (-1 on the last). 0 or -ENOMEM.
 */
int list_page(const struct xp_kind *kind,
              const struct list_options *o,
              json_t *items,
              uint64_t version,
              json_t **ret_page,
              char **ret_continue,
              int64_t *ret_remaining);

/*
 * Reads DeleteOptions (a JSON object, borrowed: ret_options' strings point into it) into
 * ret_options, on top of what it holds: 1, or 0 with ret filled (400) (api_objects.c).
 */
/*
 * DeleteOptions.propagationPolicy (options: the body, may be NULL) on a DELETE that is not a
 * pod's: 2 when the object is to be removed as usual (Background), else 1/0 as a handler with
 * ret filled (Foreground, Orphan: marked with the finalizer; 400 for an unknown policy)
 * (api_cascade.c).
 */
int delete_cascade(const struct request *req,
                   const struct xp_kind *kind,
                   const json_t *options,
                   bool dry,
                   struct reply *ret);
struct xp_registry_delete_options;
int delete_options_json(const struct request *req,
                        const struct xp_kind *kind,
                        const json_t *options,
                        struct xp_registry_delete_options *ret_options,
                        struct reply *ret);

/* ---- handlers (api_*.c) ---------------------------------------------------------------------- */

int handle_version(const struct request *req, const struct route *route, struct reply *ret);
/* POST pods/{name}/eviction (policy/v1 Eviction) (api_eviction.c). */
int handle_eviction(const struct request *req, const struct route *route, struct reply *ret);
int handle_health(const struct request *req, const struct route *route, struct reply *ret);
/* POST serviceaccounts/{name}/token (authentication.k8s.io/v1 TokenRequest) (api_token.c). */
int handle_token_request(const struct request *req, const struct route *route, struct reply *ret);
/* certificates.k8s.io CertificateSigningRequest for kubelet-serving, signed at once (api_csr.c) */
int handle_certificate_signing_request(const struct request *req,
                                       const struct route *route,
                                       struct reply *ret);
int handle_api(const struct request *req, const struct route *route, struct reply *ret);
int handle_apis(const struct request *req, const struct route *route, struct reply *ret);
int handle_api_group(const struct request *req, const struct route *route, struct reply *ret);
int handle_api_resources(const struct request *req, const struct route *route, struct reply *ret);
int handle_openapi_v2(const struct request *req, const struct route *route, struct reply *ret);
int handle_openapi_v3(const struct request *req, const struct route *route, struct reply *ret);
int handle_openapi_v3_group(const struct request *req,
                            const struct route *route,
                            struct reply *ret);

/*
 * The body of a request for an object that is answered, never stored (a review, a
 * TokenRequest): JSON, or protobuf read into JSON, of that kind and apiVersion (either may be
 * absent), checked against the kind's API schema. 1 with *ret_json, else 0 with ret filled (400
 * in kube-apiserver's words), or -ENOMEM (api_auth_review.c).
 */
int answered_body(const struct request *req,
                  const char *kind,
                  const char *api_version,
                  json_t **ret_json,
                  struct reply *ret);

/* The reviews (api_auth_review.c): who the caller is, whether it may, what it may. */
int handle_self_subject_review(const struct request *req,
                               const struct route *route,
                               struct reply *ret);
int handle_self_subject_access_review(const struct request *req,
                                      const struct route *route,
                                      struct reply *ret);
int handle_self_subject_rules_review(const struct request *req,
                                     const struct route *route,
                                     struct reply *ret);

int handle_create(const struct request *req, const struct route *route, struct reply *ret);
int handle_get(const struct request *req, const struct route *route, struct reply *ret);
int handle_list(const struct request *req, const struct route *route, struct reply *ret);
int handle_update(const struct request *req, const struct route *route, struct reply *ret);
/*
 * A node's write of a pod's status (candidate, the object it would store) keeps the conditions
 * of stored's status the node does not own and its write lacks (api_node_status.c). Other
 * writers and kinds: candidate unchanged. 0, or -ENOMEM.
 */
int node_status_keep_conditions(const struct request *req,
                                const struct xp_kind *kind,
                                const json_t *stored,
                                json_t *candidate);
/*
 * The generic update path for a write a subresource computed (api_scale.c): candidate, a changed
 * copy of stored (whose version is expected), validated, admitted and written as handle_update()
 * does, with ?dryRun honoured. 0 with ret filled (the written object, or the error); -ESTALE
 * without touching ret when retry is set and another write won; -ENOMEM.
 */
int update_object(const struct request *req,
                  const struct xp_kind *kind,
                  const json_t *stored,
                  const json_t *candidate,
                  uint64_t expected,
                  bool retry,
                  struct reply *ret);
/* .../scale of the kinds with a scale subresource: autoscaling/v1 Scale (api_scale.c). */
int handle_scale(const struct request *req, const struct route *route, struct reply *ret);
int handle_patch(const struct request *req, const struct route *route, struct reply *ret);
int handle_delete(const struct request *req, const struct route *route, struct reply *ret);
/* DELETE of a collection: each object the selectors match, as handle_delete()
 * (api_delete_collection.c). */
int handle_delete_collection(const struct request *req,
                             const struct route *route,
                             struct reply *ret);

int handle_binding(const struct request *req, const struct route *route, struct reply *ret);
int handle_log(const struct request *req, const struct route *route, struct reply *ret);
/* Who asked, for the agent's per-user shares of its streams (xpool/signonce.h, its stream
 * limits): 16 hex digits of the SHA-256 of the caller's kind and name, "" when auth is off
 * (api_stream.c). */
void api_stream_owner(const struct request *req, char ret[static 17]);
/* exec, attach, portforward (api_stream.c): proxied to the agent of the pod's node. */
int handle_stream(const struct request *req, const struct route *route, struct reply *ret);
/* The request's target as it arrived, query and all (http.c). */
const char *request_raw_target(const struct request *req);

/*
 * The container a pods/log, exec or attach request is about (api_pods.c): ?container=, or the
 * only one. 1 with *ret_container (borrowed from pod), else 0 with ret filled (400 naming the
 * pod's containers, as Kubernetes does).
 */
int pod_container(const struct request *req,
                  const struct xp_kind *pods,
                  const json_t *pod,
                  const char **ret_container,
                  struct reply *ret);
/*
 * A socket connected to node's agent at host:port within 5 s (logproxy.c), non-blocking: over
 * HTTPS verified as agent_tls.h says when api->agent_tls is set. The fd, or -errno with err.
 */
int agent_connect(
    const struct api *api, const char *node, const char *host, unsigned port, struct xp_error *err);
/* Sends all of data on fd, waiting up to 5 s for room at a time (logproxy.c). 0 or -errno. */
int agent_send_all(int fd, const char *data, size_t len);

/* ---- an agent's answer (agent_answer.c) ------------------------------------------------------ */

#define AGENT_HEAD_MAX 8192
/*
 * Waits until fd is readable: 1, 0 when timeout_ms (< 0: none) passed, -ECANCELED when the
 * server stops or client_fd (-1: none) hung up.
 */
int agent_wait_readable(struct api *api, int fd, int client_fd, int timeout_ms);
/*
 * Reads the agent's status line and headers from fd into buf (NUL-terminated), waiting as
 * agent_wait_readable(): the bytes read (the headers and what came after them), with
 * *ret_head_len (the headers and their blank line) and *ret_code; -errno with err.
 */
int agent_read_head(struct api *api,
                    int fd,
                    int client_fd,
                    int timeout_ms,
                    char buf[static AGENT_HEAD_MAX + 1],
                    size_t *ret_head_len,
                    unsigned *ret_code,
                    struct xp_error *err);
/*
 * Reads the rest of an answer's body after agent_read_head() (len bytes in buf, head_len of them
 * the head): up to its Content-Length (else to the end of the connection), at most
 * AGENT_HEAD_MAX bytes in all, each wait at most timeout_ms. The bytes in buf, NUL-terminated.
 */
int agent_read_body(struct api *api,
                    int fd,
                    int timeout_ms,
                    char buf[static AGENT_HEAD_MAX + 1],
                    size_t len,
                    size_t head_len);
/*
 * The agent's refusal (code, its body's text, trimmed here) as a Status: its 400 (and 403 when
 * forbidden_is_client) BadRequest, 404 NotFound, the rest 503 "the xpool agent of node NODE
 * answered CODE<what>: BODY". 0 or -ENOMEM.
 */
int agent_refusal(const struct request *req,
                  const char *node,
                  unsigned code,
                  const char *what,
                  bool forbidden_is_client,
                  char *body,
                  struct reply *ret);
/* The node's log endpoint (api_pods.c): 1 with host and port, else 0 with ret filled. */
int node_log_endpoint(const struct request *req,
                      const char *node,
                      char host[static 64],
                      unsigned *ret_port,
                      struct reply *ret);

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

/* /metrics and metrics.k8s.io (api_metrics.c). */
int handle_metrics(const struct request *req, const struct route *route, struct reply *ret);
int handle_metrics_group(const struct request *req, const struct route *route, struct reply *ret);
int handle_metrics_resources(const struct request *req,
                             const struct route *route,
                             struct reply *ret);
int handle_node_metrics(const struct request *req, const struct route *route, struct reply *ret);
int handle_pod_metrics(const struct request *req, const struct route *route, struct reply *ret);
int handle_device_metrics(const struct request *req, const struct route *route, struct reply *ret);
/* Prometheus HTTP service discovery of the agents (metrics_sd.c). */
int handle_prometheus_sd(const struct request *req, const struct route *route, struct reply *ret);
/* metrics.k8s.io's entry in the APIGroupList of /apis (new reference, NULL out of memory). */
json_t *metrics_api_group_json(void);

/* Starts a watch stream (api_watch.c); called by handle_list for ?watch=true. */
int watch_start(const struct request *req, const struct route *route, struct reply *ret);

/* ---- discovery (api_discovery*.c), shared with the OpenAPI documents (api_openapi*.c) -------- */

/* The Kubernetes release whose API the server speaks: xpool/kube_version.h. */

/*
 * The API groups served besides the core one, in discovery order (Kubernetes' for the groups it
 * has, then the others in the kinds table's order), NULL-terminated: those of the kinds table
 * (xpool/kind.h) and of the reviews.
 */
const char *const *api_groups(void);
bool api_group_served(const char *group);
/* The one version served of group: its kinds' ("autoscaling": "v2"); "v1" for the core group
 * and the reviews' groups. */
const char *api_group_version(const char *group);
/* The most versions a group serves at once. */
#define API_VERSIONS_MAX 4
/* The versions group serves (its kinds' and reviews'), the preferred first, as Kubernetes
 * orders them (GA, beta, alpha): their count, at most max. */
size_t api_group_versions(const char *group, const char **ret, size_t max);
bool api_group_has_version(const char *group, const char *version);
/* A stored object read through kind: *object (owned) replaced by kind's version of it, where
 * kind is served in another version than stored (xp_kind.answer_as). 0 or -ENOMEM. */
int shown_as(const struct xp_kind *kind, json_t **object);

/* A subresource of a kind ("pods/status"): the kind it takes and its verbs (NULL-terminated). */
struct api_subresource {
        const char *plural;
        const char *name;
        const char *kind; /* the kind the subresource takes */
        const char *const *verbs;
        const char *group, *version; /* of the kind, when not the resource's (Eviction) */
};
/*
 * The subresources of kind, in discovery order: scale and status where the kinds table says it
 * has them, then the fixed ones (pods/binding, pods/log, ...). Fills ret (at most max) and
 * returns how many.
 */
size_t api_kind_subresources(const struct xp_kind *kind, struct api_subresource *ret, size_t max);
#define API_SUBRESOURCES_MAX 16

/* The verbs of every kind's resource, and of a review (create). */
extern const char *const api_object_verbs[];
/* The verbs discovery lists for a kind: api_object_verbs, less deletecollection for namespaces. */
const char *const *api_kind_verbs(const struct xp_kind *kind);
extern const char *const api_review_verbs[];

/* A resource that is answered, never stored (api_auth_review.c): cluster-scoped, create only. */
struct api_review {
        const char *group;
        const char *plural;
        const char *singular;
        const char *kind; /* also its API schema type */
};
extern const struct api_review api_reviews[];
extern const size_t api_reviews_n;

/* A JSON array of the strings (NULL-terminated; NULL is empty); NULL without memory. */
json_t *api_string_array(const char *const *strings);

/* The Accept header asks for aggregated discovery (apidiscovery.k8s.io v2 or v2beta1). */
bool discovery_aggregated(const struct request *req);
/* The aggregated document of the core group (core) or of the named groups. */
int reply_aggregated(const struct request *req, bool core, struct reply *ret);

/* ---- server-side apply (api_apply.c), called from handle_patch() ----------------------------- */

/* Creates the object json describes (taken: freed as soon as it is decoded), as a POST would: 0
 * with ret filled, or -errno. */
int create_json(const struct request *req,
                const struct xp_kind *kind,
                json_t *json,
                unsigned flags,
                bool dry,
                struct reply *ret);
/* The body of an apply patch, JSON or one YAML document; NULL with jerr->text saying why. */
json_t *apply_body(const struct request *req, json_error_t *jerr);
/* Applies config onto stored: 1 with *ret_patched, else 0 with ret filled (409 conflicts). */
int apply_patch(const struct request *req,
                const struct xp_kind *kind,
                const json_t *stored,
                const json_t *config,
                json_t **ret_patched,
                struct reply *ret);
/* An apply to an object that does not exist: creates it (201), ret filled; or -errno. */
int apply_create(const struct request *req,
                 const struct xp_kind *kind,
                 const json_t *config,
                 unsigned flags,
                 bool dry,
                 struct reply *ret);

/*
 * A patch body whose JSON is not the shape its type needs (a JSON patch that is no list of
 * operations, a merge patch that is no object), refused as kube-apiserver refuses it, in Go's
 * words for its fieldValidation directive (api_patch_body.c). 1 when it is fine (null is), else
 * 0 with ret filled (400).
 */
int patch_body_decodes(const struct request *req,
                       enum xp_patch_type type,
                       const json_t *patch,
                       struct reply *ret);

/* ---- Services (api_service.c, service_kubernetes.c) ------------------------------------------ */

struct service_ips;
/*
 * The cluster IP ranges (NULL: 10.96.0.0/12): one CIDR, or an IPv4 and an IPv6 one separated by a
 * comma, the first the primary family (service_ips.c). -EINVAL with err, -ENOMEM.
 */
int service_ips_new(const char *ranges, struct service_ips **ret, struct xp_error *err);
/* The primary range's first address, the `kubernetes` Service's. */
void service_ips_first(const struct service_ips *ips, char buf[static 46]);
void service_ips_free(struct service_ips *ips);
/* The cluster's families, the primary first: "IPv4", "IPv6"; NULL past the last (ips NULL: IPv4).
 */
const char *service_ips_family(const struct service_ips *ips, size_t i);
/*
 * A free cluster IP of family ("IPv4", "IPv6") into buf: want (NULL: any) when it is in that
 * family's range and free. 0, -EINVAL (err says why, in kube-apiserver's words), -ENOSPC, or the
 * store's errors.
 */
int service_ips_allocate(struct service_ips *ips,
                         struct xp_store *store,
                         const char *family,
                         const char *want,
                         char buf[static 46],
                         struct xp_error *err);
/*
 * A new Service (JSON, changed in place) gets its policy, families and cluster IPs as
 * kube-apiserver's initIPFamilyFields and allocators give them (api_service.c). 1, or 0 with ret
 * filled (422), or -ENOMEM.
 */
int service_admit(const struct request *req, json_t *service, struct reply *ret);
/*
 * The Service's policy and families against the cluster's: SingleStack with two families,
 * RequireDualStack on a single-stack cluster, a family it lacks, a cluster IP of the other family
 * than its index's, refused as kube-apiserver does (the middle two allowed to a headless Service
 * without selector; ExternalName unchecked). 1, or 0 with ret filled (422), or -ENOMEM.
 */
int service_families_check(const struct service_ips *ips, const json_t *service, struct reply *ret);
/*
 * The object a Service's update writes (*ret_update, new): candidate with the stored cluster IPs,
 * policy and families where it left them out (not for ExternalName), as kube-apiserver keeps
 * them; a policy change that leaves them as stored drops the secondary family and address
 * (SingleStack) or adds one (RequireDualStack, PreferDualStack on a dual-stack cluster). 1, 0 with
 * ret filled (422), -ENOMEM.
 */
int service_keep_allocated(const struct request *req,
                           const json_t *stored,
                           const json_t *candidate,
                           json_t **ret_update,
                           struct reply *ret);

struct node_ports;
#define NODE_PORTS_MAP (65536 / 8) /* a bitmap of ports */
/* The node port range, "FIRST-LAST" or "FIRST+N" (NULL: 30000-32767): -EINVAL with err. */
int node_ports_new(const char *range, struct node_ports **ret, struct xp_error *err);
void node_ports_free(struct node_ports *np);
/*
 * A port of the range not in taken: want (0: any, at random) when it is in the range and free.
 * -EINVAL with err in kube-apiserver's words, -ENOSPC when the range is full.
 */
int node_ports_pick(const struct node_ports *np,
                    const uint8_t taken[static NODE_PORTS_MAP],
                    unsigned want,
                    unsigned *ret,
                    struct xp_error *err);
/*
 * A Service created (old NULL) or updated from old (JSON, changed in place) gets its ports'
 * nodePorts when its type needs them, or loses them when it no longer does. 1, or 0 with ret
 * filled (422), or -errno.
 */
int service_node_ports(const struct request *req,
                       const json_t *old,
                       json_t *service,
                       struct reply *ret);
/* Writes or sets right the `kubernetes` Service, Endpoints and EndpointSlice in default: the
 * server listens on host and port. 0 or the registry's errors. */
int service_kubernetes_reconcile(
    struct api *api, const char *cluster_ip, const char *host, uint16_t port, struct xp_error *err);
