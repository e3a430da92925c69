/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * A string -> pointer hash map (open addressing, linear probing, tombstones), and the hashes it
 * and its users share. The scheduler core's snapshot, the controllers' views and work queues,
 * and the API's watches keep their indexes in it.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* FNV-1a: XP_HASH_INIT, then xp_hash_add() over each part. */
#define XP_HASH_INIT 0xcbf29ce484222325ull
uint64_t xp_hash_add(uint64_t hash, const void *data, size_t len);
/* xp_hash_add(XP_HASH_INIT, s, strlen(s)). */
uint64_t xp_hash_string(const char *s);
/* SplitMix64's finalizer: spreads the bits of x (for ties broken by a seed, reproducibly). */
uint64_t xp_hash_mix(uint64_t x);

/*
 * The map. Zero-initialized is empty. Keys are borrowed (they usually live in the values) and
 * must stay while they are in it; values are never NULL. To visit every entry, walk values[0..cap)
 * and skip the NULL ones.
 */
struct xp_map {
        const char **keys; /* NULL: empty; a tombstone after a removal */
        void **values;
        uint64_t *hashes; /* of each key (xp_map_hash()): a probe compares these before strings */
        size_t cap;       /* a power of two, or 0 */
        size_t n;
        size_t used; /* n plus tombstones */
};

/* Frees the map's arrays (not the keys or the values) and empties it. */
void xp_map_done(struct xp_map *m);
/* The value of key, or NULL. */
void *xp_map_get(const struct xp_map *m, const char *key);
/*
 * For many lookups in a row: each key's hash once (xp_map_hash()), its slot prefetched ahead
 * (deep false), then what the slot points to (deep true, once the slot is in cache: the key and
 * value_bytes of the value), then the lookup with the hash (xp_map_get_hashed()).
 */
uint64_t xp_map_hash(const char *key);
void xp_map_prefetch(const struct xp_map *m, uint64_t hash, bool deep, size_t value_bytes);
void *xp_map_get_hashed(const struct xp_map *m, const char *key, uint64_t hash);
/* Inserts or replaces. -ENOMEM. */
int xp_map_put(struct xp_map *m, const char *key, void *value);
/* Removes key; returns its value, or NULL when absent. */
void *xp_map_del(struct xp_map *m, const char *key);
