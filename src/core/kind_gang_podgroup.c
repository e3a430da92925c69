/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Kubernetes 1.36's PodGroup (scheduling.k8s.io/v1alpha2), a document kind (xpool/doc.h): a gang
 * as an object of its own, with spec.schedulingPolicy of basic or gang (gang.minCount), an
 * optional spec.podGroupTemplateRef to the Workload template it came from, both immutable, and
 * status.conditions (PodGroupScheduled, which the scheduler writes). Pods join one with
 * spec.schedulingGroup.podGroupName (docs/scheduler.md, "Gangs").
 *
 * Its plural is Volcano's ("podgroups"), so it is stored under a key of its own
 * (struct xp_kind.url_plural says why).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "schema.h"
#include "table_internal.h"
#include "xpool/doc.h"
#include "xpool/kind.h"
#include "xpool/names.h"
#include "xpool/strutil.h"

#define GANG_MIN_MAX 10000 /* xpool's largest gang (XP_GANG_MEMBERS_MAX) */

/* A union of which exactly one member is set, in the words of Kubernetes' declarative
 * validation of unions. */
static int union_check(struct xp_decode_ctx *ctx,
                       const json_t *object,
                       const char *field,
                       const char *const members[],
                       size_t n,
                       const char *expected)
{
        size_t set = 0;

        for (size_t i = 0; i < n; i++)
                set += json_object_get(object, members[i]) != NULL;
        if (set == 1)
                return 0;
        return xp_fail_field(ctx,
                             -EINVAL,
                             field,
                             "Invalid value: \"\": must specify %s of: %s",
                             set ? "exactly one" : "one",
                             expected);
}

static int short_name_check(struct xp_decode_ctx *ctx, const json_t *ref, const char *key)
{
        const char *value = json_string_value(json_object_get(ref, key));
        struct xp_error err = {0};
        char field[96];

        snprintf(field, sizeof(field), "spec.podGroupTemplateRef.workload.%s", key);
        if (!value || !value[0])
                return xp_fail_field(ctx, -EINVAL, field, "Required value");
        if (xp_check_dns1123_label(value, &err) < 0)
                return xp_fail_field(ctx, -EINVAL, field, "%s", err.msg);
        return 0;
}

static int template_ref_check(struct xp_decode_ctx *ctx, const json_t *spec)
{
        static const char *const members[] = {"workload"};
        const json_t *ref = json_object_get(spec, "podGroupTemplateRef");
        const json_t *workload;
        int r;

        if (!ref || json_is_null(ref))
                return 0;
        r = union_check(ctx, ref, "spec.podGroupTemplateRef", members, 1, "`workload`");
        if (r < 0)
                return r;
        workload = json_object_get(ref, "workload");
        r = short_name_check(ctx, workload, "workloadName");
        return r < 0 ? r : short_name_check(ctx, workload, "podGroupTemplateName");
}

static int policy_check(struct xp_decode_ctx *ctx, const json_t *spec)
{
        static const char *const members[] = {"basic", "gang"};
        const json_t *policy = json_object_get(spec, "schedulingPolicy");
        const json_t *gang, *min;
        int r;

        if (!json_is_object(policy))
                return xp_fail_field(ctx, -EINVAL, "spec.schedulingPolicy", "Required value");
        r = union_check(ctx, policy, "spec.schedulingPolicy", members, 2, "`basic`, `gang`");
        if (r < 0 || !(gang = json_object_get(policy, "gang")))
                return r;
        min = json_object_get(gang, "minCount");
        if (!min)
                return xp_fail_field(
                    ctx, -EINVAL, "spec.schedulingPolicy.gang.minCount", "Required value");
        if (json_integer_value(min) < 1)
                return xp_fail_field(ctx,
                                     -EINVAL,
                                     "spec.schedulingPolicy.gang.minCount",
                                     "Invalid value: %lld: must be greater than or equal to 1",
                                     (long long)json_integer_value(min));
        if (json_integer_value(min) > GANG_MIN_MAX)
                return xp_fail_field(ctx,
                                     -EINVAL,
                                     "spec.schedulingPolicy.gang.minCount",
                                     "Invalid value: %lld: must be less than or equal to %d",
                                     (long long)json_integer_value(min),
                                     GANG_MIN_MAX);
        return 0;
}

