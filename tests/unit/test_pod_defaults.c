/* SPDX-License-Identifier: Apache-2.0 */
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

#include "xpool/apischema.h"
#include "xpool/codec.h"
#include "xpool/jsonliteral.h"
#include "xpool/object.h"
#include "xpool/poddefaults.h"

static json_t *load(const char *text)
{
        json_t *json = json_loads(text, 0, NULL);

        assert_non_null(json);
        return json;
}

/* The text of one member of spec (path: "containers/0/imagePullPolicy"), as compact JSON. */
static char *spec_member(const json_t *pod, const char *path)
{
        const json_t *v = json_object_get(pod, "spec");
        char buf[256], *save = NULL;

        snprintf(buf, sizeof(buf), "%s", path);
        for (char *part = strtok_r(buf, "/", &save); part && v; part = strtok_r(NULL, "/", &save)) {
                if (json_is_array(v))
                        v = json_array_get(v, strtoul(part, NULL, 10));
                else
                        v = json_object_get(v, part);
        }
        return v ? json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY) : strdup("(absent)");
}

static void expect(const json_t *pod, const char *path, const char *want)
{
        char *got = spec_member(pod, path);

        assert_non_null(got);
        if (strcmp(got, want) != 0)
                fail_msg("spec.%s: got %s, want %s", path, got, want);
        free(got);
}

static void spec_defaults_as_kube_apiserver(void **state)
{
        json_t *pod = load("{\"spec\":{\"containers\":[{\"name\":\"a\",\"image\":\"busybox\","
                           "\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\",\"cpu\":\"2\"},"
                           "\"requests\":{\"cpu\":\"1\"}},\"ports\":[{\"containerPort\":80}]},"
                           "{\"name\":\"b\",\"image\":\"r.io/x:1.2\"},"
                           "{\"name\":\"c\",\"image\":\"r.io:5000/x:latest\"},"
                           "{\"name\":\"d\",\"image\":\"x@sha256:00\"}]}}");

        (void)state;
        assert_int_equal(xp_pod_defaults_apply(pod, NULL), 0);
        expect(pod, "restartPolicy", "\"Always\"");
        expect(pod, "dnsPolicy", "\"ClusterFirst\"");
        expect(pod, "schedulerName", "\"default-scheduler\"");
        expect(pod, "terminationGracePeriodSeconds", "30");
        expect(pod, "securityContext", "{}");
        expect(pod, "enableServiceLinks", "true");
        expect(pod, "serviceAccountName", "\"default\"");
        expect(pod, "serviceAccount", "\"default\"");
        expect(pod, "priority", "0");
        expect(pod, "preemptionPolicy", "\"PreemptLowerPriority\"");
        /* requests default to limits, resource by resource: cpu keeps its own request */
        expect(pod, "containers/0/resources/requests", "{\"cpu\":\"1\",\"nvidia.com/gpu\":\"1\"}");
        expect(pod, "containers/0/ports/0", "{\"containerPort\":80,\"protocol\":\"TCP\"}");
        expect(pod, "containers/0/terminationMessagePath", "\"/dev/termination-log\"");
        expect(pod, "containers/0/terminationMessagePolicy", "\"File\"");
        /* by the tag: none or :latest is Always, a tag or a digest IfNotPresent */
        expect(pod, "containers/0/imagePullPolicy", "\"Always\"");
        expect(pod, "containers/1/imagePullPolicy", "\"IfNotPresent\"");
        expect(pod, "containers/2/imagePullPolicy", "\"Always\"");
        expect(pod, "containers/3/imagePullPolicy", "\"IfNotPresent\"");
        expect(pod,
               "tolerations/0",
               "{\"key\":\"node.kubernetes.io/not-ready\",\"operator\":\"Exists\","
               "\"effect\":\"NoExecute\",\"tolerationSeconds\":300}");
        expect(pod, "tolerations/1/key", "\"node.kubernetes.io/unreachable\"");
        json_decref(pod);
}

static void what_is_set_stays(void **state)
{
        const struct xp_pod_defaults options = {.toleration_seconds = 40};
        json_t *pod = load(
            "{\"spec\":{\"restartPolicy\":\"Never\",\"terminationGracePeriodSeconds\":0,"
            "\"hostNetwork\":true,\"priorityClassName\":\"system-node-critical\","
            "\"serviceAccount\":\"old\",\"enableServiceLinks\":false,"
            "\"tolerations\":[{\"operator\":\"Exists\"}],"
            "\"containers\":[{\"name\":\"a\",\"image\":\"x\",\"imagePullPolicy\":\"Never\","
            "\"ports\":[{\"containerPort\":8080,\"protocol\":\"UDP\"}]}],"
            "\"volumes\":[{\"name\":\"v\"},{\"name\":\"s\",\"secret\":{\"secretName\":\"s\"}}]}}");

        (void)state;
        assert_int_equal(xp_pod_defaults_apply(pod, &options), 0);
        expect(pod, "restartPolicy", "\"Never\"");
        /* a pointer in Go: 0 is a value, not unset */
        expect(pod, "terminationGracePeriodSeconds", "0");
        expect(pod, "enableServiceLinks", "false");
        expect(pod, "serviceAccountName", "\"old\"");
        expect(pod, "priority", "2000001000");
        expect(pod, "containers/0/imagePullPolicy", "\"Never\"");
        expect(pod,
               "containers/0/ports/0",
               "{\"containerPort\":8080,\"protocol\":\"UDP\",\"hostPort\":8080}");
        expect(pod, "volumes/0", "{\"name\":\"v\",\"emptyDir\":{}}");
        expect(pod, "volumes/1/secret/defaultMode", "420");
        /* a toleration of everything covers both taints: nothing added */
        expect(pod, "tolerations", "[{\"operator\":\"Exists\"}]");
        json_decref(pod);
        /* without a blanket toleration, the configured seconds */
        pod = load("{\"spec\":{\"containers\":[{\"name\":\"a\",\"image\":\"x\"}]}}");
        assert_int_equal(xp_pod_defaults_apply(pod, &options), 0);
        expect(pod, "tolerations/1/tolerationSeconds", "40");
        json_decref(pod);
}

