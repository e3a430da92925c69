/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Gangs in the scheduling loop (docs/scheduler.md, "Gangs"): the pending pods with the same
 * xpool.io/gang label in a namespace are tried together, once per pass, when the first of them
 * comes up in the active queue, with the core's all-or-nothing placement
 * (include/sched/xpool/gang.h). Members already bound count toward the minimum. A gang that does
 * not fit leaves nothing assumed, and every member takes the failure (and its backoff), so the
 * pods behind it in the queue are tried in the same pass: one failed gang stalls nothing.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "queue_ctl.h"
#include "scheduler_state.h"
#include "xpool/gang.h"
#include "xpool/log.h"
#include "xpool/macro.h"
#include "xpool/sched.h"
#include "xpool/strutil.h"

static int by_name(const void *a, const void *b)
{
        return strcmp((*(struct pending *const *)a)->name, (*(struct pending *const *)b)->name);
}

/* The pending members of p's gang not yet bound or in flight, p first. Caller frees. */
static struct pending **members_of(struct xp_scheduler *s, struct pending *p, size_t *ret_n)
{
        struct pending **m = calloc(s->n_queue + 1, sizeof(*m));
        size_t n = 0;

        if (!m)
                return NULL;
        m[n++] = p;
        p->gang_pass = s->pass;
        /* the rest: a scan per gang and pass (gangs are few, and back off when they fail) */
        for (size_t i = 0; i < s->n_queue; i++) {
                struct pending *q = s->queue[i];
                if (q == p || !q->gang || q->drop || q->inflight || strcmp(q->gang, p->gang) != 0)
                        continue;
                q->gang_pass = s->pass;
                m[n++] = q;
        }
        /* the members in order of their names: the same gang reads the same every time */
        if (n > 1) /* an empty array may be NULL, which qsort may not take */
                qsort(m, n, sizeof(*m), by_name);
        *ret_n = n;
        return m;
}

/* Every member takes the same failure; until the gang's timeout has been said, they are tried
 * again at it even without a cluster event. */
static void all_failed(
    struct xp_scheduler *s, struct pending **m, size_t n, const char *message, const char *why)
{
        int64_t first = m[0]->queued_ms;
        bool said = strstr(message, "timed out after") != NULL;

        for (size_t i = 1; i < n; i++)
                if (m[i]->queued_ms < first)
                        first = m[i]->queued_ms;
        for (size_t i = 0; i < n; i++) {
                unschedulable(s, m[i], message, why);
                m[i]->retry_at_ms = said ? 0 : first + s->gang_timeout_ms;
        }
}

static void duration_text(int64_t ms, char *buf, size_t size)
{
        int64_t sec = ms / 1000;

        if (sec >= 60)
                snprintf(buf, size, "%" PRId64 "m%" PRId64 "s", sec / 60, sec % 60);
        else
                snprintf(buf, size, "%" PRId64 "s", sec);
}

/* Binds the placed members; a member whose binding could not be handed on goes back. */
static void
bind_members(struct xp_scheduler *s, struct pending **m, size_t n, struct xp_gang_result *res)
{
        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *text = NULL;
                int r = xp_placement_to_json(&res->placements[i], &text);

                if (r >= 0)
                        r = dispatch(s, m[i], &res->placements[i], text);
                if (r < 0) {
                        /* the core assumed it: forget it, the member is tried again */
                        (void)xp_sched_pod_remove(s->sched, m[i]->namespace, m[i]->name);
                        xp_log(LOG_WARNING,
                               "scheduler: pod %s/%s of gang %s not bound: %s",
                               m[i]->namespace,
                               m[i]->name,
                               m[i]->gang,
                               strerror(-r));
                        m[i]->waiting = true;
                        s->changed = true;
                        continue;
                }
                m[i]->attempts = 0;
        }
}

/* The gang does not fit whole: kube-scheduler's message for the member that fit nowhere, with
 * the gang's count after it; the explanation says it in full. */
