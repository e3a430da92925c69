/* SPDX-License-Identifier: Apache-2.0 */
/*
 * HorizontalPodAutoscaler through autoscaling/v1 with what v1 has no field for
 * (src/core/kind_autoscaling_v1*.c), as kube-apiserver 1.32 converts it: the metrics other than
 * a cpu utilisation target, the current metrics, the behavior (Go's field names) and the
 * conditions travel as JSON in the autoscaling.alpha.kubernetes.io annotations, in v1's metric
 * shapes; a v1 write carrying them gets every v2 field back (the cpu target last, where
 * Kubernetes puts it) and the annotations are not kept; an annotation that cannot be decoded is
 * ignored and dropped, as Kubernetes does since 1.18; a v2 write drops them too.
 */
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
#include "xpool/strmap.h"

#define METRICS    "autoscaling.alpha.kubernetes.io/metrics"
#define CURRENT    "autoscaling.alpha.kubernetes.io/current-metrics"
#define CONDITIONS "autoscaling.alpha.kubernetes.io/conditions"
#define BEHAVIOR   "autoscaling.alpha.kubernetes.io/behavior"

/* A v2 HPA on five metrics with its status, in the members' Go order. */
static const char stored_text[] =
    "{\"apiVersion\": \"autoscaling/v2\", \"kind\": \"HorizontalPodAutoscaler\","
    " \"metadata\": {\"name\": \"web\", \"namespace\": \"default\", \"annotations\": {\"team\": \"a\"}},"
    " \"spec\": {\"scaleTargetRef\": {\"kind\": \"Deployment\", \"name\": \"web\", \"apiVersion\": "
    "\"apps/v1\"},"
    "  \"minReplicas\": 1, \"maxReplicas\": 6, \"metrics\": ["
    "  {\"type\": \"Resource\", \"resource\": {\"name\": \"cpu\", \"target\": {\"type\": \"Utilization\","
    " \"averageUtilization\": 60}}},"
    "  {\"type\": \"Resource\", \"resource\": {\"name\": \"memory\", \"target\": {\"type\": "
    "\"AverageValue\", \"averageValue\": \"500Mi\"}}},"
    "  {\"type\": \"Pods\", \"pods\": {\"metric\": {\"name\": \"xpool_device_utilization\"},"
    " \"target\": {\"type\": \"AverageValue\", \"averageValue\": \"50\"}}},"
    "  {\"type\": \"External\", \"external\": {\"metric\": {\"name\": \"queue\", \"selector\":"
    " {\"matchLabels\": {\"q\": \"in\"}}}, \"target\": {\"type\": \"Value\", \"value\": \"10\"}}},"
    "  {\"type\": \"Object\", \"object\": {\"describedObject\": {\"kind\": \"Service\", \"name\": "
    "\"front\","
    " \"apiVersion\": \"v1\"}, \"target\": {\"type\": \"AverageValue\", \"averageValue\": \"2k\"},"
    " \"metric\": {\"name\": \"rps\"}}}],"
    "  \"behavior\": {\"scaleUp\": {\"stabilizationWindowSeconds\": 0, \"selectPolicy\": \"Max\","
    " \"policies\": [{\"type\": \"Pods\", \"value\": 4, \"periodSeconds\": 15}]},"
    " \"scaleDown\": {\"stabilizationWindowSeconds\": 30, \"selectPolicy\": \"Max\","
    " \"policies\": [{\"type\": \"Pods\", \"value\": 1, \"periodSeconds\": 60}]}}},"
    " \"status\": {\"currentReplicas\": 2, \"desiredReplicas\": 3, \"currentMetrics\": ["
    "  {\"type\": \"Resource\", \"resource\": {\"name\": \"cpu\", \"current\": {\"averageValue\": "
    "\"40m\","
    " \"averageUtilization\": 40}}},"
    "  {\"type\": \"Pods\", \"pods\": {\"metric\": {\"name\": \"xpool_device_utilization\"},"
    " \"current\": {\"averageValue\": \"70\"}}}],"
    "  \"conditions\": [{\"type\": \"AbleToScale\", \"status\": \"True\", \"lastTransitionTime\":"
    " \"2026-12-05T10:00:00Z\", \"reason\": \"ReadyForNewScale\", \"message\": \"ready\"}]}}";

