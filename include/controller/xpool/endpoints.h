/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The endpoints controller: for every Service with a selector, the v1 Endpoints and the
 * discovery.k8s.io/v1 EndpointSlices of the pods it selects, as kube-controller-manager's
 * endpoints and endpointslice controllers write them. Services without a selector are left
 * alone (their Endpoints are the user's). docs/server.md, "Services".
 *
 * The computation (endpoints_calc.c) is pure and tested on its own (tests/unit/
 * test_endpoints.c); the controller (endpoints.c) is level-triggered over the informer: a change
 * of a Service, a pod, an Endpoints or an EndpointSlice queues its namespace, and the namespace's
 * objects are set to what its Services and pods make. Lifecycle as every controller's
 * (docs/development.md): _new (listed, no thread), _start (with its thread), _step, _free.
 */

#include <jansson.h>
#include <stdbool.h>

#include "xpool/error.h"

/* Who wrote an Endpoints or an EndpointSlice: the labels and values the controller owns. */
#define XP_ENDPOINTS_MANAGED_BY_LABEL      "endpoints.kubernetes.io/managed-by"
#define XP_ENDPOINTS_MANAGED_BY            "endpoint-controller"
#define XP_ENDPOINTSLICE_MANAGED_LABEL     "endpointslice.kubernetes.io/managed-by"
#define XP_ENDPOINTSLICE_MANAGED_BY        "endpointslice-controller.k8s.io"
#define XP_ENDPOINTSLICE_SERVICE_LABEL     "kubernetes.io/service-name"
#define XP_ENDPOINTSLICE_MIRRORED_BY       "endpointslicemirroring-controller.k8s.io"
#define XP_ENDPOINTSLICE_SKIP_MIRROR_LABEL "endpointslice.kubernetes.io/skip-mirror"

/* ---- computation (endpoints_calc.c) --------------------------------------------------------- */

/* Whether the Service has a selector (with at least one label) and it selects the pod. */
bool xp_endpoints_selects(const json_t *service, const json_t *pod);

/*
 * The Endpoints object (new; NULL: -ENOMEM) the pods (a JSON array, any pods of the Service's
 * namespace) make for the Service: subsets of addresses (ready pods) and notReadyAddresses,
 * grouped by the ports each pod resolves (a named targetPort by its containers' port names),
 * sorted by IP; labels the Service's, the headless label and XP_ENDPOINTS_MANAGED_BY_LABEL.
 */
json_t *xp_endpoints_compute(const json_t *service, const json_t *pods);

/*
 * The EndpointSlices (a new JSON array; NULL: -ENOMEM) for the Service: one per set of resolved
 * ports (one with no endpoints when no pod qualifies), named "SERVICE-" and five letters derived
 * from the Service's uid and the ports, so a recomputation names the same slices; terminating
 * pods are in with conditions ready false, serving as their readiness, terminating true.
 */
json_t *xp_endpointslices_compute(const json_t *service, const json_t *pods);

/* ---- mirroring (endpoints_mirror.c) -------------------------------------------------------- */

/* Whether the Endpoints are to be mirrored: not labelled skip-mirror "true", not the endpoints
 * controller's own. (The caller checks that their Service exists and has no selector.) */
bool xp_endpoints_mirrored(const json_t *endpoints);

/*
 * The EndpointSlices (a new JSON array; NULL: -ENOMEM) mirrored from user-written Endpoints, as
 * kube-controller-manager's endpointslicemirroring controller makes them: one per set of ports
 * and address family (IPv4, IPv6), named from the Endpoints' name and uid and the set, labelled
 * with the Endpoints' labels, the service name and XP_ENDPOINTSLICE_MIRRORED_BY.
 */
json_t *xp_endpointslices_mirror(const json_t *endpoints);

/* ---- the controller (endpoints.c) ----------------------------------------------------------- */

struct xp_registry;
struct xp_endpoints;

int xp_endpoints_new(struct xp_registry *registry, struct xp_endpoints **ret, struct xp_error *err);
int xp_endpoints_start(struct xp_registry *registry,
                       struct xp_endpoints **ret,
                       struct xp_error *err);
/* Informer sync and the queued namespaces, without the thread (tests). */
int xp_endpoints_step(struct xp_endpoints *c, struct xp_error *err);
/* NULL is fine. */
void xp_endpoints_free(struct xp_endpoints *c);
