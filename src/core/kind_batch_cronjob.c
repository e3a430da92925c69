/* SPDX-License-Identifier: Apache-2.0 */
/*
 * CronJob (batch/v1), a document kind (xpool/doc.h): Kubernetes' defaults and validation (the
 * schedule checked by the controller's own parser, so what is accepted is what runs; the time
 * zone looked up in the system's zoneinfo), the status subresource, kubectl's table (NAME
 * SCHEDULE TIMEZONE SUSPEND ACTIVE LAST SCHEDULE AGE) and its protobuf.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "kind_batch.h"
#include "protobuf_internal.h"
#include "schema.h"
#include "table_internal.h"
#include "xpool/cron.h"
#include "xpool/doc.h"
#include "xpool/duration.h"
#include "xpool/strutil.h"

static int set_default(json_t *o, const char *key, json_t *value)
{
        if (!value)
                return -ENOMEM;
        if (json_object_get(o, key)) {
                json_decref(value);
                return 0;
        }
        return json_object_set_new(o, key, value) < 0 ? -ENOMEM : 0;
}

static int cronjob_defaults(struct xp_doc *doc)
{
        json_t *spec = json_object_get(doc->body, "spec");
        int r = 0;

        if (!json_is_object(spec))
                return 0;
        r = set_default(spec, "concurrencyPolicy", json_string("Allow"));
        if (r >= 0)
                r = set_default(spec, "suspend", json_false());
        if (r >= 0)
                r = set_default(spec, "successfulJobsHistoryLimit", json_integer(3));
        if (r >= 0)
                r = set_default(spec, "failedJobsHistoryLimit", json_integer(1));
        if (r >= 0)
                r = xp_batch_job_spec_defaults(
                    json_object_get(json_object_get(spec, "jobTemplate"), "spec"));
        return r;
}

/* The time zone as Kubernetes checks it: an IANA name the zoneinfo has (read as the controller
 * reads it, so a zone accepted is a zone that runs). */
static int check_zone(struct xp_decode_ctx *ctx, const json_t *zone)
{
        const char *name = json_string_value(zone);
        struct xp_error why = {0};
        struct xp_tz *tz = NULL;
        int r;

        if (!zone)
                return 0;
        if (!name || !*name)
                return xp_fail_field(
                    ctx,
                    -EINVAL,
                    "spec.timeZone",
                    "Invalid value: \"\": timeZone must be nil or non-empty string");
        if (strcasecmp(name, "Local") == 0)
                return xp_fail_field(
                    ctx,
                    -EINVAL,
                    "spec.timeZone",
                    "Invalid value: \"%s\": timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones",
                    name);
        r = xp_tz_load(XP_ZONEINFO_ROOT, name, &tz, &why);
        xp_tz_free(tz);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return xp_fail_field(
                    ctx, -EINVAL, "spec.timeZone", "Invalid value: \"%s\": %s", name, why.msg);
        return 0;
}

static int
cronjob_validate(struct xp_decode_ctx *ctx, const struct xp_doc *doc, const struct xp_doc *old)
{
        static const char *const policies[] = {"Allow", "Forbid", "Replace"};
        const json_t *spec = json_object_get(doc->body, "spec");
        const char *schedule = xp_json_str_at(spec, "schedule", NULL);
        const char *policy = xp_json_str_at(spec, "concurrencyPolicy", "Allow");
        struct xp_error why = {0};
        struct xp_ge_msg m;
        bool known = false;
        int r;

        (void)old;
        if (!schedule || !*schedule)
                return xp_fail_field(ctx, -EINVAL, "spec.schedule", "Required value");
        struct xp_cron cron;
        if (xp_cron_parse(schedule, &cron, &why) < 0)
                return xp_fail_field(
                    ctx, -EINVAL, "spec.schedule", "Invalid value: \"%s\": %s", schedule, why.msg);
        for (size_t i = 0; i < XP_ELEMENTSOF(policies); i++)
                known = known || strcmp(policy, policies[i]) == 0;
        if (!known)
                return xp_fail_field(
                    ctx,
                    -EINVAL,
                    "spec.concurrencyPolicy",
                    "Unsupported value: \"%s\": supported values: \"Allow\", \"Forbid\", \"Replace\"",
                    policy);
        r = check_zone(ctx, json_object_get(spec, "timeZone"));
        if (r >= 0 && xp_json_int_at(spec, "startingDeadlineSeconds", 0) < 0)
                r = xp_fail_field(
                    ctx,
                    -EINVAL,
                    "spec.startingDeadlineSeconds",
                    "%s",
                    xp_ge_msg_int(&m, xp_json_int_at(spec, "startingDeadlineSeconds", 0), 0));
        if (r >= 0)
                r = xp_batch_job_spec_validate(
                    ctx, xp_json_at(spec, "jobTemplate.spec"), "spec.jobTemplate.spec");
        return r;
}

