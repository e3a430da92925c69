/* SPDX-License-Identifier: Apache-2.0 */
/*
 * HorizontalPodAutoscaler in autoscaling/v1, what `kubectl autoscale` sends: a write in v1 is
 * checked against the v1 type, then converted into autoscaling/v2 as Kubernetes converts it
 * (targetCPUUtilizationPercentage becomes a cpu Resource metric with an averageUtilization
 * target; none gives v2's default of 80%) and decoded on as a v2 document, so one form is stored
 * and the controller reads one. What is read or written through autoscaling/v1 is answered in v1
 * (answer_as: gets, lists and watches convert each object).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kind_autoscaling.h"
#include "protobuf_internal.h"
#include "xpool/doc.h"
#include "xpool/kind.h"
#include "xpool/macro.h"
#include "xpool/strmap.h"

/* What v1 has no field for, kept by Kubernetes' conversion in annotations as JSON text (the
 * metrics other than a cpu utilisation target are not: see docs/workloads.md). */
#define CONDITIONS_ANNOTATION "autoscaling.alpha.kubernetes.io/conditions"
#define BEHAVIOR_ANNOTATION   "autoscaling.alpha.kubernetes.io/behavior"

/* doc's annotation key parsed into body.<object>.<member> (when the object exists), and the
 * annotation dropped, as Kubernetes reads it back into v2. One that is no JSON is left as it is
 * (Kubernetes refuses the write; doc_defaults cannot, and the text harms nothing). */
static int
take_annotation(struct xp_doc *doc, const char *key, const char *object, const char *member)
{
        const char *text = xp_strmap_get(&doc->metadata.annotations, key);
        json_t *into = json_object_get(doc->body, object);
        json_t *value = text ? json_loads(text, JSON_DECODE_ANY, NULL) : NULL;

        if (!value)
                return 0;
        if (json_is_object(into) && json_object_set(into, member, value) < 0) {
                json_decref(value);
                return -ENOMEM;
        }
        json_decref(value);
        return xp_strmap_remove(&doc->metadata.annotations, key) < 0 ? -ENOMEM : 0;
}

/* The v1 spec's CPU target as v2 metrics; the v2 kind's defaults and validation then run. */
static int hpa_v1_to_v2(struct xp_doc *doc)
{
        json_t *spec = json_object_get(doc->body, "spec");
        json_t *cpu = json_object_get(spec, "targetCPUUtilizationPercentage");
        json_t *status = json_object_get(doc->body, "status");
        int r = take_annotation(doc, BEHAVIOR_ANNOTATION, "spec", "behavior");

        if (r >= 0)
                r = take_annotation(doc, CONDITIONS_ANNOTATION, "status", "conditions");
        if (r < 0)
                return r;

        if (json_is_object(spec) && json_is_integer(cpu)) {
                json_t *metrics = xp_hpa_cpu_metrics(json_integer_value(cpu));
                if (!metrics || json_object_set_new(spec, "metrics", metrics) < 0)
                        return -ENOMEM;
        }
        if (json_is_object(spec))
                json_object_del(spec, "targetCPUUtilizationPercentage");
        if (json_is_object(status))
                json_object_del(status, "currentCPUUtilizationPercentage");
        doc->kind = &xp_kind_hpa;
        return xp_kind_hpa.doc_defaults(doc);
}

/* The cpu Utilization entry of a v2 metrics list (spec.metrics or status.currentMetrics). */
static const json_t *cpu_metric(const json_t *metrics)
{
        const json_t *m;
        size_t i;

        json_array_foreach(metrics, i, m)
        {
                if (xp_json_str_at(m, "resource.name", NULL) &&
                    strcmp(xp_json_str_at(m, "resource.name", ""), "cpu") == 0)
                        return json_object_get(m, "resource");
        }
        return NULL;
}

/* A copy of object with the members named, in that order (Go's order of the fields). */
static json_t *in_order(const json_t *object, const char *const *keys)
{
        json_t *out = json_object();

        for (; out && *keys; keys++) {
                json_t *value = json_object_get(object, *keys);

                if (value && json_object_set(out, *keys, value) < 0) {
                        json_decref(out);
                        return NULL;
                }
        }
        return out;
}

