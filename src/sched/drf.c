/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fair shares, level by level down the queue tree. Among the children of one queue, each first
 * gets its guarantee as far as its demand (allocated + pending, capped by its limit) reaches;
 * what is left of the parent's share is then divided by weighted dominant-resource fairness
 * (DRF, Ghodsi et al., NSDI'11) in its continuous form, progressive filling: every child's
 * extra demand is a vector, its dominant share is the largest of extra[r] / (capacity[r] *
 * weight[r]), and all children grow along their vectors at the same rate of dominant share until
 * a resource runs out (the children that use it stop) or a child has all it asks for. A child's
 * fair share (deserved) is then its guarantee plus the part of its extra demand it reached.
 * docs/scheduler.md, "Fair share", works an example through.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "queue_internal.h"

#define EPS 1e-12

struct filling {
        struct squeue *q;
        int64_t extra[QR];
        double dominant; /* of extra, weighted; 0: asks for nothing more */
        double f;        /* the fraction of extra reached */
        bool active;
};

static double weight_of(const struct squeue *q, size_t r)
{
        return q->weights[r] > 0 ? q->weights[r] : q->weight > 0 ? q->weight : 1.0;
}

/* Each child's guarantee as far as its demand reaches; the rest of avail is left in rest. */
static void give_guarantees(const struct xp_queues *qs,
                            struct filling *fs,
                            size_t n,
                            const int64_t avail[QR],
                            double rest[QR])
{
        for (size_t r = 0; r < qs->n_res; r++)
                rest[r] = (double)avail[r];
        for (size_t i = 0; i < n; i++) {
                struct squeue *c = fs[i].q;

                fs[i].dominant = 0;
                for (size_t r = 0; r < qs->n_res; r++) {
                        int64_t want = c->allocated[r] + c->pending[r];
                        int64_t g;
                        double cap = qs->capacity[r] > 0 ? (double)qs->capacity[r] : 1.0;

                        if (c->limit[r] >= 0 && want > c->limit[r])
                                want = c->limit[r];
                        g = want < c->guaranteed[r] ? want : c->guaranteed[r];
                        c->deserved[r] = g;
                        rest[r] -= (double)g;
                        fs[i].extra[r] = c->reclaimable || want <= g ? want - g : 0;
                        fs[i].dominant =
                            fmax(fs[i].dominant, (double)fs[i].extra[r] / (cap * weight_of(c, r)));
                }
                fs[i].f = 0;
                fs[i].active = fs[i].dominant > 0;
        }
        for (size_t r = 0; r < qs->n_res; r++)
                if (rest[r] < 0)
                        rest[r] = 0; /* guarantees above the parent's share: nothing idle */
}

/* One step of progressive filling: false when no child can grow any more. */
static bool fill_step(const struct xp_queues *qs, struct filling *fs, size_t n, double rest[QR])
{
        double rate[QR] = {0}, dt = INFINITY;
        bool any = false;

        for (size_t i = 0; i < n; i++) {
                if (!fs[i].active)
                        continue;
                any = true;
                dt = fmin(dt, (1.0 - fs[i].f) * fs[i].dominant);
                for (size_t r = 0; r < qs->n_res; r++)
                        rate[r] += (double)fs[i].extra[r] / fs[i].dominant;
        }
        if (!any)
                return false;
        for (size_t r = 0; r < qs->n_res; r++)
                if (rate[r] > 0)
                        dt = fmin(dt, rest[r] / rate[r]);
        for (size_t r = 0; r < qs->n_res; r++)
                rest[r] -= dt * rate[r];
        for (size_t i = 0; i < n; i++) {
                if (!fs[i].active)
                        continue;
                fs[i].f += dt / fs[i].dominant;
                if (fs[i].f >= 1.0 - EPS)
                        fs[i].active = false;
                for (size_t r = 0; r < qs->n_res && fs[i].active; r++)
                        if (fs[i].extra[r] > 0 && rest[r] <= EPS * (double)qs->capacity[r] + EPS)
                                fs[i].active = false; /* a resource it needs ran out */
        }
        return true;
}

static void share_level(struct xp_queues *qs, const struct squeue *parent, const int64_t avail[QR])
{
        struct filling *fs = calloc(qs->n ? qs->n : 1, sizeof(*fs));
        double rest[QR];
        size_t n = 0;

        if (!fs)
                return; /* out of memory: the shares keep their last values */
        for (size_t i = 0; i < qs->n; i++)
                if (qs->items[i]->parent == parent && !qs->items[i]->orphan &&
                    qs->items[i]->defined)
                        fs[n++].q = qs->items[i];
        give_guarantees(qs, fs, n, avail, rest);
        /* each step stops a child or empties a resource: bounded by both counts */
        for (size_t step = 0; step < n + qs->n_res + 1 && fill_step(qs, fs, n, rest); step++)
                ;
        for (size_t i = 0; i < n; i++)
                for (size_t r = 0; r < qs->n_res; r++)
                        fs[i].q->deserved[r] +=
                            llround(fmin(fs[i].f, 1.0) * (double)fs[i].extra[r]);
        for (size_t i = 0; i < n; i++)
                if (fs[i].q->has_children)
                        share_level(qs, fs[i].q, fs[i].q->deserved);
        free(fs);
}

void queues_fair_shares(struct xp_queues *qs)
{
        for (size_t i = 0; i < qs->n; i++)
                memset(qs->items[i]->deserved, 0, sizeof(qs->items[i]->deserved));
        share_level(qs, NULL, qs->capacity);
}
