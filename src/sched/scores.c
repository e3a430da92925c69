/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The scores, as an ops table; a profile (profile.c) picks and weights them. Each gives a raw
 * value per feasible node; those that are not already 0..100 normalize over the candidates as
 * kube-scheduler's NormalizeScore does.
 */
#include <string.h>

#include "sched_internal.h"

/* The fraction (0..1000) of res that node would have in use with the pod, or -1 without any. */
static int64_t used_permille(const struct pctx *ctx, const struct snode *node, uint32_t res)
{
        int64_t alloc = node_alloc(node, res), want = 0;

        if (alloc <= 0)
                return -1;
        for (size_t i = 0; i < ctx->req.n; i++)
                if (ctx->req.items[i].res == res)
                        want = ctx->req.items[i].milli;
        want += node_used(node, res);
        if (want > alloc)
                want = alloc;
        /* 128-bit division only where the product could overflow (petabytes of memory) */
        if (want <= INT64_MAX / 1000)
                return want * 1000 / alloc;
        return (int64_t)((__int128)want * 1000 / alloc);
}

static int64_t allocated_mean(const struct pctx *ctx, const struct cand *c, bool most)
{
        static const uint32_t res[] = {RES_CPU, RES_MEMORY};
        int64_t sum = 0, n = 0;

        for (size_t i = 0; i < XP_ELEMENTSOF(res); i++) {
                int64_t f = used_permille(ctx, c->node, res[i]);
                if (f < 0)
                        continue;
                sum += most ? f : 1000 - f;
                n++;
        }
        return n ? sum / n / 10 : 0;
}

static int64_t least_allocated(const struct pctx *ctx, struct cand *c)
{
        return allocated_mean(ctx, c, false);
}

static int64_t most_allocated(const struct pctx *ctx, struct cand *c)
{
        return allocated_mean(ctx, c, true);
}

/* 100 when cpu and memory would be used in the same proportion (kube's 1 - standard deviation). */
static int64_t balanced(const struct pctx *ctx, struct cand *c)
{
        int64_t a = used_permille(ctx, c->node, RES_CPU),
                b = used_permille(ctx, c->node, RES_MEMORY);
        int64_t d;

        if (a < 0 || b < 0)
                return 0;
        d = a > b ? a - b : b - a;
        return (1000 - d / 2) / 10;
}

static int64_t preferred_affinity(const struct pctx *ctx, struct cand *c)
{
        const struct xp_affinity *aff = ctx->pod->spec.affinity;
        int64_t sum = 0;

        if (!aff || !aff->node_affinity)
                return 0;
        for (size_t i = 0; i < aff->node_affinity->preferred.n; i++) {
                const struct xp_preferred_scheduling_term *t =
                    &aff->node_affinity->preferred.items[i];
                if (node_selector_term_matches(&t->preference, c->node))
                        sum += t->weight;
        }
        return sum;
}

static void normalize_max(struct cand *cands, size_t n, size_t op)
{
        int64_t max = 0;

        for (size_t i = 0; i < n; i++)
                if (cands[i].raw[op] > max)
                        max = cands[i].raw[op];
        for (size_t i = 0; i < n; i++)
                cands[i].raw[op] = max ? cands[i].raw[op] * 100 / max : 0;
}

static int64_t prefer_no_schedule(const struct pctx *ctx, struct cand *c)
{
        int64_t count = 0;

        for (size_t i = 0; i < c->node->n_taints; i++) {
                const struct staint *t = &c->node->taints[i];
                if (t->effect == XP_TAINT_EFFECT_PREFER_NO_SCHEDULE &&
                    !node_tolerates(ctx->pod, t->key, t->value, t->effect))
                        count++;
        }
        return count;
}

/* Fewer intolerable PreferNoSchedule taints score higher (kube's reverse normalization). */
static void normalize_reverse(struct cand *cands, size_t n, size_t op)
{
        int64_t max = 0;

        for (size_t i = 0; i < n; i++)
                if (cands[i].raw[op] > max)
                        max = cands[i].raw[op];
        for (size_t i = 0; i < n; i++)
                cands[i].raw[op] = max ? 100 - cands[i].raw[op] * 100 / max : 100;
}

/*
 * A share (below one device) prefers a node where it fits in a device already shared, so whole
 * devices stay whole for whole requests; a whole request prefers nodes without shared devices.
 */
static int64_t fraction_pack(const struct pctx *ctx, struct cand *c)
{
        for (size_t i = 0; i < ctx->req.n; i++) {
                const struct sreq *r = &ctx->req.items[i];
                const struct dgroup *g = r->res == RES_ACCEL  ? c->accel_group
                                         : r->res > RES_ACCEL ? node_group(c->node, r->res)
                                                              : NULL;
                if (ctx->req.mem_bytes > 0 && r->res == ctx->req.mem_res) {
                        g = ctx->req.mem_base == RES_ACCEL ? c->accel_group
                                                           : node_group(c->node, ctx->req.mem_base);
                        return g && memshare_group_fits(
                                        g,
                                        ctx->req.mem_bytes,
                                        ctx->req.mem_base == RES_ACCEL ? &ctx->req.ac : NULL,
                                        true)
                                   ? 100
                                   : 0;
                }
                if (!g)
                        continue;
                if (r->milli < 1000)
                        return g->best_share >= r->milli ? 100 : 0;
                return g->best_share > 0 ? 0 : 100;
        }
        return 0;
}

static int64_t vendor_preference(const struct pctx *ctx, struct cand *c)
{
        size_t n = ctx->req.ac.n_vendors;

        if (!c->accel_group || n == 0)
                return 0;
        return (int64_t)((n - accel_vendor_rank(&ctx->req.ac, c->accel_group->vendors[0])) * 100 /
                         n);
}

/* Filled in by place.c after device selection (the devsel scores), then normalized here. */
static int64_t device_topology(const struct pctx *ctx, struct cand *c)
{
        (void)ctx;
        (void)c;
        return 0;
}

static void normalize_range(struct cand *cands, size_t n, size_t op)
{
        int64_t min = INT64_MAX, max = INT64_MIN;

        for (size_t i = 0; i < n; i++) {
                if (cands[i].raw[op] < min)
                        min = cands[i].raw[op];
                if (cands[i].raw[op] > max)
                        max = cands[i].raw[op];
        }
        for (size_t i = 0; i < n; i++)
                cands[i].raw[op] = max > min ? (cands[i].raw[op] - min) * 100 / (max - min) : 100;
}

const struct score_ops sched_score_least_allocated = {.name = "LeastAllocated",
                                                      .score = least_allocated};
const struct score_ops sched_score_most_allocated = {.name = "MostAllocated",
                                                     .score = most_allocated};
const struct score_ops sched_score_balanced = {.name = "BalancedAllocation", .score = balanced};
const struct score_ops sched_score_node_affinity = {
    .name = "NodeAffinity", .score = preferred_affinity, .normalize = normalize_max};
const struct score_ops sched_score_taints = {
    .name = "TaintToleration", .score = prefer_no_schedule, .normalize = normalize_reverse};
const struct score_ops sched_score_fraction = {.name = "DeviceShare", .score = fraction_pack};
const struct score_ops sched_score_vendor = {.name = "AcceleratorVendor",
                                             .score = vendor_preference};
const struct score_ops sched_score_topology = {.name = "DeviceTopology",
                                               .score = device_topology,
                                               .normalize = normalize_range,
                                               .after_devsel = true};
