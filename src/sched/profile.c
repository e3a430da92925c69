/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Profiles: which scores count and how much. The weights follow kube-scheduler's defaults where
 * it has the score (TaintToleration 3, NodeAffinity 2, resources 1); xpool's device scores
 * weigh 2 so topology and sharing decide between otherwise equal nodes.
 */
#include "sched_internal.h"

static const struct profile_weight spread[] = {
    {.ops = &sched_score_least_allocated, .weight = 1},
    {.ops = &sched_score_balanced, .weight = 1},
    {.ops = &sched_score_node_affinity, .weight = 2},
    {.ops = &sched_score_taints, .weight = 3},
    {.ops = &sched_score_fraction, .weight = 2},
    {.ops = &sched_score_vendor, .weight = 2},
    {.ops = &sched_score_topology, .weight = 2},
    {0},
};

static const struct profile_weight binpack[] = {
    {.ops = &sched_score_most_allocated, .weight = 1},
    {.ops = &sched_score_balanced, .weight = 1},
    {.ops = &sched_score_node_affinity, .weight = 2},
    {.ops = &sched_score_taints, .weight = 3},
    {.ops = &sched_score_fraction, .weight = 2},
    {.ops = &sched_score_vendor, .weight = 2},
    {.ops = &sched_score_topology, .weight = 2},
    {0},
};

/* The GPU policies score alone, as the paper's simulator runs each (every other score off);
 * the filters still apply, and whole devices still get device selection. */
static const struct profile_weight gpu_policy[] = {
    {.ops = &sched_score_gpu_policy, .weight = 1},
    {0},
};

/* xpool's: its fragmentation score decides, topology after it among the best few (a
 * multi-device pod lands on connected devices where a node has them). */
static const struct profile_weight xpool[] = {
    {.ops = &sched_score_gpu_policy, .weight = 1},
    {.ops = &sched_score_node_affinity, .weight = 2},
    {.ops = &sched_score_taints, .weight = 3},
    {.ops = &sched_score_topology, .weight = 2},
    {0},
};

const struct profile_weight *sched_profile(enum xp_sched_profile profile)
{
        switch (profile) {
        case XP_SCHED_BINPACK:
                return binpack;
        case XP_SCHED_SPREAD:
                return spread;
        case XP_SCHED_XPOOL:
                return xpool;
        default:
                return gpu_policy;
        }
}
