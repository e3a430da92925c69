/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "xpool/array.h"
#include "xpool/strmap.h"

#define ENTRY_SIZE sizeof(struct xp_strmap_entry)
#define KEY_OFFSET offsetof(struct xp_strmap_entry, key)

void xp_strmap_done(struct xp_strmap *map)
{
        for (size_t i = 0; i < map->n; i++) {
                free(map->items[i].key);
                free(map->items[i].value);
        }
        free(map->items);
        map->items = NULL;
        map->n = 0;
}

const char *xp_strmap_get(const struct xp_strmap *map, const char *key)
{
        bool found;
        size_t i = xp_sorted_find(map->items, map->n, ENTRY_SIZE, KEY_OFFSET, key, &found);

        return found ? map->items[i].value : NULL;
}

int xp_strmap_set(struct xp_strmap *map, const char *key, const char *value)
{
        struct xp_strmap_entry *slot;
        char *value_copy = strdup(value);
        char *key_copy;
        bool found;
        size_t i;

        if (!value_copy)
                return -ENOMEM;
        i = xp_sorted_find(map->items, map->n, ENTRY_SIZE, KEY_OFFSET, key, &found);
        if (found) {
                free(map->items[i].value);
                map->items[i].value = value_copy;
                return 0;
        }
        key_copy = strdup(key);
        slot = key_copy ? xp_array_insert((void **)&map->items, &map->n, ENTRY_SIZE, i) : NULL;
        if (!slot) {
                free(key_copy);
                free(value_copy);
                return -ENOMEM;
        }
        slot->key = key_copy;
        slot->value = value_copy;
        return 0;
}

int xp_strmap_remove(struct xp_strmap *map, const char *key)
{
        bool found;
        size_t i = xp_sorted_find(map->items, map->n, ENTRY_SIZE, KEY_OFFSET, key, &found);

        if (!found)
                return 0;
        free(map->items[i].key);
        free(map->items[i].value);
        xp_array_remove(map->items, &map->n, ENTRY_SIZE, i);
        return 1;
}

int xp_strmap_copy(const struct xp_strmap *src, struct xp_strmap *ret)
{
        struct xp_strmap copy = {0};

        if (src->n == 0)
                return 0;
        copy.items = calloc(src->n, ENTRY_SIZE);
        if (!copy.items)
                return -ENOMEM;
        for (size_t i = 0; i < src->n; i++) {
                copy.items[i].key = strdup(src->items[i].key);
                copy.items[i].value = strdup(src->items[i].value);
                copy.n = i + 1;
                if (!copy.items[i].key || !copy.items[i].value) {
                        xp_strmap_done(&copy);
                        return -ENOMEM;
                }
        }
        *ret = copy;
        return 0;
}
