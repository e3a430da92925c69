/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Headroom: what each node has free, copied once so that a caller may take from it pod by pod
 * without changing the snapshot. The scheduling loop asks it, after placed pods end, which of
 * the pods waiting for room what is free could admit (docs/scheduler.md, "Backoff"): with
 * hundreds of pods waiting for one freed CPU, releasing them all made each fail again at the
 * cost of an attempt.
 *
 * Why a necessary condition only: whatever it refuses, the fit filter (filters.c) refuses too
 * (both judge a count by one rule, res_free_covers() in sched_internal.h, and
 * test_sched_headroom feeds them the same nodes and pods), so a pod it keeps waiting could not
 * have been placed; a pod it lets through may still fail on what it does not look at
 * (selectors, taints, NUMA, ports). What it cannot judge from counts (xpool.io/accelerator's
 * kinds, shares of a device by memory) it lets through.
 */
#include <errno.h>
#include <stdlib.h>

#include "sched_internal.h"

struct hnode {
        struct snode *node;
        struct res_free *free; /* by resource id, as the fit filter reads it */
};

struct xp_sched_headroom {
        struct xp_sched *sched;
        struct hnode *nodes;
        size_t n_nodes;
        size_t n_res;
        struct res_free *counts; /* every node's free, n_res each */
};

static void hnode_read(struct hnode *h, size_t n_res)
{
        for (uint32_t res = 0; res < n_res; res++)
                h->free[res] = node_res_free(h->node, res);
}

int xp_sched_headroom_new(struct xp_sched *sched, struct xp_sched_headroom **ret)
{
        struct xp_sched_headroom *h = calloc(1, sizeof *h);
        size_t k = 0;

        if (!h)
                return -ENOMEM;
        h->sched = sched;
        h->n_res = sched->n_res;
        h->nodes = calloc(sched->n_present ? sched->n_present : 1, sizeof *h->nodes);
        h->counts = calloc(h->n_res * (sched->n_present ? sched->n_present : 1), sizeof *h->counts);
        if (!h->nodes || !h->counts) {
                xp_sched_headroom_free(h);
                return -ENOMEM;
        }
        for (size_t i = 0; i < sched->n_nodes && k < sched->n_present; i++) {
                struct hnode *hn = &h->nodes[k];

                if (!sched->nodes[i]->present)
                        continue;
                hn->node = sched->nodes[i];
                hn->free = h->counts + h->n_res * k;
                hnode_read(hn, h->n_res);
                k++;
        }
        h->n_nodes = k;
        *ret = h;
        return 0;
}

void xp_sched_headroom_free(struct xp_sched_headroom *h)
{
        if (!h)
                return;
        free(h->nodes);
        free(h->counts);
        free(h);
}

/* Whether the node's headroom covers req, by the fit filter's rule. */
static bool covers(const struct hnode *hn, const struct podreq *req, size_t n_res)
{
        for (size_t i = 0; i < req->n; i++) {
                uint32_t res = req->items[i].res;

                if (!podreq_counted(req, res))
                        continue; /* judged by device constraints, not counts */
                if (res >= n_res)
                        return false; /* interned after the copy: no node had any */
                if (!res_free_covers(hn->free[res], req->items[i].milli))
                        return false;
        }
        return true;
}

static void take(struct hnode *hn, const struct podreq *req)
{
        for (size_t i = 0; i < req->n; i++) {
                int64_t milli = req->items[i].milli;
                struct res_free *f;

                if (!podreq_counted(req, req->items[i].res))
                        continue;
                f = &hn->free[req->items[i].res]; /* below n_res: covers() said so */
                if (f->whole >= 0 && milli >= 1000)
                        f->whole -= milli / 1000;
                else if (f->whole < 0)
                        f->part -= milli;
                /* a share of a device: the largest free share is not known after it, and
                 * counting it as still there lets pods through rather than keeping them */
        }
}

int xp_sched_headroom_take(struct xp_sched_headroom *h,
                           const struct xp_pod *pod,
                           const int64_t *preemptor_priority,
                           struct xp_error *err)
{
        struct podreq req = {0};
        int r = sched_pod_requests(h->sched, pod, &req, err);

        if (r < 0)
                return r;
        r = 0;
        for (size_t i = 0; i < h->n_nodes && r == 0; i++) {
                struct hnode *hn = &h->nodes[i];

                if (covers(hn, &req, h->n_res)) {
                        take(hn, &req);
                        r = 1;
                } else if (preemptor_priority &&
                           sched_node_has_below(hn->node, *preemptor_priority)) {
                        r = 1; /* evicting may make room: what, the attempt decides */
                }
        }
        podreq_done(&req);
        return r;
}
