/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Ranking the nodes that fit, shared by a placement (place.c) and a scheduler extender's
 * verdicts (evaluate.c), so both order nodes alike: the profile's cheap scores for every
 * candidate, then device selection only for the best few, whose topology score decides among
 * them. Ties go to a hash of the seed, the pod and the node.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gpupolicy.h"

int sched_cand_compare(const void *a, const void *b)
{
        const struct cand *x = a, *y = b;

        if (x->score != y->score)
                return x->score > y->score ? -1 : 1;
        return x->tie > y->tie ? -1 : x->tie < y->tie;
}

int sched_cands_reserve(struct xp_sched *sched, size_t n)
{
        struct cand *m;

        if (sched->cap_cands >= n)
                return 0;
        /* kept between calls: the filter loop then allocates nothing */
        m = realloc(sched->cands, n * sizeof(*m));
        if (!m)
                return -ENOMEM;
        sched->cands = m;
        sched->cap_cands = n;
        return 0;
}

bool rank_needs_devices(const struct pctx *ctx, const struct snode *node)
{
        if (ctx->req.single_numa)
                return true;
        for (size_t i = 0; i < ctx->req.n; i++) {
                uint32_t res = ctx->req.items[i].res;
                if (res == RES_ACCEL || (res > RES_ACCEL && node_group(node, res)) ||
                    (ctx->req.mem_bytes > 0 && res == ctx->req.mem_res))
                        return true;
        }
        return false;
}

void rank_cheap(const struct pctx *ctx, struct cand *cands, size_t n)
{
        const struct profile_weight *prof = sched_profile(ctx->sched->options.profile);
        bool accel =
            ctx->req.accel > 0 || (ctx->req.mem_bytes > 0 && ctx->req.mem_base == RES_ACCEL);

        for (size_t i = 0; i < n; i++) {
                struct cand *c = &cands[i];
                if (accel)
                        c->accel_group = accel_pick_group(ctx, c->node, NULL);
                c->tie = xp_hash_mix(ctx->sched->options.seed ^ gp_tie_salt(ctx) ^ c->node->hash);
                for (size_t o = 0; prof[o].ops; o++)
                        if (!prof[o].ops->after_devsel)
                                c->raw[o] = prof[o].ops->score(ctx, c);
        }
        for (size_t o = 0; prof[o].ops; o++)
                if (!prof[o].ops->after_devsel && prof[o].ops->normalize)
                        prof[o].ops->normalize(cands, n, o);
        for (size_t i = 0; i < n; i++) {
                cands[i].score = 0;
                for (size_t o = 0; prof[o].ops; o++)
                        if (!prof[o].ops->after_devsel)
                                cands[i].score += cands[i].raw[o] * prof[o].weight;
        }
}

size_t rank_keep_best(struct cand *cands, size_t n)
{
        struct cand best[RANK_BEST];
        size_t n_best = 0;

        /* only the best few are needed: one pass keeping them in order, not a sort */
        for (size_t i = 0; i < n; i++) {
                size_t at = n_best;
                if (n_best == RANK_BEST && sched_cand_compare(&cands[i], &best[n_best - 1]) >= 0)
                        continue;
                if (n_best < RANK_BEST)
                        n_best++;
                else
                        at = n_best - 1;
                while (at > 0 && sched_cand_compare(&cands[i], &best[at - 1]) < 0) {
                        best[at] = best[at - 1];
                        at--;
                }
                best[at] = cands[i];
        }
        memcpy(cands, best, n_best * sizeof(*best));
        return n_best;
}

int rank_devices(const struct pctx *ctx,
                 struct cand *cands,
                 size_t n,
                 struct devsel_pick picks[static SCHED_DEVSEL_CANDIDATES],
                 struct cand top[static SCHED_DEVSEL_CANDIDATES],
                 size_t *ret_n_top,
                 struct xp_error *err)
{
        const struct profile_weight *prof = sched_profile(ctx->sched->options.profile);
        size_t n_top = 0;

        for (size_t i = 0; i < n && n_top < SCHED_DEVSEL_CANDIDATES; i++) {
                int k = sched_select_devices(ctx,
                                             cands[i].node,
                                             ctx->req.single_numa ? SCHED_NUMA_REQUIRED : -1,
                                             &picks[n_top]);
                if (k < 0)
                        return xp_errorf(
                            err, k, "device selection on node %s failed", cands[i].node->name);
                if (k == 0) {
                        cands[i].pick = RANK_NO_DEVICES;
                        continue;
                }
                top[n_top] = cands[i];
                top[n_top].pick = (int)n_top;
                n_top++;
        }
        *ret_n_top = n_top;
        if (n_top == 0)
                return 0;
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
        qsort(top, n_top, sizeof(*top), sched_cand_compare);
        return 0;
}
