/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The conditions of a status by type (xpool/condition.h), which the agent's final status, the
 * registry's node and pod rewrites and the Deployment controller share: the first of its type,
 * its index, and nothing where the status, its list or the type is missing or not what it says.
 * And a node's status write of a pod, which keeps the conditions the node does not own and the
 * write lacks (DisruptionTarget from an eviction the agent's copy of the pod predates), while the
 * node's own conditions and those it wrote are as it wrote them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "xpool/condition.h"

static json_t *status_of(const char *text)
{
        json_t *status = json_loads(text, 0, NULL);

        assert_non_null(status);
        return status;
}

static void test_found_by_type(void **state)
{
        json_t *status =
            status_of("{\"conditions\": [{\"type\": \"Ready\", \"status\": \"True\"},"
                      " {\"status\": \"False\"}, {\"type\": 7},"
                      " {\"type\": \"DisruptionTarget\", \"reason\": \"EvictionByEvictionAPI\"},"
                      " {\"type\": \"Ready\", \"status\": \"False\"}]}");
        const json_t *c;

        (void)state;
        assert_int_equal(xp_condition_index(status, "Ready"), 0);
        assert_int_equal(xp_condition_index(status, "DisruptionTarget"), 3);
        c = xp_condition_get(status, "DisruptionTarget");
        assert_ptr_equal(c, json_array_get(json_object_get(status, "conditions"), 3));
        /* the first of a type, as Kubernetes' GetPodCondition reads a list it keeps unique */
        assert_string_equal(
            json_string_value(json_object_get(xp_condition_get(status, "Ready"), "status")),
            "True");
        json_decref(status);
}

static void test_absent(void **state)
{
        json_t *status = status_of("{\"conditions\": [{\"type\": \"Ready\"}, \"Ready\", null]}");
        json_t *no_list = status_of("{\"conditions\": {\"type\": \"Ready\"}}");
        json_t *empty = status_of("{}");

        (void)state;
        assert_int_equal(xp_condition_index(status, "Initialized"), -1);
        assert_null(xp_condition_get(status, "Initialized"));
        assert_null(xp_condition_get(status, "ready")); /* types are case-sensitive */
        assert_null(xp_condition_get(status, NULL));
        assert_null(xp_condition_get(no_list, "Ready"));
        assert_int_equal(xp_condition_index(empty, "Ready"), -1);
        assert_null(xp_condition_get(NULL, "Ready"));
        json_decref(status);
        json_decref(no_list);
        json_decref(empty);
}

static const char *type_at(const json_t *status, size_t i)
{
        return json_string_value(
            json_object_get(json_array_get(json_object_get(status, "conditions"), i), "type"));
}

/* The stored status of an evicted pod with a readiness gate, and the agent's next write. */
#define STORED                                                                                           \
        "{\"phase\": \"Running\", \"conditions\": ["                                                     \
        "{\"type\": \"PodScheduled\", \"status\": \"True\"},"                                            \
        "{\"type\": \"Ready\", \"status\": \"True\"},"                                                   \
        "{\"type\": \"DisruptionTarget\", \"status\": \"True\", \"reason\": \"EvictionByEvictionAPI\"}," \
        "{\"status\": \"True\"},"                                                                        \
        "{\"type\": \"example.com/gate\", \"status\": \"True\"}]}"

static void test_node_write_keeps_others(void **state)
{
        json_t *was = status_of(STORED);
        json_t *status = status_of("{\"phase\": \"Failed\", \"conditions\": ["
                                   "{\"type\": \"Ready\", \"status\": \"False\"},"
                                   "{\"type\": \"ContainersReady\", \"status\": \"False\"}]}");
        json_t *kept = NULL;

        (void)state;
        assert_int_equal(xp_pod_status_keep_conditions(status, was, &kept), 1);
        /* the node's own as it wrote them, then the others in their stored order */
        assert_int_equal(json_array_size(json_object_get(kept, "conditions")), 5);
        assert_string_equal(type_at(kept, 0), "Ready");
        assert_string_equal(
            json_string_value(json_object_get(xp_condition_get(kept, "Ready"), "status")), "False");
        assert_string_equal(type_at(kept, 1), "ContainersReady");
        assert_string_equal(type_at(kept, 2), "PodScheduled");
        assert_string_equal(type_at(kept, 3), "DisruptionTarget");
        assert_string_equal(type_at(kept, 4), "example.com/gate");
        assert_string_equal(json_string_value(json_object_get(
                                xp_condition_get(kept, "DisruptionTarget"), "reason")),
                            "EvictionByEvictionAPI");
        assert_string_equal(json_string_value(json_object_get(kept, "phase")), "Failed");
        /* the write itself and the stored status are as they were */
        assert_int_equal(json_array_size(json_object_get(status, "conditions")), 2);
        assert_int_equal(json_array_size(json_object_get(was, "conditions")), 5);
        assert_ptr_not_equal(xp_condition_get(kept, "DisruptionTarget"),
                             xp_condition_get(was, "DisruptionTarget"));
        json_decref(kept);
        json_decref(status);
        json_decref(was);
}

/* A stale copy's values of others' types lose to the stored ones; the write's own stand. */
static void test_node_write_stale_others_lose(void **state)
{
        json_t *was = status_of(STORED);
        json_t *status = status_of("{\"phase\": \"Running\", \"conditions\": ["
                                   "{\"type\": \"DisruptionTarget\", \"status\": \"True\","
                                   " \"reason\": \"TerminationByKubelet\"},"
                                   "{\"type\": \"Ready\", \"status\": \"True\"},"
                                   "{\"type\": \"example.com/gate\", \"status\": \"False\"},"
                                   "{\"type\": \"example.com/gone\", \"status\": \"True\"}]}");
        json_t *kept = NULL;

        (void)state;
        assert_int_equal(xp_pod_status_keep_conditions(status, was, &kept), 1);
        assert_int_equal(json_array_size(json_object_get(kept, "conditions")), 4);
        assert_string_equal(type_at(kept, 0), "Ready");
        assert_string_equal(type_at(kept, 1), "PodScheduled");
        assert_string_equal(type_at(kept, 2), "DisruptionTarget");
        assert_string_equal(type_at(kept, 3), "example.com/gate");
        assert_string_equal(json_string_value(json_object_get(
                                xp_condition_get(kept, "DisruptionTarget"), "reason")),
                            "EvictionByEvictionAPI");
        assert_string_equal(json_string_value(json_object_get(
                                xp_condition_get(kept, "example.com/gate"), "status")),
                            "True");
        assert_null(xp_condition_get(kept, "example.com/gone"));
        json_decref(kept);
        json_decref(status);
        json_decref(was);
}

/* The node's DisruptionTarget as it ends the pod replaces the stored one; later, it does not. */
static void test_node_disruption_as_it_ends(void **state)
{
        json_t *was = status_of(STORED);
        json_t *ending =
            status_of("{\"phase\": \"Failed\", \"conditions\": ["
                      "{\"type\": \"DisruptionTarget\", \"status\": \"True\","
                      " \"reason\": \"TerminationByKubelet\"},"
                      "{\"type\": \"xpool.io/DeviceUnhealthy\", \"status\": \"True\"}]}");
        json_t *ended = NULL, *kept = NULL;

        (void)state;
        assert_int_equal(xp_pod_status_keep_conditions(ending, was, &kept), 1);
        assert_string_equal(json_string_value(json_object_get(
                                xp_condition_get(kept, "DisruptionTarget"), "reason")),
                            "TerminationByKubelet");
        /* the agent's device condition lands beside it */
        assert_string_equal(type_at(kept, 0), "xpool.io/DeviceUnhealthy");
        assert_int_equal(json_array_size(json_object_get(kept, "conditions")), 4);
        /* the stored status is terminal now: a later write's value does not replace it */
        json_decref(ended);
        ended = status_of("{\"phase\": \"Failed\", \"conditions\": ["
                          "{\"type\": \"DisruptionTarget\", \"status\": \"False\"}]}");
        json_t *later = NULL;
        assert_int_equal(xp_pod_status_keep_conditions(ended, kept, &later), 1);
        assert_string_equal(json_string_value(json_object_get(
                                xp_condition_get(later, "DisruptionTarget"), "status")),
                            "True");
        json_decref(later);
        json_decref(kept);
        json_decref(ended);
        json_decref(ending);
        json_decref(was);
}

static void test_node_write_stands(void **state)
{
        json_t *was = status_of("{\"phase\": \"Running\", \"conditions\": ["
                                "{\"type\": \"Ready\", \"status\": \"True\"},"
                                "{\"type\": \"PodScheduled\", \"status\": \"True\"}]}");
        json_t *status = status_of("{\"conditions\": ["
                                   "{\"type\": \"Ready\", \"status\": \"False\"},"
                                   "{\"type\": \"PodScheduled\", \"status\": \"True\"}]}");
        json_t *no_conditions = status_of("{\"phase\": \"Running\"}"), *kept = NULL;
        json_t *stored_none = status_of("{\"phase\": \"Running\"}");
        json_t *own_only =
            status_of("{\"conditions\": [{\"type\": \"Ready\", \"status\": \"True\"}]}");

        (void)state;
        assert_int_equal(xp_pod_status_keep_conditions(status, was, &kept), 0);
        assert_null(kept);
        assert_int_equal(xp_pod_status_keep_conditions(own_only, stored_none, &kept), 0);
        assert_int_equal(xp_pod_status_keep_conditions(no_conditions, stored_none, &kept), 0);
        assert_int_equal(xp_pod_status_keep_conditions(NULL, was, &kept), 0);
        assert_null(kept);
        /* a write without a list gets one of what it must keep */
        assert_int_equal(xp_pod_status_keep_conditions(no_conditions, was, &kept), 1);
        assert_int_equal(json_array_size(json_object_get(kept, "conditions")), 1);
        assert_string_equal(type_at(kept, 0), "PodScheduled");
        assert_null(json_object_get(no_conditions, "conditions"));
        assert_true(xp_pod_condition_by_node("PodReadyToStartContainers"));
        assert_true(xp_pod_condition_by_node("ContainersReady"));
        assert_false(xp_pod_condition_by_node("DisruptionTarget"));
        assert_false(xp_pod_condition_by_node(NULL));
        json_decref(kept);
        json_decref(no_conditions);
        json_decref(stored_none);
        json_decref(own_only);
        json_decref(status);
        json_decref(was);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_found_by_type),
            cmocka_unit_test(test_absent),
            cmocka_unit_test(test_node_write_keeps_others),
            cmocka_unit_test(test_node_write_stale_others_lose),
            cmocka_unit_test(test_node_disruption_as_it_ends),
            cmocka_unit_test(test_node_write_stands),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
