/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Pods created in parallel, in Kubernetes' slow-start batches (1, 2, 4, ...): each batch's
 * creations run on the creators' threads at once (the store commits them together), and a
 * batch with a failure ends the run, so that a refusal (a quota, a bad template) costs one
 * failed create, not hundreds.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "workloads.h"
#include "xpool/workers.h"

#define CREATORS 8

struct create_job {
        struct xp_work work; /* first: the pool hands this back */
        struct xp_workloads *w;
        const json_t *owner;
        const char *api_version, *kind;
        const json_t *labels;
        json_t *affinity; /* owned */
        int result;
};

static void run_job(void *userdata, void *ctx, struct xp_work *work)
{
        struct create_job *job = (struct create_job *)work;

        (void)userdata;
        (void)ctx;
        job->result = wl_create_pod(
            job->w, job->owner, job->api_version, job->kind, job->labels, job->affinity);
}

static void free_job(struct xp_work *work)
{
        struct create_job *job = (struct create_job *)work;

        json_decref(job->affinity);
        free(job);
}

static const struct xp_workers_ops creator_ops = {.run = run_job, .free = free_job};

int wl_creators_start(struct xp_workloads *w, struct xp_error *err)
{
        const struct xp_workers_options options = {
            .ops = &creator_ops, .userdata = w, .threads = CREATORS, .notify = true};

        return xp_workers_new(&options, &w->creators, err);
}

/* Waits for n jobs to come back; returns how many failed. */
static size_t collect(struct xp_workloads *w, size_t n)
{
        size_t back = 0, failed = 0;

        while (back < n) {
                struct xp_work *done = xp_workers_done(w->creators);
                struct pollfd p = {.fd = xp_workers_fd(w->creators), .events = POLLIN};

                if (!done) {
                        (void)poll(&p, 1, 1000);
                        continue;
                }
                while (done) {
                        struct create_job *job = (struct create_job *)done;

                        done = done->next;
                        failed += job->result < 0;
                        back++;
                        free_job(&job->work);
                }
        }
        return failed;
}

size_t wl_create_pods(struct xp_workloads *w,
                      const json_t *owner,
                      const char *api_version,
                      const char *kind,
                      const json_t *labels,
                      json_t *const *affinities,
                      size_t n)
{
        size_t created = 0, batch = 1;

        while (created < n) {
                size_t size = batch < n - created ? batch : n - created, submitted = 0, failed;

                for (size_t i = 0; i < size; i++) {
                        struct create_job *job = calloc(1, sizeof(*job));

                        if (!job)
                                break;
                        *job = (struct create_job){
                            .w = w,
                            .owner = owner,
                            .api_version = api_version,
                            .kind = kind,
                            .labels = labels,
                            .affinity = affinities ? json_incref(affinities[created + i]) : NULL};
                        xp_workers_submit(w->creators, &job->work);
                        submitted++;
                }
                failed = collect(w, submitted);
                created += submitted - failed;
                if (failed || submitted < size)
                        return created;
                batch *= 2;
        }
        return created;
}
