/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The routes table: the discovery documents, then the object paths for every kind, matched in
 * order. {resource} is resolved through the kinds table (xpool/kind.h) when a request arrives, and
 * a route whose {resource} names no kind of its group and scope does not match, so that
 * /api/v1/namespaces/x/status reaches the Namespace status route.
 */
#include <string.h>

#include "internal.h"
#include "ui.h"
#include "xpool/macro.h"

#define CORE  "/api/v1"
#define GROUP "/apis/{group}/{version}"

/* The object routes under one prefix: core, or a named group. */
#define OBJECT_ROUTES(prefix)                                                                      \
        {HTTP_GET,                                                                                 \
         prefix "/namespaces/{namespace}/{resource}",                                              \
         handle_list,                                                                              \
         ROUTE_NAMESPACED,                                                                         \
         NULL},                                                                                    \
            {HTTP_POST,                                                                            \
             prefix "/namespaces/{namespace}/{resource}",                                          \
             handle_create,                                                                        \
             ROUTE_NAMESPACED,                                                                     \
             NULL},                                                                                \
            {HTTP_DELETE,                                                                          \
             prefix "/namespaces/{namespace}/{resource}",                                          \
             handle_delete_collection,                                                             \
             ROUTE_NAMESPACED,                                                                     \
             NULL},                                                                                \
            {HTTP_GET,                                                                             \
             prefix "/namespaces/{namespace}/{resource}/{name}",                                   \
             handle_get,                                                                           \
             ROUTE_NAMESPACED,                                                                     \
             NULL},                                                                                \
            {HTTP_PUT,                                                                             \
             prefix "/namespaces/{namespace}/{resource}/{name}",                                   \
             handle_update,                                                                        \
             ROUTE_NAMESPACED,                                                                     \
             NULL},                                                                                \
            {HTTP_PATCH,                                                                           \
             prefix "/namespaces/{namespace}/{resource}/{name}",                                   \
             handle_patch,                                                                         \
             ROUTE_NAMESPACED,                                                                     \
             NULL},                                                                                \
            {HTTP_DELETE,                                                                          \
             prefix "/namespaces/{namespace}/{resource}/{name}",                                   \
             handle_delete,                                                                        \
             ROUTE_NAMESPACED,                                                                     \
             NULL},                                                                                \
            {HTTP_GET,                                                                             \
             prefix "/namespaces/{namespace}/{resource}/{name}/status",                            \
             handle_get,                                                                           \
             ROUTE_NAMESPACED | ROUTE_STATUS,                                                      \
             "status"},                                                                            \
            {HTTP_PUT,                                                                             \
             prefix "/namespaces/{namespace}/{resource}/{name}/status",                            \
             handle_update,                                                                        \
             ROUTE_NAMESPACED | ROUTE_STATUS,                                                      \
             "status"},                                                                            \
            {HTTP_PATCH,                                                                           \
             prefix "/namespaces/{namespace}/{resource}/{name}/status",                            \
             handle_patch,                                                                         \
             ROUTE_NAMESPACED | ROUTE_STATUS,                                                      \
             "status"},                                                                            \
            {HTTP_GET, prefix "/{resource}", handle_list, ROUTE_ANY_SCOPE, NULL},                  \
            {HTTP_POST, prefix "/{resource}", handle_create, ROUTE_CLUSTER, NULL},                 \
            {HTTP_DELETE, prefix "/{resource}", handle_delete_collection, ROUTE_CLUSTER, NULL},    \
            {HTTP_GET, prefix "/{resource}/{name}", handle_get, ROUTE_CLUSTER, NULL},              \
            {HTTP_PUT, prefix "/{resource}/{name}", handle_update, ROUTE_CLUSTER, NULL},           \
            {HTTP_PATCH, prefix "/{resource}/{name}", handle_patch, ROUTE_CLUSTER, NULL},          \
            {HTTP_DELETE, prefix "/{resource}/{name}", handle_delete, ROUTE_CLUSTER, NULL},        \
            {HTTP_GET,                                                                             \
             prefix "/{resource}/{name}/status",                                                   \
             handle_get,                                                                           \
             ROUTE_CLUSTER | ROUTE_STATUS,                                                         \
             "status"},                                                                            \
            {HTTP_PUT,                                                                             \
             prefix "/{resource}/{name}/status",                                                   \
             handle_update,                                                                        \
             ROUTE_CLUSTER | ROUTE_STATUS,                                                         \
             "status"},                                                                            \
        {                                                                                          \
                HTTP_PATCH, prefix "/{resource}/{name}/status", handle_patch,                      \
                    ROUTE_CLUSTER | ROUTE_STATUS, "status"                                         \
        }