/* ---- kubectl get cronjobs: NAME SCHEDULE TIMEZONE SUSPEND ACTIVE LAST SCHEDULE AGE --------- */

static const struct table_column cronjob_columns[] = {
    {.name = "Name",
     .type = "string",
     .format = "name",
     .description = "Name must be unique within a namespace."},
    {.name = "Schedule", .type = "string", .description = "The schedule in Cron format."},
    {.name = "Timezone",
     .type = "string",
     .description = "The time zone name for the given schedule."},
    {.name = "Suspend",
     .type = "boolean",
     .description = "This flag tells the controller to suspend subsequent executions."},
    {.name = "Active",
     .type = "integer",
     .description = "A list of pointers to currently running jobs."},
    {.name = "Last Schedule",
     .type = "string",
     .description = "Information when was the last time the job was successfully scheduled."},
    XP_BATCH_TAIL_COLUMNS,
};

static int cronjob_row(const json_t *o, time_t now, json_t *cells, json_t *row)
{
        int64_t last = table_time(o, "status.lastScheduleTime");
        char since[XP_DURATION_MAX];
        int r;

        (void)row;
        r = table_cell_str(cells, table_str0(o, "metadata.name"));
        if (r >= 0)
                r = table_cell_str(cells, table_str0(o, "spec.schedule"));
        if (r >= 0)
                r = table_cell_or_none(cells, table_str(o, "spec.timeZone"));
        if (r >= 0)
                r = table_cell_str(cells,
                                   !table_get(o, "spec.suspend")   ? "<unset>"
                                   : table_bool(o, "spec.suspend") ? "True"
                                                                   : "False");
        if (r >= 0)
                r = table_cell_int(cells,
                                   (int64_t)json_array_size(table_array(o, "status.active")));
        if (r >= 0 && last) {
                table_since(last, now, since);
                r = table_cell_str(cells, since);
        } else if (r >= 0) {
                r = table_cell_str(cells, "<none>");
        }
        if (r >= 0)
                r = xp_batch_row_tail(cells,
                                      o,
                                      now,
                                      "spec.jobTemplate.spec.template",
                                      "spec.jobTemplate.spec.selector");
        return r;
}

static const struct xp_table_kind cronjob_table = {
    .kind = "CronJob",
    .columns = cronjob_columns,
    .n_columns = XP_ELEMENTSOF(cronjob_columns),
    .row = cronjob_row,
};

MESSAGE(job_template_pb,
        "batch/v1 JobTemplateSpec",
        MSG(1, "metadata", xp_pb_object_meta),
        MSG(2, "spec", xp_pb_job_spec));
MESSAGE(cronjob_spec_pb,
        "batch/v1 CronJobSpec",
        STR(1, "schedule"),
        I64_P(2, "startingDeadlineSeconds"),
        STR(3, "concurrencyPolicy"),
        BOOL_P(4, "suspend"),
        MSG(5, "jobTemplate", job_template_pb),
        I32_P(6, "successfulJobsHistoryLimit"),
        I32_P(7, "failedJobsHistoryLimit"),
        STR_P(8, "timeZone"));
MESSAGE(cronjob_status_pb,
        "batch/v1 CronJobStatus",
        MSGS(1, "active", xp_pb_object_reference),
        TIME(4, "lastScheduleTime"),
        TIME(5, "lastSuccessfulTime"));
MESSAGE(cronjob_pb,
        "batch/v1 CronJob",
        MSG(1, "metadata", xp_pb_object_meta),
        MSG(2, "spec", cronjob_spec_pb),
        MSG(3, "status", cronjob_status_pb));

static const char *const cronjob_short_names[] = {"cj", NULL};
static const char *const cronjob_categories[] = {"all", NULL};

XP_DOC_KIND_DECODER(xp_kind_cronjob)

const struct xp_kind xp_kind_cronjob = {
    XP_BATCH_V1_KIND(xp_kind_cronjob, "CronJob", "cronjobs", "cronjob"),
    .short_names = cronjob_short_names,
    .categories = cronjob_categories,
    .doc_defaults = cronjob_defaults,
    .doc_validate = cronjob_validate,
    .table = &cronjob_table,
    .protobuf = &cronjob_pb,
};
