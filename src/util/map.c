/* SPDX-License-Identifier: Apache-2.0 */
/* The string map and its hashes (include/util/xpool/map.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "xpool/map.h"

static const char tombstone[1];
#define TOMBSTONE tombstone

uint64_t xp_hash_add(uint64_t hash, const void *data, size_t len)
{
        const unsigned char *p = data;

        for (size_t i = 0; i < len; i++)
                hash = (hash ^ p[i]) * 0x100000001b3ull;
        return hash;
}

uint64_t xp_hash_string(const char *s)
{
        return xp_hash_add(XP_HASH_INIT, s, strlen(s));
}

uint64_t xp_hash_mix(uint64_t x)
{
        x += 0x9e3779b97f4a7c15ull;
        x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
        x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
        return x ^ (x >> 31);
}

void xp_map_done(struct xp_map *m)
{
        free(m->keys);
        free(m->values);
        free(m->hashes);
        *m = (struct xp_map){0};
}

/* FNV-1a's low bits hold little of a key's last characters: mixed, names such as node-1 ...
 * node-4999 do not fall into long runs of probes */
uint64_t xp_map_hash(const char *key)
{
        return xp_hash_mix(xp_hash_string(key));
}

static size_t find_slot(const struct xp_map *m, const char *key, uint64_t h, bool *ret_found)
{
        size_t mask = m->cap - 1, i = h & mask, first_free = SIZE_MAX;

        for (;; i = (i + 1) & mask) {
                const char *k = m->keys[i];
                if (!k) {
                        *ret_found = false;
                        return first_free != SIZE_MAX ? first_free : i;
                }
                if (k == TOMBSTONE) {
                        if (first_free == SIZE_MAX)
                                first_free = i;
                        continue;
                }
                /* the string only when the hash agrees: a probe past another key costs no miss */
                if (m->hashes[i] == h && strcmp(k, key) == 0) {
                        *ret_found = true;
                        return i;
                }
        }
}

void *xp_map_get_hashed(const struct xp_map *m, const char *key, uint64_t h)
{
        bool found;
        size_t i;

        if (m->cap == 0)
                return NULL;
        i = find_slot(m, key, h, &found);
        return found ? m->values[i] : NULL;
}

void *xp_map_get(const struct xp_map *m, const char *key)
{
        return xp_map_get_hashed(m, key, xp_map_hash(key));
}

void xp_map_prefetch(const struct xp_map *m, uint64_t h, bool deep, size_t value_bytes)
{
        size_t i;

        if (m->cap == 0)
                return;
        i = h & (m->cap - 1);
        if (!deep) {
                __builtin_prefetch(&m->keys[i]);
                __builtin_prefetch(&m->hashes[i]);
                __builtin_prefetch(&m->values[i]);
                return;
        }
        /* the slot's arrays were fetched earlier: now what they point to */
        if (m->keys[i] && m->hashes[i] == h && m->values[i]) {
                __builtin_prefetch(m->keys[i]);
                for (size_t off = 0; off < value_bytes; off += 64)
                        __builtin_prefetch((const char *)m->values[i] + off);
        }
}

static int grow(struct xp_map *m)
{
        size_t cap = m->cap ? m->cap * 2 : 16;
        struct xp_map new = {0};

        /* rehashing only to drop tombstones keeps the size */
        if (m->n * 4 < m->cap)
                cap = m->cap;
        new.keys = calloc(cap, sizeof(*new.keys));
        new.values = calloc(cap, sizeof(*new.values));
        new.hashes = calloc(cap, sizeof(*new.hashes));
        if (!new.keys || !new.values || !new.hashes) {
                free(new.keys);
                free(new.values);
                free(new.hashes);
                return -ENOMEM;
        }
        new.cap = cap;
        for (size_t i = 0; i < m->cap; i++) {
                bool found;
                size_t j;

                if (!m->keys[i] || m->keys[i] == TOMBSTONE)
                        continue;
                j = find_slot(&new, m->keys[i], m->hashes[i], &found);
                new.keys[j] = m->keys[i];
                new.values[j] = m->values[i];
                new.hashes[j] = m->hashes[i];
                new.n++;
        }
        new.used = new.n;
        free(m->keys);
        free(m->values);
        free(m->hashes);
        *m = new;
        return 0;
}

int xp_map_put(struct xp_map *m, const char *key, void *value)
{
        uint64_t h = xp_map_hash(key);
        bool found;
        size_t i;

        if ((m->used + 1) * 4 > m->cap * 3) {
                int r = grow(m);
                if (r < 0)
                        return r;
        }
        i = find_slot(m, key, h, &found);
        if (!found) {
                if (!m->keys[i])
                        m->used++;
                m->n++;
        }
        m->keys[i] = key;
        m->values[i] = value;
        m->hashes[i] = h;
        return 0;
}

void *xp_map_del(struct xp_map *m, const char *key)
{
        bool found;
        size_t i;
        void *v;

        if (m->cap == 0)
                return NULL;
        i = find_slot(m, key, xp_map_hash(key), &found);
        if (!found)
                return NULL;
        v = m->values[i];
        m->keys[i] = TOMBSTONE;
        m->values[i] = NULL;
        m->n--;
        return v;
}
