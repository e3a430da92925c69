/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A ResourceQuota's scopes and scopeSelector checked as kube-apiserver checks them
 * (kind_quota.h). Kubernetes prints an invalid list or selector with Go's %#v (the internal
 * types' names, `[]core.ResourceQuotaScope{"BestEffort"}`); the values are written here the
 * same way, so that a client sees the words it would see from Kubernetes.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kind_quota.h"
#include "schema.h"
#include "xpool/doc.h"
#include "xpool/macro.h"

#define MATCH_EXPRESSIONS "spec.scopeSelector.matchExpressions"

static const char *const scopes_known[] = {"Terminating",
                                           "NotTerminating",
                                           "BestEffort",
                                           "NotBestEffort",
                                           "PriorityClass",
                                           "CrossNamespacePodAffinity",
                                           NULL};
/* The scopes that only take the operator Exists (all but PriorityClass). */
static const char *const scopes_exists_only[] = {"BestEffort",
                                                 "NotBestEffort",
                                                 "Terminating",
                                                 "NotTerminating",
                                                 "CrossNamespacePodAffinity",
                                                 NULL};
/* Pods' compute resources: what a scope other than BestEffort may limit besides pods. */
static const char *const pod_compute[] = {
    "cpu", "memory", "limits.cpu", "limits.memory", "requests.cpu", "requests.memory", NULL};
/* The names the quota system knows (IsStandardQuotaResourceName), hugepages apart. */
static const char *const standard_quota[] = {"cpu",
                                             "memory",
                                             "ephemeral-storage",
                                             "requests.cpu",
                                             "requests.memory",
                                             "requests.storage",
                                             "requests.ephemeral-storage",
                                             "limits.cpu",
                                             "limits.memory",
                                             "limits.ephemeral-storage",
                                             "pods",
                                             "resourcequotas",
                                             "services",
                                             "replicationcontrollers",
                                             "secrets",
                                             "persistentvolumeclaims",
                                             "configmaps",
                                             "services.nodeports",
                                             "services.loadbalancers",
                                             NULL};

static bool among(const char *const *list, const char *s)
{
        for (; *list; list++)
                if (s && strcmp(s, *list) == 0)
                        return true;
        return false;
}

bool xp_quota_standard_resource(const char *name)
{
        return among(standard_quota, name) || strncmp(name, "hugepages-", 10) == 0 ||
               strncmp(name, "requests.hugepages-", 19) == 0;
}

/* IsResourceQuotaScopeValidForResource: an unknown scope fits everything (it fails as unknown). */
static bool scope_fits(const char *scope, const char *resource)
{
        if (!among(scopes_known, scope))
                return true;
        if (strcmp(resource, "pods") == 0)
                return true;
        return strcmp(scope, "BestEffort") != 0 && among(pod_compute, resource);
}

/* Whether scope fits every standard resource of hard. */
static bool fits_hard(const char *scope, const json_t *hard)
{
        const char *key;
        const json_t *v;

        json_object_foreach((json_t *)hard, key, v)
        {
                if (xp_quota_standard_resource(key) && !scope_fits(scope, key))
                        return false;
        }
        return true;
}

/* ---- values as Go's %#v writes them ----------------------------------------------------- */

static void go_quoted(FILE *f, const char *s)
{
        fputc('"', f);
        for (; *s; s++) {
                if (*s == '"' || *s == '\\')
                        fputc('\\', f);
                fputc(*s, f);
        }
        fputc('"', f);
}

/* []TYPE{"a", "b"}, []TYPE{} for an empty array, []TYPE(nil) for none. */
static void go_strings(FILE *f, const char *type, const json_t *list)
{
        const json_t *v;
        size_t i;

        if (!json_is_array(list)) {
                fprintf(f, "[]%s(nil)", type);
                return;
        }
        fprintf(f, "[]%s{", type);
        json_array_foreach(list, i, v)
        {
                fputs(i ? ", " : "", f);
                go_quoted(f, json_is_string(v) ? json_string_value(v) : "");
        }
        fputc('}', f);
}

static void go_selector(FILE *f, const json_t *selector)
{
        static const char req_type[] = "core.ScopedResourceSelectorRequirement";
        const json_t *list = json_object_get(selector, "matchExpressions"), *req;
        size_t i;

        fputs("core.ScopeSelector{MatchExpressions:", f);
        if (!json_is_array(list))
                fprintf(f, "[]%s(nil)", req_type);
        else
                fprintf(f, "[]%s{", req_type);
        json_array_foreach(list, i, req)
        {
                fprintf(f, "%s%s{ScopeName:", i ? ", " : "", req_type);
                go_quoted(f, xp_json_str_at(req, "scopeName", ""));
                fputs(", Operator:", f);
                go_quoted(f, xp_json_str_at(req, "operator", ""));
                fputs(", Values:", f);
                go_strings(f, "string", json_object_get(req, "values"));
                fputc('}', f);
        }
        if (json_is_array(list))
                fputc('}', f);
        fputc('}', f);
}

enum go_value {
        GO_SCOPES,
        GO_SELECTOR,
        GO_VALUES
};

