/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What a DaemonSet sync does on each node (Kubernetes' manage() and rollingUpdate() with
 * maxSurge 0), and the counts of its status.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "daemonset.h"
#include "deployment.h"

static int push(const char ***list, size_t *n, const char *item)
{
        const char **grown = realloc(*list, (*n + 1) * sizeof(**list));

        if (!grown)
                return -ENOMEM;
        grown[(*n)++] = item;
        *list = grown;
        return 0;
}

void xp_ds_plan_done(struct xp_ds_plan *plan)
{
        free(plan->create);
        free(plan->delete);
        *plan = (struct xp_ds_plan){0};
}

/* The oldest active pod of the node: the one kept when there are several. */
static const struct xp_rs_pod *oldest(const struct xp_ds_node *node)
{
        const struct xp_rs_pod *best = NULL;

        for (size_t i = 0; i < node->n_pods; i++) {
                const struct xp_rs_pod *p = &node->pods[i];

                if (!xp_rs_pod_active(p))
                        continue;
                if (!best || p->created_s < best->created_s ||
                    (p->created_s == best->created_s && strcmp(p->name, best->name) < 0))
                        best = p;
        }
        return best;
}

static int manage_node(const struct xp_ds_node *node, struct xp_ds_plan *plan)
{
        const struct xp_rs_pod *keep = node->fit.should_continue ? oldest(node) : NULL;
        int r;

        for (size_t i = 0; i < node->n_pods; i++) {
                const struct xp_rs_pod *p = &node->pods[i];

                if (p == keep || p->terminating)
                        continue;
                /* pods that ended go (and are made again); extra ones and unwanted ones too */
                if ((r = push(&plan->delete, &plan->n_delete, p->name)) < 0)
                        return r;
        }
        if (node->fit.should_run && !keep && !oldest(node))
                return push(&plan->create, &plan->n_create, node->name);
        return 0;
}

int xp_ds_plan_manage(const struct xp_ds_node *nodes, size_t n, struct xp_ds_plan *ret)
{
        struct xp_ds_plan plan = {0};
        int r;

        for (size_t i = 0; i < n; i++)
                if ((r = manage_node(&nodes[i], &plan)) < 0) {
                        xp_ds_plan_done(&plan);
                        return r;
                }
        *ret = plan;
        return 0;
}

static bool is_new(const struct xp_rs_pod *pod, const char *hash)
{
        const json_t *labels = json_object_get(json_object_get(pod->object, "metadata"), "labels");
        const char *h = json_string_value(json_object_get(labels, "controller-revision-hash"));

        if (!h)
                h = json_string_value(json_object_get(labels, XP_DEPLOY_HASH_LABEL));
        return h && hash && strcmp(h, hash) == 0;
}

/* findUpdatedPodsOnNode: false when the node has several new or several old pods. */
static bool pods_on_node(const struct xp_ds_node *node,
                         const char *hash,
                         const struct xp_rs_pod **ret_new,
                         const struct xp_rs_pod **ret_old)
{
        *ret_new = *ret_old = NULL;
        for (size_t i = 0; i < node->n_pods; i++) {
                const struct xp_rs_pod *p = &node->pods[i];
                const struct xp_rs_pod **slot = is_new(p, hash) ? ret_new : ret_old;

                if (!xp_rs_pod_active(p))
                        continue;
                if (*slot)
                        return false;
                *slot = p;
        }
        return true;
}

int xp_ds_plan_rolling(const struct xp_ds_node *nodes,
                       size_t n,
                       const char *hash,
                       int32_t max_unavailable,
                       int32_t min_ready_s,
                       int64_t now_s,
                       struct xp_ds_plan *plan)
{
        const char **candidates = NULL;
        size_t n_candidates = 0;
        int32_t unavailable = 0;
        int r = 0;

        for (size_t i = 0; i < n && r >= 0; i++) {
                const struct xp_rs_pod *new_pod, *old_pod;

                if (!nodes[i].fit.should_run && nodes[i].n_pods == 0)
                        continue;
                if (!pods_on_node(&nodes[i], hash, &new_pod, &old_pod) || (!new_pod == !old_pod)) {
                        unavailable++; /* manage() sorts it out; meanwhile it counts as down */
                } else if (new_pod) {
                        if (!xp_rs_pod_available(new_pod, min_ready_s, now_s))
                                unavailable++;
                } else if (!xp_rs_pod_available(old_pod, min_ready_s, now_s)) {
                        r = push(&plan->delete, &plan->n_delete, old_pod->name);
                } else if (unavailable < max_unavailable) {
                        r = push(&candidates, &n_candidates, old_pod->name);
                }
        }
        for (size_t i = 0; r >= 0 && i < n_candidates && (int32_t)i < max_unavailable - unavailable;
             i++)
                r = push(&plan->delete, &plan->n_delete, candidates[i]);
        free(candidates);
        return r < 0 ? r : 0;
}

void xp_ds_count(const struct xp_ds_node *nodes,
                 size_t n,
                 const char *hash,
                 int32_t min_ready_s,
                 int64_t now_s,
                 struct xp_ds_counts *ret)
{
        struct xp_ds_counts c = {0};

        for (size_t i = 0; i < n; i++) {
                const struct xp_rs_pod *p = oldest(&nodes[i]);

                if (nodes[i].fit.should_run)
                        c.desired++;
                if (!p)
                        continue;
                if (!nodes[i].fit.should_run) {
                        c.misscheduled++;
                        continue;
                }
                c.current++;
                if (p->ready)
                        c.ready++;
                if (is_new(p, hash))
                        c.updated++;
                if (xp_rs_pod_available(p, min_ready_s, now_s))
                        c.available++;
        }
        c.unavailable = c.desired - c.available;
        if (c.unavailable < 0)
                c.unavailable = 0;
        *ret = c;
}
