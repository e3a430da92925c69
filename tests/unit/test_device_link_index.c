/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "device/link_index.h"

static void
append_link(struct xp_node_inventory *inv, const char *a, const char *b, int64_t nvlinks)
{
        /* grow by doubling (the capacity is the next power of two): the list holds n^2/2 links */
        if ((inv->links.n & (inv->links.n - 1)) == 0) {
                struct xp_device_link *grown = realloc(
                    inv->links.items, (inv->links.n ? inv->links.n * 2 : 1) * sizeof(*grown));

                assert_non_null(grown);
                inv->links.items = grown;
        }
        inv->links.items[inv->links.n++] = (struct xp_device_link){
            .a = strdup(a), .b = strdup(b), .level = XP_LINK_NVLINK, .nvlinks = nvlinks};
}

/* Every pair of 200 devices, looked up both ways, while links keep being appended. */
static void finds_every_pair_in_either_order(void **state)
{
        struct xp_node_inventory inv = {0};
        struct xp_link_index index = {0};
        char a[32], b[32];
        const size_t n = 200;

        (void)state;
        for (size_t i = 0; i < n; i++)
                for (size_t j = i + 1; j < n; j++) {
                        snprintf(a, sizeof(a), "GPU-%zu", i);
                        snprintf(b, sizeof(b), "GPU-%zu", j);
                        append_link(&inv, a, b, (int64_t)(i * n + j));
                        if (j == i + 1) /* update part-way: only the new links get indexed */
                                assert_int_equal(xp_link_index_update(&index, &inv), 0);
                }
        assert_int_equal(xp_link_index_update(&index, &inv), 0);
        assert_int_equal(index.indexed, inv.links.n);
        for (size_t i = 0; i < n; i++)
                for (size_t j = i + 1; j < n; j++) {
                        const struct xp_device_link *l;

                        snprintf(a, sizeof(a), "GPU-%zu", i);
                        snprintf(b, sizeof(b), "GPU-%zu", j);
                        l = xp_link_index_find(&index, &inv, b, a);
                        assert_non_null(l);
                        assert_int_equal(l->nvlinks, (int64_t)(i * n + j));
                        assert_ptr_equal(xp_link_index_find(&index, &inv, a, b), l);
                }
        assert_null(xp_link_index_find(&index, &inv, "GPU-1", "GPU-1"));
        assert_null(xp_link_index_find(&index, &inv, "GPU-1", "GPU-999"));
        assert_null(xp_link_index_find(&index, &inv, NULL, "GPU-1"));
        xp_link_index_done(&index);
        assert_int_equal(index.capacity, 0);
        assert_null(
            xp_link_index_find(&index, &inv, "GPU-0", "GPU-1")); /* an empty index finds nothing */
        for (size_t i = 0; i < inv.links.n; i++) {
                free(inv.links.items[i].a);
                free(inv.links.items[i].b);
        }
        free(inv.links.items);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(finds_every_pair_in_either_order),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
