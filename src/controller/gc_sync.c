/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The garbage collector's writes: what gc_decide.c decided about one object, carried out through
 * the registry (pods are deleted gracefully, as any pod), and the start of a Foreground or Orphan
 * deletion that the API's DELETE asks for.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "workloads.h"
#include "xpool/kind.h"
#include "xpool/log.h"
#include "xpool/registry.h"
#include "xpool/store.h"
#include "xpool/timeutil.h"

static bool has_finalizer(const json_t *object, const char *name)
{
        size_t i;
        json_t *f;

        json_array_foreach(json_object_get(json_object_get(object, "metadata"), "finalizers"),
                           i,
                           f) if (json_is_string(f) &&
                                  strcmp(json_string_value(f), name) == 0) return true;
        return false;
}

struct mark {
        const char *finalizer; /* NULL: only the deletionTimestamp */
        int64_t now_s;
};

/* Marks the object deleting (finalize.c) and adds the finalizer. */
static int mark_deleting(json_t *object, void *userdata)
{
        const struct mark *m = userdata;
        json_t *meta = json_object_get(object, "metadata");
        json_t *finalizers = json_object_get(meta, "finalizers");
        int changed = xp_registry_mark_deleting(object, m->now_s);

        if (changed < 0)
                return changed;
        if (m->finalizer && !has_finalizer(object, m->finalizer)) {
                if (!json_is_array(finalizers)) {
                        finalizers = json_array();
                        if (!finalizers || json_object_set_new(meta, "finalizers", finalizers) < 0)
                                return -ENOMEM;
                }
                if (json_array_append_new(finalizers, json_string(m->finalizer)) < 0)
                        return -ENOMEM;
                changed = 1;
        }
        return changed;
}

int xp_workloads_delete_with_finalizer(struct xp_registry *registry,
                                       const struct xp_kind *kind,
                                       const char *ns,
                                       const char *name,
                                       enum xp_propagation policy,
                                       bool dry,
                                       json_t **ret_object,
                                       struct xp_error *err)
{
        struct mark m = {
            .finalizer = policy == XP_PROPAGATION_ORPHAN ? XP_GC_ORPHAN : XP_GC_FOREGROUND,
            .now_s = xp_clock_wall_s(NULL),
        };

        if (dry)
                return xp_store_get(
                    xp_registry_store(registry), kind->plural, ns, name, ret_object, NULL, err);
        return xp_registry_change(
            registry, kind->plural, ns, name, mark_deleting, &m, ret_object, err);
}

/* Deletes the object of the graph: pods gracefully; others at once, or marked when they carry
 * finalizers (or the foreground one is asked for). */
static int delete_object(struct xp_workloads *w, const struct xp_gc_object *o, bool foreground)
{
        struct xp_error err = {0};
        struct mark m = {.finalizer = foreground ? XP_GC_FOREGROUND : NULL, .now_s = wl_now_s(w)};
        json_t *cur = NULL;
        int r;

        if (strcmp(o->resource, "pods") == 0 && !foreground) {
                struct xp_registry_delete_options options = {0};
                bool removed;

                r = xp_registry_pod_delete(
                    w->registry, o->namespace, o->name, &options, &cur, &removed, &err);
        } else if (!foreground) {
                r = xp_registry_delete(
                    w->registry, o->resource, o->namespace, o->name, 0, NULL, &err);
        } else {
                r = xp_registry_change(
                    w->registry, o->resource, o->namespace, o->name, mark_deleting, &m, NULL, &err);
        }
        json_decref(cur);
        if (r < 0 && r != -ENOENT)
                xp_log(LOG_WARNING,
                       "garbage collector: %s %s/%s not deleted: %s",
                       o->resource,
                       o->namespace,
                       o->name,
                       err.msg);
        return r == -ENOENT ? 0 : r;
}

static int remove_owners(json_t *object, void *userdata)
{
        const struct xp_gc_action *a = userdata;
        json_t *meta = json_object_get(object, "metadata"),
               *refs = json_object_get(meta, "ownerReferences");
        int changed = 0;

        for (size_t i = json_array_size(refs); i-- > 0;) {
                const char *uid =
                    json_string_value(json_object_get(json_array_get(refs, i), "uid"));

                for (size_t k = 0; uid && k < a->n_owners; k++)
                        if (strcmp(uid, a->owners[k]) == 0) {
                                json_array_remove(refs, i);
                                changed = 1;
                                break;
                        }
        }
        if (changed && json_array_size(refs) == 0)
                json_object_del(meta, "ownerReferences");
        return changed;
}

static int remove_finalizer(json_t *object, void *userdata)
{
        const char *finalizer = userdata;
        json_t *meta = json_object_get(object, "metadata"),
               *list = json_object_get(meta, "finalizers");

        for (size_t i = 0; i < json_array_size(list); i++)
                if (strcmp(json_string_value(json_array_get(list, i))
                               ? json_string_value(json_array_get(list, i))
                               : "",
                           finalizer) == 0) {
                        json_array_remove(list, i);
                        if (json_array_size(list) == 0)
                                json_object_del(meta, "finalizers");
                        return 1;
                }
        return 0;
}

/* A deleting object whose last finalizer went is removed, as an update of the API removes it
 * (a pod within its grace: its lifecycle does it). */
static int finish(struct xp_workloads *w, const struct xp_gc_object *o, const char *finalizer)
{
        struct xp_error err = {0};
        json_t *after = NULL;
        int r;

        r = xp_registry_change(w->registry,
                               o->resource,
                               o->namespace,
                               o->name,
                               remove_finalizer,
                               (void *)finalizer,
                               &after,
                               &err);
        if (r >= 0 && strcmp(o->resource, "pods") != 0 && xp_registry_update_removes(after))
                r = xp_store_delete(xp_registry_store(w->registry),
                                    o->resource,
                                    o->namespace,
                                    o->name,
                                    0,
                                    NULL,
                                    NULL,
                                    &err);
        json_decref(after);
        return r == -ENOENT ? 0 : r;
}

static int carry_out(struct xp_workloads *w, const struct xp_gc_action *a)
{
        const struct xp_gc_object *o = xp_gc_graph_get(&w->graph, a->target);
        struct xp_error err = {0};
        int r;

        if (!o)
                return 0;
        switch (a->verb) {
        case XP_GC_DELETE_BACKGROUND:
        case XP_GC_DELETE_FOREGROUND:
                return delete_object(w, o, a->verb == XP_GC_DELETE_FOREGROUND);
        case XP_GC_REMOVE_OWNERS:
                r = xp_registry_change(w->registry,
                                       o->resource,
                                       o->namespace,
                                       o->name,
                                       remove_owners,
                                       (void *)a,
                                       NULL,
                                       &err);
                return r == -ENOENT ? 0 : r;
        case XP_GC_REMOVE_FINALIZER:
                return finish(w, o, a->finalizer);
        }
        return 0;
}

int wl_gc_sync(struct xp_workloads *w, const char *uid)
{
        struct xp_gc_actions actions = {0};
        int r = xp_gc_decide(&w->graph, uid, &actions);

        for (size_t i = 0; r >= 0 && i < actions.n; i++)
                r = carry_out(w, &actions.items[i]);
        xp_gc_actions_done(&actions);
        return r;
}
