/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Queues in the scheduling loop: what the informer brings (Queues, Namespaces' default queues,
 * nodes' capacity, pods' requests, allocated once bound, pending before) kept in the core's
 * queue tree (include/sched/xpool/queue.h); admission before each placement; the Queues' status
 * written back when their figures change.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "queue_state.h"
#include "xpool/codec.h"
#include "xpool/gang.h"
#include "xpool/log.h"
#include "xpool/quantity.h"
#include "xpool/registry.h"
#include "xpool/strmap.h"
#include "xpool/strutil.h"

static void qpod_free(struct qpod *p)
{
        if (!p)
                return;
        free(p->key);
        free(p->queue);
        free(p->group);
        amounts_free(p->amounts, p->n);
        free(p);
}

static void qnode_free(struct qnode *n)
{
        if (!n)
                return;
        free(n->name);
        amounts_free(n->amounts, n->n);
        free(n);
}

static void map_clear(struct xp_map *m, void (*free_fn)(void *))
{
        for (size_t i = 0; i < m->cap; i++)
                if (m->keys && m->keys[i] && m->values[i])
                        free_fn(m->values[i]);
        xp_map_done(m);
}

static void free_qpod(void *v)
{
        qpod_free(v);
}
static void free_qnode(void *v)
{
        qnode_free(v);
}
static void free_nominee(void *v)
{
        nominee_free(v);
}

int queue_ctl_new(struct xp_registry *registry,
                  const struct xp_clock *clock,
                  struct queue_ctl **ret)
{
        struct queue_ctl *ctl = calloc(1, sizeof(*ctl));

        if (!ctl || xp_queues_new(&ctl->queues) < 0) {
                free(ctl);
                return -ENOMEM;
        }
        ctl->registry = registry;
        ctl->clock = clock;
        *ret = ctl;
        return 0;
}

void queue_ctl_reset(struct queue_ctl *ctl)
{
        struct xp_queues *fresh;

        if (xp_queues_new(&fresh) < 0)
                return;
        xp_queues_free(ctl->queues);
        ctl->queues = fresh;
        map_clear(&ctl->pods, free_qpod);
        map_clear(&ctl->nodes, free_qnode);
        map_clear(&ctl->defaults, free);
        map_clear(&ctl->group_queues, free);
        map_clear(&ctl->device_resources, free);
        map_clear(&ctl->defined, free);
        /* kept: they are held again in the renewed snapshot, as kube-scheduler finds its
         * nominated pods again from their status after a restart */
        queue_ctl_nominees_renewed(ctl);
        for (size_t j = 0; j < ctl->n_capacity; j++)
                free((char *)ctl->capacity[j].resource);
        ctl->n_capacity = 0;
        ctl->dirty = true;
}

void queue_ctl_free(struct queue_ctl *ctl)
{
        if (!ctl)
                return;
        queue_ctl_reset(ctl);
        map_clear(&ctl->nominees, free_nominee);
        xp_queues_free(ctl->queues);
        free(ctl);
}

static const char *str(const json_t *o, const char *part, const char *key)
{
        return json_string_value(json_object_get(json_object_get(o, part), key));
}

const char *queue_labelled(const struct xp_strmap *labels)
{
        const char *q = labels ? xp_strmap_get(labels, XP_QUEUE_LABEL) : NULL;

        if ((!q || !q[0]) && labels)
                q = xp_strmap_get(labels, XP_QUEUE_KUEUE_LABEL);
        return q && q[0] ? q : NULL;
}

/* The value of "key\0value" kept in map under key, NULL when none. */
static const char *pair_value(struct xp_map *map, const char *key)
{
        const char *pair = key ? xp_map_get(map, key) : NULL;

        return pair ? pair + strlen(pair) + 1 : NULL;
}

const char *
queue_of(struct queue_ctl *ctl, const char *ns, const struct xp_strmap *labels, const char *group)
{
        const char *q = queue_labelled(labels);

        if (!q)
                q = pair_value(&ctl->group_queues, group);
        return q ? q : pair_value(&ctl->defaults, ns);
}

/* ---- feeds ----------------------------------------------------------------------------------- */

