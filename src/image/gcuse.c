/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the image records use (image_internal.h, "gc_uses"): each layer directory and blob the
 * records name, with how many records name it, in a hash map. The sweeps of gc.c ask it once per
 * directory entry, and image GC takes records away from it to learn what each image would give
 * back, where each lookup was a walk of every record and each image dropped its own sweep.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "image_internal.h"

/* One name: a layer's directory ("L" and the name) or a blob's hex ("B" and the hex). */
struct gc_use {
        size_t count;
        char key[];
};

static void key_of(char *buf, size_t size, bool layer, const char *name)
{
        snprintf(buf, size, "%c%s", layer ? 'L' : 'B', name);
}

static int add(struct gc_uses *u, bool layer, const char *name)
{
        char key[GC_USE_KEY_MAX];
        struct gc_use *use, **all;

        key_of(key, sizeof(key), layer, name);
        use = xp_map_get(&u->map, key);
        if (use) {
                use->count++;
                return 0;
        }
        if (u->n == u->cap) {
                size_t cap = u->cap ? 2 * u->cap : 64;

                all = realloc(u->all, cap * sizeof(*all));
                if (!all)
                        return -ENOMEM;
                u->all = all;
                u->cap = cap;
        }
        use = malloc(sizeof(*use) + strlen(key) + 1);
        if (!use)
                return -ENOMEM;
        use->count = 1;
        strcpy(use->key, key);
        if (xp_map_put(&u->map, use->key, use) < 0) {
                free(use);
                return -ENOMEM;
        }
        u->all[u->n++] = use;
        return 0;
}

/* Calls fn for each name rec uses: its layers' directories and its blobs. */
static int
each_name(const json_t *rec, int (*fn)(void *cls, bool layer, const char *name), void *cls)
{
        static const char *const blob_keys[] = {"id", "digest", "manifest"};
        bool untrusted = json_is_true(json_object_get(rec, "untrusted"));
        size_t i;
        json_t *v;
        int r;

        json_array_foreach(json_object_get(rec, "layers"), i, v)
        {
                char name[96];

                xp_store_layer_name(
                    json_string_value(v) ?: "sha256:", untrusted, name, sizeof(name));
                if ((r = fn(cls, true, name)) < 0)
                        return r;
        }
        for (i = 0; i < XP_ELEMENTSOF(blob_keys); i++) {
                const char *d = json_string_value(json_object_get(rec, blob_keys[i]));

                if (d && strlen(d) > 7 && (r = fn(cls, false, d + 7)) < 0)
                        return r;
        }
        return 0;
}

static int count_one(void *cls, bool layer, const char *name)
{
        return add(cls, layer, name);
}

int gc_uses_count(struct gc_uses *u, const json_t *refs)
{
        size_t i;
        json_t *rec;
        int r;

        *u = (struct gc_uses){0};
        json_array_foreach(json_object_get(refs, "images"), i, rec)
        {
                r = each_name(rec, count_one, u);
                if (r < 0) {
                        gc_uses_done(u);
                        return r;
                }
        }
        return 0;
}

bool gc_uses_has(const struct gc_uses *u, bool layer, const char *name)
{
        char key[GC_USE_KEY_MAX];
        const struct gc_use *use;

        key_of(key, sizeof(key), layer, name);
        use = xp_map_get(&u->map, key);
        return use && use->count > 0;
}

struct dropping {
        struct gc_uses *u;
        gc_gone_fn gone;
        void *cls;
};

static int drop_one(void *cls, bool layer, const char *name)
{
        struct dropping *d = cls;
        char key[GC_USE_KEY_MAX];
        struct gc_use *use;

        key_of(key, sizeof(key), layer, name);
        use = xp_map_get(&d->u->map, key);
        if (use && use->count > 0 && --use->count == 0)
                d->gone(d->cls, layer, name);
        return 0;
}

void gc_uses_drop(struct gc_uses *u, const json_t *rec, gc_gone_fn gone, void *cls)
{
        struct dropping d = {.u = u, .gone = gone, .cls = cls};

        (void)each_name(rec, drop_one, &d);
}

void gc_uses_done(struct gc_uses *u)
{
        for (size_t i = 0; i < u->n; i++)
                free(u->all[i]);
        free(u->all);
        xp_map_done(&u->map);
        *u = (struct gc_uses){0};
}
