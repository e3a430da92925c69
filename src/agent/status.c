/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The status writers: a few threads, each with its own client (its own connection), PATCH pod
 * statuses (a strategic merge patch whose `$patch: replace` makes the whole status replace the
 * stored one) and DELETE pods whose containers all stopped after their deletion. What to write
 * waits in the retry queue (retryq.c): one entry per pod, the newest status replacing one not yet
 * written, so a burst of changes of one pod is one write and the writes of many pods go out
 * together and share the server's group commits. A write that fails is tried again, with a
 * back-off, until it lands: only a pod that is gone (404) drops its writes.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent/retryq.h"
#include "agent_internal.h"
#include "xpool/log.h"
#include "xpool/strutil.h"
#include "xpool/timeutil.h"

#define MAX_THREADS 16
/* A failed write waits 0.2 s, doubling at each failure, at most 3.2 s: a server that comes back
 * finds the writes going again within about three seconds (at once, after one of them lands). */
#define RETRY_INITIAL_NS (200 * 1000000LL)
#define RETRY_MAX_NS     (3200 * 1000000LL)
/* A write that keeps failing is logged at its first failure and then every this many tries. */
#define LOG_EVERY_TRIES 16

struct xp_agent_status {
        pthread_mutex_t lock;
        pthread_cond_t cond;
        struct xp_retryq *queue;
        bool stopping;
        const struct xp_apiclient_options *api;
        pthread_t threads[MAX_THREADS];
        struct xp_apiclient *clients[MAX_THREADS]; /* cancelled on free: no wait for a timeout */
        unsigned n_threads;
};

int xp_agent_status_put(struct xp_agent_status *s,
                        const char *pod_namespace,
                        const char *pod_name,
                        const char *pod_uid,
                        json_t *status)
{
        int r;

        pthread_mutex_lock(&s->lock);
        r = xp_retryq_put_status(s->queue, pod_namespace, pod_name, pod_uid, status);
        pthread_cond_signal(&s->cond);
        pthread_mutex_unlock(&s->lock);
        return r;
}

int xp_agent_status_delete(struct xp_agent_status *s,
                           const char *pod_namespace,
                           const char *pod_name,
                           const char *pod_uid)
{
        int r;

        pthread_mutex_lock(&s->lock);
        r = xp_retryq_put_delete(s->queue, pod_namespace, pod_name, pod_uid);
        pthread_cond_signal(&s->cond);
        pthread_mutex_unlock(&s->lock);
        return r;
}

void xp_agent_status_forget(struct xp_agent_status *s, const char *pod_uid)
{
        pthread_mutex_lock(&s->lock);
        xp_retryq_drop(s->queue, pod_uid);
        pthread_mutex_unlock(&s->lock);
}

static int
write_status(struct xp_apiclient *client, const struct xp_retryq_write *w, struct xp_error *err)
{
        /* the status is whole (podsync starts from the stored one): it replaces the stored one,
         * so what it no longer has (a condition's old reason, a waiting state) goes too */
        json_auto_t *copy = json_copy(w->status), *body = NULL;
        char path[1024];

        if (!copy || json_object_set_new(copy, "$patch", json_string("replace")) < 0)
                return -ENOMEM;
        body = json_pack("{s:O}", "status", copy);
        if (!body)
                return -ENOMEM;
        snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s/status", w->namespace, w->name);
        return xp_apiclient_json(
            client, "PATCH", path, "application/strategic-merge-patch+json", body, NULL, NULL, err);
}

/* Whether the pod named by w is still the one of w's uid: 1 yes, 0 gone or replaced, -errno. */
static int same_pod(struct xp_apiclient *client, const struct xp_retryq_write *w)
{
        json_auto_t *pod = NULL;
        char path[1024];
        int r;

        snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s", w->namespace, w->name);
        r = xp_apiclient_json(client, "GET", path, NULL, NULL, NULL, &pod, NULL);
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return r;
        return xp_streq0(
            json_string_value(json_object_get(json_object_get(pod, "metadata"), "uid")), w->uid);
}

static int
delete_pod(struct xp_apiclient *client, const struct xp_retryq_write *w, struct xp_error *err)
{
        json_auto_t *body = json_pack("{s:s, s:s, s:i, s:{s:s}}",
                                      "kind",
                                      "DeleteOptions",
                                      "apiVersion",
                                      "v1",
                                      "gracePeriodSeconds",
                                      0,
                                      "preconditions",
                                      "uid",
                                      w->uid);
        char path[1024];
        int r;

        if (!body)
                return -ENOMEM;
        snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s", w->namespace, w->name);
        r = xp_apiclient_json(client, "DELETE", path, NULL, body, NULL, NULL, err);
        /* 409: the uid precondition failed, or the server lost a race; read the pod again to
         * tell a pod deleted (and maybe made again) by someone else from one still to delete */
        if (r == -EEXIST && same_pod(client, w) == 0)
                return -ENOENT;
        return r;
}

/* What an answer means for the write: only a pod that is gone ends it unwritten. */
static enum xp_retryq_outcome outcome_of(int r)
{
        if (r >= 0)
                return XP_RETRYQ_LANDED;
        switch (r) {
        case -ENOENT:
                return XP_RETRYQ_GONE;
        case -EINVAL:
        case -EPERM:
        case -EEXIST:
        case -E2BIG:
        case -ENOMEM:
                return XP_RETRYQ_REFUSED;
        default:
                return XP_RETRYQ_UNREACHABLE;
        }
}

