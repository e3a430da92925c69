/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Namespaces: the four every Kubernetes cluster has exist from the first start; namespaced
 * objects can only be created in a namespace that exists and is not being deleted; deleting a
 * namespace deletes what is in it.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"
#include "xpool/macro.h"
#include "xpool/timeutil.h"

#define NAMESPACES "namespaces"

static const char *const system_namespaces[] = {
    "default",
    "kube-system",
    "kube-public",
    "kube-node-lease",
};

bool namespace_protected(const char *name)
{
        for (size_t i = 0; i < XP_ELEMENTSOF(system_namespaces); i++)
                if (strcmp(system_namespaces[i], name) == 0)
                        return true;
        return false;
}

static json_t *namespace_json(const char *name)
{
        char created[XP_RFC3339_MAX], uid[UUID_STRING];

        if (uuid_v4(uid) < 0)
                return NULL;
        xp_time_format_rfc3339(time(NULL), created);
        return json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:{s:s}}, s:{s:[s]}, s:{s:s}}",
                         "apiVersion",
                         "v1",
                         "kind",
                         "Namespace",
                         "metadata",
                         "name",
                         name,
                         "uid",
                         uid,
                         "creationTimestamp",
                         created,
                         "labels",
                         "kubernetes.io/metadata.name",
                         name,
                         "spec",
                         "finalizers",
                         "kubernetes",
                         "status",
                         "phase",
                         "Active");
}

/* ---- the cache ---------------------------------------------------------------------------- */

static bool cache_has(struct namespace_cache *cache, const char *name)
{
        bool found = false;

        pthread_mutex_lock(&cache->mutex);
        for (size_t i = 0; i < cache->n && !found; i++)
                found = strcmp(cache->names[i], name) == 0;
        pthread_mutex_unlock(&cache->mutex);
        return found;
}

/* Best effort: a namespace missing from the cache is read from the store instead. */
static void cache_add(struct namespace_cache *cache, const char *name)
{
        char **names, *copy;

        if (cache_has(cache, name))
                return;
        copy = strdup(name);
        if (!copy)
                return;
        pthread_mutex_lock(&cache->mutex);
        names = realloc(cache->names, (cache->n + 1) * sizeof *names);
        if (names) {
                names[cache->n++] = TAKE_PTR(copy);
                cache->names = names;
        }
        pthread_mutex_unlock(&cache->mutex);
        free(copy);
}

static void cache_remove(struct namespace_cache *cache, const char *name)
{
        pthread_mutex_lock(&cache->mutex);
        for (size_t i = 0; i < cache->n; i++)
                if (strcmp(cache->names[i], name) == 0) {
                        free(cache->names[i]);
                        cache->names[i] = cache->names[--cache->n];
                        break;
                }
        pthread_mutex_unlock(&cache->mutex);
}

void namespace_created(struct api *api, const char *name)
{
        cache_add(&api->namespaces, name);
}

void namespace_changed(struct api *api, const char *name)
{
        cache_remove(&api->namespaces, name);
}

int namespaces_init(struct api *api, struct xp_error *err)
{
        struct xp_store *store = api->store;
        pthread_rwlockattr_t attr;

        /* Writers first: a namespace deletion must not wait out a stream of creates. */
        pthread_rwlockattr_init(&attr);
        pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
        pthread_rwlock_init(&api->namespaces.lock, &attr);
        pthread_rwlockattr_destroy(&attr);
        pthread_mutex_init(&api->namespaces.mutex, NULL);

        for (size_t i = 0; i < XP_ELEMENTSOF(system_namespaces); i++) {
                json_t *ns;
                uint64_t version;
                int r;

                r = xp_store_get(store, NAMESPACES, "", system_namespaces[i], &ns, &version, err);
                if (r == 0) {
                        json_decref(ns);
                        continue;
                }
                if (r != -ENOENT)
                        return r;
                ns = namespace_json(system_namespaces[i]);
                if (!ns)
                        return -ENOMEM;
                r = xp_store_create(store, NAMESPACES, "", system_namespaces[i], ns, &version, err);
                json_decref(ns);
                if (r < 0 && r != -EEXIST)
                        return r;
        }
        return 0;
}