/* Kubernetes' immutable fields: the stored value must stay (an update may not add one either). */
static int immutable_check(struct xp_decode_ctx *ctx,
                           const struct xp_doc *doc,
                           const struct xp_doc *old,
                           const char *key)
{
        const json_t *now = json_object_get(json_object_get(doc->body, "spec"), key);
        const json_t *was = json_object_get(json_object_get(old->body, "spec"), key);
        char field[64];

        if (json_equal(now, was) || (!now && !was))
                return 0;
        snprintf(field, sizeof(field), "spec.%s", key);
        return xp_fail_field(ctx, -EINVAL, field, "Forbidden: field is immutable");
}

static int
podgroup_validate(struct xp_decode_ctx *ctx, const struct xp_doc *doc, const struct xp_doc *old)
{
        const json_t *spec = json_object_get(doc->body, "spec");
        int r;

        if (!json_is_object(spec))
                return xp_fail_field(ctx, -EINVAL, "spec", "Required value");
        r = policy_check(ctx, spec);
        if (r >= 0)
                r = template_ref_check(ctx, spec);
        if (r >= 0 && old)
                r = immutable_check(ctx, doc, old, "schedulingPolicy");
        if (r >= 0 && old)
                r = immutable_check(ctx, doc, old, "podGroupTemplateRef");
        if (r >= 0 && old)
                r = immutable_check(ctx, doc, old, "schedulingConstraints");
        return r;
}

/* ---- kubectl get podgroups ------------------------------------------------------------------ */

static const struct table_column podgroup_columns[] = {
    TABLE_NAME_COLUMN,
    {.name = "Policy", .type = "string", .description = "Its scheduling policy: Basic or Gang."},
    {.name = "Min Count",
     .type = "integer",
     .description = "The members a gang places together at least (0: a basic policy)."},
    {.name = "Scheduled",
     .type = "string",
     .description = "The PodGroupScheduled condition's status and reason."},
    TABLE_AGE_COLUMN,
    {.name = "Workload",
     .type = "string",
     .description = "The Workload and template it was made from.",
     .priority = 1},
};

static const json_t *condition(const json_t *object, const char *type)
{
        const json_t *conditions = table_array(object, "status.conditions");

        for (size_t i = 0; i < json_array_size(conditions); i++)
                if (xp_streq0(table_str(json_array_get(conditions, i), "type"), type))
                        return json_array_get(conditions, i);
        return NULL;
}

static int podgroup_row(const json_t *object, time_t now, json_t *cells, json_t *row)
{
        const json_t *scheduled = condition(object, "PodGroupScheduled");
        const json_t *ref = table_get(object, "spec.podGroupTemplateRef.workload");
        bool gang = table_get(object, "spec.schedulingPolicy.gang") != NULL;
        int r;

        (void)row;
        r = table_cell_str(cells, table_str0(object, "metadata.name"));
        if (r >= 0)
                r = table_cell_str(cells, gang ? "Gang" : "Basic");
        if (r >= 0)
                r = table_cell_int(cells, table_int(object, "spec.schedulingPolicy.gang.minCount"));
        if (r >= 0 && scheduled)
                r = table_cell_printf(cells,
                                      "%s (%s)",
                                      table_str0(scheduled, "status"),
                                      table_str0(scheduled, "reason"));
        else if (r >= 0)
                r = table_cell_or_none(cells, NULL);
        if (r >= 0)
                r = table_cell_age(cells, object, "metadata.creationTimestamp", now);
        if (r >= 0 && ref)
                r = table_cell_printf(cells,
                                      "%s/%s",
                                      table_str0(ref, "workloadName"),
                                      table_str0(ref, "podGroupTemplateName"));
        else if (r >= 0)
                r = table_cell_or_none(cells, NULL);
        return r;
}

static const struct xp_table_kind podgroup_table = {
    .kind = "PodGroup",
    .columns = podgroup_columns,
    .n_columns = XP_ELEMENTSOF(podgroup_columns),
    .row = podgroup_row,
};

static const char *const no_short_names[] = {NULL};

XP_DOC_KIND_DECODER(xp_kind_k8s_podgroup)

const struct xp_kind xp_kind_k8s_podgroup = {
    .kind = "PodGroup",
    .list_kind = "PodGroupList",
    .group = "scheduling.k8s.io",
    .version = "v1alpha2",
    .api_version = "scheduling.k8s.io/v1alpha2",
    .plural = "podgroups.scheduling.k8s.io",
    .url_plural = "podgroups",
    .singular = "podgroup",
    .short_names = no_short_names,
    .namespaced = true,
    XP_DOC_KIND_OPS(xp_kind_k8s_podgroup),
    .schema_type = "PodGroupV1alpha2",
    .doc_validate = podgroup_validate,
    .table = &podgroup_table,
    .status_subresource = true,
};
