/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The store's writer copies the text it made once of each shared tree (xpool/sharedtree.h:
 * a pod's projected token source, its default tolerations) instead of walking it again: the
 * stored bytes must be the ones the walk, and jansson, give for the same tree unmarked, and the
 * copy must really be taken (store_json_shared_text_copies()).
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "store/store_internal.h"
#include "xpool/sharedtree.h"

static struct xp_store fake_store = {.path = "test.db"};

/* One tree of each shape a pod shares, marked once for the whole run (the marks never go). */
struct shared {
        json_t *source, *source_ca, *toleration, *toleration2, *array;
};

static struct shared *shared_trees(void)
{
        static struct shared trees;

        if (trees.source)
                return &trees;
        trees.source = json_loads(
            "{\"sources\":[{\"serviceAccountToken\":{\"expirationSeconds\":3607,\"path\":\"token\"}},"
            "{\"downwardAPI\":{\"items\":[{\"fieldRef\":{\"apiVersion\":\"v1\",\"fieldPath\":"
            "\"metadata.namespace\"},\"path\":\"namespace\"}]}}],\"defaultMode\":420}",
            0,
            NULL);
        trees.source_ca = json_deep_copy(trees.source);
        json_array_insert_new(json_object_get(trees.source_ca, "sources"),
                              1,
                              json_pack("{s:{s:s, s:[{s:s, s:s}]}}",
                                        "configMap",
                                        "name",
                                        "kube-root-ca.crt \"quoted\"\n\t\x01 é 中",
                                        "items",
                                        "key",
                                        "ca.crt",
                                        "path",
                                        "ca.crt"));
        trees.toleration = json_pack("{s:s, s:s, s:s, s:i}",
                                     "key",
                                     "node.kubernetes.io/not-ready",
                                     "operator",
                                     "Exists",
                                     "effect",
                                     "NoExecute",
                                     "tolerationSeconds",
                                     300);
        trees.toleration2 =
            json_pack("{s:s, s:b, s:n, s:{}, s:[]}", "key", "u", "t", 1, "n", "o", "a");
        trees.array = json_pack("[i, s, {s:[]}, []]", -7, "x\\y", "z");
        for (json_t **t = &trees.source; t <= &trees.array; t++) {
                assert_non_null(*t);
                xp_shared_tree_add(*t);
                assert_int_not_equal(xp_shared_tree_index(*t), -1);
        }
        return &trees;
}

static bool copies;

/* tree by reference, or a copy that is not marked */
static json_t *hold(json_t *tree)
{
        return copies ? json_deep_copy(tree) : json_incref(tree);
}

/* A pod holding the trees (by reference, or copies that are not marked). */
static json_t *pod(const struct shared *trees, bool with_copies)
{
        json_t *object;

        copies = with_copies;
        object = json_pack("{s:s, s:{s:s, s:s}, s:{s:[{s:s, s:o}, {s:s, s:o}], s:[o, o], "
                           "s:o}}",
                           "kind",
                           "Pod",
                           "metadata",
                           "name",
                           "p",
                           "resourceVersion",
                           "9",
                           "spec",
                           "volumes",
                           "name",
                           "kube-api-access-a",
                           "projected",
                           hold(trees->source),
                           "name",
                           "kube-api-access-b",
                           "projected",
                           hold(trees->source_ca),
                           "tolerations",
                           hold(trees->toleration),
                           hold(trees->toleration2),
                           "extra",
                           hold(trees->array));

        assert_non_null(object);
        return object;
}

/* store_serialise()'s text of object, which jansson's writer matches byte for byte. */
static char *serialised(json_t *object, size_t *ret_len)
{
        struct store_text_mark mark = {0};
        struct xp_error err = {0};
        char *text = NULL, *slow = NULL;
        size_t slow_len = 0;

        assert_int_equal(store_serialise(&fake_store, object, &text, ret_len, &mark, &err), 0);
        assert_int_equal(store_serialise_jansson(&fake_store, object, &slow, &slow_len, &err), 0);
        assert_int_equal(*ret_len, slow_len);
        assert_memory_equal(text, slow, slow_len);
        assert_false(mark.bad);
        free(slow);
        return text;
}

/* With the marked trees, and with copies of them: the same bytes; only the first uses the texts. */
static void same_bytes_as_the_walk(void **state)
{
        struct shared *trees = shared_trees();

        (void)state;
        for (int round = 0; round < 2; round++) { /* the first makes the texts, the second reuses */
                json_t *marked = pod(trees, false), *unmarked = pod(trees, true);
                size_t before = store_json_shared_text_copies(), len = 0, copy_len = 0;
                char *text = serialised(marked, &len);
                size_t used = store_json_shared_text_copies() - before;
                char *copy_text = serialised(unmarked, &copy_len);

                assert_int_equal(used, 5);
                assert_int_equal(store_json_shared_text_copies() - before, 5);
                assert_int_equal(len, copy_len);
                assert_memory_equal(text, copy_text, len);
                free(text);
                free(copy_text);
                json_decref(marked);
                json_decref(unmarked);
        }
}

