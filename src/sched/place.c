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
        if (near < n_nodes) {
                n = sched->nodes[near];
                __builtin_prefetch(n->res);
                __builtin_prefetch((const char *)n->res + 64);
        }
}

static bool has_device_request(const struct pctx *ctx, const struct snode *node)
{
        for (size_t i = 0; i < ctx->req.n; i++) {
                uint32_t res = ctx->req.items[i].res;
                if (res == RES_ACCEL || (res > RES_ACCEL && node_group(node, res)) ||
                    (ctx->req.mem_bytes > 0 && res == ctx->req.mem_res))
                        return true;
        }
        return false;
}

/* The reasons nodes were refused, each counted once per node. */
struct hist {
        struct reason_hist *items;
        size_t n, cap;
};

static int hist_add(struct hist *h, const struct reason *r)
{
        for (size_t i = 0; i < h->n; i++) {
                const struct reason *seen = &h->items[i].reason;
                if (seen->kind != r->kind || seen->res != r->res)
                        continue;
                if (r->kind == REASON_TAINT && (strcmp(seen->taint->key, r->taint->key) != 0 ||
                                                strcmp(seen->taint->value, r->taint->value) != 0))
                        continue;
                h->items[i].count++;
                return 0;
        }
        if (h->n == h->cap) {
                size_t ncap = h->cap ? h->cap * 2 : 8;
                struct reason_hist *m = realloc(h->items, ncap * sizeof(*m));
                if (!m)
                        return -ENOMEM;
                h->items = m;
                h->cap = ncap;
        }
        h->items[h->n++] = (struct reason_hist){.reason = *r, .count = 1};
        return 0;
}

/* No node fits: why, in kube-scheduler's words (0, or -ENOMEM). */
static int unschedulable(struct xp_sched *sched, const struct hist *h, char **ret_reason)
{
        int r = reasons_format(sched, sched->n_present, h->items, h->n, ret_reason);

        if (r < 0)
                return r;
        sched->stats.unschedulable++;
        return 0;
}

