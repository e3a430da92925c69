/* SPDX-License-Identifier: Apache-2.0 */
/* The ResourceQuota status controller (src/controller/quotastatus.c), step by step. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "registry_fixture.h"
#include "xpool/kind.h"
#include "xpool/quotastatus.h"
#include "xpool/registry.h"

static void put(struct registry_fixture *f, const char *kind, const char *text)
{
        json_error_t jerr;
        json_t *object = json_loads(text, 0, &jerr);
        struct xp_error err = {0};
        uint64_t version;

        if (!object)
                fail_msg("bad JSON: %s", jerr.text);
        if (xp_store_create(
                f->store,
                kind,
                "team",
                json_string_value(json_object_get(json_object_get(object, "metadata"), "name")),
                object,
                &version,
                &err) < 0)
                fail_msg("%s", err.msg);
        json_decref(object);
}

static void expect_used(struct registry_fixture *f, const char *name, const char *want)
{
        json_t *quota = fixture_get(f, "resourcequotas", "team", name);
        char *got = json_dumps(json_object_get(json_object_get(quota, "status"), "used"),
                               JSON_COMPACT | JSON_SORT_KEYS);

        if (!got || strcmp(got, want) != 0)
                fail_msg("status.used: got %s, want %s", got ? got : "(none)", want);
        free(got);
        json_decref(quota);
}

#define POD(name, phase)                                                                           \
        "{\"metadata\": {\"name\": \"" name                                                        \
        "\", \"namespace\": \"team\"}, \"spec\": {\"containers\":"                                 \
        " [{\"name\": \"c\", \"resources\": {\"requests\": {\"nvidia.com/gpu\": \"1\"}}}]},"       \
        " \"status\": {\"phase\": \"" phase "\"}}"

static void used_follows_the_pods(void **state)
{
        struct registry_fixture f;
        struct xp_quotastatus *c = NULL;
        struct xp_error err = {0};

        (void)state;
        fixture_open(&f, "quotastatus", 0);
        put(&f,
            "resourcequotas",
            "{\"metadata\": {\"name\": \"gpu\", \"namespace\": \"team\"}, \"spec\": {\"hard\":"
            " {\"requests.nvidia.com/gpu\": \"2\", \"pods\": \"5\"}}}");
        put(&f, "pods", POD("a", "Running"));
        assert_int_equal(xp_quotastatus_new(f.registry, &c, &err), 0);
        assert_int_equal(xp_quotastatus_step(c, &err), 0);
        expect_used(&f, "gpu", "{\"pods\":\"1\",\"requests.nvidia.com/gpu\":\"1\"}");
        put(&f, "pods", POD("b", "Pending"));
        put(&f, "pods", POD("done", "Succeeded"));
        assert_int_equal(xp_quotastatus_step(c, &err), 0);
        expect_used(&f, "gpu", "{\"pods\":\"2\",\"requests.nvidia.com/gpu\":\"2\"}");
        assert_int_equal(xp_store_delete(f.store, "pods", "team", "a", 0, NULL, NULL, &err), 0);
        assert_int_equal(xp_quotastatus_step(c, &err), 0);
        expect_used(&f, "gpu", "{\"pods\":\"1\",\"requests.nvidia.com/gpu\":\"1\"}");
        xp_quotastatus_free(c);
        fixture_close(&f);
}

/* A quota created through the registry has status.hard and every used amount 0 from its
 * create, before the controller has counted, as kube-controller-manager writes it first. */
static void created_with_zero_usage(void **state)
{
        struct registry_fixture f;
        struct xp_error err = {0};
        json_t *text = json_loads("{\"metadata\": {\"name\": \"gpu\", \"namespace\": \"team\"},"
                                  " \"spec\": {\"hard\": {\"requests.nvidia.com/gpu\": \"2\","
                                  " \"pods\": \"5\"}}}",
                                  0,
                                  NULL);
        json_t *out = NULL, *quota;
        void *object = NULL;
        char *status;

        (void)state;
        fixture_open(&f, "quotastatus-created", 0);
        assert_non_null(text);
        assert_int_equal(xp_kind_resourcequota.from_json(text, NULL, 0, &object, &err), 0);
        assert_true(
            xp_registry_create(
                f.registry, &xp_kind_resourcequota, "team", object, NULL, false, &out, &err) >= 0);
        quota = fixture_get(&f, "resourcequotas", "team", "gpu");
        status = json_dumps(json_object_get(quota, "status"), JSON_COMPACT | JSON_SORT_KEYS);
        assert_string_equal(status,
                            "{\"hard\":{\"pods\":\"5\",\"requests.nvidia.com/gpu\":\"2\"},"
                            "\"used\":{\"pods\":\"0\",\"requests.nvidia.com/gpu\":\"0\"}}");
        free(status);
        json_decref(quota);
        json_decref(out);
        json_decref(text);
        xp_kind_resourcequota.free(object);
        fixture_close(&f);
}

