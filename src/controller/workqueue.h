/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The work queue of a controller, as client-go's rate-limited work queue: keys ("namespace/name")
 * of objects to look at, each at most once in the queue however often it is added, handed out in
 * the order they came. A key being worked on is not handed out again meanwhile: one added then is
 * queued again when the work is done. A key whose work failed comes back after a delay that
 * doubles with each failure (base_delay_ms, 2 x, 4 x, ... up to max_delay_ms) until the work
 * succeeds and the key is forgotten.
 *
 * The pattern (docs/development.md, "How to add a controller"): informer callbacks add keys; the
 * controller's work takes keys with xp_workqueue_get(), syncs each, then calls
 * xp_workqueue_forget() on success or xp_workqueue_add_rate_limited() on failure, and
 * xp_workqueue_done() either way.
 *
 * Time comes from the clock given (controller/clock.h), so that a test moves it. Not thread-safe:
 * one controller thread uses it. Nothing blocks: xp_workqueue_next_ms() says how long the caller
 * may sleep before a delayed key is due.
 */

#include <stddef.h>
#include <stdint.h>

struct xp_clock;
struct xp_workqueue;

struct xp_workqueue_options {
        const struct xp_clock *clock; /* borrowed; NULL: the system's */
        int64_t base_delay_ms;        /* the first retry's delay; 0: 5 ms, as client-go */
        int64_t max_delay_ms;         /* the longest; 0: 1000 s, as client-go */
};

/* -ENOMEM. Caller frees with xp_workqueue_free(). */
int xp_workqueue_new(const struct xp_workqueue_options *options, struct xp_workqueue **ret);
/* NULL is fine. */
void xp_workqueue_free(struct xp_workqueue *queue);

/* Queues key (copied) unless it is queued already. -ENOMEM. */
int xp_workqueue_add(struct xp_workqueue *queue, const char *key);
/* Queues key once delay_ms has passed; a key already waiting keeps the earlier time. -ENOMEM. */
int xp_workqueue_add_after(struct xp_workqueue *queue, const char *key, int64_t delay_ms);
/* Queues key after its next backoff delay, and counts the failure. -ENOMEM. */
int xp_workqueue_add_rate_limited(struct xp_workqueue *queue, const char *key);
/* The work on key succeeded: its next failure starts again at base_delay_ms. */
void xp_workqueue_forget(struct xp_workqueue *queue, const char *key);

/*
 * The next key to work on (borrowed until xp_workqueue_done()): 1 with *ret_key, 0 when no key is
 * due now. Delayed keys whose time came are queued first.
 */
int xp_workqueue_get(struct xp_workqueue *queue, const char **ret_key);
/* The work on key (as xp_workqueue_get() gave it) is over. */
void xp_workqueue_done(struct xp_workqueue *queue, const char *key);

/* ms until a key is due: 0 when one is ready now, -1 when none is queued or waiting. */
int64_t xp_workqueue_next_ms(struct xp_workqueue *queue);
