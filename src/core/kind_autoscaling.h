/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* What the two versions of HorizontalPodAutoscaler share (kind_autoscaling_hpa.c, _v1.c). */

#include <jansson.h>
#include <stdint.h>

#include "table_internal.h"

/* spec.metrics of one cpu Resource metric at percent average utilisation. NULL: -ENOMEM. */
json_t *xp_hpa_cpu_metrics(int64_t percent);

/* kubectl's table of both versions. */
extern const struct xp_table_kind xp_table_hpa;
