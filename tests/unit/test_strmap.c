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

#include "xpool/array.h"
#include "xpool/macro.h"
#include "xpool/strmap.h"

#define N_KEYS 200

static void assert_sorted(const struct xp_strmap *map)
{
        for (size_t i = 1; i < map->n; i++)
                if (strcmp(map->items[i - 1].key, map->items[i].key) >= 0)
                        fail_msg("keys out of order at %zu: \"%s\" then \"%s\"",
                                 i,
                                 map->items[i - 1].key,
                                 map->items[i].key);
}

static void set_get_replace(void **state)
{
        struct xp_strmap map = {0};

        (void)state;
        assert_null(xp_strmap_get(&map, "app"));
        assert_int_equal(xp_strmap_set(&map, "app", "web"), 0);
        assert_int_equal(xp_strmap_set(&map, "tier", "frontend"), 0);
        assert_int_equal(xp_strmap_set(&map, "kubernetes.io/arch", "amd64"), 0);
        assert_int_equal(map.n, 3);
        assert_string_equal(xp_strmap_get(&map, "app"), "web");
        assert_string_equal(xp_strmap_get(&map, "tier"), "frontend");
        assert_string_equal(xp_strmap_get(&map, "kubernetes.io/arch"), "amd64");
        assert_null(xp_strmap_get(&map, "App"));
        assert_null(xp_strmap_get(&map, "ap"));
        assert_null(xp_strmap_get(&map, "apps"));
        assert_null(xp_strmap_get(&map, ""));

        /* replacing keeps one entry per key */
        assert_int_equal(xp_strmap_set(&map, "app", "api"), 0);
        assert_int_equal(map.n, 3);
        assert_string_equal(xp_strmap_get(&map, "app"), "api");

        /* empty keys and values are ordinary strings */
        assert_int_equal(xp_strmap_set(&map, "", ""), 0);
        assert_int_equal(map.n, 4);
        assert_string_equal(xp_strmap_get(&map, ""), "");
        assert_string_equal(map.items[0].key, "");
        assert_sorted(&map);

        xp_strmap_done(&map);
        assert_null(map.items);
        assert_int_equal(map.n, 0);
        xp_strmap_done(&map);
}

static void set_copies_key_and_value(void **state)
{
        struct xp_strmap map = {0};
        char key[] = "zone", value[] = "eu-west-1a";

        (void)state;
        assert_int_equal(xp_strmap_set(&map, key, value), 0);
        key[0] = 'Z';
        value[0] = 'X';
        assert_string_equal(xp_strmap_get(&map, "zone"), "eu-west-1a");
        assert_true(map.items[0].key != key);
        assert_true(map.items[0].value != value);

        /* a value may come from the map itself */
        assert_int_equal(xp_strmap_set(&map, "zone", xp_strmap_get(&map, "zone")), 0);
        assert_string_equal(xp_strmap_get(&map, "zone"), "eu-west-1a");
        xp_strmap_done(&map);
}

static void remove_present_and_absent(void **state)
{
        struct xp_strmap map = {0};

        (void)state;
        assert_int_equal(xp_strmap_remove(&map, "a"), 0); /* empty map */
        assert_int_equal(xp_strmap_set(&map, "a", "1"), 0);
        assert_int_equal(xp_strmap_set(&map, "b", "2"), 0);
        assert_int_equal(xp_strmap_set(&map, "c", "3"), 0);

        assert_int_equal(xp_strmap_remove(&map, "bb"), 0);
        assert_int_equal(map.n, 3);

        assert_int_equal(xp_strmap_remove(&map, "b"), 1);
        assert_int_equal(map.n, 2);
        assert_null(xp_strmap_get(&map, "b"));
        assert_string_equal(xp_strmap_get(&map, "a"), "1");
        assert_string_equal(xp_strmap_get(&map, "c"), "3");
        assert_int_equal(xp_strmap_remove(&map, "b"), 0);

        /* first and last */
        assert_int_equal(xp_strmap_remove(&map, "c"), 1);
        assert_int_equal(xp_strmap_remove(&map, "a"), 1);
        assert_int_equal(map.n, 0);
        assert_null(xp_strmap_get(&map, "a"));

        /* usable again after emptying */
        assert_int_equal(xp_strmap_set(&map, "d", "4"), 0);
        assert_string_equal(xp_strmap_get(&map, "d"), "4");
        xp_strmap_done(&map);
}

