/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The garbage collector's decisions (src/controller/gc*.c) on recorded graphs: dangling owners,
 * background, foreground (foregroundDeletion, blockOwnerDeletion) and orphan propagation.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "controller/gc.h"

static void put(struct xp_gc_graph *g, const char *resource, const char *text)
{
        json_error_t e;
        json_t *o = json_loads(text, 0, &e);

        if (!o)
                fail_msg("bad fixture: %s: %s", e.text, text);
        assert_int_equal(xp_gc_graph_put(g, resource, o), 0);
        json_decref(o);
}

#define DEPLOY                                                                                     \
        "{\"kind\":\"Deployment\",\"metadata\":{\"name\":\"web\",\"namespace\":\"default\",\"uid\":\"d1\"%s}}"
#define RS                                                                                                      \
        "{\"kind\":\"ReplicaSet\",\"metadata\":{\"name\":\"web-1\",\"namespace\":\"default\",\"uid\":\"r1\"%s," \
        "\"ownerReferences\":[{\"kind\":\"Deployment\",\"name\":\"web\",\"uid\":\"d1\",\"controller\":true,\"blockOwnerDeletion\":true}]}}"
#define POD                                                                                                \
        "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"web-1-%s\",\"namespace\":\"default\",\"uid\":\"p%s\"," \
        "\"ownerReferences\":[{\"kind\":\"ReplicaSet\",\"name\":\"web-1\",\"uid\":\"r1\",\"controller\":true,\"blockOwnerDeletion\":%s}]}}"

static void build(struct xp_gc_graph *g, const char *deploy_extra, const char *rs_extra)
{
        char text[1024];

        xp_gc_graph_init(g);
        snprintf(text, sizeof(text), DEPLOY, deploy_extra);
        put(g, "deployments", text);
        snprintf(text, sizeof(text), RS, rs_extra);
        put(g, "replicasets", text);
        snprintf(text, sizeof(text), POD, "a", "a", "true");
        put(g, "pods", text);
        snprintf(text, sizeof(text), POD, "b", "b", "false");
        put(g, "pods", text);
}

static void decide(struct xp_gc_graph *g, const char *uid, struct xp_gc_actions *a)
{
        *a = (struct xp_gc_actions){0};
        assert_int_equal(xp_gc_decide(g, uid, a), 0);
}

static void test_live_owners(void **state)
{
        (void)state;
        struct xp_gc_graph g;
        struct xp_gc_actions a;

        build(&g, "", "");
        decide(&g, "r1", &a);
        assert_int_equal(a.n, 0);
        decide(&g, "pa", &a);
        assert_int_equal(a.n, 0);
        xp_gc_graph_done(&g);
}

/* Background: the Deployment is gone; its ReplicaSet dangles and goes, then its pods. */
static void test_background(void **state)
{
        (void)state;
        struct xp_gc_graph g;
        struct xp_gc_actions a;

        build(&g, "", "");
        xp_gc_graph_remove(&g, "d1");
        decide(&g, "r1", &a);
        assert_int_equal(a.n, 1);
        assert_int_equal(a.items[0].verb, XP_GC_DELETE_BACKGROUND);
        assert_string_equal(a.items[0].target, "r1");
        xp_gc_actions_done(&a);
        decide(&g, "pa", &a);
        assert_int_equal(a.n, 0); /* its owner is still there */
        xp_gc_graph_remove(&g, "r1");
        decide(&g, "pa", &a);
        assert_int_equal(a.n, 1);
        assert_int_equal(a.items[0].verb, XP_GC_DELETE_BACKGROUND);
        xp_gc_actions_done(&a);
        /* an owner of the same uid but another name is not the owner */
        put(&g,
            "replicasets",
            "{\"kind\":\"ReplicaSet\",\"metadata\":{\"name\":\"other\",\"namespace\":\"default\",\"uid\":\"r1\"}}");
        decide(&g, "pb", &a);
        assert_int_equal(a.n, 1);
        xp_gc_actions_done(&a);
        xp_gc_graph_done(&g);
}

