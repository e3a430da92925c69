/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * A pool of worker threads: the scheduler's binding writes, the agent's container starts, status
 * writers, image pulls and pod network setups. A job is the caller's struct with a struct xp_work
 * in it (container_of style: the work is its first member); the pool hands jobs to its threads
 * and back.
 *
 * By default the pool queues what xp_workers_submit() gives it (first in, first out) and puts what
 * is done on a list for the owner to take (xp_workers_done(), signalled on an eventfd when asked
 * for). An owner with a queue of its own (due times, coalescing) gives `take` and `done` instead,
 * and changes its queue between xp_workers_lock() and xp_workers_unlock().
 *
 * Every callback but run is called with the pool's lock held.
 */

#include <stdbool.h>
#include <stdint.h>

#include "xpool/error.h"

struct xp_work {
        struct xp_work *next; /* the pool's while the job is in it */
};

struct xp_workers_ops {
        /* Runs a job, without the lock; ctx is what thread_begin made on this thread (NULL
         * without it, and when a pool without threads runs the job in xp_workers_submit()). */
        void (*run)(void *userdata, void *ctx, struct xp_work *work);
        /* Optional: on each thread as it starts (e.g. its own connection). < 0 ends the thread
         * (the callback says why). */
        int (*thread_begin)(void *userdata, void **ret_ctx);
        void (*thread_end)(void *userdata, void *ctx);
        /*
         * Optional, with done: the owner's queue, asked by the thread of ctx. 1 with the next job
         * in *ret; 0 when none is due, with *ret_wake_ns the CLOCK_MONOTONIC time to ask again
         * (0: when woken). While stopping, 0 ends the thread. Without it, the pool's own queue
         * is taken, and while stopping its jobs are still run before the threads end.
         */
        int (*take)(
            void *userdata, void *ctx, bool stopping, struct xp_work **ret, int64_t *ret_wake_ns);
        /* Optional: the job ran on the thread of ctx. Without it, it goes on the done list. */
        void (*done)(void *userdata, void *ctx, struct xp_work *work);
        /* Optional: once, as the pool stops: cut short the runs in flight. */
        void (*stopping)(void *userdata);
        /* Frees a job left on the pool's queue or done list when it is freed. */
        void (*free)(struct xp_work *work);
};

struct xp_workers_options {
        const struct xp_workers_ops *ops;
        void *userdata;
        unsigned threads; /* 0: xp_workers_submit() runs each job at once, on the caller's thread */
        bool notify;      /* an eventfd readable while done jobs wait (xp_workers_fd()) */
};

struct xp_workers;

/* Starts the threads. -errno with err (pthread_create(), eventfd()). */
int xp_workers_new(const struct xp_workers_options *options,
                   struct xp_workers **ret,
                   struct xp_error *err);
/*
 * Stops: calls ops->stopping, wakes every thread, waits for them (the pool's own queue is run
 * to its end first), and frees what is left on the queue and the done list with ops->free.
 */
void xp_workers_free(struct xp_workers *w);

/* Queues a job for the threads (ops without take). */
void xp_workers_submit(struct xp_workers *w, struct xp_work *work);
/* Takes the jobs done so far, newest first (NULL: none), and empties the eventfd. */
struct xp_work *xp_workers_done(struct xp_workers *w);
/* The eventfd of options.notify (-1 without it). */
int xp_workers_fd(const struct xp_workers *w);

/* For an owner's queue: change it with the lock held, then wake the threads. */
void xp_workers_lock(struct xp_workers *w);
void xp_workers_unlock(struct xp_workers *w);
/* Wakes every thread to ask take() again. With the lock held or not. */
void xp_workers_wake(struct xp_workers *w);
/*
 * Wakes one waiting thread (if any waits) to ask take() again: for one more job, where every
 * thread's take() would hand out the same. A busy thread asks take() anyway once its job is
 * done, so the others sleep on instead of waking only to find nothing (a wake-up each costs a
 * switch to and from the thread). With the lock held or not.
 */
void xp_workers_wake_one(struct xp_workers *w);
