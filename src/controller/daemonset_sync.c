/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One DaemonSet's sync (Kubernetes' syncDaemonSet): its pods claimed, grouped by the node each is
 * bound or aimed at; a pod made for each node that should run one (aimed at it through node
 * affinity, so the scheduler places it and allocates its devices), extra and unwanted ones
 * deleted, then a RollingUpdate step within maxUnavailable, and the status.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemonset.h"
#include "deployment.h"
#include "workloads.h"

#define REVISION_LABEL "controller-revision-hash"

struct dsnode_ctx {
        const json_t *spec;
        struct xp_ds_node *nodes;
        const json_t **objs;
        size_t n, cap;
};

static int add_node(json_t *node, void *userdata)
{
        struct dsnode_ctx *c = userdata;

        if (c->n == c->cap) {
                size_t cap = c->cap ? c->cap * 2 : 16;
                struct xp_ds_node *grown = realloc(c->nodes, cap * sizeof(*grown));

                if (!grown)
                        return -ENOMEM;
                c->nodes = grown;
                c->cap = cap;
        }
        c->nodes[c->n] = (struct xp_ds_node){.name = wl_meta(node, "name")};
        xp_ds_node_fit(c->spec, node, &c->nodes[c->n].fit);
        c->n++;
        return 0;
}

/* The node a daemon pod is bound to, or aimed at by its node affinity. */
static const char *target_node(const json_t *pod)
{
        const json_t *spec = json_object_get(pod, "spec");
        const char *node = json_string_value(json_object_get(spec, "nodeName"));
        const json_t *terms = json_object_get(
            json_object_get(json_object_get(json_object_get(spec, "affinity"), "nodeAffinity"),
                            "requiredDuringSchedulingIgnoredDuringExecution"),
            "nodeSelectorTerms");
        const json_t *field =
            json_array_get(json_object_get(json_array_get(terms, 0), "matchFields"), 0);

        if (node && *node)
                return node;
        return json_string_value(json_array_get(json_object_get(field, "values"), 0));
}

static int by_target(const void *pa, const void *pb)
{
        const char *a = target_node(((const struct xp_rs_pod *)pa)->object);
        const char *b = target_node(((const struct xp_rs_pod *)pb)->object);

        return strcmp(a ? a : "", b ? b : "");
}

/* Points each node at its run of pods (pods sorted by target node). */
static void group(struct xp_ds_node *nodes, size_t n, struct xp_rs_pod *pods, size_t n_pods)
{
        if (n_pods > 1) /* an empty array may be NULL, which qsort may not take */
                qsort(pods, n_pods, sizeof(*pods), by_target);
        for (size_t i = 0; i < n; i++)
                for (size_t k = 0; k < n_pods; k++) {
                        const char *t = target_node(pods[k].object);

                        if (!t || strcmp(t, nodes[i].name) != 0)
                                continue;
                        nodes[i].pods = &pods[k];
                        while (k < n_pods && target_node(pods[k].object) &&
                               strcmp(target_node(pods[k].object), nodes[i].name) == 0) {
                                nodes[i].n_pods++;
                                k++;
                        }
                        break;
                }
}

/* The template's affinity with the required node terms replaced by "this node". */
static json_t *affinity_for(const json_t *template_spec, const char *node)
{
        json_t *affinity = json_deep_copy(json_object_get(template_spec, "affinity"));
        json_t *na;

        if (!affinity)
                affinity = json_object();
        if (!affinity)
                return NULL;
        na = json_object_get(affinity, "nodeAffinity");
        if (!na) {
                na = json_object();
                json_object_set_new(affinity, "nodeAffinity", na);
        }
        json_object_set_new(na,
                            "requiredDuringSchedulingIgnoredDuringExecution",
                            json_pack("{s:[{s:[{s:s, s:s, s:[s]}]}]}",
                                      "nodeSelectorTerms",
                                      "matchFields",
                                      "key",
                                      "metadata.name",
                                      "operator",
                                      "In",
                                      "values",
                                      node));
        return affinity;
}

static int create_on_nodes(struct xp_workloads *w,
                           const json_t *ds,
                           const char *ekey,
                           const json_t *tspec,
                           const json_t *labels,
                           const struct xp_ds_plan *plan)
{
        json_t **affinities = calloc(plan->n_create, sizeof(*affinities));
        size_t created = 0;
        int r = -ENOMEM;

        if (!affinities)
                return -ENOMEM;
        for (size_t i = 0; i < plan->n_create; i++)
                if (!(affinities[i] = affinity_for(tspec, plan->create[i])))
                        goto out;
        r = xp_expectations_expect_creations(
            &w->expectations, ekey, (int32_t)plan->n_create, wl_now_ms(w));
        if (r >= 0)
                created = wl_create_pods(
                    w, ds, "apps/v1", "DaemonSet", labels, affinities, plan->n_create);
        for (size_t k = created; r >= 0 && k < plan->n_create; k++)
                xp_expectations_creation_observed(&w->expectations, ekey);
out:
        for (size_t i = 0; i < plan->n_create; i++)
                json_decref(affinities[i]);
        free(affinities);
        return r;
}

