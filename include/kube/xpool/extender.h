/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * `xpool extender`: the scheduling core behind kube-scheduler's extender protocol (the HTTP
 * webhook of k8s.io/kube-scheduler/extender/v1), so kube-scheduler gains topology-aware,
 * fragmentation-aware and vendor-neutral device placement. docs/kubernetes.md is the operator's
 * view.
 *
 * The protocol's JSON names are Go's field names, unchanged (the types have no json tags):
 *   filter, prioritize:  ExtenderArgs {"Pod": Pod, "Nodes": NodeList|null, "NodeNames": [..]|null}
 *   filter answers       ExtenderFilterResult {"Nodes", "NodeNames", "FailedNodes",
 *                        "FailedAndUnresolvableNodes", "Error"}
 *   prioritize answers   HostPriorityList [{"Host": name, "Score": 0..10}]
 *   bind:                ExtenderBindingArgs {"PodName", "PodNamespace", "PodUID", "Node"}
 *                        -> ExtenderBindingResult {"Error"}
 * kube-scheduler sends Nodes (whole Node objects) unless the extender is configured
 * nodeCacheCapable, then NodeNames; Go decodes member names case-insensitively, and so does this.
 *
 * The extender keeps no state of its own: it lists and watches Nodes and bound Pods and feeds
 * them to a scheduling core snapshot (device inventories from the Nodes' xpool.io/inventory
 * annotation), so a restarted one rebuilds everything from the API.
 */

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "xpool/error.h"
#include "xpool/macro.h"
#include "xpool/object.h"
#include "xpool/sched.h"

/* kube-scheduler's MaxExtenderPriority: prioritize scores are 0..this. */
#define XP_EXTENDER_MAX_PRIORITY 10
/* A request body larger than this is refused before it is read (413). */
#define XP_EXTENDER_BODY_MAX (64u * 1024 * 1024)
/* Nodes in one request. */
#define XP_EXTENDER_NODES_MAX 100000

/* ---- the protocol ------------------------------------------------------------------------- */

/* A whole Node as sent: its JSON text, borrowed from the request body. */
struct xp_extender_node_text {
        const char *text;
        size_t len;
};

/* The request, decoded; what it borrows from the body lives as long as the body. */
struct xp_extender_args {
        struct xp_pod *pod;
        json_t *pod_json; /* the Pod as sent */
        char **names;     /* the candidates: NodeNames, or the Nodes' metadata.name */
        size_t n_names;
        bool cache_capable;                  /* sent as NodeNames (nodeCacheCapable) */
        struct xp_extender_node_text *nodes; /* whole Nodes, one per name; NULL with NodeNames */
        char *arena;                         /* where the names are */
};

void xp_extender_args_done(struct xp_extender_args *args);

/*
 * Decodes an ExtenderArgs body (borrowed by *ret until xp_extender_args_done()). -EINVAL with
 * err saying what and where for malformed JSON (`line 1, column 9: expected ...`), a duplicate
 * member, a body that is not an object, a missing Pod, neither Nodes nor NodeNames, a node
 * without a name; -EBADMSG for a well-formed body whose Pod xpool refuses (the codec's message
 * with its field path: a fault of that pod, not of the request); -E2BIG beyond
 * XP_EXTENDER_NODES_MAX nodes; -ENOMEM. Nothing is returned on failure.
 */
int xp_extender_args_decode(const char *body,
                            size_t len,
                            struct xp_extender_args *ret,
                            struct xp_error *err);

struct xp_extender_binding {
        char *pod_name;
        char *pod_namespace;
        char *pod_uid; /* NULL when not sent */
        char *node;
};

void xp_extender_binding_done(struct xp_extender_binding *binding);
/* Decodes an ExtenderBindingArgs body: -EINVAL with err naming a missing or non-string member. */
int xp_extender_binding_decode(const char *body,
                               size_t len,
                               struct xp_extender_binding *ret,
                               struct xp_error *err);

/*
 * The ExtenderFilterResult's JSON text for args and the core's verdicts (v[i] for
 * args->names[i]): the nodes that fit, as they came (Nodes) or by name (NodeNames); the others in
 * FailedNodes, or in FailedAndUnresolvableNodes when evicting pods would not help. A node the
 * snapshot lacks fails with unknown_reason. Caller frees *ret. -ENOMEM.
 */
int xp_extender_filter_result(const struct xp_extender_args *args,
                              const struct xp_sched_verdict *v,
                              const char *unknown_reason,
                              char **ret);
/* The HostPriorityList's text for the verdicts: the core's best node 10, the others below it. */
int xp_extender_priorities(const struct xp_extender_args *args,
                           const struct xp_sched_verdict *v,
                           char **ret);
/* The 0..XP_EXTENDER_MAX_PRIORITY score of a node scoring score when the best scores best. */
int64_t xp_extender_scale(int64_t score, int64_t best, bool is_best);

/* ---- the extender -------------------------------------------------------------------------- */

struct xp_extender_options {
        const char *kubeconfig;         /* the API (xpool/kubeapi.h); NULL: in-cluster */
        const char *serviceaccount_dir; /* NULL: XP_KUBE_SERVICEACCOUNT_DIR */
        bool no_api; /* no API server: nodes and pods come from xp_extender_node/pod_set() only
                        (tests, the benchmark); bind is refused */
        const char *listen_host;   /* NULL: no HTTP endpoint (xp_extender_handle() only) */
        uint16_t listen_port;      /* 0: a free port */
        const char *tls_cert_file; /* PEM; with tls_key_file: HTTPS */
        const char *tls_key_file;
        const char *client_ca_file;    /* PEM: clients must present a certificate it signed */
        bool bind;                     /* serve bind (kube-scheduler's bindVerb) */
        struct xp_sched_options sched; /* feasible_nodes_to_find is ignored */
};

struct xp_extender;

/* Starts the watches and the endpoint. -errno with err saying what failed. */
int xp_extender_new(const struct xp_extender_options *options,
                    struct xp_extender **ret,
                    struct xp_error *err);
void xp_extender_free(struct xp_extender *extender);
XP_DEFINE_FREEP(struct xp_extender, xp_extender_free)

/* The port the endpoint listens on (0 without one). */
uint16_t xp_extender_port(const struct xp_extender *extender);
/* Whether Nodes and Pods have been listed once (readyz). */
bool xp_extender_ready(struct xp_extender *extender);

/*
 * Serves one request: verb "filter", "prioritize" or "bind" with its body. Returns the HTTP
 * status and the JSON answer (caller frees *ret_body): 200 with the result (an Error member for
 * what kube-scheduler should show, such as a pod the core cannot understand), 400 for a body
 * that is not an ExtenderArgs, 404 for another verb, 503 before the first sync. Never fails
 * otherwise: out of memory is 500 with a fixed body.
 */
int xp_extender_handle(
    struct xp_extender *extender, const char *verb, const char *body, size_t len, char **ret_body);

/* Feeds a Node or a Pod as a watch would (no_api, tests and the benchmark). -errno with err. */
int xp_extender_node_set(struct xp_extender *extender, const json_t *node, struct xp_error *err);
int xp_extender_pod_set(struct xp_extender *extender, const json_t *pod, struct xp_error *err);
