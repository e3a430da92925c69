/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * A placement: the node, the concrete devices (or shares of them) and the CPUs a pod is given.
 * The scheduler core decides it (include/sched/xpool/sched.h), the Binding records it on the pod as
 * an annotation, and the agent (and the device plugin) read it back to set the pod's devices up.
 */

#include <stdint.h>

#include "xpool/error.h"
#include "xpool/object.h"

/* The pod annotation that records a placement (set through the Binding, read by the agent). */
#define XP_PLACEMENT_ANNOTATION "xpool.io/placement"

/* One device (or a fraction of one) a placement gives a pod. */
struct xp_placement_device {
        char *resource; /* "nvidia.com/gpu" */
        char *id;       /* the device's stable id (status.xpool.devices[].id) */
        int64_t index;  /* the vendor's index, for CUDA_VISIBLE_DEVICES and the like */
        int64_t milli;  /* 1000 for a whole device; less for a share */
};

struct xp_placement {
        char *node;
        XP_LIST(struct xp_placement_device, devices);
        char *cpus;        /* the cpulist chosen ("0-11"), NULL when the pod is not pinned */
        int64_t numa_node; /* the NUMA node CPUs and devices were aligned on, -1 when none */
        int64_t score;     /* the winning node's score, for tests and explanations */
};

void xp_placement_done(struct xp_placement *placement);
/* The annotation's JSON text:
 * {"node":..,"devices":[{"resource","id","index","milli"}],"cpus":..,"numaNode":..}. */
int xp_placement_to_json(const struct xp_placement *placement, char **ret);
/* -EINVAL with err saying what is wrong (the annotation comes from the API: user input). */
int xp_placement_from_json(const char *text, struct xp_placement *ret, struct xp_error *err);