static int apply_plan(struct xp_workloads *w,
                      const json_t *ds,
                      const char *ekey,
                      const char *hash,
                      const struct xp_ds_plan *plan,
                      struct xp_rs_pod *pods,
                      size_t n_pods)
{
        const json_t *tspec =
            json_object_get(json_object_get(json_object_get(ds, "spec"), "template"), "spec");
        json_t *labels = json_pack("{s:s}", REVISION_LABEL, hash);
        int r = labels ? 0 : -ENOMEM;

        if (r >= 0 && plan->n_create)
                r = create_on_nodes(w, ds, ekey, tspec, labels, plan);
        if (r >= 0 && plan->n_delete)
                r = xp_expectations_expect_deletions(
                    &w->expectations, ekey, plan->delete, plan->n_delete, wl_now_ms(w));
        for (size_t i = 0; r >= 0 && i < plan->n_delete; i++)
                for (size_t k = 0; k < n_pods; k++)
                        if (strcmp(pods[k].name, plan->delete[i]) == 0 &&
                            wl_delete_pod(w, ds, pods[k].object) < 0)
                                xp_expectations_deletion_observed(
                                    &w->expectations, ekey, plan->delete[i]);
        json_decref(labels);
        return r;
}

static int32_t max_unavailable(const json_t *ds, int32_t desired)
{
        const json_t *rolling = json_object_get(
            json_object_get(json_object_get(ds, "spec"), "updateStrategy"), "rollingUpdate");
        const json_t *v = json_object_get(rolling, "maxUnavailable");
        int32_t n = 1;

        if (v &&
            xp_intstr_resolve(
                v, desired, true, "spec.updateStrategy.rollingUpdate.maxUnavailable", &n, NULL) < 0)
                return 1;
        return n;
}

static int32_t min_ready(const json_t *ds)
{
        json_int_t n =
            json_integer_value(json_object_get(json_object_get(ds, "spec"), "minReadySeconds"));

        return n < 0 ? 0 : (int32_t)n;
}

static bool on_delete_strategy(const json_t *ds)
{
        const char *type = json_string_value(json_object_get(
            json_object_get(json_object_get(ds, "spec"), "updateStrategy"), "type"));

        return type && strcmp(type, "OnDelete") == 0;
}

static int manage(struct xp_workloads *w,
                  const json_t *ds,
                  const char *ekey,
                  const char *hash,
                  struct dsnode_ctx *c,
                  struct xp_rs_pod *pods,
                  size_t n_pods)
{
        struct xp_ds_plan plan = {0};
        struct xp_ds_counts counts;
        int r;

        r = xp_ds_plan_manage(c->nodes, c->n, &plan);
        if (r >= 0 && plan.n_create == 0 && plan.n_delete == 0 && !on_delete_strategy(ds)) {
                xp_ds_count(c->nodes, c->n, hash, min_ready(ds), wl_now_s(w), &counts);
                r = xp_ds_plan_rolling(c->nodes,
                                       c->n,
                                       hash,
                                       max_unavailable(ds, counts.desired),
                                       min_ready(ds),
                                       wl_now_s(w),
                                       &plan);
        }
        if (r >= 0)
                r = apply_plan(w, ds, ekey, hash, &plan, pods, n_pods);
        xp_ds_plan_done(&plan);
        return r;
}

static json_t *status_of(const json_t *ds, const struct xp_ds_counts *c)
{
        const json_t *generation = json_object_get(json_object_get(ds, "metadata"), "generation");
        json_t *status = json_pack("{s:i, s:i, s:i, s:i}",
                                   "currentNumberScheduled",
                                   c->current,
                                   "numberMisscheduled",
                                   c->misscheduled,
                                   "desiredNumberScheduled",
                                   c->desired,
                                   "numberReady",
                                   c->ready);

        if (!status)
                return NULL;
        if (json_is_integer(generation))
                json_object_set(status, "observedGeneration", (json_t *)generation);
        if (c->updated)
                json_object_set_new(status, "updatedNumberScheduled", json_integer(c->updated));
        if (c->available)
                json_object_set_new(status, "numberAvailable", json_integer(c->available));
        if (c->unavailable)
                json_object_set_new(status, "numberUnavailable", json_integer(c->unavailable));
        return status;
}

int wl_daemonset_sync(struct xp_workloads *w, const char *key)
{
        json_t *ds = wl_cache_get(&w->cache[WL_DAEMONSETS], key), *status;
        const json_t *template;
        struct dsnode_ctx c = {0};
        struct xp_rs_pod *pods = NULL;
        struct xp_ds_counts counts;
        char ekey[600], hash[XP_DEPLOY_HASH_MAX];
        size_t n_pods = 0;
        int r;

        wl_expect_key("DaemonSet", key, ekey, sizeof(ekey));
        if (!ds) {
                xp_expectations_delete(&w->expectations, ekey);
                return 0;
        }
        json_incref(ds);
        template = json_object_get(json_object_get(ds, "spec"), "template");
        c.spec = json_object_get(template, "spec");
        r = xp_deploy_template_hash(template,
                                    (int32_t)json_integer_value(json_object_get(
                                        json_object_get(ds, "status"), "collisionCount")),
                                    hash);
        if (r >= 0)
                r = wl_owned_pods(w, ds, "apps/v1", "DaemonSet", &pods, &n_pods);
        if (r >= 0)
                r = wl_cache_each(&w->cache[WL_NODES], add_node, &c);
        if (r >= 0) {
                group(c.nodes, c.n, pods, n_pods);
                if (xp_expectations_satisfied(&w->expectations, ekey, wl_now_ms(w)) &&
                    !json_object_get(json_object_get(ds, "metadata"), "deletionTimestamp")) {
                        r = wl_daemonset_history(w, ds, hash, pods, n_pods);
                        if (r >= 0)
                                r = manage(w, ds, ekey, hash, &c, pods, n_pods);
                }
                xp_ds_count(c.nodes, c.n, hash, min_ready(ds), wl_now_s(w), &counts);
                status = status_of(ds, &counts);
                if (status && wl_write_status(w, "daemonsets", key, status) < 0 && r >= 0)
                        r = -EAGAIN;
                json_decref(status);
        }
        free(c.nodes);
        free(pods);
        json_decref(ds);
        return r;
}
