/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Events the agent records about its pods (containers created, started, killed, backing off,
 * OOM-killed, their devices; a privileged container; a pod refused): a queue (eventq.h) and a few
 * writer threads, each with its own connection, that write them, so the reconcile loop never
 * waits on the server. The writers write Events at once, so that these share the server's group
 * commits (one fsync for several, instead of one each: a short pod has three), while the writes
 * of one Event (its create, the counts of its repeats) go one after another, in order; a pod's
 * Events may land in any order (a watch may see Started before Created), their names (by time)
 * keeping a list's and `kubectl describe`'s order. Best effort, as the kubelet's recorder: an
 * event that cannot be written after a few tries, or that finds the queue full, is dropped (and
 * logged).
 *
 * As the kubelet's event correlator does, the same event (pod, type, reason, message) again
 * within 10 minutes is not a new Event: the first one's count and lastTimestamp are updated
 * (PATCH), so `kubectl describe` shows "(x5 over 2m)". And each pod has a budget: 25 events at
 * once, then one per 5 minutes (the kubelet's spam filter); beyond it events are dropped.
 */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent_internal.h"
#include "clientslots.h"
#include "eventq.h"
#include "xpool/log.h"
#include "xpool/macro.h"
#include "xpool/strutil.h"
#include "xpool/timeutil.h"
#include "xpool/workers.h"

#define QUEUE_MAX     256 /* Events waiting or out */
#define WRITERS       4   /* threads, each with its connection */
#define TRIES         3
#define SEEN_MAX      256                  /* events remembered for aggregation */
#define SEEN_WINDOW   (600 * 1000000000LL) /* the same event within: counted */
#define BUDGETS_MAX   256                  /* pods with a budget */
#define BUDGET_BURST  25
#define BUDGET_REFILL (300 * 1000000000LL) /* one more event per pod */

/* An event written recently: its key, its name and body (for the update), when. The body is
 * shared with the writer of its last write, which only reads it: never changed in place. */
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
        /* first: the writer pool's userdata is read as the set (clientslots.h); cancelled on
         * free, so that no writer waits for a timeout, and then says the writers stop */
        struct xp_client_slots clients;
        struct xp_workers *writers; /* its lock guards the set above and what follows */
        struct xp_eventq *queue;
        char *node_name;
        uint64_t serial;
        struct seen seen[SEEN_MAX];
        struct budget budgets[BUDGETS_MAX];
};
_Static_assert(offsetof(struct xp_agent_events, clients) == 0, "clientslots.h: the set first");

/* A writer thread's own: its client (its connection; first, for clientslots.h) and the Event it
 * has out. */
struct writer {
        struct xp_apiclient *client;
        struct xp_work work;
        struct xp_eventq_item *item;
};
_Static_assert(offsetof(struct writer, client) == 0, "clientslots.h: the client first");

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

/* One try of e's write: its count update, or its create. */
static int post_once(struct xp_apiclient *client,
                     const struct xp_eventq_item *e,
                     const char *path,
                     struct xp_error *err)
{
        json_t *patch;
        int r;

        if (!e->name)
                return xp_apiclient_json(client, "POST", path, NULL, e->body, NULL, NULL, err);
        patch = count_patch(e->body);
        if (!patch)
                return -ENOMEM;
        r = xp_apiclient_json(client,
                              "PATCH",
                              path,
                              "application/strategic-merge-patch+json",
                              patch,
                              NULL,
                              NULL,
                              err);
        json_decref(patch);
        return r;
}

static int post(struct xp_apiclient *client, struct xp_eventq_item *e)
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
                r = post_once(client, e, path, &err);
                if (r == -ENOENT && e->name) {
                        /* the Event to count on is gone: write it anew */
                        free(e->name);
                        e->name = NULL;
                        snprintf(path, sizeof(path), "/api/v1/namespaces/%s/events", e->namespace);
                        i--;
                        continue;
                }
                if (r == -EEXIST || r == -EPERM || r == -EINVAL || r == -ENOMEM || r == -ECANCELED)
                        break;
        }
        if (r < 0 && r != -ECANCELED)
                xp_log(LOG_WARNING,
                       "agent: recording event %s: %s",
                       json_string_value(
                           json_object_get(json_object_get(e->body, "metadata"), "name")),
                       xp_error_message(&err));
        return r;
}

/* ---- the writers: the pool's callbacks, all but writer_run with its lock held ------------ */

/* The oldest Event with no write of it out; none while stopping. */
static int
writer_take(void *userdata, void *ctx, bool stopping, struct xp_work **ret, int64_t *ret_wake_ns)
{
        struct xp_agent_events *q = userdata;
        struct writer *wr = ctx;

        *ret_wake_ns = 0;
        if (stopping || q->clients.cancelled || !(wr->item = xp_eventq_take(q->queue)))
                return 0;
        *ret = &wr->work;
        return 1;
}