void namespaces_done(struct api *api)
{
        struct namespace_cache *cache = &api->namespaces;

        for (size_t i = 0; i < cache->n; i++)
                free(cache->names[i]);
        free(cache->names);
        cache->names = NULL;
        cache->n = 0;
        pthread_mutex_destroy(&cache->mutex);
        pthread_rwlock_destroy(&cache->lock);
}

void namespace_release(const struct request *req, const struct xp_kind *kind)
{
        if (kind->namespaced)
                pthread_rwlock_unlock(&req->api->namespaces.lock);
}

int namespace_check(const struct request *req, const struct xp_kind *kind, struct reply *ret)
{
        struct namespace_cache *cache = &req->api->namespaces;
        struct xp_error err = {0};
        const char *phase;
        json_t *ns;
        uint64_t version;
        int r;

        if (!kind->namespaced)
                return 1;
        pthread_rwlock_rdlock(&cache->lock);
        if (cache_has(cache, req->namespace))
                return 1;
        r = xp_store_get(req->api->store, NAMESPACES, "", req->namespace, &ns, &version, &err);
        if (r == 0)
                r = 1;
        else if (r == -ENOENT)
                r = reply_status(ret,
                                 404,
                                 "NotFound",
                                 req->namespace,
                                 NAMESPACES,
                                 "namespaces \"%s\" not found",
                                 req->namespace);
        else if (r < 0)
                r = reply_store_error(ret, r, NULL, req->namespace, &err);
        if (r <= 0) {
                pthread_rwlock_unlock(&cache->lock);
                return r;
        }
        phase = json_string_value(json_object_get(json_object_get(ns, "status"), "phase"));
        if (phase && strcmp(phase, "Terminating") == 0) {
                json_decref(ns);
                pthread_rwlock_unlock(&cache->lock);
                return reply_status(
                    ret,
                    403,
                    "Forbidden",
                    req->name,
                    kind->plural,
                    "%s is forbidden: unable to create new content in namespace %s because it is being terminated",
                    kind->plural,
                    req->namespace);
        }
        json_decref(ns);
        cache_add(cache, req->namespace);
        return 1;
}

/*
 * Deletes the pods of the namespace as DELETE does (graceful for running ones); *ret_left counts
 * those still there, terminating.
 */
static int
delete_pods(struct api *api, const char *namespace, size_t *ret_left, struct xp_error *err)
{
        const struct pod_delete_options options = {0};
        json_t *items, *item;
        uint64_t version;
        size_t i, left = 0;
        int r;

        r = xp_store_list(api->store, "pods", namespace, &items, &version, err);
        if (r < 0)
                return r;
        json_array_foreach(items, i, item)
        {
                const char *name =
                    json_string_value(json_object_get(json_object_get(item, "metadata"), "name"));
                json_t *pod = NULL;
                bool removed = true;

                if (!name)
                        continue;
                r = pod_delete(api, namespace, name, &options, &pod, &removed, err);
                json_decref(pod);
                if (r < 0 && r != -ENOENT) {
                        json_decref(items);
                        return r;
                }
                left += r >= 0 && !removed;
        }
        json_decref(items);
        *ret_left = left;
        return 0;
}

/* Deletes every object of one kind in the namespace; objects already gone are fine. */
static int delete_contents(struct xp_store *store,
                           const struct xp_kind *kind,
                           const char *namespace,
                           struct xp_error *err)
{
        json_t *items, *item;
        uint64_t version;
        size_t i;
        int r;

