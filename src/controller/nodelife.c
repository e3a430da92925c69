/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The node lifecycle controller: notices agents that stopped renewing their Lease and deals with
 * their nodes and pods (docs/server.md, "Node lifecycle"), from what its view remembers
 * (nodelife_view.c). Every TICK_MS it checks each node's last sign of life against the grace
 * period, and the pods of lost nodes against their eviction delay and deletion deadline.
 *
 * A node that has neither a Lease nor a heartbeat (a node object written by hand) is not
 * watched: nothing says it is alive, and nothing says it stopped.
 *
 * Every write goes through the registry, which reads the object and writes it back with the
 * version read as precondition, redoing a stale write on fresh state. Terminating namespaces
 * waiting for their pods to go are finished here too: the view queues one when it becomes
 * Terminating or loses a pod, and a namespace whose finishing fails comes back after a backoff
 * (controller/workqueue.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "controller.h"
#include "nodelife_view.h"
#include "workqueue.h"
#include "xpool/lifecycle.h"
#include "xpool/log.h"
#include "xpool/registry.h"
#include "xpool/strutil.h"

#define TICK_MS      500
#define COMPONENT    "node-controller" /* as Kubernetes' node lifecycle controller */
#define RETRY_MIN_MS 100               /* a namespace that failed to finish: first retry */
#define RETRY_MAX_MS 60000             /* and the longest wait between retries */

/* ---- writes --------------------------------------------------------------------------------- */

/* xp_registry_change(), logged but for -ENOENT. */
static int change(struct xp_nodelife *c,
                  const char *kind,
                  const char *ns,
                  const char *name,
                  xp_registry_change_fn fn,
                  void *userdata,
                  json_t **ret_object)
{
        struct xp_error err = {0};
        int r;

        r = xp_registry_change(c->registry, kind, ns, name, fn, userdata, ret_object, &err);
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
static void record_event(struct xp_nodelife *c,
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

        (void)xp_registry_event_record(c->registry, &event, NULL);
}

static int mark_lost_fn(json_t *node, void *userdata)
{
        return xp_lifecycle_node_mark_lost(node, userdata);
}

static int mark_back_fn(json_t *node, void *userdata)
{
        (void)userdata;
        return xp_lifecycle_node_mark_back(node);
}

static int disk_taint_fn(json_t *node, void *userdata)
{
        (void)userdata;
        return xp_lifecycle_node_sync_disk_taint(node);
}

static int pod_not_ready_fn(json_t *pod, void *userdata)
{
        if (!xp_lifecycle_pod_active(pod))
                return 0;
        return xp_lifecycle_pod_mark_not_ready(pod, userdata);
}

struct lost_args {
        const char *node, *since, *now;
};

static int pod_lost_fn(json_t *pod, void *userdata)
{
        struct lost_args *a = userdata;

        /* rebound or finished meanwhile: not ours to fail */
        if (!xp_lifecycle_pod_active(pod) ||
            !xp_streq0(object_string(pod, "spec", "nodeName"), a->node))
                return 0;
        return xp_lifecycle_pod_mark_lost(pod, a->node, a->since, a->now);
}

/* ---- the decisions -------------------------------------------------------------------------- */

static void node_lost(struct xp_nodelife *c, struct lnode *n)
{
        char now[XP_RFC3339_MAX], message[512];
        json_t *node = NULL;

        xp_time_format_rfc3339(xp_clock_wall_s(c->clock), now);
        if (change(c, "nodes", "", n->name, mark_lost_fn, now, &node) < 0)
                return;
        n->lost = true;
        n->lost_ms = xp_clock_monotonic_ms(c->clock);
        n->tainted = true;
        n->ready = false;
        snprintf(message,
                 sizeof message,
                 "Node %s status is now: NodeNotReady (" XP_LIFECYCLE_NODE_LOST_MESSAGE
                 " since %s)",
                 n->name,
                 n->since);
        xp_log(LOG_INFO, "node lifecycle: %s", message);
        record_event(c,
                     "Node",
                     "",
                     n->name,
                     object_string(node, "metadata", "uid"),
                     "NodeNotReady",
                     message);
        json_decref(node);
        for (size_t i = 0; i < c->n_pods; i++)
                if (xp_streq0(c->pods[i]->node, n->name))
                        c->pods[i]->not_ready = false;
}

static void node_back(struct xp_nodelife *c, struct lnode *n)
{
        if (change(c, "nodes", "", n->name, mark_back_fn, NULL, NULL) < 0)
                return;
        xp_log(LOG_INFO, "node lifecycle: node %s is Ready again", n->name);
        n->lost = false;
        n->tainted = false;
}

/*
 * A terminating pod that nobody is left to stop goes once its grace has passed, as its agent
 * would delete it: with grace 0.
 */
static void remove_after_grace(struct xp_nodelife *c, const struct lpod *p)
{
        const struct xp_registry_delete_options now = {.has_grace = true, .grace_seconds = 0};
        struct xp_error err = {0};
        json_t *pod = NULL;
        bool removed;
        int r;

        if (xp_clock_wall_s(c->clock) < p->deadline_s)
                return;
        r = xp_registry_pod_delete(c->registry, p->namespace, p->name, &now, &pod, &removed, &err);
        json_decref(pod);
        if (r < 0 && r != -ENOENT)
                xp_log(LOG_WARNING,
                       "node lifecycle: pod %s not removed: %s",
                       p->key,
                       err.msg[0] ? err.msg : strerror(-r));
}

static void
pod_on_lost_node(struct xp_nodelife *c, struct lpod *p, const struct lnode *n, int64_t now)
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
        xp_time_format_rfc3339(xp_clock_wall_s(c->clock), stamp);
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
                                     object_string(pod, "metadata", "uid"),
                                     "NodeLost",
                                     message);
                }
                p->failed = true;
                json_decref(pod);
        }
}

