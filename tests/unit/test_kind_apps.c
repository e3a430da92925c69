/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The apps/v1 kinds (src/core/kind_apps*.c): Kubernetes' defaults, validation with
 * kube-apiserver's messages (on their own and on update), kubectl's table columns, and the
 * strategic merge patch kubectl apply sends for a Deployment ($retainKeys, containers by name).
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
#include <jansson.h>

#include "xpool/doc.h"
#include "xpool/kind.h"
#include "xpool/patch.h"
#include "xpool/table.h"

/* JSON written with single quotes, for readability. */
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

#define TEMPLATE                                                                                   \
        "'template':{'metadata':{'labels':{'app':'web'}},'spec':{'containers':[{'name':'c','image':'web:1'}]}}"
#define DEPLOY(spec)                                                                                                \
        "{'apiVersion':'apps/v1','kind':'Deployment','metadata':{'name':'web','namespace':'default'},'spec':{" spec \
        "}}"

static struct xp_doc *decode(const struct xp_kind *kind, const char *text)
{
        json_t *json = js(text);
        struct xp_doc *doc = NULL;
        struct xp_error err = {0};

        if (xp_doc_from_json(kind, json, NULL, XP_DECODE_STRICT, &doc, &err) < 0)
                fail_msg("%s: %s", text, err.msg);
        json_decref(json);
        return doc;
}

static void decode_fails(const struct xp_kind *kind, const char *text, const char *message)
{
        json_t *json = js(text);
        struct xp_doc *doc = NULL;
        struct xp_error err = {0};
        int r = xp_doc_from_json(kind, json, NULL, XP_DECODE_STRICT, &doc, &err);

        if (r != -EINVAL || !strstr(err.msg, message))
                fail_msg("%s\ngot %d \"%s\"\nwant \"%s\"", text, r, err.msg, message);
        json_decref(json);
}

static void deployment_defaults(void **state)
{
        (void)state;
        struct xp_doc *doc = decode(&xp_kind_deployment,
                                    DEPLOY("'selector':{'matchLabels':{'app':'web'}}," TEMPLATE));

        assert_int_equal(xp_json_int_at(doc->body, "spec.replicas", -1), 1);
        assert_string_equal(xp_json_str_at(doc->body, "spec.strategy.type", ""), "RollingUpdate");
        assert_string_equal(xp_json_str_at(doc->body, "spec.strategy.rollingUpdate.maxSurge", ""),
                            "25%");
        assert_string_equal(
            xp_json_str_at(doc->body, "spec.strategy.rollingUpdate.maxUnavailable", ""), "25%");
        assert_int_equal(xp_json_int_at(doc->body, "spec.revisionHistoryLimit", -1), 10);
        assert_int_equal(xp_json_int_at(doc->body, "spec.progressDeadlineSeconds", -1), 600);
        /* the template's pod defaults, but none of a pod's admission */
        assert_string_equal(xp_json_str_at(doc->body, "spec.template.spec.restartPolicy", ""),
                            "Always");
        assert_int_equal(
            xp_json_int_at(doc->body, "spec.template.spec.terminationGracePeriodSeconds", -1), 30);
        assert_null(xp_json_at(doc->body, "spec.template.spec.tolerations"));
        assert_null(xp_json_at(doc->body, "spec.template.spec.serviceAccountName"));
        xp_doc_free(doc);

        doc = decode(
            &xp_kind_daemonset,
            "{'apiVersion':'apps/v1','kind':'DaemonSet','metadata':{'name':'d'},'spec':{'selector':{'matchLabels':{'app':'web'}}," TEMPLATE
            "}}");
        assert_string_equal(xp_json_str_at(doc->body, "spec.updateStrategy.type", ""),
                            "RollingUpdate");
        assert_int_equal(
            xp_json_int_at(doc->body, "spec.updateStrategy.rollingUpdate.maxUnavailable", -1), 1);
        xp_doc_free(doc);
}

