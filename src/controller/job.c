/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One sync of a Job (Kubernetes' syncJob): count what finished, decide whether the Job has
 * failed or succeeded (first the interim FailureTarget or SuccessCriteriaMet, then, once its
 * pods are gone, Failed or Complete), honour suspend, and otherwise plan its pods.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "job_internal.h"

void xp_job_plan_done(struct xp_job_plan *plan)
{
        free(plan->create);
        free(plan->delete);
        free(plan->counted);
        *plan = (struct xp_job_plan){0};
}

static bool has(const struct xp_job_status *s, enum xp_job_condition_type t)
{
        return s->conditions[t].set && s->conditions[t].status;
}

/* Sets a condition; its transition time moves only when its status does. */
static void set_condition(struct xp_job_status *s,
                          enum xp_job_condition_type t,
                          bool status,
                          const char *reason,
                          const char *message,
                          int64_t now_s)
{
        struct xp_job_condition *c = &s->conditions[t];

        if (!c->set || c->status != status)
                c->at_s = now_s;
        c->set = true;
        c->status = status;
        snprintf(c->reason, sizeof(c->reason), "%s", reason);
        snprintf(c->message, sizeof(c->message), "%s", message);
}

static void event(struct xp_job_plan *plan, bool warning, const char *reason, const char *message)
{
        plan->event_reason = reason;
        plan->event_warning = warning;
        snprintf(plan->event_message, sizeof(plan->event_message), "%s", message);
}

static void finished_ttl(const struct xp_job_spec *spec,
                         const struct xp_job_status *s,
                         int64_t now_s,
                         struct xp_job_plan *plan)
{
        if (spec->ttl_after_finished_s < 0)
                return;
        int64_t done = has(s, XP_JOB_COMPLETE) ? s->conditions[XP_JOB_COMPLETE].at_s
                                               : s->conditions[XP_JOB_FAILED].at_s;
        if (done + spec->ttl_after_finished_s <= now_s)
                plan->delete_job = true;
        else
                job_plan_requeue(plan, done + spec->ttl_after_finished_s);
}

/* Why the Job fails, if it does: sets FailureTarget (kept once set). */
static bool failing(const struct xp_job_spec *spec,
                    const struct job_verdict *v,
                    int64_t now_s,
                    struct xp_job_status *s)
{
        bool per_index = spec->indexed && spec->backoff_limit_per_index >= 0;
        const char *reason = NULL, *message = NULL;

        if (has(s, XP_JOB_FAILURE_TARGET))
                return true;
        if (v->fail_job)
                reason = "PodFailurePolicy", message = v->message;
        else if (!per_index && s->failed > spec->backoff_limit)
                reason = "BackoffLimitExceeded",
                message = "Job has reached the specified backoff limit";
        else if (per_index && spec->max_failed_indexes >= 0 &&
                 s->failed_indexes.count > spec->max_failed_indexes)
                reason = "MaxFailedIndexesExceeded",
                message = "Job has exceeded the specified maximal number of failed indexes";
        else if (!spec->suspend && s->start_s > 0 && spec->active_deadline_s >= 0 &&
                 now_s - s->start_s >= spec->active_deadline_s)
                reason = "DeadlineExceeded",
                message = "Job was active longer than specified deadline";
        else if (per_index && s->failed_indexes.count > 0 &&
                 s->completed.count + s->failed_indexes.count >= spec->completions)
                reason = "FailedIndexes", message = "Job has failed indexes";
        if (!reason)
                return false;
        set_condition(s, XP_JOB_FAILURE_TARGET, true, reason, message, now_s);
        return true;
}

static bool
succeeding(const struct xp_job_spec *spec, size_t n_live, int64_t now_s, struct xp_job_status *s)
{
        bool done;

        if (has(s, XP_JOB_SUCCESS_CRITERIA_MET))
                return true;
        if (spec->indexed)
                done = s->completed.count >= spec->completions && s->failed_indexes.count == 0;
        else if (spec->completions >= 0)
                done = s->succeeded >= spec->completions;
        else
                done = s->succeeded > 0 && n_live == 0;
        if (done)
                set_condition(s,
                              XP_JOB_SUCCESS_CRITERIA_MET,
                              true,
                              "CompletionsReached",
                              "Reached expected number of succeeded pods",
                              now_s);
        return done;
}

/* Ends a Job that failed or succeeded: its pods go, then the final condition is written. */
static void finish(const struct xp_job_pod *pods,
                   size_t n_pods,
                   bool failed,
                   int64_t now_s,
                   struct xp_job_status *s,
                   struct xp_job_plan *plan)
{
        bool left = false;

        for (size_t i = 0; i < n_pods; i++) {
                if (!job_pod_live(&pods[i]))
                        continue;
                left = true;
                if (!pods[i].deleting)
                        plan->delete[plan->n_delete++] = i;
        }
        if (left)
                return; /* their end is a change the controller will see */
        if (failed) {
                const struct xp_job_condition *t = &s->conditions[XP_JOB_FAILURE_TARGET];
                set_condition(s, XP_JOB_FAILED, true, t->reason, t->message, now_s);
                event(plan, true, t->reason, t->message);
        } else {
                set_condition(s,
                              XP_JOB_COMPLETE,
                              true,
                              "CompletionsReached",
                              "Reached expected number of succeeded pods",
                              now_s);
                s->completion_s = now_s;
                event(plan, false, "Completed", "Job completed");
        }
}

static void
tally(const struct xp_job_pod *pods, size_t n_pods, struct xp_job_status *s, size_t *ret_live)
{
        s->active = s->ready = s->terminating = 0;
        for (size_t i = 0; i < n_pods; i++) {
                if (!job_pod_live(&pods[i]))
                        continue;
                if (pods[i].deleting) {
                        s->terminating++;
                        continue;
                }
                s->active++;
                s->ready += pods[i].ready;
        }
        *ret_live = (size_t)s->active;
}

static int plan_init(const struct xp_job_spec *spec, size_t n_pods, struct xp_job_plan *plan)
{
        size_t creates = spec->parallelism > 0 ? (size_t)spec->parallelism : 0;

        *plan = (struct xp_job_plan){0};
        creates = creates < JOB_CREATE_BATCH ? creates : JOB_CREATE_BATCH;
        plan->create = calloc(creates + 1, sizeof(*plan->create));
        plan->delete = calloc(n_pods + 1, sizeof(*plan->delete));
        plan->counted = calloc(n_pods + 1, sizeof(*plan->counted));
        if (!plan->create || !plan->delete || !plan->counted) {
                xp_job_plan_done(plan);
                return -ENOMEM;
        }
        return 0;
}

/* Suspends the Job (deleting its pods); true while it stays suspended. */
static bool suspended(const struct xp_job_spec *spec,
                      const struct xp_job_pod *pods,
                      size_t n_pods,
                      int64_t now_s,
                      struct xp_job_status *s,
                      struct xp_job_plan *plan)
{
        if (!spec->suspend)
                return false;
        for (size_t i = 0; i < n_pods; i++)
                if (job_pod_live(&pods[i]) && !pods[i].deleting)
                        plan->delete[plan->n_delete++] = i;
        if (!has(s, XP_JOB_SUSPENDED)) {
                set_condition(s, XP_JOB_SUSPENDED, true, "JobSuspended", "Job suspended", now_s);
                event(plan, false, "Suspended", "Job suspended");
        }
        return true;
}

/* Starts the Job's clock: at its first sync, and again when it resumes (the deadline counts
 * from the resume). */
static void start(const struct xp_job_spec *spec,
                  int64_t now_s,
                  struct xp_job_status *s,
                  struct xp_job_plan *plan)
{
        if (spec->suspend)
                return;
        if (has(s, XP_JOB_SUSPENDED)) {
                set_condition(s, XP_JOB_SUSPENDED, false, "JobResumed", "Job resumed", now_s);
                event(plan, false, "Resumed", "Job resumed");
                s->start_s = now_s;
        } else if (s->start_s == 0) {
                s->start_s = now_s;
        }
}

int xp_job_sync(const struct xp_job_spec *spec,
                const struct xp_job_pod *pods,
                size_t n_pods,
                int64_t now_s,
                struct xp_job_status *status,
                struct xp_job_plan *ret)
{
        struct job_verdict verdict = {0};
        size_t n_live;
        int r;

        r = plan_init(spec, n_pods, ret);
        if (r < 0)
                return r;
        if (xp_job_finished(status)) {
                finished_ttl(spec, status, now_s, ret);
                return 0;
        }
        job_count_finished(spec, pods, n_pods, now_s, status, ret, &verdict);
        tally(pods, n_pods, status, &n_live);
        start(spec, now_s, status, ret);
        if (failing(spec, &verdict, now_s, status)) {
                finish(pods, n_pods, true, now_s, status, ret);
                return 0;
        }
        if (succeeding(spec, n_live, now_s, status)) {
                finish(pods, n_pods, false, now_s, status, ret);
                return 0;
        }
        if (suspended(spec, pods, n_pods, now_s, status, ret))
                return 0;
        if (spec->active_deadline_s >= 0)
                job_plan_requeue(ret, status->start_s + spec->active_deadline_s);
        r = job_manage_pods(spec, pods, n_pods, now_s, status, ret);
        if (r < 0)
                xp_job_plan_done(ret);
        return r;
}
