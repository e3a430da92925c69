/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* What job.c and job_count.c share. */

#include <stdint.h>
#include <stdio.h>

#include "job.h"

#define JOB_CREATE_BATCH 500 /* pods created in one sync at most (Kubernetes' burst) */

/* What counting the finished pods found that ends the Job. */
struct job_verdict {
        bool fail_job;          /* a FailJob rule matched */
        int64_t last_success_s; /* the latest success counted in this sync, INT64_MIN: none */
        char message[256];
};

/* The action podFailurePolicy takes for a failed pod (Count when no rule matches). */
enum xp_job_action job_action_of(const struct xp_job_spec *spec,
                                 const struct xp_job_pod *pod,
                                 char *message,
                                 size_t size);

/* Counts the finished pods not yet counted into status, listing them in plan->counted. */
void job_count_finished(const struct xp_job_spec *spec,
                        const struct xp_job_pod *pods,
                        size_t n_pods,
                        int64_t now_s,
                        struct xp_job_status *status,
                        struct xp_job_plan *plan,
                        struct job_verdict *v);

/* Plans the pods of a running Job (job_pods.c): creates up to parallelism, deletes the extra. */
int job_manage_pods(const struct xp_job_spec *spec,
                    const struct xp_job_pod *pods,
                    size_t n_pods,
                    int64_t now_s,
                    const struct xp_job_status *status,
                    struct xp_job_plan *plan);

/* Whether a pod still runs (or waits to): not Succeeded or Failed. */
static inline bool job_pod_live(const struct xp_job_pod *pod)
{
        return pod->phase == XP_JOB_POD_PENDING || pod->phase == XP_JOB_POD_RUNNING;
}

static inline void job_plan_requeue(struct xp_job_plan *plan, int64_t at)
{
        if (at > 0 && (plan->requeue_s == 0 || at < plan->requeue_s))
                plan->requeue_s = at;
}
