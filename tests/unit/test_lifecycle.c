/* SPDX-License-Identifier: Apache-2.0 */
/* The pure lifecycle decisions of the server (src/registry/lifecycle.c) */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "xpool/lifecycle.h"
#include "xpool/timeutil.h"

#define NOW 1800000000 /* 2027-01-15T08:00:00Z */

static json_t *load(const char *text)
{
        json_error_t jerr;
        json_t *j = json_loads(text, 0, &jerr);

        if (!j)
                fail_msg("bad test JSON at %d:%d: %s", jerr.line, jerr.column, jerr.text);
        return j;
}

static const char *str_at(const json_t *j, const char *a, const char *b)
{
        return json_string_value(json_object_get(json_object_get(j, a), b));
}

static void grace_from_option_spec_default(void **state)
{
        json_t *with = load("{\"spec\":{\"terminationGracePeriodSeconds\":7}}");
        json_t *without = load("{\"spec\":{}}");

        (void)state;
        assert_int_equal(xp_lifecycle_grace_seconds(with, true, 3), 3);
        assert_int_equal(xp_lifecycle_grace_seconds(with, true, 0), 0);
        assert_int_equal(xp_lifecycle_grace_seconds(with, true, -5), 1); /* as Kubernetes */
        assert_int_equal(xp_lifecycle_grace_seconds(with, false, 0), 7);
        assert_int_equal(xp_lifecycle_grace_seconds(without, false, 0),
                         XP_LIFECYCLE_DEFAULT_GRACE_S);
        json_decref(with);
        json_decref(without);
}

static void delete_plans(void **state)
{
        json_t *unbound = load("{\"metadata\":{},\"spec\":{}}");
        json_t *bound = load("{\"metadata\":{},\"spec\":{\"nodeName\":\"n1\"},"
                             "\"status\":{\"phase\":\"Running\"}}");
        json_t *done = load("{\"metadata\":{},\"spec\":{\"nodeName\":\"n1\"},"
                            "\"status\":{\"phase\":\"Succeeded\"}}");
        int64_t deadline = -1;
        char when[XP_RFC3339_MAX];

        (void)state;
        assert_int_equal(xp_lifecycle_delete_plan(unbound, 30, NOW, &deadline),
                         XP_LIFECYCLE_DELETE_REMOVE);
        assert_int_equal(xp_lifecycle_delete_plan(done, 30, NOW, &deadline),
                         XP_LIFECYCLE_DELETE_REMOVE);
        assert_int_equal(xp_lifecycle_delete_plan(bound, 0, NOW, &deadline),
                         XP_LIFECYCLE_DELETE_REMOVE);
        assert_int_equal(deadline, -1); /* untouched unless marked */
        assert_int_equal(xp_lifecycle_delete_plan(bound, 30, NOW, &deadline),
                         XP_LIFECYCLE_DELETE_MARK);
        assert_int_equal(deadline, NOW + 30);

        assert_int_equal(xp_lifecycle_mark_deleted(bound, deadline, 30), 0);
        xp_time_format_rfc3339(NOW + 30, when);
        assert_string_equal(str_at(bound, "metadata", "deletionTimestamp"), when);
        assert_int_equal(json_integer_value(json_object_get(json_object_get(bound, "metadata"),
                                                            "deletionGracePeriodSeconds")),
                         30);
        /* a later, longer DELETE keeps the deadline; a shorter one brings it forward */
        assert_int_equal(xp_lifecycle_delete_plan(bound, 60, NOW + 1, &deadline),
                         XP_LIFECYCLE_DELETE_KEEP);
        assert_int_equal(xp_lifecycle_delete_plan(bound, 29, NOW + 1, &deadline),
                         XP_LIFECYCLE_DELETE_KEEP);
        assert_int_equal(xp_lifecycle_delete_plan(bound, 5, NOW + 1, &deadline),
                         XP_LIFECYCLE_DELETE_MARK);
        assert_int_equal(deadline, NOW + 6);
        /* terminating, then grace 0 (the agent's final DELETE): removed */
        assert_int_equal(xp_lifecycle_delete_plan(bound, 0, NOW + 2, &deadline),
                         XP_LIFECYCLE_DELETE_REMOVE);
        json_decref(unbound);
        json_decref(bound);
        json_decref(done);
}

