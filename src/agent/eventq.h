/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The queue of the Events the agent writes (events.c), for several writers at once: each writer
 * (a thread with its own connection) takes the oldest Event whose key has none out, so Events
 * are written together and share the server's group commits (one commit, and one fsync, for a
 * short pod's Created, Started and DevicesAllocated instead of one each), while the writes of
 * one key, an Event's create and the updates counting repeats on it, reach the server one after
 * another in the order queued: a count never overtakes the create it counts on, nor an older
 * count. No threads, no clock: the caller locks.
 *
 * Nothing is lost on the way: an Event taken stays queued (its key's later writes behind it)
 * until its writer says it is done, whatever became of the others taken with it. Bounded: at
 * most max Events wait (or are out); beyond, put refuses.
 */

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* One Event to write: a create (POST body), or with name, a count update of that Event. */
struct xp_eventq_item {
        char *key;       /* the Event's name: one write of it out at a time */
        char *namespace; /* the Event's */
        char *name;      /* a count update of this Event (PATCH); NULL: a create */
        json_t *body;    /* the Event as it is to be (the create's body, the count's source) */
        /* the queue's */
        bool out;
        struct xp_eventq_item *next;
};

struct xp_eventq;

/* A queue holding at most max Events (max > 0); -EINVAL, -ENOMEM. */
int xp_eventq_new(size_t max, struct xp_eventq **ret);
/* Frees it and what waits; no Event may be out. NULL is fine. */
void xp_eventq_free(struct xp_eventq *q);

/* Queues item (taken on success): 0, or -ENOBUFS when max wait already (item left to the
 * caller). */
int xp_eventq_put(struct xp_eventq *q, struct xp_eventq_item *item);
/* The oldest Event whose key has none out, now out; NULL when none is. */
struct xp_eventq_item *xp_eventq_take(struct xp_eventq *q);
/* The writer is done with item (taken), written or given up: it leaves the queue and is freed,
 * and the next write of its key may be taken. */
void xp_eventq_done(struct xp_eventq *q, struct xp_eventq_item *item);
/* How many Events are queued (out ones included). */
size_t xp_eventq_size(const struct xp_eventq *q);

/* Frees an item that is in no queue. NULL is fine. */
void xp_eventq_item_free(struct xp_eventq_item *item);
