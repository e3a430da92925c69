/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * A few API clients of the agent's, each a kept-alive connection of its own, in slots: the
 * clients of the writer threads (status.c, events.c), kept so that stopping cancels the request
 * each has out instead of waiting for its timeout, and the idle clients that pods' starts take
 * turns with (config_clients.c). No lock: the caller's lock guards a set. What the set holds it
 * does not own, but for xp_client_slots_free_all().
 */

#include <stdbool.h>
#include <stddef.h>

#include "xpool/client.h"
#include "xpool/error.h"
#include "xpool/workers.h"

#define XP_CLIENT_SLOTS_MAX 16

struct xp_client_slots {
        struct xp_apiclient *items[XP_CLIENT_SLOTS_MAX];
        size_t n;
        size_t limit;   /* the slots used, at most XP_CLIENT_SLOTS_MAX */
        bool cancelled; /* by xp_client_slots_cancel(): so is every client put after */
        /* a writer pool's (xp_client_slots_init_writers()) */
        const struct xp_apiclient_options *api;
        size_t writer_size;
        const char *what;
};

/* An empty set of limit slots (capped at XP_CLIENT_SLOTS_MAX). */
void xp_client_slots_init(struct xp_client_slots *s, size_t limit);

/* Keeps client in a free slot (cancelled at once when the set is): false when none is free. */
bool xp_client_slots_put(struct xp_client_slots *s, struct xp_apiclient *client);
/* Forgets client (not freed); nothing when the set does not hold it. */
void xp_client_slots_drop(struct xp_client_slots *s, const struct xp_apiclient *client);
/* The client put last, forgotten; NULL when the set is empty. */
struct xp_apiclient *xp_client_slots_pop(struct xp_client_slots *s);

/* A new client of api, kept in the set as xp_client_slots_put() keeps one (a thread's own,
 * which the set cannot refuse: it has a slot for each thread). 0, or -errno with err. */
int xp_client_slots_open(struct xp_client_slots *s,
                         const struct xp_apiclient_options *api,
                         struct xp_apiclient **ret,
                         struct xp_error *err);
/* Forgets client and frees it (NULL: nothing). */
void xp_client_slots_close(struct xp_client_slots *s, struct xp_apiclient *client);

/*
 * A pool of writer threads (xpool/workers.h) whose each thread has a client of its own: the set
 * of their clients, limit threads, each with a context of writer_size bytes whose first member is
 * its client (struct xp_apiclient *); what names the writers in the log line of a client that
 * cannot be made ("a status writer"). The pool's userdata must begin with the set, for the
 * callbacks below.
 */
void xp_client_slots_init_writers(struct xp_client_slots *s,
                                  size_t limit,
                                  const struct xp_apiclient_options *api,
                                  size_t writer_size,
                                  const char *what);
/* The pool's thread_begin: a zeroed context whose client is opened as xp_client_slots_open()
 * opens one. 0, -ENOMEM, or the client's -errno (logged). */
int xp_client_slots_thread_begin(void *userdata, void **ret_ctx);
/* The pool's thread_end: closes the context's client and frees the context. */
void xp_client_slots_thread_end(void *userdata, void *ctx);
/* The pool's stopping: xp_client_slots_cancel(), so that no thread waits out a request. */
void xp_client_slots_stopping(void *userdata);
/* The ops of such a pool: the callbacks above, and run, take and done of its own. */
#define XP_CLIENT_SLOTS_WRITER_OPS(run_, take_, done_)                                             \
        {                                                                                          \
                .run = (run_), .thread_begin = xp_client_slots_thread_begin,                       \
                .thread_end = xp_client_slots_thread_end, .take = (take_), .done = (done_),        \
                .stopping = xp_client_slots_stopping,                                              \
        }

/* Cancels the request of each client held, and every later one of those and of those put after
 * (xp_apiclient_cancel()). */
void xp_client_slots_cancel(struct xp_client_slots *s);
/* Frees the clients held: when no thread uses them any more. */
void xp_client_slots_free_all(struct xp_client_slots *s);
