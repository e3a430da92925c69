/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Which pods a ResourceQuota tracks (docs/config.md): every one of spec.scopes and of
 * spec.scopeSelector's matchExpressions must hold, as Kubernetes' pod evaluator decides them.
 * Terminating: activeDeadlineSeconds set (>= 0); BestEffort: no container (init ones included)
 * requests or limits cpu or memory; PriorityClass: the pod's priorityClassName against the
 * requirement's operator (In, NotIn, Exists, DoesNotExist) and values.
 */
#include <errno.h>
#include <string.h>

#include "registry_internal.h"
#include "xpool/doc.h"
#include "xpool/resource.h"

static bool terminating(const json_t *pod)
{
        const json_t *deadline = xp_json_at(pod, "spec.activeDeadlineSeconds");

        return json_is_integer(deadline) && json_integer_value(deadline) >= 0;
}

static bool has_compute(const json_t *map)
{
        return json_object_get(map, "cpu") || json_object_get(map, "memory");
}

/* Kubernetes' QoS class BestEffort: no cpu or memory in any container's requests or limits. */
static bool best_effort(const json_t *pod)
{
        static const char *const lists[] = {"spec.initContainers", "spec.containers"};
        const json_t *c;
        size_t i;

        for (size_t l = 0; l < 2; l++)
                json_array_foreach(xp_json_at(pod, lists[l]), i, c)
                {
                        if (has_compute(xp_json_at(c, "resources.requests")) ||
                            has_compute(xp_json_at(c, "resources.limits")))
                                return false;
                }
        return true;
}

/* The selector over {PriorityClass: name} that Kubernetes matches a requirement with. */
static bool priority_matches(const char *op, const json_t *values, const char *name)
{
        if (strcmp(op, "Exists") == 0)
                return name[0] != '\0';
        if (strcmp(op, "DoesNotExist") == 0)
                return false; /* the key is always there, if empty */
        if (strcmp(op, "In") == 0)
                return xp_json_has_string(values, name);
        if (strcmp(op, "NotIn") == 0)
                return !xp_json_has_string(values, name);
        return false;
}

/* One scope (op Exists, values NULL, when it comes from spec.scopes). */
static bool
scope_matches(const char *scope, const char *op, const json_t *values, const json_t *pod)
{
        if (strcmp(scope, "Terminating") == 0)
                return terminating(pod);
        if (strcmp(scope, "NotTerminating") == 0)
                return !terminating(pod);
        if (strcmp(scope, "BestEffort") == 0)
                return best_effort(pod);
        if (strcmp(scope, "NotBestEffort") == 0)
                return !best_effort(pod);
        if (strcmp(scope, "PriorityClass") == 0)
                return priority_matches(
                    op, values, xp_json_str_at(pod, "spec.priorityClassName", ""));
        return false; /* CrossNamespacePodAffinity: xpool has no cross-namespace affinity */
}

bool xp_registry_quota_matches(const json_t *quota, const json_t *pod)
{
        const json_t *scope, *req;
        size_t i;

        json_array_foreach(xp_json_at(quota, "spec.scopes"), i, scope)
        {
                if (!scope_matches(json_string_value(scope) ? json_string_value(scope) : "",
                                   "Exists",
                                   NULL,
                                   pod))
                        return false;
        }
        json_array_foreach(xp_json_at(quota, "spec.scopeSelector.matchExpressions"), i, req)
        {
                if (!scope_matches(xp_json_str_at(req, "scopeName", ""),
                                   xp_json_str_at(req, "operator", ""),
                                   json_object_get(req, "values"),
                                   pod))
                        return false;
        }
        return true;
}

int xp_registry_quota_usage(const json_t *quota, const json_t *pods, struct xp_resource_list *ret)
{
        json_t *matching = json_array();
        const json_t *pod;
        size_t i;
        int r = matching ? 0 : -ENOMEM;

        json_array_foreach(pods, i, pod)
        {
                if (r >= 0 && xp_registry_quota_matches(quota, pod) &&
                    json_array_append((json_t *)matching, (json_t *)pod) < 0)
                        r = -ENOMEM;
        }
        if (r >= 0)
                r = xp_registry_namespace_usage(matching, ret);
        json_decref(matching);
        return r;
}
