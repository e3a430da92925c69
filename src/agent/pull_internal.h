/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* What pull.c (the waits, on the reconcile thread) and pull_jobs.c (the pulls) share. */

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "pull.h"
#include "xpool/workers.h"

#define XP_PULL_THREADS_MAX 16
#define XP_PULL_SECRETS_MAX 16

enum xp_pull_state {
        XP_PULL_QUEUED,
        XP_PULL_RUNNING,
        XP_PULL_DONE
};

/* One pull of one image with one set of pull secrets. Guarded by the pulls' lock but for
 * what its thread writes while it is RUNNING (read only once DONE). */
struct xp_pull_job {
        struct xp_work work; /* first: the pullers' pool's */
        char *key;           /* image, namespace, secrets */
        char *image, *namespace;
        json_t *secrets; /* the names of the pod's imagePullSecrets */
        enum xp_pull_state state;
        unsigned refs; /* waits holding it, and its thread while running */
        int64_t queued_ns, started_ns, finished_ns;
        int result;
        char message[XP_ERROR_MSG_MAX];
        uint64_t size;
        char *image_id;
        struct xp_pull_job *next;
};

/* One container waiting for its image (the reconcile thread's alone). */
struct xp_pull_wait {
        char *uid, *container;
        bool init;
        char *image;
        struct xp_pull_job *job; /* the pull it waits for; NULL: none */
        unsigned attempt;        /* the start it was made ready for */
        bool ready;
        unsigned failures;
        int64_t retry_at_ns; /* the back-off's end */
        const char *reason;  /* ErrImagePull, ImagePullBackOff, ErrImageNeverPull; NULL: none */
        char *message;
        struct xp_pull_wait *next;
};

struct xp_agent_pulls {
        struct xp_image_store *store;
        const struct xp_apiclient_options *api;
        struct xp_agent_events *events;
        int64_t backoff_initial_ms, backoff_max_ms;
        struct xp_workers *workers; /* the pullers; its lock is the pulls' lock */
        struct xp_pull_job *jobs;
        struct xp_pull_wait *waits;
        atomic_bool stopping, images_changed;
        int done_fd;
};

/* The pulls' lock (the pullers' pool's; none before it exists). */
static inline void xp_pulls_lock(struct xp_agent_pulls *p)
{
        if (p->workers)
                xp_workers_lock(p->workers);
}

static inline void xp_pulls_unlock(struct xp_agent_pulls *p)
{
        if (p->workers)
                xp_workers_unlock(p->workers);
}

static inline int64_t xp_pull_now_ns(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_REALTIME, &ts);
        return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The job for image (+ secrets), a reference taken; NULL: -ENOMEM. Takes the lock. */
struct xp_pull_job *
xp_pull_job_get(struct xp_agent_pulls *p, const char *image, const char *ns, const json_t *secrets);
/* Drops a reference; the caller holds the lock. */
void xp_pull_job_unref(struct xp_agent_pulls *p, struct xp_pull_job *job);
/* Frees every wait (at the end). */
void xp_pull_waits_free(struct xp_agent_pulls *p);
