/* SPDX-License-Identifier: Apache-2.0 */
/*
 * HorizontalPodAutoscaler's kinds. Scaling to zero (src/core/kind_autoscaling_hpa.c): minReplicas
 * 0 is refused in Kubernetes' words unless allowed (the HPAScaleToZero gate, or an object that
 * had 0 already), and then only with an Object or External metric.
 * Through autoscaling/v1 (src/core/kind_autoscaling_v1.c) as
 * kube-apiserver 1.32 converts it: a stored v2 object answered in v1 carries its conditions,
 * current metrics and behavior in the autoscaling.alpha.kubernetes.io annotations, as JSON in Go's
 * field order, and leaves out the status pointers that are unset (no null); a v1 write with those
 * annotations gets them back as v2 fields and the annotations dropped (one that is no JSON is
 * ignored). The metrics' annotations: test_kind_hpa_v1.c.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
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

static json_t *parse(const char *text)
{
        json_error_t jerr;
        json_t *json = json_loads(text, 0, &jerr);

        if (!json)
                fail_msg("bad JSON at %d: %s", jerr.position, jerr.text);
        return json;
}

static char *v1_of(const char *stored_text)
{
        json_t *stored = parse(stored_text), *v1 = NULL;
        char *text;

        assert_int_equal(xp_kind_hpa_v1.answer_as(stored, &v1), 0);
        text = json_dumps(v1, JSON_COMPACT);
        json_decref(stored);
        json_decref(v1);
        return text;
}

static void read_in_v1(void **state)
{
        char *text;

        (void)state;
        /* new: no status written yet, no behavior */
        text = v1_of("{\"apiVersion\": \"autoscaling/v2\", \"kind\": \"HorizontalPodAutoscaler\","
                     " \"metadata\": {\"name\": \"web\"},"
                     " \"spec\": {\"scaleTargetRef\": {\"kind\": \"Deployment\", \"name\": \"web\","
                     " \"apiVersion\": \"apps/v1\"}, \"minReplicas\": 1, \"maxReplicas\": 3,"
                     " \"metrics\": [{\"type\": \"Resource\", \"resource\": {\"name\": \"cpu\","
                     " \"target\": {\"type\": \"Utilization\", \"averageUtilization\": 50}}}]},"
                     " \"status\": {\"currentReplicas\": 0, \"desiredReplicas\": 0}}");
        assert_string_equal(
            text,
            "{\"apiVersion\":\"autoscaling/v1\",\"kind\":\"HorizontalPodAutoscaler\","
            "\"metadata\":{\"name\":\"web\"},\"spec\":{\"scaleTargetRef\":{\"kind\":\"Deployment\","
            "\"name\":\"web\",\"apiVersion\":\"apps/v1\"},\"minReplicas\":1,\"maxReplicas\":3,"
            "\"targetCPUUtilizationPercentage\":50},"
            "\"status\":{\"currentReplicas\":0,\"desiredReplicas\":0}}");
        free(text);

        /* running: conditions and behavior (members stored out of Go's order) as annotations */
        text = v1_of(
            "{\"apiVersion\": \"autoscaling/v2\", \"kind\": \"HorizontalPodAutoscaler\","
            " \"metadata\": {\"name\": \"web\", \"annotations\": {\"team\": \"a\"}},"
            " \"spec\": {\"scaleTargetRef\": {\"kind\": \"Deployment\", \"name\": \"web\"},"
            " \"maxReplicas\": 3, \"behavior\": {\"scaleDown\": {\"policies\": [{\"periodSeconds\": 15,"
            " \"type\": \"Percent\", \"value\": 100}], \"selectPolicy\": \"Max\","
            " \"stabilizationWindowSeconds\": 300}}},"
            " \"status\": {\"observedGeneration\": 2, \"lastScaleTime\": \"2026-12-05T10:00:00Z\","
            " \"currentReplicas\": 2, \"desiredReplicas\": 2,"
            " \"currentMetrics\": [{\"type\": \"Resource\", \"resource\": {\"name\": \"cpu\","
            " \"current\": {\"averageUtilization\": 40, \"averageValue\": \"40m\"}}}],"
            " \"conditions\": [{\"message\": \"ready\", \"type\": \"AbleToScale\", \"status\": \"True\","
            " \"reason\": \"ReadyForNewScale\", \"lastTransitionTime\": \"2026-12-05T10:00:00Z\"}]}}");
        assert_string_equal(
            text,
            "{\"apiVersion\":\"autoscaling/v1\",\"kind\":\"HorizontalPodAutoscaler\","
            "\"metadata\":{\"name\":\"web\",\"annotations\":{\"team\":\"a\","
            "\"autoscaling.alpha.kubernetes.io/behavior\":\"{\\\"ScaleUp\\\":null,"
            "\\\"ScaleDown\\\":{\\\"StabilizationWindowSeconds\\\":300,"
            "\\\"SelectPolicy\\\":\\\"Max\\\",\\\"Policies\\\":[{\\\"Type\\\":"
            "\\\"Percent\\\",\\\"Value\\\":100,\\\"PeriodSeconds\\\":15}]}}\","
            "\"autoscaling.alpha.kubernetes.io/conditions\":\"[{\\\"type\\\":\\\"AbleToScale\\\","
            "\\\"status\\\":\\\"True\\\",\\\"lastTransitionTime\\\":\\\"2026-12-05T10:00:00Z\\\","
            "\\\"reason\\\":\\\"ReadyForNewScale\\\",\\\"message\\\":\\\"ready\\\"}]\","
            "\"autoscaling.alpha.kubernetes.io/current-metrics\":\"[{\\\"type\\\":\\\"Resource\\\","
            "\\\"resource\\\":{\\\"name\\\":\\\"cpu\\\",\\\"currentAverageUtilization\\\":40,"
            "\\\"currentAverageValue\\\":\\\"40m\\\"}}]\"}},"
            "\"spec\":{\"scaleTargetRef\":{\"kind\":\"Deployment\",\"name\":\"web\"},"
            "\"maxReplicas\":3},\"status\":{\"observedGeneration\":2,"
            "\"lastScaleTime\":\"2026-12-05T10:00:00Z\",\"currentReplicas\":2,\"desiredReplicas\":2,"
            "\"currentCPUUtilizationPercentage\":40}}");
        free(text);
}

