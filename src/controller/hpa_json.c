/* SPDX-License-Identifier: Apache-2.0 */
/*
 * An autoscaling/v2 HorizontalPodAutoscaler's spec read for the controller, with Kubernetes'
 * defaults (SetDefaults_HorizontalPodAutoscaler and its behavior rules).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "hpa.h"
#include "xpool/quantity.h"

static const char *str(const json_t *o, const char *key)
{
        return json_string_value(json_object_get(o, key));
}

static int quantity_milli(const json_t *v, int64_t *ret, const char *field, struct xp_error *err)
{
        struct xp_quantity q;
        char text[64];

        if (json_is_integer(v))
                snprintf(text, sizeof(text), "%lld", (long long)json_integer_value(v));
        else if (json_is_real(v))
                snprintf(text, sizeof(text), "%.9g", json_real_value(v));
        else if (json_string_value(v))
                snprintf(text, sizeof(text), "%s", json_string_value(v));
        else
                return xp_errorf(err,
                                 -EINVAL,
                                 "%s: Required value: must specify a positive target value",
                                 field);
        if (xp_quantity_parse(text, &q, NULL) < 0 || xp_quantity_to_milli(&q, ret) < 0 || *ret <= 0)
                return xp_errorf(
                    err, -EINVAL, "%s: Invalid value: \"%s\": must be positive", field, text);
        return 0;
}

static int
target_of(const json_t *t, struct xp_hpa_metric_spec *m, const char *field, struct xp_error *err)
{
        const char *type = str(t, "type");
        char where[96];

        if (type && strcmp(type, "Utilization") == 0) {
                m->target_type = XP_HPA_TARGET_UTILIZATION;
                m->target = json_integer_value(json_object_get(t, "averageUtilization"));
                if (m->target <= 0)
                        return xp_errorf(
                            err,
                            -EINVAL,
                            "%s.target.averageUtilization: Required value: must set either a target raw value or a target utilization",
                            field);
                return 0;
        }
        if (type && strcmp(type, "AverageValue") == 0) {
                m->target_type = XP_HPA_TARGET_AVERAGE_VALUE;
                snprintf(where, sizeof(where), "%s.target.averageValue", field);
                return quantity_milli(json_object_get(t, "averageValue"), &m->target, where, err);
        }
        if (type && strcmp(type, "Value") == 0) {
                m->target_type = XP_HPA_TARGET_VALUE;
                snprintf(where, sizeof(where), "%s.target.value", field);
                return quantity_milli(json_object_get(t, "value"), &m->target, where, err);
        }
        return xp_errorf(
            err,
            -EINVAL,
            "%s.target.type: Unsupported value: \"%s\": supported values: \"AverageValue\", \"Utilization\", \"Value\"",
            field,
            type ? type : "");
}

static int metric_of(const json_t *j, size_t i, struct xp_hpa_metric_spec *m, struct xp_error *err)
{
        static const struct {
                const char *type, *member;
                enum xp_hpa_source source;
        } sources[] = {
            {"Resource", "resource", XP_HPA_RESOURCE},
            {"ContainerResource", "containerResource", XP_HPA_CONTAINER_RESOURCE},
            {"Pods", "pods", XP_HPA_PODS},
            {"Object", "object", XP_HPA_OBJECT},
            {"External", "external", XP_HPA_EXTERNAL},
        };
        const char *type = str(j, "type");
        char field[64];

        *m = (struct xp_hpa_metric_spec){0};
        for (size_t k = 0; k < sizeof(sources) / sizeof(sources[0]); k++) {
                if (!type || strcmp(type, sources[k].type) != 0)
                        continue;
                const json_t *s = json_object_get(j, sources[k].member);
                snprintf(field, sizeof(field), "spec.metrics[%zu].%s", i, sources[k].member);
                if (!json_is_object(s))
                        return xp_errorf(
                            err,
                            -EINVAL,
                            "%s: Required value: must populate information for the given metric source",
                            field);
                m->source = sources[k].source;
                const json_t *id = json_object_get(s, "metric");
                m->name = id ? str(id, "name") : str(s, "name");
                m->selector = json_object_get(id, "selector");
                m->container = str(s, "container");
                const json_t *obj = json_object_get(s, "describedObject");
                m->object_kind = str(obj, "kind");
                m->object_name = str(obj, "name");
                m->object_api_version = str(obj, "apiVersion");
                if (!m->name || !*m->name)
                        return xp_errorf(err,
                                         -EINVAL,
                                         "%s.%s: Required value: must specify a metric name",
                                         field,
                                         id ? "metric.name" : "name");
                return target_of(json_object_get(s, "target"), m, field, err);
        }
        return xp_errorf(
            err,
            -EINVAL,
            "spec.metrics[%zu].type: Unsupported value: \"%s\": supported values: \"ContainerResource\", \"External\", \"Object\", \"Pods\", \"Resource\"",
            i,
            type ? type : "");
}

static void rules_of(const json_t *j, struct xp_hpa_rules *rules)
{
        const json_t *p;
        size_t i;

        if (!json_is_object(j))
                return;
        if (json_is_integer(json_object_get(j, "stabilizationWindowSeconds")))
                rules->window_s =
                    (int32_t)json_integer_value(json_object_get(j, "stabilizationWindowSeconds"));
        const char *select = str(j, "selectPolicy");
        if (select)
                rules->select = strcmp(select, "Min") == 0        ? XP_HPA_SELECT_MIN
                                : strcmp(select, "Disabled") == 0 ? XP_HPA_SELECT_DISABLED
                                                                  : XP_HPA_SELECT_MAX;
        if (!json_is_array(json_object_get(j, "policies")))
                return;
        rules->n_policies = 0;
        json_array_foreach(json_object_get(j, "policies"), i, p)
        {
                if (rules->n_policies == XP_HPA_POLICIES_MAX)
                        break;
                const char *type = str(p, "type");
                rules->policies[rules->n_policies++] = (struct xp_hpa_policy){
                    .type = type && strcmp(type, "Percent") == 0 ? XP_HPA_POLICY_PERCENT
                                                                 : XP_HPA_POLICY_PODS,
                    .value = (int32_t)json_integer_value(json_object_get(p, "value")),
                    .period_s = (int32_t)json_integer_value(json_object_get(p, "periodSeconds")),
                };
        }
}

int xp_hpa_spec_from_json(const json_t *hpa, struct xp_hpa_spec *ret, struct xp_error *err)
{
        const json_t *spec = json_object_get(hpa, "spec"), *m;
        const json_t *ref = json_object_get(spec, "scaleTargetRef");
        const json_t *behavior = json_object_get(spec, "behavior");
        struct xp_hpa_spec s = {
            .target_kind = str(ref, "kind"),
            .target_name = str(ref, "name"),
            .target_api_version = str(ref, "apiVersion"),
            .min = json_is_integer(json_object_get(spec, "minReplicas"))
                       ? (int32_t)json_integer_value(json_object_get(spec, "minReplicas"))
                       : 1,
            .max = (int32_t)json_integer_value(json_object_get(spec, "maxReplicas")),
        };
        size_t i;
        int r;

        if (!s.target_kind || !s.target_name)
                return xp_errorf(err, -EINVAL, "spec.scaleTargetRef: Required value");
        json_array_foreach(json_object_get(spec, "metrics"), i, m)
        {
                if (i == XP_HPA_METRICS_MAX)
                        return xp_errorf(err,
                                         -EINVAL,
                                         "spec.metrics: Too many: %zu: must have at most %d items",
                                         json_array_size(json_object_get(spec, "metrics")),
                                         XP_HPA_METRICS_MAX);
                r = metric_of(m, i, &s.metrics[s.n_metrics++], err);
                if (r < 0)
                        return r;
        }
        if (s.n_metrics == 0)
                s.metrics[s.n_metrics++] =
                    (struct xp_hpa_metric_spec){.source = XP_HPA_RESOURCE,
                                                .name = "cpu",
                                                .target_type = XP_HPA_TARGET_UTILIZATION,
                                                .target = 80};
        xp_hpa_rules_default_up(&s.behavior.up);
        xp_hpa_rules_default_down(&s.behavior.down);
        if (json_is_object(behavior)) {
                s.behavior.set = true;
                rules_of(json_object_get(behavior, "scaleUp"), &s.behavior.up);
                rules_of(json_object_get(behavior, "scaleDown"), &s.behavior.down);
        }
        *ret = s;
        return 0;
}

void xp_hpa_metric_title(const struct xp_hpa_metric_spec *m, char *buf, size_t size)
{
        switch (m->source) {
        case XP_HPA_RESOURCE:
                snprintf(buf,
                         size,
                         m->target_type == XP_HPA_TARGET_UTILIZATION
                             ? "%s resource utilization (percentage of request)"
                             : "%s resource",
                         m->name);
                return;
        case XP_HPA_CONTAINER_RESOURCE:
                snprintf(buf,
                         size,
                         m->target_type == XP_HPA_TARGET_UTILIZATION
                             ? "%s container resource utilization (percentage of request)"
                             : "%s container resource",
                         m->name);
                return;
        case XP_HPA_PODS:
                snprintf(buf, size, "pods metric %s", m->name);
                return;
        case XP_HPA_OBJECT:
                snprintf(buf, size, "%s metric %s", m->object_kind ? m->object_kind : "", m->name);
                return;
        case XP_HPA_EXTERNAL:
                snprintf(buf, size, "external metric %s", m->name);
                return;
        }
}
