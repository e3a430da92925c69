/* SPDX-License-Identifier: Apache-2.0 */
/* ResourceQuota and LimitRange admission's decisions (src/registry/quota.c, limitrange.c). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "xpool/doc.h"
#include "xpool/registry.h"
#include "xpool/resource.h"

static json_t *js(const char *text)
{
        char *copy = strdup(text);
        json_error_t error;
        json_t *json;

        for (char *p = copy; *p; p++)
                if (*p == '\'')
                        *p = '"';
        json = json_loads(copy, JSON_DECODE_ANY, &error);
        if (!json)
                fail_msg("bad JSON in the test: %s: %s", error.text, copy);
        free(copy);
        return json;
}

#define GPU_POD(name, phase)                                                                         \
        "{'metadata': {'name': '" name "'}, 'spec': {'containers': [{'name': 'c', 'resources':"      \
        " {'requests': {'nvidia.com/gpu': '1', 'cpu': '500m'}, 'limits': {'nvidia.com/gpu': 1}}}]}," \
        " 'status': {'phase': '" phase "'}}"

static void quota_counts_and_refuses(void **state)
{
        json_t *quotas = js(
            "[{'metadata': {'name': 'big'}, 'spec': {'hard': {'pods': '10'}}},"
            " {'metadata': {'name': 'gpu'}, 'spec': {'hard': {'requests.nvidia.com/gpu': '2', 'requests.cpu': '4'}}}]");
        json_t *pods = js("[" GPU_POD("a", "Running") ", " GPU_POD("b", "Pending") ", " GPU_POD(
            "done", "Succeeded") "]");
        json_t *pod = js(GPU_POD("c", ""));
        struct xp_resource_list usage = {0};
        struct xp_error err = {0};

        (void)state;
        assert_int_equal(xp_registry_pod_usage(pod, &usage), 0);
        assert_non_null(xp_resource_list_get(&usage, "requests.nvidia.com/gpu"));
        assert_non_null(xp_resource_list_get(&usage, "cpu"));
        assert_non_null(xp_resource_list_get(&usage, "limits.nvidia.com/gpu"));
        assert_non_null(xp_resource_list_get(&usage, "count/pods"));
        xp_resource_list_done(&usage);

        assert_int_equal(xp_registry_quota_check(quotas, pods, pod, &err), -EDQUOT);
        assert_string_equal(
            err.msg,
            "exceeded quota: gpu, requested: requests.nvidia.com/gpu=1, used: requests.nvidia.com/gpu=2, limited: requests.nvidia.com/gpu=2");
        /* a finished pod frees what it held */
        json_object_set_new(
            json_object_get(json_array_get(pods, 1), "status"), "phase", json_string("Failed"));
        assert_int_equal(xp_registry_quota_check(quotas, pods, pod, &err), 0);
        json_decref(pod);
        json_decref(pods);
        json_decref(quotas);
}

static void limitrange_defaults_and_bounds(void **state)
{
        json_t *ranges = js(
            "[{'spec': {'limits': [{'type': 'Container', 'default': {'cpu': '500m', 'memory': '256Mi'},"
            " 'defaultRequest': {'cpu': '100m'}, 'max': {'cpu': '1'}, 'min': {'memory': '64Mi'}}]}}]");
        json_t *pod = js(
            "{'spec': {'containers': [{'name': 'a'}, {'name': 'b', 'resources': {'limits': {'cpu': '800m'}}}]}}");
        struct xp_error err = {0};

        (void)state;
        assert_int_equal(xp_registry_limitrange_apply(ranges, pod, &err), 0);
        assert_string_equal(xp_json_str_at(json_array_get(xp_json_at(pod, "spec.containers"), 0),
                                           "resources.requests.cpu",
                                           ""),
                            "100m");
        assert_string_equal(xp_json_str_at(json_array_get(xp_json_at(pod, "spec.containers"), 0),
                                           "resources.requests.memory",
                                           ""),
                            "256Mi");
        assert_string_equal(xp_json_str_at(json_array_get(xp_json_at(pod, "spec.containers"), 0),
                                           "resources.limits.cpu",
                                           ""),
                            "500m");
        assert_string_equal(xp_json_str_at(json_array_get(xp_json_at(pod, "spec.containers"), 1),
                                           "resources.limits.cpu",
                                           ""),
                            "800m");
        json_decref(pod);
        pod =
            js("{'spec': {'containers': [{'name': 'a', 'resources': {'limits': {'cpu': '2'}}}]}}");
        assert_int_equal(xp_registry_limitrange_apply(ranges, pod, &err), -EPERM);
        assert_string_equal(err.msg, "maximum cpu usage per Container is 1, but limit is 2");
        json_decref(pod);
        pod = js(
            "{'spec': {'containers': [{'name': 'a', 'resources': {'requests': {'memory': '1Mi'}}}]}}");
        assert_int_equal(xp_registry_limitrange_apply(ranges, pod, &err), -EPERM);
        assert_string_equal(err.msg,
                            "minimum memory usage per Container is 64Mi, but request is 1Mi");
        json_decref(pod);
        json_decref(ranges);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(quota_counts_and_refuses),
            cmocka_unit_test(limitrange_defaults_and_bounds),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
