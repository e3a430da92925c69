/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The informer: how a controller learns what is in the store and what changes, as a Kubernetes
 * informer does over list and watch. It lists each kind it follows once, then reads the store's
 * event log from each list's version on, and hands every object to the kind's callbacks: add for
 * what a list finds or an ADDED event brings, update for MODIFIED, delete for DELETED (with the
 * object's last state). When the log no longer reaches back to where it stopped reading (the
 * store keeps only the latest writes), it calls reset and lists everything again.
 *
 * It keeps no copy of the objects: a controller keeps only what it needs of them (the scheduler
 * its snapshot, the node lifecycle its view), which costs far less than every pod in full.
 *
 * Not thread-safe: one controller thread drives it (or a test, call by call), but for
 * xp_informer_wake(). Nothing blocks but xp_informer_wait().
 */

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "xpool/error.h"

struct xp_store;
struct xp_informer;

/* Called with the object (borrowed for the call) and the version it was written at. */
typedef void (*xp_informer_fn)(void *userdata, const json_t *object, uint64_t version);

/* The callbacks of one kind; any may be NULL. */
struct xp_informer_handler {
        const char *resource; /* the store's kind: "pods" */
        xp_informer_fn add;
        xp_informer_fn update;
        xp_informer_fn delete;
};

struct xp_informer_options {
        struct xp_store *store; /* borrowed until xp_informer_free() */
        /* The kinds followed, listed and read in this order; borrowed, as the table is. */
        const struct xp_informer_handler *handlers;
        size_t n_handlers;
        /* Before a relist delivers every object again: forget what the events built (may be
         * NULL). Not called for the first list. */
        void (*reset)(void *userdata);
        void *userdata;
        size_t batch; /* events read from the store at a time; 0: 256 */
};

/* A new informer; nothing is read until xp_informer_list(). -ENOMEM, -EINVAL. */
int xp_informer_new(const struct xp_informer_options *options, struct xp_informer **ret);
/* NULL is fine. */
void xp_informer_free(struct xp_informer *informer);

/*
 * Lists every kind and delivers each object as add; its position in the log is then each list's
 * version. The store's errors.
 */
int xp_informer_list(struct xp_informer *informer, struct xp_error *err);

/*
 * Delivers what the log holds since the last read, kind by kind, all of it (in batches).
 * Relists (reset, then as xp_informer_list()) when the log moved past a kind's position.
 * Returns 1 when something was delivered, 2 when it had to relist, 0 when nothing was new, or the
 * store's errors (what was delivered before stays delivered).
 */
int xp_informer_sync(struct xp_informer *informer, struct xp_error *err);

/* The oldest position among the kinds: everything written up to it was delivered. */
uint64_t xp_informer_position(const struct xp_informer *informer);

/*
 * Blocks until the store has a write of a kind followed newer than what was read of it (writes of
 * other kinds do not wake it), xp_informer_wake() is called, or timeout_ms passes (-1: no limit).
 * 1 when there is something new, 0 on timeout.
 */
int xp_informer_wait(struct xp_informer *informer, int timeout_ms);

/* Ends xp_informer_wait() (or the next one) at once, from any thread: the controller has news
 * that is not the store's (its workers finished). */
void xp_informer_wake(struct xp_informer *informer);
