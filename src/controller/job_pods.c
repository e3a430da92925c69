/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The pods of a running Job: as many as parallelism allows and the remaining completions need,
 * after the pod failure backoff; extra ones deleted (pending and not ready first, newest
 * first). An Indexed Job creates the lowest indexes that are neither completed, failed nor
 * held by a pod, and deletes pods of an index that is done, out of range or held twice.
 */
#include <errno.h>
#include <stdlib.h>

#include "job_internal.h"
#include "xpool/macro.h"

static void plan_delete(struct xp_job_plan *plan, size_t i)
{
        plan->delete[plan->n_delete++] = i;
}

static void plan_create(struct xp_job_plan *plan, int32_t index, int32_t failures)
{
        plan->create[plan->n_create++] =
            (struct xp_job_create){.index = index, .failures = failures};
}

/* Kubernetes' order for deleting extra pods: not scheduled/pending, not ready, then newest. */
static int rank(const struct xp_job_pod *p)
{
        return (p->phase == XP_JOB_POD_PENDING ? 0 : 2) + (p->ready ? 1 : 0);
}

static void delete_extra(const struct xp_job_pod *pods,
                         const size_t *live,
                         size_t n_live,
                         size_t n_extra,
                         struct xp_job_plan *plan)
{
        _cleanup_free_ uint8_t *taken = calloc(n_live + 1, 1);
        for (size_t k = 0; k < n_extra && taken; k++) {
                size_t best = SIZE_MAX;
                for (size_t j = 0; j < n_live; j++) {
                        if (taken[j])
                                continue;
                        const struct xp_job_pod *p = &pods[live[j]],
                                                *b = best == SIZE_MAX ? NULL : &pods[live[best]];
                        if (!b || rank(p) < rank(b) ||
                            (rank(p) == rank(b) && p->created_s > b->created_s))
                                best = j;
                }
                if (best == SIZE_MAX)
                        break;
                taken[best] = 1;
                plan_delete(plan, live[best]);
        }
}

/* The Job's backoff: the time before which no replacement is created, 0 when none. */
static int64_t backoff_until(const struct xp_job_status *status)
{
        if (status->failures_since_success <= 0)
                return 0;
        return status->last_failure_s + xp_job_backoff_s(status->failures_since_success);
}

static int manage_nonindexed(const struct xp_job_spec *spec,
                             const struct xp_job_pod *pods,
                             size_t n_pods,
                             int64_t now_s,
                             const struct xp_job_status *status,
                             struct xp_job_plan *plan)
{
        _cleanup_free_ size_t *live = calloc(n_pods + 1, sizeof(*live));
        size_t n_live = 0, terminating = 0;

        if (!live)
                return -ENOMEM;
        for (size_t i = 0; i < n_pods; i++) {
                if (!job_pod_live(&pods[i]))
                        continue;
                if (pods[i].deleting)
                        terminating++;
                else
                        live[n_live++] = i;
        }
        int64_t want = spec->parallelism;
        if (spec->completions >= 0) {
                int64_t remaining = (int64_t)spec->completions - status->succeeded;
                want = remaining < want ? remaining : want;
        } else if (status->succeeded > 0) {
                want = (int64_t)n_live; /* a work queue: once one succeeded, no new pods */
        }
        if (want < 0)
                want = 0;
        size_t occupied = n_live + (spec->replace_failed_only ? terminating : 0);
        if ((int64_t)n_live > want) {
                delete_extra(pods, live, n_live, n_live - (size_t)want, plan);
                return 0;
        }
        if ((int64_t)occupied >= want)
                return 0;
        int64_t until = backoff_until(status);
        if (until > now_s) {
                job_plan_requeue(plan, until);
                return 0;
        }
        for (int64_t k = (int64_t)occupied; k < want && plan->n_create < JOB_CREATE_BATCH; k++)
                plan_create(plan, -1, 0);
        if ((int64_t)occupied + (int64_t)plan->n_create < want)
                job_plan_requeue(plan, now_s);
        return 0;
}

/* An index's failures so far (the highest count of its failed pods, plus the failure) and the
 * time of its last one. */
