/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The conditions of a status by type (xpool/condition.h), which the agent's final status, the
 * registry's node and pod rewrites and the Deployment controller share: the first of its type,
 * its index, and nothing where the status, its list or the type is missing or not what it says.
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

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_found_by_type),
            cmocka_unit_test(test_absent),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
