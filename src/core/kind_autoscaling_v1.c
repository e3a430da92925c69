/* SPDX-License-Identifier: Apache-2.0 */
/*
 * HorizontalPodAutoscaler in autoscaling/v1, what `kubectl autoscale` sends: a write in v1 is
 * checked against the v1 type, then converted into autoscaling/v2 as Kubernetes converts it
 * (targetCPUUtilizationPercentage becomes a cpu Resource metric with an averageUtilization
 * target; none gives v2's default of 80%) and decoded on as a v2 document, so one form is stored
 * and the controller reads one. What is read or written through autoscaling/v1 is answered in v1
 * (answer_as: gets, lists and watches convert each object). What v1 has no field for travels
 * as JSON in the autoscaling.alpha.kubernetes.io annotations, both ways, as kube-apiserver
 * converts it, so a v1 client's read-modify-replace loses nothing.
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

static const char *const round_trip_annotations[] = {XP_HPA_METRICS_ANNOTATION,
                                                     XP_HPA_CURRENT_METRICS_ANNOTATION,
                                                     XP_HPA_CONDITIONS_ANNOTATION,
                                                     XP_HPA_BEHAVIOR_ANNOTATION,
                                                     NULL};

void xp_hpa_drop_v1_annotations(struct xp_strmap *map)
{
        for (const char *const *key = round_trip_annotations; *key; key++)
                xp_strmap_remove(map, *key);
}

/* ---- written in v1: the annotations read back into v2 fields ---------------------------- */

/* doc's annotation key parsed, when it is a list of objects, what Go decodes into a slice of
 * structs. Anything else is ignored, as kube-apiserver ignores an annotation it cannot decode
 * (since Kubernetes 1.18: an object holding one must stay readable). New reference. */
static json_t *annotation_list(const struct xp_doc *doc, const char *key)
{
        const char *text = xp_strmap_get(&doc->metadata.annotations, key);
        json_t *list = text ? json_loads(text, 0, NULL) : NULL;
        const json_t *item;
        size_t i;

        json_array_foreach(list, i, item)
        {
                if (!json_is_object(item))
                        break;
        }
        if (!json_is_array(list) || i < json_array_size(list)) {
                json_decref(list);
                return NULL;
        }
        return list;
}

/* Each entry of list converted, appended to out. 0 or -ENOMEM. */
static int append_converted(json_t *out, const json_t *list, json_t *(*convert)(const json_t *))
{
        const json_t *item;
        size_t i;

        json_array_foreach(list, i, item)
        {
                if (json_array_append_new(out, convert(item)) < 0)
                        return -ENOMEM;
        }
        return 0;
}

/* spec.metrics: the metrics annotation's, then the cpu target (Kubernetes puts it last). */
static int metrics_from_v1(const struct xp_doc *doc, json_t *spec)
{
        json_t *cpu = json_object_get(spec, "targetCPUUtilizationPercentage");
        json_t *others = annotation_list(doc, XP_HPA_METRICS_ANNOTATION);
        json_t *metrics = json_array(), *one = NULL;
        int r = metrics ? append_converted(metrics, others, xp_hpa_metric_spec_from_v1) : -ENOMEM;

        if (r == 0 && json_is_integer(cpu)) {
                one = xp_hpa_cpu_metrics(json_integer_value(cpu));
                r = one && json_array_extend(metrics, one) == 0 ? 0 : -ENOMEM;
        }
        json_object_del(spec, "targetCPUUtilizationPercentage");
        json_object_del(spec, "metrics");
        if (r == 0 && json_array_size(metrics)) /* none: v2's default, cpu at 80% */
                r = json_object_set(spec, "metrics", metrics) < 0 ? -ENOMEM : 0;
        json_decref(one);
        json_decref(metrics);
        json_decref(others);
        return r;
}

static int behavior_from_v1(const struct xp_doc *doc, json_t *spec)
{
        const char *text = xp_strmap_get(&doc->metadata.annotations, XP_HPA_BEHAVIOR_ANNOTATION);
        json_t *go = text ? json_loads(text, 0, NULL) : NULL, *behavior = NULL;
        int r = xp_hpa_behavior_from_v1(go, &behavior);

        json_decref(go);
        if (r == 0 && behavior && json_object_set_new(spec, "behavior", behavior) < 0)
                r = -1;
        return r < 0 ? -ENOMEM : 0;
}

