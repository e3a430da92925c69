/* SPDX-License-Identifier: Apache-2.0 */
/* The scheduling kinds' hooks: PriorityClass and Queue defaults, validation and tables; the
 * gang kinds' validation and Workload's conversion between v1alpha2 and v1alpha1. */
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
#include "xpool/table.h"

/* Decodes text (single quotes for double) as kind: 0 with *ret, or the error's message. */
/* JSON written with single quotes, for readability. */
static json_t *js(const char *text)
{
        char *copy = strdup(text);
        json_t *json;

        for (char *p = copy; *p; p++)
                if (*p == '\'')
                        *p = '"';
        json = json_loads(copy, 0, NULL);
        if (!json)
                fail_msg("bad JSON in the test: %s", copy);
        free(copy);
        return json;
}

static int decode(const struct xp_kind *kind, const char *text, struct xp_doc **ret, char msg[256])
{
        struct xp_error err = {0};
        json_t *json = js(text);
        int r;

        r = xp_doc_from_json(kind, json, NULL, XP_DECODE_STRICT, ret, &err);
        snprintf(msg, 256, "%s", err.msg);
        json_decref(json);
        return r;
}

static void fails(const struct xp_kind *kind, const char *text, const char *message)
{
        struct xp_doc *doc = NULL;
        char msg[256];

        assert_int_equal(decode(kind, text, &doc, msg), -EINVAL);
        assert_string_equal(msg, message);
}

#define PC "'apiVersion':'scheduling.k8s.io/v1','kind':'PriorityClass','metadata':{'name':'high'}"
#define Q  "'apiVersion':'scheduling.xpool.io/v1alpha1','kind':'Queue','metadata':{'name':'team-a'}"

static void priorityclass(void **state)
{
        struct xp_doc *doc = NULL;
        char msg[256];

        (void)state;
        assert_int_equal(decode(&xp_kind_priorityclass, "{" PC ",'value':1000}", &doc, msg), 0);
        assert_string_equal(xp_json_str_at(doc->body, "preemptionPolicy", ""),
                            "PreemptLowerPriority");
        xp_doc_free(doc);
        fails(&xp_kind_priorityclass, "{" PC "}", "value: Required value");
        fails(
            &xp_kind_priorityclass,
            "{" PC ",'value':1000000001}",
            "value: Invalid value: 1000000001: maximum allowed value of a user defined priority is 1000000000");
        fails(
            &xp_kind_priorityclass,
            "{" PC ",'value':1,'preemptionPolicy':'Sometimes'}",
            "preemptionPolicy: Unsupported value: \"Sometimes\": supported values: \"Never\", \"PreemptLowerPriority\"");
        fails(
            &xp_kind_priorityclass,
            "{'apiVersion':'scheduling.k8s.io/v1','kind':'PriorityClass','metadata':{'name':'system-mine'},'value':1}",
            "metadata.name: Invalid value: \"system-mine\": priority class names with 'system-' prefix are reserved");
}

static void queue(void **state)
{
        struct xp_doc *doc = NULL;
        char msg[256];

        (void)state;
        assert_int_equal(
            decode(&xp_kind_queue,
                   "{" Q ",'spec':{'resources':{'nvidia.com/gpu':{'guaranteed':'8','limit':16}}}}",
                   &doc,
                   msg),
            0);
        assert_int_equal(xp_json_int_at(doc->body, "spec.weight", 0), 1);
        assert_true(xp_json_bool_at(doc->body, "spec.reclaimable", false));
        xp_doc_free(doc);
        fails(
            &xp_kind_queue,
            "{" Q ",'spec':{'resources':{'nvidia.com/gpu':{'guaranteed':'8','limit':'4'}}}}",
            "spec.resources[nvidia.com/gpu].limit: Invalid value: must be greater than or equal to the guaranteed quota");
        fails(
            &xp_kind_queue,
            "{" Q ",'spec':{'resources':{'nvidia.com/gpu':{'guaranteed':'-1'}}}}",
            "spec.resources[nvidia.com/gpu].guaranteed: Invalid value: \"-1\": must be greater than or equal to 0");
        fails(&xp_kind_queue,
              "{" Q ",'spec':{'weight':0}}",
              "spec.weight: Invalid value: must be a number greater than 0");
        fails(&xp_kind_queue,
              "{" Q ",'spec':{'parent':'team-a'}}",
              "spec.parent: Invalid value: \"team-a\": a queue cannot be its own parent");
        fails(
            &xp_kind_queue,
            "{" Q ",'spec':{'resources':{'gpu':{'guaranteed':'1'}}}}",
            "spec.resources[gpu]: Invalid value: \"gpu\": a name without a domain must be a standard resource (cpu, memory, ephemeral-storage, storage, pods, hugepages-<size>); extended resources need a domain, e.g. \"vendor.com/npu\"");
}