static void deployment_validation(void **state)
{
        (void)state;
        decode_fails(&xp_kind_deployment, DEPLOY(TEMPLATE), "spec.selector: Required value");
        decode_fails(
            &xp_kind_deployment,
            DEPLOY("'selector':{}," TEMPLATE),
            "spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string(nil), MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: empty selector is invalid for deployment");
        decode_fails(
            &xp_kind_deployment,
            DEPLOY("'selector':{'matchLabels':{'app':'db'}}," TEMPLATE),
            "spec.template.metadata.labels: Invalid value: map[string]string{\"app\":\"web\"}: `selector` does not match template `labels`");
        decode_fails(&xp_kind_deployment,
                     DEPLOY("'replicas':-1,'selector':{'matchLabels':{'app':'web'}}," TEMPLATE),
                     "spec.replicas: Invalid value: -1: must be greater than or equal to 0");
        decode_fails(
            &xp_kind_deployment,
            DEPLOY(
                "'selector':{'matchLabels':{'app':'web'}},'strategy':{'rollingUpdate':{'maxSurge':0,'maxUnavailable':0}}," TEMPLATE),
            "spec.strategy.rollingUpdate.maxUnavailable: Invalid value: 0: may not be 0 when `maxSurge` is 0");
        decode_fails(
            &xp_kind_deployment,
            DEPLOY(
                "'selector':{'matchLabels':{'app':'web'}},'strategy':{'rollingUpdate':{'maxSurge':'5'}}," TEMPLATE),
            "spec.strategy.rollingUpdate.maxSurge: Invalid value: \"5\": a valid percent string must be");
        decode_fails(
            &xp_kind_deployment,
            DEPLOY(
                "'selector':{'matchLabels':{'app':'web'}},'strategy':{'type':'Recreate','rollingUpdate':{}}," TEMPLATE),
            "spec.strategy.rollingUpdate: Forbidden: may not be specified when strategy `type` is 'Recreate'");
        decode_fails(
            &xp_kind_deployment,
            DEPLOY("'selector':{'matchLabels':{'app':'web'}},'strategy':{'type':'Blue'}," TEMPLATE),
            "spec.strategy.type: Unsupported value: \"Blue\": supported values: \"Recreate\", \"RollingUpdate\"");
        decode_fails(
            &xp_kind_deployment,
            DEPLOY(
                "'selector':{'matchLabels':{'app':'web'}},'template':{'metadata':{'labels':{'app':'web'}},'spec':{'restartPolicy':'Never','containers':[{'name':'c','image':'x'}]}}"),
            "spec.template.spec.restartPolicy: Unsupported value: \"Never\": supported values: \"Always\"");
        /* the template is checked as the pod it makes */
        decode_fails(
            &xp_kind_deployment,
            DEPLOY(
                "'selector':{'matchLabels':{'app':'web'}},'template':{'metadata':{'labels':{'app':'web'}},'spec':{'containers':[]}}"),
            "spec.template");
}

static void selector_immutable(void **state)
{
        (void)state;
        struct xp_doc *doc = decode(&xp_kind_deployment,
                                    DEPLOY("'selector':{'matchLabels':{'app':'web'}}," TEMPLATE));
        json_t *stored =
            js(DEPLOY("'selector':{'matchLabels':{'app':'web','tier':'x'}}," TEMPLATE));
        struct xp_error err = {0};

        assert_int_equal(xp_kind_deployment.validate_update(doc, stored, &err), -EINVAL);
        assert_non_null(strstr(
            err.msg,
            "spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{\"app\":\"web\"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable"));
        json_decref(stored);
        stored = js(DEPLOY("'replicas':5,'selector':{'matchLabels':{'app':'web'}}," TEMPLATE));
        assert_int_equal(xp_kind_deployment.validate_update(doc, stored, &err), 0);
        json_decref(stored);
        xp_doc_free(doc);
}

static void
table_row(const struct xp_kind *kind, const char *object_text, const char *const *want, size_t n)
{
        json_t *items = json_pack("[o]", js(object_text)), *table = NULL;
        json_t *cells;

        assert_int_equal(
            xp_table_build(kind->kind, items, "1", 1800000000, XP_TABLE_INCLUDE_NONE, &table), 0);
        cells = json_object_get(json_array_get(json_object_get(table, "rows"), 0), "cells");
        assert_int_equal(json_array_size(json_object_get(table, "columnDefinitions")), n);
        for (size_t i = 0; i < n; i++) {
                json_t *c = json_array_get(cells, i);
                char *text = json_is_string(c) ? strdup(json_string_value(c))
                                               : json_dumps(c, JSON_ENCODE_ANY);
                const char *name = json_string_value(json_object_get(
                    json_array_get(json_object_get(table, "columnDefinitions"), i), "name"));

                if (strcmp(text, want[i]) != 0)
                        fail_msg("column %s: got %s, want %s", name, text, want[i]);
                free(text);
        }
        json_decref(table);
        json_decref(items);
}

static void tables(void **state)
{
        (void)state;
        const char *deploy[] = {"web", "2/3", "3", "2", "10s", "c", "web:1", "app=web"};
        const char *rs[] = {"web-abc", "3", "3", "2", "10s", "c", "web:1", "app=web"};
        const char *ds[] = {
            "agent", "2", "2", "1", "2", "1", "gpu=yes", "10s", "c", "web:1", "app=web"};

        table_row(
            &xp_kind_deployment,
            "{'metadata':{'name':'web','creationTimestamp':'2027-01-15T07:59:50Z'},'spec':{'replicas':3,'selector':{'matchLabels':{'app':'web'}}," TEMPLATE
            "},"
            "'status':{'readyReplicas':2,'updatedReplicas':3,'availableReplicas':2}}",
            deploy,
            8);
        table_row(
            &xp_kind_replicaset,
            "{'metadata':{'name':'web-abc','creationTimestamp':'2027-01-15T07:59:50Z'},'spec':{'replicas':3,'selector':{'matchLabels':{'app':'web'}}," TEMPLATE
            "},"
            "'status':{'replicas':3,'readyReplicas':2}}",
            rs,
            8);
        table_row(
            &xp_kind_daemonset,
            "{'metadata':{'name':'agent','creationTimestamp':'2027-01-15T07:59:50Z'},'spec':{'selector':{'matchLabels':{'app':'web'}},"
            "'template':{'metadata':{'labels':{'app':'web'}},'spec':{'nodeSelector':{'gpu':'yes'},'containers':[{'name':'c','image':'web:1'}]}}},"
            "'status':{'desiredNumberScheduled':2,'currentNumberScheduled':2,'numberReady':1,'updatedNumberScheduled':2,'numberAvailable':1}}",
            ds,
            11);
}

