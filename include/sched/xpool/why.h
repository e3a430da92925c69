/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Why a pod is pending, in xpool's words (docs/scheduler.md, "Why pending"): the nodes grouped
 * into classes by what blocks the pod on them, and what would unblock it. kube-scheduler's own
 * one-line message stays xp_sched_place()'s; this is the longer explanation `xpool why` prints
 * and the FailedScheduling Event carries.
 */

#include "xpool/error.h"
#include "xpool/object.h"
#include "xpool/sched.h"

/* Node names listed per class before "and N more". */
#define XP_WHY_NAMES_MAX 3

/*
 * The explanation for pod against every node of the snapshot, one line per node class ("3 nodes
 * (n1, n2, n3): Insufficient nvidia.com/gpu"), most nodes first, then one "to unblock: ..." line
 * per cause that says what would let it fit ("needs 4 nvidia.com/gpu on one node; the most free
 * on one node is 2, on 3 nodes; the largest free NVLink island is 2"). Lines end in '\n'.
 * Caller frees *ret. 0; -EINVAL as xp_sched_place() (err says what), -ENOMEM. The snapshot does
 * not change.
 */
int xp_sched_why(struct xp_sched *sched,
                 const struct xp_pod *pod,
                 char **ret,
                 struct xp_error *err);
