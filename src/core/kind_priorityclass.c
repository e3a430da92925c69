/* SPDX-License-Identifier: Apache-2.0 */
/*
 * PriorityClass (scheduling.k8s.io/v1), a document kind (xpool/doc.h): value, globalDefault,
 * description, preemptionPolicy (default PreemptLowerPriority; value and policy immutable).
 * What kube-apiserver's Priority plugin refuses with 403 (a value above 1,000,000,000, the
 * built-in names) is refused here as invalid; the built-in classes are the admission's
 * (src/registry/priority.c), not stored objects. docs/scheduler.md, "Priority".
 */
#include <errno.h>
#include <string.h>

#include "protobuf_internal.h"
#include "schema.h"
#include "table_internal.h"
#include "xpool/doc.h"
#include "xpool/strutil.h"

#define VALUE_MAX            1000000000 /* the highest value of a user's class */
#define SYSTEM_NODE_VALUE    2000001000
#define SYSTEM_CLUSTER_VALUE 2000000000

static int priorityclass_defaults(struct xp_doc *doc)
{
        if (!xp_json_str_at(doc->body, "preemptionPolicy", NULL))
                return xp_json_set_str_at(doc->body, "preemptionPolicy", "PreemptLowerPriority");
        return 0;
}

/* The built-in classes are the server's: their own values only. */
static int64_t builtin_value(const char *name)
{
        if (xp_streq0(name, "system-node-critical"))
                return SYSTEM_NODE_VALUE;
        if (xp_streq0(name, "system-cluster-critical"))
                return SYSTEM_CLUSTER_VALUE;
        return 0;
}

static int priorityclass_validate(struct xp_decode_ctx *ctx,
                                  const struct xp_doc *doc,
                                  const struct xp_doc *old)
{
        const char *policy = xp_json_str_at(doc->body, "preemptionPolicy", NULL);
        const json_t *value = xp_json_at(doc->body, "value");
        int64_t builtin = builtin_value(doc->metadata.name);

        if (old) {
                if (!json_equal((json_t *)value, (json_t *)xp_json_at(old->body, "value")))
                        return xp_fail_field(
                            ctx, -EINVAL, "value", "Forbidden: may not be changed in an update.");
                if (!xp_streq0(policy, xp_json_str_at(old->body, "preemptionPolicy", NULL)))
                        return xp_fail_field(ctx,
                                             -EINVAL,
                                             "preemptionPolicy",
                                             "Invalid value: \"%s\": field is immutable",
                                             policy ? policy : "");
                return 0;
        }
        if (!json_is_integer(value))
                return xp_fail_field(ctx, -EINVAL, "value", "Required value");
        if (builtin && json_integer_value(value) != builtin)
                return xp_fail_field(
                    ctx,
                    -EINVAL,
                    "metadata.name",
                    "Invalid value: \"%s\": the name of the priority class is a reserved name for system use only",
                    doc->metadata.name);
        if (!builtin && json_integer_value(value) > VALUE_MAX)
                return xp_fail_field(
                    ctx,
                    -EINVAL,
                    "value",
                    "Invalid value: %lld: maximum allowed value of a user defined priority is %d",
                    (long long)json_integer_value(value),
                    VALUE_MAX);
        if (!builtin && doc->metadata.name && strncmp(doc->metadata.name, "system-", 7) == 0)
                return xp_fail_field(
                    ctx,
                    -EINVAL,
                    "metadata.name",
                    "Invalid value: \"%s\": priority class names with 'system-' prefix are reserved",
                    doc->metadata.name);
        if (policy && strcmp(policy, "PreemptLowerPriority") != 0 && strcmp(policy, "Never") != 0)
                return xp_fail_field(
                    ctx,
                    -EINVAL,
                    "preemptionPolicy",
                    "Unsupported value: \"%s\": supported values: \"Never\", \"PreemptLowerPriority\"",
                    policy);
        return 0;
}

/* ---- kubectl get priorityclasses: NAME VALUE GLOBAL-DEFAULT AGE PREEMPTIONPOLICY ------------- */

static const struct table_column priorityclass_columns[] = {
    {.name = "Name", .type = "string", .format = "name", .description = "Name of the object."},
    {.name = "Value", .type = "integer", .description = "The priority of the pods of this class."},
    {.name = "Global-Default",
     .type = "boolean",
     .description = "Whether pods with no class get this one."},
    {.name = "Age", .type = "string", .description = "Time since the object was created."},
    {.name = "PreemptionPolicy",
     .type = "string",
     .description = "Whether its pods may evict pods of lower priority."},
};

static int priorityclass_row(const json_t *object, time_t now, json_t *cells, json_t *row)
{
        int r;

        (void)row;
        r = table_cell_str(cells, table_str0(object, "metadata.name"));
        if (r >= 0)
                r = table_cell_int(cells, table_int(object, "value"));
        if (r >= 0)
                r = json_array_append_new(cells,
                                          json_boolean(table_bool(object, "globalDefault"))) < 0
                        ? -ENOMEM
                        : 0;
        if (r >= 0)
                r = table_cell_age(cells, object, "metadata.creationTimestamp", now);
        if (r >= 0)
                r = table_cell_str(cells, table_str0(object, "preemptionPolicy"));
        return r;
}

static const struct xp_table_kind priorityclass_table = {
    .kind = "PriorityClass",
    .columns = priorityclass_columns,
    .n_columns = XP_ELEMENTSOF(priorityclass_columns),
    .row = priorityclass_row,
};

/* scheduling/v1 PriorityClass's generated.proto */
MESSAGE(priorityclass_pb,
        "scheduling/v1 PriorityClass",
        MSG(1, "metadata", xp_pb_object_meta),
        I32(2, "value"),
        BOOL(3, "globalDefault"),
        STR(4, "description"),
        STR_P(5, "preemptionPolicy"));

static const char *const priorityclass_short_names[] = {"pc", NULL};

XP_DOC_KIND_DECODER(xp_kind_priorityclass)

const struct xp_kind xp_kind_priorityclass = {
    .kind = "PriorityClass",
    .list_kind = "PriorityClassList",
    .group = "scheduling.k8s.io",
    .version = "v1",
    .api_version = "scheduling.k8s.io/v1",
    .plural = "priorityclasses",
    .singular = "priorityclass",
    .short_names = priorityclass_short_names,
    .namespaced = false,
    XP_DOC_KIND_OPS(xp_kind_priorityclass),
    .doc_defaults = priorityclass_defaults,
    .doc_validate = priorityclass_validate,
    .table = &priorityclass_table,
    .protobuf = &priorityclass_pb,
};
