/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The state of queues and preemption in the loop, shared by queue.c (feeds, admission, status)
 * and preempt.c (nominations, holds, evictions). */

#include "queue_ctl.h"
#include "xpool/log_limit.h"
#include "xpool/map.h"
#include "xpool/placement.h"
#include "xpool/queue.h"

#define QUEUE_KIND_RESOURCE "queues"
#define STATUS_MS           1000  /* a Queue's status is written at most this often */
#define NOMINATION_MS       90000 /* a nominee's devices are held this long for its victims to go */

/* What the queues count of one pod. */
struct qpod {
        char *key; /* "namespace/name" */
        char *queue;
        char *group; /* "namespace/name" of the Volcano PodGroup it names, NULL: none */
        struct xp_queue_amount *amounts; /* resource names owned */
        size_t n;
        bool bound;     /* allocated (true) or pending */
        bool own_queue; /* its own label names its queue, whatever its PodGroup says */
};

/* A node's allocatable, for the cluster's capacity. */
struct qnode {
        char *name;
        struct xp_queue_amount *amounts;
        size_t n;
};

/* A pod nominated by a preemption, its devices held while its victims terminate. */
struct nominee {
        char *key;
        struct xp_pod *pod; /* a copy, to hold for it again in a renewed snapshot */
        struct xp_placement placement;
        int64_t until_ms;
        int64_t priority;
        bool held;   /* the hold is in the snapshot now */
        bool placed; /* placed by the loop, its binding on its way: nothing to hold */
        bool listed; /* its pod, still waiting, came back in the relist since the last renewal */
        /* a hold that failed is not tried again before hold_retry_ms; the gap doubles at each
         * failure in a row, HOLD_RETRY_FIRST_MS to HOLD_RETRY_MAX_MS (preempt_nominees.c) */
        int64_t hold_retry_ms;
        int64_t hold_gap_ms;
};

struct queue_ctl {
        struct xp_registry *registry;
        const struct xp_clock *clock;
        struct xp_queues *queues;
        struct xp_map pods;     /* key -> struct qpod */
        struct xp_map nodes;    /* name -> struct qnode */
        struct xp_map defaults; /* namespace -> its default queue (char *, "ns\0queue") */
        /* Volcano PodGroup "ns/name" -> its spec.queue (char *, "ns/name\0queue") */
        struct xp_map group_queues;
        struct xp_map device_resources; /* the resources nodes report devices of (name -> name) */
        struct xp_map defined;  /* queue name -> char * (the name): the Queues to write status of */
        struct xp_map nominees; /* key -> struct nominee */
        bool holds_due;         /* some nominee's hold was given back for an attempt */
        int64_t holds_retry_ms; /* the earliest a failed hold is tried again, 0: none failed */
        bool room_freed; /* a hold given back for good: the parked pods may fit (room_freed()) */
        struct xp_log_limit hold_failed; /* the holds that fail, said at most once a minute */
        /* the snapshot was renewed: the next hold pass drops nominees the relist did not bring */
        bool nominees_relisted;
        struct xp_sched *const *sched; /* the loop's snapshot, for the hooks (queue_hooks.c) */
        /* the cluster's capacity: every node's allocatable summed, kept as nodes change (summing
         * every node again at each node event was O(nodes^2): 8% of the server's CPU at 5,000) */
        struct xp_queue_amount capacity[XP_QUEUE_RESOURCES_MAX]; /* resource names owned */
        size_t n_capacity;
        bool dirty; /* figures changed since the status was written */
        int64_t flushed_ms;
};

/* The queue a pod names: its label (xpool's, else Kueue's), else its Volcano PodGroup's
 * spec.queue (group: the annotation's PodGroup name, NULL: none), else its namespace's default;
 * NULL for none. */
const char *
queue_of(struct queue_ctl *ctl, const char *ns, const struct xp_strmap *labels, const char *group);
/* The queue a pod's own labels name, NULL for none. */
const char *queue_labelled(const struct xp_strmap *labels);
/* The effective requests of a pod's JSON (sum of containers, max of init containers; limits
 * where requests are missing), resource names owned. -ENOMEM. */
int pod_amounts(const json_t *pod, struct xp_queue_amount **ret, size_t *ret_n);
void amounts_free(struct xp_queue_amount *a, size_t n);
/* A map of resource names to quantities (a PodGroup's minResources) as amounts, names owned, the
 * invalid ones left out. -ENOMEM. */
int resources_amounts(const json_t *resources, struct xp_queue_amount **ret, size_t *ret_n);

/* Counts p in its queue (+1: allocated when bound, else pending) or takes it out (-1). */
void qpod_count(struct queue_ctl *ctl, const struct qpod *p, int sign);

/* The vendor-neutral accelerator (queue_accel.c): a node's devices as its capacity of it, added
 * to its allocatable amounts a (room for XP_QUEUE_RESOURCES_MAX), remembering which resources are
 * devices; a pod's requests of those resources added to its request of it. -ENOMEM. */
int accel_node_capacity(struct queue_ctl *ctl,
                        const json_t *node,
                        struct xp_queue_amount *a,
                        size_t *n);
int accel_pod_request(struct queue_ctl *ctl, struct xp_queue_amount *a, size_t *n);

/* The pod's queue and request (borrowed): 1 with them, 0 when it names no queue, -ENOMEM. */
int pod_queue(struct queue_ctl *ctl,
              const struct xp_pod *pod,
              const char **ret_queue,
              struct xp_queue_amount **ret,
              size_t *ret_n);

/* Evicts the victims and nominates pod (preempt.c); the nominees' holds (preempt_nominees.c). */
void nominee_free(struct nominee *n);
/* "namespace/name" of pod, caller frees; NULL: out of memory. */
char *nominee_key(const struct xp_pod *pod);
/* Gives back the devices held for pod, if it is a nominee, for its own attempt (held again after
 * it by queue_ctl_hold_nominees()). */
void queue_ctl_unhold(struct queue_ctl *ctl, struct xp_sched *sched, const struct xp_pod *pod);
/* Holds the devices n was nominated to for pod, unless held already or a failure's backoff
 * runs; a failure is logged (rate-limited) and tried again after its backoff (holds_retry_ms). */
void nominee_hold(struct queue_ctl *ctl,
                  struct xp_sched *sched,
                  const struct xp_pod *pod,
                  struct nominee *n);
/* Whether pod (its nominee n, NULL: none) waits for its victims rather than preempting again:
 * n stands (held again), or its nominated node still has lower pods terminating. */
bool nominee_waits(struct queue_ctl *ctl,
                   struct xp_sched *sched,
                   const struct xp_pod *pod,
                   struct nominee *n);
/* The same for a gang's members: true if any waits (every standing one held again). */
bool gang_waiting(struct queue_ctl *ctl,
                  struct xp_sched *sched,
                  const struct xp_pod *const *pods,
                  size_t n);
/* The snapshot was renewed: every nominee is to be held again, if its pod is listed again. */
void queue_ctl_nominees_renewed(struct queue_ctl *ctl);
/* A pod listed or changed (queue_ctl_pod()): a nominee stands only while it waits (not deleted,
 * finished or bound), and one the relist after a renewal did not bring is dropped. */
void queue_ctl_nominee_listed(struct queue_ctl *ctl,
                              const char *ns,
                              const char *name,
                              bool waiting);