/* field: Invalid value: VALUE: why, VALUE in Go's words. */
static int invalid(struct xp_decode_ctx *ctx,
                   const char *field,
                   enum go_value what,
                   const json_t *value,
                   const char *why)
{
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        int r;

        if (!f)
                return -ENOMEM;
        if (what == GO_SCOPES)
                go_strings(f, "core.ResourceQuotaScope", value);
        else if (what == GO_SELECTOR)
                go_selector(f, value);
        else
                go_strings(f, "string", value);
        if (fclose(f) != 0) {
                free(text);
                return -ENOMEM;
        }
        r = xp_fail_field(ctx, -EINVAL, field, "Invalid value: %s: %s", text, why);
        free(text);
        return r;
}

/* ---- the checks ------------------------------------------------------------------------- */

static bool conflicting(bool (*has)(const json_t *, const char *), const json_t *list)
{
        return (has(list, "BestEffort") && has(list, "NotBestEffort")) ||
               (has(list, "Terminating") && has(list, "NotTerminating"));
}

/* validateResourceQuotaScopes. */
static int check_scopes(struct xp_decode_ctx *ctx, const json_t *spec)
{
        const json_t *scopes = json_object_get(spec, "scopes"), *v;
        const json_t *hard = json_object_get(spec, "hard");
        size_t i;

        json_array_foreach(scopes, i, v)
        {
                const char *scope = json_string_value(v);
                if (!among(scopes_known, scope))
                        return invalid(ctx, "spec.scopes", GO_SCOPES, scopes, "unsupported scope");
                if (!fits_hard(scope, hard))
                        return invalid(ctx,
                                       "spec.scopes",
                                       GO_SCOPES,
                                       scopes,
                                       "unsupported scope applied to resource");
        }
        if (conflicting(xp_json_has_string, scopes))
                return invalid(ctx, "spec.scopes", GO_SCOPES, scopes, "conflicting scopes");
        return 0;
}

/* One requirement of validateScopedResourceSelectorRequirement. */
static int check_requirement(struct xp_decode_ctx *ctx, const json_t *spec, const json_t *req)
{
        const char *scope = xp_json_str_at(req, "scopeName", "");
        const char *op = xp_json_str_at(req, "operator", "");
        const json_t *values = json_object_get(req, "values");
        bool set = strcmp(op, "In") == 0 || strcmp(op, "NotIn") == 0;
        bool exists = strcmp(op, "Exists") == 0 || strcmp(op, "DoesNotExist") == 0;

        if (!among(scopes_known, scope))
                return xp_fail_field(ctx,
                                     -EINVAL,
                                     MATCH_EXPRESSIONS ".scopeName",
                                     "Invalid value: \"%s\": unsupported scope",
                                     scope);
        if (!fits_hard(scope, json_object_get(spec, "hard")))
                return invalid(ctx,
                               MATCH_EXPRESSIONS,
                               GO_SELECTOR,
                               json_object_get(spec, "scopeSelector"),
                               "unsupported scope applied to resource");
        if (among(scopes_exists_only, scope) && strcmp(op, "Exists") != 0)
                return xp_fail_field(
                    ctx,
                    -EINVAL,
                    MATCH_EXPRESSIONS ".operator",
                    "Invalid value: \"%s\": must be 'Exist' when scope is any of "
                    "ResourceQuotaScopeTerminating, ResourceQuotaScopeNotTerminating, "
                    "ResourceQuotaScopeBestEffort, ResourceQuotaScopeNotBestEffort or "
                    "ResourceQuotaScopeCrossNamespacePodAffinity",
                    op);
        if (!set && !exists)
                return xp_fail_field(ctx,
                                     -EINVAL,
                                     MATCH_EXPRESSIONS ".operator",
                                     "Invalid value: \"%s\": not a valid selector operator",
                                     op);
        if (set && json_array_size(values) == 0)
                return xp_fail_field(ctx,
                                     -EINVAL,
                                     MATCH_EXPRESSIONS ".values",
                                     "Required value: must be at least one value when `operator` "
                                     "is 'In' or 'NotIn' for scope selector");
        if (exists && json_array_size(values) != 0)
                return invalid(ctx,
                               MATCH_EXPRESSIONS ".values",
                               GO_VALUES,
                               values,
                               "must be no value when `operator` is 'Exist' or 'DoesNotExist' "
                               "for scope selector");
        return 0;
}

/* Whether a requirement of the selector list names scope. */
static bool selector_has(const json_t *list, const char *scope)
{
        const json_t *req;
        size_t i;

        json_array_foreach(list, i, req)
        {
                if (strcmp(xp_json_str_at(req, "scopeName", ""), scope) == 0)
                        return true;
        }
        return false;
}

int xp_quota_scopes_validate(struct xp_decode_ctx *ctx, const json_t *spec)
{
        const json_t *list = xp_json_at(spec, "scopeSelector.matchExpressions"), *req;
        size_t i;
        int r = check_scopes(ctx, spec);

        if (r < 0 || !json_is_object(json_object_get(spec, "scopeSelector")))
                return r;
        json_array_foreach(list, i, req)
        {
                r = check_requirement(ctx, spec, req);
                if (r < 0)
                        return r;
        }
        /* Kubernetes shows spec.scopes here, not the selector */
        if (conflicting(selector_has, list))
                return invalid(ctx,
                               MATCH_EXPRESSIONS,
                               GO_SCOPES,
                               json_object_get(spec, "scopes"),
                               "conflicting scopes");
        return 0;
}
