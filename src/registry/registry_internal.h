/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Shared by the registry's files (src/registry/): the registry itself. */

#include <pthread.h>
#include <stddef.h>

#include "xpool/registry.h"

/*
 * The namespaces known to exist and be Active, so that a hold need not read its namespace from
 * the store. Only the registry writes namespaces, so the cache cannot go stale: a namespace enters
 * when a hold checks it, leaves when its deletion begins or its object changes.
 *
 * lock orders holds against namespace deletion: a hold takes it shared from the check to the end
 * of its write, a deletion exclusively while it marks the namespace Terminating, so no write that
 * saw the namespace Active lands after its contents are deleted.
 */
struct namespace_cache {
        pthread_rwlock_t lock;
        pthread_mutex_t mutex; /* guards names */
        char **names;
        size_t n;
};

struct xp_registry {
        struct xp_store *store;
        struct namespace_cache namespaces;
};
