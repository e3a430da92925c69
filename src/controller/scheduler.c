/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The scheduling loop: its own scheduler core snapshot (include/sched/xpool/sched.h), fed by an
 * informer over nodes and pods (controller/informer.h). Pending pods go through the core in
 * priority, then FIFO, order; a placement is written as Kubernetes binds (xp_registry_pod_bind():
 * spec.nodeName, the placement annotation, PodScheduled=True, one update with the pod's version
 * as precondition), a failure as PodScheduled=False and a FailedScheduling Event
 * (scheduler_write.c).
 *
 * Why unschedulable pods wait: nothing changes for them until the cluster does, so they are
 * tried again only after a node is added or changed or a placed pod goes away (capacity may have
 * freed), at most every RETRY_MS, all together so that priority still decides. Their own status
 * writes come back as MODIFIED events that change neither spec nor metadata, which do not wake
 * them.
 *
 * Races: every write carries the version the decision was made on. A stale one reads the pod
 * again and decides again; a pod deleted or bound elsewhere meanwhile is dropped (the event
 * that follows accounts it).
 *
 * Bindings in flight: the loop accounts a placed pod in its snapshot at once (so the next
 * decision sees the devices taken) and hands the binding to the workers. A pod whose binding is
 * in flight is not tried again; a failed binding takes the assumed pod out of the snapshot,
 * accounts whatever the store now says, and the pod goes back to the queue.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "controller.h"
#include "informer.h"
#include "queue_ctl.h"
#include "scheduler_state.h"
#include "xpool/codec.h"
#include "xpool/log.h"
#include "xpool/macro.h"
#include "xpool/registry.h"
#include "xpool/sched.h"
#include "xpool/strutil.h"
#include "xpool/timeutil.h"

#define WAKE_MS 100 /* longest sleep before checking for shutdown */

/* ---- following the store -------------------------------------------------------------------- */

static void node_seen(struct xp_scheduler *s, const json_t *json, bool deleted)
{
        _cleanup_(xp_node_freep) struct xp_node *node = NULL;
        struct xp_error err = {0};
        const char *name = pod_string(json, "metadata", "name");
        int r;

        if (!name)
                return;
        queue_ctl_node(s->queues, json, deleted);
        if (deleted) {
                (void)xp_sched_node_remove(s->sched, name);
                return;
        }
        r = xp_node_from_json(json, NULL, XP_DECODE_TRUSTED, &node, &err);
        if (r >= 0)
                r = xp_sched_node_set(s->sched, node, &err);
        if (r < 0) {
                xp_log(LOG_WARNING,
                       "scheduler: node '%s' left out: %s",
                       name,
                       err.msg[0] ? err.msg : strerror(-r));
                (void)xp_sched_node_remove(s->sched, name);
                return;
        }
        s->changed = true;
}

static void pod_seen(struct xp_scheduler *s, json_t *json, uint64_t version, bool deleted)
{
        _cleanup_(xp_pod_freep) struct xp_pod *pod = NULL;
        struct xp_error err = {0};
        const char *ns = pod_string(json, "metadata", "namespace");
        const char *name = pod_string(json, "metadata", "name");
        int r;

        if (!ns || !name)
                return;
        queue_ctl_pod(s->queues, json, deleted);
        if (deleted || pod_is_bound(json))
                queue_ctl_forget(s->queues, s->sched, ns, name);
        if (deleted || !pod_is_bound(json) || pod_is_finished(json)) {
                /* a pod that held capacity and no longer does: the waiting may fit now */
                if (xp_sched_pod_remove(s->sched, ns, name) == 0)
                        s->changed = true;
        }
        if (!deleted && pod_is_ours_pending(json)) {
                r = pending_upsert(s, ns, name, json, version);
                if (r < 0)
                        xp_log(LOG_WARNING,
                               "scheduler: pod %s/%s not queued: %s",
                               ns,
                               name,
                               strerror(-r));
                return;
        }
        pending_remove(s, ns, name);
        if (deleted || !pod_is_bound(json) || pod_is_finished(json))
                return;
        r = xp_pod_from_json(json, NULL, XP_DECODE_TRUSTED, &pod, &err);
        if (r >= 0)
                r = xp_sched_pod_add(s->sched, pod, &err);
        if (r < 0)
                xp_log(LOG_WARNING,
                       "scheduler: bound pod %s/%s not accounted: %s",
                       ns,
                       name,
                       err.msg[0] ? err.msg : strerror(-r));
}

