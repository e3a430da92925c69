/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * A Prometheus histogram: fixed upper bounds, thread-safe observations, read whole for an
 * exposition (xpool/expo.h). Cheap enough for every request and every scheduling attempt.
 */

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#define XP_HISTOGRAM_BUCKETS_MAX 24

/* What a histogram holds at one moment. */
struct xp_histogram_snapshot {
        const double *bounds; /* ascending upper bounds, borrowed (static tables) */
        size_t n_bounds;      /* at most XP_HISTOGRAM_BUCKETS_MAX */
        uint64_t counts[XP_HISTOGRAM_BUCKETS_MAX + 1]; /* per bucket, not cumulative; last +Inf */
        uint64_t count;
        double sum;
};

struct xp_histogram {
        pthread_mutex_t lock;
        struct xp_histogram_snapshot s;
};

/* Bounds for latencies in seconds (5 ms to 60 s) and for small counts (1 to 1024). */
extern const double xp_histogram_latency_bounds[];
extern const size_t xp_histogram_latency_n;
extern const double xp_histogram_size_bounds[];
extern const size_t xp_histogram_size_n;

void xp_histogram_init(struct xp_histogram *h, const double *bounds, size_t n_bounds);
void xp_histogram_done(struct xp_histogram *h);
void xp_histogram_observe(struct xp_histogram *h, double value);
/* A consistent copy, for writing out. */
void xp_histogram_read(struct xp_histogram *h, struct xp_histogram_snapshot *ret);
