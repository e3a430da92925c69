/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The node lifecycle controller: one thread that notices agents that stopped renewing their
 * Lease and deals with their nodes and pods (docs/server.md, "Node lifecycle").
 *
 * Why it keeps its own view: reading every node, lease and pod each second would cost in
 * proportion to the cluster. Instead it follows the store's event log (as the scheduling loop
 * does) and remembers, per node, when it last saw the agent alive (a Lease write, or a change of
 * the Ready condition's lastHeartbeatTime for a node without a Lease), and per pod only what a
 * lost node needs: its node, its eviction delay, its deletion deadline. "Seen alive" is this
 * server's monotonic clock at the time it read the event, not the time the agent wrote in it, so
 * that clock skew between hosts does not matter (as the kube-controller-manager does); after a
 * restart every node gets a full grace period again.
 *
 * A node that has neither a Lease nor a heartbeat (a node object written by hand) is not
 * watched: nothing says it is alive, and nothing says it stopped.
 *
 * Every write reads the object and writes it back with the version read as precondition; a
 * stale write is redone on fresh state. Terminating namespaces waiting for their pods to go are
 * finished here too when the last pod is deleted.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"
#include "registry/lifecycle.h"
#include "sched/sched_internal.h"
#include "xpool/log.h"
#include "xpool/macro.h"
#include "xpool/strutil.h"
#include "xpool/timeutil.h"

#define TICK_MS     500
#define EVENT_BATCH 256
#define COMPONENT   "xpool-node-lifecycle"
#define LEASE_NS    "kube-node-lease"

struct lnode {
        char *name;
        size_t slot;
        int64_t seen_ms; /* monotonic: the last sign of life */
        char *heartbeat; /* the Ready condition's lastHeartbeatTime last read */
        bool has_lease;
        bool ready, tainted; /* from the node as last read */
        bool lost;           /* marked lost by us since seen_ms */
        int64_t lost_ms;
        char since[XP_RFC3339_MAX]; /* wall time of the last sign of life, for messages */
};

struct lpod {
        char *key; /* namespace/name */
        char *namespace, *name, *node;
        size_t slot;
        int64_t eviction_ms; /* -1: never */
        int64_t deadline_s;  /* deletionTimestamp, 0 when not terminating */
        bool not_ready;      /* Ready=False written for the current loss */
        bool failed;
};

struct nodelife {
        struct api *api;
        pthread_t thread;
        atomic_bool stop;
        int64_t grace_ms, eviction_ms;
        uint64_t nodes_seen, leases_seen, pods_seen, namespaces_seen;
        struct lnode **nodes;
        size_t n_nodes, cap_nodes;
        struct smap node_index;
        struct lpod **pods;
        size_t n_pods, cap_pods;
        struct smap pod_index;
        char **terminating; /* namespaces waiting for their pods */
        size_t n_terminating;
        bool namespaces_dirty;
};

static const char *member_string(const json_t *object, const char *part, const char *key)
{
        return json_string_value(json_object_get(json_object_get(object, part), key));
}

static int grow(void *array, size_t *cap, size_t n)
{
        void ***a = array;
        size_t bigger = *cap ? *cap * 2 : 16;
        void **p;

        if (n < *cap)
                return 0;
        p = realloc(*a, bigger * sizeof *p);
        if (!p)
                return -ENOMEM;
        *a = p;
        *cap = bigger;
        return 0;
}

/* ---- the view ------------------------------------------------------------------------------- */

static void lnode_free(struct lnode *n)
{
        if (!n)
                return;
        free(n->name);
        free(n->heartbeat);
        free(n);
}

static void lpod_free(struct lpod *p)
{
        if (!p)
                return;
        free(p->key);
        free(p->namespace);
        free(p->name);
        free(p->node);
        free(p);
}

static struct lnode *node_get(struct nodelife *c, const char *name, bool create)
{
        struct lnode *n = smap_get(&c->node_index, name);

        if (n || !create)
                return n;
        if (grow(&c->nodes, &c->cap_nodes, c->n_nodes) < 0)
                return NULL;
        n = calloc(1, sizeof *n);
        if (!n || !(n->name = strdup(name)) || smap_put(&c->node_index, n->name, n) < 0) {
                lnode_free(n);
                return NULL;
        }
        n->seen_ms = xp_monotonic_ms();
        xp_time_format_rfc3339(time(NULL), n->since);
        n->slot = c->n_nodes;
        c->nodes[c->n_nodes++] = n;
        return n;
}

static void node_drop(struct nodelife *c, struct lnode *n)
{
        struct lnode *last = c->nodes[--c->n_nodes];

        (void)smap_del(&c->node_index, n->name);
        c->nodes[n->slot] = last;
        last->slot = n->slot;
        lnode_free(n);
}

static void pod_drop(struct nodelife *c, struct lpod *p)
{
        struct lpod *last = c->pods[--c->n_pods];

        (void)smap_del(&c->pod_index, p->key);
        c->pods[p->slot] = last;
        last->slot = p->slot;
        lpod_free(p);
}

/* The agent showed it is alive. */
static void node_alive(struct lnode *n)
{
        n->seen_ms = xp_monotonic_ms();
        xp_time_format_rfc3339(time(NULL), n->since);
}

static void lease_seen(struct nodelife *c, const struct xp_store_event *e)
{
        struct lnode *n;

        if (strcmp(e->namespace, LEASE_NS) != 0)
                return;
        n = node_get(c, e->name, e->type != XP_STORE_DELETED);
        if (!n)
                return;
        n->has_lease = e->type != XP_STORE_DELETED;
        if (n->has_lease)
                node_alive(n);
}

static void node_seen(struct nodelife *c, const char *name, const json_t *node, bool deleted)
{
        struct lnode *n = node_get(c, name, !deleted);
        const char *heartbeat;

        if (!n)
                return;
        if (deleted) {
                node_drop(c, n);
                return;
        }
        heartbeat = lifecycle_node_heartbeat(node);
        if (heartbeat && !xp_streq0(heartbeat, n->heartbeat)) {
                char *copy = strdup(heartbeat);

                if (copy) {
                        free(n->heartbeat);
                        n->heartbeat = copy;
                        node_alive(n);
                }
        }
        n->ready = lifecycle_node_ready(node);
        n->tainted = lifecycle_node_tainted(node);
}

static bool namespace_terminating(const struct nodelife *c, const char *ns)
{
        for (size_t i = 0; i < c->n_terminating; i++)
                if (strcmp(c->terminating[i], ns) == 0)
                        return true;
        return false;
}

static void
pod_seen(struct nodelife *c, const char *ns, const char *name, const json_t *pod, bool deleted)
{
        const char *node = pod ? member_string(pod, "spec", "nodeName") : NULL;
        const char *deletion = pod ? member_string(pod, "metadata", "deletionTimestamp") : NULL;
        char key[2 * XP_STORE_KEY_MAX + 2];
        struct lpod *p;

        if (deleted && namespace_terminating(c, ns))
                c->namespaces_dirty = true;
        if (snprintf(key, sizeof key, "%s/%s", ns, name) >= (int)sizeof key)
                return;
        p = smap_get(&c->pod_index, key);
        /* only pods that a lost node concerns: bound, and running or terminating */
        if (deleted || !node || !node[0] || (!lifecycle_pod_active(pod) && !deletion)) {
                if (p)
                        pod_drop(c, p);
                return;
        }
        if (!p) {
                if (grow(&c->pods, &c->cap_pods, c->n_pods) < 0)
                        return;
                p = calloc(1, sizeof *p);
                if (!p || !(p->key = strdup(key)) || !(p->namespace = strdup(ns)) ||
                    !(p->name = strdup(name)) || smap_put(&c->pod_index, p->key, p) < 0) {
                        lpod_free(p);
                        return;
                }
                p->slot = c->n_pods;
                c->pods[c->n_pods++] = p;
        }
        if (!xp_streq0(p->node, node)) {
                char *copy = strdup(node);

                if (!copy)
                        return;
                free(p->node);
                p->node = copy;
        }
        p->eviction_ms = lifecycle_eviction_ms(pod, c->eviction_ms);
        if (!deletion || xp_time_parse_rfc3339(deletion, &p->deadline_s) < 0)
                p->deadline_s = 0;
        p->failed = xp_streq0(member_string(pod, "status", "phase"), "Failed");
}

static void namespace_seen(struct nodelife *c, const char *name, const json_t *ns, bool deleted)
{
        bool terminating =
            !deleted && xp_streq0(member_string(ns, "status", "phase"), "Terminating");

        for (size_t i = 0; i < c->n_terminating; i++)
                if (strcmp(c->terminating[i], name) == 0) {
                        if (!terminating) {
                                free(c->terminating[i]);
                                c->terminating[i] = c->terminating[--c->n_terminating];
                        }
                        return;
                }
        if (terminating) {
                char **bigger = realloc(c->terminating, (c->n_terminating + 1) * sizeof *bigger);
                char *copy = strdup(name);

                if (bigger)
                        c->terminating = bigger;
                if (!bigger || !copy) {
                        free(copy);
                        return;
                }
                c->terminating[c->n_terminating++] = copy;
                c->namespaces_dirty = true;
        }
}

static void view_clear(struct nodelife *c)
{
        for (size_t i = 0; i < c->n_nodes; i++)
                lnode_free(c->nodes[i]);
        c->n_nodes = 0;
        smap_done(&c->node_index);
        for (size_t i = 0; i < c->n_pods; i++)
                lpod_free(c->pods[i]);
        c->n_pods = 0;
        smap_done(&c->pod_index);
        for (size_t i = 0; i < c->n_terminating; i++)
                free(c->terminating[i]);
        c->n_terminating = 0;
}

static void object_seen(struct nodelife *c, const char *kind, const struct xp_store_event *e)
{
        bool deleted = e->type == XP_STORE_DELETED;

        if (strcmp(kind, "leases") == 0)
                lease_seen(c, e);
        else if (strcmp(kind, "nodes") == 0)
                node_seen(c, e->name, e->object, deleted);
        else if (strcmp(kind, "pods") == 0)
                pod_seen(c, e->namespace, e->name, e->object, deleted);
        else
                namespace_seen(c, e->name, e->object, deleted);
}

static const char *const followed[] = {"namespaces", "nodes", "leases", "pods"};

static uint64_t *seen_of(struct nodelife *c, const char *kind)
{
        return strcmp(kind, "nodes") == 0    ? &c->nodes_seen
               : strcmp(kind, "leases") == 0 ? &c->leases_seen
               : strcmp(kind, "pods") == 0   ? &c->pods_seen
                                             : &c->namespaces_seen;
}

/* Everything as it is now: at start, and when the event log moved past us. */
static int resync(struct nodelife *c, struct xp_error *err)
{
        view_clear(c);
        for (size_t k = 0; k < XP_ELEMENTSOF(followed); k++) {
                json_t *items, *item;
                size_t i;
                int r;

                r = xp_store_list(
                    c->api->store, followed[k], NULL, &items, seen_of(c, followed[k]), err);
                if (r < 0)
                        return r;
                json_array_foreach(items, i, item)
                {
                        struct xp_store_event e = {
                            .type = XP_STORE_ADDED,
                            .namespace = (char *)(member_string(item, "metadata", "namespace")
                                                      ? member_string(item, "metadata", "namespace")
                                                      : ""),
                            .name = (char *)member_string(item, "metadata", "name"),
                            .object = item,
                        };

                        if (e.name)
                                object_seen(c, followed[k], &e);
                }
                json_decref(items);
        }
        c->namespaces_dirty = c->n_terminating > 0;
        return 0;
}

static int follow(struct nodelife *c, struct xp_error *err)
{
        for (size_t k = 0; k < XP_ELEMENTSOF(followed); k++) {
                uint64_t *seen = seen_of(c, followed[k]), through;
                struct xp_store_event *events;
                size_t n;
                int r;

                do {
                        r = xp_store_events_scan(c->api->store,
                                                 followed[k],
                                                 NULL,
                                                 *seen,
                                                 EVENT_BATCH,
                                                 &events,
                                                 &n,
                                                 &through,
                                                 err);
                        if (r < 0)
                                return r;
                        for (size_t i = 0; i < n; i++)
                                object_seen(c, followed[k], &events[i]);
                        xp_store_events_free(events, n);
                        *seen = through;
                } while (n == EVENT_BATCH);
        }
        return 0;
}

/* ---- writes --------------------------------------------------------------------------------- */

/* xp_registry_change(), logged but for -ENOENT. */
static int change(struct nodelife *c,
                  const char *kind,
                  const char *ns,
                  const char *name,
                  xp_registry_change_fn fn,
                  void *userdata,
                  json_t **ret_object)
{
        struct xp_error err = {0};
        int r;

        r = xp_registry_change(c->api->registry, kind, ns, name, fn, userdata, ret_object, &err);
        if (r < 0 && r != -ENOENT)
                xp_log(LOG_WARNING,
                       "node lifecycle: %s %s%s%s not written: %s",
                       kind,
                       ns,
                       ns[0] ? "/" : "",
                       name,
                       err.msg[0] ? err.msg : strerror(-r));
        return r;
}

/* An Event about a node or a pod; best effort (a lost Event changes nothing else). */
static void record_event(struct nodelife *c,
                         const char *kind,
                         const char *ns,
                         const char *name,
                         const char *uid,
                         const char *reason,
                         const char *message)
{
        const struct xp_registry_event event = {
            .kind = kind,
            .namespace = ns,
            .name = name,
            .uid = uid,
            .component = COMPONENT,
            .type = "Warning",
            .reason = reason,
            .message = message,
        };

        (void)xp_registry_event_record(c->api->registry, &event, NULL);
}

static int mark_lost_fn(json_t *node, void *userdata)
{
        return lifecycle_node_mark_lost(node, userdata);
}

static int mark_back_fn(json_t *node, void *userdata)
{
        (void)userdata;
        return lifecycle_node_mark_back(node);
}

static int pod_not_ready_fn(json_t *pod, void *userdata)
{
        if (!lifecycle_pod_active(pod))
                return 0;
        return lifecycle_pod_mark_not_ready(pod, userdata);
}

struct lost_args {
        const char *node, *since, *now;
};

static int pod_lost_fn(json_t *pod, void *userdata)
{
        struct lost_args *a = userdata;

        /* rebound or finished meanwhile: not ours to fail */
        if (!lifecycle_pod_active(pod) ||
            !xp_streq0(member_string(pod, "spec", "nodeName"), a->node))
                return 0;
        return lifecycle_pod_mark_lost(pod, a->node, a->since, a->now);
}

/* ---- the decisions -------------------------------------------------------------------------- */

static void node_lost(struct nodelife *c, struct lnode *n)
{
        char now[XP_RFC3339_MAX], message[512];
        json_t *node = NULL;

        xp_time_format_rfc3339(time(NULL), now);
        if (change(c, "nodes", "", n->name, mark_lost_fn, now, &node) < 0)
                return;
        n->lost = true;
        n->lost_ms = xp_monotonic_ms();
        n->tainted = true;
        n->ready = false;
        snprintf(message,
                 sizeof message,
                 "Node %s status is now: NodeNotReady (" LIFECYCLE_NODE_LOST_MESSAGE " since %s)",
                 n->name,
                 n->since);
        xp_log(LOG_INFO, "node lifecycle: %s", message);
        record_event(c,
                     "Node",
                     "",
                     n->name,
                     member_string(node, "metadata", "uid"),
                     "NodeNotReady",
                     message);
        json_decref(node);
        for (size_t i = 0; i < c->n_pods; i++)
                if (xp_streq0(c->pods[i]->node, n->name))
                        c->pods[i]->not_ready = false;
}

static void node_back(struct nodelife *c, struct lnode *n)
{
        if (change(c, "nodes", "", n->name, mark_back_fn, NULL, NULL) < 0)
                return;
        xp_log(LOG_INFO, "node lifecycle: node %s is Ready again", n->name);
        n->lost = false;
        n->tainted = false;
}

/* A terminating pod that nobody is left to stop goes once its grace has passed. */
static void remove_after_grace(struct nodelife *c, const struct lpod *p)
{
        struct xp_error err = {0};
        int r;

        if (time(NULL) < p->deadline_s)
                return;
        r = xp_store_delete(c->api->store, "pods", p->namespace, p->name, 0, NULL, NULL, &err);
        if (r < 0 && r != -ENOENT)
                xp_log(LOG_WARNING,
                       "node lifecycle: pod %s not removed: %s",
                       p->key,
                       err.msg[0] ? err.msg : strerror(-r));
}

static void pod_on_lost_node(struct nodelife *c, struct lpod *p, const struct lnode *n, int64_t now)
{
        char stamp[XP_RFC3339_MAX];
        json_t *pod = NULL;
        int r;

        if (p->deadline_s) {
                remove_after_grace(c, p);
                return;
        }
        if (p->failed)
                return;
        xp_time_format_rfc3339(time(NULL), stamp);
        if (!p->not_ready) {
                if (change(c, "pods", p->namespace, p->name, pod_not_ready_fn, stamp, NULL) >= 0)
                        p->not_ready = true;
        }
        if (p->eviction_ms >= 0 && now - n->lost_ms >= p->eviction_ms) {
                struct lost_args a = {.node = n->name, .since = n->since, .now = stamp};
                char message[512];

                r = change(c, "pods", p->namespace, p->name, pod_lost_fn, &a, &pod);
                if (r > 0) {
                        snprintf(message,
                                 sizeof message,
                                 "Marking for deletion: node %s is unresponsive since %s",
                                 n->name,
                                 n->since);
                        record_event(c,
                                     "Pod",
                                     p->namespace,
                                     p->name,
                                     member_string(pod, "metadata", "uid"),
                                     "NodeLost",
                                     message);
                }
                p->failed = true;
                json_decref(pod);
        }
}

static void tick(struct nodelife *c)
{
        int64_t now = xp_monotonic_ms();

        for (size_t i = 0; i < c->n_nodes; i++) {
                struct lnode *n = c->nodes[i];
                bool watched = n->has_lease || n->heartbeat;
                bool expired = watched && now - n->seen_ms > c->grace_ms;

                if (expired && !n->lost)
                        node_lost(c, n);
                else if (!expired && n->tainted && n->ready)
                        node_back(c, n);
                else if (!expired && n->lost)
                        n->lost = false; /* alive again; the taint goes once it reports Ready */
        }
        /* A hash lookup per tracked pod: cheap next to the writes that made them. */
        for (size_t i = 0; i < c->n_pods && !atomic_load(&c->stop); i++) {
                struct lpod *p = c->pods[i];
                struct lnode *n = smap_get(&c->node_index, p->node);

                if (n && n->lost)
                        pod_on_lost_node(c, p, n, now);
                else if (!n && p->deadline_s)
                        remove_after_grace(c, p); /* its node is gone (as Kubernetes' pod GC) */
        }
        if (c->namespaces_dirty) {
                c->namespaces_dirty = false;
                for (size_t i = 0; i < c->n_terminating; i++) {
                        struct xp_error err = {0};
                        int r = xp_registry_namespace_finish(
                            c->api->registry, c->terminating[i], NULL, &err);

                        if (r < 0 && r != -ENOENT)
                                xp_log(LOG_WARNING,
                                       "node lifecycle: namespace %s not finished: %s",
                                       c->terminating[i],
                                       err.msg[0] ? err.msg : strerror(-r));
                }
        }
}

static uint64_t oldest_seen(const struct nodelife *c)
{
        uint64_t v = c->nodes_seen;

        v = c->leases_seen < v ? c->leases_seen : v;
        v = c->pods_seen < v ? c->pods_seen : v;
        return c->namespaces_seen < v ? c->namespaces_seen : v;
}

static void *nodelife_main(void *userdata)
{
        struct nodelife *c = userdata;
        int64_t last_tick = 0;

        while (!atomic_load(&c->stop)) {
                struct xp_error err = {0};
                int r;

                r = follow(c, &err);
                if (r == -XP_STORE_EXPIRED)
                        r = resync(c, &err);
                if (r < 0) {
                        xp_log(LOG_WARNING,
                               "node lifecycle: reading the store: %s",
                               err.msg[0] ? err.msg : strerror(-r));
                        (void)xp_store_wait(c->api->store, UINT64_MAX, TICK_MS);
                        continue;
                }
                if (xp_monotonic_ms() - last_tick >= TICK_MS || c->namespaces_dirty) {
                        tick(c);
                        last_tick = xp_monotonic_ms();
                }
                (void)xp_store_wait(c->api->store, oldest_seen(c), TICK_MS);
        }
        return NULL;
}

int nodelife_start(struct api *api,
                   int64_t grace_ms,
                   int64_t eviction_ms,
                   struct nodelife **ret,
                   struct xp_error *err)
{
        struct nodelife *c;
        int r;

        c = calloc(1, sizeof *c);
        if (!c)
                return -ENOMEM;
        c->api = api;
        c->grace_ms = grace_ms;
        c->eviction_ms = eviction_ms;
        r = resync(c, err);
        if (r >= 0) {
                r = -pthread_create(&c->thread, NULL, nodelife_main, c);
                if (r < 0)
                        xp_errorf(err, r, "cannot start the node lifecycle thread");
        }
        if (r < 0) {
                atomic_store(&c->stop, true);
                nodelife_stop(c);
                return r;
        }
        *ret = c;
        return 0;
}

void nodelife_stop(struct nodelife *c)
{
        if (!c)
                return;
        if (c->thread && !atomic_exchange(&c->stop, true))
                pthread_join(c->thread, NULL);
        view_clear(c);
        free(c->nodes);
        free(c->pods);
        free(c->terminating);
        free(c);
}
