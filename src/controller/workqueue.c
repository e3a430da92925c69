/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The work queue (workqueue.h). One record per key that is queued, being worked on, waiting for
 * its time or carrying failures; a map finds it by key. Ready keys form a FIFO list; waiting keys
 * an unordered array scanned for the ones due, which stays short: only failed keys and those a
 * controller deferred wait.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "workqueue.h"
#include "xpool/map.h"

#define DEFAULT_BASE_MS 5
#define DEFAULT_MAX_MS  (1000 * 1000)

struct item {
        char *key;
        struct item *next; /* in the FIFO while queued */
        bool queued;       /* in the FIFO */
        bool processing;   /* handed out, not done */
        bool readd;        /* added while processing: queued again when done */
        int64_t due_ms;    /* waiting until then; -1: not waiting */
        size_t slot;       /* in waiting[] while waiting */
        unsigned failures;
};

struct xp_workqueue {
        struct xp_workqueue_options options;
        struct xp_map items;
        struct item *head, *tail;
        struct item **waiting;
        size_t n_waiting, cap_waiting;
};

int xp_workqueue_new(const struct xp_workqueue_options *options, struct xp_workqueue **ret)
{
        struct xp_workqueue *queue = calloc(1, sizeof *queue);

        if (!queue)
                return -ENOMEM;
        if (options)
                queue->options = *options;
        if (queue->options.base_delay_ms <= 0)
                queue->options.base_delay_ms = DEFAULT_BASE_MS;
        if (queue->options.max_delay_ms <= 0)
                queue->options.max_delay_ms = DEFAULT_MAX_MS;
        *ret = queue;
        return 0;
}

static void item_free(struct item *item)
{
        if (!item)
                return;
        free(item->key);
        free(item);
}

void xp_workqueue_free(struct xp_workqueue *queue)
{
        if (!queue)
                return;
        /* every record is in the map, whose deleted slots hold NULL */
        for (size_t i = 0; i < queue->items.cap; i++)
                item_free(queue->items.values[i]);
        xp_map_done(&queue->items);
        free(queue->waiting);
        free(queue);
}

static struct item *item_get(struct xp_workqueue *queue, const char *key, bool create)
{
        struct item *item = xp_map_get(&queue->items, key);

        if (item || !create)
                return item;
        item = calloc(1, sizeof *item);
        if (!item || !(item->key = strdup(key)) || xp_map_put(&queue->items, item->key, item) < 0) {
                item_free(item);
                return NULL;
        }
        item->due_ms = -1;
        return item;
}

/* Drops the record of a key nothing refers to any more. */
static void item_release(struct xp_workqueue *queue, struct item *item)
{
        if (item->queued || item->processing || item->readd || item->due_ms >= 0 ||
            item->failures > 0)
                return;
        (void)xp_map_del(&queue->items, item->key);
        item_free(item);
}

static void push(struct xp_workqueue *queue, struct item *item)
{
        item->next = NULL;
        item->queued = true;
        if (queue->tail)
                queue->tail->next = item;
        else
                queue->head = item;
        queue->tail = item;
}

static void enqueue(struct xp_workqueue *queue, struct item *item)
{
        if (item->queued || item->readd)
                return;
        if (item->processing)
                item->readd = true;
        else
                push(queue, item);
}

int xp_workqueue_add(struct xp_workqueue *queue, const char *key)
{
        struct item *item = item_get(queue, key, true);

        if (!item)
                return -ENOMEM;
        enqueue(queue, item);
        return 0;
}

static void unwait(struct xp_workqueue *queue, struct item *item)
{
        struct item *last = queue->waiting[--queue->n_waiting];

        queue->waiting[item->slot] = last;
        last->slot = item->slot;
        item->due_ms = -1;
}

int xp_workqueue_add_after(struct xp_workqueue *queue, const char *key, int64_t delay_ms)
{
        int64_t due = xp_clock_monotonic_ms(queue->options.clock) + delay_ms;
        struct item *item;

        if (delay_ms <= 0)
                return xp_workqueue_add(queue, key);
        item = item_get(queue, key, true);
        if (!item)
                return -ENOMEM;
        if (item->due_ms >= 0) {
                if (due < item->due_ms)
                        item->due_ms = due;
                return 0;
        }
        if (queue->n_waiting == queue->cap_waiting) {
                size_t cap = queue->cap_waiting ? queue->cap_waiting * 2 : 16;
                struct item **bigger = realloc(queue->waiting, cap * sizeof *bigger);

                if (!bigger) {
                        item_release(queue, item);
                        return -ENOMEM;
                }
                queue->waiting = bigger;
                queue->cap_waiting = cap;
        }
        item->due_ms = due;
        item->slot = queue->n_waiting;
        queue->waiting[queue->n_waiting++] = item;
        return 0;
}

/* base_delay_ms << failures, capped at max_delay_ms. */
static int64_t backoff_ms(const struct xp_workqueue *queue, unsigned failures)
{
        int64_t delay = queue->options.base_delay_ms;

        for (unsigned i = 0; i < failures && delay < queue->options.max_delay_ms; i++)
                delay *= 2;
        return delay < queue->options.max_delay_ms ? delay : queue->options.max_delay_ms;
}

int xp_workqueue_add_rate_limited(struct xp_workqueue *queue, const char *key)
{
        struct item *item = item_get(queue, key, true);
        int64_t delay;

        if (!item)
                return -ENOMEM;
        delay = backoff_ms(queue, item->failures);
        item->failures++;
        return xp_workqueue_add_after(queue, key, delay);
}

void xp_workqueue_forget(struct xp_workqueue *queue, const char *key)
{
        struct item *item = item_get(queue, key, false);

        if (!item)
                return;
        item->failures = 0;
        item_release(queue, item);
}

/* Queues the waiting keys whose time came. */
static void promote_due(struct xp_workqueue *queue)
{
        int64_t now = xp_clock_monotonic_ms(queue->options.clock);

        for (size_t i = 0; i < queue->n_waiting;) {
                struct item *item = queue->waiting[i];

                if (item->due_ms > now) {
                        i++;
                        continue;
                }
                unwait(queue, item); /* the last one takes slot i */
                enqueue(queue, item);
        }
}

int xp_workqueue_get(struct xp_workqueue *queue, const char **ret_key)
{
        struct item *item;

        promote_due(queue);
        item = queue->head;
        if (!item)
                return 0;
        queue->head = item->next;
        if (!queue->head)
                queue->tail = NULL;
        item->next = NULL;
        item->queued = false;
        item->processing = true;
        *ret_key = item->key;
        return 1;
}

void xp_workqueue_done(struct xp_workqueue *queue, const char *key)
{
        struct item *item = item_get(queue, key, false);

        if (!item || !item->processing)
                return;
        item->processing = false;
        if (item->readd) {
                item->readd = false;
                push(queue, item);
        }
        item_release(queue, item);
}

int64_t xp_workqueue_next_ms(struct xp_workqueue *queue)
{
        int64_t now, next = -1;

        if (queue->head)
                return 0;
        if (queue->n_waiting == 0)
                return -1;
        now = xp_clock_monotonic_ms(queue->options.clock);
        for (size_t i = 0; i < queue->n_waiting; i++) {
                int64_t left = queue->waiting[i]->due_ms - now;

                left = left < 0 ? 0 : left;
                if (next < 0 || left < next)
                        next = left;
        }
        return next;
}
