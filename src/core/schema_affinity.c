/* SPDX-License-Identifier: Apache-2.0 */
/* Label selectors, node selectors, node and pod (anti-)affinity, tolerations and taints. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "schema.h"
#include "schema_affinity.h"
#include "xpool/names.h"

static const struct xp_enum_name label_selector_ops[] = {
    {"In", XP_SELECTOR_OP_IN},
    {"NotIn", XP_SELECTOR_OP_NOT_IN},
    {"Exists", XP_SELECTOR_OP_EXISTS},
    {"DoesNotExist", XP_SELECTOR_OP_DOES_NOT_EXIST},
    {NULL, 0},
};

static const struct xp_enum_name node_selector_ops[] = {
    {"In", XP_SELECTOR_OP_IN},
    {"NotIn", XP_SELECTOR_OP_NOT_IN},
    {"Exists", XP_SELECTOR_OP_EXISTS},
    {"DoesNotExist", XP_SELECTOR_OP_DOES_NOT_EXIST},
    {"Gt", XP_SELECTOR_OP_GT},
    {"Lt", XP_SELECTOR_OP_LT},
    {NULL, 0},
};

static const struct xp_enum_name xp_taint_effect_names[] = {
    {"NoSchedule", XP_TAINT_EFFECT_NO_SCHEDULE},
    {"PreferNoSchedule", XP_TAINT_EFFECT_PREFER_NO_SCHEDULE},
    {"NoExecute", XP_TAINT_EFFECT_NO_EXECUTE},
    {NULL, 0},
};

static const struct xp_enum_name toleration_ops[] = {
    {"Equal", XP_TOLERATION_OP_EQUAL},
    {"Exists", XP_TOLERATION_OP_EXISTS},
    {NULL, 0},
};

static int fail_at(struct xp_decode_ctx *ctx, const char *field, const char *message)
{
        int r;

        xp_path_push_field(&ctx->path, field);
        r = xp_decode_fail(ctx, -EINVAL, NULL, false, "%s", message);
        xp_path_pop(&ctx->path);
        return r;
}

static int validate_requirement(struct xp_decode_ctx *ctx, const void *object)
{
        const struct xp_selector_requirement *req = object;

        switch (req->op) {
        case XP_SELECTOR_OP_IN:
        case XP_SELECTOR_OP_NOT_IN:
                if (req->values.n == 0)
                        return fail_at(
                            ctx,
                            "values",
                            "required value: must be specified when `operator` is 'In' or 'NotIn'");
                for (size_t i = 0; i < req->values.n; i++) {
                        struct xp_error cause = {0};
                        int r = 0;

                        if (xp_check_label_value(req->values.items[i], &cause) >= 0)
                                continue;
                        xp_path_push_field(&ctx->path, "values");
                        xp_path_push_index(&ctx->path, i);
                        r = xp_decode_fail_error(ctx, &cause, NULL, false);
                        ctx->path.depth -= 2;
                        return r;
                }
                break;
        case XP_SELECTOR_OP_EXISTS:
        case XP_SELECTOR_OP_DOES_NOT_EXIST:
                if (req->values.n > 0)
                        return fail_at(
                            ctx,
                            "values",
                            "forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'");
                break;
        case XP_SELECTOR_OP_GT:
        case XP_SELECTOR_OP_LT: {
                char *end;

                if (req->values.n != 1)
                        return fail_at(
                            ctx,
                            "values",
                            "required value: must be specified single value when `operator` is 'Lt' or 'Gt'");
                errno = 0;
                (void)strtoll(req->values.items[0], &end, 10);
                if (errno || end == req->values.items[0] || *end)
                        return fail_at(
                            ctx,
                            "values",
                            "invalid value: must be an integer when `operator` is 'Lt' or 'Gt'");
                break;
        }
        default:
                break;
        }
        return 0;
}

#define REQUIREMENT_FIELDS(ops)                                                                    \
        XP_FIELD("key",                                                                            \
                 XP_FT_STRING,                                                                     \
                 struct xp_selector_requirement,                                                   \
                 key,                                                                              \
                 .flags = XP_FIELD_REQUIRED,                                                       \
                 .check = xp_check_qualified_field),                                               \
            XP_FIELD("operator",                                                                   \
                     XP_FT_ENUM,                                                                   \
                     struct xp_selector_requirement,                                               \
                     op,                                                                           \
                     .flags = XP_FIELD_REQUIRED,                                                   \
                     .enum_names = (ops)),                                                         \
            XP_FIELD("values", XP_FT_STRING_LIST, struct xp_selector_requirement, values)

static const struct xp_field label_requirement_fields[] = {REQUIREMENT_FIELDS(label_selector_ops)};
static const struct xp_field node_requirement_fields[] = {REQUIREMENT_FIELDS(node_selector_ops)};

static const struct xp_schema label_requirement_schema =
    XP_SCHEMA(struct xp_selector_requirement,
              "LabelSelectorRequirement",
              label_requirement_fields,
              .validate = validate_requirement);
static const struct xp_schema node_requirement_schema = XP_SCHEMA(struct xp_selector_requirement,
                                                                  "NodeSelectorRequirement",
                                                                  node_requirement_fields,
                                                                  .validate = validate_requirement);

static const struct xp_field label_selector_fields[] = {
    XP_FIELD("matchLabels",
             XP_FT_STRING_MAP,
             struct xp_label_selector,
             match_labels,
             .check = xp_check_label_map),
    XP_FIELD("matchExpressions",
             XP_FT_STRUCT_LIST,
             struct xp_label_selector,
             match_expressions,
             .schema = &label_requirement_schema),
};
static const struct xp_schema label_selector_schema =
    XP_SCHEMA(struct xp_label_selector, "LabelSelector", label_selector_fields);

static const struct xp_field node_selector_term_fields[] = {
    XP_FIELD("matchExpressions",
             XP_FT_STRUCT_LIST,
             struct xp_node_selector_term,
             match_expressions,
             .schema = &node_requirement_schema),
    XP_FIELD("matchFields",
             XP_FT_STRUCT_LIST,
             struct xp_node_selector_term,
             match_fields,
             .schema = &node_requirement_schema),
};
static const struct xp_schema node_selector_term_schema =
    XP_SCHEMA(struct xp_node_selector_term, "NodeSelectorTerm", node_selector_term_fields);

static int validate_node_selector(struct xp_decode_ctx *ctx, const void *object)
{
        const struct xp_node_selector *selector = object;

        if (selector->terms.n == 0)
                return fail_at(ctx,
                               "nodeSelectorTerms",
                               "required value: must have at least one node selector term");
        return 0;
}

static const struct xp_field node_selector_fields[] = {
    XP_FIELD("nodeSelectorTerms",
             XP_FT_STRUCT_LIST,
             struct xp_node_selector,
             terms,
             .schema = &node_selector_term_schema),
};
static const struct xp_schema node_selector_schema = XP_SCHEMA(struct xp_node_selector,
                                                               "NodeSelector",
                                                               node_selector_fields,
                                                               .validate = validate_node_selector);

static const struct xp_field preferred_term_fields[] = {
    XP_FIELD("weight",
             XP_FT_INT32,
             struct xp_preferred_scheduling_term,
             weight,
             .check = xp_check_weight),
    XP_FIELD("preference",
             XP_FT_STRUCT,
             struct xp_preferred_scheduling_term,
             preference,
             .flags = XP_FIELD_ALWAYS | XP_FIELD_REQUIRED,
             .schema = &node_selector_term_schema),
};
static const struct xp_schema preferred_term_schema = XP_SCHEMA(
    struct xp_preferred_scheduling_term, "PreferredSchedulingTerm", preferred_term_fields);

static const struct xp_field node_affinity_fields[] = {
    XP_FIELD("requiredDuringSchedulingIgnoredDuringExecution",
             XP_FT_STRUCT_PTR,
             struct xp_node_affinity,
             required,
             .schema = &node_selector_schema),
    XP_FIELD("preferredDuringSchedulingIgnoredDuringExecution",
             XP_FT_STRUCT_LIST,
             struct xp_node_affinity,
             preferred,
             .schema = &preferred_term_schema),
};
static const struct xp_schema node_affinity_schema =
    XP_SCHEMA(struct xp_node_affinity, "NodeAffinity", node_affinity_fields);

static int validate_pod_affinity_term(struct xp_decode_ctx *ctx, const void *object)
{
        const struct xp_pod_affinity_term *term = object;

        if (!term->topology_key || !*term->topology_key)
                return fail_at(ctx, "topologyKey", "required value: can not be empty");
        return 0;
}

static const struct xp_field pod_affinity_term_fields[] = {
    XP_FIELD("labelSelector",
             XP_FT_STRUCT_PTR,
             struct xp_pod_affinity_term,
             label_selector,
             .schema = &label_selector_schema),
    XP_FIELD("namespaces", XP_FT_STRING_LIST, struct xp_pod_affinity_term, namespaces),
    XP_FIELD("topologyKey",
             XP_FT_STRING,
             struct xp_pod_affinity_term,
             topology_key,
             .check = xp_check_qualified_field),
    XP_FIELD("namespaceSelector",
             XP_FT_STRUCT_PTR,
             struct xp_pod_affinity_term,
             namespace_selector,
             .schema = &label_selector_schema),
};
static const struct xp_schema pod_affinity_term_schema =
    XP_SCHEMA(struct xp_pod_affinity_term,
              "PodAffinityTerm",
              pod_affinity_term_fields,
              .validate = validate_pod_affinity_term);

static const struct xp_field weighted_term_fields[] = {
    XP_FIELD("weight",
             XP_FT_INT32,
             struct xp_weighted_pod_affinity_term,
             weight,
             .check = xp_check_weight),
    XP_FIELD("podAffinityTerm",
             XP_FT_STRUCT,
             struct xp_weighted_pod_affinity_term,
             term,
             .flags = XP_FIELD_ALWAYS | XP_FIELD_REQUIRED,
             .schema = &pod_affinity_term_schema),
};
static const struct xp_schema weighted_term_schema = XP_SCHEMA(
    struct xp_weighted_pod_affinity_term, "WeightedPodAffinityTerm", weighted_term_fields);

static const struct xp_field pod_affinity_fields[] = {
    XP_FIELD("requiredDuringSchedulingIgnoredDuringExecution",
             XP_FT_STRUCT_LIST,
             struct xp_pod_affinity,
             required,
             .schema = &pod_affinity_term_schema),
    XP_FIELD("preferredDuringSchedulingIgnoredDuringExecution",
             XP_FT_STRUCT_LIST,
             struct xp_pod_affinity,
             preferred,
             .schema = &weighted_term_schema),
};
static const struct xp_schema pod_affinity_schema =
    XP_SCHEMA(struct xp_pod_affinity, "PodAffinity", pod_affinity_fields);

static const struct xp_field affinity_fields[] = {
    XP_FIELD("nodeAffinity",
             XP_FT_STRUCT_PTR,
             struct xp_affinity,
             node_affinity,
             .schema = &node_affinity_schema),
    XP_FIELD("podAffinity",
             XP_FT_STRUCT_PTR,
             struct xp_affinity,
             pod_affinity,
             .schema = &pod_affinity_schema),
    XP_FIELD("podAntiAffinity",
             XP_FT_STRUCT_PTR,
             struct xp_affinity,
             pod_anti_affinity,
             .schema = &pod_affinity_schema),
};
const struct xp_schema xp_affinity_schema =
    XP_SCHEMA(struct xp_affinity, "Affinity", affinity_fields);

static int validate_toleration(struct xp_decode_ctx *ctx, const void *object)
{
        const struct xp_toleration *t = object;
        bool has_key = t->key && *t->key;
        bool has_value = t->value && *t->value;

        if (!has_key && t->op != XP_TOLERATION_OP_EXISTS)
                return fail_at(
                    ctx,
                    "operator",
                    "invalid value: operator must be Exists when `key` is empty, which means \"match all values and all keys\"");
        if (t->op == XP_TOLERATION_OP_EXISTS && has_value)
                return fail_at(
                    ctx, "value", "invalid value: value must be empty when `operator` is 'Exists'");
        if (t->toleration_seconds.set && t->effect != XP_TAINT_EFFECT_NO_EXECUTE)
                return fail_at(
                    ctx,
                    "effect",
                    "invalid value: effect must be 'NoExecute' when `tolerationSeconds` is set");
        return 0;
}

static int check_optional_qualified(struct xp_decode_ctx *ctx, const void *value)
{
        return **(char *const *)value ? xp_check_qualified_field(ctx, value) : 0;
}

static const struct xp_field toleration_fields[] = {
    XP_FIELD("key", XP_FT_STRING, struct xp_toleration, key, .check = check_optional_qualified),
    XP_FIELD("operator", XP_FT_ENUM, struct xp_toleration, op, .enum_names = toleration_ops),
    XP_FIELD(
        "value", XP_FT_STRING, struct xp_toleration, value, .check = xp_check_label_value_field),
    XP_FIELD(
        "effect", XP_FT_ENUM, struct xp_toleration, effect, .enum_names = xp_taint_effect_names),
    XP_FIELD("tolerationSeconds", XP_FT_OPT_INT64, struct xp_toleration, toleration_seconds),
};
const struct xp_schema xp_toleration_schema = XP_SCHEMA(
    struct xp_toleration, "Toleration", toleration_fields, .validate = validate_toleration);

static const struct xp_field taint_fields[] = {
    XP_FIELD("key",
             XP_FT_STRING,
             struct xp_taint,
             key,
             .flags = XP_FIELD_REQUIRED,
             .check = xp_check_qualified_field),
    XP_FIELD("value", XP_FT_STRING, struct xp_taint, value, .check = xp_check_label_value_field),
    XP_FIELD("effect",
             XP_FT_ENUM,
             struct xp_taint,
             effect,
             .flags = XP_FIELD_REQUIRED,
             .enum_names = xp_taint_effect_names),
    XP_FIELD("timeAdded", XP_FT_TIME, struct xp_taint, time_added),
};
const struct xp_schema xp_taint_schema = XP_SCHEMA(struct xp_taint, "Taint", taint_fields);

const char *xp_taint_effect_to_string(enum xp_taint_effect effect)
{
        return xp_enum_to_string(xp_taint_effect_names, (int)effect);
}

int xp_taint_effect_from_string(const char *s)
{
        return xp_enum_from_string(xp_taint_effect_names, s);
}
