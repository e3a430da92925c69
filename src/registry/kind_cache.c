/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A kind's objects by namespace, kept while the store's mark for the kind stands (see struct
 * kind_cache): every pod create asks for its namespace's ResourceQuotas and LimitRanges, which
 * change seldom, so the answer is a lookup rather than a query.
 */
#include <errno.h>

#include "registry_internal.h"

/* Namespaces remembered at most: past it the cache starts again, so that many short-lived
 * namespaces do not grow it without bound. */
#define KIND_CACHE_NAMESPACES 4096

void kind_cache_init(struct kind_cache *cache, const char *kind)
{
        pthread_mutex_init(&cache->mutex, NULL);
        cache->kind = kind;
        cache->generation = 0;
        cache->by_namespace = NULL;
}

void kind_cache_done(struct kind_cache *cache)
{
        json_decref(cache->by_namespace);
        cache->by_namespace = NULL;
        pthread_mutex_destroy(&cache->mutex);
}

/* Under mutex: the list kept for namespace at generation (a new reference), or NULL. */
static json_t *kept(struct kind_cache *cache, uint64_t generation, const char *namespace)
{
        if (cache->generation != generation || !cache->by_namespace) {
                json_decref(cache->by_namespace);
                cache->by_namespace = NULL;
                cache->generation = generation;
                return NULL;
        }
        return json_incref(json_object_get(cache->by_namespace, namespace));
}

/* Under mutex: keeps items for namespace, unless the cache moved past generation meanwhile. */
static void
keep(struct kind_cache *cache, uint64_t generation, const char *namespace, json_t *items)
{
        if (cache->generation != generation)
                return;
        if (cache->by_namespace && json_object_size(cache->by_namespace) >= KIND_CACHE_NAMESPACES) {
                json_decref(cache->by_namespace);
                cache->by_namespace = NULL;
        }
        if (!cache->by_namespace)
                cache->by_namespace = json_object();
        if (cache->by_namespace)
                json_object_set(cache->by_namespace, namespace, items); /* no memory: not kept */
}

int kind_cache_list(struct kind_cache *cache,
                    struct xp_store *store,
                    const char *namespace,
                    json_t **ret_items,
                    struct xp_error *err)
{
        /* read before the list: a write committed after it moves the mark past what is kept */
        uint64_t generation = xp_store_kind_generation(store, cache->kind);
        uint64_t version;
        json_t *items;
        int r;

        pthread_mutex_lock(&cache->mutex);
        items = kept(cache, generation, namespace);
        pthread_mutex_unlock(&cache->mutex);
        if (items) {
                *ret_items = items;
                return 0;
        }
        r = xp_store_list(store, cache->kind, namespace, &items, &version, err);
        if (r < 0)
                return r;
        pthread_mutex_lock(&cache->mutex);
        keep(cache, generation, namespace, items);
        pthread_mutex_unlock(&cache->mutex);
        *ret_items = items;
        return 0;
}
