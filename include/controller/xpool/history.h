/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The server's short memory of the pool (docs/dashboard.md): one hour of allocation per resource
 * (with its device kind), in total and per node, and of device utilisation, in steps (10 s by
 * default), kept in rings in memory. Nothing is stored: a restarted server starts with an empty
 * history. The web dashboard reads it as JSON.
 *
 * Allocation comes from the history feed (history_feed.h), which follows nodes and pods through
 * the controller layer's informer. Utilisation comes from whoever samples devices: they call
 * xp_history_record_usage() with each sample; a node's published device metrics
 * (status.xpool.devices[].metrics) are one such source.
 *
 * A step holds the last allocation recorded in it, and the mean of the utilisation samples that
 * fell into it. Series that have had no point for a whole window are forgotten.
 *
 * Thread-safe: the feed's thread records, HTTP threads read, samplers record usage.
 */

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#define XP_HISTORY_STEP_S     10
#define XP_HISTORY_WINDOW_S   3600
#define XP_HISTORY_SERIES_MAX 4096 /* allocation and usage series each; more are dropped */
#define XP_HISTORY_NAME_MAX   253  /* node, device, resource names are cut to this */

struct xp_history;

/* One allocation figure: resource on node ("" for the whole pool), in the resource's units
 * (cores for cpu, bytes for memory, devices for extended resources). */
struct xp_history_alloc {
        const char *resource; /* "nvidia.com/gpu" */
        const char *kind;     /* the device kind serving it ("gpu"), "" for cpu, memory, ... */
        const char *node;     /* "" for the pool's total */
        double allocated;
        double capacity;
};

/* An empty history with steps of step_s over window_s (0: the defaults). -ENOMEM, -EINVAL. */
int xp_history_new(int64_t step_s, int64_t window_s, struct xp_history **ret);
/* NULL is fine. */
void xp_history_free(struct xp_history *history);

/*
 * The allocation at now_s (seconds since the epoch): every series in points gets this step's
 * value (a later record in the same step replaces it). Returns 0, or -ENOSPC when some series
 * were dropped for the limit (the others are recorded), or -ENOMEM.
 */
int xp_history_record_alloc(struct xp_history *history,
                            int64_t now_s,
                            const struct xp_history_alloc *points,
                            size_t n);

/*
 * A utilisation sample of one device (0-100 %), for the metrics sampler: device is its id
 * ("GPU-3f2a..."), kind its kind ("gpu"). Samples within one step are averaged. Returns 0,
 * -EINVAL for a percentage outside 0-100 or a missing name, -ENOSPC, -ENOMEM.
 */
int xp_history_record_usage(struct xp_history *history,
                            int64_t now_s,
                            const char *node,
                            const char *device,
                            const char *kind,
                            double percent);

/*
 * The history as of now_s, as the dashboard reads it (docs/dashboard.md has the shape):
 * {"stepSeconds", "windowSeconds", "now", "allocation": [{"resource", "kind", "node", "points":
 * [[t, allocated, capacity], ...]}], "usage": [{"node", "device", "kind", "points": [[t, percent],
 * ...]}]}, points oldest first. Caller frees *ret with json_decref(). -ENOMEM.
 */
int xp_history_to_json(struct xp_history *history, int64_t now_s, json_t **ret);
