/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One placement: filter nodes from a rotating start until enough are feasible (cheap checks
 * first), score them with the profile's cheap scores, then run device selection only for the
 * best few and let its topology score decide among them. Ties go to a hash of the seed, the pod
 * and the node, so a given seed always gives the same answer.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gpupolicy.h"
#include "sched_internal.h"
#include "xpool/cpuset.h"
#include "xpool/strutil.h"

/* Free (unpinned) CPUs of NUMA node k of node. */
static size_t numa_free_cpus(const struct snode *node, size_t k)
{
        const struct snuma *nn = &node->numa[k];
        size_t n = 0;

        for (size_t i = 0; i < nn->n_cpus; i++)
                n += !node->cpu_used[nn->cpus[i]];
        return n;
}

static int64_t whole_cpus(const struct podreq *req)
{
        return req->cpu > 0 && req->cpu % 1000 == 0 ? req->cpu / 1000 : 0;
}

/*
 * Device selection for item r of the pod's request: 1 with *ret_group and *ret, 0 when the node
 * cannot serve it, 2 when it is no device request here (no group), -EINVAL from devsel.
 */
static int select_item(const struct pctx *ctx,
                       const struct snode *node,
                       const struct sreq *r,
                       int numa,
                       const struct dgroup **ret_group,
                       struct devsel_result *ret)
{
        struct devsel_request dr = {.milli = r->milli, .numa = numa};
        const struct dgroup *g;
        struct devsel_node dn;

        if (ctx->req.mem_bytes > 0 && r->res == ctx->req.mem_res) {
                /* a share asked by memory: the node must have the device resource */
                g = memshare_group(ctx, node);
                if (!g)
                        return 0;
                *ret_group = g;
                return memshare_choose(g,
                                       ctx->req.mem_bytes,
                                       ctx->req.mem_base == RES_ACCEL ? &ctx->req.ac : NULL,
                                       numa,
                                       ret);
        }
        if (r->res == RES_ACCEL) {
                g = accel_pick_group(ctx, node, NULL);
                dr.min_memory_bytes = ctx->req.ac.min_memory;
        } else {
                g = r->res > RES_ACCEL ? node_group(node, r->res) : NULL;
        }
        if (!g)
                return 2;
        *ret_group = g;
        if (r->res > RES_ACCEL && r->milli < 1000 && numa < 0) {
                /* a GPU policy chooses the device of a share itself */
                int k = gp_choose_share(ctx, node, g, r->milli, ret);
                if (k != 2)
                        return k;
        }
        dn = (struct devsel_node){.n = g->n, .devices = g->dev, .affinity = g->affinity};
        if (r->res == RES_ACCEL && (ctx->req.ac.kinds || ctx->req.ac.min_tflops > 0)) {
                /* devices that miss the constraints are hidden from the selector */
                struct devsel_device devs[DEVSEL_MAX];
                memcpy(devs, g->dev, g->n * sizeof(*devs));
                for (size_t d = 0; d < g->n; d++)
                        devs[d].healthy =
                            devs[d].healthy && accel_device_matches(&ctx->req.ac, g, d);
                dn.devices = devs;
                return devsel_choose(&dn, &dr, ret);
        }
        return devsel_choose(&dn, &dr, ret);
}

/* Device selection with one NUMA constraint (-1: any). */
static int
select_once(const struct pctx *ctx, const struct snode *node, int numa, struct devsel_pick *ret)
{
        struct devsel_pick pick = {.numa = -1};
        int common = -3; /* unset */

        for (size_t i = 0; i < ctx->req.n && pick.n < SCHED_DEVICE_REQUESTS_MAX; i++) {
                int k = select_item(ctx,
                                    node,
                                    &ctx->req.items[i],
                                    numa,
                                    &pick.sel[pick.n].group,
                                    &pick.sel[pick.n].result);

                if (k < 0 || k == 0)
                        return k;
                if (k == 2)
                        continue;
                pick.score += pick.sel[pick.n].result.score;
                if (common == -3)
                        common = pick.sel[pick.n].result.numa;
                else if (common != pick.sel[pick.n].result.numa)
                        common = -1;
                pick.n++;
        }
        pick.numa = common == -3 ? numa : common;
        *ret = pick;
        return 1;
}

int sched_select_devices(const struct pctx *ctx,
                         const struct snode *node,
                         int numa,
                         struct devsel_pick *ret)
{
        struct devsel_pick best = {0}, pick;
        int64_t want = whole_cpus(&ctx->req);
        bool found = false;

