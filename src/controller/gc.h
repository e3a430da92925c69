/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The garbage collector's graph and decisions, pure: every object with owners or dependents by
 * uid, and for one object what the collector does (Kubernetes' garbagecollector attemptToDelete,
 * attemptToOrphan and processDeletingDependentsItem):
 * - an object whose owners are all gone (dangling) is deleted, in the background, or in the
 *   foreground when an owner waits for its dependents (the foregroundDeletion finalizer) and it
 *   has dependents of its own;
 * - an object with a live owner loses its references to owners that are gone or waiting;
 * - an owner deleting with the orphan finalizer has its dependents' references to it removed,
 *   then the finalizer;
 * - an owner deleting with the foregroundDeletion finalizer has its dependents deleted, and the
 *   finalizer removed once no dependent with blockOwnerDeletion is left.
 */

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "xpool/map.h"

#define XP_GC_FOREGROUND "foregroundDeletion"
#define XP_GC_ORPHAN     "orphan"

struct xp_gc_owner {
        char *uid, *kind, *name;
        bool block; /* blockOwnerDeletion */
};

struct xp_gc_object {
        char *uid, *resource, *namespace, *name, *kind;
        struct xp_gc_owner *owners;
        size_t n_owners;
        bool deleting, foreground, orphan; /* deletionTimestamp; the two finalizers */
};

struct xp_gc_graph {
        struct xp_map objects; /* uid -> struct xp_gc_object */
        /* Whether owners of kind are followed at all: a missing owner of a kind nobody follows
         * is not taken for gone (Kubernetes retries an owner it cannot resolve). NULL: all are. */
        bool (*known_kind)(const char *kind);
};

void xp_gc_graph_init(struct xp_gc_graph *g);
void xp_gc_graph_done(struct xp_gc_graph *g);
/* Adds or replaces object (of the store's resource, "pods") by its uid. -ENOMEM, -EINVAL. */
int xp_gc_graph_put(struct xp_gc_graph *g, const char *resource, const json_t *object);
/* The object of uid is gone. */
void xp_gc_graph_remove(struct xp_gc_graph *g, const char *uid);
const struct xp_gc_object *xp_gc_graph_get(const struct xp_gc_graph *g, const char *uid);
/* The uids of uid's dependents (borrowed from the graph), malloc'd; *ret_n their count. */
const char **xp_gc_dependents(const struct xp_gc_graph *g, const char *uid, size_t *ret_n);

enum xp_gc_verb {
        XP_GC_DELETE_BACKGROUND,
        XP_GC_DELETE_FOREGROUND,
        XP_GC_REMOVE_OWNERS,    /* remove the references to owners[] from target */
        XP_GC_REMOVE_FINALIZER, /* remove finalizer from target */
};

struct xp_gc_action {
        enum xp_gc_verb verb;
        const char *target;  /* uid, borrowed from the graph */
        const char **owners; /* XP_GC_REMOVE_OWNERS: owner uids, borrowed; malloc'd array */
        size_t n_owners;
        const char *finalizer; /* XP_GC_REMOVE_FINALIZER */
};

struct xp_gc_actions {
        struct xp_gc_action *items;
        size_t n;
};

/* Appends to ret what the collector does about uid now (nothing when all is well). -ENOMEM. */
int xp_gc_decide(const struct xp_gc_graph *g, const char *uid, struct xp_gc_actions *ret);
void xp_gc_actions_done(struct xp_gc_actions *a);
