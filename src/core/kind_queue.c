/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Queue (scheduling.xpool.io/v1alpha1), a document kind (xpool/doc.h): a team's share of the
 * cluster, per resource a guaranteed quota, a limit and a weight; a parent for the tree; status
 * written by the scheduler (allocated, guaranteed, borrowed, pending, deserved per resource).
 * Cluster-scoped, as Volcano's Queue and Kueue's ClusterQueue. docs/scheduler.md, "Queues".
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "schema.h"
#include "table_internal.h"
#include "xpool/doc.h"
#include "xpool/names.h"
#include "xpool/quantity.h"
#include "xpool/resource.h"
#include "xpool/strutil.h"

static int queue_defaults(struct xp_doc *doc)
{
        int r = 0;

        if (!xp_json_at(doc->body, "spec.weight"))
                r = xp_json_set_at(doc->body, "spec.weight", json_integer(1));
        if (r >= 0 && !xp_json_at(doc->body, "spec.reclaimable"))
                r = xp_json_set_at(doc->body, "spec.reclaimable", json_true());
        return r;
}

/* A quantity of a resource's entry: 1 with *ret, 0 when absent, -EINVAL reported. */
static int quantity_of(struct xp_decode_ctx *ctx,
                       const json_t *entry,
                       const char *field,
                       const char *res,
                       struct xp_quantity *ret)
{
        const json_t *v = json_object_get(entry, field);
        struct xp_ge_msg m;
        char path[300];

        if (!v)
                return 0;
        snprintf(path, sizeof(path), "spec.resources[%s].%s", res, field);
        if (table_quantity(v, ret) < 0)
                return xp_fail_field(
                    ctx, -EINVAL, path, "Invalid value: a quantity such as \"8\" or \"64Gi\"");
        if (xp_quantity_sign(ret) < 0)
                return xp_fail_field(
                    ctx,
                    -EINVAL,
                    path,
                    "%s",
                    xp_ge_msg_quoted(&m, json_is_string(v) ? json_string_value(v) : "", 0));
        return 1;
}

static int check_weight(struct xp_decode_ctx *ctx, const json_t *w, const char *path)
{
        if (w &&
            (!json_is_number(w) || !(json_number_value(w) > 0) || !isfinite(json_number_value(w))))
                return xp_fail_field(
                    ctx, -EINVAL, path, "Invalid value: must be a number greater than 0");
        return 0;
}

static int check_resource(struct xp_decode_ctx *ctx, const char *res, const json_t *entry)
{
        struct xp_quantity g, l;
        struct xp_error err = {0};
        struct xp_ge_msg m;
        char path[300];
        int hg, hl;

        if (xp_resource_name_check(res, &err) < 0)
                return xp_fail_key(ctx, -EINVAL, "spec.resources", res, "%s", err.msg);
        hg = quantity_of(ctx, entry, "guaranteed", res, &g);
        if (hg < 0)
                return hg;
        hl = quantity_of(ctx, entry, "limit", res, &l);
        if (hl < 0)
                return hl;
        if (hg > 0 && hl > 0 && xp_quantity_cmp(&l, &g) < 0) {
                snprintf(path, sizeof(path), "spec.resources[%s].limit", res);
                return xp_fail_field(
                    ctx, -EINVAL, path, "%s", xp_ge_msg(&m, NULL, "the guaranteed quota"));
        }
        snprintf(path, sizeof(path), "spec.resources[%s].weight", res);
        return check_weight(ctx, json_object_get(entry, "weight"), path);
}

static int
queue_validate(struct xp_decode_ctx *ctx, const struct xp_doc *doc, const struct xp_doc *old)
{
        const char *parent = xp_json_str_at(doc->body, "spec.parent", NULL);
        const json_t *resources = xp_json_object_at(doc->body, "spec.resources"), *entry;
        struct xp_error err = {0};
        const char *res;
        int r;

        (void)old;
        if (parent && parent[0] && xp_check_dns1123_subdomain(parent, &err) < 0)
                return xp_fail_field(
                    ctx, -EINVAL, "spec.parent", "Invalid value: \"%s\": %s", parent, err.msg);
        if (parent && xp_streq0(parent, doc->metadata.name))
                return xp_fail_field(ctx,
                                     -EINVAL,
                                     "spec.parent",
                                     "Invalid value: \"%s\": a queue cannot be its own parent",
                                     parent);
        r = check_weight(ctx, xp_json_at(doc->body, "spec.weight"), "spec.weight");
        json_object_foreach((json_t *)resources, res, entry)
        {
                if (r >= 0)
                        r = check_resource(ctx, res, entry);
        }
        return r;
}

