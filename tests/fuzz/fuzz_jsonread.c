/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzzes xp_json_read_object() (every create and update body the API server reads) against
 * jansson's json_loadb(JSON_REJECT_DUPLICATES), and the store's compact writer against
 * json_dumpb(). Checks: the reader answers 0 or -EBADMSG; what it reads, jansson reads too, to the
 * same tree with the same member order, and the depth it counts is the tree's (a create skips the
 * walk that bounds it); and the store writes that tree as jansson writes it.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "store/store_internal.h"
#include "xpool/codec.h"
#include "xpool/jsonread.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok)
{
        if (!ok)
                __builtin_trap();
}

/* The store's text of json is jansson's compact text, byte for byte. */
static void check_written(const json_t *json)
{
        size_t n = json_dumpb(json, NULL, 0, JSON_COMPACT);
        char *text = NULL, *expected = n ? malloc(n) : NULL;
        size_t len = 0;
        int r = store_json_compact(json, NULL, XP_STORE_BODY_MAX, &text, &len);

        check(r == 0 || r == -EBADMSG || r == -ENOMEM);
        if (r == 0 && expected && json_dumpb(json, expected, n, JSON_COMPACT) == n)
                check(len == n && memcmp(text, expected, n) == 0);
        free(text);
        free(expected);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        const char *text = (const char *)data;
        json_t *fast = NULL, *slow;
        unsigned depth = 0;
        int r;

        if (size > 65536)
                return 0;
        r = xp_json_read_object_depth(text, size, &fast, &depth);
        check(r == 0 || r == -EBADMSG || r == -ENOMEM);
        slow = json_loadb(text, size, JSON_REJECT_DUPLICATES, NULL);
        if (r == 0) {
                char *a, *b;

                check(slow != NULL && json_equal(fast, slow));
                a = json_dumps(fast, JSON_COMPACT);
                b = json_dumps(slow, JSON_COMPACT);
                check(a && b && strcmp(a, b) == 0);
                check(depth >= 1 && !xp_json_deeper_than(fast, depth) &&
                      (depth == 1 || xp_json_deeper_than(fast, depth - 1)));
                free(a);
                free(b);
        }
        if (slow && json_is_object(slow))
                check_written(slow);
        json_decref(fast);
        json_decref(slow);
        return 0;
}
