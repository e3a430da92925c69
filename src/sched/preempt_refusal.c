/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kube-scheduler's tail of a FailedScheduling message when preemption makes no room: each node's
 * status counted, "Preemption is not helpful for scheduling" where the node refuses the pod for
 * what no eviction cures, "No preemption victims found for incoming pod" elsewhere.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "preempt_internal.h"

/* The present nodes that refuse pod for what no eviction cures, each filtered again. -errno. */
static int count_unresolvable(struct xp_sched *sched, const struct xp_pod *pod, size_t *ret)
{
        struct pctx ctx = {.sched = sched, .pod = pod};
        struct xp_error err = {0};
        size_t n = 0;
        int r;

        r = sched_pod_requests(sched, pod, &ctx.req, &err);
        if (r < 0)
                return r;
        r = anti_affinity_prepare(&ctx);
        for (size_t i = 0; r >= 0 && i < sched->n_nodes; i++) {
                struct reasons rs;

                if (!sched->nodes[i]->present || sched_filter_node(&ctx, sched->nodes[i], &rs))
                        continue;
                for (size_t k = 0; k < rs.n; k++)
                        if (reason_unresolvable(&rs.items[k])) {
                                n++;
                                break;
                        }
        }
        free(ctx.anti);
        sterms_free(ctx.terms, ctx.n_terms);
        podreq_done(&ctx.req);
        *ret = n;
        return r < 0 ? r : 0;
}

/* The last failed placement's count when it was pod's, else pod's own. */
static int unresolvable_nodes(struct xp_sched *sched, const struct xp_pod *pod, size_t *ret)
{
        char key[sizeof sched->last_failed];

        snprintf(key,
                 sizeof key,
                 "%s/%s",
                 pod->metadata.namespace ? pod->metadata.namespace : "default",
                 pod->metadata.name ? pod->metadata.name : "");
        if (strcmp(key, sched->last_failed) == 0) {
                *ret = sched->last_unresolvable;
                return 0;
        }
        return count_unresolvable(sched, pod, ret);
}

int xp_sched_preempt_refusal(struct xp_sched *sched, const struct xp_pod *pod, char **ret)
{
        size_t nodes = sched->n_present, unhelpful = 0, victimless;
        char none[64] = "", unhelpful_text[64] = "";
        int r;

        *ret = NULL;
        if (!preempt_never(pod) && nodes > 0) {
                r = unresolvable_nodes(sched, pod, &unhelpful);
                if (r < 0)
                        return r == -ENOMEM ? r : 0; /* a request not understood says nothing */
        }
        victimless = nodes > unhelpful ? nodes - unhelpful : 0;
        /* kube-scheduler's histogram of the nodes' statuses, its reasons sorted as strings */
        if (victimless)
                snprintf(none,
                         sizeof(none),
                         "%zu No preemption victims found for incoming pod",
                         victimless);
        if (unhelpful)
                snprintf(unhelpful_text,
                         sizeof(unhelpful_text),
                         "%s%zu Preemption is not helpful for scheduling",
                         victimless ? ", " : "",
                         unhelpful);
        if (preempt_never(pod))
                r = asprintf(ret, "preemption: not eligible due to preemptionPolicy=Never.");
        else if (nodes == 0)
                r = asprintf(ret, "preemption: no nodes available to schedule pods.");
        else
                r = asprintf(ret,
                             "preemption: 0/%zu nodes are available: %s%s.",
                             nodes,
                             none,
                             unhelpful_text);
        if (r < 0) {
                *ret = NULL;
                return -ENOMEM;
        }
        return 0;
}
