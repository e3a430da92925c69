/* SPDX-License-Identifier: Apache-2.0 */
/* The Priority admission of a pod at create: the class's value and policy, the global default,
 * the built-in classes and Kubernetes' refusals. */
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
#include "xpool/priority.h"

static int setup(void **state)
{
        struct registry_fixture *f = calloc(1, sizeof(*f));

        assert_non_null(f);
        fixture_open(f, "priority", 0);
        fixture_put_text(
            f,
            XP_PRIORITY_CLASSES_RESOURCE,
            "",
            "high",
            "{\"apiVersion\":\"scheduling.k8s.io/v1\",\"kind\":\"PriorityClass\","
            "\"metadata\":{\"name\":\"high\"},\"value\":1000,\"preemptionPolicy\":\"PreemptLowerPriority\"}");
        fixture_put_text(
            f,
            XP_PRIORITY_CLASSES_RESOURCE,
            "",
            "batch",
            "{\"apiVersion\":\"scheduling.k8s.io/v1\",\"kind\":\"PriorityClass\","
            "\"metadata\":{\"name\":\"batch\"},\"value\":-5,\"preemptionPolicy\":\"Never\"}");
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        fixture_close(*state);
        free(*state);
        return 0;
}

/* Admits spec (a pod's spec members) and returns the spec as admitted, or NULL with err. */
static json_t *admit(struct registry_fixture *f, const char *spec, struct xp_error *err, int want)
{
        char text[512];
        json_t *pod;

        snprintf(text, sizeof(text), "{\"metadata\":{\"name\":\"p\"},\"spec\":{%s}}", spec);
        pod = json_loads(text, 0, NULL);
        assert_non_null(pod);
        assert_int_equal(xp_registry_pod_priority(f->registry, pod, err), want);
        return pod;
}

static int64_t priority_of(json_t *pod)
{
        return json_integer_value(json_object_get(json_object_get(pod, "spec"), "priority"));
}

static const char *policy_of(json_t *pod)
{
        return json_string_value(json_object_get(json_object_get(pod, "spec"), "preemptionPolicy"));
}

static void from_the_class(void **state)
{
        struct registry_fixture *f = *state;
        struct xp_error err = {0};
        json_t *pod;

        pod = admit(f, "\"priorityClassName\":\"high\"", &err, 0);
        assert_int_equal(priority_of(pod), 1000);
        assert_string_equal(policy_of(pod), "PreemptLowerPriority");
        json_decref(pod);
        pod = admit(f, "\"priorityClassName\":\"batch\"", &err, 0);
        assert_int_equal(priority_of(pod), -5);
        assert_string_equal(policy_of(pod), "Never");
        json_decref(pod);
        pod = admit(f, "\"priorityClassName\":\"system-node-critical\"", &err, 0);
        assert_int_equal(priority_of(pod), 2000001000);
        json_decref(pod);
        pod = admit(f, "", &err, 0); /* no class and no default: 0 */
        assert_int_equal(priority_of(pod), 0);
        json_decref(pod);
        /* xpool's own: no class, a priority given is kept (no default class applies) */
        pod = admit(f, "\"priority\":7", &err, 0);
        assert_int_equal(priority_of(pod), 7);
        json_decref(pod);
        /* the same value given is fine */
        json_decref(admit(f, "\"priorityClassName\":\"high\",\"priority\":1000", &err, 0));
}

static void refusals(void **state)
{
        struct registry_fixture *f = *state;
        struct xp_error err = {0};

        json_decref(admit(f, "\"priorityClassName\":\"nope\"", &err, -EPERM));
        assert_string_equal(err.msg, "no PriorityClass with name nope was found");
        json_decref(admit(f, "\"priorityClassName\":\"high\",\"priority\":5", &err, -EPERM));
        assert_string_equal(
            err.msg,
            "the integer value of priority (5) must not be provided in pod spec; priority "
            "admission controller computed 1000 from the given PriorityClass name");
        json_decref(
            admit(f,
                  "\"priorityClassName\":\"batch\",\"preemptionPolicy\":\"PreemptLowerPriority\"",
                  &err,
                  -EPERM));
        assert_string_equal(
            err.msg,
            "the string value of PreemptionPolicy (PreemptLowerPriority) must not be provided in pod "
            "spec; priority admission controller computed Never from the given PriorityClass name");
}

static void global_default(void **state)
{
        struct registry_fixture *f = *state;
        struct xp_error err = {0};
        json_t *pod;

        /* no default yet (the answer is cached): then one is created, and counts at once */
        pod = admit(f, "", &err, 0);
        assert_int_equal(priority_of(pod), 0);
        json_decref(pod);
        fixture_put_text(
            f,
            XP_PRIORITY_CLASSES_RESOURCE,
            "",
            "standard",
            "{\"apiVersion\":\"scheduling.k8s.io/v1\",\"kind\":\"PriorityClass\",\"metadata\":"
            "{\"name\":\"standard\"},\"value\":100,\"globalDefault\":true,\"preemptionPolicy\":\"PreemptLowerPriority\"}");
        pod = admit(f, "", &err, 0);
        assert_int_equal(priority_of(pod), 100);
        assert_string_equal(
            json_string_value(json_object_get(json_object_get(pod, "spec"), "priorityClassName")),
            "standard");
        json_decref(pod);
}

/* The built-in classes are stored when the registry opens, as kube-apiserver creates them. */
static void system_classes_stored(void **state)
{
        struct registry_fixture *f = *state;
        json_t *pc = fixture_get(f, XP_PRIORITY_CLASSES_RESOURCE, "", XP_PRIORITY_SYSTEM_NODE);

        assert_non_null(pc);
        assert_int_equal(json_integer_value(json_object_get(pc, "value")),
                         XP_PRIORITY_SYSTEM_NODE_VALUE);
        assert_string_equal(json_string_value(json_object_get(pc, "preemptionPolicy")),
                            "PreemptLowerPriority");
        json_decref(pc);
        pc = fixture_get(f, XP_PRIORITY_CLASSES_RESOURCE, "", XP_PRIORITY_SYSTEM_CLUSTER);
        assert_non_null(pc);
        assert_int_equal(json_integer_value(json_object_get(pc, "value")),
                         XP_PRIORITY_SYSTEM_CLUSTER_VALUE);
        json_decref(pc);
        assert_true(xp_priority_system(XP_PRIORITY_SYSTEM_CLUSTER));
        assert_false(xp_priority_system("standard"));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test_setup_teardown(from_the_class, setup, teardown),
            cmocka_unit_test_setup_teardown(refusals, setup, teardown),
            cmocka_unit_test_setup_teardown(global_default, setup, teardown),
            cmocka_unit_test_setup_teardown(system_classes_stored, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
