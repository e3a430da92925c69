/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The questions the scheduling loop asks the queues: admission (limits up the tree, and no
 * borrowing for a queue that is not reclaimable), reclaim (fair shares), the figures of a
 * queue's status. Only the resources some queue's spec names are managed: a pod's cpu in a
 * cluster whose queues speak of GPUs only is neither limited nor borrowed.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "queue_internal.h"
#include "xpool/quantity.h"

/* amounts as a vector over the interned resources (unknown ones are nobody's business). */
static void
vector_of(struct xp_queues *qs, const struct xp_queue_amount *a, size_t n, int64_t v[QR])
{
        memset(v, 0, QR * sizeof(*v));
        for (size_t i = 0; i < n; i++) {
                int r = queues_res_id(qs, a[i].resource, false);
                if (r >= 0 && a[i].milli > 0)
                        v[r] += a[i].milli;
        }
}

static const char *amount(int64_t milli, char buf[static XP_QUANTITY_STRING_MAX])
{
        struct xp_quantity q = xp_quantity_from_milli(milli);

        return xp_quantity_format(&q, buf);
}

/* The leaf queue a pod may use, or NULL with *ret_reason. */
static struct squeue *leaf(struct xp_queues *qs, const char *queue, char **ret_reason)
{
        struct squeue *q = queue ? xp_map_get(&qs->by_name, queue) : NULL;
        int r;

        if (!qs->resolved)
                queues_resolve(qs);
        if (!q || !q->defined)
                r = asprintf(ret_reason, "queue \"%s\" does not exist", queue ? queue : "");
        else if (q->orphan)
                r = asprintf(
                    ret_reason,
                    "queue \"%s\" is not usable: its parent \"%s\" does not exist or its parents form a loop",
                    queue,
                    q->parent_name);
        else if (q->has_children)
                r = asprintf(
                    ret_reason,
                    "queue \"%s\" has child queues: pods must name a queue without children",
                    queue);
        else
                return q;
        if (r < 0)
                *ret_reason = NULL;
        return NULL;
}

/* What holds a pod back in its queue's tree: the queue and resource, and which bound. */
struct block {
        enum {
                BLOCK_NONE,
                BLOCK_LIMIT,
                BLOCK_GUARANTEE
        } kind;
        struct squeue *q;
        size_t r;
        int64_t requested;
        bool borrow; /* admitted beyond a guarantee */
};

static struct block find_block(struct xp_queues *qs, struct squeue *q, const int64_t v[QR])
{
        struct block b = {0};

        for (struct squeue *p = q; p; p = p->parent)
                for (size_t r = 0; r < qs->n_res; r++) {
                        if (v[r] <= 0 || !p->spec_has[r])
                                continue;
                        b = (struct block){.q = p, .r = r, .requested = v[r], .borrow = b.borrow};
                        if (p->limit[r] >= 0 && p->allocated[r] + v[r] > p->limit[r]) {
                                b.kind = BLOCK_LIMIT;
                                return b;
                        }
                        if (p->allocated[r] + v[r] <= p->guaranteed[r])
                                continue;
                        b.borrow = true;
                        if (!p->reclaimable) {
                                b.kind = BLOCK_GUARANTEE;
                                return b;
                        }
                }
        b.kind = BLOCK_NONE;
        return b;
}

/* 0 admitted (*ret_borrow set), 1 refused with *ret_reason, -ENOMEM. */
static int check_up(struct xp_queues *qs,
                    struct squeue *q,
                    const int64_t v[QR],
                    bool *ret_borrow,
                    char **ret_reason)
{
        char a[XP_QUANTITY_STRING_MAX], b[XP_QUANTITY_STRING_MAX], c[XP_QUANTITY_STRING_MAX];
        struct block k = find_block(qs, q, v);

        if (k.kind == BLOCK_NONE) {
                *ret_borrow = k.borrow;
                return 0;
        }
        return asprintf(
                   ret_reason,
                   k.kind == BLOCK_LIMIT ? "queue \"%s\" is over its limit of %s: %s allocated "
                                           "+ %s requested > %s"
                                         : "queue \"%s\" is not reclaimable and would exceed "
                                           "its guaranteed %s: %s allocated + %s requested > %s",
                   k.q->name,
                   qs->res[k.r],
                   amount(k.q->allocated[k.r], a),
                   amount(k.requested, b),
                   amount(k.kind == BLOCK_LIMIT ? k.q->limit[k.r] : k.q->guaranteed[k.r], c)) < 0
                   ? -ENOMEM
                   : 1;
}