static void written_in_v1(void **state)
{
        json_t *v1 =
            parse("{\"apiVersion\": \"autoscaling/v1\", \"kind\": \"HorizontalPodAutoscaler\","
                  " \"metadata\": {\"name\": \"web\", \"annotations\": {\"team\": \"a\","
                  " \"autoscaling.alpha.kubernetes.io/behavior\":"
                  " \"{\\\"scaleDown\\\":{\\\"stabilizationWindowSeconds\\\":60}}\","
                  " \"autoscaling.alpha.kubernetes.io/conditions\": \"[]\"}},"
                  " \"spec\": {\"scaleTargetRef\": {\"kind\": \"Deployment\", \"name\": \"web\"},"
                  " \"maxReplicas\": 3, \"targetCPUUtilizationPercentage\": 70}}");
        struct xp_doc *doc = NULL;
        struct xp_error err = {0};

        (void)state;
        if (xp_doc_from_json(&xp_kind_hpa_v1, v1, NULL, 0, &doc, &err) < 0)
                fail_msg("decode: %s", err.msg);
        assert_ptr_equal(doc->kind, &xp_kind_hpa);
        assert_int_equal(
            xp_json_int_at(doc->body, "spec.behavior.scaleDown.stabilizationWindowSeconds", -1),
            60);
        assert_int_equal(xp_json_int_at(json_array_get(xp_json_at(doc->body, "spec.metrics"), 0),
                                        "resource.target.averageUtilization",
                                        -1),
                         70);
        assert_string_equal(xp_strmap_get(&doc->metadata.annotations, "team"), "a");
        assert_null(
            xp_strmap_get(&doc->metadata.annotations, "autoscaling.alpha.kubernetes.io/behavior"));
        assert_null(xp_strmap_get(&doc->metadata.annotations,
                                  "autoscaling.alpha.kubernetes.io/conditions"));
        xp_doc_free(doc);
        json_decref(v1);

        /* an annotation that is no JSON is ignored and dropped, as Kubernetes does */
        v1 = parse("{\"apiVersion\": \"autoscaling/v1\", \"kind\": \"HorizontalPodAutoscaler\","
                   " \"metadata\": {\"name\": \"web\", \"annotations\":"
                   " {\"autoscaling.alpha.kubernetes.io/behavior\": \"{nope\"}},"
                   " \"spec\": {\"scaleTargetRef\": {\"kind\": \"Deployment\", \"name\": \"web\"},"
                   " \"maxReplicas\": 3}}");
        doc = NULL;
        if (xp_doc_from_json(&xp_kind_hpa_v1, v1, NULL, 0, &doc, &err) < 0)
                fail_msg("decode: %s", err.msg);
        assert_null(
            xp_strmap_get(&doc->metadata.annotations, "autoscaling.alpha.kubernetes.io/behavior"));
        assert_null(xp_json_at(doc->body, "spec.behavior"));
        xp_doc_free(doc);
        json_decref(v1);
}