/* status.currentMetrics: the current-metrics annotation's (they say more than the cpu
 * percentage), else the percentage; status.conditions: the conditions annotation's. */
static int status_from_v1(const struct xp_doc *doc, json_t *status)
{
        json_t *cpu = json_object_get(status, "currentCPUUtilizationPercentage");
        json_t *current = annotation_list(doc, XP_HPA_CURRENT_METRICS_ANNOTATION);
        json_t *conditions = annotation_list(doc, XP_HPA_CONDITIONS_ANNOTATION);
        json_t *metrics = json_array();
        int r = metrics ? 0 : -ENOMEM;

        if (r == 0 && current)
                r = append_converted(metrics, current, xp_hpa_metric_status_from_v1);
        else if (r == 0 && json_is_integer(cpu))
                r = json_array_append_new(metrics,
                                          json_pack("{s:s, s:{s:s, s:{s:O}}}",
                                                    "type",
                                                    "Resource",
                                                    "resource",
                                                    "name",
                                                    "cpu",
                                                    "current",
                                                    "averageUtilization",
                                                    cpu));
        json_object_del(status, "currentCPUUtilizationPercentage");
        json_object_del(status, "currentMetrics");
        if (r == 0 && json_array_size(metrics))
                r = json_object_set(status, "currentMetrics", metrics);
        if (r == 0 && conditions)
                r = json_object_set(status, "conditions", conditions);
        json_decref(metrics);
        json_decref(current);
        json_decref(conditions);
        return r < 0 ? -ENOMEM : 0;
}

/* A v1 object as the v2 one it stands for (Kubernetes' Convert_v1_HorizontalPodAutoscaler_To_
 * autoscaling_HorizontalPodAutoscaler); the v2 kind's defaults and validation then run. */
static int hpa_v1_to_v2(struct xp_doc *doc)
{
        json_t *spec = json_object_get(doc->body, "spec");
        json_t *status = json_object_get(doc->body, "status");
        int r = 0;

        if (json_is_object(spec))
                r = metrics_from_v1(doc, spec);
        if (r == 0 && json_is_object(spec))
                r = behavior_from_v1(doc, spec);
        if (r == 0 && json_is_object(status))
                r = status_from_v1(doc, status);
        if (r < 0)
                return r;
        xp_hpa_drop_v1_annotations(&doc->metadata.annotations);
        doc->kind = &xp_kind_hpa;
        return xp_kind_hpa.doc_defaults(doc);
}

/* ---- read in v1: the stored v2 object converted -------------------------------------------- */

static bool is_cpu(const json_t *m)
{
        return strcmp(xp_json_str_at(m, "type", ""), "Resource") == 0 &&
               strcmp(xp_json_str_at(m, "resource.name", ""), "cpu") == 0;
}

/* The metrics v1's targetCPUUtilizationPercentage cannot hold: all but cpu utilisation ones. */
static bool is_other_metric(const json_t *m)
{
        return !is_cpu(m) || !xp_json_at(m, "resource.target.averageUtilization");
}

static bool every_entry(const json_t *m)
{
        (void)m;
        return true;
}

