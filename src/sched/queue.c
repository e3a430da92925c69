/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The queue tree: specs, what each queue holds and waits for, and the questions the scheduling
 * loop asks (admission against the limits up the tree, reclaim against the fair shares drf.c
 * computes). Queues are few (one per team), so a change walks them all.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "queue_internal.h"
#include "xpool/macro.h"
#include "xpool/names.h"

int xp_queues_new(struct xp_queues **ret)
{
        struct xp_queues *qs = calloc(1, sizeof(*qs));

        if (!qs)
                return -ENOMEM;
        *ret = qs;
        return 0;
}

static void squeue_free(struct squeue *q)
{
        if (!q)
                return;
        free(q->name);
        free(q->parent_name);
        free(q);
}

void xp_queues_free(struct xp_queues *qs)
{
        if (!qs)
                return;
        for (size_t i = 0; i < qs->n; i++)
                squeue_free(qs->items[i]);
        for (size_t r = 0; r < qs->n_res; r++)
                free(qs->res[r]);
        free(qs->items);
        xp_map_done(&qs->by_name);
        free(qs);
}

int queues_res_id(struct xp_queues *qs, const char *name, bool add)
{
        for (size_t r = 0; r < qs->n_res; r++)
                if (strcmp(qs->res[r], name) == 0)
                        return (int)r;
        if (!add)
                return -ENOENT;
        if (qs->n_res == QR)
                return -E2BIG;
        qs->res[qs->n_res] = strdup(name);
        if (!qs->res[qs->n_res])
                return -ENOMEM;
        for (size_t i = 0; i < qs->n; i++)
                qs->items[i]->limit[qs->n_res] = -1;
        return (int)qs->n_res++;
}

static void spec_clear(struct squeue *q)
{
        memset(q->guaranteed, 0, sizeof(q->guaranteed));
        memset(q->weights, 0, sizeof(q->weights));
        memset(q->spec_has, 0, sizeof(q->spec_has));
        for (size_t r = 0; r < QR; r++)
                q->limit[r] = -1;
        q->weight = 1.0;
        q->reclaimable = true;
}

/* The queue of name, made (undefined) when absent. NULL: -ENOMEM. */
static struct squeue *queue_entry(struct xp_queues *qs, const char *name)
{
        struct squeue *q = xp_map_get(&qs->by_name, name);

        if (q)
                return q;
        if (qs->n == qs->cap) {
                size_t cap = qs->cap ? qs->cap * 2 : 8;
                struct squeue **m = realloc(qs->items, cap * sizeof(*m));
                if (!m)
                        return NULL;
                qs->items = m;
                qs->cap = cap;
        }
        q = calloc(1, sizeof(*q));
        if (!q || !(q->name = strdup(name)) || xp_map_put(&qs->by_name, q->name, q) < 0) {
                squeue_free(q);
                return NULL;
        }
        spec_clear(q);
        qs->items[qs->n++] = q;
        qs->resolved = false;
        return q;
}

static int spec_check(const struct xp_queue_spec *spec, struct xp_error *err)
{
        if (!spec->name || !spec->name[0] || strlen(spec->name) > XP_QUEUE_NAME_MAX)
                return xp_errorf(
                    err, -EINVAL, "queue: name: must be 1-%d characters", XP_QUEUE_NAME_MAX);
        if (spec->parent && strcmp(spec->parent, spec->name) == 0)
                return xp_errorf(
                    err, -EINVAL, "queue %s: parent: a queue cannot be its own parent", spec->name);
        if (!isfinite(spec->weight) || spec->weight < 0)
                return xp_errorf(
                    err, -EINVAL, "queue %s: weight: must be a number >= 0", spec->name);
        for (size_t i = 0; i < spec->n_quotas; i++) {
                const struct xp_queue_quota *k = &spec->quotas[i];

                if (!k->resource || !k->resource[0])
                        return xp_errorf(
                            err, -EINVAL, "queue %s: resources[%zu]: name required", spec->name, i);
                if (k->guaranteed < 0)
                        return xp_errorf(err,
                                         -EINVAL,
                                         "queue %s: resources[%s].guaranteed: must be >= 0",
                                         spec->name,
                                         k->resource);
                if (k->limit < -1)
                        return xp_errorf(err,
                                         -EINVAL,
                                         "queue %s: resources[%s].limit: must be >= 0",
                                         spec->name,
                                         k->resource);
                if (k->limit >= 0 && k->limit < k->guaranteed)
                        return xp_errorf(
                            err,
                            -EINVAL,
                            "queue %s: resources[%s].limit: must be at least the guaranteed quota",
                            spec->name,
                            k->resource);
                if (!isfinite(k->weight) || k->weight < 0)
                        return xp_errorf(err,
                                         -EINVAL,
                                         "queue %s: resources[%s].weight: must be a number >= 0",
                                         spec->name,
                                         k->resource);
        }
        return 0;
}

