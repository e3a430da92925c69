/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The status writers: a few threads, each with its own client (its own connection), PATCH pod
 * statuses (a strategic merge patch whose `$patch: replace` makes the whole status replace the
 * stored one) and DELETE pods whose containers all stopped after their deletion. A pod has at
 * most one write in flight; a newer status replaces one still waiting, so a burst of changes of
 * one pod is one write, and the writes of many pods go out together and share the server's group
 * commits.
 */
#include <errno.h>
#include <search.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent_internal.h"
#include "xpool/log.h"
#include "xpool/timeutil.h"

#define MAX_THREADS 16
/* A write that failed for a reason other than the pod being gone is retried this many times, */
#define MAX_TRIES 5
/* after this delay, doubled at each failure (0.2 + 0.4 + 0.8 + 1.6 s before giving up) */
#define RETRY_DELAY_NS (200 * 1000000LL)

struct pending {
        char *uid, *namespace, *name;
        json_t *status; /* waiting to be written; NULL: none */
        bool delete;    /* a DELETE is waiting (after the status) */
        bool queued;    /* in the queue */
        bool in_flight; /* a writer works on it */
        unsigned tries;
        int64_t retry_at_ns; /* CLOCK_MONOTONIC; a failed write waits in the queue till then */
        struct pending *next;
};

struct xp_agent_status {
        pthread_mutex_t lock;
        pthread_cond_t cond;
        void *by_uid; /* tsearch tree of struct pending */
        struct pending *head, *tail;
        bool stopping;
        const struct xp_apiclient_options *api;
        pthread_t threads[MAX_THREADS];
        struct xp_apiclient *clients[MAX_THREADS]; /* cancelled on free: no wait for a timeout */
        unsigned n_threads;
};

static int entry_compare(const void *a, const void *b)
{
        return strcmp(((const struct pending *)a)->uid, ((const struct pending *)b)->uid);
}

static void entry_free(void *p)
{
        struct pending *e = p;

        json_decref(e->status);
        free(e->uid);
        free(e->namespace);
        free(e->name);
        free(e);
}

static void enqueue(struct xp_agent_status *s, struct pending *e)
{
        if (e->queued || e->in_flight)
                return;
        e->queued = true;
        e->next = NULL;
        if (s->tail)
                s->tail->next = e;
        else
                s->head = e;
        s->tail = e;
        pthread_cond_signal(&s->cond);
}

/* The entry of uid, made when missing; the caller holds the lock. NULL on -ENOMEM. */
static struct pending *
entry_get(struct xp_agent_status *s, const char *ns, const char *name, const char *uid)
{
        struct pending key = {.uid = (char *)uid}, *e, **found;

        found = tfind(&key, &s->by_uid, entry_compare);
        if (found)
                return *found;
        e = calloc(1, sizeof(*e));
        if (!e)
                return NULL;
        e->uid = strdup(uid);
        e->namespace = strdup(ns);
        e->name = strdup(name);
        if (!e->uid || !e->namespace || !e->name || !tsearch(e, &s->by_uid, entry_compare)) {
                entry_free(e);
                return NULL;
        }
        return e;
}

int xp_agent_status_put(struct xp_agent_status *s,
                        const char *pod_namespace,
                        const char *pod_name,
                        const char *pod_uid,
                        json_t *status)
{
        struct pending *e;

        pthread_mutex_lock(&s->lock);
        e = entry_get(s, pod_namespace, pod_name, pod_uid);
        if (e) {
                json_decref(e->status);
                e->status = status;
                e->tries = 0;
                e->retry_at_ns = 0;
                enqueue(s, e);
        }
        pthread_mutex_unlock(&s->lock);
        if (!e) {
                json_decref(status);
                return -ENOMEM;
        }
        return 0;
}

int xp_agent_status_delete(struct xp_agent_status *s,
                           const char *pod_namespace,
                           const char *pod_name,
                           const char *pod_uid)
{
        struct pending *e;

        pthread_mutex_lock(&s->lock);
        e = entry_get(s, pod_namespace, pod_name, pod_uid);
        if (e) {
                e->delete = true;
                e->tries = 0;
                e->retry_at_ns = 0;
                enqueue(s, e);
        }
        pthread_mutex_unlock(&s->lock);
        return e ? 0 : -ENOMEM;
}

static int write_status(struct xp_apiclient *client,
                        const struct pending *e,
                        json_t *status,
                        struct xp_error *err)
{
        /* the status is whole (podsync starts from the stored one): it replaces the stored one,
         * so what it no longer has (a condition's old reason, a waiting state) goes too */
        json_auto_t *copy = json_copy(status), *body = NULL;
        char path[1024];