static void an_update_keeps_the_priority(void **state)
{
        json_t *old = load("{\"spec\":{\"priority\":7,\"preemptionPolicy\":\"Never\"}}");
        const struct xp_pod_defaults options = {.old = old};
        json_t *pod = load("{\"spec\":{\"containers\":[]}}");

        (void)state;
        assert_int_equal(xp_pod_defaults_apply(pod, &options), 0);
        expect(pod, "priority", "7");
        expect(pod, "preemptionPolicy", "\"Never\"");
        json_decref(pod);
        json_decref(old);
        /* not an object: left for the codec to report */
        pod = load("{\"spec\":[]}");
        assert_int_equal(xp_pod_defaults_apply(pod, NULL), 0);
        json_decref(pod);
}

static const char *qos_of(const char *resources_a, const char *resources_b)
{
        char text[1024];
        struct xp_pod *pod = NULL;
        struct xp_error err = {0};
        const char *qos;
        json_t *json;

        snprintf(text,
                 sizeof(text),
                 "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\"},"
                 "\"spec\":{\"containers\":[{\"name\":\"a\",\"image\":\"x\",\"resources\":%s},"
                 "{\"name\":\"b\",\"image\":\"x\",\"resources\":%s}]}}",
                 resources_a,
                 resources_b);
        json = load(text);
        assert_int_equal(xp_pod_defaults_apply(json, NULL), 0);
        assert_int_equal(xp_pod_from_json(json, NULL, 0, &pod, &err), 0);
        qos = xp_pod_qos_class(pod);
        xp_pod_free(pod);
        json_decref(json);
        return qos;
}

static void qos_class_as_the_kubelet(void **state)
{
        const char *both = "{\"limits\":{\"cpu\":\"1\",\"memory\":\"1Gi\"}}";

        (void)state;
        assert_string_equal(qos_of("{}", "{}"), "BestEffort");
        /* a GPU alone does not count: QoS looks at cpu and memory only */
        assert_string_equal(qos_of("{\"limits\":{\"nvidia.com/gpu\":\"1\"}}", "{}"), "BestEffort");
        assert_string_equal(qos_of(both, both), "Guaranteed");
        assert_string_equal(qos_of(both, "{}"), "Burstable");
        assert_string_equal(qos_of(both,
                                   "{\"limits\":{\"cpu\":\"1\",\"memory\":\"1Gi\"},"
                                   "\"requests\":{\"cpu\":\"500m\"}}"),
                            "Burstable");
        assert_string_equal(qos_of("{\"requests\":{\"memory\":\"1Mi\"}}", "{}"), "Burstable");
}

/* The default tolerations every pod shares are marked so that a body's checks skip them: they
 * must pass the API schema's check of a Toleration, strictly, and hold no real. */
static void the_shared_tolerations_pass_the_checks_they_skip(void **state)
{
        json_t *pod = load("{\"spec\":{\"containers\":[{\"name\":\"a\"}]}}");
        const struct xp_apischema *api;
        struct xp_error err = {0};
        const json_t *t;
        size_t i;
        (void)state;

        assert_int_equal(xp_pod_defaults_apply(pod, NULL), 0);
        assert_int_equal(xp_apischema_builtin(&api, &err), 0);
        assert_int_equal(
            json_array_size(json_object_get(json_object_get(pod, "spec"), "tolerations")), 2);
        json_array_foreach(json_object_get(json_object_get(pod, "spec"), "tolerations"), i, t)
        {
                const char *key;
                const json_t *member;

                assert_true(xp_json_is_shared_tree(t));
                assert_int_equal(
                    xp_apischema_check(
                        xp_apischema_find(api, "Toleration"), t, XP_DECODE_STRICT, &err),
                    0);
                json_object_foreach((json_t *)t, key, member) assert_false(json_is_real(member));
        }
        json_decref(pod);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(spec_defaults_as_kube_apiserver),
            cmocka_unit_test(what_is_set_stays),
            cmocka_unit_test(an_update_keeps_the_priority),
            cmocka_unit_test(qos_class_as_the_kubelet),
            cmocka_unit_test(the_shared_tolerations_pass_the_checks_they_skip),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