/* ControllerRevision: kubectl's NAME CONTROLLER REVISION AGE, and Kubernetes' checks. */
static void controller_revision(void **state)
{
        const char *row[] = {"agent-abc", "daemonset.apps/agent", "2", "10s"};
        struct xp_doc *doc, *old;

        (void)state;
        table_row(&xp_kind_controllerrevision,
                  "{'metadata':{'name':'agent-abc','creationTimestamp':'2027-01-15T07:59:50Z',"
                  "'ownerReferences':[{'apiVersion':'apps/v1','kind':'DaemonSet','name':'agent',"
                  "'uid':'u','controller':true}]},'data':{},'revision':2}",
                  row,
                  4);
        doc = decode(&xp_kind_controllerrevision,
                     "{'apiVersion':'apps/v1','kind':'ControllerRevision','metadata':{'name':'r',"
                     "'namespace':'default'},'data':{'spec':{}},'revision':1}");
        decode_fails(&xp_kind_controllerrevision,
                     "{'apiVersion':'apps/v1','kind':'ControllerRevision','metadata':{'name':'r',"
                     "'namespace':'default'},'data':{},'revision':-1}",
                     "revision: Invalid value: -1: must be greater than or equal to 0");
        decode_fails(&xp_kind_controllerrevision,
                     "{'apiVersion':'apps/v1','kind':'ControllerRevision','metadata':{'name':'r',"
                     "'namespace':'default'},'revision':1}",
                     "data: Required value");
        old = decode(&xp_kind_controllerrevision,
                     "{'apiVersion':'apps/v1','kind':'ControllerRevision','metadata':{'name':'r',"
                     "'namespace':'default'},'data':{'spec':{'x':1}},'revision':1}");
        struct xp_error err = {0};
        json_t *stored = NULL;
        assert_int_equal(xp_doc_to_json_any(old, &stored), 0);
        assert_int_equal(xp_doc_validate_update_any(doc, stored, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "data: Invalid value: field is immutable"));
        json_decref(stored);
        xp_doc_free(doc);
        xp_doc_free(old);
}

/* kubectl apply's patch of a Deployment: $retainKeys on the strategy, containers merged by name. */
static void apply_patch(void **state)
{
        (void)state;
        json_t *original = js(DEPLOY(
            "'selector':{'matchLabels':{'app':'web'}},'strategy':{'type':'RollingUpdate','rollingUpdate':{'maxSurge':1,'maxUnavailable':0}},"
            "'template':{'metadata':{'labels':{'app':'web'}},'spec':{'containers':[{'name':'c','image':'web:1'},{'name':'side','image':'s:1'}]}}"));
        json_t *patch = js(
            "{'spec':{'strategy':{'$retainKeys':['rollingUpdate','type'],'rollingUpdate':{'maxSurge':2}},"
            "'template':{'spec':{'$setElementOrder/containers':[{'name':'c'},{'name':'side'}],'containers':[{'name':'c','image':'web:2'}]}}}}");
        json_t *out = NULL;
        struct xp_error err = {0};

        assert_int_equal(
            xp_patch_apply(XP_PATCH_STRATEGIC, "Deployment", original, patch, &out, &err), 0);
        assert_null(xp_json_at(out, "spec.strategy.$retainKeys"));
        assert_int_equal(xp_json_int_at(out, "spec.strategy.rollingUpdate.maxSurge", -1), 2);
        assert_int_equal(json_array_size(xp_json_at(out, "spec.template.spec.containers")), 2);
        assert_string_equal(
            xp_json_str_at(
                json_array_get(xp_json_at(out, "spec.template.spec.containers"), 0), "image", ""),
            "web:2");
        assert_string_equal(
            xp_json_str_at(
                json_array_get(xp_json_at(out, "spec.template.spec.containers"), 1), "image", ""),
            "s:1");
        json_decref(out);
        json_decref(patch);
        json_decref(original);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(deployment_defaults),
            cmocka_unit_test(deployment_validation),
            cmocka_unit_test(selector_immutable),
            cmocka_unit_test(tables),
            cmocka_unit_test(controller_revision),
            cmocka_unit_test(apply_patch),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
