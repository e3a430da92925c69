/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The core's verdict on named nodes, for a scheduler extender: kube-scheduler has already chosen
 * the candidates, so every one is filtered (no rotating start, no feasible-node limit), each
 * failure keeps its own reasons, and the nodes that fit are ranked as a placement ranks its
 * candidates (rank.c), so the node xp_sched_place() would choose among them scores highest.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched_internal.h"

#define LOOKAHEAD 32 /* entries fetched ahead of the one filtered */

/* Evicting pods cannot cure these: the node itself refuses the pod. */
static bool is_unresolvable(const struct reasons *rs)
{
        for (size_t i = 0; i < rs->n; i++)
                if (rs->items[i].kind != REASON_UNSCHEDULABLE &&
                    rs->items[i].kind != REASON_AFFINITY && rs->items[i].kind != REASON_TAINT)
                        return false;
        return rs->n > 0;
}

/* The distinct reasons of one evaluation: most failing nodes fail alike, so each text is made
 * once and the verdicts point to it. */
struct texts {
        char **items;
        struct reasons *of; /* the reasons each text says */
        size_t n;
        size_t cap;
};

static bool same_reasons(const struct reasons *a, const struct reasons *b)
{
        if (a->n != b->n)
                return false;
        for (size_t i = 0; i < a->n; i++)
                if (a->items[i].kind != b->items[i].kind || a->items[i].res != b->items[i].res ||
                    a->items[i].taint != b->items[i].taint)
                        return false;
        return true;
}

static int
text_for(const struct xp_sched *sched, struct texts *t, const struct reasons *rs, const char **ret)
{
        /* the last few first: a run of equal nodes hits at once */
        for (size_t i = t->n; i-- > 0 && i + 16 >= t->n;)
                if (same_reasons(&t->of[i], rs)) {
                        *ret = t->items[i];
                        return 0;
                }
        if (t->n == t->cap) {
                size_t cap = t->cap ? t->cap * 2 : 8;
                char **m = realloc(t->items, cap * sizeof(*m));
                struct reasons *o;
                if (!m)
                        return -ENOMEM;
                t->items = m;
                o = realloc(t->of, cap * sizeof(*o));
                if (!o)
                        return -ENOMEM;
                t->of = o;
                t->cap = cap;
        }
        if (reasons_join(sched, rs, &t->items[t->n]) < 0)
                return -ENOMEM;
        t->of[t->n] = *rs;
        *ret = t->items[t->n++];
        return 0;
}

/* Ranks the n candidates in sched->cands and writes their scores into v. */
static int score_fitting(const struct pctx *ctx,
                         struct cand *cands,
                         size_t n,
                         struct xp_sched_verdict *v,
                         struct xp_error *err)
{
        struct devsel_pick picks[SCHED_DEVSEL_CANDIDATES];
        struct cand top[SCHED_DEVSEL_CANDIDATES];
        size_t n_best, n_top = 0;
        int r;

        rank_cheap(ctx, cands, n);
        for (size_t i = 0; i < n; i++)
                v[cands[i].slot].score = cands[i].score;
        n_best = rank_keep_best(cands, n);
        if (!rank_needs_devices(ctx, cands[0].node)) {
                v[cands[0].slot].best = true;
                return 0;
        }
        r = rank_devices(ctx, cands, n_best, picks, top, &n_top, err);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n_best; i++)
                if (cands[i].pick == RANK_NO_DEVICES)
                        v[cands[i].slot].score = 0;
        for (size_t i = 0; i < n_top; i++)
                v[top[i].slot].score = top[i].score;
        if (n_top > 0)
                v[top[0].slot].best = true;
        return 0;
}

/* The bytes of an entry the filters read for this pod: its head and the resources held inline
 * up to the highest it asks for (entries start on a cache line). */
static size_t entry_bytes(const struct pctx *ctx)
{
        uint32_t top = RES_PODS;

        for (size_t i = 0; i < ctx->req.n; i++)
                if (ctx->req.items[i].res > top)
                        top = ctx->req.items[i].res;
        if (top >= SNODE_RES_INLINE)
                top = SNODE_RES_INLINE - 1;
        return offsetof(struct snode, res_inline) + (top + 1) * sizeof(struct sres);
}

