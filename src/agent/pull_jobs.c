/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The pulls themselves: a queue of jobs (one per image and set of pull secrets, shared by every
 * container that waits for it) and a pool of threads (xpool/workers.h) that run them, each with
 * its own API client to read the pull secrets. A finished job wakes the reconcile loop through
 * an eventfd.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "pull_internal.h"
#include "xpool/base64.h"
#include "xpool/log.h"

void xp_pull_job_unref(struct xp_agent_pulls *p, struct xp_pull_job *job)
{
        struct xp_pull_job **pp;

        if (!job || --job->refs > 0)
                return;
        for (pp = &p->jobs; *pp && *pp != job; pp = &(*pp)->next)
                ;
        if (*pp)
                *pp = job->next;
        free(job->key);
        free(job->image);
        free(job->namespace);
        json_decref(job->secrets);
        free(job->image_id);
        free(job);
}

/* The docker config of one pull secret, when the server serves it: NULL when it does not
 * (Secrets are not served yet, or this one is missing: the node's credentials still apply). */
static char *read_secret(struct xp_apiclient *client, const char *ns, const char *name)
{
        json_auto_t *secret = NULL;
        const json_t *data;
        const char *type, *b64;
        char path[512], *text = NULL;
        size_t len = 0;

        snprintf(path, sizeof(path), "/api/v1/namespaces/%s/secrets/%s", ns, name);
        if (!client || xp_apiclient_json(client, "GET", path, NULL, NULL, NULL, &secret, NULL) < 0)
                return NULL;
        type = json_string_value(json_object_get(secret, "type"));
        data = json_object_get(secret, "data");
        b64 = json_string_value(json_object_get(data,
                                                type && strcmp(type, "kubernetes.io/dockercfg") == 0
                                                    ? ".dockercfg"
                                                    : ".dockerconfigjson"));
        if (!b64 || xp_base64_decode(b64, strlen(b64), &text, &len) < 0)
                return NULL;
        return text;
}

static void run_job(struct xp_agent_pulls *p, struct xp_pull_job *job, struct xp_apiclient *client)
{
        char *configs[XP_PULL_SECRETS_MAX];
        size_t n = 0, i;
        json_t *s;
        struct xp_image_pull_options o = {.cancel = &p->stopping};
        struct xp_image *img = NULL;
        struct xp_error err = {0};

        json_array_foreach(
            job->secrets,
            i,
            s) if (n < XP_PULL_SECRETS_MAX &&
                   (configs[n] = read_secret(client, job->namespace, json_string_value(s)))) n++;
        o.docker_configs = (const char *const *)configs;
        o.n_docker_configs = n;
        job->result = xp_image_pull(p->store, job->image, &o, &img, &err);
        if (job->result < 0)
                snprintf(job->message, sizeof(job->message), "%s", xp_error_message(&err));
        else {
                job->size = img->size;
                job->image_id = strdup(img->id);
        }
        xp_image_free(img);
        for (i = 0; i < n; i++) {
                explicit_bzero(configs[i], strlen(configs[i]));
                free(configs[i]);
        }
}

/* Each puller thread has its own API client to read the pull secrets (none without a server). */
static int puller_begin(void *userdata, void **ret_ctx)
{
        struct xp_agent_pulls *p = userdata;
        struct xp_apiclient *client = NULL;

        if (p->api && xp_apiclient_new(p->api, &client, NULL) < 0)
                client = NULL;
        *ret_ctx = client;
        return 0;
}

static void puller_end(void *userdata, void *ctx)
{
        (void)userdata;
        xp_apiclient_free(ctx);
}

/* The first queued job, now running (under the lock); none while stopping. */
static int
puller_take(void *userdata, void *ctx, bool stopping, struct xp_work **ret, int64_t *ret_wake_ns)
{
        struct xp_agent_pulls *p = userdata;
        struct xp_pull_job *job;

        (void)ctx;
        *ret_wake_ns = 0;
        if (stopping)
                return 0;
        for (job = p->jobs; job && job->state != XP_PULL_QUEUED; job = job->next)
                ;
        if (!job)
                return 0;
        job->state = XP_PULL_RUNNING;
        job->refs++; /* the thread's, while it runs */
        *ret = &job->work;
        return 1;
}

static void puller_run(void *userdata, void *ctx, struct xp_work *work)
{
        struct xp_pull_job *job = (struct xp_pull_job *)work;

        job->started_ns = xp_pull_now_ns();
        run_job(userdata, job, ctx);
        job->finished_ns = xp_pull_now_ns();
}