static void copy_is_deep(void **state)
{
        struct xp_strmap map = {0}, copy = {0}, empty = {0};

        (void)state;
        assert_int_equal(xp_strmap_set(&map, "app", "web"), 0);
        assert_int_equal(xp_strmap_set(&map, "env", "prod"), 0);
        assert_int_equal(xp_strmap_copy(&map, &copy), 0);
        assert_int_equal(copy.n, 2);
        for (size_t i = 0; i < copy.n; i++) {
                assert_string_equal(copy.items[i].key, map.items[i].key);
                assert_string_equal(copy.items[i].value, map.items[i].value);
                assert_true(copy.items[i].key != map.items[i].key);
                assert_true(copy.items[i].value != map.items[i].value);
        }

        assert_int_equal(xp_strmap_set(&map, "app", "api"), 0);
        assert_int_equal(xp_strmap_remove(&map, "env"), 1);
        xp_strmap_done(&map);
        assert_string_equal(xp_strmap_get(&copy, "app"), "web");
        assert_string_equal(xp_strmap_get(&copy, "env"), "prod");
        xp_strmap_done(&copy);

        assert_int_equal(xp_strmap_copy(&empty, &copy), 0);
        assert_int_equal(copy.n, 0);
        assert_null(copy.items);
}

/* xorshift, so the shuffle is the same on every run */
static uint32_t next_random(uint32_t *s)
{
        *s ^= *s << 13;
        *s ^= *s >> 17;
        *s ^= *s << 5;
        return *s;
}

static void sorted_after_random_inserts(void **state)
{
        struct xp_strmap map = {0};
        char keys[N_KEYS][32];
        size_t order[N_KEYS];
        uint32_t seed = 2463534242u;

        (void)state;
        for (size_t i = 0; i < N_KEYS; i++) {
                /* varied lengths and shared prefixes: "k7", "k70", "k7-x", "node-7.example" */
                switch (i % 4) {
                case 0:
                        snprintf(keys[i], sizeof(keys[i]), "k%zu", i);
                        break;
                case 1:
                        snprintf(keys[i], sizeof(keys[i]), "k%zu-x", i / 10);
                        break;
                case 2:
                        snprintf(keys[i], sizeof(keys[i]), "node-%zu.example", i);
                        break;
                default:
                        snprintf(keys[i], sizeof(keys[i]), "Z%03zu", i);
                        break;
                }
                order[i] = i;
        }
        for (size_t i = N_KEYS - 1; i > 0; i--) {
                size_t j = next_random(&seed) % (i + 1);
                size_t t = order[i];

                order[i] = order[j];
                order[j] = t;
        }

        for (size_t i = 0; i < N_KEYS; i++) {
                assert_int_equal(xp_strmap_set(&map, keys[order[i]], keys[order[i]]), 0);
                assert_sorted(&map);
        }
        assert_true(map.n > N_KEYS / 2);
        assert_true(map.n <= N_KEYS);
        assert_sorted(&map);
        for (size_t i = 0; i < N_KEYS; i++)
                assert_string_equal(xp_strmap_get(&map, keys[i]), keys[i]);

        /* remove every other key in shuffled order; the rest stays sorted and findable */
        for (size_t i = 0; i < N_KEYS; i += 2)
                xp_strmap_remove(&map, keys[order[i]]);
        assert_sorted(&map);
        for (size_t i = 0; i < N_KEYS; i++) {
                bool removed = false;

                for (size_t j = 0; j < N_KEYS; j += 2)
                        if (strcmp(keys[order[j]], keys[i]) == 0)
                                removed = true;
                if (removed)
                        assert_null(xp_strmap_get(&map, keys[i]));
                else
                        assert_string_equal(xp_strmap_get(&map, keys[i]), keys[i]);
        }
        xp_strmap_done(&map);
}

static void distinct_keys_random_inserts(void **state)
{
        struct xp_strmap map = {0};
        uint32_t seed = 88172645u;
        char key[16];

        (void)state;
        for (size_t i = 0; i < N_KEYS; i++) {
                snprintf(key, sizeof(key), "key-%08x", next_random(&seed));
                assert_int_equal(xp_strmap_set(&map, key, "v"), 0);
        }
        assert_int_equal(map.n, N_KEYS); /* 200 distinct 32-bit values from xorshift */
        assert_sorted(&map);
        xp_strmap_done(&map);
}

/* ---- the array helpers underneath ----------------------------------------------------------- */

struct entry {
        int value;
        char *key;
};

