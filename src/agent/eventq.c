/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The agent's Event queue (eventq.h): one list in recording order, out Events included, so a
 * key's order is the list's. Short (a few hundred at most): take scans it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "eventq.h"

struct xp_eventq {
        size_t max, n;
        struct xp_eventq_item *head, *tail;
};

void xp_eventq_item_free(struct xp_eventq_item *item)
{
        if (!item)
                return;
        free(item->key);
        free(item->namespace);
        free(item->name);
        json_decref(item->body);
        free(item);
}

int xp_eventq_new(size_t max, struct xp_eventq **ret)
{
        struct xp_eventq *q;

        if (max == 0)
                return -EINVAL;
        q = calloc(1, sizeof(*q));
        if (!q)
                return -ENOMEM;
        q->max = max;
        *ret = q;
        return 0;
}

void xp_eventq_free(struct xp_eventq *q)
{
        if (!q)
                return;
        while (q->head) {
                struct xp_eventq_item *item = q->head;

                q->head = item->next;
                xp_eventq_item_free(item);
        }
        free(q);
}

int xp_eventq_put(struct xp_eventq *q, struct xp_eventq_item *item)
{
        if (q->n >= q->max)
                return -ENOBUFS;
        item->out = false;
        item->next = NULL;
        if (q->tail)
                q->tail->next = item;
        else
                q->head = item;
        q->tail = item;
        q->n++;
        return 0;
}

/* Whether a write of item's key is before it in the list (out, or waiting its turn). */
static bool key_busy(const struct xp_eventq *q, const struct xp_eventq_item *item)
{
        for (const struct xp_eventq_item *i = q->head; i != item; i = i->next)
                if (strcmp(i->key, item->key) == 0)
                        return true;
        return false;
}

struct xp_eventq_item *xp_eventq_take(struct xp_eventq *q)
{
        for (struct xp_eventq_item *item = q->head; item; item = item->next)
                if (!item->out && !key_busy(q, item)) {
                        item->out = true;
                        return item;
                }
        return NULL;
}

void xp_eventq_done(struct xp_eventq *q, struct xp_eventq_item *item)
{
        struct xp_eventq_item *prev = NULL;

        for (struct xp_eventq_item *i = q->head; i && i != item; i = i->next)
                prev = i;
        if (prev)
                prev->next = item->next;
        else if (q->head == item)
                q->head = item->next;
        else
                return; /* not this queue's */
        if (q->tail == item)
                q->tail = prev;
        q->n--;
        xp_eventq_item_free(item);
}

size_t xp_eventq_size(const struct xp_eventq *q)
{
        return q->n;
}
