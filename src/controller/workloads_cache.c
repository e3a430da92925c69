/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the workload controllers keep of the store: pods slimmed to what their syncs read,
 * ReplicaSets, Deployments, DaemonSets and nodes whole, and of every kind the garbage
 * collector's record. The
 * informer's callbacks fill it and queue the keys the change concerns (workloads_queue.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workloads.h"
#include "xpool/kind.h"
#include "xpool/registry.h"
#include "xpool/store.h"

char *wl_key(const json_t *object)
{
        const char *ns = wl_meta(object, "namespace"), *name = wl_meta(object, "name");
        char *key;

        if (!name)
                return NULL;
        if (!ns || !*ns)
                return strdup(name);
        if (asprintf(&key, "%s/%s", ns, name) < 0)
                return NULL;
        return key;
}

static void entry_free(struct wl_entry *e)
{
        if (!e)
                return;
        json_decref(e->object);
        free(e->key);
        free(e);
}

int wl_cache_put(struct wl_cache *cache, const json_t *object)
{
        struct wl_entry *e = calloc(1, sizeof(*e)), *old;

        if (!e || !(e->key = wl_key(object))) {
                free(e);
                return -ENOMEM;
        }
        e->object = json_incref((json_t *)object);
        old = xp_map_del(&cache->map, e->key);
        if (xp_map_put(&cache->map, e->key, e) < 0) {
                entry_free(e);
                entry_free(old);
                return -ENOMEM;
        }
        entry_free(old);
        return 0;
}

void wl_cache_del(struct wl_cache *cache, const json_t *object)
{
        char *key = wl_key(object);

        if (key)
                entry_free(xp_map_del(&cache->map, key));
        free(key);
}

json_t *wl_cache_get(const struct wl_cache *cache, const char *key)
{
        const struct wl_entry *e = xp_map_get(&cache->map, key);

        return e ? e->object : NULL;
}

void wl_cache_clear(struct wl_cache *cache)
{
        for (size_t i = 0; i < cache->map.cap; i++)
                if (cache->map.values && cache->map.values[i])
                        entry_free(cache->map.values[i]);
        xp_map_done(&cache->map);
}

int wl_cache_each(const struct wl_cache *cache,
                  int (*fn)(json_t *object, void *userdata),
                  void *userdata)
{
        for (size_t i = 0; i < cache->map.cap; i++) {
                const struct wl_entry *e = cache->map.values ? cache->map.values[i] : NULL;
                int r;

                if (e && (r = fn(e->object, userdata)) < 0)
                        return r;
        }
        return 0;
}

/* ---- the informer's callbacks ------------------------------------------------------------ */

static const char *const cached[WL_N] = {
    [WL_PODS] = "pods",
    [WL_REPLICASETS] = "replicasets",
    [WL_DEPLOYMENTS] = "deployments",
    [WL_DAEMONSETS] = "daemonsets",
    [WL_NODES] = "nodes",
    [WL_JOBS] = "jobs",
    [WL_CRONJOBS] = "cronjobs",
};

/* The store's resource of object, from its apiVersion and kind; NULL when unknown. */
static const char *resource_of(const json_t *object)
{
        const struct xp_kind *kind =
            xp_kind_by_api_version(json_string_value(json_object_get(object, "apiVersion")),
                                   json_string_value(json_object_get(object, "kind")));

        return kind ? kind->plural : NULL;
}

/* Sets key of to to from's value, shared; absent stays absent. */
static int share(json_t *to, const json_t *from, const char *key)
{
        json_t *v = json_object_get(from, key);

        return !v || json_object_set(to, key, v) == 0 ? 0 : -ENOMEM;
}

/* A copy of the metadata without managedFields (the new object shares each member). */
static json_t *meta_without_managed_fields(const json_t *meta)
{
        json_t *copy = json_object(), *v;
        const char *key;

        if (!copy)
                return NULL;
        /* member by member rather than json_copy() and a delete: the largest member is neither
         * set nor deleted, and the copy's table holds one member fewer when it sizes itself */
        json_object_foreach((json_t *)meta, key, v)
        {
                if (strcmp(key, "managedFields") != 0 && json_object_set(copy, key, v) < 0) {
                        json_decref(copy);
                        return NULL;
                }
        }
        return copy;
}

json_t *wl_pod_slim(const json_t *pod)
{
        json_t *meta = json_object_get(pod, "metadata");
        /* the metadata is copied only to drop managedFields: without them it is shared */
        json_t *slim = json_object(),
               *slim_meta = json_object_get(meta, "managedFields")
                                ? meta_without_managed_fields(meta)
                                : json_incref(meta),
               *slim_spec = json_object();
        int r = slim && slim_meta && slim_spec ? 0 : -ENOMEM;

        if (r == 0)
                r = share(slim, pod, "apiVersion") | share(slim, pod, "kind") |
                    share(slim, pod, "status") |
                    share(slim_spec, json_object_get(pod, "spec"), "nodeName") |
                    share(slim_spec, json_object_get(pod, "spec"), "affinity");
        if (r == 0 && slim_meta && json_object_set(slim, "metadata", slim_meta) < 0)
                r = -ENOMEM;
        if (r == 0 && json_object_set(slim, "spec", slim_spec) < 0)
                r = -ENOMEM;
        json_decref(slim_meta);
        json_decref(slim_spec);
        if (r < 0) {
                json_decref(slim);
                return NULL;
        }
        return slim;
}

