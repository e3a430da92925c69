/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Headroom: what each node has free, copied once so that a caller may take from it pod by pod
 * without changing the snapshot. The scheduling loop asks it, after placed pods end, which of
 * the pods waiting for room what is free could admit (docs/scheduler.md, "Backoff"): with
 * hundreds of pods waiting for one freed CPU, releasing them all made each fail again at the
 * cost of an attempt.
 *
 * Why a necessary condition only: whatever it refuses, the fit filter (filters.c) refuses too,
 * so a pod it keeps waiting could not have been placed; a pod it lets through may still fail
 * on what it does not look at (selectors, taints, NUMA, ports). What it cannot judge from counts
 * (xpool.io/accelerator's kinds, shares of a device by memory) it lets through.
 */
#include <errno.h>
#include <stdlib.h>

#include "sched_internal.h"

struct hnode {
        struct snode *node;
        int64_t *free;       /* by resource id: allocatable - used, or a group's largest share */
        int64_t *free_whole; /* by resource id: a group's unused healthy devices, else -1 */
};

struct xp_sched_headroom {
        struct xp_sched *sched;
        struct hnode *nodes;
        size_t n_nodes;
        size_t n_res;
        int64_t *counts; /* every node's free and free_whole, n_res each */
};

static void hnode_read(struct hnode *h, size_t n_res)
{
        const struct snode *n = h->node;

        for (uint32_t res = 0; res < n_res; res++) {
                const struct dgroup *g = res > RES_ACCEL ? node_group(n, res) : NULL;

                h->free[res] = g ? g->max_free : node_alloc(n, res) - node_used(n, res);
                h->free_whole[res] = g ? g->free_whole : -1;
        }
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
        h->counts =
            calloc(2 * h->n_res * (sched->n_present ? sched->n_present : 1), sizeof *h->counts);
        if (!h->nodes || !h->counts) {
                xp_sched_headroom_free(h);
                return -ENOMEM;
        }
        for (size_t i = 0; i < sched->n_nodes && k < sched->n_present; i++) {
                struct hnode *hn = &h->nodes[k];

                if (!sched->nodes[i]->present)
                        continue;
                hn->node = sched->nodes[i];
                hn->free = h->counts + 2 * h->n_res * k;
                hn->free_whole = hn->free + h->n_res;
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

/* Whether the node's headroom covers req (counted as fit_filter() counts it). */
static bool covers(const struct hnode *hn, const struct podreq *req, size_t n_res)
{
        for (size_t i = 0; i < req->n; i++) {
                uint32_t res = req->items[i].res;
                int64_t milli = req->items[i].milli;

                if (res == RES_ACCEL || (req->mem_bytes > 0 && res == req->mem_res))
                        continue; /* judged by device constraints, not counts */
                if (res >= n_res)
                        return false; /* interned after the copy: no node had any */
                if (hn->free_whole[res] >= 0 && milli >= 1000) {
                        if (hn->free_whole[res] < milli / 1000)
                                return false;
                } else if (hn->free[res] < milli) {
                        return false;
                }
        }
        return true;
}

static void take(struct hnode *hn, const struct podreq *req)
{
        for (size_t i = 0; i < req->n; i++) {
                uint32_t res = req->items[i].res;
                int64_t milli = req->items[i].milli;

                if (res == RES_ACCEL || (req->mem_bytes > 0 && res == req->mem_res))
                        continue;
                if (hn->free_whole[res] >= 0 && milli >= 1000)
                        hn->free_whole[res] -= milli / 1000;
                else if (hn->free_whole[res] < 0)
                        hn->free[res] -= milli;
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
