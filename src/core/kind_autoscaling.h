/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* What the two versions of HorizontalPodAutoscaler share (kind_autoscaling_hpa.c, _v1.c). */

#include <jansson.h>
#include <stdint.h>

#include "table_internal.h"

/* spec.metrics of one cpu Resource metric at percent average utilisation. NULL: -ENOMEM. */
json_t *xp_hpa_cpu_metrics(int64_t percent);

/* The annotations through which autoscaling/v1 carries what it has no field for. */
#define XP_HPA_METRICS_ANNOTATION         "autoscaling.alpha.kubernetes.io/metrics"
#define XP_HPA_CURRENT_METRICS_ANNOTATION "autoscaling.alpha.kubernetes.io/current-metrics"
#define XP_HPA_CONDITIONS_ANNOTATION      "autoscaling.alpha.kubernetes.io/conditions"
#define XP_HPA_BEHAVIOR_ANNOTATION        "autoscaling.alpha.kubernetes.io/behavior"

struct xp_strmap;
/* Removes those annotations from map, as kube-apiserver drops them from every HPA it converts
 * (they never reach the store). */
void xp_hpa_drop_v1_annotations(struct xp_strmap *map);

/* One v2 spec.metrics (status.currentMetrics) entry in v1's annotation shape, and back
 * (kind_autoscaling_v1_metrics.c). New reference; NULL: no memory. */
json_t *xp_hpa_metric_spec_to_v1(const json_t *metric);
json_t *xp_hpa_metric_spec_from_v1(const json_t *metric);
json_t *xp_hpa_metric_status_to_v1(const json_t *metric);
json_t *xp_hpa_metric_status_from_v1(const json_t *metric);

/* spec.behavior as the behavior annotation's JSON (NULL: none, or no memory), and back: *ret
 * NULL where the JSON holds no rules (kind_autoscaling_v1_behavior.c). -1: no memory. */
json_t *xp_hpa_behavior_to_v1(const json_t *behavior);
int xp_hpa_behavior_from_v1(const json_t *annotation, json_t **ret);

/* kubectl's table of both versions. */
extern const struct xp_table_kind xp_table_hpa;