/*
 * What would admit the pod that block k holds back (leaf: the pod's queue). Freeing is named
 * only where it can make room: a queue with nothing allocated has nothing to free, and a pod
 * that alone asks for more than the bound fits after no freeing. When the bound is a parent's,
 * what is to be freed is its queues' (others' as well as the pod's own queue's). -ENOMEM.
 */
static int
unblock_text(struct xp_queues *qs, const struct squeue *leaf, const struct block *k, char **ret)
{
        char freed[XP_QUANTITY_STRING_MAX], to[XP_QUANTITY_STRING_MAX];
        char asked[XP_QUANTITY_STRING_MAX], held[XP_QUANTITY_STRING_MAX];
        char bound_text[XP_QUANTITY_STRING_MAX], own[XP_QUANTITY_STRING_MAX];
        const char *res = qs->res[k->r], *name = k->q->name;
        bool limit = k->kind == BLOCK_LIMIT;
        int64_t bound = limit ? k->q->limit[k->r] : k->q->guaranteed[k->r];
        int64_t allocated = k->q->allocated[k->r];
        _cleanup_free_ char *raise = NULL;
        int r;

        amount(allocated + k->requested - bound, freed);
        amount(allocated + k->requested, to);
        amount(k->requested, asked);
        amount(allocated, held);
        amount(bound, bound_text);
        amount(leaf->allocated[k->r], own);
        r = limit ? asprintf(&raise, "its limit of %s raised to %s", res, to)
                  : asprintf(&raise,
                             "its guaranteed %s raised to %s, or the queue made reclaimable",
                             res,
                             to);
        if (r < 0)
                return -ENOMEM;
        if (allocated == 0)
                r = asprintf(
                    ret, "to unblock: queue \"%s\" has nothing allocated to free: %s", name, raise);
        else if (k->requested > bound)
                r = asprintf(ret,
                             "to unblock: the pod asks for %s %s, more than queue \"%s\"'s %s of "
                             "%s, so freeing its %s allocated cannot make room: %s",
                             asked,
                             res,
                             name,
                             limit ? "limit" : "guarantee",
                             bound_text,
                             held,
                             raise);
        else if (k->q != leaf)
                r = asprintf(ret,
                             "to unblock: %s %s freed in queue \"%s\"'s queues (their pods done or "
                             "deleted; queue \"%s\" holds %s of its %s)%s %s",
                             freed,
                             res,
                             name,
                             leaf->name,
                             own,
                             held,
                             limit ? ", or" : ",",
                             raise);
        else
                r = asprintf(
                    ret,
                    "to unblock: %s %s freed in queue \"%s\" (its pods done or deleted)%s %s",
                    freed,
                    res,
                    name,
                    limit ? ", or" : ",",
                    raise);
        return r < 0 ? -ENOMEM : 0;
}

/* What would let a pod name queue, which leaf() refused. -ENOMEM. */
static int unusable_text(struct xp_queues *qs, const char *queue, char **ret)
{
        struct squeue *q = queue ? xp_map_get(&qs->by_name, queue) : NULL;

        if (!q || !q->defined)
                return asprintf(ret,
                                "to unblock: create queue \"%s\", or label the pod with an "
                                "existing queue (xpool.io/queue)",
                                queue ? queue : "");
        if (q->orphan)
                return asprintf(ret,
                                "to unblock: create queue \"%s\", or give queue \"%s\" an "
                                "existing parent",
                                q->parent_name,
                                queue);
        return asprintf(
            ret, "to unblock: label the pod with one of queue \"%s\"'s child queues", queue);
}

int xp_queues_unblock(struct xp_queues *qs,
                      const char *queue,
                      const struct xp_queue_amount *amounts,
                      size_t n,
                      char **ret)
{
        _cleanup_free_ char *reason = NULL;
        struct squeue *q = leaf(qs, queue, &reason);
        struct block k;
        int64_t v[QR];
        int r;

        *ret = NULL;
        if (!q)
                r = reason ? unusable_text(qs, queue, ret) : -1;
        else {
                vector_of(qs, amounts, n, v);
                k = find_block(qs, q, v);
                if (k.kind == BLOCK_NONE)
                        return 0;
                r = unblock_text(qs, q, &k, ret);
        }
        if (r < 0) {
                *ret = NULL;
                return -ENOMEM;
        }
        return 1;
}

