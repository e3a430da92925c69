/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The target's pods read for the replica calculator (hpa_pods.c). */

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "hpa.h"
#include "xpool/autoscaler.h"

/* Name (borrowed from pod), phase, deletion, readiness and start time. */
void hpa_pod_basics(const json_t *pod, struct xp_hpa_pod *ret);
/* The pods Running, Ready and not being deleted. */
int32_t hpa_ready_pods(const json_t *pods);
/* The request of resource (cpu, memory; container: that one's) and the sample of the source. */
void hpa_pod_resource(const struct xp_autoscaler_metrics *m,
                      const json_t *pod,
                      const char *resource,
                      const char *container,
                      struct xp_hpa_pod *p);
/* The sample of the pod's devices (its placement): mean utilisation %, or memory in use summed,
 * in milli-units. */
void hpa_pod_device(const struct xp_autoscaler_metrics *m,
                    const json_t *pod,
                    bool memory,
                    struct xp_hpa_pod *p);
