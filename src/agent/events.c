/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Events the agent records about its pods (containers created, started, killed, backing off,
 * OOM-killed, their devices; a privileged container; a pod refused): a queue and one thread with
 * its own connection that writes them, so the reconcile loop never waits on the server. Best
 * effort, as the kubelet's recorder: an event that cannot be written after a few tries, or that
 * finds the queue full, is dropped (and logged).
 *
 * As the kubelet's event correlator does, the same event (pod, type, reason, message) again
 * within 10 minutes is not a new Event: the first one's count and lastTimestamp are updated
 * (PATCH), so `kubectl describe` shows "(x5 over 2m)". And each pod has a budget: 25 events at
 * once, then one per 5 minutes (the kubelet's spam filter); beyond it events are dropped.
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
#include "xpool/macro.h"
#include "xpool/strutil.h"
#include "xpool/timeutil.h"

#define QUEUE_MAX     64
#define TRIES         3
#define SEEN_MAX      256                  /* events remembered for aggregation */
#define SEEN_WINDOW   (600 * 1000000000LL) /* the same event within: counted */
#define BUDGETS_MAX   256                  /* pods with a budget */
#define BUDGET_BURST  25
#define BUDGET_REFILL (300 * 1000000000LL) /* one more event per pod */

struct event {
        char *namespace;
        char *name; /* an update of this Event (PATCH); NULL: a new one */
        json_t *body;
        struct event *next;
};

/* An event written recently: its key, its name and body (for the update), when. */
struct seen {
        char *key;
        json_t *body;
        int64_t last_ns;
};

struct budget {
        char uid[129];
        double tokens;
        int64_t at_ns;
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
        struct seen seen[SEEN_MAX];
        struct budget budgets[BUDGETS_MAX];
};

static void event_free(struct event *e)
{
        if (!e)
                return;
        free(e->namespace);
        free(e->name);
        json_decref(e->body);
        free(e);
}

/*
 * What counts a repeat on its Event: a strategic merge patch of count and lastTimestamp, as the
 * kubelet's recorder sends it. A PUT would need the Event's resourceVersion, which the agent does
 * not keep (the server refuses an update without one), and a patch cannot undo another writer's
 * change either.
 */
static json_t *count_patch(const json_t *body)
{
        return json_pack("{s:O, s:O}",
                         "count",
                         json_object_get(body, "count"),
                         "lastTimestamp",
                         json_object_get(body, "lastTimestamp"));
}

static int post(struct xp_agent_events *q, struct event *e)
{
        struct xp_error err = {0};
        char path[512];
        int r = -EIO;

        if (e->name)
                snprintf(
                    path, sizeof(path), "/api/v1/namespaces/%s/events/%s", e->namespace, e->name);
        else
                snprintf(path, sizeof(path), "/api/v1/namespaces/%s/events", e->namespace);
        for (int i = 0; i < TRIES && r < 0; i++) {
                if (i > 0) {
                        struct timespec ts = {.tv_sec = 1};

                        nanosleep(&ts, NULL);
                }
                xp_error_clear(&err);
                if (e->name) {
                        json_t *patch = count_patch(e->body);

                        r = patch ? xp_apiclient_json(q->client,
                                                      "PATCH",
                                                      path,
                                                      "application/strategic-merge-patch+json",
                                                      patch,
                                                      NULL,
                                                      NULL,
                                                      &err)
                                  : -ENOMEM;
                        json_decref(patch);
                } else {
                        r = xp_apiclient_json(
                            q->client, "POST", path, NULL, e->body, NULL, NULL, &err);
                }
                if (r == -ENOENT && e->name) {
                        /* the Event to count on is gone: write it anew */
                        free(e->name);
                        e->name = NULL;
                        snprintf(path, sizeof(path), "/api/v1/namespaces/%s/events", e->namespace);
                        i--;
                        continue;
                }
                if (r == -EEXIST || r == -EPERM || r == -EINVAL || r == -ENOMEM)
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
        for (size_t i = 0; i < SEEN_MAX; i++) {
                free(q->seen[i].key);
                json_decref(q->seen[i].body);
        }
        free(q->node_name);
        free(q);
}

/* A core/v1 Event as the kubelet writes them: named <pod>.<hex>, from component kubelet on this
 * node (source.host, reportingInstance), so that --field-selector source=kubelet finds them. */
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
                         "kubelet",
                         "host",
                         q->node_name,
                         "firstTimestamp",
                         now,
                         "lastTimestamp",
                         now,
                         "count",
                         1,
                         "reportingComponent",
                         "kubelet",
                         "reportingInstance",
                         q->node_name);
}

/* Takes one of the pod's budget: false when it is spent. */
static bool budget_take(struct xp_agent_events *q, const char *uid, int64_t now)
{
        struct budget *b = NULL, *oldest = &q->budgets[0];

        for (size_t i = 0; i < BUDGETS_MAX && !b; i++) {
                if (strcmp(q->budgets[i].uid, uid) == 0)
                        b = &q->budgets[i];
                else if (q->budgets[i].at_ns < oldest->at_ns)
                        oldest = &q->budgets[i];
        }
        if (!b) {
                b = oldest;
                *b = (struct budget){.tokens = BUDGET_BURST, .at_ns = now};
                snprintf(b->uid, sizeof(b->uid), "%s", uid);
        }
        b->tokens += (double)(now - b->at_ns) / (double)BUDGET_REFILL;
        if (b->tokens > BUDGET_BURST)
                b->tokens = BUDGET_BURST;
        b->at_ns = now;
        if (b->tokens < 1)
                return false;
        b->tokens -= 1;
        return true;
}

