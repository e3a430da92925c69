/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the scheduling loop writes, and the threads that write it: bindings (through the
 * registry, with the version decided on as precondition; a pod whose status alone was
 * written since is bound as it is now, as kube's Binding), the PodScheduled=False status of a pod
 * that does not fit, and the Scheduled and FailedScheduling Events.
 *
 * Why bindings are written by workers: deciding is fast, but a durable write waits for its
 * commit's fsync. The loop decides serially on its snapshot and hands the writes to the workers,
 * whose concurrent writes share the store's group commits; the loop collects what they finished
 * (scheduler.c). Without workers (a test's choice) each write is made at once, in the loop.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "informer.h"
#include "scheduler_state.h"
#include "xpool/codec.h"
#include "xpool/log.h"
#include "xpool/registry.h"
#include "xpool/sched.h"
#include "xpool/store.h"
#include "xpool/strutil.h"
#include "xpool/timeutil.h"

#define WRITE_ATTEMPTS 8 /* stale writes redone with fresh state before giving up */

/* ---- Events --------------------------------------------------------------------------------- */

static char host[256];
static pthread_once_t host_once = PTHREAD_ONCE_INIT;

static void host_read(void)
{
        if (gethostname(host, sizeof(host) - 1) < 0 || !host[0])
                snprintf(host, sizeof(host), "localhost");
}

const char *scheduler_host(void)
{
        pthread_once(&host_once, host_read);
        return host;
}

/* The name kube-scheduler reports as: its profile's, which is the pod's schedulerName when it is
 * one of ours; never another component's name (a pod saying "kubelet" would forge its Events). */
static const char *reporter_of(const json_t *pod)
{
        const char *name = pod_string(pod, "spec", "schedulerName");

        return scheduler_name_is_ours(name) ? name : SCHEDULER_NAME;
}

/* The Event about pod the scheduler reports. */
static struct xp_registry_event event_about(
    const json_t *pod, const char *type, const char *reason, const char *message, int64_t count)
{
        return (struct xp_registry_event){
            .kind = "Pod",
            .namespace = pod_string(pod, "metadata", "namespace"),
            .name = pod_string(pod, "metadata", "name"),
            .uid = pod_string(pod, "metadata", "uid"),
            .resource_version = pod_string(pod, "metadata", "resourceVersion"),
            .component = reporter_of(pod),
            .reporting_host = scheduler_host(),
            .type = type,
            .reason = reason,
            .message = message,
            .count = count,
        };
}

/* Creates the Event, or adds count to the one already reporting this. */
static int record_event(struct xp_scheduler *s,
                        const json_t *pod,
                        const char *type,
                        const char *reason,
                        const char *message,
                        int64_t count)
{
        const struct xp_registry_event event = event_about(pod, type, reason, message, count);
        struct xp_error err = {0};
        int r;

        r = xp_registry_event_record(s->registry, &event, &err);
        if (r < 0)
                xp_log(LOG_WARNING,
                       "scheduler: event of %s/%s (%s) not written: %s",
                       event.namespace,
                       event.name,
                       reason,
                       err.msg[0] ? err.msg : strerror(-r));
        return r;
}

/* The FailedScheduling Event's count the job carries, if any. */
static void record_failures(struct xp_scheduler *s, const json_t *pod, const struct bind_job *job)
{
        if (job->event_message)
                (void)record_event(
                    s, pod, "Warning", "FailedScheduling", job->event_message, job->event_count);
}

int64_t failures_take(struct xp_scheduler *s, struct pending *p, bool force)
{
        int64_t count = p->failures_unwritten, now;
        int64_t interval = p->event_interval_ms ? p->event_interval_ms : EVENT_INTERVAL_MS;

        /* every pass asks this of every pending pod: most have nothing to write */
        if (count == 0 || !p->message)
                return 0;
        now = xp_clock_monotonic_ms(s->clock);
        if (!force && now - p->event_written_ms < interval)
                return 0;
        p->failures_unwritten = 0;
        p->event_written_ms = now;
        /* a pod that keeps failing alike updates its Event ever less often, as kube's event
         * correlator rate-limits one object's repeats: thousands of waiting pods would otherwise
         * cost a store write each every EVENT_INTERVAL_MS */
        p->event_interval_ms = force                                  ? EVENT_INTERVAL_MS
                               : 2 * interval > EVENT_INTERVAL_MAX_MS ? EVENT_INTERVAL_MAX_MS
                                                                      : 2 * interval;
        return count;
}

/* ---- PodScheduled=False --------------------------------------------------------------------- */

int pending_refresh(struct xp_scheduler *s, struct pending *p)
{
        json_t *pod;
        uint64_t version;
        int r;

        /* read-only, as every pod the entry holds (the informer's): the store's readers' own
         * object when the ring has it, not a parse of its text */
        r = xp_store_get_shared(
            xp_registry_store(s->registry), "pods", p->namespace, p->name, &pod, &version, NULL);
        if (r == -ENOENT || (r >= 0 && !pod_is_ours_pending(pod))) {
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

/* json_copy() of member key of object set into it (a new one of empty when it is not of its
 * type): 0, or -1 without memory. */
static int own_member(json_t *object, const char *key, json_t *empty)
{
        json_t *member = json_object_get(object, key), *own = NULL;

        if (!empty)
                return -1;
        if (member && json_typeof(member) == json_typeof(empty))
                own = json_copy(member);

        if (own) {
                json_decref(empty);
                empty = own;
        }
        return json_object_set_new(object, key, empty);
}

/*
 * A copy of pod whose PodScheduled condition is False, Unschedulable, message (in place of the
 * one it has, else added), or NULL without memory. What the write changes is the copy's own (the
 * object, its metadata, which gets the version written, its status and conditions), the rest
 * (spec, the other conditions) is shared with pod, as the informer's objects are: read-only. A
 * deep copy of every waiting pod's containers and volumes cost more than the write.
 */
static json_t *unschedulable_copy(const json_t *pod, const char *message, const char *now)
{
        json_t *copy, *status, *conditions, *condition, *old = pod_scheduled_condition(pod);
        const char *transition = now;
        size_t i;

        /* still False: the transition was the earlier one */
        if (old && xp_streq0(json_string_value(json_object_get(old, "status")), "False") &&
            json_string_value(json_object_get(old, "lastTransitionTime")))
                transition = json_string_value(json_object_get(old, "lastTransitionTime"));
        copy = json_copy((json_t *)pod);
        if (!copy || own_member(copy, "metadata", json_object()) < 0 ||
            own_member(copy, "status", json_object()) < 0) {
                json_decref(copy);
                return NULL;
        }
        status = json_object_get(copy, "status");
        if (own_member(status, "conditions", json_array()) < 0) {
                json_decref(copy);
                return NULL;
        }
        conditions = json_object_get(status, "conditions");
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
            conditions, i, old) if (xp_streq0(json_string_value(json_object_get(old, "type")),
                                              "PodScheduled")) break;
        if (!condition || !json_is_array(conditions) ||
            (i < json_array_size(conditions) ? json_array_set_new(conditions, i, condition)
                                             : json_array_append_new(conditions, condition)) < 0) {
                json_decref(copy);
                return NULL;
        }
        return copy;
}

/* The write of pod, with the job's FailedScheduling Event in the same commit when it has one
 * (*ret_reported then true). */
static int update_reported(struct xp_scheduler *s,
                           struct pending *p,
                           json_t *pod,
                           const struct bind_job *job,
                           uint64_t *ret_version,
                           bool *ret_reported,
                           struct xp_error *err)
{
        struct xp_registry_event event;
        int r;

        if (!job || !job->event_message) {
                /* written, the pod is the store's readers' too: they need not parse it again */
                struct xp_store_written written = {.share = true};

                r = xp_store_update_text(xp_registry_store(s->registry),
                                         "pods",
                                         p->namespace,
                                         p->name,
                                         p->version,
                                         pod,
                                         &written,
                                         err);
                *ret_version = written.version;
                return r;
        }
        /* about the pod as decided on, as the Event written after the update was */
        event = event_about(
            p->pod, "Warning", "FailedScheduling", job->event_message, job->event_count);
        r = xp_registry_pod_update_reported(s->registry, pod, p->version, &event, ret_version, err);
        *ret_reported = r == 0;
        return r;
}

/*
 * PodScheduled=False with the reason, through a write that changes nothing else; the job's
 * Event (job may be NULL) in the same commit, *ret_reported then true.
 */
static int write_unschedulable(struct xp_scheduler *s,
                               struct pending *p,
                               const char *message,
                               const struct bind_job *job,
                               bool *ret_reported)
{
        struct xp_error err = {0};
        char now[XP_RFC3339_MAX];
        int r = -ESTALE;

        xp_time_format_rfc3339(xp_clock_wall_s(s->clock), now);
        for (unsigned attempt = 0; attempt < WRITE_ATTEMPTS && r == -ESTALE; attempt++) {
                json_t *pod;
                uint64_t version;

                if (attempt > 0) {
                        r = pending_refresh(s, p);
                        if (r <= 0)
                                return r;
                }
                if (says_unschedulable(p->pod, message))
                        return 0;
                pod = unschedulable_copy(p->pod, message, now);
                if (!pod)
                        return -ENOMEM;
                r = update_reported(s, p, pod, job, &version, ret_reported, &err);
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

/* As says_unschedulable() of p's pod, remembered for the pod's version: a waiting pod fails
 * again at every pass, and its conditions change only with its version. */
static bool pending_says(struct pending *p, const char *message)
{
        if (p->said && p->said_version == p->version && strcmp(p->said, message) == 0)
                return true;
        if (!says_unschedulable(p->pod, message))
                return false;
        free(p->said);
        p->said = strdup(message); /* without memory: unknown, walked again next time */
        p->said_version = p->version;
        return true;
}

void failure_write(struct xp_scheduler *s,
                   struct pending *p,
                   const char *status_message,
                   bool force_event)
{
        int64_t count = failures_take(s, p, force_event);
        struct bind_job *job;

        if (status_message && pending_says(p, status_message))
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
        job->event_message = count > 0 ? strdup(p->explain ? p->explain : p->message) : NULL;
        job->event_count = count;
        if (!job->namespace || !job->name || (status_message && !job->unschedulable) ||
            (count > 0 && !job->event_message)) {
                bind_job_free(job);
                return;
        }
        s->inflight++;
        /* the bindings decided before it go first, as they were decided: a pass's failures
         * (thousands, when a node came and the waiting pods were released) would otherwise all
         * be queued ahead of the pass's bindings, and the workers' queue is first in, first out */
        bind_batch_flush(s);
        bind_job_enqueue(s, job);
}

/* ---- the jobs ---------------------------------------------------------------------------------
 */

void bind_job_free(struct bind_job *job)
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

/* A failure's writes: the status first (a pod gone or bound meanwhile gets no Event), the Event. */
static void run_failure_job(struct xp_scheduler *s, struct bind_job *job)
{
        /* write_unschedulable() works on an entry of its own: the loop's stays the loop's */
        struct pending p = {.namespace = job->namespace,
                            .name = job->name,
                            .pod = json_incref(job->pod),
                            .version = job->version};

        bool reported = false;

        job->result =
            job->unschedulable ? write_unschedulable(s, &p, job->unschedulable, job, &reported) : 0;
        if (job->result >= 0 && !p.drop && !reported)
                record_failures(s, p.pod, job);
        json_decref(p.pod);
}

/* The Scheduled Event of a binding, as Kubernetes' scheduler reports it. */
static void scheduled_event(const struct bind_job *job,
                            char *message,
                            size_t size,
                            struct xp_registry_event *ret)
{
        snprintf(message,
                 size,
                 "Successfully assigned %s/%s to %s",
                 job->namespace,
                 job->name,
                 job->node);
        /* about the pod as decided on (its version before the binding), as kube-scheduler's */
        *ret = (struct xp_registry_event){
            .kind = "Pod",
            .namespace = job->namespace,
            .name = job->name,
            .uid = pod_string(job->pod, "metadata", "uid"),
            .resource_version = pod_string(job->pod, "metadata", "resourceVersion"),
            .component = reporter_of(job->pod),
            .reporting_host = scheduler_host(),
            .type = "Normal",
            .reason = "Scheduled",
            .message = message,
            .count = 1,
        };
}

/*
 * A job without the pod as decided on or its version takes the pod as stored now, and is then
 * bound as the others are: its Scheduled Event named before the binding's commit and written in
 * it. Named after the binding returned, the Event could be named after the agent's Created of
 * the pod and sort before it. 0, or the job's result (-ESTALE when the version it was decided on
 * is gone, the store's -errno).
 */
static int bind_job_read(struct xp_scheduler *s, struct bind_job *job)
{
        struct xp_error err = {0};
        json_t *pod;
        uint64_t version;
        int r = xp_store_get(xp_registry_store(s->registry),
                             "pods",
                             job->namespace,
                             job->name,
                             &pod,
                             &version,
                             &err);

        if (r >= 0 && job->version != 0 && version != job->version) {
                json_decref(pod);
                r = xp_errorf(&err,
                              -ESTALE,
                              "pod %s/%s changed: version %" PRIu64 ", expected %" PRIu64,
                              job->namespace,
                              job->name,
                              version,
                              job->version);
        }
        if (r < 0) {
                job->result = r;
                snprintf(
                    job->message, sizeof job->message, "%s", err.msg[0] ? err.msg : strerror(-r));
                return r;
        }
        json_decref(job->pod);
        job->pod = pod;
        job->version = version;
        return 0;
}

void (*scheduler_bound_hook)(struct xp_scheduler *s, const struct bind_job *job);

/* What a binding of the group came to. */
static void bind_result(struct bind_job *job, int r, const struct xp_registry_binding *b)
{
        job->result = r < 0 ? r : b->result;
        if (job->result == 0)
                xp_debug("sched", "pod %s/%s bound to %s", job->namespace, job->name, job->node);
        else
                snprintf(job->message,
                         sizeof job->message,
                         "%s",
                         r >= 0 && b->err.msg[0] ? b->err.msg : strerror(-job->result));
}

#define SCHEDULED_MESSAGE_MAX (2 * NAME_MAX_LEN + 64)

/* One binding of a group, with what it reports. */
struct bind_slot {
        struct xp_registry_binding binding;
        struct xp_registry_event scheduled, failed;
        char message[SCHEDULED_MESSAGE_MAX];
};

/* The slot's binding of job; false for a pod that could not be read (job->result says why). */
static bool bind_slot_fill(struct xp_scheduler *s, struct bind_job *job, struct bind_slot *slot)
{
        if ((!job->pod || !job->version) && bind_job_read(s, job) < 0) {
                record_failures(s, job->pod, job);
                return false;
        }
        scheduled_event(job, slot->message, sizeof slot->message, &slot->scheduled);
        slot->binding =
            (struct xp_registry_binding){.pod = job->pod,
                                         .version = job->version,
                                         .node = job->node,
                                         .annotations = job->annotations,
                                         .event = &slot->scheduled,
                                         /* a status written meanwhile (the loop's own failure
                                            status among them) does not send it back to wait */
                                         .same_spec_will_do = true};
        if (job->event_message) {
                slot->failed = event_about(
                    job->pod, "Warning", "FailedScheduling", job->event_message, job->event_count);
                slot->binding.before = &slot->failed;
        }
        return true;
}

/*
 * A group of bindings' writes, all in one group of the store's: the FailedScheduling counts of
 * the failures before each, and every binding with its Scheduled Event (one transaction, one
 * wait for the disk; an Event only if its binding is written; a binding that fails fails alone).
 * The pod as decided on is the store's at job->version: no read before the write.
 */
static void run_bind_jobs(struct xp_scheduler *s, struct bind_job *head)
{
        struct xp_registry_binding *b = NULL;
        struct bind_slot *slots;
        size_t n = 0, i = 0;
        int r = -ENOMEM;

        for (struct bind_job *job = head; job; job = job->batched)
                n++;
        slots = calloc(n, sizeof *slots);
        b = calloc(n, sizeof *b);
        for (struct bind_job *job = head; job && slots && b; job = job->batched)
                if (bind_slot_fill(s, job, &slots[i]))
                        b[i] = slots[i].binding, i++;
        if (slots && b)
                r = xp_registry_pod_bind_many(s->registry, b, i);
        if (scheduler_bound_hook && r >= 0)
                for (struct bind_job *job = head; job; job = job->batched)
                        scheduler_bound_hook(s, job);
        i = 0;
        for (struct bind_job *job = head; job; job = job->batched)
                if (!slots || !b || (job->pod && job->version))
                        bind_result(job, r, slots && b ? &b[i++] : NULL);
        free(slots);
        free(b);
}

/* While the scheduler stops, decided bindings are still written, but a failure's status and
 * Event are not: the next start writes them again, and with thousands of pods waiting (no node
 * fits) writing them one by one held a server's stop for half a minute. */
static void run_job(struct xp_scheduler *s, struct bind_job *job)
{
        if (job->node)
                run_bind_jobs(s, job);
        else if (!atomic_load(&s->stopping))
                run_failure_job(s, job);
}

static void run_work(void *userdata, void *ctx, struct xp_work *work)
{
        (void)ctx;
        run_job(userdata, (struct bind_job *)work);
}

/* The loop is woken to collect the job: one whose only write was an Event would otherwise wait
 * for the next pod's write (its informer follows pods, not Events). */
static void job_done(void *userdata, void *ctx, struct xp_work *work)
{
        struct xp_scheduler *s = userdata;
        struct bind_job *job = (struct bind_job *)work, *next;

        (void)ctx;
        /* a group's bindings are collected one by one */
        for (; job; job = next) {
                struct xp_work *head = atomic_load(&s->jobs_done);

                next = job->batched;
                job->batched = NULL;
                do
                        job->work.next = head;
                while (!atomic_compare_exchange_weak(&s->jobs_done, &head, &job->work));
        }
        xp_informer_wake(s->informer);
}

static void free_work(struct xp_work *work)
{
        for (struct bind_job *job = (struct bind_job *)work, *next; job; job = next) {
                next = job->batched;
                bind_job_free(job);
        }
}

static const struct xp_workers_ops bind_workers = {
    .run = run_work, .done = job_done, .free = free_work};

void bind_job_enqueue(struct xp_scheduler *s, struct bind_job *job)
{
        xp_workers_submit(s->workers, &job->work);
}

void bind_batch_add(struct xp_scheduler *s, struct bind_job *job)
{
        if (!s->batch)
                s->batch_tail = &s->batch;
        *s->batch_tail = job;
        s->batch_tail = &job->batched;
        if (++s->n_batch >= BIND_BATCH_MAX)
                bind_batch_flush(s);
}

void bind_batch_flush(struct xp_scheduler *s)
{
        struct bind_job *batch = s->batch;

        s->batch = NULL;
        s->n_batch = 0;
        if (batch)
                bind_job_enqueue(s, batch);
}

struct bind_job *bind_jobs_done(struct xp_scheduler *s)
{
        return (struct bind_job *)atomic_exchange(&s->jobs_done, NULL);
}

int bind_jobs_start(struct xp_scheduler *s, unsigned n, struct xp_error *err)
{
        const struct xp_workers_options options = {
            .ops = &bind_workers, .userdata = s, .threads = n};
        int r = xp_workers_new(&options, &s->workers, err);

        return r < 0 ? xp_error_prefix(err, r, "the scheduler's binding threads") : 0;
}

void bind_jobs_stop(struct xp_scheduler *s)
{
        xp_workers_free(s->workers);
        s->workers = NULL;
        for (struct xp_work *w = atomic_exchange(&s->jobs_done, NULL), *next; w; w = next) {
                next = w->next;
                free_work(w);
        }
}

void account_stored(struct xp_scheduler *s, const char *ns, const char *name)
{
        _cleanup_(xp_pod_freep) struct xp_pod *pod = NULL;
        json_t *json;
        uint64_t version;

        (void)xp_sched_pod_remove(s->sched, ns, name);
        s->changed = true;
        if (xp_store_get(xp_registry_store(s->registry), "pods", ns, name, &json, &version, NULL) <
            0)
                return;
        if (pod_is_bound(json) && !pod_is_finished(json) &&
            xp_pod_from_json(json, NULL, XP_DECODE_TRUSTED, &pod, NULL) >= 0)
                (void)xp_sched_pod_add(s->sched, pod, NULL);
        json_decref(json);
}
