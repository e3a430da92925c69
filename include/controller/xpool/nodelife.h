/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The node lifecycle controller (docs/server.md, "Node lifecycle"): marks nodes whose agent
 * stopped renewing its Lease for grace_ms as Ready=Unknown with the unreachable NoExecute taint,
 * their pods Ready=False, and after eviction_ms (or the pod's toleration) Failed with reason
 * NodeLost; removes terminating pods nobody is left to stop once their grace has passed; and
 * finishes Terminating namespaces once their pods are gone.
 */

#include <stdint.h>

#include "xpool/error.h"

struct xp_clock;
struct xp_registry;
struct xp_nodelife;

struct xp_nodelife_options {
        const struct xp_clock *clock; /* borrowed; NULL: the system's */
        int64_t grace_ms;             /* a node is lost after this long without a sign of life */
        int64_t eviction_ms;          /* its pods are Failed this long after (by default) */
};

/*
 * A controller over registry (borrowed until xp_nodelife_free()) with everything listed, but no
 * loop: xp_nodelife_start() runs one, a test calls xp_nodelife_step(). -ENOMEM, or the store's
 * error when the listing fails.
 */
int xp_nodelife_new(struct xp_registry *registry,
                    const struct xp_nodelife_options *options,
                    struct xp_nodelife **ret,
                    struct xp_error *err);

/* xp_nodelife_new() and the loop's thread. Stop with xp_nodelife_free(). */
int xp_nodelife_start(struct xp_registry *registry,
                      const struct xp_nodelife_options *options,
                      struct xp_nodelife **ret,
                      struct xp_error *err);

/*
 * One round of the loop, for tests: reads what the store has new, checks the nodes when a tick
 * is due, and finishes the namespaces queued. Returns the ms the loop would sleep, or the store's
 * error.
 */
int xp_nodelife_step(struct xp_nodelife *nodelife, struct xp_error *err);

/*
 * From now on the controller judges no node (nothing is marked lost, no pod of a lost node
 * changes); the rest goes on until xp_nodelife_free(). For the server's stop: once HTTP stops no
 * agent's heartbeat can arrive, and a stop longer than the grace period would lose every node to
 * the stop. Any thread; NULL is fine.
 */
void xp_nodelife_quiesce(struct xp_nodelife *nodelife);

/* Stops the loop and frees everything; must run before the store closes. NULL is fine. */
void xp_nodelife_free(struct xp_nodelife *nodelife);
