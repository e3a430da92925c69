/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The agent's metrics inside (metrics.h): what one round reads of the pods, their cgroups and
 * the node (metrics_view.c), and the renderings (metrics_render.c) from that, the inventory and
 * the last device sample.
 */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "xpool/cgroup.h"
#include "xpool/devsample.h"
#include "xpool/expo.h"
#include "xpool/placement.h"

struct xp_agent_pods;

struct mview_container {
        char *name;
        bool has_usage;
        struct xp_cgroup_usage usage;
};

struct mview_pod {
        char *uid, *namespace, *name;
        char *device_container; /* the container that asks for the devices (DCGM's label) */
        struct mview_container *containers;
        size_t n_containers;
        struct xp_placement placement; /* its devices; empty without the annotation */
        pid_t *pids;                   /* in its containers' groups, for NVML's processes */
        size_t n_pids;
};

struct mview {
        struct mview_pod *pods;
        size_t n_pods;
        double time_s; /* unix time of the reading */
        bool has_node_cpu, has_node_memory;
        double node_cpu_seconds; /* busy CPU time of the node since boot */
        int64_t node_memory_used, node_memory_total;
        int64_t node_cpus;
        int64_t cpu_requested_milli, memory_requested; /* of the pods not yet over */
};

/* Reads the pods (under their lock), their groups and the node. -ENOMEM. */
int mview_read(struct xp_agent_pods *pods,
               struct xp_cgroup_root *cgroups,
               const char *cgroup_parent,
               struct mview *ret);
void mview_done(struct mview *v);

struct mrender {
        const struct xp_node_inventory *inventory;
        const struct xp_device_samples *samples; /* NULL: none yet */
        const struct mview *view;
        const char *node_name, *hostname;
        double sample_age_s;
};

/* The /metrics exposition. */
void mrender_metrics(struct xp_expo *w, const struct mrender *r);
/* The /metrics/resource exposition. */
void mrender_resource(struct xp_expo *w, const struct mrender *r);

#define ALLOCS_MAX 64 /* pods named on one device's series */

struct alloc {
        const struct mview_pod *pod;
        int64_t milli;
};

/* The pods holding device id (at most ALLOCS_MAX) and their thousandths of it. */
size_t
mrender_allocations(const struct mview *v, const char *id, struct alloc out[static ALLOCS_MAX]);
/* Huawei Ascend NPUs' figures under npu-exporter's names (metrics_render_npu.c). */
void mrender_npu(struct xp_expo *w, const struct mrender *r);
/* Cambricon MLUs' figures under mlu-exporter's names (metrics_render_mlu.c). */
void mrender_mlu(struct xp_expo *w, const struct mrender *r);
/* Each pod's own memory and utilisation on the devices it holds (metrics_render_pod.c). */
void mrender_pod_devices(struct xp_expo *w, const struct mrender *r);
/* Only the utilisation, for /metrics/resource (the server's per-pod figure for autoscaling). */
void mrender_pod_device_utilization(struct xp_expo *w, const struct mrender *r);
