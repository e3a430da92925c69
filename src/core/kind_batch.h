/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* What the batch/v1 kinds share (kind_batch_job.c, kind_batch_cronjob.c). */

#include <jansson.h>

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
/* The Containers and Images cells of a template's pod spec (kubectl's wide columns). */
int xp_batch_template_cells(json_t *cells, const json_t *pod_spec);

/* batch/v1 JobSpec's protobuf (kind_batch_job.c), which a CronJob's jobTemplate holds. */
struct pb_message;
extern const struct pb_message xp_pb_job_spec;
