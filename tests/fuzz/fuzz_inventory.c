/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzzes the inventory annotation's reader (any node writes its own Node's annotation, and the
 * extender reads them all): an input that reads gives an inventory that writes back into a text
 * that reads to the same devices; one that does not leaves nothing and says why.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "xpool/kubeinventory.h"
#include "xpool/strutil.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok)
{
        if (!ok)
                __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct xp_node_inventory *inv = NULL, *back = NULL;
        struct xp_kube_allocation alloc = {0}, again = {0};
        struct xp_error err = {0};
        char *text = NULL;
        int r;

        r = xp_kube_inventory_decode((const char *)data, size, &inv, &alloc, &err);
        if (r < 0) {
                check(err.msg[0] != '\0' && !inv && alloc.uses.n == 0);
                return 0;
        }
        /* without a bound: a fuzzed inventory may be larger than a real one */
        r = xp_kube_inventory_encode(inv, &alloc, SIZE_MAX, &text, &err);
        check(r == 0);
        r = xp_kube_inventory_decode(text, strlen(text), &back, &again, &err);
        check(r == 0);
        check(back->devices.n == inv->devices.n && again.uses.n <= alloc.uses.n);
        for (size_t i = 0; i < inv->devices.n; i++) {
                check(xp_streq0(inv->devices.items[i].id, back->devices.items[i].id));
                check(xp_streq0(inv->devices.items[i].model, back->devices.items[i].model));
                check(inv->devices.items[i].index == back->devices.items[i].index);
        }
        free(text);
        xp_kube_allocation_done(&alloc);
        xp_kube_allocation_done(&again);
        xp_node_inventory_free(inv);
        xp_node_inventory_free(back);
        return 0;
}
