/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <inttypes.h>

#include "xpool/object.h"
#include "xpool/sched.h"
#include "xpool/sim.h"

/* The pod's manifest as JSON text, named name (a manifest's pod keeps its own). NULL on -ENOMEM. */
char *sim_pod_json(const struct xp_sim_pod *pod, const char *name);
/* The same, named name in namespace sim whatever it came from. NULL on -ENOMEM. */
char *sim_pod_json_as(const struct xp_sim_pod *pod, const char *name);
/* The node's manifest as JSON text. NULL on -ENOMEM. */
char *sim_node_json(const struct xp_sim_node *node);
/* -EINVAL with the two rows' lines (in path) when two nodes share a name. */
int sim_nodes_unique(const struct xp_sim_trace *trace, const char *path, struct xp_error *err);
/* Adds the trace's nodes to the snapshot. */
int sim_nodes_add(struct xp_sched *sched, const struct xp_sim_trace *trace, struct xp_error *err);
/* Room for one Pod object per trace pod (caller frees with sim_pods_free()); each is built by
 * sim_pod_get() when it first arrives, so a huge pod list costs memory only for the pods a replay
 * draws (the arrivals stop at the percent asked of the GPUs). */
int sim_pods_build(const struct xp_sim_trace *trace, struct xp_pod ***ret, struct xp_error *err);
int sim_pod_get(const struct xp_sim_trace *trace,
                struct xp_pod **pods,
                size_t i,
                struct xp_pod **ret,
                struct xp_error *err);
void sim_pods_free(struct xp_pod **pods, size_t n);

/* splitmix64: the simulator's one source of randomness, from the seed. */
static inline uint64_t sim_rand(uint64_t *state)
{
        uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
}
