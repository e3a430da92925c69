/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The workload controllers' loop: one informer over every kind (workloads_cache.c), four work
 * queues, and each round the keys due in each, synced by their controller. A sync that failed
 * comes back after a backoff; a sync that asked for a recheck (a pod becoming available after
 * minReadySeconds, a progress deadline) gets every object synced again at that time.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "controller.h"
#include "workloads.h"
#include "workqueue.h"
#include "xpool/kind.h"
#include "xpool/log.h"
#include "xpool/registry.h"
#include "xpool/workers.h"

#define IDLE_MS       1000 /* the longest sleep when nothing is queued */
#define RETRY_MIN_MS  50
#define RETRY_MAX_MS  30000
#define FILL_RETRY_MS 1000 /* a failed read of the pods left out (wl_orphans_fill()) */
#define ROUND_MAX     4096 /* keys synced per queue and round: the informer gets its turn */

static bool known_kind(const char *kind)
{
        return xp_kind_by_name(kind) != NULL && strcmp(kind, "Event") != 0;
}

static void on_reset(void *userdata)
{
        struct xp_workloads *w = userdata;

        for (size_t i = 0; i < WL_N; i++)
                wl_cache_clear(&w->cache[i]);
        xp_gc_graph_done(&w->graph);
        xp_gc_graph_init(&w->graph);
        w->graph.known_kind = known_kind;
}

static void drain(struct xp_workloads *w,
                  struct xp_workqueue *queue,
                  int (*sync)(struct xp_workloads *, const char *),
                  const char *what)
{
        const char *key;

        for (int i = 0; i < ROUND_MAX && xp_workqueue_get(queue, &key) == 1; i++) {
                int r = sync(w, key);

                if (r < 0) {
                        xp_log(LOG_DEBUG, "workloads: %s %s: %s, retried", what, key, strerror(-r));
                        (void)xp_workqueue_add_rate_limited(queue, key);
                } else {
                        xp_workqueue_forget(queue, key);
                }
                xp_workqueue_done(queue, key);
        }
}

static int wake(json_t *object, void *userdata)
{
        wl_enqueue(userdata, object);
        return 0;
}

/* A recheck came due: every ReplicaSet, Deployment and DaemonSet is synced again. */
static void recheck(struct xp_workloads *w)
{
        if (w->next_s == 0 || wl_now_s(w) < w->next_s)
                return;
        w->next_s = 0;
        wl_cache_each(&w->cache[WL_REPLICASETS], wake, w->rs_queue);
        wl_cache_each(&w->cache[WL_DEPLOYMENTS], wake, w->deploy_queue);
        wl_cache_each(&w->cache[WL_DAEMONSETS], wake, w->ds_queue);
}

static int64_t shortest(int64_t a, int64_t b)
{
        if (a < 0)
                return b;
        if (b < 0)
                return a;
        return a < b ? a : b;
}

static int64_t work(void *userdata)
{
        struct xp_workloads *w = userdata;
        int64_t start = wl_now_ms(w), next = IDLE_MS;
        struct xp_error err = {0};
        int r;
        struct xp_workqueue *queues[] = {
            w->gc_queue, w->deploy_queue, w->rs_queue, w->ds_queue, w->job_queue, w->cronjob_queue};

        recheck(w);
        r = wl_orphans_fill(w, &err);
        if (r < 0) {
                /* a sync now would miss the pods it may adopt: all wait for the fill */
                xp_log(LOG_WARNING,
                       "workloads: reading the pods: %s; tried again in %d ms",
                       xp_error_message(&err),
                       FILL_RETRY_MS);
                return FILL_RETRY_MS;
        }
        drain(w, w->gc_queue, wl_gc_sync, "garbage collection of");
        drain(w, w->deploy_queue, wl_deployment_sync, "deployment");
        drain(w, w->rs_queue, wl_replicaset_sync, "replica set");
        drain(w, w->ds_queue, wl_daemonset_sync, "daemon set");
        drain(w, w->cronjob_queue, wl_cronjob_sync, "cron job");
        drain(w, w->job_queue, wl_job_sync, "job");
        w->busy_ms += wl_now_ms(w) - start;
        for (size_t i = 0; i < sizeof(queues) / sizeof(queues[0]); i++)
                next = shortest(next, xp_workqueue_next_ms(queues[i]));
        if (w->next_s) {
                int64_t until = (w->next_s - wl_now_s(w)) * 1000;

                next = shortest(next, until < 0 ? 0 : until);
        }
        return next;
}

