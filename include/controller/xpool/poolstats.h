/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The pool's counts for the server's /metrics (docs/monitoring.md), kept up to date from the
 * store's events so that a scrape costs what the series do, not what the pods do: pods by phase;
 * pending pods by reason, with the sum of their waits; how long pods waited until bound; per
 * resource (cpu, memory, each device resource with its device kind) what the nodes offer and
 * what bound pods that are not over request.
 */

#include <stddef.h>
#include <stdint.h>

#include "xpool/error.h"
#include "xpool/histogram.h"

struct xp_registry;
struct xp_poolstats;

#define XP_POOLSTATS_PHASES        5 /* Pending Running Succeeded Failed Unknown */
#define XP_POOLSTATS_REASONS_MAX   16
#define XP_POOLSTATS_RESOURCES_MAX 64

struct xp_poolstats_reason {
        char reason[64]; /* PodScheduled's reason ("Unschedulable"), or "Waiting" before any */
        uint64_t pods;
};

struct xp_poolstats_resource {
        char name[128]; /* "cpu", "memory", "nvidia.com/gpu" */
        char kind[16];  /* the device kind nodes report for it, "" for cpu and memory */
        double allocatable, requested; /* cores, bytes or devices */
};

/* One consistent reading. */
struct xp_poolstats_view {
        uint64_t phases[XP_POOLSTATS_PHASES];
        uint64_t pending;
        double pending_wait_seconds; /* the sum of the pending pods' waits so far */
        struct xp_poolstats_reason reasons[XP_POOLSTATS_REASONS_MAX];
        size_t n_reasons;
        struct xp_poolstats_resource resources[XP_POOLSTATS_RESOURCES_MAX];
        size_t n_resources;
        uint64_t nodes, nodes_ready;
        struct xp_histogram_snapshot wait_until_bound;
};

extern const char *const xp_poolstats_phase_names[XP_POOLSTATS_PHASES];

/* Lists pods and nodes, without a thread: a test calls xp_poolstats_step(). */
int xp_poolstats_new(struct xp_registry *registry, struct xp_poolstats **ret, struct xp_error *err);
/* Lists pods and nodes and starts following them. Stop with xp_poolstats_free(). */
int xp_poolstats_start(struct xp_registry *registry,
                       struct xp_poolstats **ret,
                       struct xp_error *err);
void xp_poolstats_free(struct xp_poolstats *stats);
/* One round without the thread, for tests: reads what the store has new. */
int xp_poolstats_step(struct xp_poolstats *stats, struct xp_error *err);
void xp_poolstats_read(struct xp_poolstats *stats, struct xp_poolstats_view *ret);
