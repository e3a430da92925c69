/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Queues: a tree of teams' shares of the cluster (docs/scheduler.md, "Queues"). Each queue has,
 * per resource (cpu, memory, any device resource, xpool.io/accelerator), a guaranteed (deserved)
 * quota, a limit and a weight. The core keeps what each queue has allocated and has pending,
 * computes every queue's fair share (xp_queues_compute(): its guarantee as far as it asks for
 * it, then what is idle beyond the guarantees shared by weighted dominant-resource fairness,
 * level by level down the tree), and answers three questions of the scheduling loop: may this
 * pod be admitted (limits), may its queue reclaim what others borrowed, and may this placed pod
 * be reclaimed.
 *
 * Pure: no I/O, no clock; not thread-safe. Amounts are in milli units, as the scheduler core
 * counts them (1 GPU = 1000, 1 CPU = 1000, 1 byte of memory = 1000).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "xpool/error.h"
#include "xpool/macro.h"

/* The pod label that names a pod's queue, and the Kueue label accepted as an alias. */
#define XP_QUEUE_LABEL       "xpool.io/queue"
#define XP_QUEUE_KUEUE_LABEL "kueue.x-k8s.io/queue-name"
/* A Namespace's label (or annotation) naming the queue of its pods that name none. */
#define XP_QUEUE_NAMESPACE_DEFAULT "xpool.io/default-queue"

#define XP_QUEUE_RESOURCES_MAX 32 /* distinct resources over all queues */
#define XP_QUEUE_DEPTH_MAX     16 /* levels of the tree */
#define XP_QUEUE_NAME_MAX      253

/* One resource of a queue's spec. */
struct xp_queue_quota {
        const char *resource;
        int64_t guaranteed; /* milli; 0: none */
        int64_t limit;      /* milli; -1: no limit (the parent's applies) */
        double weight;      /* > 0 for sharing what is idle; 0: the queue's weight */
};

struct xp_queue_spec {
        const char *name;
        const char *parent; /* NULL or "": a top-level queue */
        const struct xp_queue_quota *quotas;
        size_t n_quotas;
        double weight;    /* 0: 1 */
        bool reclaimable; /* what it borrows may be taken back (else it never borrows) */
};

/* A pod's request (or any vector): resource name -> milli. */
struct xp_queue_amount {
        const char *resource;
        int64_t milli;
};

struct xp_queues;

int xp_queues_new(struct xp_queues **ret);
void xp_queues_free(struct xp_queues *queues);
XP_DEFINE_FREEP(struct xp_queues, xp_queues_free)

/*
 * Adds a queue or replaces its spec (its allocation and pending stay). The parent need not exist
 * yet: until it does, the queue admits nothing and says why. -EINVAL with err for a bad name, a
 * negative or non-finite figure, a limit below the guarantee, or too many resources; -ENOMEM.
 */
int xp_queues_set(struct xp_queues *queues, const struct xp_queue_spec *spec, struct xp_error *err);
/* Removes a queue (its pods then name a queue that does not exist). -ENOENT. */
int xp_queues_remove(struct xp_queues *queues, const char *name);

/* What the cluster has of a resource (the sum of the nodes' allocatable), milli. */
int xp_queues_capacity(struct xp_queues *queues, const char *resource, int64_t milli);

/* What a queue's pods hold (bound pods: allocated) or wait for (pending), += sign * amounts.
 * A queue not known yet is remembered. -ENOMEM, -EINVAL (too many resources). */
int xp_queues_charge(struct xp_queues *queues,
                     const char *queue,
                     const struct xp_queue_amount *amounts,
                     size_t n,
                     int sign);
int xp_queues_pend(struct xp_queues *queues,
                   const char *queue,
                   const struct xp_queue_amount *amounts,
                   size_t n,
                   int sign);

/*
 * Computes every queue's fair share (deserved) from the specs, the capacity and the demand
 * (allocated + pending). Called after changes, before the questions below. Cheap: O(queues *
 * resources * levels).
 */
void xp_queues_compute(struct xp_queues *queues);

enum xp_queue_admit {
        XP_QUEUE_REFUSED = 0,
        XP_QUEUE_WITHIN, /* within the guarantee of the queue and each ancestor */
        XP_QUEUE_BORROW, /* beyond a guarantee: it borrows what others leave idle */
};

/*
 * May a pod of queue with request amounts be admitted? XP_QUEUE_REFUSED with *ret_reason (caller
 * frees) saying why ("queue \"team-a\" is over its limit of nvidia.com/gpu: 8 allocated + 1
 * requested > 8"), else WITHIN or BORROW (ret_reason untouched). -ENOMEM.
 */
int xp_queues_admit(struct xp_queues *queues,
                    const char *queue,
                    const struct xp_queue_amount *amounts,
                    size_t n,
                    char **ret_reason);

/*
 * What would admit a pod that xp_queues_admit() refuses: 1 with *ret (caller frees), "to unblock:
 * 8 nvidia.com/gpu freed in queue \"team-a\" (its pods done or deleted), or its limit of
 * nvidia.com/gpu raised to 24"; 0 when the queue admits it; -ENOMEM.
 */
int xp_queues_unblock(struct xp_queues *queues,
                      const char *queue,
                      const struct xp_queue_amount *amounts,
                      size_t n,
                      char **ret);

/* The reason a pod of queue waits on the queue (the text `xpool why` shows), or NULL when the
 * queue would admit it: xp_queues_admit()'s reason. Caller frees. */
char *xp_queues_blocking(struct xp_queues *queues,
                         const char *queue,
                         const struct xp_queue_amount *amounts,
                         size_t n);

/* May a pending pod of queue reclaim from others? True when its queue stays within its fair
 * share with the pod admitted (for every resource the pod asks for). */
bool xp_queues_may_reclaim(struct xp_queues *queues,
                           const char *queue,
                           const struct xp_queue_amount *amounts,
                           size_t n);

/*
 * May a placed pod of victim_queue (holding held) be evicted for a pod that asks for wanted? True
 * when the victim's queue and its ancestors are reclaimable, the queue is over its fair share in
 * a resource wanted asks for, and stays at or above its fair share there without the pod.
 */
bool xp_queues_reclaimable(struct xp_queues *queues,
                           const char *victim_queue,
                           const struct xp_queue_amount *held,
                           size_t n_held,
                           const struct xp_queue_amount *wanted,
                           size_t n_wanted);

/* A queue's figures for its status, per resource (milli). */
struct xp_queue_figures {
        const char *resource;
        int64_t allocated;
        int64_t guaranteed;
        int64_t borrowed; /* allocated beyond guaranteed */
        int64_t pending;
        int64_t deserved; /* the fair share xp_queues_compute() gave it */
        int64_t limit;    /* -1: none */
};

/*
 * The figures of queue for each resource some queue's spec names (as of the last
 * xp_queues_compute()): *ret
 * (caller frees) with *ret_n entries, in resource order. -ENOENT, -ENOMEM.
 */
int xp_queues_figures(const struct xp_queues *queues,
                      const char *queue,
                      struct xp_queue_figures **ret,
                      size_t *ret_n);

/* The queue's weighted dominant share of what it borrows (0 when it borrows nothing): the order
 * in which borrowing queues are served (lowest first). -1 for an unknown queue. */
double xp_queues_share(const struct xp_queues *queues, const char *queue);
