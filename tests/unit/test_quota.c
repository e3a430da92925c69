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
#include "xpool/kind.h"
#include "xpool/quantity.h"
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

/* A pod of priorityClassName pc (none when ""), BestEffort unless cpu, activeDeadlineSeconds
 * unless deadline < 0. */
static json_t *scoped_pod(const char *pc, const char *cpu, int deadline)
{
        json_t *pod = js("{'metadata': {'name': 'p'}, 'spec': {'containers': [{'name': 'c'}]},"
                         " 'status': {'phase': 'Running'}}");
        json_t *spec = json_object_get(pod, "spec");

        if (*pc)
                json_object_set_new(spec, "priorityClassName", json_string(pc));
        if (cpu)
                json_object_set_new(json_array_get(json_object_get(spec, "containers"), 0),
                                    "resources",
                                    json_pack("{s:{s:s}}", "requests", "cpu", cpu));
        if (deadline >= 0)
                json_object_set_new(spec, "activeDeadlineSeconds", json_integer(deadline));
        return pod;
}

static void quota_scopes(void **state)
{
        json_t *terminating = js("{'spec': {'scopes': ['Terminating']}}");
        json_t *not_terminating = js("{'spec': {'scopes': ['NotTerminating']}}");
        json_t *best_effort = js("{'spec': {'scopes': ['BestEffort']}}");
        json_t *not_best_effort = js("{'spec': {'scopes': ['NotBestEffort', 'NotTerminating']}}");
        json_t *has_class = js("{'spec': {'scopes': ['PriorityClass']}}");
        json_t *high = js("{'spec': {'scopeSelector': {'matchExpressions': [{'scopeName':"
                          " 'PriorityClass', 'operator': 'In', 'values': ['high']}]}}}");
        json_t *not_high = js("{'spec': {'scopeSelector': {'matchExpressions': [{'scopeName':"
                              " 'PriorityClass', 'operator': 'NotIn', 'values': ['high']}]}}}");
        json_t *plain = scoped_pod("", NULL, -1), *batch = scoped_pod("high", "1", 60);

        (void)state;
        assert_false(xp_registry_quota_matches(terminating, plain));
        assert_true(xp_registry_quota_matches(terminating, batch));
        assert_true(xp_registry_quota_matches(not_terminating, plain));
        assert_false(xp_registry_quota_matches(not_terminating, batch));
        assert_true(xp_registry_quota_matches(best_effort, plain));
        assert_false(xp_registry_quota_matches(best_effort, batch));
        assert_false(xp_registry_quota_matches(not_best_effort, plain));
        assert_false(xp_registry_quota_matches(not_best_effort, batch)); /* both must hold */
        assert_false(xp_registry_quota_matches(has_class, plain));
        assert_true(xp_registry_quota_matches(has_class, batch));
        assert_false(xp_registry_quota_matches(high, plain));
        assert_true(xp_registry_quota_matches(high, batch));
        assert_true(xp_registry_quota_matches(not_high, plain));
        assert_false(xp_registry_quota_matches(not_high, batch));
        json_decref(terminating);
        json_decref(not_terminating);
        json_decref(best_effort);
        json_decref(not_best_effort);
        json_decref(has_class);
        json_decref(high);
        json_decref(not_high);
        json_decref(plain);
        json_decref(batch);
}

/* A scoped quota counts and refuses only the pods its scopes take in. */
static void scoped_quota_admission(void **state)
{
        json_t *quotas = js("[{'metadata': {'name': 'high'}, 'spec': {'hard': {'pods': '1'},"
                            " 'scopeSelector': {'matchExpressions': [{'scopeName': 'PriorityClass',"
                            " 'operator': 'In', 'values': ['high']}]}}}]");
        json_t *pods = json_pack("[o, o]", scoped_pod("", NULL, -1), scoped_pod("high", NULL, -1));
        json_t *low = scoped_pod("low", NULL, -1), *high = scoped_pod("high", NULL, -1);
        struct xp_resource_list used = {0};
        struct xp_error err = {0};

        (void)state;
        assert_int_equal(xp_registry_quota_check(quotas, pods, low, &err), 0);
        assert_int_equal(xp_registry_quota_check(quotas, pods, high, &err), -EDQUOT);
        assert_string_equal(
            err.msg, "exceeded quota: high, requested: pods=1, used: pods=1, limited: pods=1");
        /* what the quota status controller writes as used: the one high pod */
        assert_int_equal(xp_registry_quota_usage(json_array_get(quotas, 0), pods, &used), 0);
        assert_int_equal(xp_quantity_cmp(xp_resource_list_get(&used, "pods"),
                                         xp_resource_list_get(&used, "count/pods")),
                         0);
        char text[XP_QUANTITY_STRING_MAX];
        assert_string_equal(xp_quantity_format(xp_resource_list_get(&used, "pods"), text), "1");
        xp_resource_list_done(&used);
        json_decref(low);
        json_decref(high);
        json_decref(pods);
        json_decref(quotas);
}

