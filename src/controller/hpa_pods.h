/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The target's pods read for the replica calculator (hpa_pods.c). */

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "hpa.h"
#include "xpool/autoscaler.h"
#include "xpool/map.h"

/* Name (borrowed from pod), phase, deletion, readiness and start time. */
void hpa_pod_basics(const json_t *pod, struct xp_hpa_pod *ret);
/* The pods Running, Ready and not being deleted. */
int32_t hpa_ready_pods(const json_t *pods);
/* The samples of a namespace's pods, read once per sync and indexed by name (a lookup per pod
 * keeps a sync O(pods), where asking the source pod by pod was O(pods^2)). Zero is unread. */
struct hpa_usage {
        struct xp_autoscaler_pod_sample *samples;
        size_t n;
        struct xp_map by_name;
        bool read;
        unsigned reads; /* calls of the source's pods(), for tests */
};
/* Reads the samples of ns unless u is read already. 0, or -ENOMEM (a source's other failure
 * leaves no samples). */
int hpa_usage_read(struct hpa_usage *u, const struct xp_autoscaler_metrics *m, const char *ns);
void hpa_usage_done(struct hpa_usage *u);

/* The request of resource (cpu, memory; container: that one's) and the pod's sample in u. */
void hpa_pod_resource(const struct hpa_usage *u,
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