/* The first device resource the pod asks for (UINT32_MAX none; RES_ACCEL: any of them), whose
 * group the fit filter reads on every node: fetched ahead too, once the entry is in cache. */
static uint32_t device_res(const struct pctx *ctx)
{
        for (size_t i = 0; i < ctx->req.n; i++)
                if (ctx->req.items[i].res >= RES_ACCEL)
                        return ctx->req.items[i].res;
        return UINT32_MAX;
}

/* Room for n names in sched->scratch, kept between calls (an extender asks thousands each time). */
static int scratch_reserve(struct xp_sched *sched, size_t n)
{
        struct eval_scratch *k = &sched->scratch;
        void *m;

        if (k->cap >= n)
                return 0;
        m = realloc(k->at, n * sizeof(*k->at));
        if (!m)
                return -ENOMEM;
        k->at = m;
        m = realloc(k->fits, n * sizeof(*k->fits));
        if (!m)
                return -ENOMEM;
        k->fits = m;
        m = realloc(k->todo, n * sizeof(*k->todo));
        if (!m)
                return -ENOMEM;
        k->todo = m;
        k->cap = n;
        return 0;
}

void sched_scratch_free(struct xp_sched *sched)
{
        free(sched->scratch.at);
        free(sched->scratch.fits);
        free(sched->scratch.todo);
        sched->scratch = (struct eval_scratch){0};
}

/* The reasons rs of a node that failed, into v. */
static int failed(struct xp_sched *sched,
                  struct texts *texts,
                  const struct reasons *rs,
                  struct xp_sched_verdict *v)
{
        v->fit = 0;
        v->unresolvable = is_unresolvable(rs);
        return text_for(sched, texts, rs, &v->reason);
}

/* Filters the nodes at[todo[0..n_todo)] with the full filters, into v. */
static int filter_full(const struct pctx *ctx,
                       struct snode **at,
                       const size_t *todo,
                       size_t n_todo,
                       struct texts *texts,
                       struct xp_sched_verdict *v)
{
        struct xp_sched *sched = ctx->sched;
        uint32_t dev = device_res(ctx);
        size_t bytes = entry_bytes(ctx);

        /* a name asked twice is answered once: the mark says which slot answered it */
        sched->eval_generation++;
        for (size_t t = 0; t < n_todo; t++) {
                size_t i = todo[t];
                struct snode *node = at[i];
                const struct snode *ahead;
                const struct dgroup *g;
                struct reasons rs;

                /* the entries are misses: fetched ahead, then what they point to */
                if (t + LOOKAHEAD < n_todo)
                        for (size_t off = 0; off < bytes; off += 64)
                                __builtin_prefetch((const char *)at[todo[t + LOOKAHEAD]] + off);
                /* written out here: as a function GCC judged it free of effects and dropped it */
                if (dev != UINT32_MAX && t + LOOKAHEAD / 2 < n_todo &&
                    (ahead = at[todo[t + LOOKAHEAD / 2]]) &&
                    (g = dev == RES_ACCEL ? (ahead->n_groups ? ahead->groups : NULL)
                                          : node_group(ahead, dev)))
                        __builtin_prefetch(g);
                if (node->eval_generation == sched->eval_generation)
                        continue; /* fill_repeats() copies the first one's once it is complete */
                node->eval_generation = sched->eval_generation;
                node->eval_slot = i;
                sched->stats.nodes_filtered++;
                if (sched_filter_node(ctx, node, &rs))
                        v[i].fit = 1;
                else if (failed(sched, texts, &rs, &v[i]) < 0)
                        return -ENOMEM;
        }
        return 0;
}

/*
 * Filters each named node into v; the ones that fit (each once) go to sched->cands in the order
 * named. at[i]: the node of names[i], NULL when none. Nodes are judged by their summaries where
 * those can tell (fitsum.c), so most entries are never read; the rest, listed in todo, by the
 * full filters.
 */