/* The job is done (under the lock): the reconcile loop is woken to look. */
static void puller_done(void *userdata, void *ctx, struct xp_work *work)
{
        struct xp_agent_pulls *p = userdata;
        struct xp_pull_job *job = (struct xp_pull_job *)work;
        uint64_t one = 1;

        (void)ctx;
        job->state = XP_PULL_DONE;
        if (job->result >= 0)
                atomic_store(&p->images_changed, true);
        xp_pull_job_unref(p, job);
        if (write(p->done_fd, &one, sizeof(one)) < 0)
                xp_log(LOG_DEBUG, "agent: waking the reconcile loop: %m");
}

/* Pulls in flight give up as the agent stops (their cancel flag). */
static void pullers_stopping(void *userdata)
{
        struct xp_agent_pulls *p = userdata;

        atomic_store(&p->stopping, true);
}

static const struct xp_workers_ops puller_ops = {
    .run = puller_run,
    .thread_begin = puller_begin,
    .thread_end = puller_end,
    .take = puller_take,
    .done = puller_done,
    .stopping = pullers_stopping,
};

/* The job for image with these secrets: the one queued or running, else a new one. */
struct xp_pull_job *
xp_pull_job_get(struct xp_agent_pulls *p, const char *image, const char *ns, const json_t *secrets)
{
        _cleanup_free_ char *key = NULL, *names = json_dumps(secrets ? secrets : json_null(),
                                                             JSON_COMPACT | JSON_ENCODE_ANY);
        struct xp_pull_job *job;

        if (!names || asprintf(&key, "%s\n%s\n%s", image, ns, names) < 0)
                return NULL;
        xp_pulls_lock(p);
        for (job = p->jobs; job; job = job->next)
                if (job->state != XP_PULL_DONE && strcmp(job->key, key) == 0)
                        break;
        if (!job && (job = calloc(1, sizeof(*job)))) {
                job->key = TAKE_PTR(key);
                job->image = strdup(image);
                job->namespace = strdup(ns);
                job->secrets = json_deep_copy(secrets ? secrets : json_array());
                job->queued_ns = xp_pull_now_ns();
                if (!job->key || !job->image || !job->namespace || !job->secrets) {
                        job->refs = 1;
                        xp_pull_job_unref(p, job);
                        job = NULL;
                } else {
                        job->next = p->jobs;
                        p->jobs = job;
                        xp_workers_wake(p->workers);
                }
        }
        if (job)
                job->refs++;
        xp_pulls_unlock(p);
        return job;
}

int xp_agent_pulls_new(const struct xp_agent_pulls_config *c,
                       struct xp_agent_pulls **ret,
                       struct xp_error *err)
{
        struct xp_agent_pulls *p = calloc(1, sizeof(*p));
        unsigned n = c->threads ? c->threads : 4;
        int r = 0;

        if (!p)
                return -ENOMEM;
        p->store = c->store;
        p->api = c->api;
        p->events = c->events;
        p->backoff_initial_ms = c->backoff_initial_ms > 0 ? c->backoff_initial_ms : 10000;
        p->backoff_max_ms = c->backoff_max_ms > 0 ? c->backoff_max_ms : 300000;
        p->done_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (p->done_fd < 0)
                r = xp_errorf(err, -errno, "eventfd: %m");
        if (r >= 0)
                r = xp_workers_new(
                    &(struct xp_workers_options){
                        .ops = &puller_ops,
                        .userdata = p,
                        .threads = n < XP_PULL_THREADS_MAX ? n : XP_PULL_THREADS_MAX},
                    &p->workers,
                    err);
        if (r < 0) {
                xp_agent_pulls_free(p);
                return r;
        }
        *ret = p;
        return 0;
}

void xp_agent_pulls_free(struct xp_agent_pulls *p)
{
        if (!p)
                return;
        /* the waits first, under the lock: a puller may still drop its job meanwhile */
        xp_pull_waits_free(p);
        xp_workers_free(p->workers);
        p->workers = NULL;
        while (p->jobs) {
                p->jobs->refs = 1;
                xp_pull_job_unref(p, p->jobs);
        }
        if (p->done_fd >= 0)
                close(p->done_fd);
        free(p);
}

int xp_agent_pulls_fd(const struct xp_agent_pulls *p)
{
        return p ? p->done_fd : -1;
}

bool xp_agent_pulls_images_changed(struct xp_agent_pulls *p)
{
        return p && atomic_exchange(&p->images_changed, false);
}
