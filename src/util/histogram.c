/* SPDX-License-Identifier: Apache-2.0 */
/* Prometheus histograms (xpool/histogram.h). */
#include <string.h>

#include "xpool/histogram.h"
#include "xpool/macro.h"

/* client_golang's DefBuckets stretched to a minute: scheduling and API latencies. */
const double xp_histogram_latency_bounds[] = {
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};
const size_t xp_histogram_latency_n = XP_ELEMENTSOF(xp_histogram_latency_bounds);

/* Powers of two: batch sizes. */
const double xp_histogram_size_bounds[] = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024};
const size_t xp_histogram_size_n = XP_ELEMENTSOF(xp_histogram_size_bounds);

void xp_histogram_init(struct xp_histogram *h, const double *bounds, size_t n_bounds)
{
        memset(h, 0, sizeof(*h));
        pthread_mutex_init(&h->lock, NULL);
        h->s.bounds = bounds;
        h->s.n_bounds = n_bounds < XP_HISTOGRAM_BUCKETS_MAX ? n_bounds : XP_HISTOGRAM_BUCKETS_MAX;
}

void xp_histogram_done(struct xp_histogram *h)
{
        pthread_mutex_destroy(&h->lock);
}

void xp_histogram_observe(struct xp_histogram *h, double value)
{
        size_t i = 0;

        while (i < h->s.n_bounds && value > h->s.bounds[i])
                i++;
        pthread_mutex_lock(&h->lock);
        h->s.counts[i]++;
        h->s.count++;
        h->s.sum += value;
        pthread_mutex_unlock(&h->lock);
}

void xp_histogram_read(struct xp_histogram *h, struct xp_histogram_snapshot *ret)
{
        pthread_mutex_lock(&h->lock);
        *ret = h->s;
        pthread_mutex_unlock(&h->lock);
}