/* Counts p in its queue (+1) or takes it out (-1). */
void qpod_count(struct queue_ctl *ctl, const struct qpod *p, int sign)
{
        if (p->bound)
                (void)xp_queues_charge(ctl->queues, p->queue, p->amounts, p->n, sign);
        else
                (void)xp_queues_pend(ctl->queues, p->queue, p->amounts, p->n, sign);
        ctl->dirty = true;
}

static void pod_forget(struct queue_ctl *ctl, const char *key)
{
        struct qpod *old = xp_map_del(&ctl->pods, key);

        if (!old)
                return;
        qpod_count(ctl, old, -1);
        qpod_free(old);
}

/* A pod's record: its queue, its PodGroup, its request. NULL when in no queue or out of memory. */
static struct qpod *qpod_new(struct queue_ctl *ctl, const char *key, const json_t *pod)
{
        const json_t *meta = json_object_get(pod, "metadata");
        const char *ns = str(pod, "metadata", "namespace"), *k, *q;
        const char *pg = str(meta, "annotations", XP_GANG_VOLCANO_ANNOTATION);
        _cleanup_free_ char *group = NULL;
        struct xp_strmap labels = {0};
        struct qpod *p = NULL;
        json_t *v;

        json_object_foreach(json_object_get(meta, "labels"), k, v)
        {
                if (json_is_string(v) && xp_strmap_set(&labels, k, json_string_value(v)) < 0)
                        break;
        }
        if (pg && pg[0] && asprintf(&group, "%s/%s", ns, pg) < 0)
                group = NULL;
        q = queue_of(ctl, ns, &labels, group);
        p = q ? calloc(1, sizeof(*p)) : NULL;
        if (p && (!(p->key = strdup(key)) || !(p->queue = strdup(q)) ||
                  pod_amounts(pod, &p->amounts, &p->n) < 0 ||
                  accel_pod_request(ctl, p->amounts, &p->n) < 0)) {
                qpod_free(p);
                p = NULL;
        }
        if (p) {
                p->group = TAKE_PTR(group);
                p->own_queue = queue_labelled(&labels) != NULL;
        }
        xp_strmap_done(&labels);
        return p;
}

void queue_ctl_pod(struct queue_ctl *ctl, const json_t *pod, bool deleted)
{
        const char *ns = str(pod, "metadata", "namespace"), *name = str(pod, "metadata", "name");
        const char *phase = str(pod, "status", "phase"), *node = str(pod, "spec", "nodeName");
        _cleanup_free_ char *key = NULL;
        struct qpod *p;

        if (!ns || !name || asprintf(&key, "%s/%s", ns, name) < 0)
                return;
        queue_ctl_nominee_listed(ctl,
                                 ns,
                                 name,
                                 !deleted && !(node && node[0]) && !xp_streq0(phase, "Succeeded") &&
                                     !xp_streq0(phase, "Failed"));
        pod_forget(ctl, key);
        if (deleted || xp_streq0(phase, "Succeeded") || xp_streq0(phase, "Failed"))
                return;
        p = qpod_new(ctl, key, pod);
        if (p && xp_map_put(&ctl->pods, p->key, p) < 0) {
                qpod_free(p);
                p = NULL;
        }
        if (!p)
                return;
        p->bound = node && node[0];
        qpod_count(ctl, p, +1);
}

void queue_ctl_podgroup(struct queue_ctl *ctl, const json_t *pg, bool deleted)
{
        const char *ns = str(pg, "metadata", "namespace"), *name = str(pg, "metadata", "name");
        const char *q = deleted ? NULL : str(pg, "spec", "queue");
        _cleanup_free_ char *key = NULL;
        char *value = NULL;

        if (!ns || !name || asprintf(&key, "%s/%s", ns, name) < 0)
                return;
        if (xp_streq0(pair_value(&ctl->group_queues, key), q && q[0] ? q : NULL))
                return; /* its queue is as it was */
        free(xp_map_del(&ctl->group_queues, key));
        if (q && q[0] && asprintf(&value, "%s%c%s", key, 0, q) >= 0 &&
            xp_map_put(&ctl->group_queues, value, value) < 0)
                free(value);
        /* its pods that take their queue from it move to the new one */
        for (size_t i = 0; i < ctl->pods.cap; i++) {
                struct qpod *p = ctl->pods.keys && ctl->pods.keys[i] ? ctl->pods.values[i] : NULL;
                const char *now;
                char *copy;

                if (!p || p->own_queue || !xp_streq0(p->group, key))
                        continue;
                now = queue_of(ctl, ns, NULL, key);
                if (xp_streq0(now, p->queue) || !now || !(copy = strdup(now)))
                        continue;
                qpod_count(ctl, p, -1);
                free(p->queue);
                p->queue = copy;
                qpod_count(ctl, p, +1);
        }
}