static void eviction_by_toleration(void **state)
{
        const int64_t def = 300000;
        struct {
                const char *tolerations;
                int64_t want;
        } cases[] = {
            {"[]", def},
            {"[{\"key\":\"node.kubernetes.io/unreachable\",\"operator\":\"Exists\","
             "\"effect\":\"NoExecute\",\"tolerationSeconds\":60}]",
             60000},
            {"[{\"key\":\"node.kubernetes.io/unreachable\",\"operator\":\"Exists\","
             "\"effect\":\"NoExecute\"}]",
             -1},
            {"[{\"operator\":\"Exists\"}]", -1}, /* tolerates everything */
            {"[{\"key\":\"node.kubernetes.io/unreachable\",\"operator\":\"Exists\","
             "\"effect\":\"NoSchedule\"}]",
             def},
            {"[{\"key\":\"node.kubernetes.io/not-ready\",\"operator\":\"Exists\","
             "\"tolerationSeconds\":5}]",
             def},
            {"[{\"key\":\"node.kubernetes.io/unreachable\",\"value\":\"x\","
             "\"tolerationSeconds\":5}]",
             def}, /* Equal with a value the taint lacks */
            {"[{\"key\":\"node.kubernetes.io/unreachable\",\"operator\":\"Exists\","
             "\"tolerationSeconds\":-3}]",
             0},
            {"[{\"key\":\"node.kubernetes.io/unreachable\",\"operator\":\"Exists\","
             "\"tolerationSeconds\":10},{\"operator\":\"Exists\",\"effect\":\"NoExecute\","
             "\"tolerationSeconds\":20}]",
             20000}, /* the longest wins */
        };

        (void)state;
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
                char text[1024];
                json_t *pod;

                snprintf(
                    text, sizeof text, "{\"spec\":{\"tolerations\":%s}}", cases[i].tolerations);
                pod = load(text);
                if (xp_lifecycle_eviction_ms(pod, def) != cases[i].want)
                        fail_msg("case %zu (%s): %lld, expected %lld",
                                 i,
                                 cases[i].tolerations,
                                 (long long)xp_lifecycle_eviction_ms(pod, def),
                                 (long long)cases[i].want);
                json_decref(pod);
        }
}

static void node_lost_and_back(void **state)
{
        json_t *node = load(
            "{\"metadata\":{\"name\":\"n1\"},\"spec\":{\"taints\":[{\"key\":\"gpu\",\"effect\":"
            "\"NoSchedule\"}]},\"status\":{\"conditions\":[{\"type\":\"MemoryPressure\","
            "\"status\":\"False\"},{\"type\":\"Ready\",\"status\":\"True\",\"reason\":"
            "\"AgentReady\",\"lastHeartbeatTime\":\"2027-01-15T07:59:00Z\","
            "\"lastTransitionTime\":\"2027-01-01T00:00:00Z\"}]}}");
        json_t *ready, *taints;

        (void)state;
        assert_true(xp_lifecycle_node_ready(node));
        assert_false(xp_lifecycle_node_tainted(node));
        assert_int_equal(xp_lifecycle_node_mark_lost(node, "2027-01-15T08:00:00Z"), 1);
        ready = json_array_get(json_object_get(json_object_get(node, "status"), "conditions"), 1);
        assert_string_equal(json_string_value(json_object_get(ready, "status")), "Unknown");
        assert_string_equal(json_string_value(json_object_get(ready, "reason")),
                            "NodeStatusUnknown");
        assert_string_equal(json_string_value(json_object_get(ready, "message")),
                            XP_LIFECYCLE_NODE_LOST_MESSAGE);
        assert_string_equal(json_string_value(json_object_get(ready, "lastHeartbeatTime")),
                            "2027-01-15T07:59:00Z");
        assert_string_equal(json_string_value(json_object_get(ready, "lastTransitionTime")),
                            "2027-01-15T08:00:00Z");
        assert_false(xp_lifecycle_node_ready(node));
        assert_true(xp_lifecycle_node_tainted(node));
        taints = json_object_get(json_object_get(node, "spec"), "taints");
        assert_int_equal(json_array_size(taints), 2);
        /* again: nothing to write */
        assert_int_equal(xp_lifecycle_node_mark_lost(node, "2027-01-15T08:00:05Z"), 0);
        /* the taint stays until the agent reports Ready */
        assert_int_equal(xp_lifecycle_node_mark_back(node), 0);
        json_object_set_new(ready, "status", json_string("True"));
        assert_int_equal(xp_lifecycle_node_mark_back(node), 1);
        taints = json_object_get(json_object_get(node, "spec"), "taints");
        assert_int_equal(json_array_size(taints), 1);
        assert_string_equal(json_string_value(json_object_get(json_array_get(taints, 0), "key")),
                            "gpu");
        assert_false(xp_lifecycle_node_tainted(node));
        assert_int_equal(xp_lifecycle_node_mark_back(node), 0);
        json_decref(node);
}

