/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The pool's counts for the server's /metrics (controller/poolstats.h): kept exact as pods and
 * nodes come, change and go, so that a scrape only copies them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "registry_fixture.h"
#include "xpool/poolstats.h"

static const struct xp_poolstats_resource *resource(const struct xp_poolstats_view *v,
                                                    const char *name)
{
        for (size_t i = 0; i < v->n_resources; i++)
                if (strcmp(v->resources[i].name, name) == 0)
                        return &v->resources[i];
        fail_msg("no resource %s", name);
        return NULL;
}

static uint64_t reason(const struct xp_poolstats_view *v, const char *name)
{
        for (size_t i = 0; i < v->n_reasons; i++)
                if (strcmp(v->reasons[i].reason, name) == 0)
                        return v->reasons[i].pods;
        return 0;
}

#define NODE                                                                                                    \
        "{\"metadata\":{\"name\":\"%s\"},\"status\":{\"allocatable\":{\"cpu\":\"8\",\"memory\":\"16Gi\","       \
        "\"nvidia.com/gpu\":\"4\",\"pods\":\"110\"},\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]," \
        "\"xpool\":{\"devices\":[{\"id\":\"g0\",\"kind\":\"gpu\",\"resourceName\":\"nvidia.com/gpu\"}]}}}"

#define POD                                                                                                             \
        "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"default\",\"creationTimestamp\":\"2026-01-01T00:00:00Z\"},"     \
        "\"spec\":{\"nodeName\":\"%s\",\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":\"500m\"}," \
        "\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]},\"status\":{\"phase\":\"%s\"%s}}"

static void counts_follow_events(void **state)
{
        struct registry_fixture f = {0};
        struct xp_poolstats *st = NULL;
        struct xp_poolstats_view v;
        struct xp_error err = {0};

        (void)state;
        fixture_open(&f, "poolstats", 0);
        fixture_put_text(&f, "nodes", "", "n1", NODE, "n1");
        fixture_put_text(&f, "pods", "default", "a", POD, "a", "n1", "Running", "");
        assert_int_equal(xp_poolstats_new(f.registry, &st, &err), 0);
        xp_poolstats_read(st, &v);
        assert_int_equal(v.nodes, 1);
        assert_int_equal(v.nodes_ready, 1);
        assert_int_equal(v.phases[1], 1);
        assert_true(resource(&v, "nvidia.com/gpu")->allocatable == 4);
        assert_true(resource(&v, "nvidia.com/gpu")->requested == 1);
        assert_string_equal(resource(&v, "nvidia.com/gpu")->kind, "gpu");
        assert_true(resource(&v, "cpu")->requested == 0.5);

        /* a pending pod that could not be placed, then a second node */
        fixture_put_text(
            &f,
            "pods",
            "default",
            "b",
            POD,
            "b",
            "",
            "Pending",
            ",\"conditions\":[{\"type\":\"PodScheduled\",\"status\":\"False\",\"reason\":\"Unschedulable\"}]");
        fixture_put_text(&f, "nodes", "", "n2", NODE, "n2");
        assert_int_equal(xp_poolstats_step(st, &err), 0);
        xp_poolstats_read(st, &v);
        assert_int_equal(v.pending, 1);
        assert_int_equal(reason(&v, "Unschedulable"), 1);
        assert_true(v.pending_wait_seconds > 0);
        assert_true(resource(&v, "nvidia.com/gpu")->allocatable == 8);
        assert_true(resource(&v, "nvidia.com/gpu")->requested == 1);

        /* b is bound: its wait is observed, its request counts; a finishes: its does not */
        fixture_put_text(&f, "pods", "default", "b", POD, "b", "n2", "Running", "");
        fixture_put_text(&f, "pods", "default", "a", POD, "a", "n1", "Succeeded", "");
        assert_int_equal(xp_poolstats_step(st, &err), 0);
        xp_poolstats_read(st, &v);
        assert_int_equal(v.pending, 0);
        assert_int_equal(reason(&v, "Unschedulable"), 0);
        assert_int_equal(v.wait_until_bound.count, 1);
        assert_int_equal(v.phases[1], 1);
        assert_int_equal(v.phases[2], 1);
        assert_true(resource(&v, "nvidia.com/gpu")->requested == 1);

        /* deletions take back what they added */
        assert_int_equal(xp_store_delete(f.store, "pods", "default", "b", 0, NULL, NULL, NULL), 0);
        assert_int_equal(xp_store_delete(f.store, "nodes", "", "n2", 0, NULL, NULL, NULL), 0);
        assert_int_equal(xp_poolstats_step(st, &err), 0);
        xp_poolstats_read(st, &v);
        assert_int_equal(v.phases[1], 0);
        assert_int_equal(v.nodes, 1);
        assert_true(resource(&v, "nvidia.com/gpu")->requested == 0);
        assert_true(resource(&v, "nvidia.com/gpu")->allocatable == 4);
        xp_poolstats_free(st);
        fixture_close(&f);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(counts_follow_events),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
