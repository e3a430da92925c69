/* SPDX-License-Identifier: Apache-2.0 */
/*
 * HorizontalPodAutoscaler (autoscaling/v2), a document kind (xpool/doc.h): Kubernetes' defaults
 * (minReplicas 1, a cpu target of 80% without metrics, behavior's rules filled in when behavior
 * is given), validation with its messages (minReplicas 0 refused, as without Kubernetes'
 * HPAScaleToZero gate), the status subresource and kubectl's table (NAME REFERENCE TARGETS
 * MINPODS MAXPODS REPLICAS AGE).
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "kind_autoscaling.h"
#include "schema.h"
#include "table_internal.h"
#include "xpool/doc.h"
#include "xpool/kind.h"
#include "xpool/strutil.h"

static json_t *policy(const char *type, int value, int period)
{
        return json_pack("{s:s, s:i, s:i}", "type", type, "value", value, "periodSeconds", period);
}

/* GenerateHPAScaleUpRules / GenerateHPAScaleDownRules: what a given rule leaves out. */
static int rules_defaults(json_t *behavior, const char *which, bool up)
{
        json_t *rules = json_object_get(behavior, which);
        int r = 0;

        if (!json_is_object(rules)) {
                rules = json_object();
                if (!rules || json_object_set_new(behavior, which, rules) < 0)
                        return -ENOMEM;
        }
        if (!json_object_get(rules, "selectPolicy"))
                r = json_object_set_new(rules, "selectPolicy", json_string("Max"));
        if (r == 0 && up && !json_object_get(rules, "stabilizationWindowSeconds"))
                r = json_object_set_new(rules, "stabilizationWindowSeconds", json_integer(0));
        if (r == 0 && !json_object_get(rules, "policies")) {
                json_t *list =
                    up ? json_pack("[o, o]", policy("Pods", 4, 15), policy("Percent", 100, 15))
                       : json_pack("[o]", policy("Percent", 100, 15));
                r = list ? json_object_set_new(rules, "policies", list) : -1;
        }
        return r == 0 ? 0 : -ENOMEM;
}

json_t *xp_hpa_cpu_metrics(int64_t percent)
{
        return json_pack("[{s:s, s:{s:s, s:{s:s, s:I}}}]",
                         "type",
                         "Resource",
                         "resource",
                         "name",
                         "cpu",
                         "target",
                         "type",
                         "Utilization",
                         "averageUtilization",
                         (json_int_t)percent);
}

static int hpa_defaults(struct xp_doc *doc)
{
        json_t *spec = json_object_get(doc->body, "spec");
        json_t *behavior = json_object_get(spec, "behavior");
        int r = 0;

        /* as kube-apiserver's v2 conversion drops them: they are autoscaling/v1's */
        xp_hpa_drop_v1_annotations(&doc->metadata.annotations);
        if (!json_is_object(spec))
                return 0;
        if (!json_object_get(spec, "minReplicas"))
                r = json_object_set_new(spec, "minReplicas", json_integer(1));
        if (r == 0 && json_array_size(json_object_get(spec, "metrics")) == 0)
                r = json_object_set_new(spec, "metrics", xp_hpa_cpu_metrics(80));
        if (r != 0)
                return -ENOMEM;
        if (!json_is_object(behavior))
                return 0;
        r = rules_defaults(behavior, "scaleUp", true);
        return r < 0 ? r : rules_defaults(behavior, "scaleDown", false);
}

static int check_target(struct xp_decode_ctx *ctx, const json_t *m, size_t i)
{
        static const char *const sources[][2] = {{"Resource", "resource"},
                                                 {"ContainerResource", "containerResource"},
                                                 {"Pods", "pods"},
                                                 {"Object", "object"},
                                                 {"External", "external"}};
        const char *type = xp_json_str_at(m, "type", "");
        char field[96];

        for (size_t k = 0; k < 5; k++) {
                if (strcmp(type, sources[k][0]) != 0)
                        continue;
                const json_t *s = json_object_get(m, sources[k][1]);
                snprintf(field, sizeof(field), "spec.metrics[%zu].%s", i, sources[k][1]);
                if (!json_is_object(s))
                        return xp_fail_field(
                            ctx,
                            -EINVAL,
                            field,
                            "Required value: must populate information for the given metric source");
                const char *ttype = xp_json_str_at(s, "target.type", "");
                snprintf(
                    field, sizeof(field), "spec.metrics[%zu].%s.target.type", i, sources[k][1]);
                if (strcmp(ttype, "Utilization") != 0 && strcmp(ttype, "Value") != 0 &&
                    strcmp(ttype, "AverageValue") != 0)
                        return xp_fail_field(
                            ctx,
                            -EINVAL,
                            field,
                            "Unsupported value: \"%s\": supported values: \"AverageValue\", \"Utilization\", \"Value\"",
                            ttype);
                return 0;
        }
        snprintf(field, sizeof(field), "spec.metrics[%zu].type", i);
        return xp_fail_field(
            ctx,
            -EINVAL,
            field,
            "Unsupported value: \"%s\": supported values: \"ContainerResource\", \"External\", \"Object\", \"Pods\", \"Resource\"",
            type);
}

