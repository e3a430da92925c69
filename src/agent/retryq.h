/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The queue of the agent's writes to the server: pod statuses (PATCH) and the final DELETE of a
 * pod whose containers stopped after its deletion. No threads, no clock: the status writers
 * (status.c) take due writes from it and say how each went; times are given (CLOCK_MONOTONIC
 * nanoseconds in the agent, any clock in tests/unit/test_agent_retryq.c).
 *
 * One entry per pod: a newer status replaces one still waiting (coalescing) and the delete waits
 * behind the pod's status, so the memory held is bounded by the number of pods, however long the
 * server stays away. A write that failed waits (initial_ns, doubling at each failure up to max_ns)
 * and is tried again, for ever, unless the answer says it can never land (XP_RETRYQ_GONE: the pod
 * is gone). A write that lands brings the writes waiting for an unreachable server forward to
 * now: the server is back, and the others need not sit out their back-off.
 */

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct xp_retryq_config {
        int64_t initial_ns; /* the wait after the first failure */
        int64_t max_ns;     /* the longest wait */
};

enum xp_retryq_outcome {
        XP_RETRYQ_LANDED,      /* the server took it */
        XP_RETRYQ_GONE,        /* the pod is gone (404): everything queued for it is dropped */
        XP_RETRYQ_UNREACHABLE, /* no answer, or a 5xx/429: tried again after the back-off */
        XP_RETRYQ_REFUSED,     /* an answer that refused it (400, 403, 422, a conflict): likewise,
                                  but a write that lands meanwhile does not bring it forward */
};

struct xp_retryq;

/* A write handed out by xp_retryq_take(), until xp_retryq_done(). */
struct xp_retryq_write {
        const char *uid, *namespace, *name; /* borrowed until xp_retryq_done() */
        json_t *status;                     /* the status to write; NULL: DELETE the pod */
        unsigned tries;                     /* failures since the pod's last write landed */
        void *entry;                        /* the queue's */
};

/* -EINVAL for a config without positive times, -ENOMEM. */
int xp_retryq_new(const struct xp_retryq_config *config, struct xp_retryq **ret);
/* Frees what waits, too; no write may be out (taken and not done). NULL is fine. */
void xp_retryq_free(struct xp_retryq *q);

/*
 * Queues status (a v1 PodStatus; taken, released on -ENOMEM) for the pod, replacing the one
 * waiting. A pod waiting for its back-off keeps it: the server is likely still away.
 * hold_until_ns > 0 lets the status wait until then for a newer one of the same pod, so that
 * changes a few milliseconds apart (a short container's start and exit) are one write; a status
 * replacing a held one keeps the earlier hold, never a later one, and a status put with 0 (a
 * final one) is due at once. A status equal to the one of the pod's write out, with none
 * waiting, is dropped: that write carries it (and is put back should it fail).
 * The pod's terminal status is final (finalstatus.h): a status put after it takes its phase,
 * reason, message and conditions, and is then due at once too; the queue holds what the terminal
 * status fixed until xp_retryq_drop() or a write answered XP_RETRYQ_GONE.
 */
int xp_retryq_put_status(struct xp_retryq *q,
                         const char *pod_namespace,
                         const char *pod_name,
                         const char *uid,
                         json_t *status,
                         int64_t hold_until_ns);
/* Queues the pod's DELETE, behind its status. -ENOMEM. */
int xp_retryq_put_delete(struct xp_retryq *q,
                         const char *pod_namespace,
                         const char *pod_name,
                         const char *uid);
/* The pod is gone from the server: what waits for it, and what its terminal status fixed, is
 * dropped (a write out ends as usual). */
void xp_retryq_drop(struct xp_retryq *q, const char *uid);

/*
 * Hands out the first write due at now_ns (true): past its back-off and its hold. With none, false
 * and *ret_next the earliest time one is due (0: nothing waits). A pod has at most one write out at
 * a time.
 */
bool xp_retryq_take(struct xp_retryq *q,
                    int64_t now_ns,
                    struct xp_retryq_write *ret,
                    int64_t *ret_next);
/* How the write went; releases w's status. Returns the wait before the next try (0: none). */
int64_t xp_retryq_done(struct xp_retryq *q,
                       struct xp_retryq_write *w,
                       enum xp_retryq_outcome outcome,
                       int64_t now_ns);

/* The pods with an entry (waiting or out): what the queue holds memory for. */
size_t xp_retryq_pods(const struct xp_retryq *q);
