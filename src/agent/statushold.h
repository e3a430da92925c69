/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Whether a pod's status that is not final waits for the pod's next change (status.c). The wait
 * (--status-coalesce) pays off where a container ends within it: a short pod's Running and
 * Succeeded are one write. Everywhere else it only delays the pod's Running by that much (a
 * `sleep` pod's create -> Running on an idle node). So a status waits only while the node runs
 * short pods: while a pod whose final status came within the wait of its first one was seen
 * in the last XP_STATUS_HOLD_MEMORY_NS. The first short pod of a burst has its two writes; the
 * rest of the burst is held as before. No threads, no clock: times are given (the agent's
 * CLOCK_MONOTONIC; any clock in tests/unit/test_agent_statushold.c); the caller locks.
 */

#include <stdbool.h>
#include <stdint.h>

/* How long one short pod keeps the holds on. */
#define XP_STATUS_HOLD_MEMORY_NS (1000LL * 1000 * 1000)
/* The pods whose first status that is not final is remembered (the newest ones). */
#define XP_STATUS_HOLD_RECENT 32

struct xp_status_hold {
        int64_t wait_ns;     /* --status-coalesce; <= 0: never hold */
        int64_t short_at_ns; /* when a short pod was last seen; 0: never */
        struct {
                uint64_t uid_hash; /* 0: empty */
                int64_t at_ns;     /* when its first status that is not final was put */
        } recent[XP_STATUS_HOLD_RECENT];
        unsigned next; /* the slot the next pod takes */
};

void xp_status_hold_init(struct xp_status_hold *h, int64_t wait_ns);

/*
 * A status of the pod uid is put at now_ns, final (Succeeded or Failed) or not: returns the time
 * until which it waits for the pod's next one (0: due at once), and learns from it.
 */
int64_t xp_status_hold_until(struct xp_status_hold *h, const char *uid, bool final, int64_t now_ns);