static atomic_bool scale_to_zero;

void xp_kind_hpa_allow_scale_to_zero(bool allow)
{
        atomic_store(&scale_to_zero, allow);
}

/* The lowest minReplicas: 0 with the gate, or where the object had 0 already (as Kubernetes'
 * MinReplicasLowerBound: an update keeps working when the gate goes), else 1. */
static int64_t min_replicas_bound(const struct xp_doc *old)
{
        const json_t *spec = old ? json_object_get(old->body, "spec") : NULL;

        return atomic_load(&scale_to_zero) || (spec && xp_json_int_at(spec, "minReplicas", 1) == 0)
                   ? 0
                   : 1;
}

/* Whether metrics holds an Object or External metric, which scaling from zero can read. */
static bool has_object_or_external(const json_t *metrics)
{
        const json_t *m;
        size_t i;

        json_array_foreach(metrics, i, m)
        {
                const char *type = xp_json_str_at(m, "type", "");

                if (strcmp(type, "Object") == 0 || strcmp(type, "External") == 0)
                        return true;
        }
        return false;
}

static int
hpa_validate(struct xp_decode_ctx *ctx, const struct xp_doc *doc, const struct xp_doc *old)
{
        const json_t *spec = json_object_get(doc->body, "spec");
        int64_t min = xp_json_int_at(spec, "minReplicas", 1),
                max = xp_json_int_at(spec, "maxReplicas", 0), bound = min_replicas_bound(old);
        struct xp_ge_msg ge;
        char max_text[24];
        const json_t *m;
        size_t i;
        int r;

        if (!xp_json_str_at(spec, "scaleTargetRef.kind", NULL))
                return xp_fail_field(ctx, -EINVAL, "spec.scaleTargetRef.kind", "Required value");
        if (!xp_json_str_at(spec, "scaleTargetRef.name", NULL))
                return xp_fail_field(ctx, -EINVAL, "spec.scaleTargetRef.name", "Required value");
        if (min < bound)
                return xp_fail_field(
                    ctx, -EINVAL, "spec.minReplicas", "%s", xp_ge_msg_int(&ge, min, bound));
        if (max < 1)
                return xp_fail_field(ctx,
                                     -EINVAL,
                                     "spec.maxReplicas",
                                     "Invalid value: %lld: must be greater than 0",
                                     (long long)max);
        if (max < min) {
                snprintf(max_text, sizeof(max_text), "%lld", (long long)max);
                return xp_fail_field(ctx,
                                     -EINVAL,
                                     "spec.maxReplicas",
                                     "%s",
                                     xp_ge_msg(&ge, max_text, "`minReplicas`"));
        }
        json_array_foreach(
            json_object_get(spec, "metrics"), i, m) if ((r = check_target(ctx, m, i)) < 0) return r;
        if (min == 0 && !has_object_or_external(json_object_get(spec, "metrics")))
                return xp_fail_field(ctx,
                                     -EINVAL,
                                     "spec.metrics",
                                     "Forbidden: must specify at least one Object or External "
                                     "metric to support scaling to zero replicas");
        return 0;
}

/* ---- kubectl get hpa: NAME REFERENCE TARGETS MINPODS MAXPODS REPLICAS AGE ------------------ */

static const struct table_column hpa_columns[] = {
    {.name = "Name",
     .type = "string",
     .format = "name",
     .description = "Name must be unique within a namespace."},
    {.name = "Reference",
     .type = "string",
     .description =
         "reference to scaled resource; horizontal pod autoscaler will learn the current resource consumption and will set the desired number of pods by using its Scale subresource."},
    {.name = "Targets",
     .type = "string",
     .description =
         "metrics contains the specifications for which to use to calculate the desired replica count (the maximum replica count across all metrics will be used)."},
    {.name = "MinPods",
     .type = "string",
     .description =
         "minReplicas is the lower limit for the number of replicas to which the autoscaler can scale down."},
    {.name = "MaxPods",
     .type = "integer",
     .description =
         "maxReplicas is the upper limit for the number of replicas to which the autoscaler can scale up."},
    {.name = "Replicas",
     .type = "integer",
     .description =
         "currentReplicas is current number of replicas of pods managed by this autoscaler, as last seen by the autoscaler."},
    {.name = "Age", .type = "string", .description = "Time since the object was created."},
};

/* A quantity as Kubernetes prints it back (the string as stored, a number as written). */
static void quantity_text(const json_t *v, char *buf, size_t size)
{
        if (json_is_string(v))
                snprintf(buf, size, "%s", json_string_value(v));
        else if (json_is_integer(v))
                snprintf(buf, size, "%lld", (long long)json_integer_value(v));
        else
                snprintf(buf, size, "<unknown>");
}

