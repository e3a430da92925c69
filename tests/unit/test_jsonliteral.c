/* SPDX-License-Identifier: Apache-2.0 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "xpool/jsonliteral.h"

static const char always[] = "Always";
static const char never[] = "Never";

static void shares_one_node_per_literal(void **state)
{
        json_t *a = xp_json_literal(always), *b = xp_json_literal(always);
        json_t *c = xp_json_literal(never);
        (void)state;

        assert_non_null(a);
        assert_ptr_equal(a, b);
        assert_ptr_not_equal(a, c);
        assert_string_equal(json_string_value(a), "Always");
        assert_string_equal(json_string_value(c), "Never");
        /* the caller's references, not the table's: the node outlives them */
        json_decref(a);
        json_decref(b);
        json_decref(c);
        a = xp_json_literal(always);
        assert_string_equal(json_string_value(a), "Always");
        json_decref(a);
}

/* A tree that holds a shared node serialises it as any other, and frees only its reference. */
static void serves_trees(void **state)
{
        json_t *first = json_object(), *second = json_object();
        char *text;
        (void)state;

        assert_int_equal(json_object_set_new(first, "restartPolicy", xp_json_literal(never)), 0);
        assert_int_equal(json_object_set_new(second, "restartPolicy", xp_json_literal(never)), 0);
        text = json_dumps(first, JSON_COMPACT);
        assert_string_equal(text, "{\"restartPolicy\":\"Never\"}");
        free(text);
        json_decref(first);
        assert_string_equal(json_string_value(json_object_get(second, "restartPolicy")), "Never");
        json_decref(second);
}

/* Past what the table holds, literals still get their text (nodes of their own). */
static void outgrows_the_table(void **state)
{
        static char many[2048][4];
        (void)state;

        for (size_t i = 0; i < 2048; i++) {
                json_t *node;

                many[i][0] = (char)('a' + i % 26);
                many[i][1] = (char)('a' + i / 26 % 26);
                many[i][2] = (char)('a' + i / 676);
                node = xp_json_literal(many[i]);
                assert_non_null(node);
                assert_string_equal(json_string_value(node), many[i]);
                json_decref(node);
        }
}

#define THREADS 8

static const char shared_by_threads[] = "IfNotPresent";

static void *take_many(void *arg)
{
        json_t **seen = arg;

        for (int i = 0; i < 10000; i++) {
                json_t *node = xp_json_literal(shared_by_threads);

                if (!node || strcmp(json_string_value(node), "IfNotPresent") != 0)
                        return NULL;
                if (i == 0)
                        *seen = json_incref(node);
                json_decref(node);
        }
        return arg;
}

/* Threads that ask at once get the text, and after the race one node (the first claim's). */
static void serves_threads(void **state)
{
        pthread_t threads[THREADS];
        json_t *seen[THREADS] = {0}, *after;
        (void)state;

        for (int i = 0; i < THREADS; i++)
                assert_int_equal(pthread_create(&threads[i], NULL, take_many, &seen[i]), 0);
        for (int i = 0; i < THREADS; i++) {
                void *r;

                assert_int_equal(pthread_join(threads[i], &r), 0);
                assert_ptr_equal(r, &seen[i]);
        }
        after = xp_json_literal(shared_by_threads);
        for (int i = 0; i < THREADS; i++) {
                assert_string_equal(json_string_value(seen[i]), "IfNotPresent");
                json_decref(seen[i]);
        }
        assert_ptr_equal(after, xp_json_literal(shared_by_threads));
        json_decref(after);
        json_decref(after);
}

/* Small integers are one node each; others and negatives get nodes of their own. */
static void shares_small_integers(void **state)
{
        json_t *a = xp_json_integer(30), *b = xp_json_integer(30);
        json_t *zero = xp_json_integer(0), *last = xp_json_integer(XP_JSON_SHARED_INTEGERS - 1);
        json_t *big = xp_json_integer(XP_JSON_SHARED_INTEGERS),
               *big2 = xp_json_integer(XP_JSON_SHARED_INTEGERS);
        json_t *negative = xp_json_integer(-1), *negative2 = xp_json_integer(-1);
        (void)state;

        assert_ptr_equal(a, b);
        assert_int_equal(json_integer_value(a), 30);
        assert_int_equal(json_integer_value(zero), 0);
        assert_ptr_equal(last, xp_json_integer(XP_JSON_SHARED_INTEGERS - 1));
        json_decref(last);
        assert_int_equal(json_integer_value(last), XP_JSON_SHARED_INTEGERS - 1);
        assert_ptr_not_equal(big, big2);
        assert_int_equal(json_integer_value(big), XP_JSON_SHARED_INTEGERS);
        assert_ptr_not_equal(negative, negative2);
        assert_int_equal(json_integer_value(negative), -1);
        json_decref(a);
        json_decref(b);
        assert_int_equal(json_integer_value(xp_json_integer(30)), 30);
        json_decref(a);
        for (json_t **n = (json_t *[]){zero, last, big, big2, negative, negative2, NULL}; *n; n++)
                json_decref(*n);
}

/* Marked trees are known by address; past the table's room, later ones are not marked. */
static void marks_shared_trees(void **state)
{
        json_t *trees[XP_JSON_SHARED_TREES + 2], *other = json_object();
        (void)state;

        for (size_t i = 0; i < XP_JSON_SHARED_TREES + 2; i++) {
                trees[i] = json_object();
                xp_json_shared_tree_mark(trees[i]);
        }
        for (size_t i = 0; i < XP_JSON_SHARED_TREES; i++)
                assert_true(xp_json_is_shared_tree(trees[i]));
        assert_false(xp_json_is_shared_tree(trees[XP_JSON_SHARED_TREES]));
        assert_false(xp_json_is_shared_tree(trees[XP_JSON_SHARED_TREES + 1]));
        assert_false(xp_json_is_shared_tree(other));
        assert_false(xp_json_is_shared_tree(NULL));
        /* marked trees live as long as the process, as the program's own do */
        json_decref(trees[XP_JSON_SHARED_TREES]);
        json_decref(trees[XP_JSON_SHARED_TREES + 1]);
        json_decref(other);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(shares_one_node_per_literal),
            cmocka_unit_test(serves_trees),
            cmocka_unit_test(shares_small_integers),
            cmocka_unit_test(marks_shared_trees),
            cmocka_unit_test(serves_threads),
            /* last: it fills the table */
            cmocka_unit_test(outgrows_the_table),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
