/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The DaemonSet controller's decisions, pure: which nodes should run the daemon pod (its
 * nodeSelector, required node affinity, the node's taints against its tolerations, and the
 * devices it asks for in the node's allocatable), what to create and delete on each, and which
 * old pods a RollingUpdate replaces within maxUnavailable. Kubernetes' pkg/controller/daemon.
 */

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "replicaset.h"

/* Whether a node should run the pod (to create one) and may keep running it (to keep one). */
struct xp_ds_fit {
        bool should_run;
        bool should_continue;
};

/*
 * nodeShouldRunDaemonPod: pod_spec (the template's spec) against node. The tolerations a
 * DaemonSet's pods get by default (not-ready, unreachable, disk/memory/pid pressure,
 * unschedulable, and network-unavailable for hostNetwork) count as the template's own. A device
 * (an extended resource such as nvidia.com/gpu) the pod requests must be in the node's
 * allocatable, so a node that gains a device kind starts running the pod.
 */
void xp_ds_node_fit(const json_t *pod_spec, const json_t *node, struct xp_ds_fit *ret);

/* One node's daemon pods as the plan sees them. */
struct xp_ds_node {
        const char *name;
        struct xp_ds_fit fit;
        struct xp_rs_pod *pods; /* this DaemonSet's pods bound or aimed at the node, borrowed */
        size_t n_pods;
};

/* What one sync does: node names to create a pod on, pod names to delete. */
struct xp_ds_plan {
        const char **create; /* borrowed node names */
        size_t n_create;
        const char **delete; /* borrowed pod names */
        size_t n_delete;
};

/*
 * manage(): a pod on each node that should run one and has none, none on a node that may not keep
 * it, the oldest one where there are several, and failed pods replaced. -ENOMEM. Free the plan
 * with xp_ds_plan_done().
 */
int xp_ds_plan_manage(const struct xp_ds_node *nodes, size_t n, struct xp_ds_plan *ret);

/*
 * rollingUpdate() with maxSurge 0: the old pods (whose pod-template-hash is not hash) to delete
 * now, so that at most max_unavailable nodes go without an available pod; unavailable old pods
 * are always replaced. Appends to plan->delete. -ENOMEM.
 */
int xp_ds_plan_rolling(const struct xp_ds_node *nodes,
                       size_t n,
                       const char *hash,
                       int32_t max_unavailable,
                       int32_t min_ready_s,
                       int64_t now_s,
                       struct xp_ds_plan *plan);

void xp_ds_plan_done(struct xp_ds_plan *plan);

/* The status's counts (updateDaemonSetStatus). */
struct xp_ds_counts {
        int32_t desired, current, misscheduled, ready, updated, available, unavailable;
};

void xp_ds_count(const struct xp_ds_node *nodes,
                 size_t n,
                 const char *hash,
                 int32_t min_ready_s,
                 int64_t now_s,
                 struct xp_ds_counts *ret);
