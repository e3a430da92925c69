/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the garbage collector does about one object: as a dependent (are its owners there?) and as
 * an owner being deleted (orphan its dependents, or wait for them in the foreground).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gc.h"

static int push(struct xp_gc_actions *a, struct xp_gc_action action)
{
        struct xp_gc_action *grown = realloc(a->items, (a->n + 1) * sizeof(*grown));

        if (!grown)
                return -ENOMEM;
        grown[a->n++] = action;
        a->items = grown;
        return 0;
}

void xp_gc_actions_done(struct xp_gc_actions *a)
{
        for (size_t i = 0; i < a->n; i++)
                free(a->items[i].owners);
        free(a->items);
        *a = (struct xp_gc_actions){0};
}

/* The owner the reference names, when it is the same object (uid, kind and name agree). */
static const struct xp_gc_object *
owner_of(const struct xp_gc_graph *g, const struct xp_gc_object *o, const struct xp_gc_owner *ref)
{
        const struct xp_gc_object *owner = xp_gc_graph_get(g, ref->uid);

        if (!owner || strcmp(owner->name, ref->name) != 0 || strcmp(owner->kind, ref->kind) != 0)
                return NULL;
        /* a namespaced dependent's owner lives in its namespace, or is cluster-scoped */
        if (*owner->namespace && strcmp(owner->namespace, o->namespace) != 0)
                return NULL;
        return owner;
}

/* attemptToDelete: the dependent side. */
static int
as_dependent(const struct xp_gc_graph *g, const struct xp_gc_object *o, struct xp_gc_actions *ret)
{
        const char **gone = calloc(o->n_owners + 1, sizeof(*gone));
        size_t n_gone = 0, solid = 0, waiting = 0, n_deps = 0;
        const char **deps;
        int r;

        if (!gone)
                return -ENOMEM;
        for (size_t i = 0; i < o->n_owners; i++) {
                const struct xp_gc_object *owner = owner_of(g, o, &o->owners[i]);

                if (!owner && g->known_kind && !g->known_kind(o->owners[i].kind)) {
                        solid++; /* unknown: never taken for gone */
                } else if (!owner) {
                        gone[n_gone++] = o->owners[i].uid;
                } else if (owner->deleting && owner->foreground) {
                        gone[n_gone++] = o->owners[i].uid;
                        waiting++;
                } else {
                        solid++;
                }
        }
        if (n_gone == 0) {
                free(gone);
                return 0;
        }
        if (solid > 0)
                return push(ret,
                            (struct xp_gc_action){XP_GC_REMOVE_OWNERS, o->uid, gone, n_gone, NULL});
        free(gone);
        if (o->deleting)
                return 0; /* already on its way */
        deps = xp_gc_dependents(g, o->uid, &n_deps);
        free(deps);
        r = push(ret,
                 (struct xp_gc_action){waiting > 0 && n_deps > 0 ? XP_GC_DELETE_FOREGROUND
                                                                 : XP_GC_DELETE_BACKGROUND,
                                       o->uid,
                                       NULL,
                                       0,
                                       NULL});
        return r;
}

/* attemptToOrphan: every dependent forgets o, then o loses the finalizer. */
static int
orphan(const struct xp_gc_graph *g, const struct xp_gc_object *o, struct xp_gc_actions *ret)
{
        size_t n = 0;
        const char **deps = xp_gc_dependents(g, o->uid, &n);
        int r = 0;

        for (size_t i = 0; i < n && r >= 0; i++) {
                const char **owners = malloc(sizeof(*owners));

                if (!owners) {
                        r = -ENOMEM;
                        break;
                }
                owners[0] = o->uid;
                r = push(ret, (struct xp_gc_action){XP_GC_REMOVE_OWNERS, deps[i], owners, 1, NULL});
                if (r < 0)
                        free(owners);
        }
        free(deps);
        if (r >= 0)
                r = push(
                    ret,
                    (struct xp_gc_action){XP_GC_REMOVE_FINALIZER, o->uid, NULL, 0, XP_GC_ORPHAN});
        return r;
}

static bool blocks(const struct xp_gc_object *dep, const char *owner_uid)
{
        for (size_t i = 0; i < dep->n_owners; i++)
                if (strcmp(dep->owners[i].uid, owner_uid) == 0)
                        return dep->owners[i].block;
        return false;
}

/* processDeletingDependentsItem: the dependents are deleted through their own attempts. */
static int
foreground(const struct xp_gc_graph *g, const struct xp_gc_object *o, struct xp_gc_actions *ret)
{
        size_t n = 0, blocking = 0;
        const char **deps = xp_gc_dependents(g, o->uid, &n);
        int r = 0;

        for (size_t i = 0; i < n && r >= 0; i++) {
                const struct xp_gc_object *dep = xp_gc_graph_get(g, deps[i]);

                if (blocks(dep, o->uid))
                        blocking++;
                r = as_dependent(g, dep, ret);
        }
        free(deps);
        if (r >= 0 && blocking == 0)
                r = push(ret,
                         (struct xp_gc_action){
                             XP_GC_REMOVE_FINALIZER, o->uid, NULL, 0, XP_GC_FOREGROUND});
        return r;
}

int xp_gc_decide(const struct xp_gc_graph *g, const char *uid, struct xp_gc_actions *ret)
{
        const struct xp_gc_object *o = xp_gc_graph_get(g, uid);
        int r;

        if (!o)
                return 0;
        if (o->deleting && o->orphan)
                return orphan(g, o, ret);
        if (o->deleting && o->foreground)
                return foreground(g, o, ret);
        r = as_dependent(g, o, ret);
        return r;
}
