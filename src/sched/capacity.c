/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the nodes that take pods have of a resource in all: the gate a gang's declared minimum
 * resources pass before its members are placed (Volcano's enqueue), cheaper than placing them.
 */
#include "sched_internal.h"

int64_t xp_sched_capacity_total(struct xp_sched *sched, const char *resource)
{
        uint32_t res;
        int64_t sum = 0;

        if (sched_res_id(sched, resource, false, &res) < 0)
                return 0; /* no node has it */
        for (size_t i = 0; i < sched->n_nodes; i++) {
                const struct snode *n = sched->nodes[i];

                if (n->present && !n->unschedulable)
                        sum += node_alloc(n, res);
        }
        return sum;
}