static json_t *parse(const char *text)
{
        json_error_t jerr;
        json_t *json = json_loads(text, 0, &jerr);

        if (!json)
                fail_msg("bad JSON at %d: %s", jerr.position, jerr.text);
        return json;
}

static char *compact(const json_t *json)
{
        char *text = json_dumps(json, JSON_COMPACT | JSON_ENCODE_ANY);

        assert_non_null(text);
        return text;
}

static void assert_json_equal(const json_t *got, const char *want_text)
{
        json_t *want = parse(want_text);

        if (!json_equal(got, want)) {
                char *text = compact(got);
                print_error("got  %s\nwant %s\n", text, want_text);
                free(text);
                fail();
        }
        json_decref(want);
}

static json_t *v1_of(const json_t *stored)
{
        json_t *v1 = NULL;

        assert_int_equal(xp_kind_hpa_v1.answer_as(stored, &v1), 0);
        return v1;
}

/* v1 written (as a client sends it back) decoded into the stored v2 document. */
static struct xp_doc *written(const json_t *v1)
{
        struct xp_doc *doc = NULL;
        struct xp_error err = {0};

        if (xp_doc_from_json(&xp_kind_hpa_v1, v1, NULL, 0, &doc, &err) < 0)
                fail_msg("decode: %s", err.msg);
        assert_ptr_equal(doc->kind, &xp_kind_hpa);
        return doc;
}

static const char *annotation(const json_t *v1, const char *key)
{
        /* not xp_json_str_at: the keys hold dots */
        const json_t *value =
            json_object_get(json_object_get(json_object_get(v1, "metadata"), "annotations"), key);

        assert_true(json_is_string(value));
        return json_string_value(value);
}

static void metrics_read_in_v1(void **state)
{
        json_t *stored = parse(stored_text), *v1 = v1_of(stored);

        (void)state;
        assert_int_equal(xp_json_int_at(v1, "spec.targetCPUUtilizationPercentage", -1), 60);
        assert_int_equal(xp_json_int_at(v1, "status.currentCPUUtilizationPercentage", -1), 40);
        assert_null(xp_json_at(v1, "spec.metrics"));
        /* v1's (v2beta1's) shapes, Go's member order, a Quantity that is no pointer as "0" */
        assert_string_equal(
            annotation(v1, METRICS),
            "[{\"type\":\"Resource\",\"resource\":{\"name\":\"memory\",\"targetAverageValue\":\"500Mi\"}},"
            "{\"type\":\"Pods\",\"pods\":{\"metricName\":\"xpool_device_utilization\","
            "\"targetAverageValue\":\"50\"}},"
            "{\"type\":\"External\",\"external\":{\"metricName\":\"queue\",\"metricSelector\":"
            "{\"matchLabels\":{\"q\":\"in\"}},\"targetValue\":\"10\"}},"
            "{\"type\":\"Object\",\"object\":{\"target\":{\"kind\":\"Service\",\"name\":\"front\","
            "\"apiVersion\":\"v1\"},\"metricName\":\"rps\",\"targetValue\":\"0\","
            "\"averageValue\":\"2k\"}}]");
        /* every current metric, the cpu one too (its raw value) */
        assert_string_equal(
            annotation(v1, CURRENT),
            "[{\"type\":\"Resource\",\"resource\":{\"name\":\"cpu\",\"currentAverageUtilization\":40,"
            "\"currentAverageValue\":\"40m\"}},"
            "{\"type\":\"Pods\",\"pods\":{\"metricName\":\"xpool_device_utilization\","
            "\"currentAverageValue\":\"70\"}}]");
        /* json.Marshal of the internal type: Go's field names */
        assert_string_equal(
            annotation(v1, BEHAVIOR),
            "{\"ScaleUp\":{\"StabilizationWindowSeconds\":0,\"SelectPolicy\":\"Max\",\"Policies\":"
            "[{\"Type\":\"Pods\",\"Value\":4,\"PeriodSeconds\":15}]},\"ScaleDown\":"
            "{\"StabilizationWindowSeconds\":30,\"SelectPolicy\":\"Max\",\"Policies\":"
            "[{\"Type\":\"Pods\",\"Value\":1,\"PeriodSeconds\":60}]}}");
        assert_string_equal(annotation(v1, CONDITIONS),
                            "[{\"type\":\"AbleToScale\",\"status\":\"True\",\"lastTransitionTime\":"
                            "\"2026-12-05T10:00:00Z\",\"reason\":\"ReadyForNewScale\","
                            "\"message\":\"ready\"}]");
        assert_string_equal(annotation(v1, "team"), "a");
        json_decref(v1);
        json_decref(stored);
}

