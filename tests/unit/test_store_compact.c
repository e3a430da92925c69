/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The store's compact writer (src/store/compact.c) against jansson's: every body the store
 * serialises must be the same bytes either way, since the digest chain, the event log and every
 * reader's text compare and copy them.
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
#include "store/store_internal.h"
#include "xpool/kind.h"

static struct xp_store fake_store = {.path = "test.db"};

/*
 * store_serialise() (the fast path when it can) and the jansson path give the same bytes, and
 * the place for resourceVersion that the writer noted is the one a scan of the text finds.
 */
static void assert_same_body(json_t *object)
{
        struct store_text_mark noted = {0}, scanned = {0};
        struct xp_error err = {0};
        char *fast = NULL, *slow = NULL;
        size_t fast_len = 0, slow_len = 0;
        int r_fast = store_serialise(&fake_store, object, &fast, &fast_len, &noted, &err);
        int r_slow = store_serialise_jansson(&fake_store, object, &slow, &slow_len, &err);

        assert_int_equal(r_fast, r_slow);
        if (r_slow == 0) {
                assert_int_equal(fast_len, slow_len);
                assert_memory_equal(fast, slow, slow_len);
                assert_int_equal(fast[fast_len], '\0');
                assert_int_equal(store_text_mark_find(slow, slow_len, &scanned), 0);
                assert_false(noted.bad);
                assert_int_equal(noted.at, scanned.at);
                assert_int_equal(noted.empty, scanned.empty);
                assert_int_equal(noted.whole, scanned.whole);
        }
        free(fast);
        free(slow);
}

/* The fast writer itself wrote it (not the fallback): the cases the store meets every write. */
static void assert_fast_writes(const json_t *object)
{
        char *text = NULL;
        size_t len = 0;

        assert_int_equal(store_json_compact(object, NULL, XP_STORE_BODY_MAX, &text, &len), 0);
        assert_int_equal(len, json_dumpb(object, NULL, 0, JSON_COMPACT));
        free(text);
}

/* The object as the server stores it: decoded, defaulted and encoded by its kind. */
static json_t *as_stored(const json_t *manifest)
{
        const struct xp_kind *kind =
            xp_kind_by_name(json_string_value(json_object_get(manifest, "kind")));
        struct xp_error err = {0};
        void *object = NULL;
        json_t *out = NULL;

        if (!kind || kind->from_json(manifest, NULL, 0, &object, &err) < 0)
                return NULL;
        if (!kind->set_defaults || kind->set_defaults(object) >= 0)
                kind->to_json(object, &out);
        kind->free(object);
        return out;
}

static void manifests(void **state)
{
        size_t n = 0, stored = 0;
        json_t **roots = load_corpus(&n);

        (void)state;
        for (size_t i = 0; i < n; i++) {
                json_t *out = as_stored(roots[i]);

                assert_same_body(roots[i]);
                if (out) {
                        json_object_set_new(
                            json_object_get(out, "metadata"), "resourceVersion", json_string("42"));
                        assert_same_body(out);
                        stored++;
                }
                json_decref(out);
                json_decref(roots[i]);
        }
        free(roots);
        assert_true(stored >= 5); /* pods, services, config maps and more went through a kind */
}

static void strings_and_scalars(void **state)
{
        static const char odd[] = "a\"b\\c/d\b\f\n\r\t\x01\x1f\x7f é 中 😀 end";
        json_t *object = json_pack("{s:s, s:{s:s, s:s, s:s}, s:[i, I, I, I, b, b, n, s#], s:{}, "
                                   "s:[], s:s}",
                                   "kind",
                                   "ConfigMap",
                                   "metadata",
                                   "name",
                                   "x",
                                   "resourceVersion",
                                   "7",
                                   "uid",
                                   "u",
                                   "list",
                                   0,
                                   (json_int_t)INT64_MIN,
                                   (json_int_t)INT64_MAX,
                                   (json_int_t)-12345,
                                   1,
                                   0,
                                   "nul\0inside",
                                   (int)sizeof("nul\0inside") - 1,
                                   "empty",
                                   "none",
                                   odd,
                                   odd);

        (void)state;
        assert_non_null(object);
        assert_same_body(object);
        json_object_del(object, "metadata");
        assert_fast_writes(object);
        assert_same_body(object);
        json_decref(object);
}