/* Adds (sign +1) or takes out (-1) a node's allocatable from the cluster's capacity. */
static void capacity_add(struct queue_ctl *ctl, const struct qnode *node, int sign)
{
        for (size_t k = 0; node && k < node->n; k++) {
                struct xp_queue_amount *c = ctl->capacity;
                size_t j = 0;

                while (j < ctl->n_capacity && strcmp(c[j].resource, node->amounts[k].resource) != 0)
                        j++;
                if (j == ctl->n_capacity) {
                        char *name;
                        if (j == XP_QUEUE_RESOURCES_MAX ||
                            !(name = strdup(node->amounts[k].resource)))
                                continue;
                        c[ctl->n_capacity++] = (struct xp_queue_amount){name, 0};
                }
                c[j].milli += sign * node->amounts[k].milli;
                (void)xp_queues_capacity(ctl->queues, c[j].resource, c[j].milli);
        }
        ctl->dirty = true;
}

void queue_ctl_node(struct queue_ctl *ctl, const json_t *node, bool deleted)
{
        const char *name = str(node, "metadata", "name");
        const json_t *alloc = json_object_get(json_object_get(node, "status"), "allocatable");
        struct qnode *n;

        if (!name)
                return;
        n = xp_map_del(&ctl->nodes, name);
        capacity_add(ctl, n, -1);
        qnode_free(n);
        if (!deleted) {
                n = calloc(1, sizeof(*n));
                if (n && (n->name = strdup(name)) &&
                    resources_amounts(alloc, &n->amounts, &n->n) >= 0 &&
                    accel_node_capacity(ctl, node, n->amounts, &n->n) >= 0 &&
                    xp_map_put(&ctl->nodes, n->name, n) >= 0) {
                        capacity_add(ctl, n, +1);
                        n = NULL;
                }
                qnode_free(n);
        }
}

void queue_ctl_namespace(struct queue_ctl *ctl, const json_t *ns, bool deleted)
{
        const char *name = str(ns, "metadata", "name");
        const char *q = str(json_object_get(ns, "metadata"), "labels", XP_QUEUE_NAMESPACE_DEFAULT);
        char *value;

        if (!name)
                return;
        if (!q)
                q = str(json_object_get(ns, "metadata"), "annotations", XP_QUEUE_NAMESPACE_DEFAULT);
        free(xp_map_del(&ctl->defaults, name));
        if (deleted || !q || !q[0] || asprintf(&value, "%s%c%s", name, 0, q) < 0)
                return;
        if (xp_map_put(&ctl->defaults, value, value) < 0)
                free(value);
}

/* Moves a pod's record between pending and allocated. */
static void qpod_move(struct queue_ctl *ctl, struct qpod *p, bool bound)
{
        if (p->bound == bound)
                return;
        (void)xp_queues_pend(ctl->queues, p->queue, p->amounts, p->n, bound ? -1 : +1);
        (void)xp_queues_charge(ctl->queues, p->queue, p->amounts, p->n, bound ? +1 : -1);
        p->bound = bound;
        ctl->dirty = true;
}

void queue_ctl_placed(struct queue_ctl *ctl, const char *ns, const char *name, bool placed)
{
        _cleanup_free_ char *key = NULL;
        struct qpod *p;

        /* every attempt of every waiting pod asks: without queues there is no key to build */
        if (ctl->pods.n == 0)
                return;
        if (asprintf(&key, "%s/%s", ns, name) < 0)
                return;
        p = xp_map_get(&ctl->pods, key);
        if (p)
                qpod_move(ctl, p, placed);
}