static void on_node(void *userdata, const json_t *node, uint64_t version)
{
        (void)version;
        node_seen(userdata, node, false);
}

static void on_node_deleted(void *userdata, const json_t *node, uint64_t version)
{
        (void)version;
        node_seen(userdata, node, true);
}

static void on_pod(void *userdata, const json_t *pod, uint64_t version)
{
        pod_seen(userdata, (json_t *)pod, version, false);
}

static void on_pod_deleted(void *userdata, const json_t *pod, uint64_t version)
{
        pod_seen(userdata, (json_t *)pod, version, true);
}

static const struct xp_informer_handler followed[] = {
    {.resource = "namespaces",
     .add = queue_on_namespace,
     .update = queue_on_namespace,
     .delete = queue_on_namespace_deleted},
    {.resource = "queues",
     .add = queue_on_queue,
     .update = queue_on_queue,
     .delete = queue_on_queue_deleted},
    {.resource = "nodes", .add = on_node, .update = on_node, .delete = on_node_deleted},
    {.resource = "pods", .add = on_pod, .update = on_pod, .delete = on_pod_deleted},
};

/* A fresh snapshot: the relist that follows fills it, and the queue, from the current state. */
static int snapshot_renew(struct xp_scheduler *s)
{
        struct xp_sched_options options = {.profile = XP_SCHED_SPREAD};
        struct xp_sched *sched;
        int r;

        r = xp_sched_new(&options, &sched);
        if (r < 0)
                return r;
        xp_sched_free(s->sched);
        s->sched = sched;
        queue_ctl_reset(s->queues);
        /* what is still pending comes back from the list */
        pending_clear(s);
        s->changed = true;
        return 0;
}

/* The event log moved past us: everything is listed again. */
static void on_reset(void *userdata)
{
        struct xp_scheduler *s = userdata;
        int r;

        xp_log(LOG_INFO, "scheduler: the event log moved past us: listing again");
        r = snapshot_renew(s);
        if (r < 0)
                xp_log(LOG_WARNING, "scheduler: no fresh snapshot: %s", strerror(-r));
}

/* ---- placing -------------------------------------------------------------------------------- */

static void unschedulable(struct xp_scheduler *s, struct pending *p, const char *message)
{
        bool repeat = xp_streq0(p->message, message);

        p->waiting = true;
        xp_debug("sched", "pod %s/%s unschedulable: %s", p->namespace, p->name, message);
        if (!repeat) {
                char *copy = strdup(message);

                if (!copy)
                        return;
                failure_write(s, p, NULL, true); /* the old message's count */
                free(p->message);
                p->message = copy;
        }
        p->failures_unwritten++;
        failure_write(s, p, message, !repeat);
}

/*
 * Accounts p as placed on node (the snapshot must see the devices taken before the next
 * decision) and hands its binding to the workers.
 */
