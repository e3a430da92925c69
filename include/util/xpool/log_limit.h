/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The log rate of a state that lasts: a loop that meets the same failure or the same unreadable
 * objects round after round says so when what it meets changes, and while it stays the same at
 * most once per interval, with how many rounds were held back meanwhile. What a round met is
 * named by a digest (xp_hash_string() of its line, or xp_hash_add() over its lines).
 */

#include <stdbool.h>
#include <stdint.h>

struct xp_log_limit {
        uint64_t digest; /* what the last round written met */
        int64_t said_ms; /* when that was written */
        uint64_t held;   /* rounds since, each the same, not written */
        bool said;       /* anything written yet */
};

/*
 * Whether the round that met digest at now_ms (a monotonic clock) is to be written: true when
 * digest differs from the last one written or interval_ms has passed since, with *ret_held (when
 * not NULL) the rounds held back since; false, counted, while it is the same within interval_ms.
 */
bool xp_log_limit_check(struct xp_log_limit *limit,
                        uint64_t digest,
                        int64_t now_ms,
                        int64_t interval_ms,
                        uint64_t *ret_held);

/* The state ended (the failure went away): the next round is written whatever it meets. */
void xp_log_limit_reset(struct xp_log_limit *limit);
