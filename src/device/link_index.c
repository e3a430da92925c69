/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "link_index.h"
#include "xpool/map.h"
#include "xpool/strutil.h"

/* FNV-1a over the two ids in a fixed order, so (a, b) and (b, a) hash alike. */
static uint64_t pair_hash(const char *a, const char *b)
{
        const char *first = strcmp(a, b) <= 0 ? a : b, *second = first == a ? b : a;
        uint64_t h = xp_hash_string(first);

        h = xp_hash_add(h, "\xff", 1); /* a separator no id contains */
        return xp_hash_add(h, second, strlen(second));
}

static bool same_pair(const struct xp_device_link *l, const char *a, const char *b)
{
        return (xp_streq0(l->a, a) && xp_streq0(l->b, b)) ||
               (xp_streq0(l->a, b) && xp_streq0(l->b, a));
}

static void insert(struct link_slot *slots, size_t capacity, uint64_t hash, size_t link)
{
        size_t i = (size_t)hash & (capacity - 1);

        while (slots[i].link)
                i = (i + 1) & (capacity - 1);
        slots[i] = (struct link_slot){hash, link + 1};
}

int xp_link_index_update(struct xp_link_index *index, const struct xp_node_inventory *inventory)
{
        size_t n = inventory->links.n;

        /* keep the load at most one half */
        if (n * 2 > index->capacity) {
                size_t capacity = index->capacity ? index->capacity : 64;
                struct link_slot *slots;

                while (n * 2 > capacity)
                        capacity *= 2;
                slots = calloc(capacity, sizeof(*slots));
                if (!slots)
                        return -ENOMEM;
                for (size_t i = 0; i < index->capacity; i++)
                        if (index->slots[i].link)
                                insert(slots,
                                       capacity,
                                       index->slots[i].hash,
                                       index->slots[i].link - 1);
                free(index->slots);
                index->slots = slots;
                index->capacity = capacity;
        }
        for (size_t i = index->indexed; i < n; i++) {
                const struct xp_device_link *l = &inventory->links.items[i];

                insert(index->slots,
                       index->capacity,
                       pair_hash(l->a ? l->a : "", l->b ? l->b : ""),
                       i);
        }
        index->indexed = n;
        return 0;
}

const struct xp_device_link *xp_link_index_find(const struct xp_link_index *index,
                                                const struct xp_node_inventory *inventory,
                                                const char *a,
                                                const char *b)
{
        uint64_t hash;
        size_t i;

        if (index->capacity == 0 || !a || !b)
                return NULL;
        hash = pair_hash(a, b);
        for (i = (size_t)hash & (index->capacity - 1); index->slots[i].link;
             i = (i + 1) & (index->capacity - 1)) {
                const struct xp_device_link *l = &inventory->links.items[index->slots[i].link - 1];

                if (index->slots[i].hash == hash && same_pair(l, a, b))
                        return l;
        }
        return NULL;
}

void xp_link_index_done(struct xp_link_index *index)
{
        free(index->slots);
        *index = (struct xp_link_index){0};
}