/* The scale subresource of the kinds that declare one (api_scale.c). */
#define SCALE_ROUTES(prefix)                                                                       \
        {HTTP_GET,                                                                                 \
         prefix "/namespaces/{namespace}/{resource}/{name}/scale",                                 \
         handle_scale,                                                                             \
         ROUTE_NAMESPACED | ROUTE_SCALE,                                                           \
         "scale"},                                                                                 \
            {HTTP_PUT,                                                                             \
             prefix "/namespaces/{namespace}/{resource}/{name}/scale",                             \
             handle_scale,                                                                         \
             ROUTE_NAMESPACED | ROUTE_SCALE,                                                       \
             "scale"},                                                                             \
            {HTTP_PATCH,                                                                           \
             prefix "/namespaces/{namespace}/{resource}/{name}/scale",                             \
             handle_scale,                                                                         \
             ROUTE_NAMESPACED | ROUTE_SCALE,                                                       \
             "scale"},                                                                             \
            {HTTP_GET,                                                                             \
             prefix "/{resource}/{name}/scale",                                                    \
             handle_scale,                                                                         \
             ROUTE_CLUSTER | ROUTE_SCALE,                                                          \
             "scale"},                                                                             \
            {HTTP_PUT,                                                                             \
             prefix "/{resource}/{name}/scale",                                                    \
             handle_scale,                                                                         \
             ROUTE_CLUSTER | ROUTE_SCALE,                                                          \
             "scale"},                                                                             \
        {                                                                                          \
                HTTP_PATCH, prefix "/{resource}/{name}/scale", handle_scale,                       \
                    ROUTE_CLUSTER | ROUTE_SCALE, "scale"                                           \
        }

#define METRICS_GROUP       "metrics.k8s.io"
#define XPOOL_METRICS_GROUP "metrics.xpool.io"
#define METRICS             "/apis/" METRICS_GROUP "/v1beta1"

