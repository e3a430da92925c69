/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The workload controllers (src/controller/workloads*.c and the syncs) on a temporary store,
 * stepped by the test on its clock: the garbage collector's background, orphan and foreground
 * deletions carried out through the registry; and ReplicaSets and Deployments when their kinds
 * are served.
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

#include "controller/workloads.h" /* wl_pod_slim */
#include "registry_fixture.h"
#include "xpool/kind.h"
#include "xpool/workloads.h"

struct fixture {
        struct registry_fixture base;
        struct xp_workloads *w;
};

static int setup(void **state)
{
        struct fixture *f = calloc(1, sizeof(*f));
        struct xp_error err = {0};

        assert_non_null(f);
        fixture_open(&f->base, "workloads", 0);
        if (xp_workloads_new(f->base.registry,
                             &(struct xp_workloads_options){.clock = &f->base.clock},
                             &f->w,
                             &err) < 0)
                fail_msg("workloads: %s", err.msg);
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        struct fixture *f = *state;

        xp_workloads_free(f->w);
        fixture_close(&f->base);
        free(f);
        return 0;
}

/* Steps until nothing changes any more (bounded). */
static void settle(struct fixture *f)
{
        struct xp_error err = {0};

        for (int i = 0; i < 20; i++) {
                if (xp_workloads_step(f->w, &err) < 0)
                        fail_msg("step: %s", err.msg);
                f->base.now_ms += 100;
        }
}

#define NODE                                                                                       \
        "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"n1\",\"uid\":\"node-uid\"%s}}"
#define POD                                                                                                                                \
        "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\",\"namespace\":\"default\",\"uid\":\"%s-uid\","              \
        "\"ownerReferences\":[{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"name\":\"n1\",\"uid\":\"node-uid\",\"blockOwnerDeletion\":%s}]}," \
        "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]},\"status\":{\"phase\":\"Pending\"}}"

static void put_graph(struct fixture *f, const char *node_extra)
{
        fixture_put_text(&f->base, "nodes", "", "n1", NODE, node_extra);
        fixture_put_text(&f->base, "pods", "default", "a", POD, "a", "a", "true");
        fixture_put_text(&f->base, "pods", "default", "b", POD, "b", "b", "false");
}

static bool exists(struct fixture *f, const char *kind, const char *ns, const char *name)
{
        json_t *o = fixture_get(&f->base, kind, ns, name);

        json_decref(o);
        return o != NULL;
}

static void test_gc_background(void **state)
{
        struct fixture *f = *state;

        put_graph(f, "");
        settle(f);
        assert_true(exists(f, "pods", "default", "a")); /* the owner lives */
        assert_int_equal(xp_store_delete(f->base.store, "nodes", "", "n1", 0, NULL, NULL, NULL), 0);
        settle(f);
        assert_false(exists(f, "pods", "default", "a"));
        assert_false(exists(f, "pods", "default", "b"));
}

static void test_gc_orphan(void **state)
{
        struct fixture *f = *state;
        struct xp_error err = {0};
        json_t *node = NULL, *pod;

        put_graph(f, "");
        settle(f);
        assert_int_equal(xp_workloads_delete_with_finalizer(f->base.registry,
                                                            &xp_kind_node,
                                                            "",
                                                            "n1",
                                                            XP_PROPAGATION_ORPHAN,
                                                            false,
                                                            &node,
                                                            &err),
                         1);
        assert_non_null(json_object_get(json_object_get(node, "metadata"), "deletionTimestamp"));
        json_decref(node);
        settle(f);
        assert_false(exists(f, "nodes", "", "n1"));
        pod = fixture_get(&f->base, "pods", "default", "a");
        assert_non_null(pod);
        assert_null(json_object_get(json_object_get(pod, "metadata"), "ownerReferences"));
        json_decref(pod);
        assert_true(exists(f, "pods", "default", "b"));
}

static void test_gc_foreground(void **state)
{
        struct fixture *f = *state;
        struct xp_error err = {0};
        json_t *node = NULL;

        put_graph(f, "");
        settle(f);
        assert_int_equal(xp_workloads_delete_with_finalizer(f->base.registry,
                                                            &xp_kind_node,
                                                            "",
                                                            "n1",
                                                            XP_PROPAGATION_FOREGROUND,
                                                            false,
                                                            &node,
                                                            &err),
                         1);
        json_decref(node);
        settle(f);
        /* the unbound pods went at once, so the owner followed */
        assert_false(exists(f, "pods", "default", "a"));
        assert_false(exists(f, "pods", "default", "b"));
        assert_false(exists(f, "nodes", "", "n1"));
}

/* The cache keeps of a pod what the syncs read, and not its containers or field managers. */
static void test_pod_slim(void **state)
{
        (void)state;
        json_auto_t *pod = json_loads(
            "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\","
            "\"labels\":{\"app\":\"a\"},\"ownerReferences\":[{\"uid\":\"u1\"}],"
            "\"managedFields\":[{\"manager\":\"kubectl\"}]},\"spec\":{\"nodeName\":\"n1\","
            "\"affinity\":{\"nodeAffinity\":{}},\"containers\":[{\"name\":\"c\"}]},"
            "\"status\":{\"phase\":\"Running\"}}",
            0,
            NULL);
        assert_non_null(pod);
        json_auto_t *slim = wl_pod_slim(pod);
        assert_non_null(slim);
        json_t *meta = json_object_get(slim, "metadata"), *spec = json_object_get(slim, "spec");
        assert_string_equal(json_string_value(json_object_get(slim, "kind")), "Pod");
        assert_string_equal(json_string_value(json_object_get(meta, "name")), "p");
        assert_non_null(json_object_get(json_object_get(meta, "labels"), "app"));
        assert_non_null(json_object_get(meta, "ownerReferences"));
        assert_null(json_object_get(meta, "managedFields"));
        assert_string_equal(json_string_value(json_object_get(spec, "nodeName")), "n1");
        assert_non_null(json_object_get(spec, "affinity"));
        assert_null(json_object_get(spec, "containers"));
        assert_string_equal(
            json_string_value(json_object_get(json_object_get(slim, "status"), "phase")),
            "Running");
        /* the pod itself is untouched */
        assert_non_null(json_object_get(json_object_get(pod, "metadata"), "managedFields"));
        assert_non_null(json_object_get(json_object_get(pod, "spec"), "containers"));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test_setup_teardown(test_gc_background, setup, teardown),
            cmocka_unit_test_setup_teardown(test_gc_orphan, setup, teardown),
            cmocka_unit_test_setup_teardown(test_gc_foreground, setup, teardown),
            cmocka_unit_test(test_pod_slim),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
