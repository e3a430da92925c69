/* SPDX-License-Identifier: Apache-2.0 */
/* The server's exposition (metrics.h): the API, the scheduler, the pool, the store, the process. */
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

/* The fields of struct srv_metrics this file reads, in metrics.c's layout. */
#include "metrics_state.h"

static void render_api(struct xp_expo *w, struct srv_metrics *m)
{
        char code[16];

        pthread_mutex_lock(&m->lock);
        xp_expo_family(w,
                       "apiserver_request_total",
                       XP_EXPO_COUNTER,
                       "API requests by verb, resource, subresource and HTTP code.");
        for (size_t i = 0; i < m->n_requests; i++) {
                const struct request_series *s = &m->requests[i];
                struct xp_expo_label labels[] = {{"verb", s->verb},
                                                 {"resource", s->resource},
                                                 {"subresource", s->subresource},
                                                 {"code", code}};

                snprintf(code, sizeof(code), "%u", s->code);
                xp_expo_sample(w, "", labels, XP_ELEMENTSOF(labels), (double)s->count);
        }
        xp_expo_family(w,
                       "apiserver_request_duration_seconds",
                       XP_EXPO_HISTOGRAM,
                       "API request latency by verb, resource and subresource (watches left out).");
        for (size_t i = 0; i < m->n_latencies; i++) {
                struct latency_series *l = m->latencies[i];
                struct xp_histogram_snapshot h;
                struct xp_expo_label labels[] = {
                    {"verb", l->verb}, {"resource", l->resource}, {"subresource", l->subresource}};

                xp_histogram_read(&l->seconds, &h);
                xp_expo_histogram(w, labels, XP_ELEMENTSOF(labels), &h);
        }
        pthread_mutex_unlock(&m->lock);
        xp_expo_family(w, "apiserver_registered_watchers", XP_EXPO_GAUGE, "Watches open now.");
        xp_expo_sample(w, "", NULL, 0, (double)atomic_load(&m->watchers));
}

static void render_scheduler(struct xp_expo *w, struct srv_metrics *m)
{
        uint64_t attempts[XP_SCHEDULER_RESULTS];
        struct xp_histogram_snapshot h;
        struct xp_expo_label profile[] = {{"profile", "default-scheduler"}};

        if (!m->scheduler)
                return;
        xp_scheduler_metrics(m->scheduler, attempts, &h);
        xp_expo_family(w,
                       "scheduler_schedule_attempts_total",
                       XP_EXPO_COUNTER,
                       "Scheduling attempts by result (scheduled, unschedulable, error).");
        for (size_t i = 0; i < XP_SCHEDULER_RESULTS; i++) {
                struct xp_expo_label labels[] = {{"result", xp_scheduler_result_to_string(i)},
                                                 {"profile", "default-scheduler"}};

                xp_expo_sample(w, "", labels, XP_ELEMENTSOF(labels), (double)attempts[i]);
        }
        xp_expo_family(
            w,
            "scheduler_scheduling_attempt_duration_seconds",
            XP_EXPO_HISTOGRAM,
            "How long one scheduling attempt took: placement and hand-over of its writes.");
        xp_expo_histogram(w, profile, XP_ELEMENTSOF(profile), &h);
}

