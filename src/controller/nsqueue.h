/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * A level-triggered controller over namespaces, as the ResourceQuota status and disruption
 * controllers are: every object its informer delivers (add, update, delete) queues the object's
 * namespace, and the controller's sync recomputes what it keeps for that namespace from the
 * store. A failed sync comes back after a delay that doubles; a sync may ask to be called again
 * at a given time (a disrupted pod's entry expiring). The thread, the informer and the work
 * queue are this file's; the controller has only its sync.
 *
 * Anchors: most objects matter to a controller only in a namespace that holds one of its own
 * (a ResourceQuota, a PodDisruptionBudget, a Service with a selector). Such a controller follows
 * its own kind with xp_nsqueue_anchor() and xp_nsqueue_anchor_deleted(), which count the anchors
 * of each namespace (ops.anchor says which objects are), and the other kinds with
 * xp_nsqueue_dependent(), which queues only the namespaces that hold an anchor: the pods of a
 * namespace without one cost no sync (each sync lists the namespace from the store). The sync
 * still reads everything from the store, so an anchor's arrival recomputes its namespace whole.
 */

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "informer.h"
#include "xpool/error.h"

struct xp_registry;
struct xp_nsqueue;

struct xp_nsqueue_ops {
        const char *name; /* in logs and the thread's: "quota status" */
        /* The kinds followed; their callbacks are xp_nsqueue_object (userdata: the queue). */
        const struct xp_informer_handler *handlers;
        size_t n_handlers;
        /* Recomputes namespace ns; may set *recheck to the wall time (s) to look again. */
        int (*sync)(void *userdata, const char *ns, int64_t *recheck, struct xp_error *err);
        /* Whether an object of the anchor kind is an anchor; NULL: every one is. */
        bool (*anchor)(const json_t *object);
        int64_t settle_ms; /* as xp_controller_ops' */
};

/* The informer callback that queues an object's namespace. */
void xp_nsqueue_object(void *nsqueue, const json_t *object, uint64_t version);
/* The anchor kind's add and update (counted when ops.anchor says so, else uncounted), and its
 * delete (uncounted): each queues the namespace. */
void xp_nsqueue_anchor(void *nsqueue, const json_t *object, uint64_t version);
void xp_nsqueue_anchor_deleted(void *nsqueue, const json_t *object, uint64_t version);
/* Queues the object's namespace when it holds an anchor. */
void xp_nsqueue_dependent(void *nsqueue, const json_t *object, uint64_t version);

/* The informer callback for Namespace objects: queues the namespace itself. */
void xp_nsqueue_namespace(void *nsqueue, const json_t *ns, uint64_t version);

/* Listed, no thread. ops and userdata are borrowed until xp_nsqueue_free(). */
int xp_nsqueue_new(struct xp_registry *registry,
                   const struct xp_nsqueue_ops *ops,
                   void *userdata,
                   struct xp_nsqueue **ret,
                   struct xp_error *err);
/* Starts its thread. */
int xp_nsqueue_start(struct xp_nsqueue *q, struct xp_error *err);
/* Informer sync and the queued namespaces, without the thread (tests). */
int xp_nsqueue_step(struct xp_nsqueue *q, struct xp_error *err);
/* Stops the thread, if any, and frees. NULL is fine. */
void xp_nsqueue_free(struct xp_nsqueue *q);