static void not_placed(struct xp_scheduler *s,
                       struct pending **m,
                       size_t n,
                       const char *reason,
                       const struct xp_gang_result *res,
                       int64_t waited_ms)
{
        _cleanup_free_ char *message = NULL, *why = NULL;
        char timed_out[64] = "";

        if (waited_ms >= s->gang_timeout_ms) {
                char d[32];
                duration_text(s->gang_timeout_ms, d, sizeof(d));
                snprintf(timed_out, sizeof(timed_out), "; timed out after %s", d);
        }
        if (asprintf(&message,
                     "%s Gang %s: %zu of %zu members fit%s.",
                     reason,
                     m[0]->gang,
                     res->failed,
                     n,
                     timed_out) < 0 ||
            asprintf(&why,
                     "gang %s: %zu of %zu members fit together, so none is placed%s\n"
                     "member %s, with those before it placed:\n%s",
                     m[0]->gang,
                     res->failed,
                     n,
                     timed_out,
                     m[res->failed]->name,
                     res->why ? res->why : "") < 0) {
                return;
        }
        all_failed(s, m, n, message, why);
}

/* Why a gang cannot be tried: its object missing, or no valid minimum. Caller frees. */
static char *gang_unusable(const struct pending *p)
{
        char *message = NULL;
        int r;

        if (p->gang_missing && strcmp(p->gang_what, "workload") == 0)
                r = asprintf(&message, "gang %s: its Workload or podGroup is not found", p->gang);
        else if (p->gang_missing)
                r = asprintf(&message, "gang %s: its PodGroup is not found", p->gang);
        else if (strcmp(p->gang_what, "podgroup") == 0)
                r = asprintf(&message,
                             "gang %s: the PodGroup's spec.minMember must be 1 to %d",
                             p->gang,
                             XP_GANG_MEMBERS_MAX);
        else if (strcmp(p->gang_what, "workload") == 0)
                r = asprintf(&message,
                             "gang %s: the podGroup's policy.gang.minCount must be 1 to %d",
                             p->gang,
                             XP_GANG_MEMBERS_MAX);
        else
                r = asprintf(&message,
                             "label %s: required with %s, a number from 1 to %d",
                             XP_GANG_MIN_LABEL,
                             XP_GANG_LABEL,
                             XP_GANG_MEMBERS_MAX);
        return r < 0 ? NULL : message;
}

/* Counts its members: 1 enough to try, 0 not (each told), -errno. */
static int gang_complete(struct xp_scheduler *s, struct pending **m, size_t n, int64_t waited_ms)
{
        _cleanup_free_ char *message = NULL, *unblock = NULL;
        int64_t bound;
        char timed_out[64] = "";

        if (m[0]->gang_missing || m[0]->gang_min == 0) {
                message = gang_unusable(m[0]);
                if (!message)
                        return -ENOMEM;
                all_failed(s, m, n, message, message);
                return 0;
        }
        bound = gang_bound(s, m[0]->gang);
        if ((int64_t)n + bound >= m[0]->gang_min)
                return 1;
        if (waited_ms >= s->gang_timeout_ms) {
                char d[32];
                duration_text(s->gang_timeout_ms, d, sizeof(d));
                snprintf(timed_out, sizeof(timed_out), "; timed out after %s", d);
        }
        if (asprintf(&message,
                     "gang %s incomplete: %" PRId64 " of %" PRId64 " members present%s",
                     m[0]->gang,
                     (int64_t)n + bound,
                     m[0]->gang_min,
                     timed_out) < 0 ||
            asprintf(&unblock,
                     "to unblock: %" PRId64 " more member%s of gang %s (its minimum is %" PRId64
                     ")",
                     m[0]->gang_min - (int64_t)n - bound,
                     m[0]->gang_min - (int64_t)n - bound == 1 ? "" : "s",
                     m[0]->gang,
                     m[0]->gang_min) < 0)
                return -ENOMEM;
        all_failed(s, m, n, message, unblock);
        return 0;
}

/* Volcano's enqueue: a PodGroup's minResources fit its queue and the cluster's free capacity
 * before its members are placed. 1 go on, 0 held back (each told), -ENOMEM. */
static int gang_enqueue(struct xp_scheduler *s, struct pending **m, size_t n)
{
        const json_t *pg = gang_volcano_group(s, m[0]);
        const json_t *min = json_object_get(json_object_get(pg, "spec"), "minResources");
        _cleanup_free_ char *reason = NULL, *message = NULL;
        const char *queue;
        int r;

        if (!pg || !min)
                return 1;
        queue = queue_hook_queue(s->queues, m[0]->namespace, m[0]->name);
        r = queue_ctl_enqueue(s->queues, queue, min, &reason);
        if (r != 0)
                return r;
        if (asprintf(&message, "gang %s: %s", m[0]->gang, reason) < 0)
                return -ENOMEM;
        all_failed(s, m, n, message, message);
        return 0;
}

