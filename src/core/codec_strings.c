/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A create's model is encoded into the stored tree moments after it was decoded from the body, on
 * the same thread, and most of its strings are copies of the body's string nodes (names, images,
 * a command's arguments, labels' values). Each became two new blocks in the stored tree, freed by
 * the store's leader when the ring let the write go, cold. The decode notes which node each copy
 * came from, and the encode takes a reference to that node instead.
 *
 * A per-thread table, keyed by the copy's address, open only between xp_codec_strings_begin() and
 * _end(). A hit is compared with the copy's text, so a model string changed or freed and made
 * again since the decode is never answered with a stale node. Sharing rests on the rule of
 * xpool/jsonliteral.h: nothing changes a JSON scalar in place. A body's strings are valid UTF-8
 * (jansson's constructors and xpool's reader check it), so the encode's replacement of invalid
 * UTF-8 (string_value() in codec.c) would leave them as they are.
 */

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "codec_strings.h"
#include "xpool/codec.h"

/* A pod's create notes 30-60 strings; a pod with more keeps the rest's copies out of the table. */
#define STRINGS_SLOTS 256 /* a power of two */
#define STRINGS_MAX   192 /* three quarters full at most: short probes */

struct noted_string {
        const char *copy;
        json_t *node;
};

struct string_table {
        bool open;
        unsigned n;
        uint8_t used[STRINGS_MAX]; /* the slots to empty at the end, not all of them */
        struct noted_string slots[STRINGS_SLOTS];
};

static _Thread_local struct string_table table;

static unsigned slot_of(const char *copy)
{
        /* malloc's addresses are 16-byte aligned: mix the bits above, Fibonacci hashing */
        uint64_t h = ((uint64_t)(uintptr_t)copy >> 4) * UINT64_C(0x9e3779b97f4a7c15);

        return (unsigned)(h >> 56); /* the top 8 bits: STRINGS_SLOTS is 256 */
}

_Static_assert(STRINGS_SLOTS == 256 && STRINGS_MAX <= UINT8_MAX + 1, "slot_of() and used[] fit");

void xp_codec_strings_begin(void)
{
        xp_codec_strings_end();
        table.open = true;
}

void xp_codec_strings_end(void)
{
        for (unsigned i = 0; i < table.n; i++) {
                struct noted_string *slot = &table.slots[table.used[i]];

                json_decref(slot->node);
                *slot = (struct noted_string){0};
        }
        table.n = 0;
        table.open = false;
}

void xp_codec_strings_note(const char *copy, const json_t *node)
{
        unsigned i;

        if (!table.open || table.n >= STRINGS_MAX)
                return;
        /* a copy's address is new (strdup()): were it noted before, that copy was freed */
        for (i = slot_of(copy); table.slots[i].copy && table.slots[i].copy != copy;
             i = (i + 1) % STRINGS_SLOTS)
                ;
        if (table.slots[i].copy) {
                json_decref(table.slots[i].node);
        } else {
                table.used[table.n++] = (uint8_t)i;
                table.slots[i].copy = copy;
        }
        /* the caller's body is changed no more (XP_DECODE_SHARE): a reference will do */
        table.slots[i].node = json_incref((json_t *)node);
}

json_t *xp_codec_strings_find(const char *s)
{
        if (!table.open)
                return NULL;
        for (unsigned i = slot_of(s); table.slots[i].copy; i = (i + 1) % STRINGS_SLOTS)
                if (table.slots[i].copy == s)
                        return strcmp(json_string_value(table.slots[i].node), s) == 0
                                   ? json_incref(table.slots[i].node)
                                   : NULL;
        return NULL;
}
