/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Watch batches (watch_shared.c): the lines of the events after a version, as one watch read and
 * encoded them, for the other watches of the same shape to send as they are. 200 watches of one
 * namespace each read the store's log and copied every event's text, 200 times per event; with
 * the batch, the first watch at a version reads and encodes, the others only send.
 *
 * A batch is shared only by watches whose lines depend on nothing but the log: no selector, no
 * Table, the kind served as stored. Its key is the kind's plural, the namespace (NULL: every
 * namespace) and the version it follows; the store's versions are never reused, so a batch stays
 * true for as long as it is kept.
 */

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct watch_batches;

struct watch_batch {
        atomic_int refs;
        const char *plural;    /* in the same block */
        const char *namespace; /* NULL: every namespace */
        uint64_t since, through;
        bool drained; /* the read reached the store's version then */
        size_t len;
        const char *data;
};

/* 0 or -ENOMEM. */
int watch_batches_new(struct watch_batches **ret);
/* The slots' limits: kept_max bytes of lines in all (16 MiB unless set), a batch dropped once
 * older than age_max_ms (1000 unless set). For tests. */
void watch_batches_set_limits(struct watch_batches *batches, size_t kept_max, uint64_t age_max_ms);
/* NULL is fine; batches still held stay valid until released. */
void watch_batches_free(struct watch_batches *batches);

/* The batch of the events after since, held for the caller (watch_batch_release), or NULL. */
struct watch_batch *watch_batch_find(struct watch_batches *batches,
                                     const char *plural,
                                     const char *namespace,
                                     uint64_t since);

/* Keeps a copy of what a watch read after since, through through, for the others; a batch
 * too large to keep, or no memory for it, is not kept. */
void watch_batch_offer(struct watch_batches *batches, const struct watch_batch *what);

/* NULL is fine. */
void watch_batch_release(struct watch_batch *batch);
