/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Preemption in the scheduler core (docs/scheduler.md, "Preemption"): for a pod that fits no
 * node as the cluster is, the node where evicting placed pods frees what it needs, devices
 * included (an NVLink island, not just a count), and the victims there:
 *
 *   0. the fewest victims whose eviction breaks a PodDisruptionBudget (options' budgets_of;
 *      kube-scheduler's first criterion: a budget steers the choice, it never forbids it). As
 *      kube-scheduler counts them, the victims of one choice use up each budget's allowance one
 *      by one: with an allowance of 1, the second victim a budget selects breaks it;
 *   1. the lowest highest-priority among the victims (a pod of priority 100 is never evicted
 *      where pods of priority 0 would do);
 *   2. the fewest victims (a gang counts all its members: gangs are evicted whole, members on
 *      other nodes included);
 *   3. the smallest sum of the victims' priorities;
 *   4. the least fragmentation left behind: device capacity the evictions free that the pod
 *      does not take;
 *   5. the best device topology for the pod (devsel's score), then the node's name.
 *
 * The nodes are weighed in the snapshot's order until 100 of them (or a tenth of the cluster,
 * when more) could make room, as kube-scheduler bounds its search; the best of those wins.
 *
 * Pods of equal or higher priority are never victims, nor terminating ones, nor anything when
 * the pod's preemptionPolicy is Never. Up to PREEMPT_EXACT_MAX candidate victims per node the
 * choice is exact (every set is weighed); above, kube-scheduler's greedy reprieve decides (all
 * candidates out, then each put back, highest priority first, those a budget guards before the
 * others, while the pod still fits).
 *
 * The chosen placement's devices can then be held for the pod (xp_sched_hold()) while the
 * victims terminate, so that nobody else takes them.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "xpool/error.h"
#include "xpool/object.h"
#include "xpool/placement.h"
#include "xpool/sched.h"

/* A placed pod the preemption may evict. */
struct xp_sched_victim {
        char *namespace;
        char *name;
        char *node;
        int64_t priority;
        char *gang; /* "namespace/group", NULL when none */
};

/* What a placed pod looks like to the eligibility test. */
struct xp_sched_placed {
        const char *namespace;
        const char *name;
        const char *node;
        int64_t priority;
        const struct xp_strmap *labels;
};

/* A PodDisruptionBudget that selects a placed pod, as the preemption counts it. */
struct xp_sched_budget {
        uint32_t id;     /* the caller's: the same budget has the same id in one search */
        int64_t allowed; /* the disruptions it allows now (status.disruptionsAllowed) */
};

/* A placed pod is selected by at most this many budgets that count (more are left out). */
#define XP_SCHED_BUDGETS_PER_POD 4

struct xp_preempt_options {
        /*
         * May this placed pod be evicted for pod? NULL: when its priority is below the pod's
         * (Kubernetes' rule). The queues' reclaim passes its own (any priority, over-share
         * queues only).
         */
        bool (*eligible)(void *userdata,
                         const struct xp_pod *pod,
                         const struct xp_sched_placed *victim);
        void *userdata;
        /*
         * The PodDisruptionBudgets that select this placed pod: up to max of them into ret,
         * returning how many. NULL: none do. As kube-scheduler's candidate choice, the fewest
         * victims whose eviction takes a budget below 0 win before anything else (the victims of
         * one choice counted one by one against each budget's allowance); a budget never
         * forbids the preemption, it only steers it.
         */
        size_t (*budgets_of)(void *budget_userdata,
                             const struct xp_sched_placed *victim,
                             struct xp_sched_budget *ret,
                             size_t max);
        void *budget_userdata;
};

struct xp_preemption {
        char *node;                      /* the nominated node */
        struct xp_placement placement;   /* what pod gets there once the victims are gone */
        struct xp_sched_victim *victims; /* gang members on other nodes included */
        size_t n_victims;
};

void xp_preemption_done(struct xp_preemption *preemption);

/*
 * Chooses the node and victims for pod. 1 with *ret (caller frees with xp_preemption_done()),
 * 0 when no eviction makes room (or the pod's preemptionPolicy is Never, or it fits already),
 * -EINVAL for a request that cannot be understood (err says what), -ENOMEM. The snapshot is
 * unchanged.
 */
int xp_sched_preempt(struct xp_sched *sched,
                     const struct xp_pod *pod,
                     const struct xp_preempt_options *options,
                     struct xp_preemption *ret,
                     struct xp_error *err);

/*
 * kube-scheduler's word, the tail of its FailedScheduling message, when preemption makes no room
 * for pod (the nodes counted as the last xp_sched_place() found them when that was pod's, else
 * filtered again for pod): "preemption: not eligible due to
 * preemptionPolicy=Never." for a pod that never preempts; otherwise each node's status counted,
 * "Preemption is not helpful for scheduling" where that placement found the node refusing the pod
 * for what no eviction cures (cordoned, a taint, node affinity) and "No preemption victims found
 * for incoming pod" elsewhere: "preemption: 0/3 nodes are available: 2 No preemption victims
 * found for incoming pod, 1 Preemption is not helpful for scheduling.". Caller frees. -ENOMEM.
 */
int xp_sched_preempt_refusal(struct xp_sched *sched, const struct xp_pod *pod, char **ret);

/*
 * A gang as preemptor: room for all n members or for none. Each member in order gets its place
 * as the cluster is or xp_sched_preempt()'s choice, on the snapshot as the members before it
 * left it (their places held, their victims gone), so no two members count on the same freed
 * devices. 1 with ret[0..n) filled (caller frees each with xp_preemption_done(); a member that
 * fits without evictions has no victims), 0 when some member finds no room even with evictions
 * (or none needs any), -EINVAL, -ENOMEM. The snapshot is unchanged.
 */
int xp_sched_preempt_gang(struct xp_sched *sched,
                          const struct xp_pod *const *pods,
                          size_t n,
                          const struct xp_preempt_options *options,
                          struct xp_preemption *ret,
                          struct xp_error *err);

/*
 * Holds placement's node, devices and CPUs for pod (nominated, waiting for its victims to go):
 * they count as taken for every other placement. Replaces an earlier hold of the pod. -EINVAL,
 * -ENOMEM.
 */
int xp_sched_hold(struct xp_sched *sched,
                  const struct xp_pod *pod,
                  const struct xp_placement *placement,
                  struct xp_error *err);
/* Gives a pod's hold back (before the pod itself is placed, or when it goes). -ENOENT. */
int xp_sched_release(struct xp_sched *sched, const char *namespace, const char *name);

/*
 * Whether node (NULL: none) holds a terminating pod of priority below priority: kube-scheduler's
 * podEligibleToPreemptOthers. A pod nominated there waits for those victims to go and preempts
 * nobody meanwhile, however long they take and whatever the snapshot forgot. Holds are not pods.
 */
bool xp_sched_victims_terminating(const struct xp_sched *sched, const char *node, int64_t priority);
