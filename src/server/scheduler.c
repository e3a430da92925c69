/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The scheduling loop: one thread with its own scheduler core snapshot (include/xpool/sched.h),
 * fed from the store as a watch would be: nodes and pods listed at start, then their event logs
 * followed from the listed versions. Pending pods go through the core in priority, then FIFO,
 * order; a placement is written as Kubernetes binds (pod_bind(): spec.nodeName, the placement
 * annotation, PodScheduled=True, one update with the pod's version as precondition), a failure as
 * PodScheduled=False and a FailedScheduling Event.
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
 * Why bindings are written by workers: deciding is fast, but a durable write waits for its
 * commit's fsync. The loop decides serially on its snapshot, accounts the placed pod there at
 * once (so the next decision sees the devices taken), and hands the binding and its Scheduled
 * Event to BIND_WORKERS threads, whose concurrent writes share the store's group commits. A pod
 * whose binding is in flight is not tried again; a failed binding takes the assumed pod out of
 * the snapshot, accounts whatever the store now says, and the pod goes back to the queue.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"
#include "sched/sched_internal.h"
#include "xpool/codec.h"
#include "xpool/log.h"
#include "xpool/macro.h"
#include "xpool/sched.h"
#include "xpool/strutil.h"
#include "xpool/timeutil.h"

#define SCHEDULER_NAME    "xpool-scheduler"
#define EVENT_BATCH       256  /* events read from the store at a time */
#define WAKE_MS           100  /* longest block before checking for shutdown */
#define RETRY_MS          250  /* shortest interval between retries of unschedulable pods */
#define EVENT_INTERVAL_MS 2000 /* repeated failures update their Event at most this often */
#define WRITE_ATTEMPTS    8    /* stale writes redone with fresh state before giving up */
#define NAME_MAX_LEN      253
#define BIND_WORKERS      4   /* threads writing bindings and their Events */
#define INFLIGHT_MAX      512 /* bindings handed to the workers and not yet done */

/* A pod waiting for a node; allocated one by one so that pointers to it stay valid. */
struct pending {
        char *key; /* "namespace/name": the index's key */
        char *namespace;
        char *name;
        json_t *pod; /* its latest state */
        uint64_t version;
        /* pod decoded, at decoded_version: a pod that waits is tried again on every change of
         * the cluster, and decoding it each time would cost more than placing it */
        struct xp_pod *decoded;
        uint64_t decoded_version;
        uint64_t first_version; /* FIFO order among equal creationTimestamps */
        int64_t priority;
        size_t slot;   /* its place in scheduler.queue */
        bool waiting;  /* tried and unschedulable: tried again when the cluster changes */
        bool drop;     /* bound or gone: removed at the end of the pass */
        bool inflight; /* its binding is with the workers: not tried meanwhile */
        char *message; /* the last failure's reason */
        int64_t failures_unwritten; /* failures with message not yet counted in its Event */
        int64_t event_written_ms;
};

/*
 * A write for the workers: a binding (node set), or a PodScheduled=False status (unschedulable
 * set); either may carry a FailedScheduling Event's count (event_message set).
 */
struct bind_job {
        struct bind_job *next;
        char *namespace, *name, *node;
        json_t *annotations;
        json_t *pod;         /* the pod as decided on (status and Event writes) */
        char *unschedulable; /* the reason to write as PodScheduled=False */
        char *event_message; /* a FailedScheduling Event counting event_count failures */
        int64_t event_count;
        uint64_t version; /* the version the decision was made on */
        int result;       /* pod_bind()'s */
        char message[256];
};

struct scheduler {
        struct api *api;
        pthread_t thread;
        atomic_bool stop;
        pthread_t workers[BIND_WORKERS];
        size_t n_workers;
        pthread_mutex_t lock; /* guards the job lists and workers_stop */
        pthread_cond_t wake;
        struct bind_job *jobs, *jobs_tail, *done;
        bool workers_stop;
        size_t inflight; /* the loop's count of jobs not yet collected */
        struct xp_sched *sched;
        uint64_t nodes_seen, pods_seen; /* the event logs are read up to these */
        /* Unordered (a pass sorts what it tries); index finds an entry by key, so that a pod
         * event costs O(1) whatever the number pending. */
        struct pending **queue;
        size_t n_queue, cap_queue;
        struct smap index;
        bool changed; /* capacity may have appeared since the waiting pods were tried */
        int64_t retried_ms;
};

static const char *pod_string(const json_t *pod, const char *part, const char *key)
{
        return json_string_value(json_object_get(json_object_get(pod, part), key));
}

static bool is_bound(const json_t *pod)
{
        const char *node = pod_string(pod, "spec", "nodeName");

        return node && node[0];
}

static bool is_finished(const json_t *pod)
{
        const char *phase = pod_string(pod, "status", "phase");

        return xp_streq0(phase, "Succeeded") || xp_streq0(phase, "Failed");
}

/* Unbound, not going away, and asking for this scheduler. */
static bool is_ours_pending(const json_t *pod)
{
        const char *scheduler = pod_string(pod, "spec", "schedulerName");

        if (is_bound(pod) || is_finished(pod) ||
            json_object_get(json_object_get(pod, "metadata"), "deletionTimestamp"))
                return false;
        return !scheduler || !scheduler[0] || strcmp(scheduler, "xpool") == 0 ||
               strcmp(scheduler, "default-scheduler") == 0;
}

static void pending_free(struct pending *p)
{
        if (!p)
                return;
        free(p->key);
        free(p->namespace);
        free(p->name);
        json_decref(p->pod);
        xp_pod_free(p->decoded);
        free(p->message);
        free(p);
}

static struct pending *queue_find(struct scheduler *s, const char *ns, const char *name)
{
        char key[2 * NAME_MAX_LEN + 2];
        struct pending *p;

        if (snprintf(key, sizeof key, "%s/%s", ns, name) >= (int)sizeof key)
                return NULL; /* longer than any name the store accepts: never queued */
        p = smap_get(&s->index, key);
        return p && !p->drop ? p : NULL;
}

/* Takes p out of the index and the array (the last entry fills its slot) and frees it. */
static void queue_delete(struct scheduler *s, struct pending *p)
{
        struct pending *last = s->queue[--s->n_queue];

        (void)smap_del(&s->index, p->key);
        s->queue[p->slot] = last;
        last->slot = p->slot;
        pending_free(p);
}

static void queue_clear(struct scheduler *s)
{
        for (size_t i = 0; i < s->n_queue; i++)
                pending_free(s->queue[i]);
        s->n_queue = 0;
        smap_done(&s->index);
}

static bool same_member(const json_t *a, const json_t *b, const char *part, const char *key)
{
        const json_t *x = json_object_get(a, part), *y = json_object_get(b, part);

        if (key) {
                x = json_object_get(x, key);
                y = json_object_get(y, key);
        }
        return (!x && !y) || (x && y && json_equal(x, y));
}

/* A change that may make a waiting pod schedulable: its spec, labels or annotations. */
static bool pod_request_changed(const json_t *old, const json_t *new)
{
        return !same_member(old, new, "spec", NULL) ||
               !same_member(old, new, "metadata", "labels") ||
               !same_member(old, new, "metadata", "annotations");
}

/* Records the pod's newest state in the queue (a new entry is tried at once). */
static int
queue_upsert(struct scheduler *s, const char *ns, const char *name, json_t *pod, uint64_t version)
{
        struct pending *p = queue_find(s, ns, name), *old;
        json_t *priority = json_object_get(json_object_get(pod, "spec"), "priority");
        int r;

        if (p) {
                if (version <= p->version)
                        return 0;
                if (pod_request_changed(p->pod, pod))
                        p->waiting = false;
                json_decref(p->pod);
                p->pod = json_incref(pod);
                p->version = version;
                p->priority = json_is_integer(priority) ? json_integer_value(priority) : 0;
                return 0;
        }
        if (strlen(ns) > NAME_MAX_LEN || strlen(name) > NAME_MAX_LEN)
                return -ENAMETOOLONG;
        if (s->n_queue == s->cap_queue) {
                size_t cap = s->cap_queue ? s->cap_queue * 2 : 16;
                struct pending **bigger = realloc(s->queue, cap * sizeof *bigger);

                if (!bigger)
                        return -ENOMEM;
                s->queue = bigger;
                s->cap_queue = cap;
        }
        p = calloc(1, sizeof *p);
        if (!p)
                return -ENOMEM;
        *p = (struct pending){
            .namespace = strdup(ns),
            .name = strdup(name),
            .version = version,
            .first_version = version,
            .priority = json_is_integer(priority) ? json_integer_value(priority) : 0,
            .slot = s->n_queue,
        };
        if (!p->namespace || !p->name || asprintf(&p->key, "%s/%s", ns, name) < 0) {
                p->key = NULL;
                pending_free(p);
                return -ENOMEM;
        }
        /* a dropped entry of the same key may still wait for the end of a pass: replace it */
        old = smap_get(&s->index, p->key);
        if (old)
                queue_delete(s, old);
        r = smap_put(&s->index, p->key, p);
        if (r < 0) {
                pending_free(p);
                return r;
        }
        p->slot = s->n_queue;
        p->pod = json_incref(pod);
        s->queue[s->n_queue++] = p;
        return 0;
}

static void queue_remove(struct scheduler *s, const char *ns, const char *name)
{
        struct pending *p = queue_find(s, ns, name);

        if (p)
                queue_delete(s, p);
}

/* ---- following the store -------------------------------------------------------------------- */

static void node_seen(struct scheduler *s, const json_t *json, bool deleted)
{
        _cleanup_(xp_node_freep) struct xp_node *node = NULL;
        struct xp_error err = {0};
        const char *name = pod_string(json, "metadata", "name");
        int r;

        if (!name)
                return;
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

static void pod_seen(struct scheduler *s, json_t *json, uint64_t version, bool deleted)
{
        _cleanup_(xp_pod_freep) struct xp_pod *pod = NULL;
        struct xp_error err = {0};
        const char *ns = pod_string(json, "metadata", "namespace");
        const char *name = pod_string(json, "metadata", "name");
        int r;

        if (!ns || !name)
                return;
        if (deleted || !is_bound(json) || is_finished(json)) {
                /* a pod that held capacity and no longer does: the waiting may fit now */
                if (xp_sched_pod_remove(s->sched, ns, name) == 0)
                        s->changed = true;
        }
        if (!deleted && is_ours_pending(json)) {
                r = queue_upsert(s, ns, name, json, version);
                if (r < 0)
                        xp_log(LOG_WARNING,
                               "scheduler: pod %s/%s not queued: %s",
                               ns,
                               name,
                               strerror(-r));
                return;
        }
        queue_remove(s, ns, name);
        if (deleted || !is_bound(json) || is_finished(json))
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

/* Lists one kind and feeds every object to the snapshot and the queue; *ret_version: the list's.
 */
static int
list_kind(struct scheduler *s, const char *kind, uint64_t *ret_version, struct xp_error *err)
{
        json_t *items, *item;
        uint64_t version;
        size_t i;
        int r;

        r = xp_store_list(s->api->store, kind, NULL, &items, &version, err);
        if (r < 0)
                return r;
        json_array_foreach(items, i, item)
        {
                uint64_t item_version = 0;
                const char *text = pod_string(item, "metadata", "resourceVersion");

                if (text)
                        (void)xp_registry_version_parse(text, &item_version);
                if (strcmp(kind, "nodes") == 0)
                        node_seen(s, item, false);
                else
                        pod_seen(s, item, item_version, false);
        }
        json_decref(items);
        *ret_version = version;
        return 0;
}

/* A fresh snapshot from the current state: at start, and when the event log moved past us. */
static int resync(struct scheduler *s, struct xp_error *err)
{
        struct xp_sched_options options = {.profile = XP_SCHED_SPREAD};
        struct xp_sched *sched;
        int r;

        r = xp_sched_new(&options, &sched);
        if (r < 0)
                return r;
        xp_sched_free(s->sched);
        s->sched = sched;
        /* what is still pending comes back from the list */
        queue_clear(s);
        r = list_kind(s, "nodes", &s->nodes_seen, err);
        if (r >= 0)
                r = list_kind(s, "pods", &s->pods_seen, err);
        s->changed = true;
        return r;
}

/* Reads what happened to one kind since *seen. 1 when something was read, 0 when nothing. */
static int follow(struct scheduler *s, const char *kind, uint64_t *seen, struct xp_error *err)
{
        struct xp_store_event *events;
        size_t n;
        uint64_t through;
        int r, any = 0;

        do {
                r = xp_store_events_scan(
                    s->api->store, kind, NULL, *seen, EVENT_BATCH, &events, &n, &through, err);
                if (r < 0)
                        return r;
                for (size_t i = 0; i < n; i++) {
                        bool deleted = events[i].type == XP_STORE_DELETED;

                        if (strcmp(kind, "nodes") == 0)
                                node_seen(s, events[i].object, deleted);
                        else
                                pod_seen(s, events[i].object, events[i].resource_version, deleted);
                }
                xp_store_events_free(events, n);
                *seen = through;
                any |= n > 0;
        } while (n == EVENT_BATCH);
        return any;
}

/* ---- writes --------------------------------------------------------------------------------- */

/* Creates the Event, or adds count to the one already reporting this. */
static int record_event(struct scheduler *s,
                        const json_t *pod,
                        const char *type,
                        const char *reason,
                        const char *message,
                        int64_t count)
{
        const struct xp_registry_event event = {
            .kind = "Pod",
            .namespace = pod_string(pod, "metadata", "namespace"),
            .name = pod_string(pod, "metadata", "name"),
            .uid = pod_string(pod, "metadata", "uid"),
            .resource_version = pod_string(pod, "metadata", "resourceVersion"),
            .component = SCHEDULER_NAME,
            .type = type,
            .reason = reason,
            .message = message,
            .count = count,
        };
        struct xp_error err = {0};
        int r;

        r = xp_registry_event_record(s->api->registry, &event, &err);
        if (r < 0)
                xp_log(LOG_WARNING,
                       "scheduler: event of %s/%s (%s) not written: %s",
                       event.namespace,
                       event.name,
                       reason,
                       err.msg[0] ? err.msg : strerror(-r));
        return r;
}

/* Reads the pod again after a stale write: 1 when still pending (entry refreshed), 0 when it was
 * dropped (bound elsewhere, deleted, no longer ours). */
static int refresh(struct scheduler *s, struct pending *p)
{
        json_t *pod;
        uint64_t version;
        int r;

        r = xp_store_get(s->api->store, "pods", p->namespace, p->name, &pod, &version, NULL);
        if (r == -ENOENT || (r >= 0 && !is_ours_pending(pod))) {
                p->drop = true;
                if (r >= 0)
                        json_decref(pod);
                return 0;
        }
        if (r < 0)
                return r;
        json_decref(p->pod);
        p->pod = pod;
        p->version = version;
        return 1;
}

/* The pod's PodScheduled condition, or NULL. */
static json_t *pod_scheduled_condition(const json_t *pod)
{
        json_t *conditions = json_object_get(json_object_get(pod, "status"), "conditions");

        for (size_t i = 0; i < json_array_size(conditions); i++) {
                json_t *c = json_array_get(conditions, i);

                if (xp_streq0(json_string_value(json_object_get(c, "type")), "PodScheduled"))
                        return c;
        }
        return NULL;
}

/* True when the pod's PodScheduled condition already says Unschedulable with this message. */
static bool says_unschedulable(const json_t *pod, const char *message)
{
        const json_t *c = pod_scheduled_condition(pod);

        return c && xp_streq0(json_string_value(json_object_get(c, "status")), "False") &&
               xp_streq0(json_string_value(json_object_get(c, "reason")), "Unschedulable") &&
               xp_streq0(json_string_value(json_object_get(c, "message")), message);
}

/* PodScheduled=False with the reason, through a write that changes nothing else. */
static int write_unschedulable(struct scheduler *s, struct pending *p, const char *message)
{
        struct xp_error err = {0};
        char now[XP_RFC3339_MAX];
        int r = -ESTALE;

        xp_time_format_rfc3339(time(NULL), now);
        for (unsigned attempt = 0; attempt < WRITE_ATTEMPTS && r == -ESTALE; attempt++) {
                json_t *pod, *status, *conditions, *condition, *old = NULL;
                const char *transition = now;
                uint64_t version;
                size_t i;

                if (attempt > 0) {
                        r = refresh(s, p);
                        if (r <= 0)
                                return r;
                }
                if (says_unschedulable(p->pod, message))
                        return 0;
                old = pod_scheduled_condition(p->pod);
                if (old && xp_streq0(json_string_value(json_object_get(old, "status")), "False") &&
                    json_string_value(json_object_get(old, "lastTransitionTime")))
                        transition = json_string_value(json_object_get(old, "lastTransitionTime"));
                pod = json_deep_copy(p->pod);
                if (!pod)
                        return -ENOMEM;
                status = json_object_get(pod, "status");
                if (!json_is_object(status)) {
                        status = json_object();
                        json_object_set_new(pod, "status", status);
                }
                conditions = json_object_get(status, "conditions");
                if (!json_is_array(conditions)) {
                        conditions = json_array();
                        json_object_set_new(status, "conditions", conditions);
                }
                condition = json_pack("{s:s, s:s, s:n, s:s, s:s, s:s}",
                                      "type",
                                      "PodScheduled",
                                      "status",
                                      "False",
                                      "lastProbeTime",
                                      "lastTransitionTime",
                                      transition,
                                      "reason",
                                      "Unschedulable",
                                      "message",
                                      message);
                json_array_foreach(
                    conditions,
                    i,
                    old) if (xp_streq0(json_string_value(json_object_get(old, "type")),
                                       "PodScheduled")) break;
                if (!condition || !json_is_array(conditions) ||
                    (i < json_array_size(conditions)
                         ? json_array_set_new(conditions, i, condition)
                         : json_array_append_new(conditions, condition)) < 0) {
                        json_decref(pod);
                        return -ENOMEM;
                }
                r = xp_store_update(
                    s->api->store, "pods", p->namespace, p->name, p->version, pod, &version, &err);
                if (r == 0) {
                        json_decref(p->pod);
                        p->pod = json_incref(pod);
                        p->version = version;
                }
                json_decref(pod);
                if (r == -ENOENT) {
                        p->drop = true;
                        return 0;
                }
        }
        if (r < 0)
                xp_log(LOG_WARNING,
                       "scheduler: the status of pod %s/%s not written: %s",
                       p->namespace,
                       p->name,
                       err.msg[0] ? err.msg : strerror(-r));
        return r;
}

/*
 * The failures not yet in the Event, once EVENT_INTERVAL_MS passed since it was written (or
 * force): their count, taken (0: none due).
 */
static int64_t take_failures(struct pending *p, bool force)
{
        int64_t now = xp_monotonic_ms(), count = p->failures_unwritten;

        if (count == 0 || !p->message || (!force && now - p->event_written_ms < EVENT_INTERVAL_MS))
                return 0;
        p->failures_unwritten = 0;
        p->event_written_ms = now;
        return count;
}

static void job_enqueue(struct scheduler *s, struct bind_job *job);
static void bind_job_free(struct bind_job *job);

/*
 * Hands the workers what a failure of p has to write: its status (when it does not say message
 * yet) and the Event's count when due. Neither waits for a commit in this loop.
 */
static void
write_failure(struct scheduler *s, struct pending *p, const char *status_message, bool force_event)
{
        int64_t count = take_failures(p, force_event);
        struct bind_job *job;

        if (status_message && says_unschedulable(p->pod, status_message))
                status_message = NULL;
        if (!status_message && count == 0)
                return;
        job = calloc(1, sizeof *job);
        if (!job)
                return;
        job->namespace = strdup(p->namespace);
        job->name = strdup(p->name);
        job->pod = json_incref(p->pod);
        job->version = p->version;
        job->unschedulable = status_message ? strdup(status_message) : NULL;
        job->event_message = count > 0 ? strdup(p->message) : NULL;
        job->event_count = count;
        if (!job->namespace || !job->name || (status_message && !job->unschedulable) ||
            (count > 0 && !job->event_message)) {
                bind_job_free(job);
                return;
        }
        s->inflight++;
        job_enqueue(s, job);
}

static void unschedulable(struct scheduler *s, struct pending *p, const char *message)
{
        bool repeat = xp_streq0(p->message, message);

        p->waiting = true;
        xp_debug("sched", "pod %s/%s unschedulable: %s", p->namespace, p->name, message);
        if (!repeat) {
                char *copy = strdup(message);

                if (!copy)
                        return;
                write_failure(s, p, NULL, true); /* the old message's count */
                free(p->message);
                p->message = copy;
        }
        p->failures_unwritten++;
        write_failure(s, p, message, !repeat);
}

/* ---- binding workers --------------------------------------------------------------------------
 */

static void bind_job_free(struct bind_job *job)
{
        if (!job)
                return;
        free(job->namespace);
        free(job->name);
        free(job->node);
        json_decref(job->annotations);
        json_decref(job->pod);
        free(job->unschedulable);
        free(job->event_message);
        free(job);
}

static void job_enqueue(struct scheduler *s, struct bind_job *job)
{
        pthread_mutex_lock(&s->lock);
        if (s->jobs_tail)
                s->jobs_tail->next = job;
        else
                s->jobs = job;
        s->jobs_tail = job;
        pthread_cond_signal(&s->wake);
        pthread_mutex_unlock(&s->lock);
}

/* The FailedScheduling Event's count the job carries, if any. */
static void record_failures(struct scheduler *s, const json_t *pod, const struct bind_job *job)
{
        if (job->event_message)
                (void)record_event(
                    s, pod, "Warning", "FailedScheduling", job->event_message, job->event_count);
}

/* A failure's writes: the status first (a pod gone or bound meanwhile gets no Event), the Event. */
static void run_failure_job(struct scheduler *s, struct bind_job *job)
{
        /* write_unschedulable() works on an entry of its own: the loop's stays the loop's */
        struct pending p = {.namespace = job->namespace,
                            .name = job->name,
                            .pod = json_incref(job->pod),
                            .version = job->version};

        job->result = job->unschedulable ? write_unschedulable(s, &p, job->unschedulable) : 0;
        if (job->result >= 0 && !p.drop)
                record_failures(s, p.pod, job);
        json_decref(p.pod);
}

static void *bind_worker(void *userdata)
{
        struct scheduler *s = userdata;

        pthread_mutex_lock(&s->lock);
        for (;;) {
                struct bind_job *job;
                struct xp_error err = {0};
                json_t *bound = NULL;

                while (!s->jobs && !s->workers_stop)
                        pthread_cond_wait(&s->wake, &s->lock);
                job = s->jobs;
                if (!job)
                        break; /* stopping, and nothing left */
                s->jobs = job->next;
                if (!s->jobs)
                        s->jobs_tail = NULL;
                pthread_mutex_unlock(&s->lock);

                if (!job->node) {
                        run_failure_job(s, job);
                        pthread_mutex_lock(&s->lock);
                        job->next = s->done;
                        s->done = job;
                        continue;
                }
                record_failures(s, job->pod, job);
                job->result = xp_registry_pod_bind(s->api->registry,
                                                   job->namespace,
                                                   job->name,
                                                   job->node,
                                                   job->annotations,
                                                   job->version,
                                                   &bound,
                                                   &err);
                if (job->result == 0) {
                        char message[2 * NAME_MAX_LEN + 64];

                        snprintf(message,
                                 sizeof message,
                                 "Successfully assigned %s/%s to %s",
                                 job->namespace,
                                 job->name,
                                 job->node);
                        (void)record_event(s, bound, "Normal", "Scheduled", message, 1);
                        xp_debug("sched", "%s", message);
                } else {
                        snprintf(job->message,
                                 sizeof job->message,
                                 "%s",
                                 err.msg[0] ? err.msg : strerror(-job->result));
                }
                json_decref(bound);

                pthread_mutex_lock(&s->lock);
                job->next = s->done;
                s->done = job;
        }
        pthread_mutex_unlock(&s->lock);
        return NULL;
}

/*
 * Accounts p as placed on node (the snapshot must see the devices taken before the next
 * decision) and hands its binding to the workers.
 */
static int dispatch(struct scheduler *s, struct pending *p, const char *node, const char *placement)
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
        job->event_count = take_failures(p, true);
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
        job_enqueue(s, job);
        return 0;
}

/* Accounts the pod as the store has it now (bound: its placement; otherwise nothing). */
static void account_stored(struct scheduler *s, const char *ns, const char *name)
{
        _cleanup_(xp_pod_freep) struct xp_pod *pod = NULL;
        json_t *json;
        uint64_t version;

        (void)xp_sched_pod_remove(s->sched, ns, name);
        s->changed = true;
        if (xp_store_get(s->api->store, "pods", ns, name, &json, &version, NULL) < 0)
                return;
        if (is_bound(json) && !is_finished(json) &&
            xp_pod_from_json(json, NULL, XP_DECODE_TRUSTED, &pod, NULL) >= 0)
                (void)xp_sched_pod_add(s->sched, pod, NULL);
        json_decref(json);
}

/* Takes in what the workers finished: failed bindings go back to the queue. */
static void collect(struct scheduler *s)
{
        struct bind_job *job, *next;

        pthread_mutex_lock(&s->lock);
        job = s->done;
        s->done = NULL;
        pthread_mutex_unlock(&s->lock);
        for (; job; job = next) {
                struct pending *p = queue_find(s, job->namespace, job->name);
                int r = job->result;

                next = job->next;
                s->inflight--;
                if (!job->node) {
                        /* a failure's writes: their events come back as the pod's */
                        bind_job_free(job);
                        continue;
                }
                if (r == 0) {
                        /* its MODIFIED event may not have come yet */
                        if (p)
                                queue_delete(s, p);
                        bind_job_free(job);
                        continue;
                }
                /* the assumed placement did not happen: account what did */
                account_stored(s, job->namespace, job->name);
                if (p) {
                        p->inflight = false;
                        if (r == -ENOENT || r == -EALREADY || r == -EBUSY) {
                                queue_delete(s, p); /* deleted or bound meanwhile */
                        } else if (r == -ESTALE) {
                                if (refresh(s, p) == 0)
                                        queue_delete(s, p);
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

static void workers_stop(struct scheduler *s)
{
        pthread_mutex_lock(&s->lock);
        s->workers_stop = true;
        pthread_cond_broadcast(&s->wake);
        pthread_mutex_unlock(&s->lock);
        for (size_t i = 0; i < s->n_workers; i++)
                pthread_join(s->workers[i], NULL);
        s->n_workers = 0;
        while (s->done) {
                struct bind_job *job = s->done;

                s->done = job->next;
                bind_job_free(job);
        }
        while (s->jobs) {
                struct bind_job *job = s->jobs;

                s->jobs = job->next;
                bind_job_free(job);
        }
}

/* Places one pending pod: a binding, or an unschedulable one's status and Event, handed on. */
static void schedule_one(struct scheduler *s, struct pending *p)
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
        if (r >= 0)
                r = xp_sched_place(s->sched, p->decoded, &placement, &reason, &err);
        if (r == -EINVAL) {
                unschedulable(s, p, err.msg[0] ? err.msg : "the pod's request is invalid");
                return;
        }
        if (r < 0) {
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
                unschedulable(s, p, reason);
                return;
        }
        r = xp_placement_to_json(&placement, &text);
        if (r >= 0)
                r = dispatch(s, p, placement.node, text);
        xp_placement_done(&placement);
        if (r < 0) {
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
static void schedule_pass(struct scheduler *s)
{
        _cleanup_free_ struct pending **active = NULL;
        size_t n = 0;

        if (s->changed && xp_monotonic_ms() - s->retried_ms >= RETRY_MS) {
                for (size_t i = 0; i < s->n_queue; i++)
                        s->queue[i]->waiting = false;
                s->changed = false;
                s->retried_ms = xp_monotonic_ms();
        }
        active = calloc(s->n_queue ? s->n_queue : 1, sizeof *active);
        if (!active)
                return;
        for (size_t i = 0; i < s->n_queue; i++)
                if (!s->queue[i]->waiting && !s->queue[i]->drop && !s->queue[i]->inflight)
                        active[n++] = s->queue[i];
        qsort(active, n, sizeof *active, pending_compare);
        /* the rest waits for the workers to catch up (the next pass, after their writes) */
        for (size_t i = 0; i < n && !atomic_load(&s->stop) && s->inflight < INFLIGHT_MAX; i++)
                schedule_one(s, active[i]);
        /* only the pods tried can have been dropped */
        for (size_t i = 0; i < n; i++)
                if (active[i]->drop)
                        queue_delete(s, active[i]);
        for (size_t i = 0; i < s->n_queue; i++)
                if (!s->queue[i]->inflight)
                        write_failure(s, s->queue[i], NULL, false);
}

static void *scheduler_main(void *userdata)
{
        struct scheduler *s = userdata;

        while (!atomic_load(&s->stop)) {
                struct xp_error err = {0};
                int r;

                r = follow(s, "nodes", &s->nodes_seen, &err);
                if (r >= 0)
                        r = follow(s, "pods", &s->pods_seen, &err);
                if (r == -XP_STORE_EXPIRED) {
                        xp_log(LOG_INFO, "scheduler: the event log moved past us: listing again");
                        r = resync(s, &err);
                }
                if (r < 0) {
                        xp_log(LOG_WARNING,
                               "scheduler: reading the store: %s",
                               err.msg[0] ? err.msg : strerror(-r));
                        (void)xp_store_wait(s->api->store, UINT64_MAX, WAKE_MS);
                        continue;
                }
                collect(s);
                schedule_pass(s);
                /* Wait for news; wake early while a retry is due. */
                (void)xp_store_wait(s->api->store,
                                    s->nodes_seen < s->pods_seen ? s->nodes_seen : s->pods_seen,
                                    s->changed ? RETRY_MS / 2 : WAKE_MS);
        }
        return NULL;
}

int scheduler_start(struct api *api, struct scheduler **ret, struct xp_error *err)
{
        struct scheduler *s;
        int r;

        s = calloc(1, sizeof *s);
        if (!s)
                return -ENOMEM;
        s->api = api;
        pthread_mutex_init(&s->lock, NULL);
        pthread_cond_init(&s->wake, NULL);
        r = resync(s, err);
        for (size_t i = 0; r >= 0 && i < BIND_WORKERS; i++) {
                r = -pthread_create(&s->workers[i], NULL, bind_worker, s);
                if (r < 0)
                        xp_errorf(err, r, "cannot start the scheduler's binding threads");
                else
                        s->n_workers++;
        }
        if (r >= 0) {
                r = -pthread_create(&s->thread, NULL, scheduler_main, s);
                if (r < 0)
                        xp_errorf(err, r, "cannot start the scheduler thread");
        }
        if (r < 0) {
                atomic_store(&s->stop, true);
                s->thread = 0;
                scheduler_stop(s);
                return r;
        }
        *ret = s;
        return 0;
}

void scheduler_stop(struct scheduler *s)
{
        if (!s)
                return;
        if (!atomic_exchange(&s->stop, true))
                pthread_join(s->thread, NULL);
        workers_stop(s); /* bindings in flight are written (or fail) before the store closes */
        pthread_cond_destroy(&s->wake);
        pthread_mutex_destroy(&s->lock);
        queue_clear(s);
        free(s->queue);
        xp_sched_free(s->sched);
        free(s);
}
