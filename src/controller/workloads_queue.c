/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Which syncs an informer event calls for, as Kubernetes' controllers' event handlers decide: a
 * pod wakes its controller (and counts against its expectations), an orphan wakes every
 * controller whose selector matches it (to adopt it), a ReplicaSet wakes its Deployment, a node
 * every DaemonSet; and the garbage collector looks at every object with owners, and at the
 * dependents of one that is gone or being deleted.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workloads.h"
#include "workqueue.h"

void wl_enqueue(struct xp_workqueue *queue, const json_t *object)
{
        char *key = wl_key(object);

        if (key)
                (void)xp_workqueue_add(queue, key); /* -ENOMEM: the next event queues it */
        free(key);
}

static void enqueue_ref(struct xp_workqueue *queue, const json_t *object, const json_t *ref)
{
        const char *ns = wl_meta(object, "namespace");
        const char *name = json_string_value(json_object_get(ref, "name"));
        char key[512];

        if (!name)
                return;
        snprintf(key, sizeof(key), "%s/%s", ns ? ns : "", name);
        (void)xp_workqueue_add(queue, key);
}

void wl_expect_key(const char *kind, const char *key, char *buf, size_t size)
{
        snprintf(buf, size, "%s/%s", kind, key);
}

struct orphan_ctx {
        const json_t *pod;
        struct xp_workqueue *queue;
};

/* Queues a controller in the orphan's namespace whose selector matches it. */
static int wake_matching(json_t *owner, void *userdata)
{
        struct orphan_ctx *c = userdata;
        const char *ns = wl_meta(owner, "namespace"), *pns = wl_meta(c->pod, "namespace");
        const json_t *selector = json_object_get(json_object_get(owner, "spec"), "selector");
        const json_t *labels = json_object_get(json_object_get(c->pod, "metadata"), "labels");

        if (ns && pns && strcmp(ns, pns) == 0 && xp_selector_json_matches(selector, labels))
                wl_enqueue(c->queue, owner);
        return 0;
}

/*
 * A pod of ReplicaSet key gone: its Deployment, which a Recreate rollout holds until the old pods
 * are gone (as Kubernetes' deletePod does). The ReplicaSet's own status says nothing then: it
 * stopped counting the pod when it began terminating.
 */
static void wake_recreate(struct xp_workloads *w, const char *key)
{
        const json_t *rs = wl_cache_get(&w->cache[WL_REPLICASETS], key);
        const json_t *ref = rs ? xp_owner_controller_ref(rs) : NULL;
        const char *kind = json_string_value(json_object_get(ref, "kind"));

        if (kind && strcmp(kind, "Deployment") == 0)
                enqueue_ref(w->deploy_queue, rs, ref);
}

static void on_pod(struct xp_workloads *w, const json_t *pod, enum wl_event event)
{
        const json_t *ref = xp_owner_controller_ref(pod);
        const char *kind = json_string_value(json_object_get(ref, "kind"));
        struct xp_workqueue *queue = NULL;
        char key[512], ekey[600];

        if (!ref) {
                if (event == WL_DELETED)
                        return;
                wl_cache_each(&w->cache[WL_REPLICASETS],
                              wake_matching,
                              &(struct orphan_ctx){pod, w->rs_queue});
                wl_cache_each(&w->cache[WL_DAEMONSETS],
                              wake_matching,
                              &(struct orphan_ctx){pod, w->ds_queue});
                return;
        }
        if (kind && strcmp(kind, "ReplicaSet") == 0)
                queue = w->rs_queue;
        else if (kind && strcmp(kind, "DaemonSet") == 0)
                queue = w->ds_queue;
        else if (kind && strcmp(kind, "Job") == 0)
                queue = w->job_queue;
        if (!queue)
                return;
        snprintf(key,
                 sizeof(key),
                 "%s/%s",
                 wl_meta(pod, "namespace") ? wl_meta(pod, "namespace") : "",
                 json_string_value(json_object_get(ref, "name"))
                     ? json_string_value(json_object_get(ref, "name"))
                     : "");
        wl_expect_key(kind, key, ekey, sizeof(ekey));
        if (event == WL_ADDED)
                xp_expectations_creation_observed(&w->expectations, ekey);
        if (event == WL_DELETED ||
            json_object_get(json_object_get(pod, "metadata"), "deletionTimestamp"))
                xp_expectations_deletion_observed(&w->expectations, ekey, wl_meta(pod, "name"));
        (void)xp_workqueue_add(queue, key);
        if (event == WL_DELETED && queue == w->rs_queue)
                wake_recreate(w, key);
}

static void on_gc(struct xp_workloads *w, const json_t *object, enum wl_event event)
{
        const char *uid = wl_meta(object, "uid");
        const json_t *meta = json_object_get(object, "metadata");

        if (!uid)
                return;
        if (event == WL_DELETED) {
                size_t n = 0;
                const char **deps;

                json_t *ref;
                size_t i;

                /* an owner waiting for its dependents (foreground) may now go */
                json_array_foreach(json_object_get(meta, "ownerReferences"),
                                   i,
                                   ref) if (json_string_value(json_object_get(ref, "uid")))(void)
                    xp_workqueue_add(w->gc_queue, json_string_value(json_object_get(ref, "uid")));
                xp_gc_graph_remove(&w->graph, uid);
                deps = xp_gc_dependents(&w->graph, uid, &n);
                for (i = 0; i < n; i++)
                        (void)xp_workqueue_add(w->gc_queue, deps[i]);
                free(deps);
                return;
        }
        if (json_array_size(json_object_get(meta, "ownerReferences")) > 0 ||
            json_object_get(meta, "deletionTimestamp"))
                (void)xp_workqueue_add(w->gc_queue, uid);
}

static int wake_all(json_t *object, void *userdata)
{
        wl_enqueue(userdata, object);
        return 0;
}

void wl_on_any(struct xp_workloads *w,
               const char *resource,
               const json_t *object,
               enum wl_event event)
{
        const char *uid = wl_meta(object, "uid");

        if (uid && event != WL_DELETED)
                (void)xp_gc_graph_put(&w->graph, resource, object); /* -ENOMEM: a relist mends it */
        on_gc(w, object, event);
        if (strcmp(resource, "pods") == 0) {
                on_pod(w, object, event);
        } else if (strcmp(resource, "replicasets") == 0) {
                const json_t *ref = xp_owner_controller_ref(object);
                const char *kind = json_string_value(json_object_get(ref, "kind"));

                wl_enqueue(w->rs_queue, object); /* gone: its sync forgets its expectations */
                if (kind && strcmp(kind, "Deployment") == 0)
                        enqueue_ref(w->deploy_queue, object, ref);
        } else if (strcmp(resource, "deployments") == 0) {
                wl_enqueue(w->deploy_queue, object);
        } else if (strcmp(resource, "daemonsets") == 0) {
                wl_enqueue(w->ds_queue, object);
        } else if (strcmp(resource, "jobs") == 0) {
                const json_t *ref = xp_owner_controller_ref(object);
                const char *kind = json_string_value(json_object_get(ref, "kind"));

                wl_enqueue(w->job_queue, object);
                if (kind && strcmp(kind, "CronJob") == 0)
                        enqueue_ref(w->cronjob_queue, object, ref);
        } else if (strcmp(resource, "cronjobs") == 0) {
                wl_enqueue(w->cronjob_queue, object);
        } else if (strcmp(resource, "nodes") == 0) {
                wl_cache_each(&w->cache[WL_DAEMONSETS], wake_all, w->ds_queue);
        }
}
