/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The request body's reader (xpool/jsonread.h) against json_loadb(JSON_REJECT_DUPLICATES): what
 * it reads must be the very tree jansson builds (types, values, member order), and what it
 * declines must be left to jansson, never read differently.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "json_corpus.h"
#include "xpool/codec.h"
#include "xpool/jsonread.h"

/* The same tree: equal values, and written out the same (json_equal() ignores member order). */
static void assert_same_tree(const json_t *a, const json_t *b)
{
        char *ta = json_dumps(a, JSON_COMPACT | JSON_ENCODE_ANY);
        char *tb = json_dumps(b, JSON_COMPACT | JSON_ENCODE_ANY);

        assert_true(json_equal(a, b));
        assert_non_null(ta);
        assert_non_null(tb);
        assert_string_equal(ta, tb);
        free(ta);
        free(tb);
}

/* Reads text both ways: returns what the fast reader answered (0 or -EBADMSG). The depth it
 * counts is the tree's, as the walk of xp_json_deeper_than() finds it (a create skips the walk). */
static int compare(const char *text, size_t len)
{
        json_t *fast = NULL, *slow = json_loadb(text, len, JSON_REJECT_DUPLICATES, NULL);
        unsigned depth = 0;
        int r = xp_json_read_object_depth(text, len, &fast, &depth);

        assert_true(r == 0 || r == -EBADMSG);
        if (r == 0) {
                assert_non_null(slow); /* never reads what jansson refuses */
                assert_same_tree(fast, slow);
                assert_true(depth >= 1);
                assert_false(xp_json_deeper_than(fast, depth));
                assert_true(depth == 1 || xp_json_deeper_than(fast, depth - 1));
        }
        json_decref(fast);
        json_decref(slow);
        return r;
}

static int compare_string(const char *text)
{
        return compare(text, strlen(text));
}

/* Every manifest as compact and as indented JSON, and every prefix of one (all refused). */
static void manifests(void **state)
{
        size_t n = 0, read = 0;
        json_t **roots = load_corpus(&n);

        (void)state;
        for (size_t i = 0; i < n; i++) {
                char *compact = json_dumps(roots[i], JSON_COMPACT);
                char *indented = json_dumps(roots[i], JSON_INDENT(3));

                /* reals are left to jansson; the rest the fast reader reads itself */
                if (compare_string(compact) == 0)
                        read++;
                compare_string(indented);
                for (size_t cut = 0; cut < strlen(compact); cut += 7)
                        assert_int_equal(compare(compact, cut), -EBADMSG);
                free(compact);
                free(indented);
                json_decref(roots[i]);
        }
        free(roots);
        assert_true(read >= 5);
}

/* What it reads itself, as jansson does. */
static void read_alike(void **state)
{
        static const char *const bodies[] = {
            "{}",
            " \t\r\n{ } \n",
            "{\"a\":1,\"b\":-0,\"c\":-9223372036854775808,\"d\":9223372036854775807}",
            "{\"z\":1,\"a\":2,\"m\":{\"y\":[],\"x\":[1,[2,[3]],{}]}}",
            "{\"t\":true,\"f\":false,\"n\":null,\"l\":[true,false,null]}",
            "{\"e\":\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"}",
            "{\"go\":\"a \\u0026\\u0026 b \\u003c\\u003e \\u00e9 \\u4E2D \\ud83d\\ude00\"}",
            "{\"raw\":\"é 中 😀\",\"k\\u00e9y\":\"v\",\"\":\"\"}",
            "{\"k\\n\":{\"k\\n\":\"same key, other object\"}}",
            "{ \"spaced\" : [ 1 , 2 ] , \"x\" : \"y\" }",
        };

        (void)state;
        for (size_t i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++)
                assert_int_equal(compare_string(bodies[i]), 0);
}

/* What it leaves to jansson: jansson's tree or error stands. */
static void left_to_jansson(void **state)
{
        static const char *const bodies[] = {
            "",
            "[1]",
            "\"s\"",
            "{\"a\":1.5}",
            "{\"a\":1e3}",
            "{\"a\":1E3}",
            "{\"a\":9223372036854775808}",
            "{\"a\":-9223372036854775809}",
            "{\"a\":01}",
            "{\"a\":-}",
            "{\"a\":1,\"a\":2}",
            "{\"m\":{\"x\":{\"y\":\"z\"},\"x\":[2,\"s\"]}}",
            "{\"a\":{},\"b\":1,\"a\":{\"c\":\"d\"}}",
            "{\"k\\u00e9y\":1,\"k\u00e9y\":2}",
            "{\"a\":1,}",
            "{,}",
            "{\"a\" 1}",
            "{\"a\":[1,]}",
            "{\"a\":[1 2]}",
            "{\"a\":tru}",
            "{\"a\":truex}",
            "{\"a\":\"\\u0000\"}",
            "{\"a\":\"\\ud83d\"}",
            "{\"a\":\"\\ud83dx\"}",
            "{\"a\":\"\\ude00\"}",
            "{\"a\":\"\\u12\"}",
            "{\"a\":\"\\x\"}",
            "{\"a\":\"tab\there\"}",
            "{\"a\":\"\xff\"}",
            "{\"a\":\"\xc3\"}",
            "{\"a\":\"\xed\xa0\x80\"}",
            "{\"a\":1} x",
            "{\"a\":1}{}",
            "{\"a\":\"unterminated}",
            "{'a':1}",
        };

        (void)state;
        for (size_t i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++)
                assert_int_equal(compare_string(bodies[i]), -EBADMSG);
        /* a NUL byte outside and inside a string */
        assert_int_equal(compare("{\"a\":1}\0", 8), -EBADMSG);
        assert_int_equal(compare("{\"a\":\"x\0y\"}", 11), -EBADMSG);
}

/* {"a":[[...]]}: an object and lists, levels deep in all. */
static size_t nest(char *text, int levels)
{
        size_t n = 0;

        memcpy(text, "{\"a\":", 5);
        n = 5;
        for (int i = 1; i < levels; i++)
                text[n++] = '[';
        for (int i = 1; i < levels; i++)
                text[n++] = ']';
        text[n++] = '}';
        return n;
}

/* Nesting to the bound is read; one level more is left to jansson, which reads it. */
static void depth(void **state)
{
        char text[2 * XP_JSON_READ_DEPTH + 16];

        (void)state;
        assert_int_equal(compare(text, nest(text, XP_JSON_READ_DEPTH)), 0);
        assert_int_equal(compare(text, nest(text, XP_JSON_READ_DEPTH + 1)), -EBADMSG);
}

/* Random trees (json_corpus.h), the same each run. */
static void random_trees(void **state)
{
        unsigned seed = 21;

        (void)state;
        for (int i = 0; i < 2000; i++) {
                json_t *object = json_object();
                char *text;

                for (int m = rand_r(&seed) % 6; m >= 0; m--)
                        json_object_set_new(
                            object, m % 2 ? "spec" : "data", random_json_value(&seed, 0, false));
                text = json_dumps(object, JSON_COMPACT | (i % 2 ? JSON_ENSURE_ASCII : 0));
                assert_int_equal(compare_string(text), 0);
                free(text);
                json_decref(object);
        }
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(manifests),
            cmocka_unit_test(read_alike),
            cmocka_unit_test(left_to_jansson),
            cmocka_unit_test(depth),
            cmocka_unit_test(random_trees),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