#define PG "'apiVersion':'scheduling.k8s.io/v1alpha2','kind':'PodGroup','metadata':{'name':'trio'}"

/* Kubernetes 1.36's PodGroup: one policy of two, a positive minCount, DNS-label template names. */
static void podgroup_v1alpha2(void **state)
{
        struct xp_doc *doc = NULL;
        char msg[256];

        (void)state;
        assert_int_equal(decode(&xp_kind_k8s_podgroup,
                                "{" PG ",'spec':{'schedulingPolicy':{'gang':{'minCount':3}},"
                                "'podGroupTemplateRef':{'workload':{'workloadName':'job',"
                                "'podGroupTemplateName':'workers'}}}}",
                                &doc,
                                msg),
                         0);
        assert_int_equal(xp_json_int_at(doc->body, "spec.schedulingPolicy.gang.minCount", 0), 3);
        xp_doc_free(doc);
        assert_int_equal(decode(&xp_kind_k8s_podgroup,
                                "{" PG ",'spec':{'schedulingPolicy':{'basic':{}}}}",
                                &doc,
                                msg),
                         0);
        xp_doc_free(doc);
        fails(&xp_kind_k8s_podgroup, "{" PG ",'spec':{}}", "spec.schedulingPolicy: Required value");
        fails(&xp_kind_k8s_podgroup,
              "{" PG ",'spec':{'schedulingPolicy':{}}}",
              "spec.schedulingPolicy: Invalid value: \"\": must specify one of: `basic`, `gang`");
        fails(
            &xp_kind_k8s_podgroup,
            "{" PG ",'spec':{'schedulingPolicy':{'basic':{},'gang':{'minCount':2}}}}",
            "spec.schedulingPolicy: Invalid value: \"\": must specify exactly one of: `basic`, `gang`");
        fails(&xp_kind_k8s_podgroup,
              "{" PG ",'spec':{'schedulingPolicy':{'gang':{}}}}",
              "spec.schedulingPolicy.gang.minCount: Required value");
        fails(
            &xp_kind_k8s_podgroup,
            "{" PG ",'spec':{'schedulingPolicy':{'gang':{'minCount':0}}}}",
            "spec.schedulingPolicy.gang.minCount: Invalid value: 0: must be greater than or equal to 1");
        fails(
            &xp_kind_k8s_podgroup,
            "{" PG ",'spec':{'schedulingPolicy':{'gang':{'minCount':10001}}}}",
            "spec.schedulingPolicy.gang.minCount: Invalid value: 10001: must be less than or equal to 10000");
        fails(&xp_kind_k8s_podgroup,
              "{" PG ",'spec':{'schedulingPolicy':{'basic':{}},'podGroupTemplateRef':{'workload':"
              "{'podGroupTemplateName':'workers'}}}}",
              "spec.podGroupTemplateRef.workload.workloadName: Required value");
        fails(&xp_kind_k8s_podgroup,
              "{" PG ",'spec':{'schedulingPolicy':{'basic':{}},'podGroupTemplateRef':{}}}",
              "spec.podGroupTemplateRef: Invalid value: \"\": must specify one of: `workload`");
}

/* Decodes text (single quotes for double) through kind's own decoder (a version that converts):
 * 0 with *ret, or the error's message in msg. */
static int
decode_as(const struct xp_kind *kind, const char *text, struct xp_doc **ret, char msg[256])
{
        struct xp_error err = {0};
        json_t *json = js(text);
        void *object = NULL;
        int r;

        r = kind->from_json(json, NULL, XP_DECODE_STRICT, &object, &err);
        snprintf(msg, 256, "%s", err.msg);
        json_decref(json);
        *ret = object;
        return r;
}

