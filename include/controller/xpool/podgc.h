/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The pod garbage collector, as kube-controller-manager's PodGC: when more terminated pods
 * (phase Succeeded or Failed) exist than the threshold, the oldest by creationTimestamp are
 * deleted until the threshold is left; pods bound to a node that has not existed for
 * XP_PODGC_QUARANTINE_MS (orphans) and terminating pods bound to no node are deleted at once.
 * Pods owned by Jobs or anything else are not spared, as in Kubernetes (docs/server.md,
 * "Terminated pods").
 *
 * Lifecycle as every controller's (docs/development.md): _new (listed, no thread), _start (with
 * its thread), _step (one round, for tests), _free (stops the thread first).
 */

#include <stdint.h>

#include "xpool/error.h"

/* kube-controller-manager's --terminated-pod-gc-threshold default */
#define XP_PODGC_THRESHOLD_DEFAULT 12500
/* kube-controller-manager's quarantine of a missing node before its pods are orphans */
#define XP_PODGC_QUARANTINE_MS 40000

struct xp_registry;
struct xp_clock;
struct xp_podgc;

struct xp_podgc_options {
        int64_t threshold;            /* terminated pods kept; 0: no terminated-pod collection */
        const struct xp_clock *clock; /* NULL: the system's; borrowed */
};

int xp_podgc_new(struct xp_registry *registry,
                 const struct xp_podgc_options *options,
                 struct xp_podgc **ret,
                 struct xp_error *err);
int xp_podgc_start(struct xp_registry *registry,
                   const struct xp_podgc_options *options,
                   struct xp_podgc **ret,
                   struct xp_error *err);
/* Informer sync and one round of collection; 0 or the store's errors. */
int xp_podgc_step(struct xp_podgc *c, struct xp_error *err);
/* NULL is fine. */
void xp_podgc_free(struct xp_podgc *c);
