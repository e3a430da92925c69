/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* What the batch/v1 kinds share (kind_batch_job.c, kind_batch_cronjob.c). */

#include <jansson.h>
#include <time.h>

struct xp_decode_ctx;

/* Kubernetes' defaults of a JobSpec (spec: the object holding it). 0 or -ENOMEM. */
int xp_batch_job_spec_defaults(json_t *spec);
/* ValidateJobSpec's checks of spec, its field names under prefix ("spec", or
 * "spec.jobTemplate.spec"). 0 or -errno through ctx. */
int xp_batch_job_spec_validate(struct xp_decode_ctx *ctx, const json_t *spec, const char *prefix);
/*
 * Kubernetes' generated selector (kind_batch_selector.c), at the create once the Job has its
 * name and uid: unless spec.manualSelector, the template's job-name labels (both spellings)
 * where missing, its controller-uid labels and spec.selector.matchLabels'
 * batch.kubernetes.io/controller-uid set to uid.
 * 0 or -ENOMEM.
 */
int xp_batch_job_generate_selector(json_t *spec, const char *name, const char *uid);
/* validateGeneratedSelector or a manual selector's checks; uid "" before the create, old_spec
 * the replaced Job's spec on an update (the selector is immutable), else NULL. 0 or -errno. */
int xp_batch_job_check_selector(struct xp_decode_ctx *ctx,
                                const json_t *spec,
                                const char *name,
                                const char *uid,
                                const json_t *old_spec);
/* The cells both tables end with: AGE, then the wide CONTAINERS IMAGES SELECTOR of the pod
 * template at template_path ("spec.template") and the selector at selector_path. */
int xp_batch_row_tail(json_t *cells,
                      const json_t *object,
                      time_t now,
                      const char *template_path,
                      const char *selector_path);

/* The columns that xp_batch_row_tail fills, for the end of a table_column array. */
#define XP_BATCH_TAIL_COLUMNS                                                                      \
        {.name = "Age", .type = "string", .description = "Time since the object was created."},    \
            TABLE_TEMPLATE_COLUMNS,                                                                \
        {                                                                                          \
                .name = "Selector", .type = "string",                                              \
                .description = "A label query over pods that should match the pod count.",         \
                .priority = 1                                                                      \
        }

/* What every batch/v1 kind's struct xp_kind says alike: names, group and version, namespaced,
 * the document kind's operations and the status subresource. */
#define XP_BATCH_V1_KIND(var, kind_, plural_, singular_)                                           \
        .kind = kind_, .list_kind = kind_ "List", .group = "batch", .version = "v1",               \
        .api_version = "batch/v1", .plural = plural_, .singular = singular_, .namespaced = true,   \
        .status_subresource = true, XP_DOC_KIND_OPS(var)

/* batch/v1 JobSpec's protobuf (kind_batch_job.c), which a CronJob's jobTemplate holds. */
struct pb_message;
extern const struct pb_message xp_pb_job_spec;