static int filter_named(struct xp_sched *sched,
                        const struct pctx *ctx,
                        const char *const *names,
                        size_t n,
                        unsigned flags,
                        struct snode **at,
                        struct texts *texts,
                        struct xp_sched_verdict *v,
                        size_t *ret_n_cands,
                        bool *ret_repeats)
{
        const struct sfit **fits = sched->scratch.fits;
        size_t *todo = sched->scratch.todo;
        size_t n_cands = 0, n_todo = 0;
        bool summed;
        int r;

        r = sched_cands_reserve(sched, n + 1);
        if (r >= 0)
                r = sched_resolve_names(sched, names, n, at, fits, ret_repeats);
        if (r < 0)
                return r;
        /* a repeated name is answered by its first: the full filters' marks say which */
        summed = !*ret_repeats && !(flags & XP_SCHED_EVALUATE_FULL) && fitsum_pod_plain(ctx);
        for (size_t i = 0; i < n; i++) {
                struct reasons rs;
                int judged;

                v[i] = (struct xp_sched_verdict){.fit = -ENOENT};
                if (!fits[i] || !(fits[i]->flags & SFIT_PRESENT)) {
                        at[i] = NULL;
                        continue;
                }
                judged = summed ? fitsum_judge(ctx, fits[i], &rs) : -1;
                if (judged < 0) {
                        todo[n_todo++] = i;
                        continue;
                }
                sched->stats.nodes_filtered++;
                sched->stats.nodes_summed++;
                if (judged > 0)
                        v[i].fit = 1;
                else if (failed(sched, texts, &rs, &v[i]) < 0)
                        return -ENOMEM;
        }
        r = filter_full(ctx, at, todo, n_todo, texts, v);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++)
                if (v[i].fit == 1)
                        sched->cands[n_cands++] =
                            (struct cand){.node = at[i], .pick = -1, .slot = i};
        *ret_n_cands = n_cands;
        return 0;
}

/* Repeated names take the first one's verdict (its reason copied). */
static void fill_repeats(struct snode *const *at, size_t n, struct xp_sched_verdict *v)
{
        for (size_t i = 0; i < n; i++) {
                const struct snode *node = at[i];
                size_t first;

                if (!node || node->eval_slot == i)
                        continue;
                first = node->eval_slot;
                v[i] = v[first];
                v[i].best = false;
        }
}

int xp_sched_evaluate(struct xp_sched *sched,
                      const struct xp_pod *pod,
                      const char *const *names,
                      size_t n,
                      unsigned flags,
                      struct xp_sched_verdicts *ret,
                      struct xp_error *err)
{
        struct pctx ctx = {.sched = sched, .pod = pod};
        struct xp_sched_verdict *v = malloc((n + 1) * sizeof(*v)); /* filter_named() sets each */
        struct snode **at;
        struct texts texts = {0};
        size_t n_cands = 0;
        bool repeats = false;
        int r;

        if (!v || scratch_reserve(sched, n + 1) < 0) {
                free(v);
                return -ENOMEM;
        }
        at = sched->scratch.at;
        r = sched_pod_requests(sched, pod, &ctx.req, err);
        if (r < 0) {
                free(v);
                return r;
        }
        r = anti_affinity_prepare(&ctx);
        if (r >= 0)
                r = filter_named(sched, &ctx, names, n, flags, at, &texts, v, &n_cands, &repeats);
        if (r >= 0 && n_cands > 0 && (flags & XP_SCHED_EVALUATE_SCORE))
                r = score_fitting(&ctx, sched->cands, n_cands, v, err);
        free(texts.of);
        if (r >= 0) {
                if (repeats)
                        fill_repeats(at, n, v);
                *ret = (struct xp_sched_verdicts){
                    .items = v, .n = n, .texts = texts.items, .n_texts = texts.n};
        } else {
                struct xp_sched_verdicts gone = {
                    .items = v, .texts = texts.items, .n_texts = texts.n};
                xp_sched_verdicts_done(&gone);
        }
        if (r == -ENOMEM)
                xp_errorf(err, r, "evaluating pod %s: out of memory", pod->metadata.name);
        free(ctx.anti);
        sterms_free(ctx.terms, ctx.n_terms);
        podreq_done(&ctx.req);
        return r < 0 ? r : 0;
}

void xp_sched_verdicts_done(struct xp_sched_verdicts *verdicts)
{
        if (!verdicts)
                return;
        for (size_t i = 0; i < verdicts->n_texts; i++)
                free(verdicts->texts[i]);
        free(verdicts->texts);
        free(verdicts->items);
        *verdicts = (struct xp_sched_verdicts){0};
}