/* A ResourceQuota's scopes are refused as Kubernetes refuses them (kind_quota.c). */
static void scope_validation(void **state)
{
        static const struct {
                const char *spec, *message;
        } cases[] = {
            {"'hard': {'pods': '1'}, 'scopes': ['Forever']",
             "spec.scopes: Invalid value: []core.ResourceQuotaScope{\"Forever\"}: unsupported scope"},
            {"'hard': {'pods': '1'}, 'scopes': ['BestEffort', 'NotBestEffort']",
             "spec.scopes: Invalid value: []core.ResourceQuotaScope{\"BestEffort\", \"NotBestEffort\"}:"
             " conflicting scopes"},
            /* BestEffort limits pods only; the others pods and cpu/memory, not storage */
            {"'hard': {'pods': '1', 'requests.cpu': '1'}, 'scopes': ['BestEffort']",
             "spec.scopes: Invalid value: []core.ResourceQuotaScope{\"BestEffort\"}: unsupported scope"
             " applied to resource"},
            {"'hard': {'requests.storage': '1Gi'}, 'scopes': ['NotBestEffort']",
             "spec.scopes: Invalid value: []core.ResourceQuotaScope{\"NotBestEffort\"}: unsupported"
             " scope applied to resource"},
            {"'hard': {'configmaps': '1'}, 'scopeSelector': {'matchExpressions': [{'scopeName':"
             " 'PriorityClass', 'operator': 'In', 'values': ['high']}]}",
             "spec.scopeSelector.matchExpressions: Invalid value: core.ScopeSelector{MatchExpressions:"
             "[]core.ScopedResourceSelectorRequirement{core.ScopedResourceSelectorRequirement{"
             "ScopeName:\"PriorityClass\", Operator:\"In\", Values:[]string{\"high\"}}}}: unsupported"
             " scope applied to resource"},
            {"'hard': {'pods': '1'}, 'scopeSelector': {'matchExpressions': [{'scopeName': 'Terminating',"
             " 'operator': 'In', 'values': ['x']}]}",
             "spec.scopeSelector.matchExpressions.operator: Invalid value: \"In\": must be 'Exist' when"
             " scope is any of ResourceQuotaScopeTerminating, ResourceQuotaScopeNotTerminating,"
             " ResourceQuotaScopeBestEffort, ResourceQuotaScopeNotBestEffort or"
             " ResourceQuotaScopeCrossNamespacePodAffinity"},
            {"'hard': {'pods': '1'}, 'scopeSelector': {'matchExpressions': [{'scopeName':"
             " 'PriorityClass', 'operator': 'In'}]}",
             "spec.scopeSelector.matchExpressions.values: Required value: must be at least one value"},
            {"'hard': {'pods': '1'}, 'scopeSelector': {'matchExpressions': [{'scopeName':"
             " 'PriorityClass', 'operator': 'Exists', 'values': ['x']}]}",
             "spec.scopeSelector.matchExpressions.values: Invalid value: []string{\"x\"}: must be no"
             " value when `operator` is 'Exist' or 'DoesNotExist' for scope selector"},
            {"'hard': {'pods': '1'}, 'scopeSelector': {'matchExpressions': [{'scopeName':"
             " 'PriorityClass', 'operator': 'Has', 'values': ['x']}]}",
             "spec.scopeSelector.matchExpressions.operator: Invalid value: \"Has\": not a valid"
             " selector operator"},
            {"'hard': {'pods': '1'}, 'scopeSelector': {'matchExpressions': [{'scopeName': 'Nope',"
             " 'operator': 'Exists'}]}",
             "spec.scopeSelector.matchExpressions.scopeName: Invalid value: \"Nope\": unsupported scope"},
            {"'hard': {'pods': '1'}, 'scopeSelector': {'matchExpressions': [{'scopeName':"
             " 'Terminating', 'operator': 'Exists'}, {'scopeName': 'NotTerminating', 'operator':"
             " 'Exists'}]}",
             "spec.scopeSelector.matchExpressions: Invalid value: []core.ResourceQuotaScope(nil):"
             " conflicting scopes"},
        };

        (void)state;
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                char text[768];
                snprintf(text,
                         sizeof(text),
                         "{'apiVersion': 'v1', 'kind': 'ResourceQuota', 'metadata': {'name': 'q',"
                         " 'namespace': 'default'}, 'spec': {%s}}",
                         cases[i].spec);
                json_t *json = js(text);
                struct xp_doc *doc = NULL;
                struct xp_error err = {0};
                int r = xp_doc_from_json(&xp_kind_resourcequota, json, NULL, 0, &doc, &err);
                if (r != -EINVAL || !strstr(err.msg, cases[i].message))
                        fail_msg(
                            "%s: got %d \"%s\", want \"%s\"", text, r, err.msg, cases[i].message);
                json_decref(json);
        }
        /* what Kubernetes takes */
        json_t *json =
            js("{'apiVersion': 'v1', 'kind': 'ResourceQuota', 'metadata': {'name': 'q',"
               " 'namespace': 'default'}, 'spec': {'hard': {'pods': '1', 'limits.memory': '1Gi',"
               " 'requests.nvidia.com/gpu': '2', 'count/jobs.batch': '1'}, 'scopes':"
               " ['NotBestEffort', 'Terminating'], 'scopeSelector': {'matchExpressions':"
               " [{'scopeName': 'PriorityClass', 'operator': 'NotIn', 'values': ['low']}]}}}");
        struct xp_doc *doc = NULL;
        struct xp_error err = {0};
        if (xp_doc_from_json(&xp_kind_resourcequota, json, NULL, 0, &doc, &err) < 0)
                fail_msg("%s", err.msg);
        xp_doc_free(doc);
        json_decref(json);
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
            cmocka_unit_test(quota_scopes),
            cmocka_unit_test(scoped_quota_admission),
            cmocka_unit_test(scope_validation),
            cmocka_unit_test(limitrange_defaults_and_bounds),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