static void writer_run(void *userdata, void *ctx, struct xp_work *work)
{
        struct writer *wr = ctx;

        (void)userdata;
        (void)work;
        (void)post(wr->client, wr->item);
}

/* Written or given up (best effort, as the kubelet's recorder): the Event's next count may go.
 * This thread asks the queue again before it sleeps, so it takes that count itself; no other
 * writer is woken for it. */
static void writer_done(void *userdata, void *ctx, struct xp_work *work)
{
        struct xp_agent_events *q = userdata;
        struct writer *wr = ctx;

        (void)work;
        xp_eventq_done(q->queue, TAKE_PTR(wr->item));
}

static const struct xp_workers_ops writer_ops =
    XP_CLIENT_SLOTS_WRITER_OPS(writer_run, writer_take, writer_done);

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
        xp_client_slots_init_writers(
            &q->clients, WRITERS, api, sizeof(struct writer), "an event writer");
        r = xp_eventq_new(QUEUE_MAX, &q->queue);
        if (r >= 0)
                r = xp_workers_new(&(struct xp_workers_options){.ops = &writer_ops,
                                                                .userdata = q,
                                                                .threads = WRITERS},
                                   &q->writers,
                                   err);
        if (r < 0) {
                xp_agent_events_free(q);
                return xp_error_prefix(err, r, "starting the event writers");
        }
        *ret = q;
        return 0;
}

void xp_agent_events_free(struct xp_agent_events *q)
{
        if (!q)
                return;
        xp_workers_free(q->writers);
        xp_eventq_free(q->queue);
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

/* Remembers a new event (key taken; its body shared with the writer that sends it, which only
 * reads it): the oldest one makes room. Most Events are never counted, so none is copied. */
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

/* The update of a counted event: a new body (the last one may still be out with a writer) with
 * count + 1 and lastTimestamp now, shared by the memory and the update. */
static int seen_count(struct seen *s, struct xp_eventq_item *e, int64_t now)
{
        char stamp[XP_RFC3339_MAX];
        json_t *body = json_deep_copy(s->body);
        json_t *count = json_object_get(body, "count");

        xp_time_format_rfc3339(now / 1000000000, stamp);
        if (!body ||
            json_object_set_new(body, "count", json_integer(json_integer_value(count) + 1)) < 0 ||
            json_object_set_new(body, "lastTimestamp", json_string(stamp)) < 0) {
                json_decref(body);
                return -ENOMEM;
        }
        json_decref(s->body);
        s->body = body;
        e->body = json_incref(body);
        e->name = xp_strdup0(
            json_string_value(json_object_get(json_object_get(body, "metadata"), "name")));
        s->last_ns = now;
        return e->name ? 0 : -ENOMEM;
}

/* Queues e (taken; its body made), its writes keyed by the Event's name; the lock is held. */
static int enqueue(struct xp_agent_events *q, struct xp_eventq_item *e, const char *what)
{
        const char *name =
            json_string_value(json_object_get(json_object_get(e->body, "metadata"), "name"));
        int r = name && (e->key = strdup(name)) ? xp_eventq_put(q->queue, e) : -ENOMEM;

        if (r == -ENOMEM) {
                xp_eventq_item_free(e);
                return r;
        }
        if (r < 0) {
                xp_log(LOG_WARNING, "agent: dropping event %s: too many waiting", what);
                xp_eventq_item_free(e);
                return r;
        }
        /* one Event more: one writer for it (the pod's path pays for each thread woken) */
        xp_workers_wake_one(q->writers);
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
        struct xp_eventq_item *e;
        json_t *source, *involved;
        int r;

        if (!q)
                return 0;
        e = calloc(1, sizeof(*e));
        if (!e)
                return -ENOMEM;
        xp_workers_lock(q->writers);
        e->namespace = strdup("default");
        e->body = event_json(q, "default", q->node_name, q->node_name, type, reason, message);
        involved = json_object_get(e->body, "involvedObject");
        source = json_object_get(e->body, "source");
        if (!e->namespace || !involved || !source ||
            json_object_set_new(involved, "kind", json_string("Node")) < 0 ||
            json_object_del(involved, "namespace") < 0) {
                xp_eventq_item_free(e);
                r = -ENOMEM;
        } else {
                r = enqueue(q, e, reason);
        }
        xp_workers_unlock(q->writers);
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
        struct xp_eventq_item *e;
        struct seen *s;
        char *key = NULL;
        int r = 0;

        if (!q)
                return 0;
        if (asprintf(&key, "%s\n%s\n%s\n%s\n%s", ns, uid, type, reason, message) < 0)
                return -ENOMEM;
        e = calloc(1, sizeof(*e));
        xp_workers_lock(q->writers);
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
        if (r >= 0)
                r = enqueue(q, TAKE_PTR(e), reason);
out:
        xp_workers_unlock(q->writers);
        xp_eventq_item_free(e);
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
