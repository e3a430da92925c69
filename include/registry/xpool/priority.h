/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * PriorityClasses (scheduling.k8s.io/v1) and the Priority admission of a pod at create, as
 * kube-apiserver's Priority plugin does it (docs/scheduler.md, "Priority"): the pod's
 * spec.priority and spec.preemptionPolicy come from the class its priorityClassName names (the
 * built-in system-cluster-critical and system-node-critical included), or from the class marked
 * globalDefault when it names none (its name is then set), else priority 0. Unlike Kubernetes, a
 * pod that names no class may give its own spec.priority (the API accepted it before classes
 * existed, and bare pods and tests use it); with a class, a different value is refused.
 */

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "xpool/error.h"

struct xp_registry;

#define XP_PRIORITY_CLASSES_RESOURCE     "priorityclasses"
#define XP_PRIORITY_SYSTEM_CLUSTER       "system-cluster-critical"
#define XP_PRIORITY_SYSTEM_NODE          "system-node-critical"
#define XP_PRIORITY_SYSTEM_CLUSTER_VALUE 2000000000
#define XP_PRIORITY_SYSTEM_NODE_VALUE    2000001000
#define XP_PRIORITY_USER_MAX             1000000000 /* the highest value a user's class may have */

/*
 * Sets pod's (a Pod's JSON, before its defaults) priority and preemptionPolicy from its class.
 * 0 when done; -EPERM with err in Kubernetes' words when the pod may not be created ("no
 * PriorityClass with name high was found", or a spec.priority that differs from the class's:
 * "the integer value of priority (5) must not be provided in pod spec; priority admission
 * controller computed 1000 from the given PriorityClass name"); -ENOMEM; the store's errors.
 */
int xp_registry_pod_priority(struct xp_registry *registry, json_t *pod, struct xp_error *err);

/* Whether name is a built-in class (system-cluster-critical, system-node-critical), which
 * cannot be deleted. */
bool xp_priority_system(const char *name);

/*
 * Stores the built-in classes that are missing, as kube-apiserver creates them at start (so
 * `kubectl get pc` lists them). 0, or the store's error.
 */
int xp_priority_system_ensure(struct xp_registry *registry, struct xp_error *err);