int xp_queues_admit(struct xp_queues *qs,
                    const char *queue,
                    const struct xp_queue_amount *amounts,
                    size_t n,
                    char **ret_reason)
{
        _cleanup_free_ char *reason = NULL;
        int64_t v[QR];
        bool borrow = false;
        struct squeue *q;
        int r;

        q = leaf(qs, queue, &reason);
        if (!q) {
                if (!reason)
                        return -ENOMEM;
                *ret_reason = TAKE_PTR(reason);
                return XP_QUEUE_REFUSED;
        }
        vector_of(qs, amounts, n, v);
        r = check_up(qs, q, v, &borrow, &reason);
        if (r < 0)
                return r;
        if (r > 0) {
                *ret_reason = TAKE_PTR(reason);
                return XP_QUEUE_REFUSED;
        }
        return borrow ? XP_QUEUE_BORROW : XP_QUEUE_WITHIN;
}

char *xp_queues_blocking(struct xp_queues *qs,
                         const char *queue,
                         const struct xp_queue_amount *amounts,
                         size_t n)
{
        char *reason = NULL;

        if (xp_queues_admit(qs, queue, amounts, n, &reason) != XP_QUEUE_REFUSED)
                return NULL;
        return reason;
}

bool xp_queues_may_reclaim(struct xp_queues *qs,
                           const char *queue,
                           const struct xp_queue_amount *amounts,
                           size_t n)
{
        _cleanup_free_ char *reason = NULL;
        struct squeue *q = leaf(qs, queue, &reason);
        int64_t v[QR];
        bool any = false;

        if (!q)
                return false;
        vector_of(qs, amounts, n, v);
        for (struct squeue *p = q; p; p = p->parent)
                for (size_t r = 0; r < qs->n_res; r++) {
                        if (v[r] <= 0 || !qs->managed[r])
                                continue;
                        if (p->allocated[r] + v[r] > p->deserved[r])
                                return false;
                        any = true;
                }
        return any;
}

bool xp_queues_reclaimable(struct xp_queues *qs,
                           const char *victim_queue,
                           const struct xp_queue_amount *held,
                           size_t n_held,
                           const struct xp_queue_amount *wanted,
                           size_t n_wanted)
{
        struct squeue *q = victim_queue ? xp_map_get(&qs->by_name, victim_queue) : NULL;
        int64_t h[QR], w[QR];
        bool over = false;

        if (!q)
                return false;
        if (!qs->resolved)
                queues_resolve(qs);
        vector_of(qs, held, n_held, h);
        vector_of(qs, wanted, n_wanted, w);
        for (struct squeue *p = q; p; p = p->parent)
                if (!p->reclaimable)
                        return false;
        for (size_t r = 0; r < qs->n_res; r++) {
                if (w[r] <= 0 || h[r] <= 0 || !qs->managed[r])
                        continue;
                if (q->allocated[r] - h[r] < q->deserved[r])
                        return false; /* it would fall below its fair share */
                over = true;
        }
        return over;
}

int xp_queues_figures(const struct xp_queues *qs,
                      const char *queue,
                      struct xp_queue_figures **ret,
                      size_t *ret_n)
{
        struct squeue *q = queue ? xp_map_get(&qs->by_name, queue) : NULL;
        struct xp_queue_figures *f;
        size_t n = 0;

        if (!q)
                return -ENOENT;
        f = calloc(qs->n_res ? qs->n_res : 1, sizeof(*f));
        if (!f)
                return -ENOMEM;
        for (size_t r = 0; r < qs->n_res; r++) {
                if (!qs->managed[r])
                        continue; /* no queue speaks of it */
                f[n++] = (struct xp_queue_figures){
                    .resource = qs->res[r],
                    .allocated = q->allocated[r],
                    .guaranteed = q->guaranteed[r],
                    .borrowed = q->allocated[r] > q->guaranteed[r] && q->spec_has[r]
                                    ? q->allocated[r] - q->guaranteed[r]
                                    : 0,
                    .pending = q->pending[r],
                    .deserved = q->deserved[r],
                    .limit = q->limit[r],
                };
        }
        *ret = f;
        *ret_n = n;
        return 0;
}

double xp_queues_share(const struct xp_queues *qs, const char *queue)
{
        const struct squeue *q = queue ? xp_map_get(&qs->by_name, queue) : NULL;
        double share = 0;

        if (!q)
                return -1;
        for (size_t r = 0; r < qs->n_res; r++) {
                double cap = qs->capacity[r] > 0 ? (double)qs->capacity[r] : 1.0;
                double w = q->weights[r] > 0 ? q->weights[r] : q->weight;
                int64_t borrowed = q->allocated[r] - q->guaranteed[r];

                if (qs->managed[r] && borrowed > 0)
                        share = fmax(share, (double)borrowed / (cap * w));
        }
        return share;
}
