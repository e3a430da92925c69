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
 * tried again only after a node is added or changed (all of them) or a placed pod goes away (those
 * that what the nodes have free covers, in queue order: scheduler_release.c), and no sooner
 * after the last time than twice what its pass took (retry_gap_set(): 5 to 250 ms). Within a
 * pass, pods of a shape that just failed fail without a second look (scheduler_shape.c). Their
 * own status writes come back as MODIFIED events that change neither spec nor metadata, which
 * do not wake them.
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
#include "xpool/why.h"

#define WAKE_MS      100 /* longest sleep before checking for shutdown */
#define BUSY_POLL_MS 2   /* while the workers are busy: how soon to collect what they finished */

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
                node_forget(s, name);
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
                node_forget(s, name);
                (void)xp_sched_node_remove(s->sched, name);
                return;
        }
        if (node_update_matters(s, name, json))
                s->changed = true;
}

/* The loop's own binding of a pod coming back: the snapshot has its placement assumed already,
 * from the pod as decided on and the placement written, so decoding the pod again (and its
 * placement annotation) would only account the same again. A binding of someone else's that won
 * the race fails ours, and the failure accounts what the store has. */
static bool own_binding(struct xp_scheduler *s, const json_t *json, uint64_t version)
{
        const struct pending *p = pending_find(
            s, pod_string(json, "metadata", "namespace"), pod_string(json, "metadata", "name"));

        return p && p->inflight && p->bound_to && version > p->version && !pod_is_finished(json) &&
               xp_streq0(pod_string(json, "spec", "nodeName"), p->bound_to);
}

/*
 * An event of a pod, not bound in it, while the loop's binding of the pod is with the workers:
 * a write that landed before the binding (under load, most often the pod's own PodScheduled
 * status from an earlier failure, which then fails the binding as stale). What the loop assumed
 * stays accounted until the binding's outcome is collected: given back at this event, a
 * nominee's devices (its hold given back for the attempt) went to the next pod tried, the
 * victims' replacements, and the nominee waited out its nomination to evict again (issue 19).
 */
static bool binding_pending(struct xp_scheduler *s, const json_t *json, bool deleted)
{
        const struct pending *p;

        if (deleted || pod_is_bound(json) || pod_is_finished(json))
                return false;
        p = pending_find(
            s, pod_string(json, "metadata", "namespace"), pod_string(json, "metadata", "name"));
        return p && p->inflight;
}