        r = xp_store_list(store, kind->plural, namespace, &items, &version, err);
        if (r < 0)
                return r;
        json_array_foreach(items, i, item)
        {
                const char *name =
                    json_string_value(json_object_get(json_object_get(item, "metadata"), "name"));

                if (!name)
                        continue;
                r = xp_store_delete(store, kind->plural, namespace, name, 0, NULL, &version, err);
                if (r < 0 && r != -ENOENT) {
                        json_decref(items);
                        return r;
                }
        }
        json_decref(items);
        return 0;
}

int namespace_delete(const struct request *req,
                     const struct xp_kind *kind,
                     uint64_t expected,
                     bool dry,
                     struct reply *ret)
{
        struct xp_store *store = req->api->store;
        struct xp_error err = {0};
        char now[XP_RFC3339_MAX];
        json_t *ns = NULL, *status, *last = NULL;
        uint64_t version;
        int r;

        if (namespace_protected(req->name))
                return reply_status(
                    ret,
                    403,
                    "Forbidden",
                    req->name,
                    NAMESPACES,
                    "namespaces \"%s\" is forbidden: this namespace may not be deleted",
                    req->name);
        r = xp_store_get(store, NAMESPACES, "", req->name, &ns, &version, &err);
        if (r < 0)
                return reply_store_error(ret, r, kind, req->name, &err);
        if (expected && expected != version) {
                json_decref(ns);
                return reply_store_error(ret, -ESTALE, kind, req->name, &err);
        }
        if (dry)
                return reply_json(ret, 200, ns);

        /* Terminating first, so that no create lands in it while its contents go. */
        status = json_object_get(ns, "status");
        if (!json_is_object(status)) {
                status = json_object();
                json_object_set_new(ns, "status", status);
        }
        xp_time_format_rfc3339(time(NULL), now);
        if (!status || json_object_set_new(status, "phase", json_string("Terminating")) < 0 ||
            json_object_set_new(
                json_object_get(ns, "metadata"), "deletionTimestamp", json_string(now)) < 0) {
                json_decref(ns);
                return -ENOMEM;
        }
        pthread_rwlock_wrlock(&req->api->namespaces.lock);
        r = xp_store_update(store, NAMESPACES, "", req->name, version, ns, &version, &err);
        if (r >= 0)
                cache_remove(&req->api->namespaces, req->name);
        pthread_rwlock_unlock(&req->api->namespaces.lock);
        if (r < 0) {
                json_decref(ns);
                return reply_store_error(ret, r, kind, req->name, &err);
        }

        r = namespace_finish(req->api, req->name, &last, &err);
        if (r < 0) {
                json_decref(ns);
                return reply_store_error(ret, r, kind, req->name, &err);
        }
        /* finished by the node lifecycle controller meanwhile: what we wrote is the answer */
        if (!last)
                return reply_json(ret, 200, ns);
        json_decref(ns);
        return reply_json(ret, 200, last);
}

int namespace_finish(struct api *api, const char *name, json_t **ret_last, struct xp_error *err)
{
        struct xp_store *store = api->store;
        size_t pods_left = 0;
        uint64_t version;
        int r;

        for (size_t i = 0; i < xp_kinds_n; i++) {
                if (!xp_kinds[i]->namespaced)
                        continue;
                if (strcmp(xp_kinds[i]->plural, "pods") == 0)
                        r = delete_pods(api, name, &pods_left, err);
                else
                        r = delete_contents(store, xp_kinds[i], name, err);
                if (r < 0)
                        return r;
        }
        if (pods_left > 0) {
                /* Terminating until the agents have stopped the pods (nodelife.c comes back) */
                if (!ret_last)
                        return 0;
                return xp_store_get(store, NAMESPACES, "", name, ret_last, &version, err);
        }
        r = xp_store_delete(store, NAMESPACES, "", name, 0, ret_last, &version, err);
        if (r == -ENOENT) {
                /* finished by another call meanwhile */
                if (ret_last)
                        *ret_last = NULL;
                return 1;
        }
        return r < 0 ? r : 1;
}
