/* SPDX-License-Identifier: Apache-2.0 */
/*
 * How many nodes a placement looks at. kube-scheduler stops filtering once it found
 * percentageOfNodesToScore of the nodes feasible and ranks only those, starting the next pod
 * where this one stopped so every node gets its turn; at 5,000 nodes that is a tenth of the
 * work per pod. xpool samples only pods that ask no device: a device pod's placement depends on
 * the devices, links and fragmentation of every node (docs/scheduler.md, "Sampling").
 */
#include <string.h>

#include "sched_internal.h"

/* kube-scheduler's minFeasibleNodesToFind and minFeasibleNodesPercentageToFind */
#define SAMPLE_MIN_NODES   100u
#define SAMPLE_MIN_PERCENT 5u
/* the adaptive percentage: 50 at no nodes, one less per 125 nodes */
#define SAMPLE_ADAPTIVE_BASE      50u
#define SAMPLE_ADAPTIVE_PER_POINT 125u

size_t xp_sched_nodes_to_score(size_t n_nodes, unsigned percentage)
{
        size_t n;

        if (n_nodes < SAMPLE_MIN_NODES || percentage >= 100)
                return n_nodes;
        if (percentage == 0) {
                size_t drop = n_nodes / SAMPLE_ADAPTIVE_PER_POINT;
                percentage = drop + SAMPLE_MIN_PERCENT >= SAMPLE_ADAPTIVE_BASE
                                 ? SAMPLE_MIN_PERCENT
                                 : SAMPLE_ADAPTIVE_BASE - (unsigned)drop;
        }
        n = n_nodes * percentage / 100;
        return n < SAMPLE_MIN_NODES ? SAMPLE_MIN_NODES : n;
}

/* Does the pod ask anything but cpu, memory and Kubernetes' own resources (ephemeral-storage,
 * hugepages-*)? Extended resources are named with a domain ("nvidia.com/gpu"); any of them may
 * be a node's devices, so any of them keeps the full ranking. */
static bool asks_devices(const struct xp_sched *sched, const struct podreq *req)
{
        if (req->single_numa || req->accel > 0 || req->mem_bytes > 0)
                return true;
        for (size_t i = 0; i < req->n; i++) {
                uint32_t res = req->items[i].res;
                if (res >= RES_ACCEL && (res == RES_ACCEL || strchr(sched->res_names[res], '/')))
                        return true;
        }
        return false;
}

size_t sched_feasible_to_find(const struct xp_sched *sched, const struct podreq *req)
{
        size_t limit = sched->options.feasible_nodes_to_find, sample;

        if (limit == 0 || limit > sched->n_present)
                limit = sched->n_present;
        if (!sched->options.sample_plain_pods || asks_devices(sched, req))
                return limit;
        sample =
            xp_sched_nodes_to_score(sched->n_present, sched->options.percentage_of_nodes_to_score);
        return sample < limit ? sample : limit;
}
