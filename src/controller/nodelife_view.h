/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * What the node lifecycle controller remembers of nodes, leases, pods and namespaces: filled by
 * the informer's callbacks (nodelife_view.c), read by what it decides and writes (nodelife.c).
 */

#include <jansson.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "informer.h"
#include "xpool/map.h"
#include "xpool/nodelife.h"
#include "xpool/timeutil.h"

#define LEASE_NS "kube-node-lease"

static inline const char *object_string(const json_t *object, const char *part, const char *key)
{
        return json_string_value(json_object_get(json_object_get(object, part), key));
}

struct lnode {
        char *name;
        size_t slot;
        int64_t seen_ms; /* monotonic: the last sign of life */
        char *heartbeat; /* the Ready condition's lastHeartbeatTime last read */
        bool has_lease;
        bool ready, tainted;              /* from the node as last read */
        bool disk_pressure, disk_tainted; /* DiskPressure=True; its taint (TaintNodesByCondition) */
        bool lost;                        /* marked lost by us since seen_ms */
        int64_t lost_ms;
        char since[XP_RFC3339_MAX]; /* wall time of the last sign of life, for messages */
};

struct lpod {
        char *key; /* namespace/name */
        char *namespace, *name, *node;
        size_t slot;
        int64_t eviction_ms; /* -1: never */
        int64_t deadline_s;  /* deletionTimestamp, 0 when not terminating */
        bool not_ready;      /* Ready=False written for the current loss */
        bool failed;
};

struct xp_nodelife {
        struct xp_registry *registry;
        const struct xp_clock *clock;
        struct xp_informer *informer;
        struct xp_workqueue *namespaces; /* Terminating namespaces to finish */
        struct xp_controller *loop;      /* NULL when a test steps it */
        int64_t grace_ms, eviction_ms;
        bool ticked;
        int64_t ticked_ms;
        atomic_bool quiet; /* xp_nodelife_quiesce(): no node is judged any more */
        struct lnode **nodes;
        size_t n_nodes, cap_nodes;
        struct xp_map node_index;
        struct lpod **pods;
        size_t n_pods, cap_pods;
        struct xp_map pod_index;
        char **terminating; /* namespaces waiting for their pods */
        size_t n_terminating;
};

/* ---- the view (nodelife_view.c) ---------------------------------------------------------- */

/* The kinds followed, and their callbacks (userdata: the controller). */
extern const struct xp_informer_handler nodelife_followed[];
extern const size_t nodelife_followed_n;
/* Forgets everything: before a relist (an informer's reset), and at the end. */
void view_clear(struct xp_nodelife *c);
/* The node's record, or NULL. */
struct lnode *view_node(struct xp_nodelife *c, const char *name);