static int
dispatch(struct xp_scheduler *s, struct pending *p, const char *node, const char *placement)
{
        _cleanup_(xp_pod_freep) struct xp_pod *assumed = NULL;
        struct xp_error err = {0};
        struct bind_job *job;
        json_t *copy, *meta, *annotations;
        int r;

        job = calloc(1, sizeof *job);
        if (!job)
                return -ENOMEM;
        job->namespace = strdup(p->namespace);
        job->name = strdup(p->name);
        job->node = strdup(node);
        job->annotations = json_pack("{s:s}", XP_PLACEMENT_ANNOTATION, placement);
        job->version = p->version;
        job->pod = json_incref(p->pod);
        /* the failures before this placement, counted in the Event before the binding */
        job->event_count = failures_take(s, p, true);
        if (job->event_count > 0 && !(job->event_message = strdup(p->message))) {
                bind_job_free(job);
                return -ENOMEM;
        }
        copy = json_deep_copy(p->pod);
        meta = json_object_get(copy, "metadata");
        annotations = json_object_get(meta, "annotations");
        if (copy && json_is_object(meta) && !json_is_object(annotations)) {
                annotations = json_object();
                if (json_object_set_new(meta, "annotations", annotations) < 0)
                        annotations = NULL;
        }
        r = job->namespace && job->name && job->node && job->annotations && annotations &&
                    json_object_set_new(
                        annotations, XP_PLACEMENT_ANNOTATION, json_string(placement)) >= 0 &&
                    json_object_set_new(
                        json_object_get(copy, "spec"), "nodeName", json_string(node)) >= 0
                ? 0
                : -ENOMEM;
        if (r >= 0)
                r = xp_pod_from_json(copy, NULL, XP_DECODE_TRUSTED, &assumed, &err);
        if (r >= 0)
                r = xp_sched_pod_add(s->sched, assumed, &err);
        json_decref(copy);
        if (r < 0) {
                bind_job_free(job);
                return r;
        }
        p->inflight = true;
        s->inflight++;
        queue_ctl_placed(s->queues, p->namespace, p->name, true);
        bind_job_enqueue(s, job);
        return 0;
}

/* Takes in what the workers finished: failed bindings go back to the queue. */
static void collect(struct xp_scheduler *s)
{
        struct bind_job *job, *next;

        for (job = bind_jobs_done(s); job; job = next) {
                struct pending *p = pending_find(s, job->namespace, job->name);
                int r = job->result;

                next = (struct bind_job *)job->work.next;
                s->inflight--;
                if (!job->node) {
                        /* a failure's writes: their events come back as the pod's */
                        bind_job_free(job);
                        continue;
                }
                if (r == 0) {
                        /* its MODIFIED event may not have come yet */
                        if (p)
                                pending_delete(s, p);
                        bind_job_free(job);
                        continue;
                }
                /* the assumed placement did not happen: account what did */
                account_stored(s, job->namespace, job->name);
                if (p) {
                        p->inflight = false;
                        if (r == -ENOENT || r == -EALREADY || r == -EBUSY) {
                                pending_delete(s, p); /* deleted or bound meanwhile */
                        } else if (r == -ESTALE) {
                                if (pending_refresh(s, p) == 0)
                                        pending_delete(s, p);
                        } else {
                                xp_log(LOG_WARNING,
                                       "scheduler: pod %s/%s not bound: %s",
                                       job->namespace,
                                       job->name,
                                       job->message);
                                p->waiting = true;
                        }
                }
                bind_job_free(job);
        }
}

static void place_one(struct xp_scheduler *s, struct pending *p, enum xp_scheduler_result *result);

/* One attempt, counted and timed for /metrics. */
static void schedule_one(struct xp_scheduler *s, struct pending *p)
{
        enum xp_scheduler_result result = XP_SCHEDULER_SCHEDULED;
        int64_t start = xp_monotonic_ns();

        place_one(s, p, &result);
        atomic_fetch_add(&s->attempts[result], 1);
        xp_histogram_observe(&s->attempt_seconds, (double)(xp_monotonic_ns() - start) / 1e9);
}

const char *xp_scheduler_result_to_string(enum xp_scheduler_result result)
{
        static const char *const names[] = {
            [XP_SCHEDULER_SCHEDULED] = "scheduled",
            [XP_SCHEDULER_UNSCHEDULABLE] = "unschedulable",
            [XP_SCHEDULER_ERROR] = "error",
        };

        return result < XP_SCHEDULER_RESULTS ? names[result] : "error";
}