        if (numa != SCHED_NUMA_REQUIRED)
                return select_once(ctx, node, numa, ret);
        for (size_t k = 0; k < node->n_numa; k++) {
                int r;
                if ((int64_t)numa_free_cpus(node, k) < want)
                        continue;
                r = select_once(ctx, node, (int)node->numa[k].id, &pick);
                if (r < 0)
                        return r;
                if (r == 0)
                        continue;
                pick.numa = (int)node->numa[k].id;
                if (!found || pick.score > best.score) {
                        best = pick;
                        found = true;
                }
        }
        if (!found)
                return 0;
        *ret = best;
        return 1;
}

#define PREFETCH_NODES 16

/* The node PREFETCH_NODES ahead of at, and the resources of the one half as far (whose node was
 * fetched earlier). The filter loop is bound by these misses otherwise. */
static inline void prefetch_node(const struct xp_sched *sched, size_t at, size_t n_nodes)
{
        size_t far = at + PREFETCH_NODES, near = at + PREFETCH_NODES / 2;
        const struct snode *n;

        if (far >= n_nodes)
                far -= n_nodes;
        if (near >= n_nodes)
                near -= n_nodes;
        if (far < n_nodes)
                __builtin_prefetch(sched->nodes[far]);
        /* a removed node has no resources (offsetting NULL is undefined, even to prefetch) */
        if (near < n_nodes && (n = sched->nodes[near])->res) {
                __builtin_prefetch(n->res);
                __builtin_prefetch((const char *)n->res + 64);
        }
}

static int hist_add(struct reason_hist **hist, size_t *n, size_t *cap, const struct reason *r)
{
        for (size_t i = 0; i < *n; i++) {
                const struct reason *h = &(*hist)[i].reason;
                if (h->kind != r->kind || h->res != r->res)
                        continue;
                if (r->kind == REASON_TAINT && (strcmp(h->taint->key, r->taint->key) != 0 ||
                                                strcmp(h->taint->value, r->taint->value) != 0))
                        continue;
                (*hist)[i].count++;
                return 0;
        }
        if (*n == *cap) {
                size_t ncap = *cap ? *cap * 2 : 8;
                struct reason_hist *m = realloc(*hist, ncap * sizeof(*m));
                if (!m)
                        return -ENOMEM;
                *hist = m;
                *cap = ncap;
        }
        (*hist)[(*n)++] = (struct reason_hist){.reason = *r, .count = 1};
        return 0;
}

/* Whole CPUs for the pod, on the NUMA node of its devices first. NULL cpus when not pinned. */
static int pick_cpus(const struct pctx *ctx, const struct snode *node, int *numa, char **ret)
{
        int64_t want = whole_cpus(&ctx->req), got = 0;
        size_t first = SIZE_MAX, most = 0;
        bool single = true;
        struct xp_cpuset chosen = {0};
        int r;

        *ret = NULL;
        if (want == 0 || node->n_numa == 0)
                return 0;
        for (size_t k = 0; k < node->n_numa; k++) {
                size_t f = numa_free_cpus(node, k);
                if (*numa >= 0 && node->numa[k].id == *numa)
                        first = k;
                if (first == SIZE_MAX && (most == 0 || f > most)) {
                        most = f;
                        if (*numa < 0)
                                first = k;
                }
        }
        if (first == SIZE_MAX)
                first = 0;
        if (*numa < 0) {
                /* no device NUMA node: the one with the most free CPUs */
                size_t best = 0;
                for (size_t k = 0; k < node->n_numa; k++)
                        if (numa_free_cpus(node, k) > numa_free_cpus(node, best))
                                best = k;
                first = best;
        }
        for (size_t pass = 0; pass < node->n_numa && got < want; pass++) {
                size_t k = (first + pass) % node->n_numa;
                const struct snuma *nn = &node->numa[k];
                if (pass > 0 && ctx->req.single_numa)
                        break;
                for (size_t i = 0; i < nn->n_cpus && got < want; i++)
                        if (!node->cpu_used[nn->cpus[i]] && !xp_cpuset_has(&chosen, nn->cpus[i])) {
                                xp_cpuset_add(&chosen, nn->cpus[i]);
                                got++;
                                single = pass == 0;
                        }
        }
        if (got < want)
                return 0; /* not enough unpinned CPUs: the pod shares the pool */
        r = xp_cpuset_format(&chosen, ret);
        if (r < 0)
                return r;
        if (*numa < 0 && single)
                *numa = (int)node->numa[first].id;
        else if (!single)
                *numa = -1;
        return 0;
}

static int fill_placement(struct xp_sched *sched,
                          const struct pctx *ctx,
                          const struct cand *c,
                          const struct devsel_pick *pick,
                          struct xp_placement *ret)
{
        _cleanup_(xp_placement_done) struct xp_placement pl = {.numa_node = -1};
        int numa = pick ? pick->numa : -1;
        size_t n = 0;
        int r;