/* The queues' word on the whole gang: 1 go on, 0 held back (each told), -errno. */
static int
gang_admit(struct xp_scheduler *s, struct pending **m, const struct xp_pod **pods, size_t n)
{
        _cleanup_free_ char *reason = NULL;
        int r;

        if (!s->hooks.admit)
                return 1;
        r = s->hooks.admit(s->hooks.userdata, pods, n, &reason);
        if (r == 0) {
                char *lines = reason ? strchr(reason, '\n') : NULL;

                if (lines)
                        *lines++ = '\0';
                all_failed(
                    s, m, n, reason ? reason : "held back by its queue", lines ? lines : reason);
        }
        return r;
}

/* Preemption for the whole gang, at its priority: its Volcano PodGroup's class when it names
 * one (Volcano's job priority), else each member's own. */
static void
gang_preempt(struct xp_scheduler *s, struct pending **m, const struct xp_pod **pods, size_t n)
{
        _cleanup_free_ char *node = NULL, *said = NULL;
        _cleanup_free_ struct xp_opt_int64 *own = calloc(n ? n : 1, sizeof *own);

        if (!own)
                return;
        for (size_t i = 0; i < n; i++) {
                own[i] = m[i]->decoded->spec.priority;
                if (m[i]->gang_priority_set)
                        m[i]->decoded->spec.priority =
                            (struct xp_opt_int64){.set = true, .value = m[i]->priority};
        }
        (void)s->hooks.preempt(s->hooks.userdata, s->sched, pods, n, &node, &said);
        for (size_t i = 0; i < n; i++)
                m[i]->decoded->spec.priority = own[i];
}

static int64_t waited(struct xp_scheduler *s, struct pending **m, size_t n)
{
        int64_t first = m[0]->queued_ms;

        for (size_t i = 1; i < n; i++)
                if (m[i]->queued_ms < first)
                        first = m[i]->queued_ms;
        return xp_clock_monotonic_ms(s->clock) - first;
}

void gang_schedule(struct xp_scheduler *s, struct pending *p, enum xp_scheduler_result *result)
{
        _cleanup_free_ struct pending **m = NULL;
        _cleanup_free_ const struct xp_pod **pods = NULL;
        _cleanup_free_ char *reason = NULL;
        struct xp_gang_result res = {0};
        struct xp_error err = {0};
        size_t n = 0;
        int64_t w;
        int r = 0;

        m = members_of(s, p, &n);
        pods = calloc(n + 1, sizeof(*pods));
        if (!m || !pods) {
                *result = XP_SCHEDULER_ERROR;
                return;
        }
        for (size_t i = 0; i < n && r >= 0; i++) {
                r = pending_decode(m[i], &err);
                pods[i] = m[i]->decoded;
        }
        w = waited(s, m, n);
        *result = XP_SCHEDULER_UNSCHEDULABLE;
        if (r >= 0)
                r = gang_complete(s, m, n, w);
        if (r > 0)
                r = gang_enqueue(s, m, n);
        if (r > 0)
                r = gang_admit(s, m, pods, n);
        /* held back before placement (too few members, minResources, its queue): Volcano's
         * Pending, whatever the members present when the loop first saw them */
        if (r == 0 && !p->gang_missing)
                podgroup_phase(s, p, "Pending");
        if (r > 0)
                r = xp_sched_gang_place(s->sched, pods, n, &s->gang_options, &res, &reason, &err);
        if (r == -EINVAL) {
                all_failed(s, m, n, err.msg[0] ? err.msg : "the gang's request is invalid", NULL);
                return;
        }
        if (r < 0) {
                *result = XP_SCHEDULER_ERROR;
                xp_log(LOG_WARNING,
                       "scheduler: gang %s: %s",
                       p->gang,
                       err.msg[0] ? err.msg : strerror(-r));
                for (size_t i = 0; i < n; i++)
                        m[i]->waiting = true;
                s->changed = true;
                return;
        }
        if (r == 0 && reason) {
                /* enough members, not enough room: Volcano's Inqueue; preemption may evict for
                 * the whole gang (its word is the hook's: the gang waits either way) */
                if (s->hooks.preempt)
                        gang_preempt(s, m, pods, n);
                podgroup_phase(s, p, "Inqueue");
                not_placed(s, m, n, reason, &res, w);
        }
        if (r > 0) {
                *result = XP_SCHEDULER_SCHEDULED;
                bind_members(s, m, n, &res);
                podgroup_phase(s, p, "Running");
        }
        xp_gang_result_done(&res);
}
