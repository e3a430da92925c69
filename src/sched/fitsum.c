/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The fit summaries (struct sfit): for a pod with no selectors, affinity, NUMA or memory-share
 * terms on a schedulable, ready, untainted node, the filters come down to the fit filter, and
 * that reads a handful of numbers. They are copied here, one cache line a node, whenever they
 * change, so an extender's filter over thousands of nodes reads these lines in order instead of
 * three scattered lines of each entry and its device group. The answers must be the fit
 * filter's own, reasons included (test_sched_fitsum compares them over random clusters).
 */
#include <stdint.h>

#include "sched_internal.h"

/* The filters a summary stands for: unschedulable, ready, affinity, taints, hostPorts (a plain
 * pod asks none), fit, anti-affinity and NUMA (filters.c). A filter added there is one the
 * summaries know nothing of: until fitsum_pod_plain() learns when it passes, every pod goes
 * through the full filters. */
#define FILTERS_SUMMED 8

static bool node_plain(const struct snode *n)
{
        if (n->unschedulable || n->ready != 1)
                return false;
        for (size_t i = 0; i < n->n_taints; i++)
                if (n->taints[i].effect == XP_TAINT_EFFECT_NO_SCHEDULE ||
                    n->taints[i].effect == XP_TAINT_EFFECT_NO_EXECUTE)
                        return false;
        return true;
}

/* The accelerator's counts as accel_pick_group() reads them without constraints. */
static void sum_accel(const struct snode *n, struct sfit *f)
{
        int64_t whole = -1, share = -1;

        for (size_t k = 0; k < n->n_groups; k++) {
                const struct dgroup *g = &n->groups[k];
                if (g->kind == XP_DEVICE_KIND_UNSET)
                        continue;
                if (g->free_whole > whole)
                        whole = g->free_whole;
                if (g->max_free > share)
                        share = g->max_free;
        }
        f->accel_free_whole = (int32_t)whole;
        f->accel_max_free = share > INT32_MAX ? INT32_MAX : (int32_t)share;
}

/* The resources beyond the accelerator the node has anything of; false when more than fit. */
static bool sum_resources(const struct snode *n, struct sfit *f)
{
        size_t k = 0;

        for (uint32_t res = RES_ACCEL + 1; res < n->n_res; res++) {
                const struct sres *s = &n->res[res];
                if (!s->group && s->alloc == 0 && s->used == 0)
                        continue;
                if (k == SFIT_RES)
                        return false;
                f->res[k] = (struct sfit_res){.res = res};
                if (s->group) {
                        f->flags |= SFIT_GROUP << k;
                        f->res[k].free_whole = s->group->free_whole;
                        f->res[k].free = s->group->max_free;
                } else {
                        f->res[k].free = s->alloc - s->used;
                }
                k++;
        }
        for (; k < SFIT_RES; k++)
                f->res[k] = (struct sfit_res){.res = UINT32_MAX};
        return true;
}

void fitsum_refresh(struct snode *n)
{
        struct sfit *f = n->fit;
        int64_t pods = node_alloc(n, RES_PODS) - node_used(n, RES_PODS);

        if (!f)
                return;
        *f = (struct sfit){0};
        if (!n->present)
                return;
        f->flags = SFIT_PRESENT;
        f->free_cpu = node_alloc(n, RES_CPU) - node_used(n, RES_CPU);
        f->free_memory = node_alloc(n, RES_MEMORY) - node_used(n, RES_MEMORY);
        f->free_pods = pods > INT32_MAX ? INT32_MAX : pods < INT32_MIN ? INT32_MIN : (int32_t)pods;
        sum_accel(n, f);
        /* a clamped count would answer differently: such a node goes the long way */
        if (node_plain(n) && sum_resources(n, f) && pods == f->free_pods &&
            f->accel_max_free != INT32_MAX)
                f->flags |= SFIT_JUDGES;
}

bool fitsum_pod_plain(const struct pctx *ctx)
{
        const struct xp_pod_spec *spec = &ctx->pod->spec;
        const struct podreq *req = &ctx->req;

        if (sched_n_filters != FILTERS_SUMMED || spec->node_selector.n > 0 ||
            (spec->affinity && spec->affinity->node_affinity &&
             spec->affinity->node_affinity->required))
                return false;
        if (ctx->n_anti > 0 || req->single_numa || req->mem_bytes > 0 || req->n_ports > 0)
                return false;
        return req->accel >= 0 && !req->ac.kinds && req->ac.min_memory <= 0 &&
               req->ac.min_tflops <= 0;
}

/* What the fit filter reads for res on the node, as the summary has it. */
static bool fits_resource(const struct sfit *f, uint32_t res, int64_t milli)
{
        if (res == RES_CPU)
                return f->free_cpu >= milli;
        if (res == RES_MEMORY)
                return f->free_memory >= milli;
        for (size_t k = 0; k < SFIT_RES; k++) {
                if (f->res[k].res != res)
                        continue;
                return res_free_covers((struct res_free){.whole = f->flags & (SFIT_GROUP << k)
                                                                      ? f->res[k].free_whole
                                                                      : -1,
                                                         .part = f->res[k].free},
                                       milli);
        }
        return 0 >= milli; /* the node has none of it */
}

int fitsum_judge(const struct pctx *ctx, const struct sfit *f, struct reasons *r)
{
        const struct podreq *req = &ctx->req;

        r->n = 0;
        if (!(f->flags & SFIT_JUDGES))
                return -1;
        for (size_t i = 0; i < req->n; i++) {
                uint32_t res = req->items[i].res;
                int64_t milli = req->items[i].milli;
                bool fits;

                if (res == RES_PODS) {
                        if (f->free_pods >= milli)
                                continue;
                        reasons_add(r, REASON_TOO_MANY_PODS, res, NULL);
                        continue;
                }
                if (res == RES_ACCEL)
                        fits = req->accel >= 1000 ? f->accel_free_whole >= req->accel / 1000
                                                  : f->accel_max_free >= req->accel;
                else
                        fits = fits_resource(f, res, milli);
                if (!fits)
                        reasons_add(r, REASON_INSUFFICIENT, res, NULL);
        }
        return r->n == 0;
}
