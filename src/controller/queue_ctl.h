/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Queues and preemption in the scheduling loop (docs/scheduler.md, "Queues", "Preemption"). The
 * loop (scheduler*.c) feeds the objects it follows in, and calls two steps around each
 * placement: before (admission by the pod's queue; a nominated pod's held devices given back so
 * that it may take them) and after a failure (preemption: victims chosen by the core, evicted
 * gracefully, the pod nominated and the devices held for it; or reclaim of what other queues
 * borrowed). One thread: the loop's.
 */

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "xpool/object.h"
#include "xpool/placement.h"
#include "xpool/sched.h"

struct xp_registry;
struct xp_clock;
struct queue_ctl;

int queue_ctl_new(struct xp_registry *registry,
                  const struct xp_clock *clock,
                  struct queue_ctl **ret);
void queue_ctl_free(struct queue_ctl *ctl);

/* The loop's informer feeds (deleted: the object's last state). */
void queue_ctl_pod(struct queue_ctl *ctl, const json_t *pod, bool deleted);
void queue_ctl_node(struct queue_ctl *ctl, const json_t *node, bool deleted);
void queue_ctl_queue(struct queue_ctl *ctl, const json_t *queue, bool deleted);
void queue_ctl_namespace(struct queue_ctl *ctl, const json_t *ns, bool deleted);
/* A Volcano PodGroup: its spec.queue is the queue of the pods that name it and no queue of
 * their own. */
void queue_ctl_podgroup(struct queue_ctl *ctl, const json_t *pg, bool deleted);
/* The informer's callbacks (userdata: the struct xp_scheduler), for the scheduler's table. */
void queue_on_queue(void *userdata, const json_t *object, uint64_t version);
void queue_on_queue_deleted(void *userdata, const json_t *object, uint64_t version);
void queue_on_namespace(void *userdata, const json_t *object, uint64_t version);
void queue_on_namespace_deleted(void *userdata, const json_t *object, uint64_t version);
/* A relist follows: forget what the feeds built. */
void queue_ctl_reset(struct queue_ctl *ctl);

/*
 * Before pod is placed: 1 go on, 0 held back with *ret_reason (caller frees: the queue's words,
 * as `xpool why` shows them), -ENOMEM. Gives back the devices held for the pod, if any.
 */
int queue_ctl_before(struct queue_ctl *ctl,
                     struct xp_sched *sched,
                     const struct xp_pod *pod,
                     char **ret_reason);

/*
 * After pod fit nowhere: preemption (or reclaim for its queue). 1 when the pod is nominated
 * (*ret_node, *ret_message, each when not NULL: the nominated node and what was done, caller
 * frees), 0 when nothing is to be done (*ret_message, when not NULL: why, in kube-scheduler's
 * words: "preemption: 0/3 nodes are available: 3 No preemption victims found for incoming
 * pod."), -errno.
 */
int queue_ctl_after(struct queue_ctl *ctl,
                    struct xp_sched *sched,
                    const struct xp_pod *pod,
                    char **ret_node,
                    char **ret_message);

/*
 * After a gang's pending members fit nowhere together: room for every member by preemption or
 * for none (priority only; no reclaim). 1 when victims were evicted and every member nominated
 * (*ret_message, when not NULL, says so; caller frees), 0 when nothing is to be done (or the
 * members still wait for earlier victims), -errno.
 */
int queue_ctl_after_gang(struct queue_ctl *ctl,
                         struct xp_sched *sched,
                         const struct xp_pod *const *pods,
                         size_t n,
                         char **ret_message);

/*
 * The loop placed the pod (its binding is on its way: its queue counts it allocated at once, so
 * the next admission sees it), or, placed false, is about to place it again (a binding failed).
 */
void queue_ctl_placed(struct queue_ctl *ctl, const char *ns, const char *name, bool placed);

/* The pod was placed or went: it is nobody's nominee any more (its hold, if any, given back). */
void queue_ctl_forget(struct queue_ctl *ctl,
                      struct xp_sched *sched,
                      const char *ns,
                      const char *name);

/*
 * Holds again what the nominees will get where an attempt (or a renewed snapshot, or a binding
 * that failed) gave it back, and forgets the nominations run out; all: every nominee looked at
 * (once per pass), else only when some hold was given back since.
 */
void queue_ctl_hold_nominees(struct queue_ctl *ctl, struct xp_sched *sched, bool all);
/* Whether a nominee's hold was given back for good since the last call (its nomination run out,
 * its pod gone or nominated again): room the parked pods may fit in, which no pod's end says. */
bool queue_ctl_room_freed(struct queue_ctl *ctl);
/* The loop placed a nominee (its binding on its way: placed true) or its binding failed. */
void queue_ctl_nominee_placed(struct queue_ctl *ctl, const char *ns, const char *name, bool placed);

/* Writes the Queues' status when their figures changed (at most every STATUS_MS). */
void queue_ctl_flush(struct queue_ctl *ctl);

/*
 * The scheduling loop's hooks (include/sched/xpool/gang.h's struct xp_sched_hooks, userdata the
 * queue_ctl), for a loop that calls hooks rather than the steps above; sched: where the loop
 * keeps its snapshot (it is renewed on a relist).
 */
void queue_ctl_attach(struct queue_ctl *ctl, struct xp_sched *const *sched);
int queue_hook_admit(void *userdata, const struct xp_pod *const *pods, size_t n, char **ret_reason);
int queue_hook_preempt(void *userdata,
                       struct xp_sched *sched,
                       const struct xp_pod *const *pods,
                       size_t n,
                       char **ret_node,
                       char **ret_message);
void queue_hook_placed(void *userdata, const struct xp_pod *pod, const struct xp_placement *pl);
void queue_hook_removed(void *userdata, const char *ns, const char *name);
/* The fair order's two questions: a pending pod's queue (borrowed; NULL: none) and its share. */
const char *queue_hook_queue(void *userdata, const char *ns, const char *name);
double queue_hook_share(void *userdata, const char *queue);

/*
 * Volcano's enqueue of a PodGroup's spec.minResources (a map of resource names to quantities;
 * none: nothing to check): 1 when queue (NULL: none) admits them on top of what it holds and the
 * nodes that take pods have them in all, 0 when not with *ret_reason ("its minResources do not
 * fit: 32 nvidia.com/gpu wanted, 16 in the cluster"; caller frees), -ENOMEM.
 */
int queue_ctl_enqueue(struct queue_ctl *ctl,
                      const char *queue,
                      const json_t *min_resources,
                      char **ret_reason);

/* What blocks a pod on its queue (`xpool why`), NULL when nothing does. Caller frees. */
char *queue_ctl_why(struct queue_ctl *ctl, const struct xp_pod *pod);
