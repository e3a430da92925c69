/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the runtime reads of a container's spec.json again and again, kept per state directory:
 * each exit's listing and each removal parsed the whole spec (its environment, mounts, limits) for
 * a few names, 6 % of the agent's CPU per short pod. A kept entry holds only those keys, and is
 * taken while the file is the one it was read from (device, inode, size, mtime: a spec is
 * written to a new file renamed over the old); the runtime forgets it when it writes the spec.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "oci_internal.h"
#include "speccache.h"

/* Bounds what directories removed by other means (an unknown leftover) can leave behind. */
#define SPECCACHE_MAX 8192

static const char *const kept_keys[] = {
    "pod_uid",
    "pod_namespace",
    "pod_name",
    "container",
    "image_id",
    "image_ref",
    "attempt",
    "cgroup_parent",
    OCI_SPEC_KEY,
};

struct speccache_entry {
        char *dir; /* the map's key */
        dev_t dev;
        ino_t ino;
        off_t size;
        struct timespec mtime;
        json_t *slim;
};

static void entry_free(struct speccache_entry *e)
{
        if (!e)
                return;
        free(e->dir);
        json_decref(e->slim);
        free(e);
}

static bool same_file(const struct speccache_entry *e, const struct stat *st)
{
        return e->dev == st->st_dev && e->ino == st->st_ino && e->size == st->st_size &&
               e->mtime.tv_sec == st->st_mtim.tv_sec && e->mtime.tv_nsec == st->st_mtim.tv_nsec;
}

json_t *speccache_get(struct speccache *c, const char *dir, const struct stat *st)
{
        struct speccache_entry *e = xp_map_get(&c->entries, dir);

        if (!e)
                return NULL;
        if (!same_file(e, st)) {
                speccache_forget(c, dir);
                return NULL;
        }
        return json_incref(e->slim);
}

/* The keys of spec the runtime reads after the start, sharing spec's values. */
static json_t *slim_of(const json_t *spec)
{
        json_t *slim = json_object();

        for (size_t i = 0; slim && i < sizeof(kept_keys) / sizeof(kept_keys[0]); i++) {
                json_t *v = json_object_get(spec, kept_keys[i]);

                if (v && json_object_set(slim, kept_keys[i], v) < 0) {
                        json_decref(slim);
                        return NULL;
                }
        }
        return slim;
}

void speccache_put(struct speccache *c, const char *dir, const struct stat *st, const json_t *spec)
{
        struct speccache_entry *e;

        speccache_forget(c, dir);
        if (c->entries.n >= SPECCACHE_MAX)
                return; /* a cache: the spec is read whole again */
        e = calloc(1, sizeof(*e));
        if (!e)
                return;
        *e = (struct speccache_entry){
            .dir = strdup(dir),
            .dev = st->st_dev,
            .ino = st->st_ino,
            .size = st->st_size,
            .mtime = st->st_mtim,
            .slim = slim_of(spec),
        };
        if (!e->dir || !e->slim || xp_map_put(&c->entries, e->dir, e) < 0)
                entry_free(e);
}

void speccache_forget(struct speccache *c, const char *dir)
{
        entry_free(xp_map_del(&c->entries, dir));
}

void speccache_done(struct speccache *c)
{
        for (size_t i = 0; i < c->entries.cap; i++)
                entry_free(c->entries.values[i]);
        xp_map_done(&c->entries);
}
