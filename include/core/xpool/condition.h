/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The conditions of an object's status (a Pod's, a Node's, a Deployment's...): a list of objects
 * each with a "type", one per type, as Kubernetes keeps them (its patch merge key). Pure: read
 * from the status's JSON, which the caller holds.
 */

#include <jansson.h>
#include <stdbool.h>
#include <sys/types.h>

/* The index in status.conditions of the condition of type, or -1: none, or no list there. */
ssize_t xp_condition_index(const json_t *status, const char *type);

/* The condition of type in status.conditions, or NULL: borrowed from status. */
json_t *xp_condition_get(const json_t *status, const char *type);

/*
 * Whether a pod condition of type is the node agent's own, as the kubelet's
 * (PodConditionsByKubelet): PodReadyToStartContainers, Initialized, Ready, ContainersReady. Others
 * (PodScheduled, DisruptionTarget, a readiness gate's) are written by the scheduler, the
 * controllers, the eviction API or a user; the agent may write DisruptionTarget too.
 */
bool xp_pod_condition_by_node(const char *type);

/*
 * A node's write of a pod's status keeps the conditions it does not own, as the kubelet's status
 * manager merges its status with the pod's (mergePodStatus): the agent builds a whole status
 * from its own copy of the pod, which may predate a condition another writer added or changed
 * since. The result's conditions: the node's own as written (and xpool.io/DeviceUnhealthy, the
 * agent's, where the write has it), then every other as stored (the
 * write's value of such a type, from a stale copy, loses), but for a DisruptionTarget the node
 * writes as it ends the pod (stored phase not terminal, written phase Succeeded or Failed), which
 * replaces or joins the stored one. 1 with *ret (the caller's reference): status with those
 * conditions (copies); status itself is unchanged, and *ret shares with it its other members.
 * 0: the write's conditions are already those (also when status is not an object), *ret
 * untouched. -ENOMEM.
 */
int xp_pod_status_keep_conditions(const json_t *status, const json_t *was, json_t **ret);
