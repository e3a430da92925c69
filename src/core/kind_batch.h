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
/* The Containers and Images cells of a template's pod spec (kubectl's wide columns). */
int xp_batch_template_cells(json_t *cells, const json_t *pod_spec);

/* batch/v1 JobSpec's protobuf (kind_batch_job.c), which a CronJob's jobTemplate holds. */
struct pb_message;
extern const struct pb_message xp_pb_job_spec;
