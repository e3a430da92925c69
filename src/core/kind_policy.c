/* SPDX-License-Identifier: Apache-2.0 */
/*
 * PodDisruptionBudget (policy/v1), a document kind (xpool/doc.h): kube-apiserver's validation
 * (minAvailable and maxUnavailable exclusive, each an integer >= 0 or a percentage up to 100%,
 * a well-formed selector, the unhealthy-pod eviction policies), its table and short name `pdb`.
 * policy/v1 defaults nothing (v1beta1's minAvailable: 1 is gone); an empty selector selects
 * every pod of the namespace. Its status is the disruption controller's
 * (src/controller/disruption*.c); the eviction subresource reads and decrements it
 * (src/server/api_eviction.c). docs/server.md, "Disruption budgets and eviction".
 */
#include <errno.h>
#include <string.h>

#include "kind_apps.h"
#include "protobuf_internal.h"
#include "schema.h"
#include "table_internal.h"
#include "xpool/doc.h"
#include "xpool/selector.h"
#include "xpool/strutil.h"

static int check_selector(struct xp_decode_ctx *ctx, const json_t *selector)
{
        _cleanup_free_ char *text = NULL;
        _cleanup_(xp_label_selector_freep) struct xp_label_selector *parsed = NULL;
        struct xp_error err = {0};
        size_t i;
        json_t *e;

        json_array_foreach(json_object_get(selector, "matchExpressions"), i, e)
        {
                const char *op = json_string_value(json_object_get(e, "operator"));
                size_t n = json_array_size(json_object_get(e, "values"));
                char path[96];

                snprintf(path, sizeof(path), "spec.selector.matchExpressions[%zu].operator", i);
                if (!xp_streq0(op, "In") && !xp_streq0(op, "NotIn") && !xp_streq0(op, "Exists") &&
                    !xp_streq0(op, "DoesNotExist"))
                        return xp_fail_field(ctx,
                                             -EINVAL,
                                             path,
                                             "Invalid value: \"%s\": not a valid selector operator",
                                             op ? op : "");
                snprintf(path, sizeof(path), "spec.selector.matchExpressions[%zu].values", i);
                if ((xp_streq0(op, "In") || xp_streq0(op, "NotIn")) && n == 0)
                        return xp_fail_field(
                            ctx,
                            -EINVAL,
                            path,
                            "Required value: must be specified when `operator` is 'In' or 'NotIn'");
                if ((xp_streq0(op, "Exists") || xp_streq0(op, "DoesNotExist")) && n > 0)
                        return xp_fail_field(
                            ctx,
                            -EINVAL,
                            path,
                            "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'");
        }
        if (xp_json_label_selector_string(selector, &text) < 0)
                return -ENOMEM;
        if (xp_label_selector_parse(text, &parsed, &err) < 0)
                return xp_fail_field(ctx,
                                     -EINVAL,
                                     "spec.selector",
                                     "Invalid value: \"%s\": %s",
                                     text,
                                     xp_error_message(&err));
        return 0;
}

/* Kubernetes' ValidatePodDisruptionBudgetSpec; the same rules on create and update (policy/v1
 * lets the spec change). */
static int
pdb_validate(struct xp_decode_ctx *ctx, const struct xp_doc *doc, const struct xp_doc *old)
{
        const json_t *spec = xp_json_object_at(doc->body, "spec");
        const json_t *min = json_object_get(spec, "minAvailable");
        const json_t *max = json_object_get(spec, "maxUnavailable");
        const char *policy = json_string_value(json_object_get(spec, "unhealthyPodEvictionPolicy"));
        bool zero;
        int r;

        (void)old;
        if (min && !json_is_null(min) && max && !json_is_null(max)) {
                _cleanup_free_ char *text = json_dumps(spec, JSON_COMPACT | JSON_SORT_KEYS);

                return xp_fail_field(
                    ctx,
                    -EINVAL,
                    "spec",
                    "Invalid value: %s: minAvailable and maxUnavailable cannot be both set",
                    text ? text : "{}");
        }
        r = xp_apps_check_intstr(ctx, doc->body, "spec.minAvailable", true, &zero);
        if (r >= 0)
                r = xp_apps_check_intstr(ctx, doc->body, "spec.maxUnavailable", true, &zero);
        if (r >= 0)
                r = check_selector(ctx, json_object_get(spec, "selector"));
        if (r >= 0 && policy && !xp_streq0(policy, "IfHealthyBudget") &&
            !xp_streq0(policy, "AlwaysAllow"))
                r = xp_fail_field(
                    ctx,
                    -EINVAL,
                    "spec.unhealthyPodEvictionPolicy",
                    "Unsupported value: \"%s\": supported values: \"AlwaysAllow\", \"IfHealthyBudget\"",
                    policy);
        return r;
}