/* An HPA of minReplicas 0 decoded (old: the stored one, or NULL): 0, or the error's text. */
static const char *decode_min0(const char *metric, bool with_old, struct xp_error *err)
{
        char text[1024];
        struct xp_doc *doc = NULL, *old = NULL;
        json_t *json;
        int r;

        snprintf(text,
                 sizeof text,
                 "{\"apiVersion\": \"autoscaling/v2\", \"kind\": \"HorizontalPodAutoscaler\","
                 " \"metadata\": {\"name\": \"q\"}, \"spec\": {\"scaleTargetRef\":"
                 " {\"kind\": \"Deployment\", \"name\": \"q\"}, \"minReplicas\": 0,"
                 " \"maxReplicas\": 3, \"metrics\": [%s]}}",
                 metric);
        json = parse(text);
        *err = (struct xp_error){0};
        if (with_old) /* stored before the gate went: decoded trusted, as the store's are */
                assert_int_equal(
                    xp_doc_from_json(&xp_kind_hpa, json, NULL, XP_DECODE_TRUSTED, &old, err), 0);
        /* an update: the new object's rules checked against the stored one */
        r = xp_doc_from_json(&xp_kind_hpa, json, NULL, old ? XP_DECODE_TRUSTED : 0, &doc, err);
        if (r >= 0 && old)
                r = xp_doc_validate(doc, old, err);
        xp_doc_free(doc);
        xp_doc_free(old);
        json_decref(json);
        return r < 0 ? err->msg : NULL;
}

static const char external[] =
    "{\"type\": \"External\", \"external\": {\"metric\": {\"name\": \"waiting\"},"
    " \"target\": {\"type\": \"AverageValue\", \"averageValue\": \"10\"}}}";
static const char cpu[] = "{\"type\": \"Resource\", \"resource\": {\"name\": \"cpu\","
                          " \"target\": {\"type\": \"Utilization\", \"averageUtilization\": 50}}}";

static void scale_to_zero(void **state)
{
        struct xp_error err;
        const char *msg;

        (void)state;
        msg = decode_min0(external, false, &err);
        assert_non_null(msg);
        assert_non_null(
            strstr(msg, "spec.minReplicas: Invalid value: 0: must be greater than or equal to 1"));
        /* an object stored with 0 keeps validating (Kubernetes' MinReplicasLowerBound) */
        assert_null(decode_min0(external, true, &err));

        xp_kind_hpa_allow_scale_to_zero(true);
        assert_null(decode_min0(external, false, &err));
        msg = decode_min0(cpu, false, &err);
        assert_non_null(msg);
        assert_non_null(strstr(msg,
                               "spec.metrics: Forbidden: must specify at least one Object or "
                               "External metric to support scaling to zero replicas"));
        xp_kind_hpa_allow_scale_to_zero(false);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(read_in_v1),
            cmocka_unit_test(written_in_v1),
            cmocka_unit_test(scale_to_zero),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