/* Where metadata.resourceVersion sits does not matter: first, last, alone, absent. */
static void resource_version_anywhere(void **state)
{
        static const char *const bodies[] = {
            "{\"metadata\":{\"resourceVersion\":\"1\",\"name\":\"a\"},\"spec\":{}}",
            "{\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"1\"}}",
            "{\"metadata\":{\"resourceVersion\":\"1\"},\"data\":{\"resourceVersion\":\"x\"}}",
            "{\"data\":{\"metadata\":{\"resourceVersion\":\"kept\"}},\"metadata\":{}}",
            "{\"spec\":{\"template\":{\"metadata\":{\"resourceVersion\":\"kept\"}}}}",
            "{}",
            "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"a\"},\"spec\":{\"metadata\":{}}}",
            "{\"metadata\":{\"name\":\"a\"},\"r\":0.5}", /* declined: jansson's text, scanned */
        };

        (void)state;
        for (size_t i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++) {
                json_t *object = json_loads(bodies[i], 0, NULL);

                assert_non_null(object);
                assert_same_body(object);
                json_decref(object);
        }
}

/* What the fast writer leaves to jansson still comes out as jansson writes it. */
static void declined_cases(void **state)
{
        json_t *object = json_pack("{s:f, s:[f, f, f]}", "r", 0.1, "l", 1.0, 1e300, -2.5e-7);
        json_t *deep = json_object(), *at = deep;
        char *text = NULL;
        size_t len;

        (void)state;
        assert_int_equal(store_json_compact(object, NULL, XP_STORE_BODY_MAX, &text, &len),
                         -EBADMSG);
        assert_same_body(object);
        for (int i = 0; i < 600; i++) {
                json_t *next = json_object();

                json_object_set_new(at, "d", next);
                at = next;
        }
        assert_int_equal(store_json_compact(deep, NULL, XP_STORE_BODY_MAX, &text, &len), -EBADMSG);
        assert_same_body(deep);
        /* a string that is not UTF-8 (the nocheck constructors let one in) */
        json_object_set_new(object, "bad", json_string_nocheck("\xff\xfe"));
        assert_int_equal(store_json_compact(object, NULL, XP_STORE_BODY_MAX, &text, &len),
                         -EBADMSG);
        assert_same_body(object);
        json_decref(object);
        json_decref(deep);
}

/* Bodies over the limit are -E2BIG; the buffer grows past its first size on the way. */
static void sizes(void **state)
{
        size_t big_len = 3 * 8192;
        char *big = malloc(big_len + 1);
        json_t *object;
        char *text = NULL;
        size_t len = 0;

        (void)state;
        assert_non_null(big);
        memset(big, 'x', big_len);
        big[big_len] = '\0';
        object = json_pack("{s:s}", "data", big);
        assert_same_body(object);
        assert_int_equal(store_json_compact(object, NULL, XP_STORE_BODY_MAX, &text, &len), 0);
        assert_int_equal(len, big_len + 11);
        free(text);
        assert_int_equal(store_json_compact(object, NULL, big_len, &text, &len), -E2BIG);
        assert_int_equal(store_json_compact(object, NULL, big_len + 11, &text, &len), 0);
        free(text);
        json_decref(object);
        free(big);
}

/*
 * The writer skips plain strings 8 bytes at a time: every byte value, at every offset of a word
 * and of the tail, in a value and in a key, is written as jansson writes it (or declined alike).
 */
static void every_byte_everywhere(void **state)
{
        (void)state;
        for (unsigned c = 0; c < 256; c++)
                for (size_t at = 0; at < 19; at++) {
                        char text[20];
                        json_t *object;

                        memset(text, 'a', sizeof(text));
                        text[at] = (char)c;
                        text[19] = '\0';
                        /* unchecked: a lone byte past ASCII is not UTF-8, declined alike */
                        object = json_object();
                        assert_non_null(object);
                        json_object_set_new_nocheck(
                            object, "kind", json_stringn_nocheck(text, sizeof(text) - 1));
                        if (c != 0) /* a key is a C string */
                                json_object_set_new_nocheck(object, text, json_true());
                        assert_same_body(object);
                        json_decref(object);
                }
}

/* Random trees (json_corpus.h), the same each run. */
static void random_trees(void **state)
{
        unsigned seed = 21;

        (void)state;
        for (int i = 0; i < 2000; i++) {
                json_t *object = json_object();

                for (int m = rand_r(&seed) % 6; m >= 0; m--)
                        json_object_set_new(object,
                                            m == 0 ? "metadata" : (m == 1 ? "spec" : "data"),
                                            random_json_value(&seed, 0, true));
                assert_same_body(object);
                json_decref(object);
        }
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(manifests),
            cmocka_unit_test(strings_and_scalars),
            cmocka_unit_test(resource_version_anywhere),
            cmocka_unit_test(declined_cases),
            cmocka_unit_test(sizes),
            cmocka_unit_test(random_trees),
            cmocka_unit_test(every_byte_everywhere),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
