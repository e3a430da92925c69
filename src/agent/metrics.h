/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The agent's metrics (docs/monitoring.md): one thread samples the devices (a driver call may
 * hang it, and nothing else waits for it), another reads the node, the pods' cgroups and the
 * last device sample every interval and renders the expositions; a scrape copies the last
 * rendering under a lock held only for that copy, so it never waits for a device.
 *
 *   /metrics           DCGM's default counters for NVIDIA GPUs, xpool_device_* for every device,
 *                      node and container figures (text format, or OpenMetrics when asked)
 *   /metrics/resource  the kubelet's resource metrics, which the server reads for
 *                      metrics.k8s.io (kubectl top)
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "devhealth.h"
#include "xpool/device.h"
#include "xpool/error.h"
#include "xpool/expo.h"
#include "xpool/macro.h"

struct xp_agent_pods;
struct xp_agent_metrics;

struct xp_agent_metrics_config {
        const struct xp_discovery_config *discovery; /* borrowed for the call */
        const struct xp_node_inventory *inventory;   /* borrowed until freed */
        struct xp_agent_pods *pods;                  /* borrowed until freed; read under its lock */
        const char *node_name;
        const char *hostname;      /* DCGM's Hostname label */
        const char *cgroup_root;   /* NULL: "/" */
        const char *cgroup_parent; /* of the pods' groups (xp_runtime_cgroup_parent()) */
        int64_t interval_ms;       /* 0: 10 s */
        /* Called by the render thread (outside the lock) with each new sample's device health,
         * in inventory order; NULL: none (devhealth.h) */
        void (*on_health)(void *userdata, const struct xp_agent_device_health *h, size_t n);
        void *on_health_userdata;
};

/* Starts the two threads. -ENOMEM, the sampler's error or pthread_create()'s, with err. */
int xp_agent_metrics_new(const struct xp_agent_metrics_config *config,
                         struct xp_agent_metrics **ret,
                         struct xp_error *err);
void xp_agent_metrics_free(struct xp_agent_metrics *m);
XP_DEFINE_FREEP(struct xp_agent_metrics, xp_agent_metrics_free)

/*
 * The last rendering of /metrics (resource false) or /metrics/resource in format, in a new
 * string; never waits for a device. -ENOMEM.
 */
int xp_agent_metrics_scrape(struct xp_agent_metrics *m,
                            bool resource,
                            enum xp_expo_format format,
                            char **ret_text,
                            size_t *ret_len);
