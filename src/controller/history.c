/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The history's rings (history.h): a series per (resource, kind, node) of allocation and per
 * (node, device, kind) of utilisation, each a ring of window/step slots indexed by the step's
 * number modulo the ring's size. A slot remembers which step it holds, so a slot left from an
 * older lap of the ring is simply not a point. Series are found through a hash index of their
 * names: a pool of 5,000 nodes has thousands, and every write the feed follows records each of
 * them (a linear search was most of the server's CPU under a burst of bindings).
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "history_internal.h"
#include "xpool/history.h"
#include "xpool/macro.h"

static void series_done(struct series *s)
{
        for (size_t i = 0; i < XP_ELEMENTSOF(s->name); i++)
                free(s->name[i]);
        free(s->key);
        free(s->slots);
}

static void set_done(struct series_set *set)
{
        for (size_t i = 0; i < set->n; i++)
                series_done(&set->items[i]);
        free(set->items);
        xp_map_done(&set->index);
}

/* The index entry of items[i]: its position + 1 (a value is never NULL). */
static void *position(size_t i)
{
        return (void *)(uintptr_t)(i + 1);
}

/* The three names (as series keep them: cut to XP_HISTORY_NAME_MAX) joined into key. */
static void series_key(const char *const name[3], char key[static 3 * (XP_HISTORY_NAME_MAX + 1)])
{
        snprintf(key,
                 3 * (XP_HISTORY_NAME_MAX + 1),
                 "%.*s\x1f%.*s\x1f%.*s",
                 XP_HISTORY_NAME_MAX,
                 name[0],
                 XP_HISTORY_NAME_MAX,
                 name[1],
                 XP_HISTORY_NAME_MAX,
                 name[2]);
}

int xp_history_new(int64_t step_s, int64_t window_s, struct xp_history **ret)
{
        struct xp_history *h;

        if (step_s <= 0)
                step_s = XP_HISTORY_STEP_S;
        if (window_s <= 0)
                window_s = XP_HISTORY_WINDOW_S;
        if (window_s < step_s || window_s / step_s > 100000)
                return -EINVAL;
        h = calloc(1, sizeof *h);
        if (!h)
                return -ENOMEM;
        pthread_mutex_init(&h->lock, NULL);
        h->step_s = step_s;
        h->n_slots = (size_t)(window_s / step_s);
        *ret = h;
        return 0;
}

void xp_history_free(struct xp_history *history)
{
        if (!history)
                return;
        set_done(&history->alloc);
        set_done(&history->usage);
        pthread_mutex_destroy(&history->lock);
        free(history);
}

/* Drops the series with no point in the window that ends at step (the index made again). */
static void set_expire(struct series_set *set, int64_t step, size_t n_slots)
{
        size_t kept = 0;

        for (size_t i = 0; i < set->n; i++) {
                if (set->items[i].last <= step - (int64_t)n_slots)
                        series_done(&set->items[i]);
                else
                        set->items[kept++] = set->items[i];
        }
        if (kept == set->n)
                return;
        set->n = kept;
        xp_map_done(&set->index);
        for (size_t i = 0; i < set->n; i++)
                if (xp_map_put(&set->index, set->items[i].key, position(i)) < 0)
                        set->n = i; /* out of memory: what is not indexed goes */
}

/* The series named (a, b, c), added empty when new; NULL with -ENOMEM or -ENOSPC in *r. */
static struct series *
set_find(struct series_set *set, const char *const name[3], size_t n_slots, int *r)
{
        char key[3 * (XP_HISTORY_NAME_MAX + 1)];
        struct series *s;
        uintptr_t at;

        series_key(name, key);
        at = (uintptr_t)xp_map_get(&set->index, key);
        if (at)
                return &set->items[at - 1];
        if (set->n >= XP_HISTORY_SERIES_MAX) {
                *r = -ENOSPC;
                return NULL;
        }
        if (set->n == set->cap) {
                size_t cap = set->cap ? set->cap * 2 : 16;
                struct series *items = realloc(set->items, cap * sizeof *items);

                if (!items)
                        goto oom;
                set->items = items;
                set->cap = cap;
        }
        s = &set->items[set->n];
        *s = (struct series){.last = -1};
        s->slots = malloc(n_slots * sizeof *s->slots);
        for (size_t i = 0; i < XP_ELEMENTSOF(s->name); i++)
                s->name[i] = strndup(name[i], XP_HISTORY_NAME_MAX);
        s->key = strdup(key);
        if (!s->slots || !s->name[0] || !s->name[1] || !s->name[2] || !s->key ||
            xp_map_put(&set->index, s->key, position(set->n)) < 0) {
                series_done(s);
                goto oom;
        }
        for (size_t i = 0; i < n_slots; i++)
                s->slots[i] = (struct slot){.step = -1};
        set->n++;
        return s;
oom:
        *r = -ENOMEM;
        return NULL;
}

static struct slot *series_slot(struct series *s, int64_t step, size_t n_slots)
{
        struct slot *slot = &s->slots[(size_t)step % n_slots];

        if (slot->step != step)
                *slot = (struct slot){.step = step};
        if (step > s->last)
                s->last = step;
        return slot;
}

int xp_history_record_alloc(struct xp_history *history,
                            int64_t now_s,
                            const struct xp_history_alloc *points,
                            size_t n)
{
        int64_t step = now_s / history->step_s;
        int r = 0;

        if (now_s < 0)
                return -EINVAL;
        pthread_mutex_lock(&history->lock);
        set_expire(&history->alloc, step, history->n_slots);
        for (size_t i = 0; i < n; i++) {
                const char *name[3] = {points[i].resource,
                                       points[i].kind ? points[i].kind : "",
                                       points[i].node ? points[i].node : ""};
                struct series *s;
                struct slot *slot;

                if (!name[0])
                        continue;
                s = set_find(&history->alloc, name, history->n_slots, &r);
                if (!s) {
                        if (r == -ENOMEM)
                                break;
                        continue;
                }
                slot = series_slot(s, step, history->n_slots);
                slot->a = points[i].allocated;
                slot->b = points[i].capacity;
        }
        pthread_mutex_unlock(&history->lock);
        return r;
}

int xp_history_record_usage(struct xp_history *history,
                            int64_t now_s,
                            const char *node,
                            const char *device,
                            const char *kind,
                            double percent)
{
        const char *name[3] = {node, device, kind ? kind : ""};
        int64_t step = now_s / history->step_s;
        struct series *s;
        struct slot *slot;
        int r = 0;

        if (!node || !node[0] || !device || !device[0] || now_s < 0 || !isfinite(percent) ||
            percent < 0 || percent > 100)
                return -EINVAL;
        pthread_mutex_lock(&history->lock);
        set_expire(&history->usage, step, history->n_slots);
        s = set_find(&history->usage, name, history->n_slots, &r);
        if (s) {
                slot = series_slot(s, step, history->n_slots);
                slot->a += percent;
                slot->n++;
        }
        pthread_mutex_unlock(&history->lock);
        return r;
}
