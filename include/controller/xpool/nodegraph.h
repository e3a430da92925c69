/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The node authorizer's graph (docs/security.md, "Roles"): which Secrets and ConfigMaps each
 * node's pods name (xpool/podrefs.h), kept from the pods' events as Kubernetes' node authorizer
 * keeps its graph, so that a node's read of a Secret or ConfigMap costs one lookup instead of a
 * pass over every pod of the namespace.
 *
 * It holds, per pod bound to a node (spec.nodeName set), the edges pod → object it names, and per
 * edge (kind, namespace, object, node) the count of the node's pods that name the object. It
 * follows the store lazily: each question first reads the pods' events written since the last
 * one (nothing when no pod was written: xp_store_kind_generation()), so an answer reflects every
 * pod write acknowledged before the question, as a pass over the pods did.
 *
 * Thread-safe: questions from many threads serialize on one lock, held for the catch-up and the
 * lookup.
 */

#include <jansson.h>
#include <stddef.h>

#include "xpool/error.h"
#include "xpool/podrefs.h"

struct xp_store;
struct xp_node_graph;

/* A graph over store (borrowed until xp_node_graph_free()); nothing is read until the first
 * question. -ENOMEM. */
int xp_node_graph_new(struct xp_store *store, struct xp_node_graph **ret);
/* NULL is fine. */
void xp_node_graph_free(struct xp_node_graph *graph);

/*
 * Whether a pod of namespace ns bound to node names the object of kind called name: 1 yes, 0 no,
 * or the store's error (then err says what; the caller denies).
 */
int xp_node_graph_references(struct xp_node_graph *graph,
                             enum xp_pod_ref_kind kind,
                             const char *ns,
                             const char *name,
                             const char *node,
                             struct xp_error *err);

/*
 * After the same catch-up: of the pod ns/name when it is bound to a node, the fields a
 * TokenRequest bound to it reads (metadata.namespace, name, uid; spec.nodeName,
 * serviceAccountName), in *ret (a copy of its own), so that a node's TokenRequest for each
 * of its pods costs a lookup instead of a read and parse of the whole pod. 1 with *ret; 0 when the
 * graph holds no such bound pod (not bound, or none: read the store); -ENOMEM; or the store's
 * error.
 */
int xp_node_graph_pod(struct xp_node_graph *graph,
                      const char *ns,
                      const char *name,
                      json_t **ret,
                      struct xp_error *err);

/* After the same catch-up: the bound pods the graph holds, and its edges (for tests and the
 * benchmark). 0, or the store's error. */
int xp_node_graph_size(struct xp_node_graph *graph,
                       size_t *ret_pods,
                       size_t *ret_edges,
                       struct xp_error *err);
