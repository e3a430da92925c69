/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Per-kind write marks: a reader that keeps what it read of a kind (the registry's
 * ResourceQuota and LimitRange caches) asks whether the kind was written since, without a query
 * and without the store's lock.
 */
#include <stdatomic.h>
#include <string.h>

#include "store_internal.h"

static _Atomic uint64_t *find(struct kind_generations *g, const char *kind)
{
        size_t n = atomic_load_explicit(&g->n, memory_order_acquire);

        for (size_t i = 0; i < n; i++)
                if (strcmp(g->slot[i].kind, kind) == 0)
                        return &g->slot[i].generation;
        return NULL;
}

void store_kind_generation_bump(struct xp_store *store, const char *kind, uint64_t version)
{
        struct kind_generations *g = &store->kind_generations;
        _Atomic uint64_t *counter = find(g, kind);
        size_t n = atomic_load_explicit(&g->n, memory_order_relaxed);

        if (!counter && n < KIND_GENERATION_SLOTS && strlen(kind) <= XP_STORE_KEY_MAX) {
                /* only the lock's holder appends: the name is in place before n shows it */
                strcpy(g->slot[n].kind, kind);
                counter = &g->slot[n].generation;
                atomic_store_explicit(&g->n, n + 1, memory_order_release);
        }
        /* The write's version, not a count: a kind's answer never repeats a value another kind's
         * (or the overflow's) could have given before the kind had its slot. release: a reader
         * that sees it reads from after the commit. */
        atomic_store_explicit(counter ? counter : &g->overflow, version, memory_order_release);
}

uint64_t xp_store_kind_generation(struct xp_store *store, const char *kind)
{
        struct kind_generations *g = &store->kind_generations;
        _Atomic uint64_t *counter = find(g, kind);

        return atomic_load_explicit(counter ? counter : &g->overflow, memory_order_acquire);
}