        pl.node = strdup(c->node->name);
        if (!pl.node)
                return -ENOMEM;
        pl.score = c->score;
        for (size_t i = 0; pick && i < pick->n; i++)
                n += pick->sel[i].result.n;
        if (n) {
                pl.devices.items = calloc(n, sizeof(*pl.devices.items));
                if (!pl.devices.items)
                        return -ENOMEM;
        }
        for (size_t i = 0; pick && i < pick->n; i++) {
                const struct dgroup *g = pick->sel[i].group;
                for (size_t k = 0; k < pick->sel[i].result.n; k++) {
                        size_t d = pick->sel[i].result.index[k];
                        struct xp_placement_device *pd = &pl.devices.items[pl.devices.n++];
                        pd->resource = strdup(sched->res_names[g->res]);
                        pd->id = strdup(g->ids[d]);
                        pd->index = g->index[d];
                        pd->milli = pick->sel[i].result.milli[k];
                        if (!pd->resource || !pd->id)
                                return -ENOMEM;
                }
        }
        r = pick_cpus(ctx, c->node, &numa, &pl.cpus);
        if (r < 0)
                return r;
        pl.numa_node = numa;
        *ret = pl;
        pl = (struct xp_placement){0};
        return 0;
}

/* The histogram of the reasons nodes failed for, as the message counts them. */
struct hist {
        struct reason_hist *items;
        size_t n;
        size_t cap;
};

static int unschedulable(struct xp_sched *sched,
                         const struct xp_pod *pod,
                         const struct hist *h,
                         char **ret_reason)
{
        int r = reasons_format(sched, sched->n_present, h->items, h->n, ret_reason);

        if (r < 0)
                return r;
        /* whose count it is: preemption's refusal counts again for another pod */
        snprintf(sched->last_failed,
                 sizeof sched->last_failed,
                 "%s/%s",
                 pod->metadata.namespace ? pod->metadata.namespace : "default",
                 pod->metadata.name ? pod->metadata.name : "");
        /* each refused node gave one filter's reasons, so these count nodes */
        sched->last_unresolvable = 0;
        for (size_t i = 0; i < h->n; i++)
                if (reason_unresolvable(&h->items[i].reason))
                        sched->last_unresolvable += h->items[i].count;
        sched->stats.unschedulable++;
        return 0;
}