/* Object counts: count/<resource>[.<group>] and the older bare names, in status.used and at
 * admission with kube-apiserver's message; a quota with scopes counts pods only. */
static void objects_are_counted(void **state)
{
        struct registry_fixture f;
        struct xp_quotastatus *c = NULL;
        struct xp_error err = {0};
        json_t *cm = json_pack("{s:{s:s}}", "metadata", "name", "third");
        json_t *lb = json_pack("{s:{s:s}, s:{s:s, s:[{s:i}, {s:i}]}}",
                               "metadata",
                               "name",
                               "lb",
                               "spec",
                               "type",
                               "LoadBalancer",
                               "ports",
                               "port",
                               80,
                               "port",
                               443);

        (void)state;
        fixture_open(&f, "quotastatus", 0);
        put(&f,
            "resourcequotas",
            "{\"metadata\": {\"name\": \"objects\", \"namespace\": \"team\"}, \"spec\": {\"hard\":"
            " {\"count/configmaps\": \"2\", \"configmaps\": \"5\", \"count/deployments.apps\": \"1\","
            " \"services.nodeports\": \"1\", \"services.loadbalancers\": \"1\"}}}");
        put(&f,
            "resourcequotas",
            "{\"metadata\": {\"name\": \"scoped\", \"namespace\": \"team\"}, \"spec\": {\"hard\":"
            " {\"count/configmaps\": \"0\"}, \"scopes\": [\"BestEffort\"]}}");
        put(&f, "configmaps", "{\"metadata\": {\"name\": \"a\", \"namespace\": \"team\"}}");
        put(&f, "configmaps", "{\"metadata\": {\"name\": \"b\", \"namespace\": \"team\"}}");
        put(&f,
            "deployments",
            "{\"metadata\": {\"name\": \"web\", \"namespace\": \"team\"}, \"spec\": {}}");
        assert_int_equal(xp_quotastatus_new(f.registry, &c, &err), 0);
        assert_int_equal(xp_quotastatus_step(c, &err), 0);
        expect_used(&f,
                    "objects",
                    "{\"configmaps\":\"2\",\"count/configmaps\":\"2\","
                    "\"count/deployments.apps\":\"1\",\"services.loadbalancers\":\"0\","
                    "\"services.nodeports\":\"0\"}");
        expect_used(&f, "scoped", "{\"count/configmaps\":\"0\"}");
        assert_int_equal(
            xp_registry_quota_count_admit(f.registry, &xp_kind_configmap, "team", cm, &err),
            -EDQUOT);
        assert_string_equal(err.msg,
                            "exceeded quota: objects, requested: count/configmaps=1, used: "
                            "count/configmaps=2, limited: count/configmaps=2");
        err = (struct xp_error){0};
        /* a LoadBalancer with two ports: one load balancer fits, two node ports do not */
        assert_int_equal(
            xp_registry_quota_count_admit(f.registry, &xp_kind_service, "team", lb, &err), -EDQUOT);
        assert_string_equal(err.msg,
                            "exceeded quota: objects, requested: services.nodeports=2, used: "
                            "services.nodeports=0, limited: services.nodeports=1");
        err = (struct xp_error){0};
        /* another namespace has no quota */
        assert_int_equal(
            xp_registry_quota_count_admit(f.registry, &xp_kind_configmap, "other", cm, &err), 0);
        assert_int_equal(xp_store_delete(f.store, "configmaps", "team", "a", 0, NULL, NULL, &err),
                         0);
        assert_int_equal(
            xp_registry_quota_count_admit(f.registry, &xp_kind_configmap, "team", cm, &err), 0);
        json_decref(cm);
        json_decref(lb);
        xp_quotastatus_free(c);
        fixture_close(&f);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(used_follows_the_pods),
            cmocka_unit_test(objects_are_counted),
            cmocka_unit_test(created_with_zero_usage),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
