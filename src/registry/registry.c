/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The registry's lifecycle with the namespaces every server has, and the names and versions the
 * server gives objects.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "registry_internal.h"
#include "xpool/macro.h"
#include "xpool/priority.h"
#include "xpool/random.h"
#include "xpool/store.h"
#include "xpool/strutil.h"
#include "xpool/timeutil.h"

#define GENERATE_CHARS 5
#define NAMESPACES     "namespaces"

static const char *const system_namespaces[] = {
    "default",
    "kube-system",
    "kube-public",
    "kube-node-lease",
};

bool xp_registry_namespace_protected(const char *name)
{
        for (size_t i = 0; i < XP_ELEMENTSOF(system_namespaces); i++)
                if (strcmp(system_namespaces[i], name) == 0)
                        return true;
        return false;
}

static json_t *namespace_json(const char *name)
{
        char created[XP_RFC3339_MAX], uid[XP_REGISTRY_UID_STRING];

        if (xp_registry_uid(uid) < 0)
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

static int namespaces_init(struct xp_registry *registry, struct xp_error *err)
{
        struct namespace_cache *cache = &registry->namespaces;
        pthread_rwlockattr_t attr;

        /* Writers first: a namespace deletion must not wait out a stream of creates. */
        pthread_rwlockattr_init(&attr);
        pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
        pthread_rwlock_init(&cache->lock, &attr);
        pthread_rwlockattr_destroy(&attr);
        pthread_mutex_init(&cache->mutex, NULL);

        for (size_t i = 0; i < XP_ELEMENTSOF(system_namespaces); i++) {
                const char *name = system_namespaces[i];
                json_t *ns;
                uint64_t version;
                int r;

                r = xp_store_get(registry->store, NAMESPACES, "", name, &ns, &version, err);
                if (r == 0) {
                        json_decref(ns);
                        continue;
                }
                if (r != -ENOENT)
                        return r;
                ns = namespace_json(name);
                if (!ns)
                        return -ENOMEM;
                r = xp_store_create(registry->store, NAMESPACES, "", name, ns, &version, err);
                json_decref(ns);
                if (r < 0 && r != -EEXIST)
                        return r;
        }
        return 0;
}

static void namespaces_done(struct xp_registry *registry)
{
        struct namespace_cache *cache = &registry->namespaces;

        for (size_t i = 0; i < cache->n; i++)
                free(cache->names[i]);
        free(cache->names);
        cache->names = NULL;
        cache->n = 0;
        pthread_mutex_destroy(&cache->mutex);
        pthread_rwlock_destroy(&cache->lock);
}

int xp_registry_new(struct xp_store *store, struct xp_registry **ret, struct xp_error *err)
{
        struct xp_registry *registry;
        int r;

        registry = calloc(1, sizeof *registry);
        if (!registry)
                return -ENOMEM;
        registry->store = store;
        pthread_mutexattr_t recursive;
        pthread_mutexattr_init(&recursive);
        pthread_mutexattr_settype(&recursive, PTHREAD_MUTEX_RECURSIVE);
        pthread_mutex_init(&registry->quota_lock, &recursive);
        pthread_mutexattr_destroy(&recursive);
        priority_cache_init(registry);
        kind_cache_init(&registry->quotas, "resourcequotas");
        kind_cache_init(&registry->limitranges, "limitranges");
        kind_cache_init(&registry->serviceaccounts, "serviceaccounts");
        r = registry_event_names_init(&registry->event_names);
        if (r >= 0)
                r = namespaces_init(registry, err);
        if (r >= 0)
                r = xp_priority_system_ensure(registry, err); /* as kube-apiserver at start */
        if (r < 0) {
                xp_registry_free(registry);
                return r;
        }
        *ret = registry;
        return 0;
}

void xp_registry_free(struct xp_registry *registry)
{
        if (!registry)
                return;
        namespaces_done(registry);
        priority_cache_done(registry);
        kind_cache_done(&registry->quotas);
        kind_cache_done(&registry->limitranges);
        kind_cache_done(&registry->serviceaccounts);
        registry_quota_ledgers_free(registry);
        registry_event_names_done(&registry->event_names);
        pthread_mutex_destroy(&registry->quota_lock);
        free(registry);
}

struct xp_store *xp_registry_store(const struct xp_registry *registry)
{
        return registry->store;
}

/*
 * Random bytes for uids and generated names, drawn from a per-thread pool that one getrandom()
 * fills: each create took two system calls for 21 bytes. Not for secrets (a forked child would
 * repeat its parent's pool); the pool is the kernel's output, read ahead.
 */
static int unique_bytes(uint8_t *buf, size_t len)
{
        static _Thread_local uint8_t pool[512];
        static _Thread_local size_t left;
        int r;

        if (len > sizeof pool)
                return xp_random_bytes(buf, len);
        if (left < len) {
                r = xp_random_bytes(pool, sizeof pool);
                if (r < 0)
                        return r;
                left = sizeof pool;
        }
        memcpy(buf, pool + sizeof pool - left, len);
        left -= len;
        return 0;
}

int xp_registry_uid(char buf[static XP_REGISTRY_UID_STRING])
{
        static const uint8_t groups[] = {4, 2, 2, 2, 6}; /* bytes: 8-4-4-4-12 digits */
        uint8_t b[16];
        int r = unique_bytes(b, sizeof b);

        if (r < 0)
                return r;
        b[6] = (b[6] & 0x0f) | 0x40;
        b[8] = (b[8] & 0x3f) | 0x80;
        for (size_t g = 0, i = 0, o = 0; g < sizeof groups; i += groups[g], g++) {
                if (g > 0)
                        buf[o++] = '-';
                xp_hex_encode(b + i, groups[g], buf + o);
                o += 2 * groups[g];
        }
        return 0;
}

int xp_registry_generate_name(const char *prefix, char **ret)
{
        static const char alphabet[] = "bcdfghjklmnpqrstvwxz2456789";
        uint8_t b[GENERATE_CHARS];
        char suffix[GENERATE_CHARS + 1];
        int r = unique_bytes(b, sizeof b);

        if (r < 0)
                return r;
        for (size_t i = 0; i < GENERATE_CHARS; i++)
                suffix[i] = alphabet[b[i] % (sizeof alphabet - 1)];
        suffix[GENERATE_CHARS] = '\0';
        if (asprintf(ret, "%s%s", prefix, suffix) < 0)
                return -ENOMEM;
        return 0;
}

bool xp_registry_version_parse(const char *text, uint64_t *ret)
{
        char *end;
        unsigned long long v;

        if (!text || text[0] < '0' || text[0] > '9')
                return false;
        errno = 0;
        v = strtoull(text, &end, 10);
        if (errno != 0 || *end != '\0' || v == 0)
                return false;
        *ret = v;
        return true;
}

void xp_registry_version_format(uint64_t version, char buf[static 24])
{
        snprintf(buf, 24, "%" PRIu64, version);
}
