/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The metrics of a HorizontalPodAutoscaler in the shapes autoscaling/v1 keeps them in its
 * annotations (k8s.io/api/autoscaling/v1's MetricSpec and MetricStatus, which are v2beta1's:
 * metricName, targetAverageValue, currentValue...), to and from autoscaling/v2's, as
 * kube-apiserver's conversion writes and reads them. Members come in Go's field order; a Go
 * Quantity that is no pointer is written "0" when unset, as json.Marshal writes it.
 */
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

#include "kind_autoscaling.h"
#include "xpool/doc.h"

static const char *str_or(const json_t *object, const char *path)
{
        return xp_json_str_at(object, path, "");
}

static json_t *at(const json_t *object, const char *path)
{
        return (json_t *)xp_json_at(object, path);
}

/* A Quantity that is no pointer in Go: the value, or "0". New reference. */
static json_t *quantity(const json_t *object, const char *path)
{
        json_t *v = at(object, path);

        return v ? json_incref(v) : json_string("0");
}

/* CrossVersionObjectReference, the same members in both versions (apiVersion omitempty). */
static json_t *reference(const json_t *ref)
{
        return json_pack("{s:s, s:s, s:O*}",
                         "kind",
                         str_or(ref, "kind"),
                         "name",
                         str_or(ref, "name"),
                         "apiVersion",
                         at(ref, "apiVersion"));
}

/* v2's MetricIdentifier from v1's metricName and the selector under selector_key. */
static json_t *identifier(const json_t *v1, const char *selector_key)
{
        return json_pack(
            "{s:s, s:O*}", "name", str_or(v1, "metricName"), "selector", at(v1, selector_key));
}

/* One converter per source member, in MetricSpec's (and MetricStatus') Go order. */
typedef json_t *convert_fn(const json_t *source);
static const char *const source_keys[] = {
    "object", "pods", "resource", "containerResource", "external"};

/* {type, and each source member present converted}; NULL: no memory. */
static json_t *convert_metric(const json_t *m, convert_fn *const convert[])
{
        json_t *out = json_pack("{s:s}", "type", str_or(m, "type"));

        for (size_t i = 0; out && i < sizeof(source_keys) / sizeof(*source_keys); i++) {
                const json_t *source = json_object_get(m, source_keys[i]);

                if (json_is_object(source) &&
                    json_object_set_new(out, source_keys[i], convert[i](source)) < 0) {
                        json_decref(out);
                        out = NULL;
                }
        }
        return out;
}

/* ---- v2 -> v1: spec.metrics[i] (side "target") and status.currentMetrics[i] ("current") -- */

/* v2's side.key as v1 holds it: a Quantity that is no pointer in Go (required) is "0" when
 * unset. New reference, or NULL. */
static json_t *side_value(const json_t *s, const char *side, const char *key, bool required)
{
        json_t *v = json_object_get(json_object_get(s, side), key);

        if (v)
                return json_incref(v);
        return required ? json_string("0") : NULL;
}

/* v1's name of a side's member: "target" "AverageValue" is targetAverageValue. */
struct v1_names {
        char value[32], average[32], utilization[40];
};

static void v1_names(struct v1_names *n, const char *side)
{
        snprintf(n->value, sizeof(n->value), "%sValue", side);
        snprintf(n->average, sizeof(n->average), "%sAverageValue", side);
        snprintf(n->utilization, sizeof(n->utilization), "%sAverageUtilization", side);
}

static json_t *object_to_v1(const json_t *s, const char *side)
{
        struct v1_names n;

        v1_names(&n, side);
        return json_pack("{s:o, s:s, s:o, s:O*, s:o*}",
                         "target",
                         reference(at(s, "describedObject")),
                         "metricName",
                         str_or(s, "metric.name"),
                         n.value,
                         side_value(s, side, "value", true),
                         "selector",
                         at(s, "metric.selector"),
                         "averageValue",
                         side_value(s, side, "averageValue", false));
}

static json_t *pods_to_v1(const json_t *s, const char *side)
{
        struct v1_names n;

        v1_names(&n, side);
        return json_pack("{s:s, s:o, s:O*}",
                         "metricName",
                         str_or(s, "metric.name"),
                         n.average,
                         side_value(s, side, "averageValue", true),
                         "selector",
                         at(s, "metric.selector"));
}

/* Resource and ContainerResource (the container where the source has one): the status' average
 * value is required, the target's is not. */
static json_t *resource_to_v1(const json_t *s, const char *side, bool status)
{
        struct v1_names n;

        v1_names(&n, side);
        return json_pack("{s:s, s:o*, s:o*, s:O*}",
                         "name",
                         str_or(s, "name"),
                         n.utilization,
                         side_value(s, side, "averageUtilization", false),
                         n.average,
                         side_value(s, side, "averageValue", status),
                         "container",
                         at(s, "container"));
}

/* External: the status' value is required, the target's is not. */
static json_t *external_to_v1(const json_t *s, const char *side, bool status)
{
        struct v1_names n;

        v1_names(&n, side);
        return json_pack("{s:s, s:O*, s:o*, s:o*}",
                         "metricName",
                         str_or(s, "metric.name"),
                         "metricSelector",
                         at(s, "metric.selector"),
                         n.value,
                         side_value(s, side, "value", status),
                         n.average,
                         side_value(s, side, "averageValue", false));
}

static json_t *object_spec_to_v1(const json_t *s)
{
        return object_to_v1(s, "target");
}

static json_t *pods_spec_to_v1(const json_t *s)
{
        return pods_to_v1(s, "target");
}

static json_t *resource_spec_to_v1(const json_t *s)
{
        return resource_to_v1(s, "target", false);
}