/* Foreground: the ReplicaSet waits (finalizer) until the blocking pod is gone. */
static void test_foreground(void **state)
{
        (void)state;
        struct xp_gc_graph g;
        struct xp_gc_actions a;

        build(
            &g,
            "",
            ",\"deletionTimestamp\":\"2026-01-01T00:00:00Z\",\"finalizers\":[\"foregroundDeletion\"]");
        decide(&g, "r1", &a);
        /* both pods are deleted; pa blocks, so the finalizer stays */
        assert_int_equal(a.n, 2);
        for (size_t i = 0; i < a.n; i++)
                assert_int_equal(a.items[i].verb, XP_GC_DELETE_BACKGROUND);
        xp_gc_actions_done(&a);
        xp_gc_graph_remove(&g, "pa");
        decide(&g, "r1", &a);
        /* pb (not blocking) is still deleted; the finalizer goes */
        assert_int_equal(a.n, 2);
        assert_int_equal(a.items[1].verb, XP_GC_REMOVE_FINALIZER);
        assert_string_equal(a.items[1].finalizer, XP_GC_FOREGROUND);
        xp_gc_actions_done(&a);
        xp_gc_graph_done(&g);

        /* a Deployment deleted in the foreground: its ReplicaSet, which has dependents, goes in the
         * foreground too */
        build(
            &g,
            ",\"deletionTimestamp\":\"2026-01-01T00:00:00Z\",\"finalizers\":[\"foregroundDeletion\"]",
            "");
        decide(&g, "d1", &a);
        assert_int_equal(a.n, 1);
        assert_int_equal(a.items[0].verb, XP_GC_DELETE_FOREGROUND);
        assert_string_equal(a.items[0].target, "r1");
        xp_gc_actions_done(&a);
        xp_gc_graph_done(&g);
}

/* Orphan: the pods lose their reference to the ReplicaSet, then the finalizer goes. */
static void test_orphan(void **state)
{
        (void)state;
        struct xp_gc_graph g;
        struct xp_gc_actions a;
        int removed = 0;

        build(
            &g, "", ",\"deletionTimestamp\":\"2026-01-01T00:00:00Z\",\"finalizers\":[\"orphan\"]");
        decide(&g, "r1", &a);
        assert_int_equal(a.n, 3);
        for (size_t i = 0; i < 2; i++) {
                assert_int_equal(a.items[i].verb, XP_GC_REMOVE_OWNERS);
                assert_int_equal(a.items[i].n_owners, 1);
                assert_string_equal(a.items[i].owners[0], "r1");
                removed++;
        }
        assert_int_equal(a.items[2].verb, XP_GC_REMOVE_FINALIZER);
        assert_string_equal(a.items[2].finalizer, XP_GC_ORPHAN);
        assert_int_equal(removed, 2);
        xp_gc_actions_done(&a);
        xp_gc_graph_done(&g);
}

static bool only_known(const char *kind)
{
        return strcmp(kind, "Unknown") != 0;
}

/* An owner of a kind nobody follows is never taken for gone. */
static void test_unknown_kind(void **state)
{
        (void)state;
        struct xp_gc_graph g;
        struct xp_gc_actions a;

        xp_gc_graph_init(&g);
        g.known_kind = only_known;
        put(&g,
            "pods",
            "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"x\",\"namespace\":\"default\",\"uid\":\"x1\",\"ownerReferences\":["
            "{\"kind\":\"Unknown\",\"name\":\"a\",\"uid\":\"u1\"}]}}");
        put(&g,
            "pods",
            "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"y\",\"namespace\":\"default\",\"uid\":\"y1\",\"ownerReferences\":["
            "{\"kind\":\"ReplicaSet\",\"name\":\"a\",\"uid\":\"u2\"}]}}");
        decide(&g, "x1", &a);
        assert_int_equal(a.n, 0);
        decide(&g, "y1", &a);
        assert_int_equal(a.n, 1);
        xp_gc_actions_done(&a);
        xp_gc_graph_done(&g);
}

