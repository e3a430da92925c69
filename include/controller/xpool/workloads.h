/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The workload controllers (docs/workloads.md): ReplicaSet, Deployment, DaemonSet and the garbage
 * collector, in one loop over one informer (they follow the same pods, and one cache of them
 * costs half of two). Each keeps its own work queue of keys and is level-triggered: a sync reads
 * the state it acts on from the cache, so after a restart (a fresh list) it resumes where the
 * objects stand. Their decisions are the pure functions of replicaset.h, deployment.h,
 * daemonset.h and gc.h.
 */

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "xpool/error.h"

struct xp_clock;
struct xp_registry;
struct xp_workloads;

struct xp_workloads_options {
        const struct xp_clock *clock; /* borrowed; NULL: the system's */
};

/*
 * The controllers over registry (borrowed until xp_workloads_free()) with everything listed, but
 * no loop: xp_workloads_start() runs one, a test calls xp_workloads_step(). -ENOMEM, or the
 * store's error when the listing fails.
 */
int xp_workloads_new(struct xp_registry *registry,
                     const struct xp_workloads_options *options,
                     struct xp_workloads **ret,
                     struct xp_error *err);

/* xp_workloads_new() and the loop's thread. Stop with xp_workloads_free(). */
int xp_workloads_start(struct xp_registry *registry,
                       const struct xp_workloads_options *options,
                       struct xp_workloads **ret,
                       struct xp_error *err);

/* One round, for tests: reads what is new, syncs what is queued. The ms the loop would sleep. */
int xp_workloads_step(struct xp_workloads *workloads, struct xp_error *err);

/* Time spent in syncs (ms, monotonic) since the start: the benchmark's controller share. */
int64_t xp_workloads_busy_ms(const struct xp_workloads *workloads);

/* Stops the loop and frees everything; must run before the store closes. NULL is fine. */
void xp_workloads_free(struct xp_workloads *workloads);

struct xp_kind;

/* DeleteOptions.propagationPolicy (docs/workloads.md, "Deleting"). */
enum xp_propagation {
        XP_PROPAGATION_BACKGROUND, /* the object goes now; the collector deletes its dependents */
        XP_PROPAGATION_FOREGROUND, /* it stays (foregroundDeletion) until its blocking dependents
                                      went */
        XP_PROPAGATION_ORPHAN,     /* it stays (orphan) until its dependents forgot it, then goes */
};

/*
 * Starts a Foreground or Orphan deletion of resource ns/name (not a pod): sets
 * metadata.deletionTimestamp and adds the policy's finalizer; the garbage collector finishes it.
 * *ret_object receives the object as written. dry: read only. -ENOENT, the store's errors.
 */
int xp_workloads_delete_with_finalizer(struct xp_registry *registry,
                                       const struct xp_kind *kind,
                                       const char *ns,
                                       const char *name,
                                       enum xp_propagation policy,
                                       bool dry,
                                       json_t **ret_object,
                                       struct xp_error *err);
