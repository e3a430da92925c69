/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Preemption's private structures, shared by preempt.c (the search) and preempt_units.c (which
 * placed pods may go, grouped so that a gang goes whole). */

#include "sched_internal.h"
#include "xpool/preempt.h"

/* Up to this many candidate victims on a node every set is weighed; above, greedy reprieve. */
#define PREEMPT_EXACT_MAX 16
/* The search stops once this many nodes (or a tenth of them, when more) could make room, as
 * kube-scheduler's minCandidateNodesAbsolute and minCandidateNodesPercentage do. */
#define PREEMPT_CANDIDATES_MIN 100

/* The pod's preemptionPolicy is Never: it evicts nobody. */
bool preempt_never(const struct xp_pod *pod);

/* A member of a unit selected by a disruption budget. */
struct guard {
        size_t member; /* its index in the unit's members */
        struct xp_sched_budget budget;
};

/* Placed pods that go together: one pod, or every member of a gang (on any node). */
struct unit {
        struct spod **members;
        size_t n_members;
        int64_t priority; /* the highest of its members' */
        int64_t prio_sum;
        int64_t dev_milli;    /* the device capacity its members free on the node weighed */
        struct guard *guards; /* its members' disruption budgets, by member */
        size_t n_guards;
};

struct units {
        struct unit *items; /* sorted by priority, lowest first */
        size_t n;
};

void units_done(struct units *us);
/*
 * The units of node whose every member may be evicted for pod (the options' eligibility, or a
 * priority below prio), lowest priority first. -ENOMEM.
 */
int units_of_node(struct xp_sched *sched,
                  const struct xp_pod *pod,
                  int64_t prio,
                  const struct xp_preempt_options *options,
                  struct snode *node,
                  struct units *ret);
/* Gives back (sign -1) or accounts again (+1) what the chosen units hold on node. */
void units_account(struct snode *node, const struct units *us, const bool *chosen, int sign);