static void disk_pressure_taints_by_condition(void **state)
{
        json_t *node =
            load("{\"spec\":{\"taints\":[{\"key\":\"gpu\",\"effect\":\"NoSchedule\"}]},"
                 "\"status\":{\"conditions\":[{\"type\":\"DiskPressure\",\"status\":\"False\"}]}}");
        json_t *cond =
            json_array_get(json_object_get(json_object_get(node, "status"), "conditions"), 0);
        json_t *taints;

        (void)state;
        assert_int_equal(xp_lifecycle_node_sync_disk_taint(node), 0);
        json_object_set_new(cond, "status", json_string("True"));
        assert_true(xp_lifecycle_node_disk_pressure(node));
        assert_int_equal(xp_lifecycle_node_sync_disk_taint(node), 1);
        taints = json_object_get(json_object_get(node, "spec"), "taints");
        assert_int_equal(json_array_size(taints), 2);
        assert_string_equal(json_string_value(json_object_get(json_array_get(taints, 1), "key")),
                            XP_LIFECYCLE_DISK_PRESSURE_TAINT);
        assert_string_equal(json_string_value(json_object_get(json_array_get(taints, 1), "effect")),
                            "NoSchedule");
        assert_true(xp_lifecycle_node_disk_tainted(node));
        assert_int_equal(xp_lifecycle_node_sync_disk_taint(node), 0);
        /* the pressure gone: the taint goes, the operator's stays */
        json_object_set_new(cond, "status", json_string("False"));
        assert_int_equal(xp_lifecycle_node_sync_disk_taint(node), 1);
        taints = json_object_get(json_object_get(node, "spec"), "taints");
        assert_int_equal(json_array_size(taints), 1);
        assert_string_equal(json_string_value(json_object_get(json_array_get(taints, 0), "key")),
                            "gpu");
        assert_false(xp_lifecycle_node_disk_tainted(node));
        json_decref(node);
}

static void pod_not_ready_then_lost(void **state)
{
        json_t *pod = load("{\"metadata\":{\"name\":\"p\"},\"spec\":{\"nodeName\":\"n1\"},"
                           "\"status\":{\"phase\":\"Running\",\"conditions\":[{\"type\":"
                           "\"Ready\",\"status\":\"True\"}]}}");
        const json_t *ready;

        (void)state;
        assert_true(xp_lifecycle_pod_active(pod));
        assert_int_equal(xp_lifecycle_pod_mark_not_ready(pod, "2027-01-15T08:00:00Z"), 1);
        ready = json_array_get(json_object_get(json_object_get(pod, "status"), "conditions"), 0);
        assert_string_equal(json_string_value(json_object_get(ready, "status")), "False");
        assert_int_equal(xp_lifecycle_pod_mark_not_ready(pod, "2027-01-15T08:00:01Z"), 0);
        assert_int_equal(
            xp_lifecycle_pod_mark_lost(pod, "n1", "2027-01-15T07:59:00Z", "2027-01-15T08:05:00Z"),
            1);
        assert_string_equal(str_at(pod, "status", "phase"), "Failed");
        assert_string_equal(str_at(pod, "status", "reason"), "NodeLost");
        assert_string_equal(str_at(pod, "status", "message"),
                            "Node n1 which was running pod p is unresponsive since "
                            "2027-01-15T07:59:00Z");
        assert_false(xp_lifecycle_pod_active(pod));
        assert_int_equal(
            xp_lifecycle_pod_mark_lost(pod, "n1", "2027-01-15T07:59:00Z", "2027-01-15T08:06:00Z"),
            0);
        json_decref(pod);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(grace_from_option_spec_default),
            cmocka_unit_test(delete_plans),
            cmocka_unit_test(eviction_by_toleration),
            cmocka_unit_test(node_lost_and_back),
            cmocka_unit_test(disk_pressure_taints_by_condition),
            cmocka_unit_test(pod_not_ready_then_lost),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
