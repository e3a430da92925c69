/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Job (batch/v1), a document kind (xpool/doc.h): Kubernetes' defaults and validation of a
 * JobSpec (shared with a CronJob's jobTemplate), the status subresource, kubectl's table
 * (NAME STATUS COMPLETIONS DURATION AGE) and the protobuf kubectl create job sends.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "kind_batch.h"
#include "protobuf_internal.h"
#include "schema.h"
#include "table_internal.h"
#include "xpool/doc.h"
#include "xpool/duration.h"
#include "xpool/macro.h"
#include "xpool/poddefaults.h"
#include "xpool/strutil.h"

static int set_default_int(json_t *o, const char *key, json_int_t value)
{
        if (json_object_get(o, key))
                return 0;
        return json_object_set_new(o, key, json_integer(value)) < 0 ? -ENOMEM : 0;
}

static int set_default_str(json_t *o, const char *key, const char *value)
{
        if (json_object_get(o, key))
                return 0;
        return json_object_set_new(o, key, json_string(value)) < 0 ? -ENOMEM : 0;
}

/* What xp_pod_defaults_apply() adds as admission plugins would to a Pod, which a template does
 * not get (a PodTemplateSpec has SetDefaults_PodSpec's defaults only). */
static const char *const admission_only[] = {
    "serviceAccountName", "serviceAccount", "priority", "preemptionPolicy", "tolerations"};

/* The template's pod defaults, as the API server applies them to a PodTemplateSpec. */
static int template_defaults(json_t *spec)
{
        json_t *template = json_object_get(spec, "template");
        bool had[XP_ELEMENTSOF(admission_only)];
        json_t *pod, *pspec;
        int r;

        if (!json_is_object(template) || !json_is_object(json_object_get(template, "spec")))
                return 0;
        pod = json_pack("{s:O}", "spec", json_object_get(template, "spec"));
        if (!pod)
                return -ENOMEM;
        pspec = json_object_get(pod, "spec");
        for (size_t i = 0; i < XP_ELEMENTSOF(admission_only); i++)
                had[i] = json_object_get(pspec, admission_only[i]) != NULL;
        r = xp_pod_defaults_apply(pod, NULL);
        for (size_t i = 0; r >= 0 && i < XP_ELEMENTSOF(admission_only); i++)
                if (!had[i])
                        json_object_del(pspec, admission_only[i]);
        if (r >= 0 && json_object_set(template, "spec", json_object_get(pod, "spec")) < 0)
                r = -ENOMEM;
        json_decref(pod);
        return r;
}

static int policy_defaults(json_t *spec)
{
        json_t *rule, *cond;
        size_t i, k;

        json_array_foreach(xp_json_at(spec, "podFailurePolicy.rules"), i, rule) json_array_foreach(
            json_object_get(rule, "onPodConditions"),
            k,
            cond) if (set_default_str(cond, "status", "True") < 0) return -ENOMEM;
        return 0;
}

int xp_batch_job_spec_defaults(json_t *spec)
{
        bool per_index = json_object_get(spec, "backoffLimitPerIndex") != NULL;
        int r = 0;

        if (!json_is_object(spec))
                return 0;
        if (!json_object_get(spec, "completions") && !json_object_get(spec, "parallelism"))
                r = set_default_int(spec, "completions", 1);
        if (r >= 0)
                r = set_default_int(spec, "parallelism", 1);
        if (r >= 0)
                r = set_default_int(spec, "backoffLimit", per_index ? INT32_MAX : 6);
        if (r >= 0)
                r = set_default_str(spec, "completionMode", "NonIndexed");
        if (r >= 0 && !json_object_get(spec, "suspend"))
                r = json_object_set_new(spec, "suspend", json_false()) < 0 ? -ENOMEM : 0;
        if (r >= 0)
                r = set_default_str(
                    spec,
                    "podReplacementPolicy",
                    json_object_get(spec, "podFailurePolicy") ? "Failed" : "TerminatingOrFailed");
        if (r >= 0)
                r = policy_defaults(spec);
        if (r >= 0)
                r = template_defaults(spec);
        return r;
}

static int job_defaults(struct xp_doc *doc)
{
        return xp_batch_job_spec_defaults(json_object_get(doc->body, "spec"));
}

/* The create's hook, once the server gave the Job its name and uid. */
static int job_created(void *object)
{
        struct xp_doc *doc = object;

        return xp_batch_job_generate_selector(
            json_object_get(doc->body, "spec"), doc->metadata.name, doc->metadata.uid);
}

/* ---- validation (ValidateJobSpec), with field.ErrorList's words ---------------------------- */

/* xp_fail_field() at prefix.field ("spec.parallelism", "spec.jobTemplate.spec.parallelism"). */
static int
fail(struct xp_decode_ctx *ctx, const char *prefix, const char *field, const char *fmt, ...)
    _printf_(4, 5);

static int
fail(struct xp_decode_ctx *ctx, const char *prefix, const char *field, const char *fmt, ...)
{
        char where[160], message[512];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(message, sizeof(message), fmt, ap);
        va_end(ap);
        snprintf(where, sizeof(where), "%s.%s", prefix, field);
        return xp_fail_field(ctx, -EINVAL, where, "%s", message);
}

static int
nonnegative(struct xp_decode_ctx *ctx, const json_t *spec, const char *prefix, const char *key)
{
        const json_t *v = json_object_get(spec, key);

        struct xp_ge_msg m;

        if (json_is_integer(v) && json_integer_value(v) < 0)
                return fail(ctx, prefix, key, "%s", xp_ge_msg_int(&m, json_integer_value(v), 0));
        return 0;
}

static bool one_of(const char *s, const char *const *values)
{
        for (; *values; values++)
                if (s && strcmp(s, *values) == 0)
                        return true;
        return false;
}

static int check_rule(
    struct xp_decode_ctx *ctx, const char *prefix, const json_t *spec, const json_t *rule, size_t i)
{
        static const char *const actions[] = {"Count", "FailIndex", "FailJob", "Ignore", NULL};
        static const char *const operators[] = {"In", "NotIn", NULL};
        const char *action = json_string_value(json_object_get(rule, "action"));
        const json_t *codes = json_object_get(rule, "onExitCodes");
        char field[96];

        snprintf(field, sizeof(field), "podFailurePolicy.rules[%zu].action", i);
        if (!one_of(action, actions))
                return fail(
                    ctx,
                    prefix,
                    field,
                    "Unsupported value: \"%s\": supported values: \"Count\", \"FailIndex\", \"FailJob\", \"Ignore\"",
                    action ? action : "");
        if (strcmp(action, "FailIndex") == 0 && !json_object_get(spec, "backoffLimitPerIndex"))
                return fail(
                    ctx,
                    prefix,
                    field,
                    "Invalid value: \"FailIndex\": requires the backoffLimitPerIndex to be set");
        if (codes && json_object_get(rule, "onPodConditions")) {
                snprintf(field, sizeof(field), "podFailurePolicy.rules[%zu]", i);
                return fail(
                    ctx,
                    prefix,
                    field,
                    "Invalid value: specifying both OnExitCodes and OnPodConditions is not supported");
        }
        if (codes) {
                const char *op = json_string_value(json_object_get(codes, "operator"));
                snprintf(
                    field, sizeof(field), "podFailurePolicy.rules[%zu].onExitCodes.operator", i);
                if (!one_of(op, operators))
                        return fail(
                            ctx,
                            prefix,
                            field,
                            "Unsupported value: \"%s\": supported values: \"In\", \"NotIn\"",
                            op ? op : "");
                if (json_array_size(json_object_get(codes, "values")) == 0) {
                        snprintf(field,
                                 sizeof(field),
                                 "podFailurePolicy.rules[%zu].onExitCodes.values",
                                 i);
                        return fail(
                            ctx, prefix, field, "Required value: at least one value is required");
                }
        } else if (json_array_size(json_object_get(rule, "onPodConditions")) == 0) {
                snprintf(field, sizeof(field), "podFailurePolicy.rules[%zu]", i);
                return fail(
                    ctx,
                    prefix,
                    field,
                    "Invalid value: specifying one of OnExitCodes and OnPodConditions is required");
        }
        return 0;
}

static int check_policy(struct xp_decode_ctx *ctx, const char *prefix, const json_t *spec)
{
        const json_t *rule;
        size_t i;
        int r;

        if (!json_object_get(spec, "podFailurePolicy"))
                return 0;
        const char *restart = xp_json_str_at(spec, "template.spec.restartPolicy", "");
        if (strcmp(restart, "Never") != 0)
                return fail(
                    ctx,
                    prefix,
                    "template.spec.restartPolicy",
                    "Invalid value: \"%s\": only \"Never\" is supported when podFailurePolicy is specified",
                    restart);
        json_array_foreach(xp_json_at(spec, "podFailurePolicy.rules"),
                           i,
                           rule) if ((r = check_rule(ctx, prefix, spec, rule, i)) < 0) return r;
        return 0;
}

static int check_mode(struct xp_decode_ctx *ctx, const char *prefix, const json_t *spec)
{
        static const char *const modes[] = {"NonIndexed", "Indexed", NULL};
        const char *mode = xp_json_str_at(spec, "completionMode", "NonIndexed");
        bool indexed = strcmp(mode, "Indexed") == 0;

        if (!one_of(mode, modes))
                return fail(
                    ctx,
                    prefix,
                    "completionMode",
                    "Unsupported value: \"%s\": supported values: \"Indexed\", \"NonIndexed\"",
                    mode);
        if (indexed && !json_object_get(spec, "completions"))
                return fail(
                    ctx, prefix, "completions", "Required value: when completion mode is Indexed");
        if (indexed && xp_json_int_at(spec, "completions", 0) > 100000)
                return fail(
                    ctx,
                    prefix,
                    "completions",
                    "Invalid value: %lld: must be less than or equal to 100000 when completion mode is Indexed",
                    (long long)xp_json_int_at(spec, "completions", 0));
        if (!indexed && json_object_get(spec, "backoffLimitPerIndex"))
                return fail(ctx,
                            prefix,
                            "backoffLimitPerIndex",
                            "Forbidden: requires indexed completion mode");
        if (json_object_get(spec, "maxFailedIndexes") &&
            !json_object_get(spec, "backoffLimitPerIndex"))
                return fail(ctx,
                            prefix,
                            "maxFailedIndexes",
                            "Required value: when maxFailedIndexes is specified");
        return 0;
}

int xp_batch_job_spec_validate(struct xp_decode_ctx *ctx, const json_t *spec, const char *prefix)
{
        static const char *const counts[] = {"parallelism",
                                             "completions",
                                             "backoffLimit",
                                             "backoffLimitPerIndex",
                                             "maxFailedIndexes",
                                             "activeDeadlineSeconds",
                                             "ttlSecondsAfterFinished",
                                             NULL};
        static const char *const restarts[] = {"OnFailure", "Never", NULL};
        int r;

        if (!json_is_object(spec))
                return fail(ctx, prefix, "template", "Required value");
        for (const char *const *k = counts; *k; k++)
                if ((r = nonnegative(ctx, spec, prefix, *k)) < 0)
                        return r;
        if (!json_is_object(xp_json_at(spec, "template.spec")))
                return fail(ctx, prefix, "template.spec", "Required value");
        const char *restart = xp_json_str_at(spec, "template.spec.restartPolicy", "");
        if (!one_of(restart, restarts))
                return fail(ctx,
                            prefix,
                            "template.spec.restartPolicy",
                            "Unsupported value: \"%s\": supported values: \"OnFailure\", \"Never\"",
                            restart);
        r = check_mode(ctx, prefix, spec);
        if (r >= 0)
                r = check_policy(ctx, prefix, spec);
        return r;
}

static int
job_validate(struct xp_decode_ctx *ctx, const struct xp_doc *doc, const struct xp_doc *old)
{
        const json_t *spec = json_object_get(doc->body, "spec");
        const char *uid = doc->metadata.uid;
        int r;

        if (old) {
                const json_t *was = json_object_get(old->body, "spec");
                r = xp_batch_job_check_selector(
                    ctx, spec, doc->metadata.name, uid && *uid ? uid : old->metadata.uid, was);
                if (r < 0)
                        return r;
                if (!json_equal((json_t *)json_object_get(spec, "completionMode"),
                                (json_t *)json_object_get(was, "completionMode")))
                        return xp_fail_field(ctx,
                                             -EINVAL,
                                             "spec.completionMode",
                                             "Invalid value: \"%s\": field is immutable",
                                             xp_json_str_at(spec, "completionMode", ""));
                if (!json_equal((json_t *)json_object_get(spec, "template"),
                                (json_t *)json_object_get(was, "template")) &&
                    !xp_json_bool_at(was, "suspend", false))
                        return xp_fail_field(
                            ctx, -EINVAL, "spec.template", "Invalid value: field is immutable");
                return 0;
        }
        r = xp_batch_job_spec_validate(ctx, spec, "spec");
        if (r >= 0)
                r = xp_batch_job_check_selector(ctx, spec, doc->metadata.name, uid, NULL);
        return r;
}

/* ---- kubectl get jobs: NAME STATUS COMPLETIONS DURATION AGE (kubectl 1.32's printJob) ------- */

static const struct table_column job_columns[] = {
    {.name = "Name",
     .type = "string",
     .format = "name",
     .description = "Name must be unique within a namespace."},
    {.name = "Status", .type = "string", .description = "Status of the job."},
    {.name = "Completions",
     .type = "string",
     .description = "The desired number of successfully finished pods the job should be run with."},
    {.name = "Duration", .type = "string", .description = "Time required to complete the job."},
    XP_BATCH_TAIL_COLUMNS,
};

static bool has_condition(const json_t *object, const char *type)
{
        const json_t *c;
        size_t i;

        json_array_foreach(table_array(object, "status.conditions"),
                           i,
                           c) if (xp_streq0(table_str(c, "type"), type) &&
                                  xp_streq0(table_str(c, "status"), "True")) return true;
        return false;
}

static const char *job_status(const json_t *o)
{
        static const char *const order[] = {
            "Complete", "Failed", NULL, "Suspended", "FailureTarget", "SuccessCriteriaMet"};

        for (size_t i = 0; i < XP_ELEMENTSOF(order); i++) {
                if (!order[i]) {
                        if (table_get(o, "metadata.deletionTimestamp"))
                                return "Terminating";
                        continue;
                }
                if (has_condition(o, order[i]))
                        return order[i];
        }
        return "Running";
}

/* The template's containers' names and images, joined with commas. */
static int template_cells(json_t *cells, const json_t *pod_spec)
{
        char names[1024] = "", images[2048] = "";
        const json_t *c;
        size_t i;

        json_array_foreach(table_array(pod_spec, "containers"), i, c)
        {
                size_t nl = strlen(names), il = strlen(images);
                snprintf(
                    names + nl, sizeof(names) - nl, "%s%s", i ? "," : "", table_str0(c, "name"));
                snprintf(
                    images + il, sizeof(images) - il, "%s%s", i ? "," : "", table_str0(c, "image"));
        }
        int r = table_cell_str(cells, names);
        return r >= 0 ? table_cell_str(cells, images) : r;
}

int xp_batch_row_tail(json_t *cells,
                      const json_t *object,
                      time_t now,
                      const char *template_path,
                      const char *selector_path)
{
        _cleanup_free_ char *selector = NULL;
        char spec_path[128];
        int r;

        snprintf(spec_path, sizeof(spec_path), "%s.spec", template_path);
        r = table_cell_age(cells, object, "metadata.creationTimestamp", now);
        if (r >= 0)
                r = template_cells(cells, table_get(object, spec_path));
        if (r >= 0)
                r = xp_json_label_selector_string(table_get(object, selector_path), &selector);
        if (r >= 0)
                r = table_cell_or_none(cells, selector);
        return r;
}

static int job_row(const json_t *o, time_t now, json_t *cells, json_t *row)
{
        char completions[64], duration[XP_DURATION_MAX] = "";
        int64_t succeeded = table_int(o, "status.succeeded");
        int64_t start = table_time(o, "status.startTime"),
                end = table_time(o, "status.completionTime");
        int r;

        (void)row;
        if (table_get(o, "spec.completions"))
                snprintf(completions,
                         sizeof(completions),
                         "%lld/%lld",
                         (long long)succeeded,
                         (long long)table_int(o, "spec.completions"));
        else if (table_int(o, "spec.parallelism") > 1)
                snprintf(completions,
                         sizeof(completions),
                         "%lld/1 of %lld",
                         (long long)succeeded,
                         (long long)table_int(o, "spec.parallelism"));
        else
                snprintf(completions, sizeof(completions), "%lld/1", (long long)succeeded);
        if (start && end)
                xp_duration_human(end - start, duration, sizeof(duration));
        else if (start)
                xp_duration_human((int64_t)now - start, duration, sizeof(duration));
        r = table_cell_str(cells, table_str0(o, "metadata.name"));
        if (r >= 0)
                r = table_cell_str(cells, job_status(o));
        if (r >= 0)
                r = table_cell_str(cells, completions);
        if (r >= 0)
                r = table_cell_str(cells, duration);
        if (r >= 0)
                r = xp_batch_row_tail(cells, o, now, "spec.template", "spec.selector");
        return r;
}

static const struct xp_table_kind job_table = {
    .kind = "Job",
    .columns = job_columns,
    .n_columns = XP_ELEMENTSOF(job_columns),
    .row = job_row,
};

/* ---- batch/v1 generated.proto -------------------------------------------------------------- */

MESSAGE(label_requirement_pb,
        "meta/v1 LabelSelectorRequirement",
        STR(1, "key"),
        STR(2, "operator"),
        STRS(3, "values"));
MESSAGE(label_selector_pb,
        "meta/v1 LabelSelector",
        SMAP(1, "matchLabels"),
        MSGS(2, "matchExpressions", label_requirement_pb));
MESSAGE(pod_template_spec_pb,
        "core/v1 PodTemplateSpec",
        MSG(1, "metadata", xp_pb_object_meta),
        MSG(2, "spec", xp_pb_pod_spec));
MESSAGE(exit_codes_pb,
        "batch/v1 PodFailurePolicyOnExitCodesRequirement",
        STR_P(1, "containerName"),
        STR(2, "operator"),
        FIELD(3, "values", PB_INT32, PB_REPEATED, NULL));
MESSAGE(pod_conditions_pb,
        "batch/v1 PodFailurePolicyOnPodConditionsPattern",
        STR(1, "type"),
        STR(2, "status"));
MESSAGE(failure_rule_pb,
        "batch/v1 PodFailurePolicyRule",
        STR(1, "action"),
        MSG(2, "onExitCodes", exit_codes_pb),
        MSGS(3, "onPodConditions", pod_conditions_pb));
MESSAGE(failure_policy_pb, "batch/v1 PodFailurePolicy", MSGS(1, "rules", failure_rule_pb));
MESSAGE(success_rule_pb,
        "batch/v1 SuccessPolicyRule",
        STR_P(1, "succeededIndexes"),
        I32_P(2, "succeededCount"));
MESSAGE(success_policy_pb, "batch/v1 SuccessPolicy", MSGS(1, "rules", success_rule_pb));
MESSAGE(job_spec_pb,
        "batch/v1 JobSpec",
        I32_P(1, "parallelism"),
        I32_P(2, "completions"),
        I64_P(3, "activeDeadlineSeconds"),
        MSG(4, "selector", label_selector_pb),
        BOOL_P(5, "manualSelector"),
        MSG(6, "template", pod_template_spec_pb),
        I32_P(7, "backoffLimit"),
        I32_P(8, "ttlSecondsAfterFinished"),
        STR_P(9, "completionMode"),
        BOOL_P(10, "suspend"),
        MSG(11, "podFailurePolicy", failure_policy_pb),
        I32_P(12, "backoffLimitPerIndex"),
        I32_P(13, "maxFailedIndexes"),
        STR_P(14, "podReplacementPolicy"),
        STR_P(15, "managedBy"),
        MSG(16, "successPolicy", success_policy_pb));
MESSAGE(job_condition_pb,
        "batch/v1 JobCondition",
        STR(1, "type"),
        STR(2, "status"),
        TIME(3, "lastProbeTime"),
        TIME(4, "lastTransitionTime"),
        STR(5, "reason"),
        STR(6, "message"));
MESSAGE(uncounted_pb, "batch/v1 UncountedTerminatedPods", STRS(1, "succeeded"), STRS(2, "failed"));
MESSAGE(job_status_pb,
        "batch/v1 JobStatus",
        MSGS(1, "conditions", job_condition_pb),
        TIME(2, "startTime"),
        TIME(3, "completionTime"),
        I32(4, "active"),
        I32(5, "succeeded"),
        I32(6, "failed"),
        STR(7, "completedIndexes"),
        MSG(8, "uncountedTerminatedPods", uncounted_pb),
        I32_P(9, "ready"),
        STR_P(10, "failedIndexes"),
        I32_P(11, "terminating"));
MESSAGE(job_pb,
        "batch/v1 Job",
        MSG(1, "metadata", xp_pb_object_meta),
        MSG(2, "spec", job_spec_pb),
        MSG(3, "status", job_status_pb));
const struct pb_message xp_pb_job_spec = {
    .name = "batch/v1 JobSpec",
    .fields = job_spec_pb_fields,
    .n_fields = XP_ELEMENTSOF(job_spec_pb_fields),
};

static const char *const job_short_names[] = {NULL};
static const char *const job_categories[] = {"all", NULL};

XP_DOC_KIND_DECODER(xp_kind_job)

const struct xp_kind xp_kind_job = {
    XP_BATCH_V1_KIND(xp_kind_job, "Job", "jobs", "job"),
    .short_names = job_short_names,
    .categories = job_categories,
    .set_defaults = job_created,
    .doc_defaults = job_defaults,
    .doc_validate = job_validate,
    .table = &job_table,
    .protobuf = &job_pb,
};