void pod_seen(struct xp_scheduler *s, json_t *json, uint64_t version, bool deleted)
{
        _cleanup_(xp_pod_freep) struct xp_pod *pod = NULL;
        struct xp_error err = {0};
        const char *ns = pod_string(json, "metadata", "namespace");
        const char *name = pod_string(json, "metadata", "name");
        bool own, binding;
        int r;

        if (!ns || !name)
                return;
        own = !deleted && own_binding(s, json, version);
        binding = binding_pending(s, json, deleted);
        queue_ctl_pod(s->queues, json, deleted);
        if (binding)
                queue_ctl_placed(s->queues, ns, name, true); /* its queue still counts it */
        if (!binding && (deleted || !pod_is_bound(json) || pod_is_finished(json))) {
                /* a pod that held capacity and no longer does: the waiting may fit now */
                if (xp_sched_pod_remove(s->sched, ns, name) == 0)
                        s->freed = true;
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
        if (s->hooks.removed && (deleted || pod_is_bound(json)))
                s->hooks.removed(s->hooks.userdata, ns, name); /* nobody's nominee any more */
        gang_bound_seen(
            s, json, ns, name, !deleted && pod_is_bound(json) && !pod_is_finished(json));
        if (deleted || !pod_is_bound(json) || pod_is_finished(json) || own)
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

static void on_workload(void *userdata, const json_t *object, uint64_t version)
{
        (void)version;
        group_seen(userdata, XP_SCHEDULER_WORKLOADS, object, false);
}

static void on_workload_deleted(void *userdata, const json_t *object, uint64_t version)
{
        (void)version;
        group_seen(userdata, XP_SCHEDULER_WORKLOADS, object, true);
}

static void on_k8s_podgroup(void *userdata, const json_t *object, uint64_t version)
{
        (void)version;
        group_seen(userdata, XP_SCHEDULER_K8S_PODGROUPS, object, false);
}

static void on_k8s_podgroup_deleted(void *userdata, const json_t *object, uint64_t version)
{
        (void)version;
        group_seen(userdata, XP_SCHEDULER_K8S_PODGROUPS, object, true);
}

static void on_podgroup(void *userdata, const json_t *object, uint64_t version)
{
        (void)version;
        group_seen(userdata, XP_SCHEDULER_PODGROUPS, object, false);
}

static void on_podgroup_deleted(void *userdata, const json_t *object, uint64_t version)
{
        (void)version;
        group_seen(userdata, XP_SCHEDULER_PODGROUPS, object, true);
}

/* The gangs' objects first: a pod listed after them finds its gang's minimum at once. */
static const struct xp_informer_handler followed[] = {
    {.resource = "namespaces",
     .add = queue_on_namespace,
     .update = queue_on_namespace,
     .delete = queue_on_namespace_deleted},
    {.resource = "queues",
     .add = queue_on_queue,
     .update = queue_on_queue,
     .delete = queue_on_queue_deleted},
    {.resource = XP_SCHEDULER_WORKLOADS,
     .add = on_workload,
     .update = on_workload,
     .delete = on_workload_deleted},
    {.resource = XP_SCHEDULER_K8S_PODGROUPS,
     .add = on_k8s_podgroup,
     .update = on_k8s_podgroup,
     .delete = on_k8s_podgroup_deleted},
    {.resource = XP_SCHEDULER_PODGROUPS,
     .add = on_podgroup,
     .update = on_podgroup,
     .delete = on_podgroup_deleted},
    {.resource = "nodes", .add = on_node, .update = on_node, .delete = on_node_deleted},
    {.resource = "pods", .add = on_pod, .update = on_pod, .delete = on_pod_deleted},
};

/* A fresh snapshot: the relist that follows fills it, and the queue, from the current state. */
static int snapshot_renew(struct xp_scheduler *s)
{
        struct xp_sched_options options = {
            .profile = s->profile,
            .sample_plain_pods = true,
            .percentage_of_nodes_to_score = s->percentage_of_nodes_to_score,
        };
        struct xp_sched *sched;
        int r;

        r = xp_sched_new(&options, &sched);
        if (r < 0)
                return r;
        xp_sched_free(s->sched);
        s->sched = sched;
        queue_ctl_reset(s->queues);
        /* what is still pending comes back from the list, and so do the gangs */
        pending_clear(s);
        groups_clear(s);
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

/* Kube-scheduler's backoff: BACKOFF_INITIAL_MS doubled per failure in a row, capped. */
static void backoff(struct xp_scheduler *s, struct pending *p)
{
        int64_t delay = BACKOFF_INITIAL_MS;

        for (int i = 0; i < p->attempts && delay < BACKOFF_MAX_MS; i++)
                delay *= 2;
        if (delay > BACKOFF_MAX_MS)
                delay = BACKOFF_MAX_MS;
        if (p->attempts < 64)
                p->attempts++;
        p->backoff_until_ms = xp_clock_monotonic_ms(s->clock) + delay;
}

/* The Event's text: kube-scheduler's message, then xpool's explanation (the prefix's lines and
 * why's) joined with " | ", cut at EVENT_MESSAGE_MAX. */
static char *explain_join(const char *message, const char *prefix, const char *why)
{
        char *text = NULL;
        size_t len;

        if (xp_streq0(prefix, message))
                prefix = NULL;
        if (asprintf(&text,
                     "%s\n%s%s%s",
                     message,
                     prefix ? prefix : "",
                     prefix ? "\n" : "",
                     why ? why : "") < 0)
                return NULL;
        len = strlen(text);
        while (len > 0 && text[len - 1] == '\n')
                text[--len] = '\0';
        for (char *c = text; *c; c++)
                if (*c == '\n') {
                        /* " | " takes the newline's place and two more bytes */
                        size_t at = (size_t)(c - text);
                        char *m = realloc(text, len + 3);
                        if (!m) {
                                free(text);
                                return NULL;
                        }
                        text = m;
                        c = text + at;
                        memmove(c + 3, c + 1, len - at);
                        memcpy(c, " | ", 3);
                        len += 2;
                        c += 2;
                }
        if (len > EVENT_MESSAGE_MAX)
                memcpy(text + EVENT_MESSAGE_MAX - 3, "...", 4);
        return text;
}

/* Tries p again at the latest at ms, even without a cluster event. */
static void retry_by(struct pending *p, int64_t ms)
{
        if (p->retry_at_ms == 0 || p->retry_at_ms > ms)
                p->retry_at_ms = ms;
}

/* As unschedulable(); text, when given, is the Event's explanation already made (a pod of the
 * same shape's), so the nodes are not visited again. */
static void unschedulable_as(struct xp_scheduler *s,
                             struct pending *p,
                             const char *message,
                             const char *explain,
                             const char *known_text)
{
        int64_t now = xp_clock_monotonic_ms(s->clock);
        /* the same reasons with another count of nodes count as a repeat of the message said
         * until it is REASONS_REFRESH_MS old (scheduler_reasons.c) */
        bool repeat = xp_streq0(p->message, message) || (now - p->message_ms < REASONS_REFRESH_MS &&
                                                         reasons_same(p->message, message));

        p->waiting = true;
        backoff(s, p);
        release_missed(s, p, message);
        xp_debug("sched", "pod %s/%s unschedulable: %s", p->namespace, p->name, message);
        if (!repeat) {
                char *copy = strdup(message), *why = NULL, *text = NULL;
                struct xp_error err = {0};

                if (!copy)
                        return;
                if (known_text) {
                        text = strdup(known_text);
                } else {
                        /* the nodes' side, said once per new message: it visits every node */
                        if (!explain && p->decoded)
                                (void)xp_sched_why(s->sched, p->decoded, &why, &err);
                        text = explain_join(message, explain, why);
                }
                free(why);
                failure_write(s, p, NULL, true); /* the old message's count */
                free(p->message);
                p->message = copy;
                p->message_ms = now;
                free(p->explain);
                p->explain = text;
        } else if (!xp_streq0(p->message, message))
                /* said late rather than never: with no cluster event after this one the pod
                 * would not be tried again, and its status would keep the old count */
                retry_by(p, p->message_ms + REASONS_REFRESH_MS);
        p->failures_unwritten++;
        failure_write(s, p, p->message, !repeat);
}

void unschedulable(struct xp_scheduler *s,
                   struct pending *p,
                   const char *message,
                   const char *explain)
{
        unschedulable_as(s, p, message, explain, NULL);
}

void unschedulable_split(struct xp_scheduler *s, struct pending *p, char *reason)
{
        char *lines = reason ? strchr(reason, '\n') : NULL;

        if (lines)
                *lines++ = '\0';
        unschedulable(s, p, reason ? reason : "held back by its queue", lines ? lines : reason);
}

/*
 * Accounts p as placed (the snapshot must see the devices taken before the next decision) and
 * hands its binding to the workers. The snapshot takes the decoded pod and the placement as they
 * are: a copy of the pod with the binding in it, decoded again, cost more than the decision.
 */
int dispatch(struct xp_scheduler *s,
             struct pending *p,
             const struct xp_placement *placement,
             const char *text)
{
        struct xp_error err = {0};
        struct bind_job *job;
        int r;

        job = calloc(1, sizeof *job);
        if (!job)
                return -ENOMEM;
        job->namespace = strdup(p->namespace);
        job->name = strdup(p->name);
        job->node = strdup(placement->node);
        job->annotations = json_pack("{s:s}", XP_PLACEMENT_ANNOTATION, text);
        job->version = p->version;
        job->pod = json_incref(p->pod);
        if (!job->namespace || !job->name || !job->node || !job->annotations) {
                bind_job_free(job);
                return -ENOMEM;
        }
        /* the failures before this placement, counted in the Event before the binding */
        job->event_count = failures_take(s, p, true);
        if (job->event_count > 0 &&
            !(job->event_message = strdup(p->explain ? p->explain : p->message))) {
                bind_job_free(job);
                return -ENOMEM;
        }
        free(p->bound_to);
        p->bound_to = strdup(placement->node); /* NULL: its event is decoded, as any other */
        r = xp_sched_pod_assume(s->sched, p->decoded, placement, &err);
        if (r < 0) {
                bind_job_free(job);
                return r;
        }
        p->inflight = true;
        s->inflight++;
        /* it may go to another node than the headroom took its room from: the parked pods are
         * walked again, until a walk releases nobody */
        if (p->by_headroom)
                s->freed = true;
        p->by_headroom = false;
        if (s->hooks.placed)
                s->hooks.placed(s->hooks.userdata, p->decoded, placement);
        bind_batch_add(s, job);
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
                        /* its MODIFIED event may not have come yet: a gang member counts as
                         * bound at once, so that a member tried again in this round (its own
                         * binding stale) finds its gang complete rather than waiting for the
                         * next cluster event */
                        if (p && p->gang)
                                gang_bound_seen(s, p->pod, p->namespace, p->name, true);
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
                                queue_ctl_nominee_placed(
                                    s->queues, job->namespace, job->name, false);
                                if (pending_refresh(s, p) == 0)
                                        pending_delete(s, p);
                        } else {
                                queue_ctl_nominee_placed(
                                    s->queues, job->namespace, job->name, false);
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
        /* what the attempt gave back of its own holds, and did not take, is held again before
         * the next pod is tried (kube-scheduler counts nominated pods in every filter) */
        queue_ctl_hold_nominees(s->queues, s->sched, false);
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

/* The queues' word on a single pod (s->hooks.admit): 0 go on, 1 held back (said so), -errno. */
static int admit(struct xp_scheduler *s, struct pending *p, enum xp_scheduler_result *result)
{
        _cleanup_free_ char *reason = NULL;
        const struct xp_pod *pods[1] = {p->decoded};
        int r = s->hooks.admit(s->hooks.userdata, pods, 1, &reason);

        if (r < 0)
                return r;
        if (r > 0)
                return 0;
        *result = XP_SCHEDULER_UNSCHEDULABLE;
        unschedulable_split(s, p, reason);
        return 1;
}

/* Nothing fits p: preemption (s->hooks.preempt) may evict for it; its word joins *reason as
 * kube-scheduler's "preemption: ..." tail does. Returns whether p was nominated to a node. */
static bool preempt(struct xp_scheduler *s, struct pending *p, char **reason)
{
        _cleanup_free_ char *node = NULL, *message = NULL;
        const struct xp_pod *pods[1] = {p->decoded};
        char *joined;

        if (!s->hooks.preempt ||
            s->hooks.preempt(s->hooks.userdata, s->sched, pods, 1, &node, &message) < 0)
                return false;
        if (message && asprintf(&joined, "%s %s", *reason, message) >= 0) {
                free(*reason);
                *reason = joined;
        }
        return node && node[0];
}

/* Unschedulable as a pod of its shape was in this pass: 1, or 0 when none was. */
static int
fail_as_shape(struct xp_scheduler *s, struct pending *p, enum xp_scheduler_result *result)
{
        const struct pending *model = shape_failed(s, p);

        if (!model)
                return 0;
        *result = XP_SCHEDULER_UNSCHEDULABLE;
        unschedulable_as(s, p, model->message, NULL, model->explain);
        return 1;
}

/* Places one pending pod: a binding, or an unschedulable one's status and Event, handed on. */
static void place_one(struct xp_scheduler *s, struct pending *p, enum xp_scheduler_result *result)
{
        _cleanup_free_ char *reason = NULL, *text = NULL;
        struct xp_placement placement = {0};
        struct xp_error err = {0};
        bool nominated;
        int r = 0;

        if (p->gang) {
                gang_schedule(s, p, result);
                return;
        }
        r = pending_decode(p, &err);
        if (r >= 0 && s->hooks.admit)
                r = admit(s, p, result);
        if (r == 0)
                r = fail_as_shape(s, p, result);
        if (r > 0)
                return;
        if (r >= 0)
                r = xp_sched_place(s->sched, p->decoded, &placement, &reason, &err);
        if (r == -EINVAL) {
                *result = XP_SCHEDULER_UNSCHEDULABLE;
                unschedulable(s, p, err.msg[0] ? err.msg : "the pod's request is invalid", NULL);
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
                nominated = preempt(s, p, &reason);
                unschedulable(s, p, reason, NULL);
                if (!nominated)
                        shape_fail(s, p);
                return;
        }
        r = xp_placement_to_json(&placement, &text);
        if (r >= 0)
                r = dispatch(s, p, &placement, text);
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

/*
 * The pods that may be tried now (the active queue): after a cluster event the unschedulable
 * pods it may admit leave the unschedulable set (release_waiting()), into the backoff queue
 * until their backoff ends. Returns how
 * many, and in *ret_wake_ms how long until the next backoff ends (INT64_MAX: none waits).
 */
/*
 * Kubernetes 1.33's SchedulerPopFromBackoffQ: with nothing else to try, the pods of the top
 * priority that a cluster event released from the unschedulable set are tried before their
 * backoff ends. The backoff is there so that they do not crowd out other pods; with none to
 * crowd out, it would only leave freed capacity idle (a pod done on a full node, the next one
 * waiting up to BACKOFF_MAX_MS). Those that fail again wait for the next event.
 */
static size_t
pop_backing_off(struct xp_scheduler *s, struct pending **active, int64_t priority, int64_t now)
{
        size_t n = 0;

        for (size_t i = 0; i < s->n_queue; i++) {
                struct pending *p = s->queue[i];

                if (!p->waiting && !p->drop && !p->inflight && p->backoff_until_ms > now &&
                    p->priority == priority)
                        active[n++] = p;
        }
        return n;
}

static size_t active_pods(struct xp_scheduler *s,
                          struct pending **active,
                          int64_t *ret_wake_ms,
                          bool *ret_released)
{
        int64_t now = xp_clock_monotonic_ms(s->clock), wake = INT64_MAX, top_backing_off = 0;
        bool backing_off = false;
        size_t n = 0;

        if (queue_ctl_room_freed(s->queues))
                s->freed = true; /* a nominee's hold given back: the parked pods are walked */
        if ((s->changed || s->freed) && now - s->retried_ms >= s->retry_gap_ms) {
                release_waiting(s, s->changed);
                s->changed = false;
                s->freed = false;
                s->retried_ms = now;
                *ret_released = true;
        }
        for (size_t i = 0; i < s->n_queue; i++) {
                struct pending *p = s->queue[i];
                if (p->waiting && p->retry_at_ms > 0 && p->retry_at_ms <= now) {
                        p->waiting = false;
                        p->retry_at_ms = 0;
                }
                if (p->waiting && p->retry_at_ms > 0 && p->retry_at_ms - now < wake)
                        wake = p->retry_at_ms - now;
                if (p->waiting || p->drop || p->inflight)
                        continue;
                if (p->backoff_until_ms > now) {
                        if (p->backoff_until_ms - now < wake)
                                wake = p->backoff_until_ms - now;
                        if (!backing_off || p->priority > top_backing_off)
                                top_backing_off = p->priority;
                        backing_off = true;
                        continue;
                }
                active[n++] = p;
        }
        /* what a cluster event freed goes to the highest priority that may fit now: a pod of
         * lower priority waits for that one's backoff (at most BACKOFF_MAX_MS) to end */
        for (size_t i = 0; backing_off && i < n;)
                if (active[i]->priority < top_backing_off)
                        active[i] = active[--n];
                else
                        i++;
        if (n == 0 && backing_off)
                n = pop_backing_off(s, active, top_backing_off, now);
        *ret_wake_ms = wake;
        return n;
}

/* The pass goes on: the rest waits for the workers to catch up (the next pass, after their
 * writes). */
bool pass_open(struct xp_scheduler *s)
{
        return !xp_controller_stopping(s->loop) && s->inflight < INFLIGHT_MAX;
}

void pass_try(struct xp_scheduler *s, struct pending *p)
{
        if (!p->inflight && !p->drop && !(p->gang && p->gang_pass == s->pass))
                schedule_one(s, p);
}

/*
 * The waiting pods are released again after an event no sooner than twice as long as the last
 * release's pass took, within RETRY_MIN_MS..RETRY_MS: a cheap pass (a node freed one slot, the
 * waiting pods of one shape) runs at once, an expensive one cannot take more than a third of
 * the loop's time however fast events come.
 */
static void retry_gap_set(struct xp_scheduler *s, int64_t pass_ms)
{
        int64_t gap = 2 * pass_ms;

        s->retry_gap_ms = gap < RETRY_MIN_MS ? RETRY_MIN_MS : gap > RETRY_MS ? RETRY_MS : gap;
}

/* Room for every pending pod in s->active and s->scratch. -ENOMEM. */
static int active_grow(struct xp_scheduler *s)
{
        size_t cap = s->cap_active ? s->cap_active : 64;
        struct pending **active, **scratch;

        while (cap < s->n_queue)
                cap *= 2;
        active = realloc(s->active, cap * sizeof *active);
        if (!active)
                return -ENOMEM;
        s->active = active;
        scratch = realloc(s->scratch, cap * sizeof *scratch);
        if (!scratch)
                return -ENOMEM;
        s->scratch = scratch;
        s->cap_active = cap;
        return 0;
}

/* One pass over the pods that may be placed now. Returns how long until a backoff ends. */
static int64_t schedule_pass(struct xp_scheduler *s)
{
        int64_t wake, start = xp_clock_monotonic_ms(s->clock);
        struct pending **active;
        bool released = false;
        size_t n;

        if (s->n_queue > s->cap_active && active_grow(s) < 0)
                return WAKE_MS;
        active = s->active;
        n = active_pods(s, active, &wake, &released);
        s->pass++;
        queue_ctl_hold_nominees(s->queues, s->sched, true);
        order_run(s, active, s->scratch, n);
        bind_batch_flush(s);
        shapes_forget(s);
        /* only the pods tried can have been dropped */
        for (size_t i = 0; i < n; i++)
                if (active[i]->drop)
                        pending_delete(s, active[i]);
        for (size_t i = 0; i < s->n_queue && !atomic_load(&s->stopping); i++)
                if (!s->queue[i]->inflight)
                        failure_write(s, s->queue[i], NULL, false);
        if (released)
                retry_gap_set(s, xp_clock_monotonic_ms(s->clock) - start);
        return wake;
}

/* One round: what the workers finished, then a pass. Returns how long the loop may sleep. */
static int64_t scheduler_work(void *userdata)
{
        struct xp_scheduler *s = userdata;
        int64_t wake, sleep_ms;

        collect(s);
        /* A pass costs O(pending) before it tries anyone (the active set, its order, the
         * failures due), and every binding written wakes the loop: with the workers full, each
         * pass would bind the one or two pods they just finished, paying that cost per pod.
         * Waiting until half the writes are done makes each pass bind hundreds. */
        if (s->inflight >= INFLIGHT_RESUME)
                return BUSY_POLL_MS;
        wake = schedule_pass(s);
        queue_ctl_flush(s->queues);
        if (queue_ctl_room_freed(s->queues))
                s->freed = true; /* a hold given back during the pass (a nomination run out) */
        /* wake early while a retry is due, or a backoff ends */
        sleep_ms = s->changed || s->freed ? s->retry_gap_ms / 2 : WAKE_MS;
        return wake < sleep_ms ? (wake > 0 ? wake : 1) : sleep_ms;
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
        s->gang_timeout_ms =
            options->gang_timeout_ms > 0 ? options->gang_timeout_ms : XP_SCHEDULER_GANG_TIMEOUT_MS;
        s->profile = XP_SCHEDULER_DEFAULT_PROFILE;
        s->percentage_of_nodes_to_score = options->percentage_of_nodes_to_score;
        if (options->placement_profile &&
            xp_sched_profile_from_string(options->placement_profile, &s->profile) < 0) {
                free(s);
                return xp_errorf(err,
                                 -EINVAL,
                                 "placement profile '%s': expected one of " XP_SCHED_PROFILE_NAMES,
                                 options->placement_profile);
        }
        xp_gang_options_default(&s->gang_options);
        if (options->gang_topology_keys) {
                r = xp_gang_options_set_keys(&s->gang_options, options->gang_topology_keys, err);
                if (r < 0) {
                        free(s);
                        return r;
                }
        }
        s->gang_options.commit = true;
        s->gang_options.explain = true;
        xp_histogram_init(&s->attempt_seconds, xp_histogram_latency_bounds, xp_histogram_latency_n);
        struct xp_informer_options informer = {
            .store = xp_registry_store(registry),
            .handlers = followed,
            .n_handlers = XP_ELEMENTSOF(followed),
            .reset = on_reset,
            .userdata = s,
        };
        r = queue_ctl_new(registry, s->clock, &s->queues);
        if (r >= 0) {
                queue_ctl_attach(s->queues, &s->sched);
                s->hooks = (struct xp_sched_hooks){.userdata = s->queues,
                                                   .admit = queue_hook_admit,
                                                   .preempt = queue_hook_preempt,
                                                   .queue = queue_hook_queue,
                                                   .share = queue_hook_share,
                                                   .placed = queue_hook_placed,
                                                   .removed = queue_hook_removed};
                r = xp_informer_new(&informer, &s->informer);
        }
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

int xp_scheduler_run(struct xp_scheduler *s, struct xp_error *err)
{
        return s->loop ? 0 : xp_controller_start(&scheduler_ops, s->informer, s, &s->loop, err);
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
        r = xp_scheduler_run(s, err);
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
        atomic_store(&s->stopping, true);
        xp_controller_stop(s->loop);
        bind_jobs_stop(s); /* bindings in flight are written (or fail) before the store closes */
        xp_histogram_done(&s->attempt_seconds);
        pending_clear(s);
        groups_clear(s);
        free(s->queue);
        free(s->active);
        free(s->scratch);
        xp_sched_free(s->sched);
        queue_ctl_free(s->queues);
        nodes_forget(s);
        xp_informer_free(s->informer);
        free(s);
}
