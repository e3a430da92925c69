/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The gang kinds the scheduler reads (docs/scheduler.md, "Gangs"), document kinds
 * (xpool/doc.h): Kubernetes' Workload (scheduling.k8s.io/v1alpha1), whose podGroups carry a
 * basic or a gang policy (gang.minCount) and whose spec is immutable, and Volcano's PodGroup
 * (scheduling.volcano.sh/v1beta1: minMember, minResources; status.phase Pending, Inqueue,
 * Running as the scheduler writes it).
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

#define WORKLOAD_POD_GROUPS_MAX 8 /* Kubernetes' limit on a Workload's podGroups */

/* ---- Workload ------------------------------------------------------------------------------ */

static int pod_group_check(struct xp_decode_ctx *ctx, const json_t *pg, size_t i)
{
        const json_t *policy = json_object_get(pg, "policy");
        const json_t *gang = json_object_get(policy, "gang");
        const char *name = json_string_value(json_object_get(pg, "name"));
        char field[64];
        int64_t min;
        int r;

        snprintf(field, sizeof(field), "spec.podGroups[%zu].name", i);
        r = xp_gang_name_check(ctx, name, field);
        if (r < 0)
                return r;
        snprintf(field, sizeof(field), "spec.podGroups[%zu].policy", i);
        if (!!json_object_get(policy, "basic") == !!gang)
                return xp_fail_field(
                    ctx, -EINVAL, field, "Invalid value: exactly one of basic or gang must be set");
        if (!gang)
                return 0;
        min = xp_json_int_at(gang, "minCount", 0);
        snprintf(field, sizeof(field), "spec.podGroups[%zu].policy.gang.minCount", i);
        if (min < 1 || min > XP_GANG_MIN_MAX)
                return xp_fail_field(ctx,
                                     -EINVAL,
                                     field,
                                     "Invalid value: %lld: must be between 1 and %d",
                                     (long long)min,
                                     XP_GANG_MIN_MAX);
        return 0;
}

static int
workload_validate(struct xp_decode_ctx *ctx, const struct xp_doc *doc, const struct xp_doc *old)
{
        const json_t *groups = xp_json_at(doc->body, "spec.podGroups");
        size_t n = json_array_size(groups);

        if (old) {
                if (!json_equal(json_object_get(doc->body, "spec"),
                                json_object_get(old->body, "spec")))
                        return xp_fail_field(
                            ctx, -EINVAL, "spec", "Invalid value: field is immutable");
                return 0;
        }
        if (n == 0)
                return xp_fail_field(ctx, -EINVAL, "spec.podGroups", "Required value");
        if (n > WORKLOAD_POD_GROUPS_MAX)
                return xp_fail_field(ctx,
                                     -EINVAL,
                                     "spec.podGroups",
                                     "Too many: %zu: must have at most %d items",
                                     n,
                                     WORKLOAD_POD_GROUPS_MAX);
        for (size_t i = 0; i < n; i++) {
                const char *name = xp_json_str_at(json_array_get(groups, i), "name", NULL);
                int r = pod_group_check(ctx, json_array_get(groups, i), i);

                if (r < 0)
                        return r;
                for (size_t k = 0; k < i; k++)
                        if (xp_streq0(xp_json_str_at(json_array_get(groups, k), "name", NULL),
                                      name)) {
                                char field[64];
                                snprintf(field, sizeof(field), "spec.podGroups[%zu].name", i);
                                return xp_fail_field(
                                    ctx, -EINVAL, field, "Duplicate value: \"%s\"", name);
                        }
        }
        return 0;
}

static const struct table_column workload_columns[] = {
    {.name = "Name", .type = "string", .format = "name", .description = "Name of the object."},
    {.name = "Pod Groups",
     .type = "string",
     .description = "Its pod groups, with the gang minimum of each."},
    {.name = "Age", .type = "string", .description = "Time since the object was created."},
};

