/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The history feed: a controller that follows nodes and pods through the informer and records
 * the pool's allocation into the history (history.h) at every change and at every step, in total
 * and per node, for each resource a node offers (its allocatable) and each pod bound to a node
 * and not finished asks for (requests, or limits where a container gives no request, as
 * Kubernetes defaults them; init containers are not counted). Devices' published utilisation
 * (status.xpool.devices[].metrics.utilizationPercent) is recorded as usage when a node brings it.
 *
 * It writes nothing to the store.
 */

#include "xpool/error.h"

struct xp_clock;
struct xp_history;
struct xp_store;
struct xp_history_feed;

/*
 * A feed over store into history (both borrowed until xp_history_feed_free()), everything listed
 * and recorded once, without a loop: xp_history_feed_start() runs one, a test calls
 * xp_history_feed_step(). clock NULL: the system's. -ENOMEM or the store's error.
 */
int xp_history_feed_new(struct xp_store *store,
                        struct xp_history *history,
                        const struct xp_clock *clock,
                        struct xp_history_feed **ret,
                        struct xp_error *err);
/* xp_history_feed_new() and the loop's thread. Stop with xp_history_feed_free(). */
int xp_history_feed_start(struct xp_store *store,
                          struct xp_history *history,
                          struct xp_history_feed **ret,
                          struct xp_error *err);
/* One round: reads what the store has new and records when something changed or a step began. */
int xp_history_feed_step(struct xp_history_feed *feed, struct xp_error *err);
/* Stops the loop and frees the feed; must run before the store closes. NULL is fine. */
void xp_history_feed_free(struct xp_history_feed *feed);
