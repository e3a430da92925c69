/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The server's metrics state, shared by metrics.c (updates) and metrics_render.c. */

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "xpool/histogram.h"

#define REQUEST_SERIES_MAX 512 /* distinct verb/resource/code: more are counted under the last */

struct request_series {
        const char *verb, *resource, *subresource;
        unsigned code;
        uint64_t count;
};

struct latency_series {
        const char *verb, *resource, *subresource;
        struct xp_histogram seconds;
};

struct srv_metrics {
        struct xp_store *store;
        struct xp_scheduler *scheduler;
        struct xp_poolstats *pool;
        pthread_mutex_t
            sources_lock;     /* guards scheduler and pool, held while a scrape reads them */
        pthread_mutex_t lock; /* guards the series tables */
        struct request_series requests[REQUEST_SERIES_MAX];
        size_t n_requests;
        struct latency_series *latencies[REQUEST_SERIES_MAX];
        size_t n_latencies;
        atomic_long watchers;
};