static json_t *external_spec_to_v1(const json_t *s)
{
        return external_to_v1(s, "target", false);
}

static json_t *object_status_to_v1(const json_t *s)
{
        return object_to_v1(s, "current");
}

static json_t *pods_status_to_v1(const json_t *s)
{
        return pods_to_v1(s, "current");
}

static json_t *resource_status_to_v1(const json_t *s)
{
        return resource_to_v1(s, "current", true);
}

static json_t *external_status_to_v1(const json_t *s)
{
        return external_to_v1(s, "current", true);
}

/* ---- spec.metrics[i]: v1 -> v2 ------------------------------------------------------------ */

/* v2's MetricTarget: type, value, averageValue, averageUtilization (each when given). */
static json_t *target(const char *type, json_t *value, json_t *average, json_t *utilization)
{
        return json_pack("{s:s, s:O*, s:O*, s:O*}",
                         "type",
                         type,
                         "value",
                         value,
                         "averageValue",
                         average,
                         "averageUtilization",
                         utilization);
}

/* An averageValue makes it an AverageValue target; else a Value target of targetValue (Go
 * writes that one "0" when unset). */
static json_t *object_spec_from_v1(const json_t *s)
{
        json_t *average = at(s, "averageValue");
        json_t *value = average ? NULL : quantity(s, "targetValue");
        json_t *out = json_pack("{s:o, s:o, s:o}",
                                "describedObject",
                                reference(at(s, "target")),
                                "target",
                                target(average ? "AverageValue" : "Value", value, average, NULL),
                                "metric",
                                identifier(s, "selector"));

        json_decref(value);
        return out;
}

static json_t *pods_spec_from_v1(const json_t *s)
{
        json_t *average = quantity(s, "targetAverageValue");
        json_t *out = json_pack("{s:o, s:o}",
                                "metric",
                                identifier(s, "selector"),
                                "target",
                                target("AverageValue", NULL, average, NULL));

        json_decref(average);
        return out;
}

static json_t *resource_spec_from_v1(const json_t *s)
{
        json_t *utilization = at(s, "targetAverageUtilization");

        return json_pack("{s:s, s:o, s:O*}",
                         "name",
                         str_or(s, "name"),
                         "target",
                         target(utilization ? "Utilization" : "AverageValue",
                                NULL,
                                at(s, "targetAverageValue"),
                                utilization),
                         "container",
                         at(s, "container"));
}

static json_t *external_spec_from_v1(const json_t *s)
{
        json_t *value = at(s, "targetValue");

        return json_pack(
            "{s:o, s:o}",
            "metric",
            identifier(s, "metricSelector"),
            "target",
            target(value ? "Value" : "AverageValue", value, at(s, "targetAverageValue"), NULL));
}

/* ---- status.currentMetrics[i]: v1 -> v2 --------------------------------------------------- */

/* v2's MetricValueStatus: value, averageValue, averageUtilization (value and average taken). */
static json_t *current(json_t *value, json_t *average, json_t *utilization)
{
        return json_pack("{s:o*, s:o*, s:O*}",
                         "value",
                         value,
                         "averageValue",
                         average,
                         "averageUtilization",
                         utilization);
}

static json_t *object_status_from_v1(const json_t *s)
{
        return json_pack(
            "{s:o, s:o, s:o}",
            "metric",
            identifier(s, "selector"),
            "current",
            current(quantity(s, "currentValue"), json_incref(at(s, "averageValue")), NULL),
            "describedObject",
            reference(at(s, "target")));
}

static json_t *pods_status_from_v1(const json_t *s)
{
        return json_pack("{s:o, s:o}",
                         "metric",
                         identifier(s, "selector"),
                         "current",
                         current(NULL, quantity(s, "currentAverageValue"), NULL));
}

static json_t *resource_status_from_v1(const json_t *s)
{
        return json_pack(
            "{s:s, s:o, s:O*}",
            "name",
            str_or(s, "name"),
            "current",
            current(NULL, quantity(s, "currentAverageValue"), at(s, "currentAverageUtilization")),
            "container",
            at(s, "container"));
}

static json_t *external_status_from_v1(const json_t *s)
{
        return json_pack(
            "{s:o, s:o}",
            "metric",
            identifier(s, "metricSelector"),
            "current",
            current(quantity(s, "currentValue"), json_incref(at(s, "currentAverageValue")), NULL));
}

/* Per direction, a converter per member of source_keys. */
static convert_fn *const converters[][5] = {
    {object_spec_to_v1,
     pods_spec_to_v1,
     resource_spec_to_v1,
     resource_spec_to_v1,
     external_spec_to_v1},
    {object_spec_from_v1,
     pods_spec_from_v1,
     resource_spec_from_v1,
     resource_spec_from_v1,
     external_spec_from_v1},
    {object_status_to_v1,
     pods_status_to_v1,
     resource_status_to_v1,
     resource_status_to_v1,
     external_status_to_v1},
    {object_status_from_v1,
     pods_status_from_v1,
     resource_status_from_v1,
     resource_status_from_v1,
     external_status_from_v1},
};

json_t *xp_hpa_metric_spec_to_v1(const json_t *m)
{
        return convert_metric(m, converters[0]);
}

json_t *xp_hpa_metric_spec_from_v1(const json_t *m)
{
        return convert_metric(m, converters[1]);
}

json_t *xp_hpa_metric_status_to_v1(const json_t *m)
{
        return convert_metric(m, converters[2]);
}

json_t *xp_hpa_metric_status_from_v1(const json_t *m)
{
        return convert_metric(m, converters[3]);
}