void xp_scheduler_metrics(struct xp_scheduler *s,
                          uint64_t ret_attempts[static XP_SCHEDULER_RESULTS],
                          struct xp_histogram_snapshot *ret_seconds)
{
        for (size_t i = 0; i < XP_SCHEDULER_RESULTS; i++)
                ret_attempts[i] = atomic_load(&s->attempts[i]);
        xp_histogram_read(&s->attempt_seconds, ret_seconds);
}

/* Places one pending pod: a binding, or an unschedulable one's status and Event, handed on. */
static void place_one(struct xp_scheduler *s, struct pending *p, enum xp_scheduler_result *result)
{
        _cleanup_free_ char *reason = NULL, *text = NULL;
        struct xp_placement placement = {0};
        struct xp_error err = {0};
        int r = 0;

        if (!p->decoded || p->decoded_version != p->version) {
                xp_pod_free(TAKE_PTR(p->decoded));
                r = xp_pod_from_json(p->pod, NULL, XP_DECODE_TRUSTED, &p->decoded, &err);
                p->decoded_version = p->version;
        }
        if (r >= 0 && (r = queue_ctl_before(s->queues, s->sched, p->decoded, &reason)) == 0) {
                *result = XP_SCHEDULER_UNSCHEDULABLE;
                unschedulable(s, p, reason);
                return;
        }
        if (r >= 0)
                r = xp_sched_place(s->sched, p->decoded, &placement, &reason, &err);
        if (r == -EINVAL) {
                *result = XP_SCHEDULER_UNSCHEDULABLE;
                unschedulable(s, p, err.msg[0] ? err.msg : "the pod's request is invalid");
                return;
        }
        if (r < 0) {
                *result = XP_SCHEDULER_ERROR;
                xp_log(LOG_WARNING,
                       "scheduler: pod %s/%s: %s",
                       p->namespace,
                       p->name,
                       err.msg[0] ? err.msg : strerror(-r));
                p->waiting = true;
                s->changed = true;
                return;
        }
        if (r == 0) {
                *result = XP_SCHEDULER_UNSCHEDULABLE;
                (void)queue_ctl_after(s->queues, s->sched, p->decoded, NULL, NULL);
                unschedulable(s, p, reason);
                return;
        }
        r = xp_placement_to_json(&placement, &text);
        if (r >= 0)
                r = dispatch(s, p, placement.node, text);
        xp_placement_done(&placement);
        if (r < 0) {
                *result = XP_SCHEDULER_ERROR;
                xp_log(LOG_WARNING,
                       "scheduler: pod %s/%s not bound: %s",
                       p->namespace,
                       p->name,
                       strerror(-r));
                p->waiting = true;
                s->changed = true;
        }
}

/* Priority first (higher first), then FIFO: creationTimestamp, then the version first seen. */
static int pending_compare(const void *a, const void *b)
{
        const struct pending *x = *(const struct pending *const *)a;
        const struct pending *y = *(const struct pending *const *)b;
        const char *cx = pod_string(x->pod, "metadata", "creationTimestamp");
        const char *cy = pod_string(y->pod, "metadata", "creationTimestamp");
        int c;

        if (x->priority != y->priority)
                return x->priority > y->priority ? -1 : 1;
        c = strcmp(cx ? cx : "", cy ? cy : "");
        if (c != 0)
                return c;
        return x->first_version < y->first_version ? -1 : x->first_version > y->first_version;
}