/* The entries of list that keep() takes, converted (NULL: none, or no memory). */
static json_t *
converted(const json_t *list, bool (*keep)(const json_t *), json_t *(*convert)(const json_t *))
{
        json_t *out = json_array();
        const json_t *item;
        size_t i;

        json_array_foreach(list, i, item)
        {
                if (out && keep(item) && json_array_append_new(out, convert(item)) < 0) {
                        json_decref(out);
                        out = NULL;
                }
        }
        if (out && json_array_size(out) == 0) {
                json_decref(out);
                out = NULL;
        }
        return out;
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

static json_t *condition_to_v1(const json_t *condition)
{
        static const char *const fields[] = {
            "type", "status", "lastTransitionTime", "reason", "message", NULL};

        return in_order(condition, fields);
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

/* What v1 has no field for, in out's annotations (any there before dropped first). */
static int annotations_to_v1(json_t *out, const json_t *spec, const json_t *status)
{
        json_t *metadata = json_object_get(out, "metadata");
        json_t *annotations = json_object_get(metadata, "annotations");
        const json_t *metrics = json_object_get(spec, "metrics"),
                     *current = json_object_get(status, "currentMetrics");
        size_t before = json_object_size(annotations);
        int r;

        for (const char *const *key = round_trip_annotations; *key; key++)
                json_object_del(annotations, *key);
        if (before && json_object_size(annotations) == 0)
                json_object_del(metadata, "annotations");
        /* in the order Go writes a map's keys: sorted */
        r = set_annotation(out,
                           XP_HPA_BEHAVIOR_ANNOTATION,
                           xp_hpa_behavior_to_v1(json_object_get(spec, "behavior")));
        if (r == 0)
                r = set_annotation(
                    out,
                    XP_HPA_CONDITIONS_ANNOTATION,
                    converted(json_object_get(status, "conditions"), every_entry, condition_to_v1));
        if (r == 0)
                r = set_annotation(out,
                                   XP_HPA_CURRENT_METRICS_ANNOTATION,
                                   converted(current, every_entry, xp_hpa_metric_status_to_v1));
        if (r == 0)
                r = set_annotation(out,
                                   XP_HPA_METRICS_ANNOTATION,
                                   converted(metrics, is_other_metric, xp_hpa_metric_spec_to_v1));
        return r;
}

/* v1's targetCPUUtilizationPercentage: the first cpu Resource metric with a utilisation target
 * (the annotation leaves them all out: one after a cpu AverageValue metric is not lost); v1's
 * currentCPUUtilizationPercentage: the last cpu one's (Kubernetes' loop). */
static const json_t *cpu_target(const json_t *metrics)
{
        const json_t *m;
        size_t i;

        json_array_foreach(metrics, i, m)
        {
                if (is_cpu(m) && xp_json_at(m, "resource.target.averageUtilization"))
                        return xp_json_at(m, "resource.target.averageUtilization");
        }
        return NULL;
}

static const json_t *cpu_current(const json_t *metrics)
{
        const json_t *m, *found = NULL;
        size_t i;

        json_array_foreach(metrics, i, m)
        {
                if (is_cpu(m) && xp_json_at(m, "resource.current.averageUtilization"))
                        found = xp_json_at(m, "resource.current.averageUtilization");
        }
        return found;
}

/* HorizontalPodAutoscaler v2 as v1 shows it (Kubernetes' Convert_autoscaling_* functions). */
static int hpa_v2_to_v1(const json_t *stored, json_t **ret)
{
        const json_t *spec = json_object_get(stored, "spec"),
                     *status = json_object_get(stored, "status");
        json_t *out = json_deep_copy(stored);
        /* pointers with omitempty in Go: absent, not null, when unset */
        json_t *v1spec = json_pack("{s:O*, s:O*, s:O*, s:O*}",
                                   "scaleTargetRef",
                                   json_object_get(spec, "scaleTargetRef"),
                                   "minReplicas",
                                   json_object_get(spec, "minReplicas"),
                                   "maxReplicas",
                                   json_object_get(spec, "maxReplicas"),
                                   "targetCPUUtilizationPercentage",
                                   cpu_target(json_object_get(spec, "metrics")));
        json_t *v1status = json_pack("{s:O*, s:O*, s:i, s:i, s:O*}",
                                     "observedGeneration",
                                     json_object_get(status, "observedGeneration"),
                                     "lastScaleTime",
                                     json_object_get(status, "lastScaleTime"),
                                     "currentReplicas",
                                     (int)xp_json_int_at(status, "currentReplicas", 0),
                                     "desiredReplicas",
                                     (int)xp_json_int_at(status, "desiredReplicas", 0),
                                     "currentCPUUtilizationPercentage",
                                     cpu_current(json_object_get(status, "currentMetrics")));
        int r = out && v1spec && v1status ? annotations_to_v1(out, spec, status) : -ENOMEM;

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
