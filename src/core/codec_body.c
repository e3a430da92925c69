/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A create's model is encoded into the stored tree moments after it was decoded from the body, on
 * the same thread, and much of it reads as the body did: strings (names, images, arguments), lists
 * of strings (a command), maps of strings (labels, a node selector) and resource lists (limits,
 * requests). Each of their nodes was made again for the stored tree, and freed by the store's
 * leader when the ring let the write go, cold. The decode notes which body node each came from,
 * and the encode takes a reference to that node instead, when it reads as the encode would write.
 *
 * A per-thread table, keyed by the model part's address (a string's copy, a list's or map's
 * items), open only between xp_codec_body_begin() and _end(). The encode compares a hit with the
 * model (codec.c), so a part changed, or freed and made again, since the decode is never answered
 * with a stale node. Sharing rests on the rule of xpool/jsonliteral.h: nothing changes a JSON
 * tree of a body or a stored object in place. A body's strings are valid UTF-8 (jansson's
 * constructors and xpool's reader check it), so the encode's replacement of invalid UTF-8
 * (string_value() in codec.c) would leave them as they are.
 */

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "codec_body.h"
#include "xpool/codec.h"

/* A pod's create notes 30-60 parts; a pod with more keeps the rest out of the table. */
#define PARTS_SLOTS 256 /* a power of two */
#define PARTS_MAX   192 /* three quarters full at most: short probes */

struct noted_part {
        const void *key;
        json_t *node;
};

struct part_table {
        bool open;
        unsigned n;
        uint8_t used[PARTS_MAX]; /* the slots to empty at the end, not all of them */
        struct noted_part slots[PARTS_SLOTS];
};

static _Thread_local struct part_table table;

static unsigned slot_of(const void *key)
{
        /* malloc's addresses are 16-byte aligned: mix the bits above, Fibonacci hashing */
        uint64_t h = ((uint64_t)(uintptr_t)key >> 4) * UINT64_C(0x9e3779b97f4a7c15);

        return (unsigned)(h >> 56); /* the top 8 bits: PARTS_SLOTS is 256 */
}

_Static_assert(PARTS_SLOTS == 256 && PARTS_MAX <= UINT8_MAX + 1, "slot_of() and used[] fit");

void xp_codec_body_begin(void)
{
        xp_codec_body_end();
        table.open = true;
}

void xp_codec_body_end(void)
{
        for (unsigned i = 0; i < table.n; i++) {
                struct noted_part *slot = &table.slots[table.used[i]];

                json_decref(slot->node);
                *slot = (struct noted_part){0};
        }
        table.n = 0;
        table.open = false;
}

void xp_codec_body_note(const void *key, const json_t *node)
{
        unsigned i;

        if (!table.open || !key || table.n >= PARTS_MAX)
                return;
        /* a key's address is new (malloc()): were it noted before, that part was freed */
        for (i = slot_of(key); table.slots[i].key && table.slots[i].key != key;
             i = (i + 1) % PARTS_SLOTS)
                ;
        if (table.slots[i].key) {
                json_decref(table.slots[i].node);
        } else {
                table.used[table.n++] = (uint8_t)i;
                table.slots[i].key = key;
        }
        /* the caller's body is changed no more (XP_DECODE_SHARE): a reference will do */
        table.slots[i].node = json_incref((json_t *)node);
}

static json_t *noted(const void *key)
{
        if (!table.open || !key)
                return NULL;
        for (unsigned i = slot_of(key); table.slots[i].key; i = (i + 1) % PARTS_SLOTS)
                if (table.slots[i].key == key)
                        return table.slots[i].node;
        return NULL;
}

json_t *xp_codec_body_string(const char *s)
{
        json_t *node = noted(s);

        return json_is_string(node) && strcmp(json_string_value(node), s) == 0 ? json_incref(node)
                                                                               : NULL;
}

json_t *xp_codec_body_string_list(const struct xp_list_raw *list)
{
        json_t *node = noted(list->items);
        char **items = list->items;

        if (!json_is_array(node) || json_array_size(node) != list->n)
                return NULL;
        for (size_t i = 0; i < list->n; i++) {
                json_t *item = json_array_get(node, i);

                /* the encode writes a NULL item as "" */
                if (!json_is_string(item) ||
                    strcmp(json_string_value(item), items[i] ? items[i] : "") != 0)
                        return NULL;
        }
        return json_incref(node);
}

/* The object noted for key when it has n members (a null member of a body is in no model). */
static json_t *noted_object(const void *key, size_t n)
{
        json_t *node = noted(key);

        return json_is_object(node) && json_object_size(node) == n ? node : NULL;
}

/* Whether the member at iter is key with the string text. */
static bool member_reads(void *iter, const char *key, const char *text)
{
        json_t *value = json_object_iter_value(iter);

        return strcmp(json_object_iter_key(iter), key) == 0 && json_is_string(value) &&
               strcmp(json_string_value(value), text) == 0;
}

json_t *xp_codec_body_string_map(const struct xp_strmap *map)
{
        json_t *node = noted_object(map->items, map->n);
        void *iter = json_object_iter(node);

        for (size_t i = 0; node && i < map->n; i++, iter = json_object_iter_next(node, iter))
                if (!member_reads(iter, map->items[i].key, map->items[i].value))
                        return NULL;
        return json_incref(node);
}

json_t *xp_codec_body_resources(const struct xp_resource_list *list)
{
        json_t *node = noted_object(list->items, list->n);
        void *iter = json_object_iter(node);
        char text[XP_QUANTITY_STRING_MAX];

        /* "4" stays "4", but "1000m" is written "1" and 4 (a number) "4": made anew */
        for (size_t i = 0; node && i < list->n; i++, iter = json_object_iter_next(node, iter))
                if (!member_reads(iter,
                                  list->items[i].name,
                                  xp_quantity_format(&list->items[i].quantity, text)))
                        return NULL;
        return json_incref(node);
}
