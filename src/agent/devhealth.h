/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Devices that turn unhealthy while pods hold them (docs/monitoring.md "Device failures"). The
 * health watch runs in the device sampler (metrics.h); each new sample's health comes here. A pod
 * that holds a device now Unhealthy and is not over is failed, whatever its restartPolicy (its
 * containers would restart on the same broken device; its controller replaces it elsewhere):
 * phase Failed, reason DeviceUnhealthy, the conditions DisruptionTarget and
 * xpool.io/DeviceUnhealthy (what Job podFailurePolicy rules match, docs/workloads.md), and a
 * Warning Event; the agent's pod sync then stops its containers. First the Node's allocatable
 * and its device inventory say the device is unhealthy (the next heartbeat's status update), so
 * the scheduler places no replacement on it.
 */

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "xpool/device.h"
#include "xpool/error.h"

struct xp_agent;
struct xp_agent_devhealth;

/* One device's health as the last sample saw it. */
struct xp_agent_device_health {
        enum xp_device_health health;
        char reason[128];
};

/* Keeps a copy of inventory's devices and their health. -ENOMEM. */
int xp_agent_devhealth_new(const struct xp_node_inventory *inventory,
                           struct xp_agent_devhealth **ret);
void xp_agent_devhealth_free(struct xp_agent_devhealth *h);
/* Whether samples fail pods: from when the status and event writers exist until they go
 * (before that only the node's view is kept). */
void xp_agent_devhealth_enable(struct xp_agent_devhealth *h, bool on);
/* Whether the health changed since the Node's status last said it. */
bool xp_agent_devhealth_changed(struct xp_agent_devhealth *h);

/*
 * A sample's health of every device (inventory order, n of them): records changes for the node
 * and fails the pods on unhealthy devices (agent's pods, status and events). Called by the
 * metrics render thread; userdata is the agent.
 */
void xp_agent_devhealth_update(void *agent, const struct xp_agent_device_health *h, size_t n);

/*
 * When the devices' health changed since the Node last said it, what a Node status merge patch
 * carries for it (the allocatable count of each device resource and the xpool inventory) into
 * status, and in *ret_generation what it says; once the patch landed, pass that to
 * xp_agent_devhealth_published(). Pods on a device that turned unhealthy are failed only once
 * the Node says so, so their replacements are not placed on it. 0 when nothing changed, 1 when
 * it added them, -ENOMEM.
 */
int xp_agent_devhealth_node_status(struct xp_agent_devhealth *h,
                                   json_t *status,
                                   uint64_t *ret_generation);
void xp_agent_devhealth_published(struct xp_agent_devhealth *h, uint64_t generation);
