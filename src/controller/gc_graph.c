/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The garbage collector's graph: what it keeps of each object that has owners or may be one
 * (uid, where it is, its ownerReferences, whether it is being deleted and with which finalizer).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gc.h"

static void owners_free(struct xp_gc_object *o)
{
        for (size_t i = 0; i < o->n_owners; i++) {
                free(o->owners[i].uid);
                free(o->owners[i].kind);
                free(o->owners[i].name);
        }
        free(o->owners);
        o->owners = NULL;
        o->n_owners = 0;
}

static void object_free(struct xp_gc_object *o)
{
        if (!o)
                return;
        owners_free(o);
        free(o->uid);
        free(o->resource);
        free(o->namespace);
        free(o->name);
        free(o->kind);
        free(o);
}

void xp_gc_graph_init(struct xp_gc_graph *g)
{
        *g = (struct xp_gc_graph){0};
}

void xp_gc_graph_done(struct xp_gc_graph *g)
{
        for (size_t i = 0; i < g->objects.cap; i++)
                if (g->objects.values && g->objects.values[i])
                        object_free(g->objects.values[i]);
        xp_map_done(&g->objects);
}

static char *dup_or_empty(const char *s)
{
        return strdup(s ? s : "");
}

static bool has_finalizer(const json_t *meta, const char *name)
{
        size_t i;
        json_t *f;

        json_array_foreach(json_object_get(meta, "finalizers"),
                           i,
                           f) if (json_is_string(f) &&
                                  strcmp(json_string_value(f), name) == 0) return true;
        return false;
}

static int read_owners(const json_t *meta, struct xp_gc_object *o)
{
        const json_t *refs = json_object_get(meta, "ownerReferences");
        size_t i;
        json_t *ref;

        o->owners = calloc(json_array_size(refs) + 1, sizeof(*o->owners));
        if (!o->owners)
                return -ENOMEM;
        json_array_foreach(refs, i, ref)
        {
                struct xp_gc_owner *w = &o->owners[o->n_owners++];

                w->uid = dup_or_empty(json_string_value(json_object_get(ref, "uid")));
                w->kind = dup_or_empty(json_string_value(json_object_get(ref, "kind")));
                w->name = dup_or_empty(json_string_value(json_object_get(ref, "name")));
                w->block = json_is_true(json_object_get(ref, "blockOwnerDeletion"));
                if (!w->uid || !w->kind || !w->name)
                        return -ENOMEM;
        }
        return 0;
}

static bool same_string(const char *kept, const char *s)
{
        return strcmp(kept, s ? s : "") == 0;
}

/* Whether o was read from an object of the same uid, resource, place and kind as object. */
static bool same_identity(const struct xp_gc_object *o,
                          const char *resource,
                          const json_t *object,
                          const json_t *meta)
{
        return strcmp(o->resource, resource) == 0 &&
               same_string(o->namespace, json_string_value(json_object_get(meta, "namespace"))) &&
               same_string(o->name, json_string_value(json_object_get(meta, "name"))) &&
               same_string(o->kind, json_string_value(json_object_get(object, "kind")));
}

/* Whether o's owners are those of refs, in order. */
static bool same_owners(const struct xp_gc_object *o, const json_t *refs)
{
        size_t i;
        json_t *ref;

        if (json_array_size(refs) != o->n_owners)
                return false;
        json_array_foreach(refs, i, ref)
        {
                const struct xp_gc_owner *w = &o->owners[i];

                if (!same_string(w->uid, json_string_value(json_object_get(ref, "uid"))) ||
                    !same_string(w->kind, json_string_value(json_object_get(ref, "kind"))) ||
                    !same_string(w->name, json_string_value(json_object_get(ref, "name"))) ||
                    w->block != json_is_true(json_object_get(ref, "blockOwnerDeletion")))
                        return false;
        }
        return true;
}

/*
 * A new state of the object o was read from: most writes (a pod's status) change neither its
 * place nor its owners, and o is brought up to date without a new record. 0, or -ENOMEM with o
 * as it was.
 */
static int object_refresh(struct xp_gc_object *o, const json_t *meta)
{
        if (!same_owners(o, json_object_get(meta, "ownerReferences"))) {
                struct xp_gc_object fresh = {0};

                if (read_owners(meta, &fresh) < 0) {
                        owners_free(&fresh);
                        return -ENOMEM;
                }
                owners_free(o);
                o->owners = fresh.owners;
                o->n_owners = fresh.n_owners;
        }
        o->deleting = json_object_get(meta, "deletionTimestamp") != NULL;
        o->foreground = has_finalizer(meta, XP_GC_FOREGROUND);
        o->orphan = has_finalizer(meta, XP_GC_ORPHAN);
        return 0;
}

int xp_gc_graph_put(struct xp_gc_graph *g, const char *resource, const json_t *object)
{
        const json_t *meta = json_object_get(object, "metadata");
        const char *uid = json_string_value(json_object_get(meta, "uid"));
        struct xp_gc_object *o, *old;

        if (!uid || !*uid)
                return -EINVAL;
        old = xp_map_get(&g->objects, uid);
        if (old && same_identity(old, resource, object, meta))
                return object_refresh(old, meta);
        o = calloc(1, sizeof(*o));
        if (!o)
                return -ENOMEM;
        o->uid = strdup(uid);
        o->resource = strdup(resource);
        o->namespace = dup_or_empty(json_string_value(json_object_get(meta, "namespace")));
        o->name = dup_or_empty(json_string_value(json_object_get(meta, "name")));
        o->kind = dup_or_empty(json_string_value(json_object_get(object, "kind")));
        o->deleting = json_object_get(meta, "deletionTimestamp") != NULL;
        o->foreground = has_finalizer(meta, XP_GC_FOREGROUND);
        o->orphan = has_finalizer(meta, XP_GC_ORPHAN);
        if (!o->uid || !o->resource || !o->namespace || !o->name || !o->kind ||
            read_owners(meta, o) < 0) {
                object_free(o);
                return -ENOMEM;
        }
        old = xp_map_del(&g->objects, uid);
        if (xp_map_put(&g->objects, o->uid, o) < 0) {
                object_free(o);
                if (old)
                        (void)xp_map_put(&g->objects, old->uid, old); /* it had its slot */
                return -ENOMEM;
        }
        object_free(old);
        return 0;
}

void xp_gc_graph_remove(struct xp_gc_graph *g, const char *uid)
{
        object_free(xp_map_del(&g->objects, uid));
}

const struct xp_gc_object *xp_gc_graph_get(const struct xp_gc_graph *g, const char *uid)
{
        return xp_map_get(&g->objects, uid);
}

const char **xp_gc_dependents(const struct xp_gc_graph *g, const char *uid, size_t *ret_n)
{
        const char **out = NULL;
        size_t n = 0;

        for (size_t i = 0; i < g->objects.cap; i++) {
                const struct xp_gc_object *o = g->objects.values ? g->objects.values[i] : NULL;

                if (!o)
                        continue;
                for (size_t k = 0; k < o->n_owners; k++) {
                        const char **grown;

                        if (strcmp(o->owners[k].uid, uid) != 0)
                                continue;
                        grown = realloc(out, (n + 1) * sizeof(*out));
                        if (!grown) {
                                free(out);
                                *ret_n = 0;
                                return NULL;
                        }
                        out = grown;
                        out[n++] = o->uid;
                        break;
                }
        }
        *ret_n = n;
        return out;
}
