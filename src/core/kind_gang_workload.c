/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Kubernetes 1.36's Workload (scheduling.k8s.io/v1alpha2), served beside v1alpha1 over the same
 * stored objects (as autoscaling/v1 HorizontalPodAutoscaler is beside v2): spec.podGroupTemplates
 * (at most 8, each a DNS-label name and a schedulingPolicy of basic or gang.minCount, PodGroup's
 * type) and an optional spec.controllerRef, the whole spec immutable. A write in v1alpha2 is
 * checked in v1alpha2's words, then stored as v1alpha1 (podGroupTemplates become podGroups,
 * schedulingPolicy becomes policy: the same members), so the scheduler reads one form; what is
 * read through v1alpha2 is converted back (answer_as). Pods join a template's gang through a
 * PodGroup made from it (spec.podGroupTemplateRef, KEP-5832), as upstream's workload
 * controllers make them.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "kind_gang.h"
#include "schema.h"
#include "xpool/doc.h"
#include "xpool/kind.h"
#include "xpool/strutil.h"

#define TEMPLATES_MAX 8 /* Kubernetes' limit on a Workload's podGroupTemplates */

/* Renames member from to to in object, keeping its value; absent: nothing to do. 0 or -ENOMEM. */
static int rename_member(json_t *object, const char *from, const char *to)
{
        json_t *value = json_object_get(object, from);

        if (!value)
                return 0;
        if (json_object_set(object, to, value) < 0)
                return -ENOMEM;
        json_object_del(object, from);
        return 0;
}

/* One version's group list and policy member names as the other's, in object (its spec's). */
static int convert_spec(json_t *object,
                        const char *groups_from,
                        const char *groups_to,
                        const char *policy_from,
                        const char *policy_to)
{
        json_t *spec = json_object_get(object, "spec");
        json_t *groups = json_object_get(spec, groups_from);
        int r = 0;

        for (size_t i = 0; i < json_array_size(groups) && r >= 0; i++)
                r = rename_member(json_array_get(groups, i), policy_from, policy_to);
        return r < 0 ? r : rename_member(spec, groups_from, groups_to);
}

static int workload_to_v1alpha2(const json_t *stored, json_t **ret)
{
        json_t *shown = json_deep_copy(stored);

        if (!shown ||
            json_object_set_new(shown, "apiVersion", json_string("scheduling.k8s.io/v1alpha2")) <
                0 ||
            convert_spec(shown, "podGroups", "podGroupTemplates", "policy", "schedulingPolicy") <
                0) {
                json_decref(shown);
                return -ENOMEM;
        }
        *ret = shown;
        return 0;
}

static int controller_ref_check(struct xp_decode_ctx *ctx, const json_t *spec)
{
        const json_t *ref = json_object_get(spec, "controllerRef");

        if (!ref || json_is_null(ref))
                return 0;
        if (!xp_json_str_at(ref, "kind", NULL) || !xp_json_str_at(ref, "kind", NULL)[0])
                return xp_fail_field(ctx, -EINVAL, "spec.controllerRef.kind", "Required value");
        if (!xp_json_str_at(ref, "name", NULL) || !xp_json_str_at(ref, "name", NULL)[0])
                return xp_fail_field(ctx, -EINVAL, "spec.controllerRef.name", "Required value");
        return 0;
}

static int template_check(struct xp_decode_ctx *ctx, const json_t *templates, size_t i)
{
        const json_t *template = json_array_get(templates, i);
        const char *name = xp_json_str_at(template, "name", NULL);
        char field[96];
        int r;

        snprintf(field, sizeof(field), "spec.podGroupTemplates[%zu].name", i);
        r = xp_gang_name_check(ctx, name, field);
        if (r < 0)
                return r;
        for (size_t k = 0; k < i; k++)
                if (xp_streq0(xp_json_str_at(json_array_get(templates, k), "name", NULL), name))
                        return xp_fail_field(ctx, -EINVAL, field, "Duplicate value: \"%s\"", name);
        snprintf(field, sizeof(field), "spec.podGroupTemplates[%zu].schedulingPolicy", i);
        return xp_gang_policy_check(ctx, json_object_get(template, "schedulingPolicy"), field);
}

/* Only a new object is checked here: an update is checked as stored, by v1alpha1's rules
 * (its whole spec immutable), after the conversion. */
static int
workload_validate(struct xp_decode_ctx *ctx, const struct xp_doc *doc, const struct xp_doc *old)
{
        const json_t *spec = json_object_get(doc->body, "spec");
        const json_t *templates = json_object_get(spec, "podGroupTemplates");
        size_t n = json_array_size(templates);
        int r;

        (void)old;
        if (!json_is_object(spec))
                return xp_fail_field(ctx, -EINVAL, "spec", "Required value");
        if (n == 0)
                return xp_fail_field(ctx, -EINVAL, "spec.podGroupTemplates", "Required value");
        if (n > TEMPLATES_MAX)
                return xp_fail_field(ctx,
                                     -EINVAL,
                                     "spec.podGroupTemplates",
                                     "Too many: %zu: must have at most %d items",
                                     n,
                                     TEMPLATES_MAX);
        for (size_t i = 0; i < n; i++) {
                r = template_check(ctx, templates, i);
                if (r < 0)
                        return r;
        }
        return controller_ref_check(ctx, spec);
}

/*
 * Decodes a v1alpha2 Workload and hands back the v1alpha1 document it is stored as. An object
 * already in v1alpha1 (the stored form, which a server decodes as trusted) is decoded as such.
 */
static int workload_v1alpha2_from_json(const json_t *json,
                                       const struct xp_decode_source *source,
                                       unsigned flags,
                                       void **ret,
                                       struct xp_error *err)
{
        struct xp_doc *doc;
        int r;

        if (xp_streq0(xp_json_str_at(json, "apiVersion", NULL), xp_kind_workload.api_version))
                return xp_kind_workload.from_json(json, source, flags, ret, err);
        /* the conversion renames members in the body: it must hold its own nodes */
        r = xp_doc_from_json(&xp_kind_workload_v1alpha2,
                             json,
                             source,
                             flags & ~(unsigned)XP_DECODE_SHARE,
                             &doc,
                             err);
        if (r < 0)
                return r;
        r = convert_spec(doc->body, "podGroupTemplates", "podGroups", "schedulingPolicy", "policy");
        if (r < 0) {
                xp_doc_free(doc);
                return xp_errorf(err, r, "out of memory converting a Workload");
        }
        doc->kind = &xp_kind_workload;
        *ret = doc;
        return 0;
}

static const char *const no_short_names[] = {NULL};

const struct xp_kind xp_kind_workload_v1alpha2 = {
    .kind = "Workload",
    .list_kind = "WorkloadList",
    .group = "scheduling.k8s.io",
    .version = "v1alpha2",
    .api_version = "scheduling.k8s.io/v1alpha2",
    .plural = "workloads",
    .singular = "workload",
    .short_names = no_short_names,
    .namespaced = true,
    .from_json = workload_v1alpha2_from_json,
    .to_json = xp_doc_to_json_any,
    .validate = xp_doc_validate_any,
    .free = xp_doc_free_any,
    .meta = xp_doc_meta_any,
    .validate_update = xp_doc_validate_update_any,
    .schema_type = "WorkloadV1alpha2",
    .doc_validate = workload_validate,
    .table = &xp_table_workload, /* rows are rendered from the stored (v1alpha1) objects */
    .answer_as = workload_to_v1alpha2,
};
