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

#include "kind_gang.h"
#include "schema.h"
#include "table_internal.h"
#include "xpool/doc.h"
#include "xpool/kind.h"
#include "xpool/strutil.h"

static int short_name_check(struct xp_decode_ctx *ctx, const json_t *ref, const char *key)
{
        const char *value = json_string_value(json_object_get(ref, key));
        char field[96];

        snprintf(field, sizeof(field), "spec.podGroupTemplateRef.workload.%s", key);
        return xp_gang_name_check(ctx, value, field);
}

static int template_ref_check(struct xp_decode_ctx *ctx, const json_t *spec)
{
        static const char *const members[] = {"workload"};
        const json_t *ref = json_object_get(spec, "podGroupTemplateRef");
        const json_t *workload;
        int r;

        if (!ref || json_is_null(ref))
                return 0;
        r = xp_gang_union_check(ctx, ref, "spec.podGroupTemplateRef", members, 1, "`workload`");
        if (r < 0)
                return r;
        workload = json_object_get(ref, "workload");
        r = short_name_check(ctx, workload, "workloadName");
        return r < 0 ? r : short_name_check(ctx, workload, "podGroupTemplateName");
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
        r = xp_gang_policy_check(
            ctx, json_object_get(spec, "schedulingPolicy"), "spec.schedulingPolicy");
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