int xp_queues_set(struct xp_queues *qs, const struct xp_queue_spec *spec, struct xp_error *err)
{
        int ids[QR];
        struct squeue *q;
        char *parent = NULL;
        int r;

        r = spec_check(spec, err);
        if (r < 0)
                return r;
        if (spec->n_quotas > QR)
                return xp_errorf(err, -EINVAL, "queue %s: resources: at most %d", spec->name, QR);
        for (size_t i = 0; i < spec->n_quotas; i++) {
                ids[i] = queues_res_id(qs, spec->quotas[i].resource, true);
                if (ids[i] == -E2BIG)
                        return xp_errorf(
                            err,
                            -EINVAL,
                            "queue %s: resources: at most %d distinct resources over all queues",
                            spec->name,
                            QR);
                if (ids[i] < 0)
                        return ids[i];
        }
        if (spec->parent && spec->parent[0] && !(parent = strdup(spec->parent)))
                return -ENOMEM;
        q = queue_entry(qs, spec->name);
        if (!q) {
                free(parent);
                return -ENOMEM;
        }
        free(q->parent_name);
        q->parent_name = parent;
        spec_clear(q);
        q->defined = true;
        q->weight = spec->weight > 0 ? spec->weight : 1.0;
        q->reclaimable = spec->reclaimable;
        for (size_t i = 0; i < spec->n_quotas; i++) {
                q->guaranteed[ids[i]] = spec->quotas[i].guaranteed;
                q->limit[ids[i]] = spec->quotas[i].limit;
                q->weights[ids[i]] = spec->quotas[i].weight;
                q->spec_has[ids[i]] = true;
        }
        qs->resolved = false;
        return 0;
}

int xp_queues_remove(struct xp_queues *qs, const char *name)
{
        struct squeue *q = xp_map_get(&qs->by_name, name);

        if (!q || !q->defined)
                return -ENOENT;
        free(q->parent_name);
        q->parent_name = NULL;
        spec_clear(q);
        q->defined = false; /* its pods' charges stay until they go */
        qs->resolved = false;
        return 0;
}

int xp_queues_capacity(struct xp_queues *qs, const char *resource, int64_t milli)
{
        int r = queues_res_id(qs, resource, true);

        if (r < 0)
                return r == -E2BIG ? -EINVAL : r;
        qs->capacity[r] = milli;
        return 0;
}

static int add_amounts(struct xp_queues *qs,
                       const char *queue,
                       const struct xp_queue_amount *a,
                       size_t n,
                       int sign,
                       bool pending)
{
        struct squeue *q = queue_entry(qs, queue);
        int ids[QR];

        if (!q)
                return -ENOMEM;
        if (n > QR)
                return -EINVAL;
        for (size_t i = 0; i < n; i++) {
                ids[i] = queues_res_id(qs, a[i].resource, true);
                if (ids[i] < 0)
                        return ids[i] == -E2BIG ? -EINVAL : ids[i];
        }
        for (size_t i = 0; i < n; i++) {
                int64_t *v = pending ? &q->own_pending[ids[i]] : &q->own_allocated[ids[i]];
                *v += sign * a[i].milli;
                if (*v < 0)
                        *v = 0;
        }
        qs->resolved = false;
        return 0;
}

int xp_queues_charge(
    struct xp_queues *qs, const char *queue, const struct xp_queue_amount *a, size_t n, int sign)
{
        return add_amounts(qs, queue, a, n, sign, false);
}

int xp_queues_pend(
    struct xp_queues *qs, const char *queue, const struct xp_queue_amount *a, size_t n, int sign)
{
        return add_amounts(qs, queue, a, n, sign, true);
}

/* Follows q's parents: true when the chain ends at the top without a missing or repeated link. */
static bool chain_ok(struct xp_queues *qs, struct squeue *q, unsigned *ret_depth)
{
        unsigned depth = 0;

        for (struct squeue *p = q; p->parent_name; depth++) {
                if (depth >= XP_QUEUE_DEPTH_MAX)
                        return false; /* a loop, or deeper than we allow */
                p = xp_map_get(&qs->by_name, p->parent_name);
                if (!p || !p->defined)
                        return false;
        }
        *ret_depth = depth;
        return true;
}

void queues_resolve(struct xp_queues *qs)
{
        memset(qs->managed, 0, sizeof(qs->managed));
        for (size_t i = 0; i < qs->n; i++) {
                struct squeue *q = qs->items[i];

                q->has_children = false;
                q->orphan = !q->defined || !chain_ok(qs, q, &q->depth);
                q->parent =
                    q->parent_name && !q->orphan ? xp_map_get(&qs->by_name, q->parent_name) : NULL;
                for (size_t r = 0; r < qs->n_res; r++)
                        qs->managed[r] = qs->managed[r] || (q->defined && q->spec_has[r]);
                memcpy(q->allocated, q->own_allocated, sizeof(q->allocated));
                memcpy(q->pending, q->own_pending, sizeof(q->pending));
        }
        for (size_t i = 0; i < qs->n; i++)
                if (qs->items[i]->parent)
                        qs->items[i]->parent->has_children = true;
        /* subtrees summed bottom up: deepest first */
        for (unsigned d = XP_QUEUE_DEPTH_MAX; d > 0; d--)
                for (size_t i = 0; i < qs->n; i++) {
                        struct squeue *q = qs->items[i];
                        if (q->orphan || q->depth != d || !q->parent)
                                continue;
                        for (size_t r = 0; r < qs->n_res; r++) {
                                q->parent->allocated[r] += q->allocated[r];
                                q->parent->pending[r] += q->pending[r];
                        }
                }
        qs->resolved = true;
}

void xp_queues_compute(struct xp_queues *qs)
{
        queues_resolve(qs);
        queues_fair_shares(qs);
}