/* ---- kubectl get queues: NAME PARENT WEIGHT GUARANTEED ALLOCATED BORROWED PENDING AGE ------- */

static const struct table_column queue_columns[] = {
    {.name = "Name", .type = "string", .format = "name", .description = "Name of the object."},
    {.name = "Parent", .type = "string", .description = "The queue this one is part of."},
    {.name = "Weight", .type = "string", .description = "Its weight in sharing what is idle."},
    {.name = "Guaranteed", .type = "string", .description = "Its guaranteed quota per resource."},
    {.name = "Allocated", .type = "string", .description = "What its pods hold."},
    {.name = "Borrowed", .type = "string", .description = "What it holds beyond its guarantee."},
    {.name = "Pending", .type = "string", .description = "What its waiting pods ask for."},
    {.name = "Age", .type = "string", .description = "Time since the object was created."},
    {.name = "Deserved", .type = "string", .description = "Its fair share.", .priority = 1},
    {.name = "Limit", .type = "string", .description = "Its limit per resource.", .priority = 1},
};

static int compare_keys(const void *a, const void *b)
{
        return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* "nvidia.com/gpu=8,cpu=64" of a map of quantities (or of the resources' field), by name,
 * zeros left out. */
static int cell_map(json_t *cells, const json_t *map, const char *field)
{
        const char *keys[64];
        size_t n = 0, len = 0;
        char text[1024] = "";
        const json_t *v;
        const char *k;

        json_object_foreach((json_t *)map, k, v) if (n < XP_ELEMENTSOF(keys)) keys[n++] = k;
        if (n > 1) /* an empty array may be NULL, which qsort may not take */
                qsort(keys, n, sizeof(*keys), compare_keys);
        for (size_t i = 0; i < n && len < sizeof(text); i++) {
                v = json_object_get(map, keys[i]);
                if (field)
                        v = json_object_get(v, field);
                if ((json_is_string(v) && strcmp(json_string_value(v), "0") == 0) ||
                    (json_is_integer(v) && json_integer_value(v) == 0))
                        continue; /* nothing of it: left out */
                if (json_is_string(v))
                        len += (size_t)snprintf(text + len,
                                                sizeof(text) - len,
                                                "%s%s=%s",
                                                len ? "," : "",
                                                keys[i],
                                                json_string_value(v));
                else if (json_is_integer(v))
                        len += (size_t)snprintf(text + len,
                                                sizeof(text) - len,
                                                "%s%s=%lld",
                                                len ? "," : "",
                                                keys[i],
                                                (long long)json_integer_value(v));
        }
        return table_cell_or_none(cells, text);
}

static int queue_row(const json_t *object, time_t now, json_t *cells, json_t *row)
{
        const json_t *resources = table_get(object, "spec.resources");
        const json_t *w = table_get(object, "spec.weight");
        int r;

        (void)row;
        r = table_cell_str(cells, table_str0(object, "metadata.name"));
        if (r >= 0)
                r = table_cell_or_none(cells, table_str(object, "spec.parent"));
        if (r >= 0)
                r = json_is_number(w) ? table_cell_printf(cells, "%g", json_number_value(w))
                                      : table_cell_str(cells, "1");
        if (r >= 0)
                r = cell_map(cells, resources, "guaranteed");
        if (r >= 0)
                r = cell_map(cells, table_get(object, "status.allocated"), NULL);
        if (r >= 0)
                r = cell_map(cells, table_get(object, "status.borrowed"), NULL);
        if (r >= 0)
                r = cell_map(cells, table_get(object, "status.pending"), NULL);
        if (r >= 0)
                r = table_cell_age(cells, object, "metadata.creationTimestamp", now);
        if (r >= 0)
                r = cell_map(cells, table_get(object, "status.deserved"), NULL);
        if (r >= 0)
                r = cell_map(cells, resources, "limit");
        return r;
}

static const struct xp_table_kind queue_table = {
    .kind = "Queue",
    .columns = queue_columns,
    .n_columns = XP_ELEMENTSOF(queue_columns),
    .row = queue_row,
};

static const char *const queue_short_names[] = {"q", NULL};

XP_DOC_KIND_DECODER(xp_kind_queue)

const struct xp_kind xp_kind_queue = {
    .kind = "Queue",
    .list_kind = "QueueList",
    .group = "scheduling.xpool.io",
    .version = "v1alpha1",
    .api_version = "scheduling.xpool.io/v1alpha1",
    .plural = "queues",
    .singular = "queue",
    .short_names = queue_short_names,
    .namespaced = false,
    XP_DOC_KIND_OPS(xp_kind_queue),
    .doc_defaults = queue_defaults,
    .doc_validate = queue_validate,
    .table = &queue_table,
    .status_subresource = true,
};