/* What the cache keeps of object: pods slimmed (wl_pod_slim()), the rest whole. */
static int cache_put(struct wl_cache *cache, bool pods, const json_t *object)
{
        json_t *slim;
        int r;

        if (!pods)
                return wl_cache_put(cache, object);
        slim = wl_pod_slim(object);
        if (!slim)
                return -ENOMEM;
        r = wl_cache_put(cache, slim);
        json_decref(slim);
        return r;
}

static bool adopters_exist(const struct xp_workloads *w)
{
        return w->cache[WL_REPLICASETS].map.n > 0 || w->cache[WL_DAEMONSETS].map.n > 0;
}

bool wl_pod_cached(const struct xp_workloads *w, const json_t *pod)
{
        return adopters_exist(w) || xp_owner_controller_ref(pod) != NULL;
}

static void unreadable(const char *ns, const char *name, const char *why, void *userdata)
{
        (void)ns, (void)name, (void)why, (void)userdata; /* the informer's list says them */
}

int wl_orphans_fill(struct xp_workloads *w, struct xp_error *err)
{
        json_t *pods, *pod;
        uint64_t version;
        size_t i;
        int r;

        if (!w->orphans_left_out || !adopters_exist(w))
                return 0;
        /* newer than what the informer delivered: the events still to come bring each pod
         * back to its latest state by the end of the sync that delivers them */
        r = xp_store_list_readable(xp_registry_store(w->registry),
                                   "pods",
                                   NULL,
                                   &(struct xp_store_skip){.fn = unreadable},
                                   &pods,
                                   &version,
                                   err);
        if (r < 0)
                return r;
        json_array_foreach(pods, i, pod)
        {
                if (!xp_owner_controller_ref(pod) && cache_put(&w->cache[WL_PODS], true, pod) < 0) {
                        json_decref(pods);
                        return xp_errorf(err, -ENOMEM, "workloads: out of memory");
                }
        }
        json_decref(pods);
        w->orphans_left_out = false;
        return 0;
}

/* An object of resource (the store's kind it came from) was added, changed or deleted. */
static void
seen_as(struct xp_workloads *w, const char *resource, const json_t *object, enum wl_event event)
{
        bool deleted = event == WL_DELETED;

        for (size_t i = 0; i < WL_N; i++) {
                bool left_out;

                if (strcmp(cached[i], resource) != 0)
                        continue;
                left_out = !deleted && i == WL_PODS && !wl_pod_cached(w, object);
                w->orphans_left_out |= left_out;
                if (deleted || left_out) {
                        /* a pod left out must not be read as it was when cached */
                        if (w->cache[i].map.n > 0)
                                wl_cache_del(&w->cache[i], object);
                } else if (cache_put(&w->cache[i], i == WL_PODS, object) < 0)
                        continue; /* the next relist brings it back */
        }
        wl_on_any(w, resource, object, event);
}

/* Any kind's object: its resource read from its apiVersion and kind (left alone when unknown). */
static void seen(struct xp_workloads *w, const json_t *object, enum wl_event event)
{
        const char *resource = resource_of(object);

        if (resource)
                seen_as(w, resource, object, event);
}

static void on_add(void *userdata, const json_t *object, uint64_t version)
{
        (void)version;
        seen(userdata, object, WL_ADDED);
}

static void on_update(void *userdata, const json_t *object, uint64_t version)
{
        (void)version;
        seen(userdata, object, WL_UPDATED);
}

static void on_delete(void *userdata, const json_t *object, uint64_t version)
{
        (void)version;
        seen(userdata, object, WL_DELETED);
}

/* Pods, the busiest kind, come from the pods' log: no search of the kinds' table for each. */
static void on_pod_add(void *userdata, const json_t *pod, uint64_t version)
{
        (void)version;
        seen_as(userdata, "pods", pod, WL_ADDED);
}

static void on_pod_update(void *userdata, const json_t *pod, uint64_t version)
{
        (void)version;
        seen_as(userdata, "pods", pod, WL_UPDATED);
}

static void on_pod_delete(void *userdata, const json_t *pod, uint64_t version)
{
        (void)version;
        seen_as(userdata, "pods", pod, WL_DELETED);
}

int wl_handlers_make(struct xp_workloads *w)
{
        w->handlers = calloc(xp_kinds_n, sizeof(*w->handlers));
        if (!w->handlers)
                return -ENOMEM;
        for (size_t i = 0; i < xp_kinds_n; i++) {
                /* Events own nothing and nothing owns them: the busiest kind, left out */
                if (strcmp(xp_kinds[i]->plural, "events") == 0)
                        continue;
                bool pods = strcmp(xp_kinds[i]->plural, "pods") == 0;

                w->handlers[w->n_handlers++] = (struct xp_informer_handler){
                    .resource = xp_kinds[i]->plural,
                    .add = pods ? on_pod_add : on_add,
                    .update = pods ? on_pod_update : on_update,
                    .delete = pods ? on_pod_delete : on_delete,
                };
        }
        return 0;
}