static void render_pods(struct xp_expo *w, const struct xp_poolstats_view *v)
{
        xp_expo_family(w, "xpool_pods", XP_EXPO_GAUGE, "Pods by phase.");
        for (size_t i = 0; i < XP_POOLSTATS_PHASES; i++) {
                struct xp_expo_label labels[] = {{"phase", xp_poolstats_phase_names[i]}};

                xp_expo_sample(w, "", labels, 1, (double)v->phases[i]);
        }
        xp_expo_family(
            w, "scheduler_pending_pods", XP_EXPO_GAUGE, "Pods not bound to a node and not over.");
        xp_expo_sample(
            w, "", (struct xp_expo_label[]){{"queue", "unbound"}}, 1, (double)v->pending);
        xp_expo_family(
            w,
            "xpool_pending_pods",
            XP_EXPO_GAUGE,
            "Pending pods by the reason of their PodScheduled condition (Waiting: not tried yet).");
        for (size_t i = 0; i < v->n_reasons; i++) {
                struct xp_expo_label labels[] = {{"reason", v->reasons[i].reason}};

                xp_expo_sample(w, "", labels, 1, (double)v->reasons[i].pods);
        }
        xp_expo_family(
            w,
            "xpool_pending_pods_wait_seconds",
            XP_EXPO_GAUGE,
            "The pending pods' waits so far, summed (s): divide by scheduler_pending_pods for the mean.");
        xp_expo_sample(w, "", NULL, 0, v->pending_wait_seconds);
        xp_expo_family(w,
                       "xpool_pod_wait_until_bound_seconds",
                       XP_EXPO_HISTOGRAM,
                       "How long pods waited from creation until bound.");
        xp_expo_histogram(w, NULL, 0, &v->wait_until_bound);
        xp_expo_family(w, "xpool_nodes", XP_EXPO_GAUGE, "Nodes, and how many are Ready.");
        xp_expo_sample(
            w, "", (struct xp_expo_label[]){{"ready", "true"}}, 1, (double)v->nodes_ready);
        xp_expo_sample(w,
                       "",
                       (struct xp_expo_label[]){{"ready", "false"}},
                       1,
                       (double)(v->nodes - v->nodes_ready));
}

static void render_resources(struct xp_expo *w, const struct xp_poolstats_view *v)
{
        static const char *const names[] = {"xpool_resource_allocatable",
                                            "xpool_resource_requested",
                                            "xpool_resource_allocation_ratio"};
        static const char *const helps[] = {
            "What the nodes offer, per resource (cores, bytes or devices) and device kind.",
            "What bound pods that are not over request, per resource and device kind.",
            "Requested over allocatable, per resource and device kind (0 when nothing is offered).",
        };

        for (size_t f = 0; f < XP_ELEMENTSOF(names); f++) {
                xp_expo_family(w, names[f], XP_EXPO_GAUGE, helps[f]);
                for (size_t i = 0; i < v->n_resources; i++) {
                        const struct xp_poolstats_resource *r = &v->resources[i];
                        struct xp_expo_label labels[] = {{"resource", r->name}, {"kind", r->kind}};
                        double value = f == 0               ? r->allocatable
                                       : f == 1             ? r->requested
                                       : r->allocatable > 0 ? r->requested / r->allocatable
                                                            : 0;

                        xp_expo_sample(w, "", labels, XP_ELEMENTSOF(labels), value);
                }
        }
}

static void render_store(struct xp_expo *w, struct srv_metrics *m)
{
        struct xp_histogram_snapshot commit, batch;
        struct xp_store_stats stats;

        xp_store_stats(m->store, &stats);
        xp_store_histograms(m->store, &commit, &batch);
        xp_expo_family(
            w, "xpool_store_writes_total", XP_EXPO_COUNTER, "Writes the store acknowledged.");
        xp_expo_sample(w, "", NULL, 0, (double)stats.writes);
        xp_expo_family(w,
                       "xpool_store_commits_total",
                       XP_EXPO_COUNTER,
                       "Transactions committed (one fsync each).");
        xp_expo_sample(w, "", NULL, 0, (double)stats.commits);
        xp_expo_family(w,
                       "xpool_store_commit_duration_seconds",
                       XP_EXPO_HISTOGRAM,
                       "How long a commit took, from BEGIN to the seal.");
        xp_expo_histogram(w, NULL, 0, &commit);
        xp_expo_family(w,
                       "xpool_store_commit_writes",
                       XP_EXPO_HISTOGRAM,
                       "Writes one commit carried (the batch size).");
        xp_expo_histogram(w, NULL, 0, &batch);
}

int srv_metrics_render(struct srv_metrics *m, int format, char **ret_text, size_t *ret_len)
{
        struct xp_poolstats_view view;
        struct xp_expo w;
        int r = xp_expo_init(&w, (enum xp_expo_format)format);

        if (r < 0)
                return r;
        render_api(&w, m);
        pthread_mutex_lock(&m->sources_lock);
        render_scheduler(&w, m);
        if (m->pool) {
                xp_poolstats_read(m->pool, &view);
                render_pods(&w, &view);
                render_resources(&w, &view);
        }
        pthread_mutex_unlock(&m->sources_lock);
        render_store(&w, m);
        xp_expo_process(&w);
        return xp_expo_finish(&w, ret_text, ret_len);
}
