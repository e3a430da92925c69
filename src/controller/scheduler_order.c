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

#include "scheduler_state.h"
#include "xpool/strutil.h"

#define FAIR_QUEUES_MAX 64 /* queues taking turns in one priority; beyond: FIFO */
#define NONE            SIZE_MAX

/* Priority first (higher first), then FIFO: creationTimestamp, then the version first seen. */
static int pending_compare(const void *a, const void *b)
{
        const struct pending *x = *(const struct pending *const *)a;
        const struct pending *y = *(const struct pending *const *)b;

        if (x->priority != y->priority)
                return x->priority > y->priority ? -1 : 1;
        if (x->created_us != y->created_us)
                return x->created_us < y->created_us ? -1 : 1;
        return x->first_version < y->first_version ? -1 : x->first_version > y->first_version;
}

/* The pods of one queue in a level, in FIFO order: a list through next[]. */
struct bucket {
        const char *queue; /* NULL: pods in no queue */
        size_t head, tail;
};

/*
 * Splits level[0..n) by queue into buckets (at most FAIR_QUEUES_MAX), linked through next.
 * Returns how many, or 0 when there are more queues than that.
 */
static size_t buckets_fill(struct pending **level, size_t n, size_t *next, struct bucket *b)
{
        size_t k = 0;

        for (size_t i = 0; i < n; i++) {
                const char *q = level[i]->queue;
                size_t j = 0;

                while (j < k && b[j].queue != q && !xp_streq0(b[j].queue, q))
                        j++;
                if (j == k) {
                        if (k == FAIR_QUEUES_MAX)
                                return 0;
                        b[k++] = (struct bucket){.queue = q, .head = i, .tail = NONE};
                } else {
                        next[b[j].tail] = i;
                }
                b[j].tail = i;
                next[i] = NONE;
        }
        return k;
}

/* The bucket whose queue has the lowest share now (ties: the oldest head pod), NONE: all empty. */
static size_t bucket_pick(struct xp_scheduler *s, const struct bucket *b, size_t k)
{
        size_t best = NONE;
        double best_share = 0;

        for (size_t j = 0; j < k; j++) {
                double share;

                if (b[j].head == NONE)
                        continue;
                share = b[j].queue ? s->hooks.share(s->hooks.userdata, b[j].queue) : 0;
                if (best == NONE || share < best_share ||
                    (share == best_share && b[j].head < b[best].head)) {
                        best = j;
                        best_share = share;
                }
        }
        return best;
}

/* Tries the pods of one priority, the queues taking turns by share. */
static void level_run(struct xp_scheduler *s, struct pending **level, size_t n)
{
        struct bucket b[FAIR_QUEUES_MAX];
        _cleanup_free_ size_t *next = NULL;
        size_t k = 0, j;

        if (n > 1 && s->hooks.share && (next = calloc(n, sizeof *next)))
                k = buckets_fill(level, n, next, b);
        if (k <= 1) {
                for (size_t i = 0; i < n && pass_open(s); i++)
                        pass_try(s, level[i]);
                return;
        }
        while (pass_open(s) && (j = bucket_pick(s, b, k)) != NONE) {
                size_t i = b[j].head;

                b[j].head = next[i];
                pass_try(s, level[i]);
        }
}

void order_run(struct xp_scheduler *s, struct pending **active, size_t n)
{
        if (n > 1) /* an empty array may be NULL, which qsort may not take */
                qsort(active, n, sizeof *active, pending_compare);
        for (size_t i = 0, end; i < n && pass_open(s); i = end) {
                for (end = i + 1; end < n && active[end]->priority == active[i]->priority; end++)
                        ;
                level_run(s, active + i, end - i);
        }
}