        if (!copy || json_object_set_new(copy, "$patch", json_string("replace")) < 0)
                return -ENOMEM;
        body = json_pack("{s:O}", "status", copy);
        if (!body)
                return -ENOMEM;
        snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s/status", e->namespace, e->name);
        return xp_apiclient_json(
            client, "PATCH", path, "application/strategic-merge-patch+json", body, NULL, NULL, err);
}

static int delete_pod(struct xp_apiclient *client, const struct pending *e, struct xp_error *err)
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
                                      e->uid);
        char path[1024];

        if (!body)
                return -ENOMEM;
        snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s", e->namespace, e->name);
        return xp_apiclient_json(client, "DELETE", path, NULL, body, NULL, NULL, err);
}

/*
 * Unlinks the first queued entry that is due. With none, NULL and *ret_next the earliest time
 * one is (0: the queue is empty). Waiting retries stay in the queue without holding a writer,
 * so one failing pod never delays the others.
 */
static struct pending *take_due(struct xp_agent_status *s, int64_t now, int64_t *ret_next)
{
        struct pending *prev = NULL;

        *ret_next = 0;
        for (struct pending *e = s->head; e; prev = e, e = e->next) {
                if (e->retry_at_ns <= now) {
                        if (prev)
                                prev->next = e->next;
                        else
                                s->head = e->next;
                        if (s->tail == e)
                                s->tail = prev;
                        e->next = NULL;
                        return e;
                }
                if (*ret_next == 0 || e->retry_at_ns < *ret_next)
                        *ret_next = e->retry_at_ns;
        }
        return NULL;
}

static void *writer_thread(void *userdata)
{
        struct xp_agent_status *s = userdata;
        _cleanup_(xp_apiclient_freep) struct xp_apiclient *client = NULL;
        struct xp_error err = {0};
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
        for (;;) {
                struct pending *e = NULL;
                json_t *status;
                bool delete;

                while (!s->stopping) {
                        int64_t next;

                        e = take_due(s, xp_monotonic_ns(), &next);
                        if (e)
                                break;
                        if (next == 0) {
                                pthread_cond_wait(&s->cond, &s->lock);
                        } else {
                                struct timespec until = {.tv_sec = next / 1000000000,
                                                         .tv_nsec = next % 1000000000};

                                pthread_cond_timedwait(&s->cond, &s->lock, &until);
                        }
                }
                if (s->stopping)
                        break;
                e->queued = false;
                e->in_flight = true;
                status = TAKE_PTR(e->status);
                delete = e->delete &&!status;
                if (delete)
                        e->delete = false;
                pthread_mutex_unlock(&s->lock);

                xp_error_clear(&err);
                r = delete ? delete_pod(client, e, &err) : write_status(client, e, status, &err);
                /* gone, or deleted by someone else (a uid precondition failing is a 409) */
                if (r == -ENOENT || (delete &&r == -EEXIST))
                        r = 0;

                pthread_mutex_lock(&s->lock);
                e->in_flight = false;
                if (r < 0 && !s->stopping) {
                        if (++e->tries < MAX_TRIES) {
                                xp_log(LOG_WARNING,
                                       "agent: %s pod %s/%s failed, retrying: %s",
                                       delete ? "deleting" : "writing the status of",
                                       e->namespace,
                                       e->name,
                                       xp_error_message(&err));
                                if (delete)
                                        e->delete = true;
                                else if (!e->status)
                                        e->status = TAKE_PTR(status);
                                e->retry_at_ns =
                                    xp_monotonic_ns() + (RETRY_DELAY_NS << (e->tries - 1));
                        } else {
                                xp_log(LOG_ERR,
                                       "agent: giving up %s pod %s/%s: %s",
                                       delete ? "deleting" : "writing the status of",
                                       e->namespace,
                                       e->name,
                                       xp_error_message(&err));
                        }
                }
                json_decref(status);
                if (e->status || e->delete) {
                        enqueue(s, e);
                } else {
                        tdelete(e, &s->by_uid, entry_compare);
                        entry_free(e);
                }
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
        pthread_mutex_init(&s->lock, NULL);
        {
                pthread_condattr_t attr;

                pthread_condattr_init(&attr);
                pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
                pthread_cond_init(&s->cond, &attr);
                pthread_condattr_destroy(&attr);
        }
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
        tdestroy(s->by_uid, entry_free);
        pthread_cond_destroy(&s->cond);
        pthread_mutex_destroy(&s->lock);
        free(s);
}