static int cmp_cand(const void *a, const void *b)
{
        const struct cand *x = a, *y = b;

        if (x->score != y->score)
                return x->score > y->score ? -1 : 1;
        return x->tie > y->tie ? -1 : x->tie < y->tie;
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

/* The candidates' array, kept between placements: the filter loop then allocates nothing. */
static int reserve_cands(struct xp_sched *sched, size_t limit)
{
        struct cand *m;

        if (sched->cap_cands >= limit + 1)
                return 0;
        m = realloc(sched->cands, (limit + 1) * sizeof(*m));
        if (!m)
                return -ENOMEM;
        sched->cands = m;
        sched->cap_cands = limit + 1;
        return 0;
}

/* ---- filter ------------------------------------------------------------------------------ */

/* From the rotating start until limit nodes are feasible: the candidates in sched->cands. */
static int filter_nodes(struct pctx *ctx, size_t limit, struct hist *h, size_t *ret_n)
{
        struct xp_sched *sched = ctx->sched;
        size_t n_cands = 0, checked = 0, n_nodes = sched->n_nodes;

        for (size_t i = 0, at = sched->next_start; i < n_nodes && n_cands < limit; i++) {
                struct snode *node = sched->nodes[at];
                struct reasons rs;
                bool ok = true;

                /* the nodes are scattered on the heap: fetch ahead what the filters read */
                prefetch_node(sched, at, n_nodes);
                if (++at == n_nodes)
                        at = 0;
                checked = i + 1;
                if (!node->present)
                        continue;
                rs.n = 0;
                sched->stats.nodes_filtered++;
                for (size_t f = 0; f < sched_n_filters && ok; f++)
                        ok = sched_filters[f]->filter(ctx, node, &rs);
                if (ok) {
                        sched->cands[n_cands++] = (struct cand){.node = node, .pick = -1};
                        continue;
                }
                for (size_t k = 0; k < rs.n; k++) {
                        int r = hist_add(h, &rs.items[k]);
                        if (r < 0)
                                return r;
                }
        }
        if (n_nodes)
                sched->next_start = (sched->next_start + checked) % n_nodes;
        *ret_n = n_cands;
        return 0;
}

/* ---- cheap scores ------------------------------------------------------------------------ */

/* Scores the candidates with the profile's cheap scores and keeps the best few, in order, at the
 * front of cands. Returns how many. */
static size_t score_cheap(const struct pctx *ctx,
                          const struct profile_weight *prof,
                          struct cand *cands,
                          size_t n_cands)
{
        struct cand best[SCHED_DEVSEL_CANDIDATES * 2];
        size_t n_best = 0;

        for (size_t i = 0; i < n_cands; i++) {
                struct cand *c = &cands[i];
                if (ctx->req.accel > 0 ||
                    (ctx->req.mem_bytes > 0 && ctx->req.mem_base == RES_ACCEL))
                        c->accel_group = accel_pick_group(ctx, c->node, NULL);
                c->tie = xp_hash_mix(ctx->sched->options.seed ^ ctx->req.hash ^ c->node->hash);
                for (size_t o = 0; prof[o].ops; o++)
                        if (!prof[o].ops->after_devsel)
                                c->raw[o] = prof[o].ops->score(ctx, c);
        }
        for (size_t o = 0; prof[o].ops; o++)
                if (!prof[o].ops->after_devsel && prof[o].ops->normalize)
                        prof[o].ops->normalize(cands, n_cands, o);
        for (size_t i = 0; i < n_cands; i++) {
                cands[i].score = 0;
                for (size_t o = 0; prof[o].ops; o++)
                        if (!prof[o].ops->after_devsel)
                                cands[i].score += cands[i].raw[o] * prof[o].weight;
        }
        /* only the best few are needed: one pass keeping them in order, not a sort */
        for (size_t i = 0; i < n_cands; i++) {
                size_t at = n_best;
                if (n_best == SCHED_DEVSEL_CANDIDATES * 2 &&
                    cmp_cand(&cands[i], &best[n_best - 1]) >= 0)
                        continue;
                if (n_best < SCHED_DEVSEL_CANDIDATES * 2)
                        n_best++;
                else
                        at = n_best - 1;
                while (at > 0 && cmp_cand(&cands[i], &best[at - 1]) < 0) {
                        best[at] = best[at - 1];
                        at--;
                }
                best[at] = cands[i];
        }
        memcpy(cands, best, n_best * sizeof(*best));
        return n_best;
}

/* ---- device selection for the best few -------------------------------------------------- */

/*
 * Device selection on the best candidates, its topology score deciding among those that can
 * give the devices: 1 with cands[0] the winner (its pick in picks), 0 when none can (h counts
 * why), -errno with err.
 */
static int select_best_devices(const struct pctx *ctx,
                               const struct profile_weight *prof,
                               struct cand *cands,
                               size_t n_cands,
                               struct devsel_pick picks[static SCHED_DEVSEL_CANDIDATES],
                               struct hist *h,
                               struct xp_error *err)
{
        struct cand top[SCHED_DEVSEL_CANDIDATES];
        size_t n_top = 0;

        for (size_t i = 0; i < n_cands && n_top < SCHED_DEVSEL_CANDIDATES; i++) {
                int k = sched_select_devices(ctx,
                                             cands[i].node,
                                             ctx->req.single_numa ? SCHED_NUMA_REQUIRED : -1,
                                             &picks[n_top]);
                if (k < 0)
                        return xp_errorf(
                            err, k, "device selection on node %s failed", cands[i].node->name);
                if (k == 0)
                        continue;
                top[n_top] = cands[i];
                top[n_top].pick = (int)n_top;
                n_top++;
        }
        if (n_top == 0) {
                /* the cheap checks passed but no node could give the devices: fragmented */
                struct reason rs = {.kind = REASON_INSUFFICIENT};
                for (size_t i = 0; i < ctx->req.n; i++)
                        if (ctx->req.items[i].res >= RES_ACCEL)
                                rs.res = ctx->req.items[i].res;
                for (size_t i = 0; i < n_cands; i++) {
                        int r = hist_add(h, &rs);
                        if (r < 0)
                                return r;
                }
                return 0;
        }
        for (size_t o = 0; prof[o].ops; o++) {
                if (!prof[o].ops->after_devsel)
                        continue;
                for (size_t i = 0; i < n_top; i++)
                        top[i].raw[o] = picks[top[i].pick].score;
                if (prof[o].ops->normalize)
                        prof[o].ops->normalize(top, n_top, o);
                for (size_t i = 0; i < n_top; i++)
                        top[i].score += top[i].raw[o] * prof[o].weight;
        }
        qsort(top, n_top, sizeof(*top), cmp_cand);
        cands[0] = top[0];
        return 1;
}

int xp_sched_place(struct xp_sched *sched,
                   const struct xp_pod *pod,
                   struct xp_placement *ret,
                   char **ret_reason,
                   struct xp_error *err)
{
        const struct profile_weight *prof = sched_profile(sched->options.profile);
        struct pctx ctx = {.sched = sched, .pod = pod};
        struct hist h = {0};
        struct devsel_pick picks[SCHED_DEVSEL_CANDIDATES];
        size_t n_cands = 0, limit;
        int r;

        r = sched_pod_requests(sched, pod, &ctx.req, err);
        if (r < 0)
                return r;
        limit = sched->options.feasible_nodes_to_find;
        if (limit == 0 || limit > sched->n_present)
                limit = sched->n_present;
        r = anti_affinity_prepare(&ctx);
        if (r >= 0)
                r = reserve_cands(sched, limit);
        if (r >= 0)
                r = filter_nodes(&ctx, limit, &h, &n_cands);
        if (r < 0 || n_cands == 0)
                goto out;
        n_cands = score_cheap(&ctx, prof, sched->cands, n_cands);
        if (has_device_request(&ctx, sched->cands[0].node) || ctx.req.single_numa) {
                r = select_best_devices(&ctx, prof, sched->cands, n_cands, picks, &h, err);
                if (r <= 0)
                        goto out;
        }
        r = fill_placement(sched,
                           &ctx,
                           &sched->cands[0],
                           sched->cands[0].pick >= 0 ? &picks[sched->cands[0].pick] : NULL,
                           ret);
        if (r < 0)
                goto out;
        sched->stats.placements++;
        r = 1;
out:
        /* no candidate, or none that can give the devices */
        if (r == 0)
                r = unschedulable(sched, &h, ret_reason);
        if (r == -ENOMEM)
                xp_errorf(err, r, "placing pod %s: out of memory", pod->metadata.name);
        free(h.items);
        free(ctx.anti);
        sterms_free(ctx.terms, ctx.n_terms);
        podreq_done(&ctx.req);
        return r;
}
