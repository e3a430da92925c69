/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The scheduling loop (docs/scheduler.md): follows nodes and pods in the store and binds pending
 * pods with the scheduler core (include/sched/xpool/sched.h), through the registry: a placement is
 * written as Kubernetes binds, a failure as PodScheduled=False with a FailedScheduling Event.
 */

#include <stdint.h>

#include "xpool/error.h"

struct xp_clock;
struct xp_registry;
struct xp_scheduler;

/* the server's: threads writing bindings and their Events, whose writes share commits */
#define XP_SCHEDULER_BIND_WORKERS    16
#define XP_SCHEDULER_GANG_TIMEOUT_MS (5 * 60 * 1000) /* a gang that cannot be placed says so */

struct xp_scheduler_options {
        const struct xp_clock *clock; /* borrowed; NULL: the system's */
        /* Threads that write bindings and failures. 0 writes them in the loop itself, at once (a
         * test's choice: no thread, and each step's writes are done when it returns). */
        unsigned bind_workers;
        /* A gang not placed this long after its first member came says that it timed out (its
         * pods' condition and Event); it keeps being tried. 0: XP_SCHEDULER_GANG_TIMEOUT_MS. */
        int64_t gang_timeout_ms;
        /* The node label keys of topology domains, finest first, ","-separated; NULL: the
         * default (XP_GANG_TOPOLOGY_KEYS, include/sched/xpool/gang.h); "": none. */
        const char *gang_topology_keys;
        /* How nodes are ranked: a profile of the core by name (xp_sched_profile_from_string());
         * NULL: XP_SCHEDULER_DEFAULT_PROFILE. docs/scheduler.md. */
        const char *placement_profile;
        /* Pods that ask no device are ranked on a sample of the nodes, kube-scheduler's
         * percentageOfNodesToScore: 0 adaptive (its default), 100 every node, 1-99 that share
         * (at least 100 nodes); device pods always on every node. docs/scheduler.md, "Sampling". */
        unsigned percentage_of_nodes_to_score;
};

/*
 * A scheduler over registry (borrowed until xp_scheduler_free()), with the nodes and pods listed
 * and its binding threads started, but no loop: xp_scheduler_start() runs one, a test calls
 * xp_scheduler_step(). options NULL: the server's (the system's clock, XP_SCHEDULER_BIND_WORKERS).
 * -ENOMEM, the store's error when the listing fails, -errno of pthread_create().
 */
int xp_scheduler_new(struct xp_registry *registry,
                     const struct xp_scheduler_options *options,
                     struct xp_scheduler **ret,
                     struct xp_error *err);

/* Starts the loop's thread of a scheduler from xp_scheduler_new() (none yet: it does nothing
 * once one runs). The server starts it once it listens (docs/scheduler.md, "In the server").
 * -errno of pthread_create(). */
int xp_scheduler_run(struct xp_scheduler *scheduler, struct xp_error *err);

/* xp_scheduler_new() and the loop's thread. Stop with xp_scheduler_free(). */
int xp_scheduler_start(struct xp_registry *registry,
                       const struct xp_scheduler_options *options,
                       struct xp_scheduler **ret,
                       struct xp_error *err);

/*
 * One round of the loop, for tests: reads what the store has new, takes in what the binding
 * threads finished, and places what is pending. Returns the ms the loop would sleep, or the
 * store's error.
 */
int xp_scheduler_step(struct xp_scheduler *scheduler, struct xp_error *err);

/* What a scheduling attempt ended in (kube-scheduler's result label). */
enum xp_scheduler_result {
        XP_SCHEDULER_SCHEDULED,
        XP_SCHEDULER_UNSCHEDULABLE,
        XP_SCHEDULER_ERROR,
        XP_SCHEDULER_RESULTS,
};

const char *xp_scheduler_result_to_string(enum xp_scheduler_result result);

struct xp_histogram_snapshot;
/* Attempts so far by result, and their durations (thread-safe, for /metrics). */
void xp_scheduler_metrics(struct xp_scheduler *scheduler,
                          uint64_t ret_attempts[static XP_SCHEDULER_RESULTS],
                          struct xp_histogram_snapshot *ret_seconds);

/*
 * Stops the loop and the binding threads (bindings in flight are written, or fail, first) and
 * frees everything; must run before the store closes. NULL is fine.
 */
void xp_scheduler_free(struct xp_scheduler *scheduler);
