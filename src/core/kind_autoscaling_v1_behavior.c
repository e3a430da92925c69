/* SPDX-License-Identifier: Apache-2.0 */
/*
 * spec.behavior in autoscaling/v1's annotation autoscaling.alpha.kubernetes.io/behavior, as
 * kube-apiserver writes it: json.Marshal of its internal HorizontalPodAutoscalerBehavior, a
 * type without json tags, so the members carry Go's field names (ScaleUp,
 * StabilizationWindowSeconds, Policies, Type...) and an unset pointer or list is null. Read back
 * as encoding/json reads it: each member by its exact name, else its name in any case.
 */
#include <jansson.h>
#include <strings.h>

#include "kind_autoscaling.h"

static json_t *or_null(const json_t *v)
{
        return v ? json_incref((json_t *)v) : json_null();
}

static json_t *policy_to_go(const json_t *p)
{
        return json_pack("{s:o, s:o, s:o}",
                         "Type",
                         or_null(json_object_get(p, "type")),
                         "Value",
                         or_null(json_object_get(p, "value")),
                         "PeriodSeconds",
                         or_null(json_object_get(p, "periodSeconds")));
}

/* One direction's HPAScalingRules (null when not set). */
static json_t *rules_to_go(const json_t *rules)
{
        const json_t *policies = json_object_get(rules, "policies"), *p;
        json_t *list = json_is_array(policies) ? json_array() : json_null();
        size_t i;

        if (!json_is_object(rules)) {
                json_decref(list);
                return json_null();
        }
        json_array_foreach(policies, i, p)
        {
                if (list && json_array_append_new(list, policy_to_go(p)) < 0) {
                        json_decref(list);
                        list = NULL;
                }
        }
        return json_pack("{s:o, s:o, s:o}",
                         "StabilizationWindowSeconds",
                         or_null(json_object_get(rules, "stabilizationWindowSeconds")),
                         "SelectPolicy",
                         or_null(json_object_get(rules, "selectPolicy")),
                         "Policies",
                         list);
}

json_t *xp_hpa_behavior_to_v1(const json_t *behavior)
{
        if (!json_is_object(behavior))
                return NULL;
        return json_pack("{s:o, s:o}",
                         "ScaleUp",
                         rules_to_go(json_object_get(behavior, "scaleUp")),
                         "ScaleDown",
                         rules_to_go(json_object_get(behavior, "scaleDown")));
}

/* object's member named name as encoding/json finds it: exactly, else in any case; a null is
 * none (a nil pointer). */
static json_t *go_member(const json_t *object, const char *name)
{
        json_t *v = json_object_get(object, name);
        const char *key;
        json_t *value;

        if (!v) {
                json_object_foreach((json_t *)object, key, value)
                {
                        if (strcasecmp(key, name) == 0) {
                                v = value;
                                break;
                        }
                }
        }
        return json_is_null(v) ? NULL : v;
}

static json_t *policy_from_go(const json_t *p)
{
        json_t *type = go_member(p, "Type"), *value = go_member(p, "Value"),
               *period = go_member(p, "PeriodSeconds");

        return json_pack("{s:o, s:o, s:o}",
                         "type",
                         type ? json_incref(type) : json_string(""),
                         "value",
                         value ? json_incref(value) : json_integer(0),
                         "periodSeconds",
                         period ? json_incref(period) : json_integer(0));
}

/* One direction from its Go JSON; *rules NULL when absent. -1: no memory. */
static int rules_from_go(const json_t *go, json_t **rules)
{
        const json_t *policies = go_member(go, "Policies"), *p;
        json_t *list = json_is_array(policies) ? json_array() : NULL;
        size_t i;

        *rules = NULL;
        json_array_foreach(policies, i, p)
        {
                if (list && json_array_append_new(list, policy_from_go(p)) < 0) {
                        json_decref(list);
                        return -1;
                }
        }
        if (!json_is_object(go)) {
                json_decref(list);
                return 0;
        }
        *rules = json_pack("{s:O*, s:O*, s:o*}",
                           "stabilizationWindowSeconds",
                           go_member(go, "StabilizationWindowSeconds"),
                           "selectPolicy",
                           go_member(go, "SelectPolicy"),
                           "policies",
                           list);
        return *rules ? 0 : -1;
}

int xp_hpa_behavior_from_v1(const json_t *go, json_t **behavior)
{
        json_t *up = NULL, *down = NULL;

        *behavior = NULL;
        if (!json_is_object(go))
                return 0;
        if (rules_from_go(go_member(go, "ScaleUp"), &up) < 0 ||
            rules_from_go(go_member(go, "ScaleDown"), &down) < 0) {
                json_decref(up);
                return -1;
        }
        if (!up && !down) /* the zero behavior: none, as Kubernetes reads it */
                return 0;
        *behavior = json_pack("{s:o*, s:o*}", "scaleUp", up, "scaleDown", down);
        return *behavior ? 0 : -1;
}
