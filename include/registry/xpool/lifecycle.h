/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The pure parts of pod and node lifecycle (lifecycle.c): what a DELETE of a pod does, and how
 * the node lifecycle controller (src/controller/nodelife.c) rewrites a lost node and the pods on
 * it. No I/O and no clock: the caller passes the time. Objects are v1 JSON as the store holds them;
 * the functions that change one change it in place and leave it as it was when they fail.
 */

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#define XP_LIFECYCLE_DEFAULT_GRACE_S     30 /* a pod without spec.terminationGracePeriodSeconds */
#define XP_LIFECYCLE_UNREACHABLE_TAINT   "node.kubernetes.io/unreachable"
#define XP_LIFECYCLE_DISK_PRESSURE_TAINT "node.kubernetes.io/disk-pressure"
#define XP_LIFECYCLE_NODE_LOST_MESSAGE   "xpool agent stopped renewing its lease"

/*
 * The grace period of a DELETE: the request's (has_option: from DeleteOptions or the query;
 * negative counts as 1 s, as Kubernetes), else the pod's spec.terminationGracePeriodSeconds, else
 * XP_LIFECYCLE_DEFAULT_GRACE_S.
 */
int64_t xp_lifecycle_grace_seconds(const json_t *pod, bool has_option, int64_t option);

enum xp_lifecycle_delete {
        XP_LIFECYCLE_DELETE_REMOVE, /* removed from the store at once */
        XP_LIFECYCLE_DELETE_MARK, /* deletionTimestamp set (or brought forward): the agent stops it
                                   */
        XP_LIFECYCLE_DELETE_KEEP, /* already terminating with an earlier or equal deadline */
};

/*
 * What a DELETE with grace (seconds) at now_s (seconds since the epoch) does to pod: an unbound or
 * terminal (Succeeded, Failed) pod, or grace 0, is removed at once; a bound one is marked, with
 * *ret_deadline (seconds since the epoch) its new deletionTimestamp, unless it is already
 * terminating with a deadline no later than that one.
 */
enum xp_lifecycle_delete
xp_lifecycle_delete_plan(const json_t *pod, int64_t grace, int64_t now_s, int64_t *ret_deadline);

/* Sets metadata.deletionTimestamp (deadline, seconds) and deletionGracePeriodSeconds. -ENOMEM. */
int xp_lifecycle_mark_deleted(json_t *pod, int64_t deadline, int64_t grace);

/* Bound to a node and neither Succeeded nor Failed. */
bool xp_lifecycle_pod_active(const json_t *pod);

/*
 * How long pod stays on a lost node before it is marked Failed, in ms: its toleration of the
 * unreachable NoExecute taint decides (tolerationSeconds, negative as 0; none: -1, forever), else
 * default_ms.
 */
int64_t xp_lifecycle_eviction_ms(const json_t *pod, int64_t default_ms);

/*
 * The node's lost state: Ready=Unknown (reason NodeStatusUnknown, lastTransitionTime now when it
 * changes; lastHeartbeatTime kept) and the unreachable NoExecute taint (timeAdded now). Returns 1
 * when node changed, 0 when it already was so, -ENOMEM.
 */
int xp_lifecycle_node_mark_lost(json_t *node, const char *now);
/* Removes the unreachable taint when the node's Ready condition is True: 1 changed, 0, -ENOMEM. */
int xp_lifecycle_node_mark_back(json_t *node);
/* Ready=True on the node. */
bool xp_lifecycle_node_ready(const json_t *node);
/* The node carries the unreachable taint. */
bool xp_lifecycle_node_tainted(const json_t *node);
/* Kubernetes' TaintNodesByCondition for DiskPressure: the node.kubernetes.io/disk-pressure
 * NoSchedule taint on the node while its DiskPressure condition is True, off otherwise. 1 when
 * node changed, 0 when it already was so, -ENOMEM. */
int xp_lifecycle_node_sync_disk_taint(json_t *node);
/* Whether the node's DiskPressure condition is True; whether it carries that taint. */
bool xp_lifecycle_node_disk_pressure(const json_t *node);
bool xp_lifecycle_node_disk_tainted(const json_t *node);
/* The lastHeartbeatTime of the node's Ready condition, or NULL. */
const char *xp_lifecycle_node_heartbeat(const json_t *node);

/* The pod's Ready condition False (reason NodeLost): 1 changed, 0 already, -ENOMEM. */
int xp_lifecycle_pod_mark_not_ready(json_t *pod, const char *now);
/*
 * phase Failed, reason NodeLost, message "Node NODE which was running pod POD is unresponsive
 * since SINCE", and Ready=False. 1 changed, 0 already Failed, -ENOMEM.
 */
int xp_lifecycle_pod_mark_lost(json_t *pod, const char *node, const char *since, const char *now);
/*
 * The pod's DisruptionTarget condition True with reason and message (lastTransitionTime now when
 * it was not True), as Kubernetes marks a pod it is about to delete for a disruption. 1 changed,
 * 0 already so, -ENOMEM.
 */
int xp_lifecycle_pod_mark_disrupted(json_t *pod,
                                    const char *reason,
                                    const char *message,
                                    const char *now);
/*
 * The pod's DisruptionTarget condition, when True, reset to False without reason or message, as
 * kube-controller-manager's disruption controller resets a stale one (a pod marked for a
 * disruption and not deleted within 2 minutes). 1 changed, 0 not True, -ENOMEM.
 */
int xp_lifecycle_pod_clear_disrupted(json_t *pod, const char *now);
