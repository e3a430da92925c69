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

const struct profile_weight *sched_profile(enum xp_sched_profile profile)
{
        return profile == XP_SCHED_BINPACK ? binpack : spread;
}
