/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A Job's status as the controller keeps it, and counting finished pods into it: each pod is
 * counted once (the caller then removes its tracking finalizer), successes by index for an
 * Indexed Job, failures through podFailurePolicy (Ignore does not count, FailIndex and a
 * per-index backoff limit fail the index, FailJob fails the Job).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "job_internal.h"

static const char *const condition_names[XP_JOB_CONDITIONS] = {
    [XP_JOB_SUSPENDED] = "Suspended",
    [XP_JOB_FAILURE_TARGET] = "FailureTarget",
    [XP_JOB_SUCCESS_CRITERIA_MET] = "SuccessCriteriaMet",
    [XP_JOB_COMPLETE] = "Complete",
    [XP_JOB_FAILED] = "Failed",
};

const char *xp_job_condition_to_string(enum xp_job_condition_type type)
{
        return type < XP_JOB_CONDITIONS ? condition_names[type] : NULL;
}

int xp_job_status_init(struct xp_job_status *status, const struct xp_job_spec *spec)
{
        int32_t n = spec->indexed && spec->completions > 0 ? spec->completions : 0;
        struct xp_job_status s = {0};
        int r;

        r = xp_job_indexes_init(&s.completed, n);
        if (r < 0)
                return r;
        r = xp_job_indexes_init(&s.failed_indexes, n);
        if (r < 0) {
                xp_job_indexes_done(&s.completed);
                return r;
        }
        *status = s;
        return 0;
}

void xp_job_status_done(struct xp_job_status *status)
{
        xp_job_indexes_done(&status->completed);
        xp_job_indexes_done(&status->failed_indexes);
}

bool xp_job_finished(const struct xp_job_status *status)
{
        return (status->conditions[XP_JOB_COMPLETE].set &&
                status->conditions[XP_JOB_COMPLETE].status) ||
               (status->conditions[XP_JOB_FAILED].set && status->conditions[XP_JOB_FAILED].status);
}

int64_t xp_job_backoff_s(int32_t failures)
{
        int64_t d = XP_JOB_BACKOFF_S;

        if (failures <= 0)
                return 0;
        for (int32_t i = 1; i < failures && d < XP_JOB_BACKOFF_MAX_S; i++)
                d *= 2;
        return d < XP_JOB_BACKOFF_MAX_S ? d : XP_JOB_BACKOFF_MAX_S;
}

enum xp_job_action job_action_of(const struct xp_job_spec *spec,
                                 const struct xp_job_pod *pod,
                                 char *message,
                                 size_t size)
{
        size_t rule;

        if (xp_job_policy_match(spec, pod, &rule, message, size) < 0)
                return XP_JOB_ACTION_COUNT;
        return spec->rules[rule].action;
}

static void count_failed(const struct xp_job_spec *spec,
                         const struct xp_job_pod *pod,
                         int64_t now_s,
                         struct xp_job_status *status,
                         struct job_verdict *v)
{
        char message[256];
        enum xp_job_action action = job_action_of(spec, pod, message, sizeof(message));
        bool per_index = spec->indexed && spec->backoff_limit_per_index >= 0;

        if (action == XP_JOB_ACTION_IGNORE)
                return;
        status->failed++;
        int64_t at = pod->finished_s > 0 ? pod->finished_s : now_s;
        /* a failure at or after this sync's latest success starts the backoff again */
        if (at >= v->last_success_s)
                status->failures_since_success++;
        if (at > status->last_failure_s)
                status->last_failure_s = at;
        if (action == XP_JOB_ACTION_FAIL_JOB && !v->fail_job) {
                v->fail_job = true;
                snprintf(v->message, sizeof(v->message), "%s", message);
        }
        if (per_index && (action == XP_JOB_ACTION_FAIL_INDEX ||
                          pod->failures + 1 > spec->backoff_limit_per_index))
                xp_job_indexes_add(&status->failed_indexes, pod->index);
}

void job_count_finished(const struct xp_job_spec *spec,
                        const struct xp_job_pod *pods,
                        size_t n_pods,
                        int64_t now_s,
                        struct xp_job_status *status,
                        struct xp_job_plan *plan,
                        struct job_verdict *v)
{
        v->last_success_s = INT64_MIN;
        for (size_t i = 0; i < n_pods; i++) {
                const struct xp_job_pod *pod = &pods[i];
                if (!pod->counted && pod->phase == XP_JOB_POD_SUCCEEDED) {
                        int64_t at = pod->finished_s > 0 ? pod->finished_s : now_s;
                        v->last_success_s = at > v->last_success_s ? at : v->last_success_s;
                        status->failures_since_success = 0;
                }
        }
        for (size_t i = 0; i < n_pods; i++) {
                const struct xp_job_pod *pod = &pods[i];
                if (pod->counted ||
                    (pod->phase != XP_JOB_POD_SUCCEEDED && pod->phase != XP_JOB_POD_FAILED))
                        continue;
                if (pod->phase == XP_JOB_POD_SUCCEEDED) {
                        if (!spec->indexed) {
                                status->succeeded++;
                        } else if (pod->index >= 0 && pod->index < status->completed.n &&
                                   !xp_job_indexes_has(&status->completed, pod->index)) {
                                /* only a valid index's first success counts */
                                xp_job_indexes_add(&status->completed, pod->index);
                                status->succeeded++;
                        }
                } else {
                        count_failed(spec, pod, now_s, status, v);
                }
                plan->counted[plan->n_counted++] = i;
        }
}