/* ---- kubectl get pdb: NAME MIN AVAILABLE MAX UNAVAILABLE ALLOWED DISRUPTIONS AGE ---------- */

static const struct table_column pdb_columns[] = {
    TABLE_NAME_COLUMN,
    {.name = "Min Available",
     .type = "string",
     .description = "The minimum number or percentage of available pods this budget requires."},
    {.name = "Max Unavailable",
     .type = "string",
     .description = "The maximum number or percentage of unavailable pods this budget requires."},
    {.name = "Allowed Disruptions",
     .type = "integer",
     .description = "Calculated number of pods that may be disrupted at this time."},
    TABLE_AGE_COLUMN,
};

/* An IntOrString as Go's String() prints it; "N/A" when unset, as kubectl's printer. */
static int intstr_cell(json_t *cells, const json_t *value)
{
        if (json_is_integer(value))
                return table_cell_printf(cells, "%lld", (long long)json_integer_value(value));
        return table_cell_str(cells, json_is_string(value) ? json_string_value(value) : "N/A");
}

static int pdb_row(const json_t *object, time_t now, json_t *cells, json_t *row)
{
        int r;

        (void)row;
        r = table_cell_str(cells, table_str0(object, "metadata.name"));
        if (r >= 0)
                r = intstr_cell(cells, table_get(object, "spec.minAvailable"));
        if (r >= 0)
                r = intstr_cell(cells, table_get(object, "spec.maxUnavailable"));
        if (r >= 0)
                r = table_cell_int(cells, table_int(object, "status.disruptionsAllowed"));
        if (r >= 0)
                r = table_cell_age(cells, object, "metadata.creationTimestamp", now);
        return r;
}

static const struct xp_table_kind pdb_table = {
    .kind = "PodDisruptionBudget",
    .columns = pdb_columns,
    .n_columns = XP_ELEMENTSOF(pdb_columns),
    .row = pdb_row,
};

/* policy/v1's generated.proto; kubectl create pdb sends metadata and spec. */
static const struct pb_field_desc requirement_fields[] = {
    STR(1, "key"),
    STR(2, "operator"),
    STRS(3, "values"),
};
static const struct pb_message requirement_pb = {
    .name = "meta/v1 LabelSelectorRequirement",
    .fields = requirement_fields,
    .n_fields = XP_ELEMENTSOF(requirement_fields),
};
static const struct pb_field_desc label_selector_fields[] = {
    SMAP(1, "matchLabels"),
    MSGS(2, "matchExpressions", requirement_pb),
};
const struct pb_message xp_pb_label_selector = {
    .name = "meta/v1 LabelSelector",
    .fields = label_selector_fields,
    .n_fields = XP_ELEMENTSOF(label_selector_fields),
};

MESSAGE(pdb_spec_pb,
        "policy/v1 PodDisruptionBudgetSpec",
        INTSTR(1, "minAvailable"),
        MSG(2, "selector", xp_pb_label_selector),
        INTSTR(3, "maxUnavailable"),
        STR_P(4, "unhealthyPodEvictionPolicy"));

/* the status a client sends is dropped (the controller's): its counters only */
MESSAGE(pdb_status_pb,
        "policy/v1 PodDisruptionBudgetStatus",
        I64(1, "observedGeneration"),
        I32(3, "disruptionsAllowed"),
        I32(4, "currentHealthy"),
        I32(5, "desiredHealthy"),
        I32(6, "expectedPods"));

MESSAGE(pdb_pb,
        "policy/v1 PodDisruptionBudget",
        MSG(1, "metadata", xp_pb_object_meta),
        MSG(2, "spec", pdb_spec_pb),
        MSG(3, "status", pdb_status_pb));

static const char *const pdb_short_names[] = {"pdb", NULL};

XP_DOC_KIND_DECODER(xp_kind_pdb)

const struct xp_kind xp_kind_pdb = {
    .kind = "PodDisruptionBudget",
    .list_kind = "PodDisruptionBudgetList",
    .group = "policy",
    .version = "v1",
    .api_version = "policy/v1",
    .plural = "poddisruptionbudgets",
    .singular = "poddisruptionbudget",
    .short_names = pdb_short_names,
    .namespaced = true,
    XP_DOC_KIND_OPS(xp_kind_pdb),
    .doc_validate = pdb_validate,
    .table = &pdb_table,
    .status_subresource = true,
    .protobuf = &pdb_pb,
};
