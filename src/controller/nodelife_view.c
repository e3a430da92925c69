/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the node lifecycle controller remembers, fed by its informer. Reading every node, lease
 * and pod each tick would cost in proportion to the cluster; instead it keeps, per node, when it
 * last saw the agent alive (a Lease write, or a change of the Ready condition's
 * lastHeartbeatTime for a node without a Lease), and per pod only what a lost node needs: its
 * node, its eviction delay, its deletion deadline. "Seen alive" is this server's monotonic clock
 * at the time it read the event, not the time the agent wrote in it, so that clock skew between
 * hosts does not matter (as the kube-controller-manager does); after a restart every node gets a
 * full grace period again.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "nodelife_view.h"
#include "workqueue.h"
#include "xpool/lifecycle.h"
#include "xpool/macro.h"
#include "xpool/store.h"
#include "xpool/strutil.h"

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

/* The agent showed it is alive. */
static void node_alive(const struct xp_nodelife *c, struct lnode *n)
{
        n->seen_ms = xp_clock_monotonic_ms(c->clock);
        xp_time_format_rfc3339(xp_clock_wall_s(c->clock), n->since);
}

static struct lnode *node_get(struct xp_nodelife *c, const char *name, bool create)
{
        struct lnode *n = xp_map_get(&c->node_index, name);

        if (n || !create)
                return n;
        if (grow(&c->nodes, &c->cap_nodes, c->n_nodes) < 0)
                return NULL;
        n = calloc(1, sizeof *n);
        if (!n || !(n->name = strdup(name)) || xp_map_put(&c->node_index, n->name, n) < 0) {
                lnode_free(n);
                return NULL;
        }
        node_alive(c, n);
        n->slot = c->n_nodes;
        c->nodes[c->n_nodes++] = n;
        return n;
}

static void node_drop(struct xp_nodelife *c, struct lnode *n)
{
        struct lnode *last = c->nodes[--c->n_nodes];

        (void)xp_map_del(&c->node_index, n->name);
        c->nodes[n->slot] = last;
        last->slot = n->slot;
        lnode_free(n);
}

static void pod_drop(struct xp_nodelife *c, struct lpod *p)
{
        struct lpod *last = c->pods[--c->n_pods];

        (void)xp_map_del(&c->pod_index, p->key);
        c->pods[p->slot] = last;
        last->slot = p->slot;
        lpod_free(p);
}

static void lease_seen(struct xp_nodelife *c, const char *ns, const char *name, bool deleted)
{
        struct lnode *n;

        if (strcmp(ns, LEASE_NS) != 0)
                return;
        n = node_get(c, name, !deleted);
        if (!n)
                return;
        n->has_lease = !deleted;
        if (n->has_lease)
                node_alive(c, n);
}

static void node_seen(struct xp_nodelife *c, const char *name, const json_t *node, bool deleted)
{
        struct lnode *n = node_get(c, name, !deleted);
        const char *heartbeat;

        if (!n)
                return;
        if (deleted) {
                node_drop(c, n);
                return;
        }
        heartbeat = xp_lifecycle_node_heartbeat(node);
        if (heartbeat && !xp_streq0(heartbeat, n->heartbeat)) {
                char *copy = strdup(heartbeat);

                if (copy) {
                        free(n->heartbeat);
                        n->heartbeat = copy;
                        node_alive(c, n);
                }
        }
        n->ready = xp_lifecycle_node_ready(node);
        n->tainted = xp_lifecycle_node_tainted(node);
        n->disk_pressure = xp_lifecycle_node_disk_pressure(node);
        n->disk_tainted = xp_lifecycle_node_disk_tainted(node);
}

static bool namespace_terminating(const struct xp_nodelife *c, const char *ns)
{
        for (size_t i = 0; i < c->n_terminating; i++)
                if (strcmp(c->terminating[i], ns) == 0)
                        return true;
        return false;
}