static int32_t index_failures(const struct xp_job_spec *spec,
                              const struct xp_job_pod *pods,
                              size_t n_pods,
                              int32_t index,
                              int64_t *ret_last)
{
        int32_t failures = 0;
        char message[256];

        *ret_last = 0;
        for (size_t i = 0; i < n_pods; i++) {
                const struct xp_job_pod *p = &pods[i];
                if (p->index != index || p->phase != XP_JOB_POD_FAILED)
                        continue;
                bool ignored =
                    job_action_of(spec, p, message, sizeof(message)) == XP_JOB_ACTION_IGNORE;
                int32_t f = p->failures + (ignored ? 0 : 1);
                failures = f > failures ? f : failures;
                *ret_last = p->finished_s > *ret_last ? p->finished_s : *ret_last;
        }
        return failures;
}

/* Marks what live pods hold, and plans the deletion of those holding nothing valid. */
static size_t hold_indexes(const struct xp_job_spec *spec,
                           const struct xp_job_pod *pods,
                           size_t n_pods,
                           const struct xp_job_status *status,
                           uint8_t *held,
                           size_t *live,
                           struct xp_job_plan *plan)
{
        size_t n_live = 0;

        for (size_t i = 0; i < n_pods; i++) {
                const struct xp_job_pod *p = &pods[i];
                if (!job_pod_live(p))
                        continue;
                bool valid = p->index >= 0 && p->index < spec->completions && !held[p->index] &&
                             !xp_job_indexes_has(&status->completed, p->index) &&
                             !xp_job_indexes_has(&status->failed_indexes, p->index);
                if (p->deleting) {
                        if (valid && spec->replace_failed_only)
                                held[p->index] = 1;
                        continue;
                }
                if (!valid) {
                        plan_delete(plan, i);
                        continue;
                }
                held[p->index] = 1;
                live[n_live++] = i;
        }
        return n_live;
}

static int manage_indexed(const struct xp_job_spec *spec,
                          const struct xp_job_pod *pods,
                          size_t n_pods,
                          int64_t now_s,
                          const struct xp_job_status *status,
                          struct xp_job_plan *plan)
{
        _cleanup_free_ uint8_t *held = calloc((size_t)spec->completions + 1, 1);
        _cleanup_free_ size_t *live = calloc(n_pods + 1, sizeof(*live));
        bool per_index = spec->backoff_limit_per_index >= 0;

        if (!held || !live)
                return -ENOMEM;
        size_t n_live = hold_indexes(spec, pods, n_pods, status, held, live, plan);
        int64_t remaining =
            (int64_t)spec->completions - status->completed.count - status->failed_indexes.count;
        int64_t want = remaining < spec->parallelism ? remaining : spec->parallelism;
        if ((int64_t)n_live > want) {
                delete_extra(pods, live, n_live, n_live - (size_t)(want > 0 ? want : 0), plan);
                return 0;
        }
        int64_t until = per_index ? 0 : backoff_until(status);
        if (until > now_s) {
                job_plan_requeue(plan, until);
                return 0;
        }
        int64_t room = want - (int64_t)n_live;
        for (int32_t i = 0; i < spec->completions && room > 0; i++) {
                if (held[i] || xp_job_indexes_has(&status->completed, i) ||
                    xp_job_indexes_has(&status->failed_indexes, i))
                        continue;
                if (plan->n_create == JOB_CREATE_BATCH) {
                        job_plan_requeue(plan, now_s);
                        break;
                }
                int64_t last;
                int32_t failures = index_failures(spec, pods, n_pods, i, &last);
                if (per_index && failures > 0 && last + xp_job_backoff_s(failures) > now_s) {
                        job_plan_requeue(plan, last + xp_job_backoff_s(failures));
                        continue;
                }
                plan_create(plan, i, per_index ? failures : 0);
                room--;
        }
        return 0;
}

int job_manage_pods(const struct xp_job_spec *spec,
                    const struct xp_job_pod *pods,
                    size_t n_pods,
                    int64_t now_s,
                    const struct xp_job_status *status,
                    struct xp_job_plan *plan)
{
        if (spec->indexed)
                return manage_indexed(spec, pods, n_pods, now_s, status, plan);
        return manage_nonindexed(spec, pods, n_pods, now_s, status, plan);
}