static const char *const condition_fields[] = {
    "type", "status", "lastTransitionTime", "reason", "message", NULL};
static const char *const rules_fields[] = {
    "stabilizationWindowSeconds", "selectPolicy", "policies", NULL};
static const char *const policy_fields[] = {"type", "value", "periodSeconds", NULL};

/* A list of objects, each with the members named, in that order (NULL: empty, or no memory). */
static json_t *list_in_order(const json_t *list, const char *const *keys)
{
        json_t *out = json_array_size(list) ? json_array() : NULL;
        const json_t *item;
        size_t i;

        json_array_foreach(list, i, item)
        {
                if (out && json_array_append_new(out, in_order(item, keys)) < 0) {
                        json_decref(out);
                        out = NULL;
                }
        }
        return out;
}

/* One direction's scaling rules in Go's order, its policies too (NULL: none, or no memory). */
static json_t *rules_json(const json_t *rules)
{
        json_t *out = json_is_object(rules) ? in_order(rules, rules_fields) : NULL;
        json_t *policies = list_in_order(json_object_get(rules, "policies"), policy_fields);

        if (out && policies && json_object_set(out, "policies", policies) < 0) {
                json_decref(out);
                out = NULL;
        }
        json_decref(policies);
        return out;
}

/* spec.behavior as the behavior annotation's JSON (NULL: none, or no memory). */
static json_t *behavior_json(const json_t *behavior)
{
        if (!json_is_object(behavior))
                return NULL;
        return json_pack("{s:o*, s:o*}",
                         "scaleUp",
                         rules_json(json_object_get(behavior, "scaleUp")),
                         "scaleDown",
                         rules_json(json_object_get(behavior, "scaleDown")));
}

/* out's metadata.annotations[key] = value as compact JSON text (value taken; NULL: none). */
static int set_annotation(json_t *out, const char *key, json_t *value)
{
        json_t *metadata = json_object_get(out, "metadata"), *annotations;
        char *text;
        int r;

        if (!value)
                return 0;
        text = json_dumps(value, JSON_COMPACT | JSON_ENCODE_ANY);
        json_decref(value);
        annotations = json_object_get(metadata, "annotations");
        if (!json_is_object(annotations) && json_is_object(metadata)) {
                annotations = json_object();
                if (json_object_set_new(metadata, "annotations", annotations) < 0)
                        annotations = NULL;
        }
        r = text && annotations ? json_object_set_new(annotations, key, json_string(text)) : -1;
        free(text);
        return r < 0 ? -ENOMEM : 0;
}

/* HorizontalPodAutoscaler v2 as v1 shows it (Kubernetes' Convert_autoscaling_* functions: the
 * conditions and the behavior in annotations, less the one that carries the other metrics). */