static void sorted_find_positions(void **state)
{
        struct entry items[] = {{1, "b"}, {2, "d"}, {3, "f"}};
        const size_t off = offsetof(struct entry, key);
        bool found = true;

        (void)state;
        assert_int_equal(xp_sorted_find(items, 0, sizeof(items[0]), off, "a", &found), 0);
        assert_false(found);
        assert_int_equal(xp_sorted_find(items, 3, sizeof(items[0]), off, "a", &found), 0);
        assert_false(found);
        assert_int_equal(xp_sorted_find(items, 3, sizeof(items[0]), off, "b", &found), 0);
        assert_true(found);
        assert_int_equal(xp_sorted_find(items, 3, sizeof(items[0]), off, "c", &found), 1);
        assert_false(found);
        assert_int_equal(xp_sorted_find(items, 3, sizeof(items[0]), off, "f", &found), 2);
        assert_true(found);
        assert_int_equal(xp_sorted_find(items, 3, sizeof(items[0]), off, "g", &found), 3);
        assert_false(found);
}

static void array_insert_and_remove(void **state)
{
        struct entry *items = NULL;
        struct entry *slot;
        size_t n = 0;

        (void)state;
        slot = xp_array_insert((void **)&items, &n, sizeof(*items), 0);
        assert_non_null(slot);
        assert_int_equal(n, 1);
        assert_int_equal(slot->value, 0); /* zeroed */
        assert_null(slot->key);
        slot->value = 3;

        slot = xp_array_insert((void **)&items, &n, sizeof(*items), 0);
        assert_non_null(slot);
        slot->value = 1;
        slot = xp_array_insert((void **)&items, &n, sizeof(*items), 1);
        assert_non_null(slot);
        slot->value = 2;
        slot = xp_array_insert((void **)&items, &n, sizeof(*items), 3);
        assert_non_null(slot);
        slot->value = 4;
        assert_int_equal(n, 4);
        for (size_t i = 0; i < n; i++)
                assert_int_equal(items[i].value, (int)i + 1);

        xp_array_remove(items, &n, sizeof(*items), 1);
        assert_int_equal(n, 3);
        assert_int_equal(items[0].value, 1);
        assert_int_equal(items[1].value, 3);
        assert_int_equal(items[2].value, 4);
        xp_array_remove(items, &n, sizeof(*items), 2);
        xp_array_remove(items, &n, sizeof(*items), 0);
        assert_int_equal(n, 1);
        assert_int_equal(items[0].value, 3);
        free(items);
}

static void first_duplicate_in_document_order(void **state)
{
        const char *none[] = {"a", "b", "c"};
        const char *later[] = {"x", "y", "z", "y", "x"}; /* x repeats at 4, y at 3: 3 comes first */
        const char *with_null[] = {NULL, "a", NULL, "a"}; /* NULL names are not compared */
        size_t index = 99;

        (void)state;
        assert_int_equal(xp_first_duplicate(none, 3, &index), 0);
        assert_int_equal(index, 99);
        assert_int_equal(xp_first_duplicate(none, 0, &index), 0);
        assert_int_equal(xp_first_duplicate(later, 5, &index), 1);
        assert_int_equal(index, 3);
        assert_int_equal(xp_first_duplicate(with_null, 4, &index), 1);
        assert_int_equal(index, 3);
}

static void sorted_copy_answers_membership(void **state)
{
        const char *ids[] = {"GPU-3", "GPU-1", "GPU-2"};
        const char **sorted = xp_sorted_copy(ids, 3);

        (void)state;
        assert_non_null(sorted);
        assert_string_equal(sorted[0], "GPU-1");
        assert_string_equal(sorted[2], "GPU-3");
        assert_string_equal(ids[0], "GPU-3"); /* the input keeps its order */
        assert_true(xp_sorted_contains(sorted, 3, "GPU-2"));
        assert_false(xp_sorted_contains(sorted, 3, "GPU-9"));
        assert_false(xp_sorted_contains(sorted, 3, NULL));
        free(sorted);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(set_get_replace),
            cmocka_unit_test(set_copies_key_and_value),
            cmocka_unit_test(remove_present_and_absent),
            cmocka_unit_test(copy_is_deep),
            cmocka_unit_test(sorted_after_random_inserts),
            cmocka_unit_test(distinct_keys_random_inserts),
            cmocka_unit_test(sorted_find_positions),
            cmocka_unit_test(array_insert_and_remove),
            cmocka_unit_test(first_duplicate_in_document_order),
            cmocka_unit_test(sorted_copy_answers_membership),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