/* One node through the filters: a candidate, or its reasons counted in h. -ENOMEM. */
static inline int filter_one(struct xp_sched *sched,
                             const struct pctx *ctx,
                             struct snode *node,
                             struct hist *h,
                             size_t *n_cands)
{
        struct reasons rs;
        int r;

        sched->stats.nodes_filtered++;
        if (sched_filter_node(ctx, node, &rs)) {
                sched->cands[(*n_cands)++] = (struct cand){.node = node, .pick = -1};
                return 0;
        }
        for (size_t k = 0; k < rs.n; k++) {
                r = hist_add(&h->items, &h->n, &h->cap, &rs.items[k]);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Filters the subset (a gang's topology domain) in order, until enough fit as from every node:
 * its members pack from the first node on. */
static int
filter_subset(struct xp_sched *sched, const struct pctx *ctx, struct hist *h, size_t *ret_n)
{
        size_t n_cands = 0, limit = sched->options.feasible_nodes_to_find;
        int r;

        for (size_t i = 0; i < sched->n_subset && (limit == 0 || n_cands < limit); i++) {
                struct snode *node = sched->subset[i];

                if (!node->present)
                        continue;
                r = filter_one(sched, ctx, node, h, &n_cands);
                if (r < 0)
                        return r;
        }
        *ret_n = n_cands;
        return 0;
}

/* Filters nodes from the rotating start until enough fit (sched->cands, *ret_n of them); the
 * reasons of those that do not go into h. */
static int
filter_nodes(struct xp_sched *sched, const struct pctx *ctx, struct hist *h, size_t *ret_n)
{
        size_t n_nodes = sched->n_nodes, limit = sched_feasible_to_find(sched, &ctx->req),
               checked = 0, n_cands = 0;
        int r;

        /* a gang's subset filters up to every node, whatever the sample */
        r = sched_cands_reserve(sched, sched->n_present + 1);
        if (r < 0)
                return r;
        if (sched->subset)
                return filter_subset(sched, ctx, h, ret_n);
        for (size_t i = 0, at = sched->next_start; i < n_nodes && n_cands < limit; i++) {
                struct snode *node = sched->nodes[at];

                /* the nodes are scattered on the heap: fetch ahead what the filters read */
                prefetch_node(sched, at, n_nodes);
                if (++at == n_nodes)
                        at = 0;
                checked = i + 1;
                if (!node->present)
                        continue;
                r = filter_one(sched, ctx, node, h, &n_cands);
                if (r < 0)
                        return r;
        }
        if (n_nodes)
                sched->next_start = (sched->next_start + checked) % n_nodes;
        *ret_n = n_cands;
        return 0;
}

int xp_sched_place(struct xp_sched *sched,
                   const struct xp_pod *pod,
                   struct xp_placement *ret,
                   char **ret_reason,
                   struct xp_error *err)
{
        struct pctx ctx = {.sched = sched, .pod = pod};
        struct hist hist = {0};
        struct devsel_pick picks[SCHED_DEVSEL_CANDIDATES];
        struct cand top[SCHED_DEVSEL_CANDIDATES], *cands;
        size_t n_cands = 0, n_top = 0;
        int r;

        r = sched_pod_requests(sched, pod, &ctx.req, err);
        if (r < 0)
                return r;
        r = anti_affinity_prepare(&ctx);
        if (r >= 0)
                r = filter_nodes(sched, &ctx, &hist, &n_cands);
        if (r < 0)
                goto out;
        if (n_cands == 0) {
                r = unschedulable(sched, pod, &hist, ret_reason);
                goto out;
        }
        cands = sched->cands;
        rank_cheap(&ctx, cands, n_cands);
        n_cands = rank_keep_best(cands, n_cands);
        if (rank_needs_devices(&ctx, cands[0].node)) {
                r = rank_devices(&ctx, cands, n_cands, picks, top, &n_top, err);
                if (r < 0)
                        goto out;
                if (n_top == 0) {
                        /* the cheap checks passed but no node could give the devices: fragmented */
                        struct reason rs = {.kind = REASON_INSUFFICIENT};
                        for (size_t i = 0; i < ctx.req.n; i++)
                                if (ctx.req.items[i].res >= RES_ACCEL)
                                        rs.res = ctx.req.items[i].res;
                        for (size_t i = 0; i < n_cands && r >= 0; i++)
                                r = hist_add(&hist.items, &hist.n, &hist.cap, &rs);
                        if (r >= 0)
                                r = unschedulable(sched, pod, &hist, ret_reason);
                        goto out;
                }
                cands[0] = top[0];
        }
        r = fill_placement(
            sched, &ctx, &cands[0], cands[0].pick >= 0 ? &picks[cands[0].pick] : NULL, ret);
        if (r < 0)
                goto out;
        sched->stats.placements++;
        r = 1;
out:
        if (r == -ENOMEM)
                xp_errorf(err, r, "placing pod %s: out of memory", pod->metadata.name);
        free(hist.items);
        free(ctx.anti);
        sterms_free(ctx.terms, ctx.n_terms);
        podreq_done(&ctx.req);
        return r;
}

/* Why node cannot give the pod its devices though the cheap checks passed (fragmented). */
static int fragmented(struct xp_sched *sched, const struct pctx *ctx, char **ret_reason)
{
        struct reasons rs = {.n = 1, .items = {{.kind = REASON_INSUFFICIENT}}};

        for (size_t i = 0; i < ctx->req.n; i++)
                if (ctx->req.items[i].res >= RES_ACCEL)
                        rs.items[0].res = ctx->req.items[i].res;
        return reasons_join(sched, &rs, ret_reason);
}

int xp_sched_place_on(struct xp_sched *sched,
                      const struct xp_pod *pod,
                      const char *node_name,
                      struct xp_placement *ret,
                      char **ret_reason,
                      struct xp_error *err)
{
        struct pctx ctx = {.sched = sched, .pod = pod};
        struct snode *node = xp_map_get(&sched->node_map, node_name);
        struct cand c = {.node = node, .pick = -1};
        struct devsel_pick pick;
        struct reasons rs;
        int r, k = 2;

        if (!node || !node->present)
                return xp_errorf(err, -ENOENT, "node %s is not in the snapshot", node_name);
        r = sched_pod_requests(sched, pod, &ctx.req, err);
        if (r < 0)
                return r;
        r = anti_affinity_prepare(&ctx);
        if (r < 0)
                goto out;
        if (!sched_filter_node(&ctx, node, &rs)) {
                r = reasons_join(sched, &rs, ret_reason);
                goto out;
        }
        rank_cheap(&ctx, &c, 1);
        if (rank_needs_devices(&ctx, node)) {
                k = sched_select_devices(
                    &ctx, node, ctx.req.single_numa ? SCHED_NUMA_REQUIRED : -1, &pick);
                if (k < 0) {
                        r = xp_errorf(err, k, "device selection on node %s failed", node_name);
                        goto out;
                }
                if (k == 0) {
                        r = fragmented(sched, &ctx, ret_reason);
                        goto out;
                }
        }
        r = fill_placement(sched, &ctx, &c, k == 1 ? &pick : NULL, ret);
        if (r >= 0)
                r = 1;
out:
        if (r == -ENOMEM)
                xp_errorf(err, r, "placing pod %s: out of memory", pod->metadata.name);
        free(ctx.anti);
        sterms_free(ctx.terms, ctx.n_terms);
        podreq_done(&ctx.req);
        return r;
}