/* A marked tree as the top's metadata still loses resourceVersion: it is walked. */
static void metadata_is_walked(void **state)
{
        struct shared *trees = shared_trees();
        json_t *metadata = json_pack("{s:s, s:s}", "name", "m", "resourceVersion", "3");
        json_t *object;
        size_t before, len = 0;
        char *text;

        (void)state;
        xp_shared_tree_add(metadata);
        object = json_pack("{s:O, s:O}", "metadata", metadata, "spec", trees->toleration);
        before = store_json_shared_text_copies();
        text = serialised(object, &len);
        assert_int_equal(store_json_shared_text_copies() - before, 1); /* the toleration only */
        assert_null(strstr(text, "resourceVersion"));
        free(text);
        json_decref(object);
}

/* A marked tree this writer declines (a real) and one too deep where it sits: as jansson writes. */
static void declined_trees_are_walked(void **state)
{
        json_t *real = json_pack("{s:f}", "r", 0.5), *object, *at;
        size_t before;
        char *text = NULL;
        size_t len = 0;

        (void)state;
        xp_shared_tree_add(real);
        object = json_pack("{s:O, s:[O]}", "a", real, "b", real);
        before = store_json_shared_text_copies();
        assert_int_equal(store_json_compact(object, NULL, XP_STORE_BODY_MAX, &text, &len),
                         -EBADMSG);
        assert_int_equal(store_json_shared_text_copies(), before);
        text = serialised(object, &len);
        free(text);
        json_decref(object);
        /* the projected source has values 7 levels below it: at depth 508 it passes MAX_DEPTH (512)
         */
        object = json_object();
        at = object;
        for (int i = 0; i < 507; i++) {
                json_t *next = json_object();

                json_object_set_new(at, "d", next);
                at = next;
        }
        json_object_set(at, "projected", shared_trees()->source);
        before = store_json_shared_text_copies();
        assert_int_equal(store_json_compact(object, NULL, XP_STORE_BODY_MAX, &text, &len),
                         -EBADMSG);
        assert_int_equal(store_json_shared_text_copies(), before);
        json_object_del(json_object_get(object, "d"), "d");
        json_object_set(json_object_get(object, "d"), "projected", shared_trees()->source);
        text = serialised(object, &len);
        assert_int_equal(store_json_shared_text_copies() - before, 1);
        free(text);
        json_decref(object);
        json_decref(real);
}

struct racer {
        json_t *object;
        pthread_barrier_t *start;
        char *text;
        size_t len;
        size_t copies; /* the tree's texts this thread copied */
        int r;
};

static void *race(void *arg)
{
        struct racer *racer = arg;
        size_t before;

        pthread_barrier_wait(racer->start); /* all at once: the first use races */
        before = store_json_shared_text_copies();
        racer->r =
            store_json_compact(racer->object, NULL, XP_STORE_BODY_MAX, &racer->text, &racer->len);
        racer->copies = store_json_shared_text_copies() - before;
        return NULL;
}

/* Threads that meet a tree's text first together keep one; each copies it and writes the same
 * bytes. */
static void first_use_from_threads(void **state)
{
        json_t *tree = json_pack("{s:[s, s, i]}", "raced", "a", "b\n", 3);
        struct racer racers[4];
        pthread_t threads[4];
        pthread_barrier_t start;
        char *expected = NULL;
        size_t expected_len = 0;

        (void)state;
        xp_shared_tree_add(tree);
        assert_true(xp_shared_tree_index(tree) >= 0); /* marked: the table had room */
        assert_int_equal(pthread_barrier_init(&start, NULL, 4), 0);
        for (size_t i = 0; i < 4; i++) {
                racers[i] =
                    (struct racer){.object = json_pack("{s:O}", "t", tree), .start = &start};
                assert_int_equal(pthread_create(&threads[i], NULL, race, &racers[i]), 0);
        }
        for (size_t i = 0; i < 4; i++)
                assert_int_equal(pthread_join(threads[i], NULL), 0);
        pthread_barrier_destroy(&start);
        expected = json_dumps(racers[0].object, JSON_COMPACT);
        expected_len = strlen(expected);
        for (size_t i = 0; i < 4; i++) {
                assert_int_equal(racers[i].r, 0);
                assert_int_equal(racers[i].copies, 1);
                assert_int_equal(racers[i].len, expected_len);
                assert_memory_equal(racers[i].text, expected, expected_len);
                free(racers[i].text);
                json_decref(racers[i].object);
        }
        free(expected);
        json_decref(tree);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(same_bytes_as_the_walk),
            cmocka_unit_test(metadata_is_walked),
            cmocka_unit_test(declined_trees_are_walked),
            cmocka_unit_test(first_use_from_threads),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
