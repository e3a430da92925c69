/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * A controller's thread: the loop every controller runs, so that none carries a copy. Each round
 * brings the informer up to date (relisting when the store's log moved past it), then calls the
 * controller's work, then sleeps until the store has news or the work's timeout passes. A round
 * whose read of the store fails tries again after retry_ms, doubled for each failure in a row up
 * to 30 s; the failure is logged when it is new and again at most once a minute while it lasts,
 * and its end is logged.
 *
 * Tests drive a controller without this thread: they call xp_informer_sync() and the work
 * themselves (each controller offers a step function doing both).
 */

#include <stdbool.h>
#include <stdint.h>

#include "xpool/error.h"

struct xp_informer;
struct xp_controller;

struct xp_controller_ops {
        const char *name; /* in logs: "scheduler", "node lifecycle" */
        /* One round of work after the informer delivered what was new. Returns the longest
         * sleep (ms) before the next round when the store stays quiet. */
        int64_t (*work)(void *userdata);
        /* Called when the informer had to list everything again (may be NULL). */
        void (*relisted)(void *userdata);
        int64_t retry_ms; /* the first sleep after a failed read of the store */
        /* After a round, how long news may gather before the next one (0: a write wakes the loop
         * at once). For controllers that nothing waits on to go on (statistics, statuses,
         * garbage): their rounds find nothing to do for most writes of the kinds they follow
         * (a short pod's five or so writes), and a round per write, woken and reading the
         * store's log, cost more than the work (issue 21). */
        int64_t settle_ms;
};

/* The rest before waiting for news after a round whose work asked for work_ms at most: settle_ms,
 * never past work_ms (work that is due is not delayed), 0 when either is 0. */
int xp_controller_settle_ms(int64_t settle_ms, int work_ms);

/* The settle of the controllers that no client's request waits on (settle_ms): at 100 pods/s, a
 * round in 50 ms instead of one per group commit. */
#define XP_CONTROLLER_SETTLE_MS 50

/*
 * Starts the thread over informer (listed already) and userdata, both borrowed until
 * xp_controller_stop(). -errno of pthread_create() with err.
 */
int xp_controller_start(const struct xp_controller_ops *ops,
                        struct xp_informer *informer,
                        void *userdata,
                        struct xp_controller **ret,
                        struct xp_error *err);

/* Ends the thread at its next round (a sleep is woken) and frees it. NULL is fine. */
void xp_controller_stop(struct xp_controller *controller);

/* Whether stop was asked for: long work checks it to end early. NULL (no thread): false. */
bool xp_controller_stopping(const struct xp_controller *controller);