static void tick(struct xp_nodelife *c)
{
        int64_t now = xp_clock_monotonic_ms(c->clock);

        for (size_t i = 0; i < c->n_nodes && !atomic_load(&c->quiet); i++) {
                struct lnode *n = c->nodes[i];
                bool watched = n->has_lease || n->heartbeat;
                bool expired = watched && now - n->seen_ms > c->grace_ms;

                if (expired && !n->lost)
                        node_lost(c, n);
                else if (!expired && n->tainted && n->ready)
                        node_back(c, n);
                else if (!expired && n->lost)
                        n->lost = false; /* alive again; the taint goes once it reports Ready */
                /* TaintNodesByCondition: the agent may not change its Node's taints itself */
                if (n->disk_pressure != n->disk_tainted &&
                    change(c, "nodes", "", n->name, disk_taint_fn, NULL, NULL) >= 0)
                        n->disk_tainted = n->disk_pressure;
        }
        /* A hash lookup per tracked pod: cheap next to the writes that made them. */
        for (size_t i = 0;
             i < c->n_pods && !xp_controller_stopping(c->loop) && !atomic_load(&c->quiet);
             i++) {
                struct lpod *p = c->pods[i];
                struct lnode *n = view_node(c, p->node);

                if (n && n->lost)
                        pod_on_lost_node(c, p, n, now);
                else if (!n && p->deadline_s)
                        remove_after_grace(c, p); /* its node is gone (as Kubernetes' pod GC) */
        }
}

/* Finishes the namespaces queued: a failure comes back after a backoff. */
static void finish_namespaces(struct xp_nodelife *c)
{
        const char *name;

        while (!xp_controller_stopping(c->loop) && xp_workqueue_get(c->namespaces, &name) > 0) {
                struct xp_error err = {0};
                int r = xp_registry_namespace_finish(c->registry, name, NULL, &err);

                if (r < 0 && r != -ENOENT) {
                        xp_log(LOG_WARNING,
                               "node lifecycle: namespace %s not finished: %s",
                               name,
                               err.msg[0] ? err.msg : strerror(-r));
                        (void)xp_workqueue_add_rate_limited(c->namespaces, name);
                } else if (r == 0) {
                        /* still held: pods terminating (their deletion queues it again) or
                         * objects whose finalizers hold them (no event here says when they go) */
                        (void)xp_workqueue_add_rate_limited(c->namespaces, name);
                } else {
                        xp_workqueue_forget(c->namespaces, name);
                }
                xp_workqueue_done(c->namespaces, name);
        }
}