const struct route api_routes[] = {
    {HTTP_GET, "/metrics", handle_metrics, 0, NULL},
    {HTTP_GET, "/apis/metrics.k8s.io", handle_metrics_group, 0, NULL},
    {HTTP_GET, METRICS, handle_metrics_resources, 0, NULL},
    /* resources, not discovery: a service account without a role reads none of them */
    {HTTP_GET, METRICS "/nodes", handle_node_metrics, 0, NULL, "nodes", .group = METRICS_GROUP},
    {HTTP_GET,
     METRICS "/nodes/{name}",
     handle_node_metrics,
     0,
     NULL,
     "nodes",
     .group = METRICS_GROUP},
    {HTTP_GET, METRICS "/pods", handle_pod_metrics, 0, NULL, "pods", .group = METRICS_GROUP},
    {HTTP_GET,
     METRICS "/namespaces/{namespace}/pods",
     handle_pod_metrics,
     0,
     NULL,
     "pods",
     .group = METRICS_GROUP},
    {HTTP_GET,
     METRICS "/namespaces/{namespace}/pods/{name}",
     handle_pod_metrics,
     0,
     NULL,
     "pods",
     .group = METRICS_GROUP},
    {HTTP_GET,
     "/apis/" XPOOL_METRICS_GROUP "/v1alpha1/devices",
     handle_device_metrics,
     0,
     NULL,
     "devices",
     .group = XPOOL_METRICS_GROUP},
    {HTTP_GET,
     "/apis/" XPOOL_METRICS_GROUP "/v1alpha1/http_sd",
     handle_prometheus_sd,
     0,
     NULL,
     "http_sd",
     .group = XPOOL_METRICS_GROUP},
    {HTTP_GET, "/version", handle_version, 0, NULL},
    {HTTP_GET, "/healthz", handle_health, 0, NULL},
    {HTTP_GET, "/livez", handle_health, 0, NULL},
    {HTTP_GET, "/readyz", handle_health, 0, NULL},
    {HTTP_GET, "/api", handle_api, 0, NULL},
    {HTTP_GET, "/api/v1", handle_api_resources, 0, NULL},
    {HTTP_GET, "/apis", handle_apis, 0, NULL},
    {HTTP_GET, "/apis/{group}", handle_api_group, 0, NULL},
    {HTTP_GET, "/apis/{group}/{version}", handle_api_resources, 0, NULL},
    {HTTP_GET, "/openapi/v2", handle_openapi_v2, 0, NULL},
    {HTTP_GET, "/openapi/v3", handle_openapi_v3, 0, NULL},
    {HTTP_GET, "/openapi/v3/api/v1", handle_openapi_v3_group, 0, NULL},
    {HTTP_GET, "/openapi/v3/apis/{group}/{version}", handle_openapi_v3_group, 0, NULL},
    {HTTP_GET, "/ui", handle_ui_asset, 0, NULL},
    {HTTP_GET, "/ui/", handle_ui_asset, 0, NULL},
    {HTTP_GET, "/ui/api/history", handle_ui_history, 0, NULL},
    {HTTP_GET, "/ui/{name}", handle_ui_asset, 0, NULL},
    {HTTP_POST,
     CORE "/namespaces/{namespace}/pods/{name}/binding",
     handle_binding,
     ROUTE_NAMESPACED | ROUTE_PODS,
     "binding"},
    {HTTP_POST,
     CORE "/namespaces/{namespace}/pods/{name}/eviction",
     handle_eviction,
     ROUTE_NAMESPACED | ROUTE_PODS,
     "eviction"},
    /* TokenRequest: {resource} must be serviceaccounts (the handler checks) */
    {HTTP_POST,
     CORE "/namespaces/{namespace}/{resource}/{name}/token",
     handle_token_request,
     ROUTE_NAMESPACED,
     "token"},
    {HTTP_GET,
     CORE "/namespaces/{namespace}/pods/{name}/log",
     handle_log,
     ROUTE_NAMESPACED | ROUTE_PODS,
     "log"},
    /* an agent's serving certificate: answered, never stored (api_csr.c) */
    {HTTP_POST,
     "/apis/certificates.k8s.io/v1/certificatesigningrequests",
     handle_certificate_signing_request,
     0,
     NULL,
     "certificatesigningrequests",
     .group = "certificates.k8s.io"},
    /* the reviews: answered, never stored; {group} must be theirs (the handlers check) */
    {HTTP_POST,
     GROUP "/selfsubjectreviews",
     handle_self_subject_review,
     0,
     NULL,
     "selfsubjectreviews"},
    {HTTP_POST,
     GROUP "/selfsubjectaccessreviews",
     handle_self_subject_access_review,
     0,
     NULL,
     "selfsubjectaccessreviews"},
    {HTTP_POST,
     GROUP "/selfsubjectrulesreviews",
     handle_self_subject_rules_review,
     0,
     NULL,
     "selfsubjectrulesreviews"},
    /* exec, attach, port-forward: GET for a WebSocket, POST for SPDY (api_stream.c) */
    {HTTP_GET,
     CORE "/namespaces/{namespace}/pods/{name}/exec",
     handle_stream,
     ROUTE_NAMESPACED | ROUTE_PODS,
     "exec"},
    {HTTP_POST,
     CORE "/namespaces/{namespace}/pods/{name}/exec",
     handle_stream,
     ROUTE_NAMESPACED | ROUTE_PODS,
     "exec"},
    {HTTP_GET,
     CORE "/namespaces/{namespace}/pods/{name}/attach",
     handle_stream,
     ROUTE_NAMESPACED | ROUTE_PODS,
     "attach"},
    {HTTP_POST,
     CORE "/namespaces/{namespace}/pods/{name}/attach",
     handle_stream,
     ROUTE_NAMESPACED | ROUTE_PODS,
     "attach"},
    {HTTP_GET,
     CORE "/namespaces/{namespace}/pods/{name}/portforward",
     handle_stream,
     ROUTE_NAMESPACED | ROUTE_PODS,
     "portforward"},
    {HTTP_POST,
     CORE "/namespaces/{namespace}/pods/{name}/portforward",
     handle_stream,
     ROUTE_NAMESPACED | ROUTE_PODS,
     "portforward"},
    SCALE_ROUTES(CORE),
    SCALE_ROUTES(GROUP),
    OBJECT_ROUTES(CORE),
    OBJECT_ROUTES(GROUP),
};

const size_t api_routes_n = XP_ELEMENTSOF(api_routes);

/* The kinds whose status is a subresource (ROUTE_STATUS), as the kinds table says. */
bool kind_has_status(const struct xp_kind *kind)
{
        return xp_kind_has_status(kind);
}