/* One metric's "current/target" as kubectl 1.32's formatHPAMetrics writes it. */
static void metric_text(const json_t *spec, const json_t *status, char *buf, size_t size)
{
        const char *type = table_str0(spec, "type");
        const char *member = strcmp(type, "Resource") == 0            ? "resource"
                             : strcmp(type, "ContainerResource") == 0 ? "containerResource"
                             : strcmp(type, "Pods") == 0              ? "pods"
                             : strcmp(type, "Object") == 0            ? "object"
                                                                      : "external";
        const json_t *s = json_object_get(spec, member),
                     *cur = json_object_get(json_object_get(status, member), "current");
        bool utilization = xp_streq0(table_str(s, "target.type"), "Utilization");
        bool average = xp_streq0(table_str(s, "target.type"), "AverageValue");
        char current[64] = "<unknown>", target[64];

        if (utilization) {
                if (table_get(cur, "averageUtilization"))
                        snprintf(current,
                                 sizeof(current),
                                 "%lld%%",
                                 (long long)table_int(cur, "averageUtilization"));
                snprintf(target,
                         sizeof(target),
                         "%lld%%",
                         (long long)table_int(s, "target.averageUtilization"));
        } else {
                const char *key = average ? "averageValue" : "value";
                if (table_get(cur, key))
                        quantity_text(table_get(cur, key), current, sizeof(current));
                quantity_text(table_get(s, average ? "target.averageValue" : "target.value"),
                              target,
                              sizeof(target));
        }
        if (strcmp(member, "resource") == 0 || strcmp(member, "containerResource") == 0)
                snprintf(buf, size, "%s: %s/%s", table_str0(s, "name"), current, target);
        else
                snprintf(buf,
                         size,
                         "%s/%s%s",
                         current,
                         target,
                         average && strcmp(member, "pods") != 0 ? " (avg)" : "");
}

static int hpa_row(const json_t *o, time_t now, json_t *cells, json_t *row)
{
        const json_t *metrics = table_array(o, "spec.metrics"),
                     *statuses = table_array(o, "status.currentMetrics");
        char targets[512] = "", one[160], ref[320];
        size_t n = json_array_size(metrics);
        int r;

        (void)row;
        for (size_t i = 0; i < n && i < 2; i++) {
                size_t len = strlen(targets);
                metric_text(
                    json_array_get(metrics, i), json_array_get(statuses, i), one, sizeof(one));
                snprintf(targets + len, sizeof(targets) - len, "%s%s", i ? ", " : "", one);
        }
        if (n > 2) {
                size_t len = strlen(targets);
                snprintf(targets + len, sizeof(targets) - len, " + %zu more...", n - 2);
        }
        snprintf(ref,
                 sizeof(ref),
                 "%s/%s",
                 table_str0(o, "spec.scaleTargetRef.kind"),
                 table_str0(o, "spec.scaleTargetRef.name"));
        r = table_cell_str(cells, table_str0(o, "metadata.name"));
        if (r >= 0)
                r = table_cell_str(cells, ref);
        if (r >= 0)
                r = table_cell_or_none(cells, targets);
        if (r >= 0 && table_get(o, "spec.minReplicas"))
                r = table_cell_printf(cells, "%lld", (long long)table_int(o, "spec.minReplicas"));
        else if (r >= 0)
                r = table_cell_str(cells, "<unset>");
        if (r >= 0)
                r = table_cell_int(cells, table_int(o, "spec.maxReplicas"));
        if (r >= 0)
                r = table_cell_int(cells, table_int(o, "status.currentReplicas"));
        if (r >= 0)
                r = table_cell_age(cells, o, "metadata.creationTimestamp", now);
        return r;
}

const struct xp_table_kind xp_table_hpa = {
    .kind = "HorizontalPodAutoscaler",
    .columns = hpa_columns,
    .n_columns = XP_ELEMENTSOF(hpa_columns),
    .row = hpa_row,
};

static const char *const hpa_short_names[] = {"hpa", NULL};
static const char *const hpa_categories[] = {"all", NULL};

XP_DOC_KIND_DECODER(xp_kind_hpa)

const struct xp_kind xp_kind_hpa = {
    .kind = "HorizontalPodAutoscaler",
    .list_kind = "HorizontalPodAutoscalerList",
    .group = "autoscaling",
    .version = "v2",
    .api_version = "autoscaling/v2",
    .plural = "horizontalpodautoscalers",
    .singular = "horizontalpodautoscaler",
    .short_names = hpa_short_names,
    .categories = hpa_categories,
    .namespaced = true,
    XP_DOC_KIND_OPS(xp_kind_hpa),
    .doc_defaults = hpa_defaults,
    .doc_validate = hpa_validate,
    .table = &xp_table_hpa,
    .status_subresource = true,
};
