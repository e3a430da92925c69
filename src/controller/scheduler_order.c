/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The order in which a pass tries the active pods: priority (higher first), then, among pods of
 * equal priority, their queues' dominant shares (lowest first, as Volcano's and Kueue's fair
 * sharing order queues), then FIFO (creationTimestamp, then the version first seen).
 *
 * Why the shares are asked again before each pod: they grow as the pass places a queue's pods,
 * so a queue far under its share goes first only until it has caught up, and the queues then
 * take turns. A pass without queues (or with one) keeps the plain sorted order.
 */
#include <stdlib.h>
#include <string.h>

#include "scheduler_state.h"
#include "xpool/strutil.h"

#define FAIR_QUEUES_MAX 64 /* queues taking turns in one priority; beyond: FIFO */
#define NONE            SIZE_MAX

/* Priority first (higher first), then FIFO: creationTimestamp, then the version first seen. */
int pending_compare(const void *a, const void *b)
{
        const struct pending *x = *(const struct pending *const *)a;
        const struct pending *y = *(const struct pending *const *)b;

        if (x->priority != y->priority)
                return x->priority > y->priority ? -1 : 1;
        if (x->created_us != y->created_us)
                return x->created_us < y->created_us ? -1 : 1;
        return x->first_version < y->first_version ? -1 : x->first_version > y->first_version;
}

/*
 * Why heaps and not a sort: a pass may only try a few hundred pods (pass_open() closes it once
 * INFLIGHT_MAX bindings are with the workers) of tens of thousands active, and sorting them all
 * each pass cost more than the bindings. A heap is built in O(n) and yields the next pod in
 * O(log n), so a pass pays for what it tries.
 */
static bool before(const struct pending *x, const struct pending *y)
{
        return pending_compare(&x, &y) < 0;
}

static void sift_down(struct pending **h, size_t n, size_t i)
{
        for (;;) {
                size_t first = i, l = 2 * i + 1, r = l + 1;
                struct pending *t;

                if (l < n && before(h[l], h[first]))
                        first = l;
                if (r < n && before(h[r], h[first]))
                        first = r;
                if (first == i)
                        return;
                t = h[i];
                h[i] = h[first];
                h[first] = t;
                i = first;
        }
}

static void heapify(struct pending **h, size_t n)
{
        for (size_t i = n / 2; i-- > 0;)
                sift_down(h, n, i);
}

/* The first pod, swapped to the end: the array stays a permutation of the pods (the pass
 * reads every one afterwards for those dropped). */
static struct pending *heap_pop(struct pending **h, size_t *n)
{
        struct pending *top = h[0];

        h[0] = h[--*n];
        h[*n] = top;
        sift_down(h, *n, 0);
        return top;
}

/* The pods of one queue: a heap, a segment of the active array. */
struct bucket {
        const char *queue; /* NULL: pods in no queue */
        struct pending **heap;
        size_t n;
};

/* The bucket of queue q among b[0..*k), added when new. NONE when there are more queues than
 * FAIR_QUEUES_MAX. */
static size_t bucket_of(struct bucket *b, size_t *k, const char *q)
{
        size_t j = 0;

        while (j < *k && b[j].queue != q && !xp_streq0(b[j].queue, q))
                j++;
        if (j < *k)
                return j;
        if (*k == FAIR_QUEUES_MAX)
                return NONE;
        b[j] = (struct bucket){.queue = q};
        return (*k)++;
}

/*
 * Splits active[0..n) by queue into heaps, one segment of active each (a counting sort through
 * scratch, n entries). Returns how many buckets, or 0 when there are more queues than
 * FAIR_QUEUES_MAX (then the pass is FIFO by priority alone).
 */
static size_t
buckets_fill(struct pending **active, struct pending **scratch, size_t n, struct bucket *b)
{
        size_t k = 0, start[FAIR_QUEUES_MAX];

        for (size_t i = 0; i < n; i++) {
                size_t j = bucket_of(b, &k, active[i]->queue);

                if (j == NONE)
                        return 0;
                b[j].n++;
        }
        for (size_t j = 0, at = 0; j < k; at += b[j].n, j++) {
                start[j] = at;
                b[j].heap = active + at;
        }
        for (size_t i = 0; i < n; i++) {
                size_t j = bucket_of(b, &k, active[i]->queue);
                scratch[start[j]++] = active[i];
        }
        memcpy(active, scratch, n * sizeof *active);
        for (size_t j = 0; j < k; j++)
                heapify(b[j].heap, b[j].n);
        return k;
}

/*
 * The bucket to take the next pod from: among those whose first pod has the highest priority,
 * the one whose queue has the lowest share now (ties: the older first pod). NONE: all empty.
 */
static size_t bucket_pick(struct xp_scheduler *s, const struct bucket *b, size_t k)
{
        size_t best = NONE;
        double best_share = 0;

        for (size_t j = 0; j < k; j++) {
                double share;

                if (b[j].n == 0)
                        continue;
                if (best != NONE && b[j].heap[0]->priority != b[best].heap[0]->priority) {
                        if (b[j].heap[0]->priority < b[best].heap[0]->priority)
                                continue;
                        best = NONE; /* a higher priority: the shares of the lower do not count */
                }
                share = b[j].queue ? s->hooks.share(s->hooks.userdata, b[j].queue) : 0;
                if (best == NONE || share < best_share ||
                    (share == best_share && before(b[j].heap[0], b[best].heap[0]))) {
                        best = j;
                        best_share = share;
                }
        }
        return best;
}

void order_run(struct xp_scheduler *s, struct pending **active, struct pending **scratch, size_t n)
{
        struct bucket b[FAIR_QUEUES_MAX];
        size_t k = 0, j;

        if (n == 0 || !pass_open(s))
                return;
        if (n > 1 && s->hooks.share)
                k = buckets_fill(active, scratch, n, b);
        if (k <= 1) {
                heapify(active, n);
                while (n > 0 && pass_open(s))
                        pass_try(s, heap_pop(active, &n));
                return;
        }
        while (pass_open(s) && (j = bucket_pick(s, b, k)) != NONE)
                pass_try(s, heap_pop(b[j].heap, &b[j].n));
}
