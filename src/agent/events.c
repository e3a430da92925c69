/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Events the agent records about its pods (a privileged container started, a pod refused): a
 * queue and one thread with its own connection that POSTs them, so the reconcile loop never
 * waits on the server. Best effort, as the kubelet's recorder: an event that cannot be written
 * after a few tries, or that finds the queue full, is dropped (and logged).
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent_internal.h"
#include "xpool/log.h"
#include "xpool/timeutil.h"

#define QUEUE_MAX 64
#define TRIES     3

struct event {
        char *namespace;
        json_t *body;
        struct event *next;
};

struct xp_agent_events {
        pthread_mutex_t lock;
        pthread_cond_t cond;
        struct event *head, *tail;
        size_t n;
        bool stopping, started;
        struct xp_apiclient *client;
        char *node_name;
        uint64_t serial;
        pthread_t thread;
};

static void event_free(struct event *e)
{
        if (!e)
                return;
        free(e->namespace);
        json_decref(e->body);
        free(e);
}

static int post(struct xp_agent_events *q, const struct event *e)
{
        struct xp_error err = {0};
        char path[512];
        int r = -EIO;

        snprintf(path, sizeof(path), "/api/v1/namespaces/%s/events", e->namespace);
        for (int i = 0; i < TRIES && r < 0; i++) {
                if (i > 0) {
                        struct timespec ts = {.tv_sec = 1};

                        nanosleep(&ts, NULL);
                }
                xp_error_clear(&err);
                r = xp_apiclient_json(q->client, "POST", path, NULL, e->body, NULL, NULL, &err);
                if (r == -EEXIST || r == -EPERM || r == -EINVAL)
                        break;
        }
        if (r < 0)
                xp_log(LOG_WARNING,
                       "agent: recording event %s: %s",
                       json_string_value(
                           json_object_get(json_object_get(e->body, "metadata"), "name")),
                       xp_error_message(&err));
        return r;
}

static void *events_thread(void *userdata)
{
        struct xp_agent_events *q = userdata;

        pthread_mutex_lock(&q->lock);
        for (;;) {
                struct event *e;

                while (!q->stopping && !q->head)
                        pthread_cond_wait(&q->cond, &q->lock);
                if (q->stopping)
                        break;
                e = q->head;
                q->head = e->next;
                if (!q->head)
                        q->tail = NULL;
                q->n--;
                pthread_mutex_unlock(&q->lock);
                (void)post(q, e);
                event_free(e);
                pthread_mutex_lock(&q->lock);
        }
        pthread_mutex_unlock(&q->lock);
        return NULL;
}

int xp_agent_events_new(const struct xp_apiclient_options *api,
                        const char *node_name,
                        struct xp_agent_events **ret,
                        struct xp_error *err)
{
        struct xp_agent_events *q = calloc(1, sizeof(*q));
        int r;

        if (!q || !(q->node_name = strdup(node_name))) {
                free(q);
                return -ENOMEM;
        }
        pthread_mutex_init(&q->lock, NULL);
        pthread_cond_init(&q->cond, NULL);
        r = xp_apiclient_new(api, &q->client, err);
        if (r >= 0) {
                r = -pthread_create(&q->thread, NULL, events_thread, q);
                if (r < 0)
                        xp_errorf(err, r, "starting the events thread: %s", strerror(-r));
                q->started = r >= 0;
        }
        if (r < 0) {
                xp_agent_events_free(q);
                return r;
        }
        *ret = q;
        return 0;
}

void xp_agent_events_free(struct xp_agent_events *q)
{
        if (!q)
                return;
        pthread_mutex_lock(&q->lock);
        q->stopping = true;
        pthread_cond_broadcast(&q->cond);
        pthread_mutex_unlock(&q->lock);
        if (q->client)
                xp_apiclient_cancel(q->client);
        if (q->started)
                pthread_join(q->thread, NULL);
        while (q->head) {
                struct event *e = q->head;

                q->head = e->next;
                event_free(e);
        }
        xp_apiclient_free(q->client);
        pthread_cond_destroy(&q->cond);
        pthread_mutex_destroy(&q->lock);
        free(q->node_name);
        free(q);
}

/* A core/v1 Event as the kubelet writes them: named <pod>.<hex>, from component xpool-agent. */
static json_t *event_json(struct xp_agent_events *q,
                          const char *ns,
                          const char *pod,
                          const char *uid,
                          const char *type,
                          const char *reason,
                          const char *message)
{
        char name[320], now[XP_RFC3339_MAX];
        int64_t now_ns = xp_agent_now_ns();

        snprintf(name,
                 sizeof(name),
                 "%.200s.%" PRIx64 "%04" PRIx64,
                 pod,
                 (uint64_t)now_ns,
                 q->serial++ & 0xffff);
        xp_time_format_rfc3339(now_ns / 1000000000, now);
        return json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:s, s:s, s:s, s:s, s:s}, s:s, s:s, s:s, "
                         "s:{s:s, s:s}, s:s, s:s, s:i, s:s, s:s}",
                         "apiVersion",
                         "v1",
                         "kind",
                         "Event",
                         "metadata",
                         "name",
                         name,
                         "namespace",
                         ns,
                         "involvedObject",
                         "kind",
                         "Pod",
                         "apiVersion",
                         "v1",
                         "namespace",
                         ns,
                         "name",
                         pod,
                         "uid",
                         uid,
                         "type",
                         type,
                         "reason",
                         reason,
                         "message",
                         message,
                         "source",
                         "component",
                         "xpool-agent",
                         "host",
                         q->node_name,
                         "firstTimestamp",
                         now,
                         "lastTimestamp",
                         now,
                         "count",
                         1,
                         "reportingComponent",
                         "xpool-agent",
                         "reportingInstance",
                         q->node_name);
}

int xp_agent_event(struct xp_agent_events *q,
                   const char *ns,
                   const char *pod,
                   const char *uid,
                   const char *type,
                   const char *reason,
                   const char *message)
{
        struct event *e;

        if (!q)
                return 0;
        e = calloc(1, sizeof(*e));
        if (!e)
                return -ENOMEM;
        pthread_mutex_lock(&q->lock);
        e->namespace = strdup(ns);
        e->body = event_json(q, ns, pod, uid, type, reason, message);
        if (!e->namespace || !e->body) {
                pthread_mutex_unlock(&q->lock);
                event_free(e);
                return -ENOMEM;
        }
        if (q->n >= QUEUE_MAX) {
                pthread_mutex_unlock(&q->lock);
                xp_log(LOG_WARNING,
                       "agent: dropping event %s of pod %s/%s: too many waiting",
                       reason,
                       ns,
                       pod);
                event_free(e);
                return -ENOBUFS;
        }
        if (q->tail)
                q->tail->next = e;
        else
                q->head = e;
        q->tail = e;
        q->n++;
        pthread_cond_signal(&q->cond);
        pthread_mutex_unlock(&q->lock);
        return 0;
}