static int hpa_v2_to_v1(const json_t *stored, json_t **ret)
{
        const json_t *spec = json_object_get(stored, "spec"),
                     *status = json_object_get(stored, "status");
        const json_t *target = cpu_metric(json_object_get(spec, "metrics")),
                     *current = cpu_metric(json_object_get(status, "currentMetrics"));
        json_t *out = json_deep_copy(stored);
        json_t *v1spec = json_pack("{s:O*, s:O*, s:O*}",
                                   "scaleTargetRef",
                                   json_object_get(spec, "scaleTargetRef"),
                                   "minReplicas",
                                   json_object_get(spec, "minReplicas"),
                                   "maxReplicas",
                                   json_object_get(spec, "maxReplicas"));
        /* pointers with omitempty in Go: absent, not null, when unset */
        json_t *v1status = json_pack("{s:O*, s:O*, s:i, s:i}",
                                     "observedGeneration",
                                     json_object_get(status, "observedGeneration"),
                                     "lastScaleTime",
                                     json_object_get(status, "lastScaleTime"),
                                     "currentReplicas",
                                     (int)xp_json_int_at(status, "currentReplicas", 0),
                                     "desiredReplicas",
                                     (int)xp_json_int_at(status, "desiredReplicas", 0));
        int r = out && v1spec && v1status ? 0 : -1;

        if (r == 0)
                r = set_annotation(
                    out,
                    CONDITIONS_ANNOTATION,
                    list_in_order(json_object_get(status, "conditions"), condition_fields));
        if (r == 0)
                r = set_annotation(
                    out, BEHAVIOR_ANNOTATION, behavior_json(json_object_get(spec, "behavior")));

        if (r == 0 && xp_json_at(target, "target.averageUtilization"))
                r = json_object_set(v1spec,
                                    "targetCPUUtilizationPercentage",
                                    (json_t *)xp_json_at(target, "target.averageUtilization"));
        if (r == 0 && xp_json_at(current, "current.averageUtilization"))
                r = json_object_set(v1status,
                                    "currentCPUUtilizationPercentage",
                                    (json_t *)xp_json_at(current, "current.averageUtilization"));
        if (r == 0)
                r = json_object_set_new(out, "apiVersion", json_string("autoscaling/v1"));
        if (r == 0)
                r = json_object_set_new(out, "spec", v1spec), v1spec = NULL;
        if (r == 0)
                r = json_object_set_new(out, "status", v1status), v1status = NULL;
        json_decref(v1spec);
        json_decref(v1status);
        if (r < 0) {
                json_decref(out);
                return -ENOMEM;
        }
        *ret = out;
        return 0;
}

extern const struct xp_table_kind xp_table_hpa; /* kind_autoscaling_hpa.c */

/* k8s.io/api/autoscaling/v1's generated.proto: kubectl autoscale sends protobuf. */
MESSAGE(cross_ref,
        "autoscaling/v1 CrossVersionObjectReference",
        STR(1, "kind"),
        STR(2, "name"),
        STR(3, "apiVersion"));

MESSAGE(hpa_v1_spec,
        "autoscaling/v1 HorizontalPodAutoscalerSpec",
        MSG(1, "scaleTargetRef", cross_ref),
        I32_P(2, "minReplicas"),
        I32(3, "maxReplicas"),
        I32_P(4, "targetCPUUtilizationPercentage"));

MESSAGE(hpa_v1_status,
        "autoscaling/v1 HorizontalPodAutoscalerStatus",
        I64_P(1, "observedGeneration"),
        TIME(2, "lastScaleTime"),
        I32(3, "currentReplicas"),
        I32(4, "desiredReplicas"),
        I32_P(5, "currentCPUUtilizationPercentage"));

static const struct pb_message hpa_v1_proto = {
    .name = "autoscaling/v1 HorizontalPodAutoscaler",
    .fields = (const struct pb_field_desc[]){MSG(1, "metadata", xp_pb_object_meta),
                                             MSG(2, "spec", hpa_v1_spec),
                                             MSG(3, "status", hpa_v1_status)},
    .n_fields = 3,
};

XP_DOC_KIND_DECODER(xp_kind_hpa_v1)

static const char *const hpa_short_names[] = {"hpa", NULL};
static const char *const hpa_categories[] = {"all", NULL};

const struct xp_kind xp_kind_hpa_v1 = {
    .kind = "HorizontalPodAutoscaler",
    .list_kind = "HorizontalPodAutoscalerList",
    .group = "autoscaling",
    .version = "v1",
    .api_version = "autoscaling/v1",
    .plural = "horizontalpodautoscalers",
    .singular = "horizontalpodautoscaler",
    .short_names = hpa_short_names,
    .categories = hpa_categories,
    .namespaced = true,
    XP_DOC_KIND_OPS(xp_kind_hpa_v1),
    .schema_type = "HorizontalPodAutoscalerV1",
    .doc_defaults = hpa_v1_to_v2,
    .table = &xp_table_hpa, /* kubectl get hpa.v1.autoscaling */
    .status_subresource = true,
    .protobuf = &hpa_v1_proto,
    .answer_as = hpa_v2_to_v1,
};