/* Read in v1, replaced as read: every v2 field is back, the cpu target after the others. */
static void metrics_round_trip(void **state)
{
        json_t *stored = parse(stored_text), *v1 = v1_of(stored);
        json_t *metrics = json_deep_copy(xp_json_at(stored, "spec.metrics"));
        struct xp_doc *doc;

        (void)state;
        assert_int_equal(json_array_append(metrics, json_array_get(metrics, 0)), 0);
        assert_int_equal(json_array_remove(metrics, 0), 0);
        doc = written(v1);
        assert_true(json_equal(xp_json_at(doc->body, "spec.metrics"), metrics));
        assert_true(json_equal(xp_json_at(doc->body, "spec.behavior"),
                               xp_json_at(stored, "spec.behavior")));
        assert_true(json_equal(xp_json_at(doc->body, "status.conditions"),
                               xp_json_at(stored, "status.conditions")));
        /* the current metrics as v1's shapes bring them back (a Quantity that is no pointer: set)
         */
        assert_json_equal(
            xp_json_at(doc->body, "status.currentMetrics"),
            "[{\"type\":\"Resource\",\"resource\":{\"name\":\"cpu\",\"current\":{\"averageValue\":"
            "\"40m\",\"averageUtilization\":40}}},{\"type\":\"Pods\",\"pods\":{\"metric\":{\"name\":"
            "\"xpool_device_utilization\"},\"current\":{\"averageValue\":\"70\"}}}]");
        assert_null(xp_json_at(doc->body, "spec.targetCPUUtilizationPercentage"));
        assert_null(xp_json_at(doc->body, "status.currentCPUUtilizationPercentage"));
        assert_string_equal(xp_strmap_get(&doc->metadata.annotations, "team"), "a");
        assert_null(xp_strmap_get(&doc->metadata.annotations, METRICS));
        assert_null(xp_strmap_get(&doc->metadata.annotations, CURRENT));
        assert_null(xp_strmap_get(&doc->metadata.annotations, BEHAVIOR));
        assert_null(xp_strmap_get(&doc->metadata.annotations, CONDITIONS));
        xp_doc_free(doc);
        json_decref(metrics);
        json_decref(v1);
        json_decref(stored);
}

static struct xp_doc *v1_written_with(const char *key, const char *value, const char *spec_extra)
{
        char text[1024];
        json_t *v1, *annotations;
        struct xp_doc *doc;

        snprintf(text,
                 sizeof(text),
                 "{\"apiVersion\": \"autoscaling/v1\", \"kind\": \"HorizontalPodAutoscaler\","
                 " \"metadata\": {\"name\": \"web\", \"annotations\": {\"team\": \"a\"}},"
                 " \"spec\": {\"scaleTargetRef\": {\"kind\": \"Deployment\", \"name\": \"web\"},"
                 " \"maxReplicas\": 3%s}}",
                 spec_extra);
        v1 = parse(text);
        annotations = (json_t *)xp_json_at(v1, "metadata.annotations");
        assert_int_equal(json_object_set_new(annotations, key, json_string(value)), 0);
        doc = written(v1);
        json_decref(v1);
        return doc;
}