static int workload_row(const json_t *object, time_t now, json_t *cells, json_t *row)
{
        const json_t *groups = table_array(object, "spec.podGroups");
        char text[256] = "";
        size_t len = 0;
        int r;

        (void)row;
        for (size_t i = 0; i < json_array_size(groups) && len < sizeof(text); i++) {
                const json_t *pg = json_array_get(groups, i);
                int64_t min = table_int(pg, "policy.gang.minCount");
                int k = min > 0 ? snprintf(text + len,
                                           sizeof(text) - len,
                                           "%s%s(gang %lld)",
                                           i ? "," : "",
                                           table_str0(pg, "name"),
                                           (long long)min)
                                : snprintf(text + len,
                                           sizeof(text) - len,
                                           "%s%s",
                                           i ? "," : "",
                                           table_str0(pg, "name"));
                if (k < 0)
                        break;
                len += (size_t)k;
        }
        r = table_cell_str(cells, table_str0(object, "metadata.name"));
        if (r >= 0)
                r = table_cell_or_none(cells, text);
        if (r >= 0)
                r = table_cell_age(cells, object, "metadata.creationTimestamp", now);
        return r;
}

const struct xp_table_kind xp_table_workload = {
    .kind = "Workload",
    .columns = workload_columns,
    .n_columns = XP_ELEMENTSOF(workload_columns),
    .row = workload_row,
};

static const char *const no_short_names[] = {NULL};

XP_DOC_KIND_DECODER(xp_kind_workload)

const struct xp_kind xp_kind_workload = {
    .kind = "Workload",
    .list_kind = "WorkloadList",
    .group = "scheduling.k8s.io",
    .version = "v1alpha1",
    .api_version = "scheduling.k8s.io/v1alpha1",
    .plural = "workloads",
    .singular = "workload",
    .short_names = no_short_names,
    .namespaced = true,
    XP_DOC_KIND_OPS(xp_kind_workload),
    .doc_validate = workload_validate,
    .table = &xp_table_workload,
};

/* ---- Volcano's PodGroup -------------------------------------------------------------------- */

static int
podgroup_validate(struct xp_decode_ctx *ctx, const struct xp_doc *doc, const struct xp_doc *old)
{
        int64_t min = xp_json_int_at(doc->body, "spec.minMember", 0);

        (void)old;
        if (min < 0 || min > XP_GANG_MIN_MAX)
                return xp_fail_field(ctx,
                                     -EINVAL,
                                     "spec.minMember",
                                     "Invalid value: %lld: must be between 0 and %d",
                                     (long long)min,
                                     XP_GANG_MIN_MAX);
        return 0;
}

/* Volcano's printer columns (its CRD's additionalPrinterColumns). */
static const struct table_column podgroup_columns[] = {
    {.name = "Name", .type = "string", .format = "name", .description = "Name of the object."},
    {.name = "Status", .type = "string", .description = "Its phase: Pending, Inqueue, Running."},
    {.name = "minMember",
     .type = "integer",
     .description = "The members placed together at least."},
    {.name = "Runnings", .type = "integer", .description = "Its running members."},
    {.name = "Age", .type = "string", .description = "Time since the object was created."},
    {.name = "Queue", .type = "string", .description = "Its queue.", .priority = 1},
};

static int podgroup_row(const json_t *object, time_t now, json_t *cells, json_t *row)
{
        int r;

        (void)row;
        r = table_cell_str(cells, table_str0(object, "metadata.name"));
        if (r >= 0)
                r = table_cell_str(cells, table_str0(object, "status.phase"));
        if (r >= 0)
                r = table_cell_int(cells, table_int(object, "spec.minMember"));
        if (r >= 0)
                r = table_cell_int(cells, table_int(object, "status.running"));
        if (r >= 0)
                r = table_cell_age(cells, object, "metadata.creationTimestamp", now);
        if (r >= 0)
                r = table_cell_str(cells, table_str0(object, "spec.queue"));
        return r;
}

static const struct xp_table_kind podgroup_table = {
    .kind = "PodGroup",
    .columns = podgroup_columns,
    .n_columns = XP_ELEMENTSOF(podgroup_columns),
    .row = podgroup_row,
};

static const char *const podgroup_short_names[] = {"pg", "podgroup-v1beta1", NULL};

XP_DOC_KIND_DECODER(xp_kind_podgroup)

const struct xp_kind xp_kind_podgroup = {
    .kind = "PodGroup",
    .list_kind = "PodGroupList",
    .group = "scheduling.volcano.sh",
    .version = "v1beta1",
    .api_version = "scheduling.volcano.sh/v1beta1",
    .plural = "podgroups",
    .singular = "podgroup",
    .short_names = podgroup_short_names,
    .namespaced = true,
    XP_DOC_KIND_OPS(xp_kind_podgroup),
    .doc_validate = podgroup_validate,
    .table = &podgroup_table,
    .status_subresource = true,
};