/* Logs how a write went (pod is "NAMESPACE/NAME", tries the failures before it). */
static void log_result(const char *pod,
                       unsigned tries,
                       bool delete,
                       enum xp_retryq_outcome outcome,
                       int64_t wait_ns,
                       const struct xp_error *err)
{
        const char *what = delete ? "deleting" : "writing the status of";

        if (outcome == XP_RETRYQ_LANDED && tries > 0)
                xp_log(LOG_INFO,
                       "agent: %s pod %s went through after %u failed tries",
                       what,
                       pod,
                       tries);
        else if ((outcome == XP_RETRYQ_UNREACHABLE || outcome == XP_RETRYQ_REFUSED) &&
                 tries % LOG_EVERY_TRIES == 0)
                xp_log(LOG_WARNING,
                       "agent: %s pod %s failed (%u tries), trying again in %.1f s: %s",
                       what,
                       pod,
                       tries + 1,
                       (double)wait_ns / 1e9,
                       xp_error_message(err));
}

/* Waits for a due write; false when stopping. Called and returns with the lock held. */
static bool wait_write(struct xp_agent_status *s, struct xp_retryq_write *w)
{
        while (!s->stopping) {
                int64_t next;

                if (xp_retryq_take(s->queue, xp_monotonic_ns(), w, &next))
                        return true;
                if (next == 0) {
                        pthread_cond_wait(&s->cond, &s->lock);
                } else {
                        struct timespec until = {.tv_sec = next / 1000000000,
                                                 .tv_nsec = next % 1000000000};

                        pthread_cond_timedwait(&s->cond, &s->lock, &until);
                }
        }
        return false;
}

static void *writer_thread(void *userdata)
{
        struct xp_agent_status *s = userdata;
        _cleanup_(xp_apiclient_freep) struct xp_apiclient *client = NULL;
        struct xp_error err = {0};
        struct xp_retryq_write w;
        int r;

        r = xp_apiclient_new(s->api, &client, &err);
        if (r < 0) {
                xp_log(LOG_ERR,
                       "agent: cannot make a status writer's client: %s",
                       xp_error_message(&err));
                return NULL;
        }
        pthread_mutex_lock(&s->lock);
        for (unsigned i = 0; i < MAX_THREADS; i++)
                if (!s->clients[i]) {
                        s->clients[i] = client;
                        break;
                }
        if (s->stopping)
                xp_apiclient_cancel(client);
        while (wait_write(s, &w)) {
                enum xp_retryq_outcome outcome;
                bool delete = !w.status;
                char pod[512];
                unsigned tries;
                int64_t wait;

                pthread_mutex_unlock(&s->lock);
                xp_error_clear(&err);
                r = delete ? delete_pod(client, &w, &err) : write_status(client, &w, &err);
                outcome = outcome_of(r);
                pthread_mutex_lock(&s->lock);
                if (s->stopping)
                        outcome = XP_RETRYQ_UNREACHABLE; /* cancelled: what is left is dropped */
                /* the names are the queue's: done may free them */
                snprintf(pod, sizeof(pod), "%s/%s", w.namespace, w.name);
                tries = w.tries;
                wait = xp_retryq_done(s->queue, &w, outcome, xp_monotonic_ns());
                if (!s->stopping)
                        log_result(pod, tries, delete, outcome, wait, &err);
                /* a write that landed may have made others due at once */
                if (outcome == XP_RETRYQ_LANDED)
                        pthread_cond_broadcast(&s->cond);
        }
        for (unsigned i = 0; i < MAX_THREADS; i++)
                if (s->clients[i] == client)
                        s->clients[i] = NULL;
        pthread_mutex_unlock(&s->lock);
        return NULL;
}

int xp_agent_status_new(const struct xp_apiclient_options *api,
                        unsigned n_threads,
                        struct xp_agent_status **ret,
                        struct xp_error *err)
{
        const struct xp_retryq_config retry = {.initial_ns = RETRY_INITIAL_NS,
                                               .max_ns = RETRY_MAX_NS};
        pthread_condattr_t attr;
        struct xp_agent_status *s;
        int r;

        if (n_threads == 0 || n_threads > MAX_THREADS)
                return xp_errorf(err,
                                 -EINVAL,
                                 "status writers: %u threads, give 1 to %d",
                                 n_threads,
                                 MAX_THREADS);
        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        r = xp_retryq_new(&retry, &s->queue);
        if (r < 0) {
                free(s);
                return r;
        }
        pthread_mutex_init(&s->lock, NULL);
        pthread_condattr_init(&attr);
        pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
        pthread_cond_init(&s->cond, &attr);
        pthread_condattr_destroy(&attr);
        s->api = api;
        for (; s->n_threads < n_threads; s->n_threads++) {
                r = -pthread_create(&s->threads[s->n_threads], NULL, writer_thread, s);
                if (r < 0) {
                        xp_agent_status_free(s);
                        return xp_errorf(err, r, "starting the status writers: %s", strerror(-r));
                }
        }
        *ret = s;
        return 0;
}

void xp_agent_status_free(struct xp_agent_status *s)
{
        if (!s)
                return;
        pthread_mutex_lock(&s->lock);
        s->stopping = true;
        for (unsigned i = 0; i < MAX_THREADS; i++)
                if (s->clients[i])
                        xp_apiclient_cancel(s->clients[i]);
        pthread_cond_broadcast(&s->cond);
        pthread_mutex_unlock(&s->lock);
        for (unsigned i = 0; i < s->n_threads; i++)
                pthread_join(s->threads[i], NULL);
        xp_retryq_free(s->queue);
        pthread_cond_destroy(&s->cond);
        pthread_mutex_destroy(&s->lock);
        free(s);
}
