/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The server's /metrics (metrics.h), under kube-apiserver's and kube-scheduler's names where
 * theirs fit (apiserver_request_total, apiserver_request_duration_seconds,
 * scheduler_schedule_attempts_total, ...) and xpool_ ones for the pool.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"
#include "xpool/expo.h"
#include "xpool/histogram.h"
#include "xpool/macro.h"
#include "xpool/poolstats.h"
#include "xpool/scheduler.h"
#include "xpool/store.h"

#include "metrics_state.h"

int srv_metrics_new(struct xp_store *store,
                    struct xp_scheduler *scheduler,
                    struct xp_poolstats *pool,
                    struct srv_metrics **ret)
{
        struct srv_metrics *m = calloc(1, sizeof(*m));

        if (!m)
                return -ENOMEM;
        m->store = store;
        m->scheduler = scheduler;
        m->pool = pool;
        pthread_mutex_init(&m->lock, NULL);
        pthread_mutex_init(&m->sources_lock, NULL);
        *ret = m;
        return 0;
}

void srv_metrics_free(struct srv_metrics *m)
{
        if (!m)
                return;
        for (size_t i = 0; i < m->n_latencies; i++) {
                xp_histogram_done(&m->latencies[i]->seconds);
                free(m->latencies[i]);
        }
        pthread_mutex_destroy(&m->lock);
        pthread_mutex_destroy(&m->sources_lock);
        free(m);
}

static bool same(const char *verb,
                 const char *resource,
                 const char *sub,
                 const char *v,
                 const char *r,
                 const char *s)
{
        return strcmp(verb, v) == 0 && strcmp(resource, r) == 0 && strcmp(sub, s) == 0;
}

static struct latency_series *
latency_of(struct srv_metrics *m, const char *verb, const char *resource, const char *sub)
{
        struct latency_series *l;

        for (size_t i = 0; i < m->n_latencies; i++) {
                l = m->latencies[i];
                if (same(verb, resource, sub, l->verb, l->resource, l->subresource))
                        return l;
        }
        if (m->n_latencies == REQUEST_SERIES_MAX || !(l = calloc(1, sizeof(*l))))
                return NULL;
        *l = (struct latency_series){.verb = verb, .resource = resource, .subresource = sub};
        xp_histogram_init(&l->seconds, xp_histogram_latency_bounds, xp_histogram_latency_n);
        m->latencies[m->n_latencies++] = l;
        return l;
}

void srv_metrics_request(struct srv_metrics *m,
                         const char *verb,
                         const char *resource,
                         const char *sub,
                         unsigned code,
                         double seconds)
{
        struct latency_series *l = NULL;
        size_t i;

        if (!m)
                return;
        pthread_mutex_lock(&m->lock);
        for (i = 0; i < m->n_requests; i++)
                if (m->requests[i].code == code && same(verb,
                                                        resource,
                                                        sub,
                                                        m->requests[i].verb,
                                                        m->requests[i].resource,
                                                        m->requests[i].subresource))
                        break;
        if (i == m->n_requests && i < REQUEST_SERIES_MAX)
                m->requests[m->n_requests++] =
                    (struct request_series){verb, resource, sub, code, 0};
        m->requests[i < REQUEST_SERIES_MAX ? i : REQUEST_SERIES_MAX - 1].count++;
        if (strcmp(verb, "WATCH") != 0)
                l = latency_of(m, verb, resource, sub);
        pthread_mutex_unlock(&m->lock);
        if (l)
                xp_histogram_observe(&l->seconds, seconds);
}

void srv_metrics_forget_sources(struct srv_metrics *m)
{
        if (!m)
                return;
        pthread_mutex_lock(&m->sources_lock);
        m->scheduler = NULL;
        m->pool = NULL;
        pthread_mutex_unlock(&m->sources_lock);
}

void srv_metrics_watchers(struct srv_metrics *m, int delta)
{
        if (m)
                atomic_fetch_add(&m->watchers, delta);
}