static void
pod_seen(struct xp_nodelife *c, const char *ns, const char *name, const json_t *pod, bool deleted)
{
        const char *node = pod ? object_string(pod, "spec", "nodeName") : NULL;
        const char *deletion = pod ? object_string(pod, "metadata", "deletionTimestamp") : NULL;
        char key[2 * XP_STORE_KEY_MAX + 2];
        struct lpod *p;

        /* the last pod of a Terminating namespace may be gone: try to finish it */
        if (deleted && namespace_terminating(c, ns))
                (void)xp_workqueue_add(c->namespaces, ns);
        if (snprintf(key, sizeof key, "%s/%s", ns, name) >= (int)sizeof key)
                return;
        p = xp_map_get(&c->pod_index, key);
        /* only pods that a lost node concerns: bound, and running or terminating */
        if (deleted || !node || !node[0] || (!xp_lifecycle_pod_active(pod) && !deletion)) {
                if (p)
                        pod_drop(c, p);
                return;
        }
        if (!p) {
                if (grow(&c->pods, &c->cap_pods, c->n_pods) < 0)
                        return;
                p = calloc(1, sizeof *p);
                if (!p || !(p->key = strdup(key)) || !(p->namespace = strdup(ns)) ||
                    !(p->name = strdup(name)) || xp_map_put(&c->pod_index, p->key, p) < 0) {
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
        p->eviction_ms = xp_lifecycle_eviction_ms(pod, c->eviction_ms);
        if (!deletion || xp_time_parse_rfc3339(deletion, &p->deadline_s) < 0)
                p->deadline_s = 0;
        p->failed = xp_streq0(object_string(pod, "status", "phase"), "Failed");
}

static void namespace_seen(struct xp_nodelife *c, const char *name, const json_t *ns, bool deleted)
{
        bool terminating =
            !deleted && xp_streq0(object_string(ns, "status", "phase"), "Terminating");

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
                (void)xp_workqueue_add(c->namespaces, name);
        }
}

void view_clear(struct xp_nodelife *c)
{
        for (size_t i = 0; i < c->n_nodes; i++)
                lnode_free(c->nodes[i]);
        c->n_nodes = 0;
        xp_map_done(&c->node_index);
        for (size_t i = 0; i < c->n_pods; i++)
                lpod_free(c->pods[i]);
        c->n_pods = 0;
        xp_map_done(&c->pod_index);
        for (size_t i = 0; i < c->n_terminating; i++)
                free(c->terminating[i]);
        c->n_terminating = 0;
}

struct lnode *view_node(struct xp_nodelife *c, const char *name)
{
        return name ? xp_map_get(&c->node_index, name) : NULL;
}

/* ---- the informer's callbacks ------------------------------------------------------------ */

static const char *object_namespace(const json_t *object)
{
        const char *ns = object_string(object, "metadata", "namespace");

        return ns ? ns : "";
}

static void on_lease(void *userdata, const json_t *lease, uint64_t version)
{
        const char *name = object_string(lease, "metadata", "name");

        (void)version;
        if (name)
                lease_seen(userdata, object_namespace(lease), name, false);
}

static void on_lease_deleted(void *userdata, const json_t *lease, uint64_t version)
{
        const char *name = object_string(lease, "metadata", "name");

        (void)version;
        if (name)
                lease_seen(userdata, object_namespace(lease), name, true);
}

static void on_node(void *userdata, const json_t *node, uint64_t version)
{
        const char *name = object_string(node, "metadata", "name");

        (void)version;
        if (name)
                node_seen(userdata, name, node, false);
}

static void on_node_deleted(void *userdata, const json_t *node, uint64_t version)
{
        const char *name = object_string(node, "metadata", "name");

        (void)version;
        if (name)
                node_seen(userdata, name, node, true);
}

static void on_pod(void *userdata, const json_t *pod, uint64_t version)
{
        const struct xp_nodelife *c = userdata;
        const char *node = object_string(pod, "spec", "nodeName"), *name;

        (void)version;
        /* a pod bound to no node is kept by no one: with no pod kept, none to drop either, and
         * nothing more of its (cold) tree to read */
        if (c->pod_index.n == 0 && (!node || !node[0]))
                return;
        name = object_string(pod, "metadata", "name");
        if (name)
                pod_seen(userdata, object_namespace(pod), name, pod, false);
}

static void on_pod_deleted(void *userdata, const json_t *pod, uint64_t version)
{
        const char *name = object_string(pod, "metadata", "name");

        (void)version;
        if (name)
                pod_seen(userdata, object_namespace(pod), name, pod, true);
}

static void on_namespace(void *userdata, const json_t *ns, uint64_t version)
{
        const char *name = object_string(ns, "metadata", "name");

        (void)version;
        if (name)
                namespace_seen(userdata, name, ns, false);
}

static void on_namespace_deleted(void *userdata, const json_t *ns, uint64_t version)
{
        const char *name = object_string(ns, "metadata", "name");

        (void)version;
        if (name)
                namespace_seen(userdata, name, ns, true);
}

const struct xp_informer_handler nodelife_followed[] = {
    {.resource = "namespaces",
     .add = on_namespace,
     .update = on_namespace,
     .delete = on_namespace_deleted},
    {.resource = "nodes", .add = on_node, .update = on_node, .delete = on_node_deleted},
    {.resource = "leases", .add = on_lease, .update = on_lease, .delete = on_lease_deleted},
    {.resource = "pods", .add = on_pod, .update = on_pod, .delete = on_pod_deleted},
};

const size_t nodelife_followed_n = XP_ELEMENTSOF(nodelife_followed);
