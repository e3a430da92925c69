/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Whether a pod's status that is not final waits for the pod's next change (status.c). The wait
 * (--status-coalesce) pays off where a container ends within it: a short pod's Running and
 * Succeeded are one write. Everywhere else it only delays the pod's Running by that much (a
 * `sleep` pod's create -> Running on an idle node). So a status waits only while the node runs
 * short pods: while a pod whose final status came within XP_STATUS_HOLD_STRETCH times the wait of
 * its first one was seen in the last XP_STATUS_HOLD_MEMORY_NS. The first short pod of a burst has
 * its two writes; the rest of the burst is held. The wait stretches to what the node's short pods
 * take now: the longest of the last XP_STATUS_HOLD_DURATIONS short pods' times (first status to
 * final one) and a quarter more, at least --status-coalesce, at most XP_STATUS_HOLD_STRETCH times
 * it or XP_STATUS_HOLD_STRETCH_MAX_NS, whichever is less (never under --status-coalesce). On a
 * loaded node a `true` pod takes 5-30 ms from its Running to its Succeeded (the shim's exit, the
 * agent's turn to see it), and a fixed 5 ms let 0.3-0.5 of each pod's Running go alone. No threads,
 * no clock: times are given (the agent's CLOCK_MONOTONIC; any clock in
 * tests/unit/test_agent_statushold.c); the caller locks.
 */

#include <stdbool.h>
#include <stdint.h>

/* How long one short pod keeps the holds on. */
#define XP_STATUS_HOLD_MEMORY_NS (1000LL * 1000 * 1000)
/* The pods whose first status that is not final is remembered (the newest ones). */
#define XP_STATUS_HOLD_RECENT 32
/* The longest wait, in times --status-coalesce, and the short pods' times it is learnt from. */
#define XP_STATUS_HOLD_STRETCH   5
#define XP_STATUS_HOLD_DURATIONS 8
/* The stretch never takes the wait past this (a --status-coalesce that is longer stays as it is):
 * a Running status must not wait seconds because the option takes up to 1 s. */
#define XP_STATUS_HOLD_STRETCH_MAX_NS (250LL * 1000 * 1000)

struct xp_status_hold {
        int64_t wait_ns;     /* --status-coalesce; <= 0: never hold */
        int64_t short_at_ns; /* when a short pod was last seen; 0: never */
        struct {
                uint64_t uid_hash; /* 0: empty */
                int64_t at_ns;     /* when its first status that is not final was put */
        } recent[XP_STATUS_HOLD_RECENT];
        unsigned next; /* the slot the next pod takes */
        /* the last short pods' times from their first status to their final one (0: none) */
        int64_t durations_ns[XP_STATUS_HOLD_DURATIONS];
        unsigned next_duration;
};

void xp_status_hold_init(struct xp_status_hold *h, int64_t wait_ns);

/*
 * A status of the pod uid is put at now_ns, final (Succeeded or Failed) or not: returns the time
 * until which it waits for the pod's next one (0: due at once), and learns from it.
 */
int64_t xp_status_hold_until(struct xp_status_hold *h, const char *uid, bool final, int64_t now_ns);
/* The pod uid is being deleted: its final status, the kill's, makes it no short pod (a `sleep`
 * pod deleted as soon as it runs, as bench_pods' latency pods are, would turn the holds on for
 * the next pods' Running). */
void xp_status_hold_forget(struct xp_status_hold *h, const char *uid);