/* What kube-apiserver does since 1.18 (kubernetes#89963): an annotation it cannot decode is
 * ignored, the write is taken, and the annotation is not kept. */
static void malformed_ignored(void **state)
{
        static const char *const cases[][2] = {{METRICS, "{nope"},
                                               {METRICS, "{\"type\": \"Pods\"}"},
                                               {METRICS, "[1, 2]"},
                                               {BEHAVIOR, "[]"},
                                               {BEHAVIOR, ""},
                                               {CONDITIONS, "\"x\""},
                                               {CURRENT, "nope"}};

        (void)state;
        for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
                struct xp_doc *doc = v1_written_with(
                    cases[i][0], cases[i][1], ", \"targetCPUUtilizationPercentage\": 70");

                assert_json_equal(
                    xp_json_at(doc->body, "spec.metrics"),
                    "[{\"type\":\"Resource\",\"resource\":{\"name\":\"cpu\",\"target\":"
                    "{\"type\":\"Utilization\",\"averageUtilization\":70}}}]");
                assert_null(xp_json_at(doc->body, "spec.behavior"));
                assert_null(xp_json_at(doc->body, "status.conditions"));
                assert_null(xp_strmap_get(&doc->metadata.annotations, cases[i][0]));
                assert_string_equal(xp_strmap_get(&doc->metadata.annotations, "team"), "a");
                xp_doc_free(doc);
        }
}

/* The behavior read as encoding/json reads it: members in any case; no rules: no behavior. */
static void behavior_written_in_v1(void **state)
{
        struct xp_doc *doc;

        (void)state;
        doc = v1_written_with(
            BEHAVIOR, "{\"scaleDown\":{\"stabilizationWindowSeconds\":60},\"SCALEUP\":null}", "");
        assert_json_equal(
            xp_json_at(doc->body, "spec.behavior"),
            "{\"scaleUp\":{\"selectPolicy\":\"Max\",\"stabilizationWindowSeconds\":0,"
            "\"policies\":[{\"type\":\"Pods\",\"value\":4,\"periodSeconds\":15},"
            "{\"type\":\"Percent\",\"value\":100,\"periodSeconds\":15}]},"
            "\"scaleDown\":{\"stabilizationWindowSeconds\":60,\"selectPolicy\":\"Max\","
            "\"policies\":[{\"type\":\"Percent\",\"value\":100,\"periodSeconds\":15}]}}");
        /* no cpu target and no other metric: v2's default */
        assert_int_equal(xp_json_int_at(json_array_get(xp_json_at(doc->body, "spec.metrics"), 0),
                                        "resource.target.averageUtilization",
                                        -1),
                         80);
        xp_doc_free(doc);

        doc = v1_written_with(BEHAVIOR, "{\"ScaleUp\":null,\"ScaleDown\":null}", "");
        assert_null(xp_json_at(doc->body, "spec.behavior"));
        xp_doc_free(doc);
}