/* The event seen with key within the window, or NULL. */
static struct seen *seen_find(struct xp_agent_events *q, const char *key, int64_t now)
{
        for (size_t i = 0; i < SEEN_MAX; i++)
                if (q->seen[i].key && strcmp(q->seen[i].key, key) == 0 &&
                    now - q->seen[i].last_ns < SEEN_WINDOW)
                        return &q->seen[i];
        return NULL;
}

/* Remembers a new event (body borrowed): the oldest one makes room. */
static void seen_add(struct xp_agent_events *q, char *key, json_t *body, int64_t now)
{
        struct seen *s = &q->seen[0];

        for (size_t i = 1; i < SEEN_MAX && s->key; i++)
                if (!q->seen[i].key || q->seen[i].last_ns < s->last_ns)
                        s = &q->seen[i];
        free(s->key);
        json_decref(s->body);
        *s = (struct seen){.key = key, .body = json_incref(body), .last_ns = now};
}

/* The update of a counted event: its body with count + 1 and lastTimestamp now. */
static int seen_count(struct seen *s, struct event *e, int64_t now)
{
        char stamp[XP_RFC3339_MAX];
        json_t *count = json_object_get(s->body, "count");

        xp_time_format_rfc3339(now / 1000000000, stamp);
        if (json_object_set_new(s->body, "count", json_integer(json_integer_value(count) + 1)) <
                0 ||
            json_object_set_new(s->body, "lastTimestamp", json_string(stamp)) < 0)
                return -ENOMEM;
        e->body = json_deep_copy(s->body);
        e->name = xp_strdup0(
            json_string_value(json_object_get(json_object_get(s->body, "metadata"), "name")));
        s->last_ns = now;
        return e->body && e->name ? 0 : -ENOMEM;
}

/* Queues e (taken); the lock is held. */
static int enqueue(struct xp_agent_events *q, struct event *e, const char *what)
{
        if (q->n >= QUEUE_MAX) {
                xp_log(LOG_WARNING, "agent: dropping event %s: too many waiting", what);
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
        return 0;
}

/*
 * An Event about the node itself, as the kubelet records its own: involvedObject kind Node with
 * the node's name as uid (the kubelet's reference, not the Node's uid), in namespace default,
 * from component kubelet. Few (the agent's start), so neither counted nor budgeted.
 */
int xp_agent_event_node(struct xp_agent_events *q,
                        const char *type,
                        const char *reason,
                        const char *message)
{
        struct event *e;
        json_t *source, *involved;
        int r;

        if (!q)
                return 0;
        e = calloc(1, sizeof(*e));
        if (!e)
                return -ENOMEM;
        pthread_mutex_lock(&q->lock);
        e->namespace = strdup("default");
        e->body = event_json(q, "default", q->node_name, q->node_name, type, reason, message);
        involved = json_object_get(e->body, "involvedObject");
        source = json_object_get(e->body, "source");
        if (!e->namespace || !involved || !source ||
            json_object_set_new(involved, "kind", json_string("Node")) < 0 ||
            json_object_del(involved, "namespace") < 0) {
                event_free(e);
                r = -ENOMEM;
        } else {
                r = enqueue(q, e, reason);
        }
        pthread_mutex_unlock(&q->lock);
        return r;
}

int xp_agent_event_once(struct xp_agent_events *q,
                        const char *ns,
                        const char *pod,
                        const char *uid,
                        const char *type,
                        const char *reason,
                        const char *message,
                        bool once)
{
        int64_t now = xp_agent_now_ns();
        struct event *e;
        struct seen *s;
        char *key = NULL;
        int r = 0;

        if (!q)
                return 0;
        if (asprintf(&key, "%s\n%s\n%s\n%s\n%s", ns, uid, type, reason, message) < 0)
                return -ENOMEM;
        e = calloc(1, sizeof(*e));
        pthread_mutex_lock(&q->lock);
        s = seen_find(q, key, now);
        if (!e || (s && once) || !budget_take(q, uid, now)) {
                /* told already, or the pod's budget is spent: dropped, as the kubelet does */
                r = e ? 0 : -ENOMEM;
                goto out;
        }
        e->namespace = strdup(ns);
        if (s)
                r = seen_count(s, e, now);
        else if (!(e->body = event_json(q, ns, pod, uid, type, reason, message)))
                r = -ENOMEM;
        if (r >= 0 && !e->namespace)
                r = -ENOMEM;
        if (r >= 0 && !s)
                seen_add(q, TAKE_PTR(key), e->body, now);
        if (r >= 0) {
                r = enqueue(q, TAKE_PTR(e), reason);
        }
out:
        pthread_mutex_unlock(&q->lock);
        event_free(e);
        free(key);
        return r;
}

int xp_agent_event(struct xp_agent_events *q,
                   const char *ns,
                   const char *pod,
                   const char *uid,
                   const char *type,
                   const char *reason,
                   const char *message)
{
        return xp_agent_event_once(q, ns, pod, uid, type, reason, message, false);
}
