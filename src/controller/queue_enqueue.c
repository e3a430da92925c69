/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Volcano's enqueue of a PodGroup (docs/scheduler.md, "Gangs"): before its members are placed, its
 * spec.minResources must fit within its queue's limits on top of what the queue holds, and within
 * what the nodes that take pods have in all. A gang that asks for more than could be there waits
 * in phase Pending without a placement's cost, as Volcano keeps such a PodGroup out of Inqueue.
 * The nodes' capacity, not what is free now (Volcano's overcommit plugin compares with the idle
 * capacity times 1.2): a gang of high priority may still make room by preemption.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "queue_state.h"
#include "xpool/quantity.h"

/* The first resource of a (n of them) the nodes have less of in all: 1 with *ret_reason, 0 none.
 * -ENOMEM. */
static int
cluster_lacks(struct xp_sched *sched, const struct xp_queue_amount *a, size_t n, char **ret_reason)
{
        for (size_t i = 0; i < n; i++) {
                int64_t all = xp_sched_capacity_total(sched, a[i].resource);
                struct xp_quantity want = xp_quantity_from_milli(a[i].milli);
                struct xp_quantity have = xp_quantity_from_milli(all);
                char w[XP_QUANTITY_STRING_MAX], h[XP_QUANTITY_STRING_MAX];

                if (all >= a[i].milli)
                        continue;
                if (asprintf(ret_reason,
                             "its minResources do not fit: %s %s wanted, %s in the cluster",
                             xp_quantity_format(&want, w),
                             a[i].resource,
                             xp_quantity_format(&have, h)) < 0) {
                        *ret_reason = NULL;
                        return -ENOMEM;
                }
                return 1;
        }
        return 0;
}

int queue_ctl_enqueue(struct queue_ctl *ctl,
                      const char *queue,
                      const json_t *min_resources,
                      char **ret_reason)
{
        struct xp_queue_amount *a = NULL;
        char *reason = NULL;
        size_t n = 0;
        int r;

        if (!json_is_object(min_resources) || json_object_size(min_resources) == 0)
                return 1;
        r = resources_amounts(min_resources, &a, &n);
        if (r < 0)
                return r;
        if (queue) {
                r = xp_queues_admit(ctl->queues, queue, a, n, &reason);
                if (r < 0)
                        goto out;
                if (r == XP_QUEUE_REFUSED) {
                        r = asprintf(ret_reason, "its minResources do not fit: %s", reason);
                        if (r < 0)
                                *ret_reason = NULL;
                        r = r < 0 ? -ENOMEM : 0;
                        goto out;
                }
        }
        r = 1;
        if (ctl->sched && *ctl->sched) {
                r = cluster_lacks(*ctl->sched, a, n, ret_reason);
                r = r < 0 ? r : !r;
        }
out:
        free(reason);
        amounts_free(a, n);
        return r;
}