static const struct xp_controller_ops workloads_ops = {
    .name = "workloads",
    .work = work,
    .retry_ms = 500,
};

static int make_queues(struct xp_workloads *w)
{
        struct xp_workqueue_options o = {
            .clock = w->clock, .base_delay_ms = RETRY_MIN_MS, .max_delay_ms = RETRY_MAX_MS};
        struct xp_workqueue **queues[] = {&w->rs_queue,
                                          &w->deploy_queue,
                                          &w->ds_queue,
                                          &w->gc_queue,
                                          &w->job_queue,
                                          &w->cronjob_queue};

        for (size_t i = 0; i < sizeof(queues) / sizeof(queues[0]); i++) {
                int r = xp_workqueue_new(&o, queues[i]);

                if (r < 0)
                        return r;
        }
        return 0;
}

int xp_workloads_new(struct xp_registry *registry,
                     const struct xp_workloads_options *options,
                     struct xp_workloads **ret,
                     struct xp_error *err)
{
        struct xp_workloads *w = calloc(1, sizeof(*w));
        int r;

        if (!w)
                return -ENOMEM;
        w->registry = registry;
        w->clock = options ? options->clock : NULL;
        xp_gc_graph_init(&w->graph);
        w->graph.known_kind = known_kind;
        xp_expectations_init(&w->expectations);
        pthread_mutex_init(&w->events_lock, NULL);
        r = make_queues(w);
        if (r >= 0)
                r = wl_creators_start(w, err);
        if (r >= 0)
                r = wl_handlers_make(w);
        if (r >= 0) {
                struct xp_informer_options informer = {
                    .store = xp_registry_store(registry),
                    .handlers = w->handlers,
                    .n_handlers = w->n_handlers,
                    .reset = on_reset,
                    .userdata = w,
                };
                r = xp_informer_new(&informer, &w->informer);
        }
        if (r >= 0)
                r = xp_informer_list(w->informer, err);
        if (r < 0) {
                xp_workloads_free(w);
                return r;
        }
        *ret = w;
        return 0;
}

int xp_workloads_start(struct xp_registry *registry,
                       const struct xp_workloads_options *options,
                       struct xp_workloads **ret,
                       struct xp_error *err)
{
        struct xp_workloads *w;
        int r = xp_workloads_new(registry, options, &w, err);

        if (r < 0)
                return r;
        r = xp_controller_start(&workloads_ops, w->informer, w, &w->loop, err);
        if (r < 0) {
                xp_workloads_free(w);
                return r;
        }
        *ret = w;
        return 0;
}

int xp_workloads_step(struct xp_workloads *w, struct xp_error *err)
{
        int r = xp_informer_sync(w->informer, err);

        return r < 0 ? r : (int)work(w);
}

int64_t xp_workloads_busy_ms(const struct xp_workloads *w)
{
        return w->busy_ms;
}

void xp_workloads_free(struct xp_workloads *w)
{
        if (!w)
                return;
        xp_controller_stop(w->loop);
        xp_workers_free(w->creators);
        xp_informer_free(w->informer);
        for (size_t i = 0; i < WL_N; i++)
                wl_cache_clear(&w->cache[i]);
        xp_gc_graph_done(&w->graph);
        xp_expectations_done(&w->expectations);
        xp_workqueue_free(w->rs_queue);
        xp_workqueue_free(w->deploy_queue);
        xp_workqueue_free(w->ds_queue);
        xp_workqueue_free(w->gc_queue);
        xp_workqueue_free(w->job_queue);
        xp_workqueue_free(w->cronjob_queue);
        free(w->handlers);
        wl_events_done(w);
        pthread_mutex_destroy(&w->events_lock);
        free(w);
}