#define WL2 "'apiVersion':'scheduling.k8s.io/v1alpha2','kind':'Workload','metadata':{'name':'w'}"

static void workload_v1alpha2_refused(const char *spec, const char *message)
{
        struct xp_doc *doc = NULL;
        char text[1024], msg[256];

        snprintf(text, sizeof(text), "{" WL2 ",'spec':%s}", spec);
        assert_int_equal(decode_as(&xp_kind_workload_v1alpha2, text, &doc, msg), -EINVAL);
        assert_null(doc);
        assert_string_equal(msg, message);
}

/* Written in v1alpha2, stored as v1alpha1 (podGroups, policy), answered in v1alpha2 again. */
static void workload_v1alpha2(void **state)
{
        static const char spec[] = "{'controllerRef':{'kind':'Job','name':'j'},'podGroupTemplates':"
                                   "[{'name':'workers','schedulingPolicy':{'gang':{'minCount':3}}},"
                                   "{'name':'driver','schedulingPolicy':{'basic':{}}}]}";
        struct xp_doc *doc = NULL;
        json_t *stored = NULL, *shown = NULL, *want;
        char text[1024], msg[256];

        (void)state;
        snprintf(text, sizeof(text), "{" WL2 ",'spec':%s}", spec);
        assert_int_equal(decode_as(&xp_kind_workload_v1alpha2, text, &doc, msg), 0);
        assert_ptr_equal(doc->kind, &xp_kind_workload);
        assert_int_equal(xp_json_int_at(json_array_get(xp_json_at(doc->body, "spec.podGroups"), 0),
                                        "policy.gang.minCount",
                                        0),
                         3);
        assert_null(xp_json_at(doc->body, "spec.podGroupTemplates"));
        assert_string_equal(xp_json_str_at(doc->body, "spec.controllerRef.name", ""), "j");
        assert_int_equal(doc->kind->to_json(doc, &stored), 0);
        assert_string_equal(xp_json_str_at(stored, "apiVersion", ""), "scheduling.k8s.io/v1alpha1");
        assert_int_equal(xp_kind_workload_v1alpha2.answer_as(stored, &shown), 0);
        assert_string_equal(xp_json_str_at(shown, "apiVersion", ""), "scheduling.k8s.io/v1alpha2");
        want = js(text);
        assert_true(json_equal(json_object_get(shown, "spec"), json_object_get(want, "spec")));
        json_decref(want);
        json_decref(shown);
        json_decref(stored);
        xp_doc_free(doc);

        workload_v1alpha2_refused("{}", "spec.podGroupTemplates: Required value");
        workload_v1alpha2_refused(
            "{'podGroupTemplates':[{'name':'a','schedulingPolicy':{'gang':{'minCount':0}}}]}",
            "spec.podGroupTemplates[0].schedulingPolicy.gang.minCount: Invalid value: 0: must be greater than or equal to 1");
        workload_v1alpha2_refused(
            "{'podGroupTemplates':[{'name':'a','schedulingPolicy':{}}]}",
            "spec.podGroupTemplates[0].schedulingPolicy: Invalid value: \"\": must specify one of: `basic`, `gang`");
        workload_v1alpha2_refused(
            "{'podGroupTemplates':[{'name':'a','schedulingPolicy':{'basic':{}}},{'name':'a','schedulingPolicy':{'basic':{}}}]}",
            "spec.podGroupTemplates[1].name: Duplicate value: \"a\"");
        workload_v1alpha2_refused(
            "{'podGroupTemplates':[{'name':'a','schedulingPolicy':{'basic':{}}}],'controllerRef':{'name':'j'}}",
            "spec.controllerRef.kind: Required value");
        workload_v1alpha2_refused(
            "{'podGroupTemplates':[{'name':'a','policy':{'basic':{}}}]}",
            "spec.podGroupTemplates[0].policy: unknown field \"policy\" in PodGroupTemplate");
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(priorityclass),
            cmocka_unit_test(queue),
            cmocka_unit_test(podgroup_v1alpha2),
            cmocka_unit_test(workload_v1alpha2),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