/* Several owners: one gone, one alive: only the reference to the gone one is removed. */
static void test_partial_owners(void **state)
{
        (void)state;
        struct xp_gc_graph g;
        struct xp_gc_actions a;

        xp_gc_graph_init(&g);
        put(&g,
            "configmaps",
            "{\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"a\",\"namespace\":\"default\",\"uid\":\"c1\"}}");
        put(&g,
            "pods",
            "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"x\",\"namespace\":\"default\",\"uid\":\"x1\",\"ownerReferences\":["
            "{\"kind\":\"ConfigMap\",\"name\":\"a\",\"uid\":\"c1\"},{\"kind\":\"ConfigMap\",\"name\":\"b\",\"uid\":\"c2\"}]}}");
        decide(&g, "x1", &a);
        assert_int_equal(a.n, 1);
        assert_int_equal(a.items[0].verb, XP_GC_REMOVE_OWNERS);
        assert_int_equal(a.items[0].n_owners, 1);
        assert_string_equal(a.items[0].owners[0], "c2");
        xp_gc_actions_done(&a);
        /* an owner in another namespace is no owner */
        put(&g,
            "configmaps",
            "{\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"a\",\"namespace\":\"other\",\"uid\":\"c1\"}}");
        decide(&g, "x1", &a);
        assert_int_equal(a.n, 1);
        assert_int_equal(a.items[0].verb, XP_GC_DELETE_BACKGROUND);
        xp_gc_actions_done(&a);
        xp_gc_graph_done(&g);
}

/* A new state of a known object replaces what the graph says of it: its owners, its deletion
 * and its finalizers, whether its owners changed or not, and its place when the uid is reused. */
static void test_put_again(void **state)
{
        struct xp_gc_graph g;
        const struct xp_gc_object *o;

        (void)state;
        build(&g, "", "");
        put(&g,
            "pods",
            "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"web-1-a\",\"namespace\":\"default\","
            "\"uid\":\"pa\",\"deletionTimestamp\":\"2026-01-01T00:00:00Z\","
            "\"finalizers\":[\"foregroundDeletion\"],\"ownerReferences\":[{\"kind\":"
            "\"ReplicaSet\",\"name\":\"web-1\",\"uid\":\"r1\",\"blockOwnerDeletion\":true}]}}");
        o = xp_gc_graph_get(&g, "pa");
        assert_non_null(o);
        assert_true(o->deleting);
        assert_true(o->foreground);
        assert_int_equal(o->n_owners, 1);
        assert_true(o->owners[0].block);
        put(&g,
            "pods",
            "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"web-1-a\",\"namespace\":\"default\","
            "\"uid\":\"pa\",\"ownerReferences\":[{\"kind\":\"Deployment\",\"name\":\"web\","
            "\"uid\":\"d1\"},{\"kind\":\"ReplicaSet\",\"name\":\"web-1\",\"uid\":\"r1\"}]}}");
        o = xp_gc_graph_get(&g, "pa");
        assert_false(o->deleting);
        assert_false(o->foreground);
        assert_int_equal(o->n_owners, 2);
        assert_string_equal(o->owners[0].uid, "d1");
        assert_false(o->owners[1].block);
        put(&g, "pods", "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"other\",\"uid\":\"pa\"}}");
        o = xp_gc_graph_get(&g, "pa");
        assert_string_equal(o->name, "other");
        assert_string_equal(o->namespace, "");
        assert_int_equal(o->n_owners, 0);
        xp_gc_graph_done(&g);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_live_owners),
            cmocka_unit_test(test_background),
            cmocka_unit_test(test_foreground),
            cmocka_unit_test(test_orphan),
            cmocka_unit_test(test_partial_owners),
            cmocka_unit_test(test_unknown_kind),
            cmocka_unit_test(test_put_again),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