/* One pass over the pods that may be placed now. */
static void schedule_pass(struct xp_scheduler *s)
{
        _cleanup_free_ struct pending **active = NULL;
        size_t n = 0;

        if (s->changed && xp_clock_monotonic_ms(s->clock) - s->retried_ms >= RETRY_MS) {
                for (size_t i = 0; i < s->n_queue; i++)
                        s->queue[i]->waiting = false;
                s->changed = false;
                s->retried_ms = xp_clock_monotonic_ms(s->clock);
        }
        active = calloc(s->n_queue ? s->n_queue : 1, sizeof *active);
        if (!active)
                return;
        for (size_t i = 0; i < s->n_queue; i++)
                if (!s->queue[i]->waiting && !s->queue[i]->drop && !s->queue[i]->inflight)
                        active[n++] = s->queue[i];
        qsort(active, n, sizeof *active, pending_compare);
        /* the rest waits for the workers to catch up (the next pass, after their writes) */
        for (size_t i = 0; i < n && !xp_controller_stopping(s->loop) && s->inflight < INFLIGHT_MAX;
             i++)
                schedule_one(s, active[i]);
        /* only the pods tried can have been dropped */
        for (size_t i = 0; i < n; i++)
                if (active[i]->drop)
                        pending_delete(s, active[i]);
        for (size_t i = 0; i < s->n_queue; i++)
                if (!s->queue[i]->inflight)
                        failure_write(s, s->queue[i], NULL, false);
}

/* One round: what the workers finished, then a pass. Returns how long the loop may sleep. */
static int64_t scheduler_work(void *userdata)
{
        struct xp_scheduler *s = userdata;

        collect(s);
        schedule_pass(s);
        queue_ctl_flush(s->queues);
        /* wake early while a retry is due */
        return s->changed ? RETRY_MS / 2 : WAKE_MS;
}

static const struct xp_controller_ops scheduler_ops = {
    .name = "scheduler",
    .work = scheduler_work,
    .retry_ms = WAKE_MS,
};

/* ---- lifecycle ------------------------------------------------------------------------------ */

int xp_scheduler_new(struct xp_registry *registry,
                     const struct xp_scheduler_options *options,
                     struct xp_scheduler **ret,
                     struct xp_error *err)
{
        const struct xp_scheduler_options server = {.bind_workers = XP_SCHEDULER_BIND_WORKERS};
        struct xp_scheduler *s;
        int r;

        if (!options)
                options = &server;
        s = calloc(1, sizeof *s);
        if (!s)
                return -ENOMEM;
        s->registry = registry;
        s->clock = options->clock;
        xp_histogram_init(&s->attempt_seconds, xp_histogram_latency_bounds, xp_histogram_latency_n);
        struct xp_informer_options informer = {
            .store = xp_registry_store(registry),
            .handlers = followed,
            .n_handlers = XP_ELEMENTSOF(followed),
            .reset = on_reset,
            .userdata = s,
        };
        r = queue_ctl_new(registry, s->clock, &s->queues);
        if (r >= 0)
                r = xp_informer_new(&informer, &s->informer);
        if (r >= 0)
                r = snapshot_renew(s);
        if (r >= 0)
                r = xp_informer_list(s->informer, err);
        if (r >= 0)
                r = bind_jobs_start(s, options->bind_workers, err);
        if (r < 0) {
                xp_scheduler_free(s);
                return r;
        }
        *ret = s;
        return 0;
}

int xp_scheduler_start(struct xp_registry *registry,
                       const struct xp_scheduler_options *options,
                       struct xp_scheduler **ret,
                       struct xp_error *err)
{
        struct xp_scheduler *s;
        int r;

        r = xp_scheduler_new(registry, options, &s, err);
        if (r < 0)
                return r;
        r = xp_controller_start(&scheduler_ops, s->informer, s, &s->loop, err);
        if (r < 0) {
                xp_scheduler_free(s);
                return r;
        }
        *ret = s;
        return 0;
}

int xp_scheduler_step(struct xp_scheduler *s, struct xp_error *err)
{
        int r = xp_informer_sync(s->informer, err);

        return r < 0 ? r : (int)scheduler_work(s);
}

void xp_scheduler_free(struct xp_scheduler *s)
{
        if (!s)
                return;
        xp_controller_stop(s->loop);
        bind_jobs_stop(s); /* bindings in flight are written (or fail) before the store closes */
        xp_histogram_done(&s->attempt_seconds);
        pending_clear(s);
        free(s->queue);
        xp_sched_free(s->sched);
        queue_ctl_free(s->queues);
        xp_informer_free(s->informer);
        free(s);
}
