/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The DaemonSet controller's decisions (src/controller/daemonset*.c): which nodes fit (selector,
 * affinity, taints, devices in allocatable), what manage() creates and deletes, and a rolling
 * update within maxUnavailable replayed step by step.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "controller/daemonset.h"

static json_t *load(const char *text)
{
        json_error_t e;
        json_t *o = json_loads(text, 0, &e);

        if (!o)
                fail_msg("bad fixture: %s: %s", e.text, text);
        return o;
}

static void fit(const char *spec, const char *node, bool run, bool keep)
{
        json_t *s = load(spec), *n = load(node);
        struct xp_ds_fit f;

        xp_ds_node_fit(s, n, &f);
        if (f.should_run != run || f.should_continue != keep)
                fail_msg("%s on %s: run %d keep %d, want %d %d",
                         spec,
                         node,
                         f.should_run,
                         f.should_continue,
                         run,
                         keep);
        json_decref(s);
        json_decref(n);
}

static void test_node_fit(void **state)
{
        (void)state;
        const char *plain = "{\"metadata\":{\"name\":\"n1\",\"labels\":{\"zone\":\"a\"}}}";

        fit("{}", plain, true, true);
        fit("{\"nodeSelector\":{\"zone\":\"a\"}}", plain, true, true);
        fit("{\"nodeSelector\":{\"zone\":\"b\"}}", plain, false, false);
        fit("{\"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":{\"nodeSelectorTerms\":"
            "[{\"matchExpressions\":[{\"key\":\"zone\",\"operator\":\"In\",\"values\":[\"b\"]}]},"
            "{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"In\",\"values\":[\"n1\"]}]}]}}}}",
            plain,
            true,
            true);
        fit("{\"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":{\"nodeSelectorTerms\":"
            "[{\"matchExpressions\":[{\"key\":\"zone\",\"operator\":\"NotIn\",\"values\":[\"a\"]}]}]}}}}",
            plain,
            false,
            false);
        /* taints: NoSchedule stops new pods only, NoExecute both; tolerations and the defaults */
        fit("{}",
            "{\"metadata\":{\"name\":\"n1\"},\"spec\":{\"taints\":[{\"key\":\"k\",\"effect\":\"NoSchedule\"}]}}",
            false,
            true);
        fit("{}",
            "{\"metadata\":{\"name\":\"n1\"},\"spec\":{\"taints\":[{\"key\":\"k\",\"value\":\"v\",\"effect\":\"NoExecute\"}]}}",
            false,
            false);
        fit("{\"tolerations\":[{\"key\":\"k\",\"operator\":\"Equal\",\"value\":\"v\"}]}",
            "{\"metadata\":{\"name\":\"n1\"},\"spec\":{\"taints\":[{\"key\":\"k\",\"value\":\"v\",\"effect\":\"NoExecute\"}]}}",
            true,
            true);
        fit("{\"tolerations\":[{\"operator\":\"Exists\"}]}",
            "{\"metadata\":{\"name\":\"n1\"},\"spec\":{\"taints\":[{\"key\":\"k\",\"effect\":\"NoExecute\"}]}}",
            true,
            true);
        fit("{}",
            "{\"metadata\":{\"name\":\"n1\"},\"spec\":{\"taints\":[{\"key\":\"node.kubernetes.io/unreachable\",\"effect\":\"NoExecute\"}]}}",
            true,
            true);
        /* a device the pod asks for must be in allocatable: a node that gains it starts fitting */
        const char *gpu =
            "{\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\",\"cpu\":\"1\"}}}]}";
        fit(gpu, plain, false, true);
        fit(gpu,
            "{\"metadata\":{\"name\":\"n1\"},\"status\":{\"allocatable\":{\"nvidia.com/gpu\":\"0\"}}}",
            false,
            true);
        fit(gpu,
            "{\"metadata\":{\"name\":\"n1\"},\"status\":{\"allocatable\":{\"nvidia.com/gpu\":\"2\"}}}",
            true,
            true);
}

static json_t *
pod(const char *name, const char *hash, const char *phase, bool ready, const char *created)
{
        return json_pack("{s:{s:s, s:s, s:{s:s}}, s:{s:s}, s:{s:s, s:[{s:s, s:s, s:s}]}}",
                         "metadata",
                         "name",
                         name,
                         "creationTimestamp",
                         created,
                         "labels",
                         "controller-revision-hash",
                         hash,
                         "spec",
                         "nodeName",
                         "n",
                         "status",
                         "phase",
                         phase,
                         "conditions",
                         "type",
                         "Ready",
                         "status",
                         ready ? "True" : "False",
                         "lastTransitionTime",
                         "2026-01-01T00:00:00Z");
}

static void test_manage(void **state)
{
        (void)state;
        json_t *objs[] = {
            pod("keep-old", "h1", "Running", true, "2026-01-01T00:00:00Z"),
            pod("extra-new", "h1", "Running", true, "2026-01-02T00:00:00Z"),
            pod("failed", "h1", "Failed", false, "2026-01-01T00:00:00Z"),
            pod("unwanted", "h1", "Running", true, "2026-01-01T00:00:00Z"),
        };
        struct xp_rs_pod p[4];
        struct xp_ds_plan plan;

        for (size_t i = 0; i < 4; i++)
                xp_rs_pod_read(objs[i], &p[i]);
        struct xp_ds_node nodes[] = {
            {.name = "empty", .fit = {true, true}},
            {.name = "two", .fit = {true, true}, .pods = &p[0], .n_pods = 2},
            {.name = "failed", .fit = {true, true}, .pods = &p[2], .n_pods = 1},
            {.name = "tainted", .fit = {false, false}, .pods = &p[3], .n_pods = 1},
            {.name = "nofit", .fit = {false, false}},
        };

        assert_int_equal(xp_ds_plan_manage(nodes, 5, &plan), 0);
        assert_int_equal(plan.n_create, 2);
        assert_string_equal(plan.create[0], "empty");
        assert_string_equal(plan.create[1], "failed");
        assert_int_equal(plan.n_delete, 3);
        assert_string_equal(plan.delete[0], "extra-new");
        assert_string_equal(plan.delete[1], "failed");
        assert_string_equal(plan.delete[2], "unwanted");
        xp_ds_plan_done(&plan);

        struct xp_ds_counts c;

        xp_ds_count(nodes, 5, "h1", 0, 0, &c);
        assert_int_equal(c.desired, 3);
        assert_int_equal(c.current, 1);
        assert_int_equal(c.misscheduled, 1);
        assert_int_equal(c.available, 1);
        assert_int_equal(c.unavailable, 2);
        for (size_t i = 0; i < 4; i++)
                json_decref(objs[i]);
}

/* Five nodes on the old hash, maxUnavailable 2: two replaced at a time, never more. */
static void test_rolling(void **state)
{
        (void)state;
        json_t *objs[5];
        struct xp_rs_pod p[5];
        struct xp_ds_node nodes[5];
        char name[5][8];
        int rounds = 0;

        for (size_t i = 0; i < 5; i++) {
                snprintf(name[i], sizeof(name[i]), "p%zu", i);
                objs[i] = pod(name[i], "old", "Running", true, "2026-01-01T00:00:00Z");
                xp_rs_pod_read(objs[i], &p[i]);
                nodes[i] = (struct xp_ds_node){
                    .name = name[i], .fit = {true, true}, .pods = &p[i], .n_pods = 1};
        }
        for (;;) {
                struct xp_ds_plan plan = {0};
                size_t updated = 0;

                assert_int_equal(xp_ds_plan_rolling(nodes, 5, "new", 2, 0, 0, &plan), 0);
                assert_true(plan.n_delete <= 2);
                /* the deleted pods come back new, but not ready in this round */
                for (size_t d = 0; d < plan.n_delete; d++)
                        for (size_t i = 0; i < 5; i++)
                                if (strcmp(p[i].name, plan.delete[d]) == 0) {
                                        json_decref(objs[i]);
                                        objs[i] = pod(name[i],
                                                      "new",
                                                      "Running",
                                                      false,
                                                      "2026-01-02T00:00:00Z");
                                        xp_rs_pod_read(objs[i], &p[i]);
                                }
                xp_ds_plan_done(&plan);
                /* while two are not ready no other old pod may go */
                assert_int_equal(xp_ds_plan_rolling(nodes, 5, "new", 2, 0, 0, &plan), 0);
                assert_int_equal(plan.n_delete, 0);
                xp_ds_plan_done(&plan);
                for (size_t i = 0; i < 5; i++) {
                        json_t *ready = json_object_get(
                            json_array_get(
                                json_object_get(json_object_get(objs[i], "status"), "conditions"),
                                0),
                            "status");

                        json_string_set(ready, "True");
                        xp_rs_pod_read(objs[i], &p[i]);
                        updated +=
                            strcmp(
                                json_string_value(json_object_get(
                                    json_object_get(json_object_get(objs[i], "metadata"), "labels"),
                                    "controller-revision-hash")),
                                "new") == 0;
                }
                if (updated == 5)
                        break;
                assert_true(++rounds < 5);
        }
        assert_int_equal(rounds, 2); /* 2 + 2 + 1 */
        /* an old pod that is not available is replaced whatever the budget */
        json_decref(objs[0]);
        objs[0] = pod("p0", "old", "Running", false, "2026-01-01T00:00:00Z");
        xp_rs_pod_read(objs[0], &p[0]);
        struct xp_ds_plan plan = {0};

        assert_int_equal(xp_ds_plan_rolling(nodes, 5, "new", 0, 0, 0, &plan), 0);
        assert_int_equal(plan.n_delete, 1);
        xp_ds_plan_done(&plan);
        for (size_t i = 0; i < 5; i++)
                json_decref(objs[i]);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_node_fit),
            cmocka_unit_test(test_manage),
            cmocka_unit_test(test_rolling),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