/* One round: the nodes when a tick is due, the namespaces queued. Returns the sleep allowed. */
static int64_t nodelife_work(void *userdata)
{
        struct xp_nodelife *c = userdata;
        int64_t now = xp_clock_monotonic_ms(c->clock), next;

        if (!atomic_load(&c->quiet) && (!c->ticked || now - c->ticked_ms >= TICK_MS)) {
                tick(c);
                c->ticked = true;
                c->ticked_ms = xp_clock_monotonic_ms(c->clock);
        }
        finish_namespaces(c);
        next = xp_workqueue_next_ms(c->namespaces);
        return next >= 0 && next < TICK_MS ? next : TICK_MS;
}

static void on_reset(void *userdata)
{
        view_clear(userdata);
}

static const struct xp_controller_ops nodelife_ops = {
    .name = "node lifecycle",
    .work = nodelife_work,
    .retry_ms = TICK_MS,
    .settle_ms = XP_CONTROLLER_SETTLE_MS,
};

/* ---- lifecycle ------------------------------------------------------------------------------ */

int xp_nodelife_new(struct xp_registry *registry,
                    const struct xp_nodelife_options *options,
                    struct xp_nodelife **ret,
                    struct xp_error *err)
{
        struct xp_nodelife *c;
        int r;

        c = calloc(1, sizeof *c);
        if (!c)
                return -ENOMEM;
        c->registry = registry;
        c->clock = options->clock;
        c->grace_ms = options->grace_ms;
        c->eviction_ms = options->eviction_ms;
        struct xp_workqueue_options queue = {
            .clock = options->clock,
            .base_delay_ms = RETRY_MIN_MS,
            .max_delay_ms = RETRY_MAX_MS,
        };
        struct xp_informer_options informer = {
            .store = xp_registry_store(registry),
            .handlers = nodelife_followed,
            .n_handlers = nodelife_followed_n,
            .reset = on_reset,
            .userdata = c,
        };
        r = xp_workqueue_new(&queue, &c->namespaces);
        if (r >= 0)
                r = xp_informer_new(&informer, &c->informer);
        if (r >= 0)
                r = xp_informer_list(c->informer, err);
        if (r < 0) {
                xp_nodelife_free(c);
                return r;
        }
        *ret = c;
        return 0;
}

int xp_nodelife_start(struct xp_registry *registry,
                      const struct xp_nodelife_options *options,
                      struct xp_nodelife **ret,
                      struct xp_error *err)
{
        struct xp_nodelife *c;
        int r;

        r = xp_nodelife_new(registry, options, &c, err);
        if (r < 0)
                return r;
        r = xp_controller_start(&nodelife_ops, c->informer, c, &c->loop, err);
        if (r < 0) {
                xp_nodelife_free(c);
                return r;
        }
        *ret = c;
        return 0;
}

int xp_nodelife_step(struct xp_nodelife *c, struct xp_error *err)
{
        int r = xp_informer_sync(c->informer, err);

        return r < 0 ? r : (int)nodelife_work(c);
}

void xp_nodelife_quiesce(struct xp_nodelife *c)
{
        if (c)
                atomic_store(&c->quiet, true);
}

void xp_nodelife_free(struct xp_nodelife *c)
{
        if (!c)
                return;
        xp_controller_stop(c->loop);
        view_clear(c);
        free(c->nodes);
        free(c->pods);
        free(c->terminating);
        xp_informer_free(c->informer);
        xp_workqueue_free(c->namespaces);
        free(c);
}