/* Only other metrics (no cpu target in v1): they are the whole list. */
static void metrics_without_cpu(void **state)
{
        struct xp_doc *doc;

        (void)state;
        doc = v1_written_with(
            METRICS,
            "[{\"type\":\"Resource\",\"resource\":{\"name\":\"memory\",\"targetAverageUtilization\":70}},"
            "{\"type\":\"ContainerResource\",\"containerResource\":{\"name\":\"cpu\","
            "\"targetAverageValue\":\"200m\",\"container\":\"app\"}},"
            "{\"type\":\"External\",\"external\":{\"metricName\":\"queue\",\"targetAverageValue\":\"5\"}}]",
            "");
        assert_json_equal(
            xp_json_at(doc->body, "spec.metrics"),
            "[{\"type\":\"Resource\",\"resource\":{\"name\":\"memory\",\"target\":{\"type\":"
            "\"Utilization\",\"averageUtilization\":70}}},"
            "{\"type\":\"ContainerResource\",\"containerResource\":{\"name\":\"cpu\",\"target\":"
            "{\"type\":\"AverageValue\",\"averageValue\":\"200m\"},\"container\":\"app\"}},"
            "{\"type\":\"External\",\"external\":{\"metric\":{\"name\":\"queue\"},\"target\":"
            "{\"type\":\"AverageValue\",\"averageValue\":\"5\"}}}]");
        xp_doc_free(doc);
}

/* A cpu AverageValue metric before the cpu utilisation one: the utilisation one is v1's target
 * (not lost: the annotation leaves every cpu utilisation metric out). */
static void cpu_value_before_utilization(void **state)
{
        json_t *stored =
            parse("{\"apiVersion\": \"autoscaling/v2\", \"kind\": \"HorizontalPodAutoscaler\","
                  " \"metadata\": {\"name\": \"web\"}, \"spec\": {\"scaleTargetRef\": {\"kind\":"
                  " \"Deployment\", \"name\": \"web\"}, \"minReplicas\": 1, \"maxReplicas\": 3,"
                  " \"metrics\": [{\"type\": \"Resource\", \"resource\": {\"name\": \"cpu\","
                  " \"target\": {\"type\": \"AverageValue\", \"averageValue\": \"200m\"}}},"
                  " {\"type\": \"Resource\", \"resource\": {\"name\": \"cpu\", \"target\":"
                  " {\"type\": \"Utilization\", \"averageUtilization\": 60}}}]}}");
        json_t *v1 = v1_of(stored);
        struct xp_doc *doc;

        (void)state;
        assert_int_equal(xp_json_int_at(v1, "spec.targetCPUUtilizationPercentage", -1), 60);
        doc = written(v1);
        assert_true(
            json_equal(xp_json_at(doc->body, "spec.metrics"), xp_json_at(stored, "spec.metrics")));
        xp_doc_free(doc);
        json_decref(v1);
        json_decref(stored);
}

/* A v2 write does not keep them either (kube-apiserver's v2 conversion drops them). */
static void dropped_from_v2_writes(void **state)
{
        json_t *v2 =
            parse("{\"apiVersion\": \"autoscaling/v2\", \"kind\": \"HorizontalPodAutoscaler\","
                  " \"metadata\": {\"name\": \"web\", \"annotations\": {\"team\": \"a\","
                  " \"" METRICS "\": \"[]\", \"" BEHAVIOR "\": \"{}\"}},"
                  " \"spec\": {\"scaleTargetRef\": {\"kind\": \"Deployment\", \"name\": "
                  "\"web\"}, \"maxReplicas\": 3}}");
        struct xp_doc *doc = NULL;
        struct xp_error err = {0};

        (void)state;
        if (xp_doc_from_json(&xp_kind_hpa, v2, NULL, 0, &doc, &err) < 0)
                fail_msg("decode: %s", err.msg);
        assert_null(xp_strmap_get(&doc->metadata.annotations, METRICS));
        assert_null(xp_strmap_get(&doc->metadata.annotations, BEHAVIOR));
        assert_string_equal(xp_strmap_get(&doc->metadata.annotations, "team"), "a");
        xp_doc_free(doc);
        json_decref(v2);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(metrics_read_in_v1),
            cmocka_unit_test(metrics_round_trip),
            cmocka_unit_test(malformed_ignored),
            cmocka_unit_test(behavior_written_in_v1),
            cmocka_unit_test(metrics_without_cpu),
            cmocka_unit_test(cpu_value_before_utilization),
            cmocka_unit_test(dropped_from_v2_writes),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
