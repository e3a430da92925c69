/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * What the agent's files share: the Node it reports (node.c, pure), and the jobs that talk to
 * the server (registration and lease in lease.c, the pod watch in watch.c, the status writers in
 * status.c, the reconcile loop in reconcile.c), tied together by agent.c.
 */

#include <jansson.h>
#include <stdint.h>

#include "xpool/error.h"
#include "xpool/object.h"

/* The facts of the host the Node carries beside the inventory; strings borrowed. */
struct xp_agent_node_info {
        const char *name;           /* the Node's name */
        const char *hostname;       /* the Hostname address and kubernetes.io/hostname */
        const char *address;        /* the InternalIP; NULL: none */
        const char *arch;           /* GOARCH spelling: amd64, arm64, ... */
        const char *kernel_version; /* uname -r */
        const char *os_image;       /* PRETTY_NAME of os-release; NULL: "Linux" */
        const char *machine_id;     /* NULL: none */
        const char *boot_id;        /* NULL: none */
        int64_t cpu_count;          /* used when the inventory has no CPU topology */
        uint16_t port;              /* the log endpoint: daemonEndpoints.kubeletEndpoint.Port */
        int64_t now_s;              /* heartbeat time, unix seconds */
};

/* Longest label value Kubernetes accepts. */
#define XP_AGENT_LABEL_VALUE_MAX 63

/*
 * The v1 Node of this agent: metadata (name, labels), status (capacity, allocatable, conditions,
 * addresses, nodeInfo, daemonEndpoints) and status.xpool, the inventory. Pure: no I/O. Caller
 * decrefs *ret. -ENOMEM, or the inventory's encoding error with err.
 */
int xp_agent_node_build(const struct xp_node_inventory *inventory,
                        const struct xp_agent_node_info *info,
                        json_t **ret,
                        struct xp_error *err);

/*
 * The Node to PUT when one exists already: desired with the labels and annotations of existing
 * that desired does not set, and existing's spec (taints, unschedulable: the operator's) and
 * resourceVersion. Caller decrefs. NULL on -ENOMEM.
 */
json_t *xp_agent_node_merge(const json_t *existing, const json_t *desired);

/* The GOARCH spelling of a uname machine ("x86_64" -> "amd64"); unknown ones as they are. */
const char *xp_agent_arch(const char *machine);

/*
 * A label value from free text (a device model): characters outside [A-Za-z0-9._-] become '-',
 * leading and trailing non-alphanumerics dropped, at most XP_AGENT_LABEL_VALUE_MAX characters.
 * buf has XP_AGENT_LABEL_VALUE_MAX + 1 bytes. Returns buf ("" when nothing is left).
 */
char *xp_agent_label_value(const char *text, char buf[static XP_AGENT_LABEL_VALUE_MAX + 1]);

/* The Ready condition (status True, reason AgentReady) and its siblings, at now_s. NULL: -ENOMEM.
 */
json_t *xp_agent_node_conditions(int64_t now_s);
