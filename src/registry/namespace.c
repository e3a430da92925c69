/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Namespaces: the four every Kubernetes cluster has exist from the first start; namespaced
 * objects can only be written into a namespace that exists and is not being deleted (a hold);
 * deleting a namespace deletes what is in it.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "registry_internal.h"
#include "xpool/macro.h"
#include "xpool/store.h"
#include "xpool/timeutil.h"

#define NAMESPACES "namespaces"

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

void xp_registry_namespace_created(struct xp_registry *registry, const char *name)
{
        cache_add(&registry->namespaces, name);
}

void xp_registry_namespace_changed(struct xp_registry *registry, const char *name)
{
        cache_remove(&registry->namespaces, name);
}

/* ---- holds -------------------------------------------------------------------------------- */

void xp_registry_namespace_release(struct xp_registry *registry, const char *ns)
{
        if (ns)
                pthread_rwlock_unlock(&registry->namespaces.lock);
}

/* 0 when the namespace exists and is Active (it enters the cache), else -errno with err. */
static int namespace_active(struct xp_registry *registry, const char *ns, struct xp_error *err)
{
        const char *phase;
        json_t *object;
        uint64_t version;
        int r;

        r = xp_store_get(registry->store, NAMESPACES, "", ns, &object, &version, err);
        if (r == -ENOENT)
                return xp_errorf(err, r, "namespaces \"%s\" not found", ns);
        if (r < 0)
                return r;
        phase = json_string_value(json_object_get(json_object_get(object, "status"), "phase"));
        r = phase && strcmp(phase, "Terminating") == 0
                ? xp_errorf(err, -XP_REGISTRY_TERMINATING, "namespace %s is being terminated", ns)
                : 0;
        json_decref(object);
        if (r == 0)
                cache_add(&registry->namespaces, ns);
        return r;
}

int xp_registry_namespace_hold(struct xp_registry *registry, const char *ns, struct xp_error *err)
{
        struct namespace_cache *cache = &registry->namespaces;
        int r;

        if (!ns)
                return 0;
        pthread_rwlock_rdlock(&cache->lock);
        if (cache_has(cache, ns))
                return 0;
        r = namespace_active(registry, ns, err);
        if (r < 0)
                pthread_rwlock_unlock(&cache->lock);
        return r;
}

/*
 * As xp_registry_namespace_hold() for several namespaces at once, which a group of writes into
 * them needs: the hold's lock prefers writers and cannot be taken twice by one thread, so the
 * group takes it once. Always held on return (release with any non-NULL ns); ret_active[i] says
 * whether ns[i] (NULL: never) exists and is Active.
 */
void registry_namespaces_hold(struct xp_registry *registry,
                              const char *const *ns,
                              size_t n,
                              bool *ret_active)
{
        struct namespace_cache *cache = &registry->namespaces;

        pthread_rwlock_rdlock(&cache->lock);
        for (size_t i = 0; i < n; i++)
                ret_active[i] = ns[i] && (cache_has(cache, ns[i]) ||
                                          namespace_active(registry, ns[i], NULL) == 0);
}

/* ---- deletion ----------------------------------------------------------------------------- */

/*
 * Deletes the pods of the namespace as DELETE does (graceful for running ones); *ret_left counts
 * those still there, terminating.
 */
static int delete_pods(struct xp_registry *registry,
                       const char *namespace,
                       size_t *ret_left,
                       struct xp_error *err)
{
        const struct xp_registry_delete_options options = {0};
        json_t *items, *item;
        uint64_t version;
        size_t i, left = 0;
        int r;

        r = xp_store_list(registry->store, "pods", namespace, &items, &version, err);
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
                r = xp_registry_pod_delete(
                    registry, namespace, name, &options, &pod, &removed, err);
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

/* Deletes every object of one kind in the namespace; objects already gone are fine. *ret_left
 * counts those their finalizers hold. */
static int delete_contents(struct xp_registry *registry,
                           const struct xp_kind *kind,
                           const char *namespace,
                           size_t *ret_left,
                           struct xp_error *err)
{
        struct xp_store *store = registry->store;
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
                r = xp_registry_delete(registry, kind->plural, namespace, name, 0, NULL, err);
                if (r < 0 && r != -ENOENT) {
                        json_decref(items);
                        return r;
                }
                *ret_left += r == 0;
        }
        json_decref(items);
        return 0;
}

/* Sets status.phase Terminating and metadata.deletionTimestamp now. -ENOMEM. */
static int mark_terminating(json_t *ns)
{
        json_t *status = json_object_get(ns, "status");
        char now[XP_RFC3339_MAX];

        if (!json_is_object(status)) {
                status = json_object();
                if (json_object_set_new(ns, "status", status) < 0)
                        return -ENOMEM;
        }
        xp_time_format_rfc3339(time(NULL), now);
        if (json_object_set_new(status, "phase", json_string("Terminating")) < 0 ||
            json_object_set_new(
                json_object_get(ns, "metadata"), "deletionTimestamp", json_string(now)) < 0)
                return -ENOMEM;
        return 0;
}

int xp_registry_namespace_delete(struct xp_registry *registry,
                                 const char *name,
                                 uint64_t expected,
                                 bool dry,
                                 json_t **ret_ns,
                                 struct xp_error *err)
{
        struct namespace_cache *cache = &registry->namespaces;
        json_t *ns = NULL, *last = NULL;
        uint64_t version;
        int r;

        if (xp_registry_namespace_protected(name))
                return xp_errorf(
                    err,
                    -EPERM,
                    "namespaces \"%s\" is forbidden: this namespace may not be deleted",
                    name);
        r = xp_store_get(registry->store, NAMESPACES, "", name, &ns, &version, err);
        if (r < 0)
                return r;
        if (expected && expected != version) {
                json_decref(ns);
                return -ESTALE;
        }
        if (dry) {
                *ret_ns = ns;
                return 0;
        }

        /* Terminating first, so that no create lands in it while its contents go. */
        r = mark_terminating(ns);
        if (r < 0) {
                json_decref(ns);
                return r;
        }
        pthread_rwlock_wrlock(&cache->lock);
        r = xp_store_update(registry->store, NAMESPACES, "", name, version, ns, &version, err);
        if (r >= 0)
                cache_remove(cache, name);
        pthread_rwlock_unlock(&cache->lock);
        if (r >= 0)
                r = xp_registry_namespace_finish(registry, name, &last, err);
        if (r < 0) {
                json_decref(ns);
                return r;
        }
        /* finished by the node lifecycle controller meanwhile: what we wrote is the answer */
        if (!last) {
                *ret_ns = ns;
                return 0;
        }
        json_decref(ns);
        *ret_ns = last;
        return 0;
}

int xp_registry_namespace_finish(struct xp_registry *registry,
                                 const char *name,
                                 json_t **ret_last,
                                 struct xp_error *err)
{
        struct xp_store *store = registry->store;
        size_t pods_left = 0, held = 0;
        uint64_t version;
        int r;

        for (size_t i = 0; i < xp_kinds_n; i++) {
                if (!xp_kinds[i]->namespaced)
                        continue;
                if (strcmp(xp_kinds[i]->plural, "pods") == 0)
                        r = delete_pods(registry, name, &pods_left, err);
                else
                        r = delete_contents(registry, xp_kinds[i], name, &held, err);
                if (r < 0)
                        return r;
        }
        if (pods_left + held > 0) {
                /* Terminating until the agents have stopped the pods and the finalizers are
                 * gone (the node lifecycle controller comes back) */
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
