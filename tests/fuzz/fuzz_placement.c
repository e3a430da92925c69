/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzzes xp_placement_from_json() (the xpool.io/placement annotation comes through the API).
 * For every input that parses, checks that xp_placement_to_json() writes it, that the text
 * parses back to the same placement, and that writing that again gives the same text. For every
 * input that does not, checks that the error code and message are set and *ret is untouched.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "xpool/sched.h"
#include "xpool/strutil.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok)
{
        if (!ok)
                __builtin_trap();
}

static void check_same(const struct xp_placement *a, const struct xp_placement *b)
{
        check(xp_streq0(a->node, b->node));
        check(xp_streq0(a->cpus, b->cpus));
        check(a->numa_node == b->numa_node);
        check(a->devices.n == b->devices.n);
        for (size_t i = 0; i < a->devices.n; i++) {
                const struct xp_placement_device *x = &a->devices.items[i],
                                                 *y = &b->devices.items[i];
                check(xp_streq0(x->resource, y->resource));
                check(xp_streq0(x->id, y->id));
                check(x->index == y->index);
                check(x->milli == y->milli);
                check(x->milli >= 1 && x->milli <= 1000);
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct xp_placement pl = {.numa_node = -7}, back = {0};
        struct xp_error err = {0};
        char *text = malloc(size + 1), *json = NULL, *again = NULL;
        int r;

        if (!text)
                return 0;
        memcpy(text, data, size);
        text[size] = '\0';
        r = xp_placement_from_json(text, &pl, &err);
        if (r < 0) {
                check(r == -EINVAL || r == -ENOMEM);
                check(r != -EINVAL || (err.code == r && err.msg[0] != '\0'));
                check(!pl.node && !pl.cpus && !pl.devices.items && pl.numa_node == -7);
                free(text);
                return 0;
        }
        check(r == 0 && pl.node && pl.node[0] && pl.numa_node >= -1);
        check(xp_placement_to_json(&pl, &json) == 0);
        r = xp_placement_from_json(json, &back, &err);
        check(r == 0);
        check_same(&pl, &back);
        check(xp_placement_to_json(&back, &again) == 0);
        check(strcmp(json, again) == 0);
        free(again);
        free(json);
        xp_placement_done(&back);
        xp_placement_done(&pl);
        free(text);
        return 0;
}
