/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Readers that wait for the writes of some kinds only (xp_store_waiter_new()). Each has its own
 * condition; the leader, settling a batch, signals the waiters that follow each write's kind
 * (store_waiters_written()), where xp_store_wait()'s one condition wakes every waiter for every
 * write. No write is missed between a reader's last scan and its wait: under the lock, the wait
 * first compares the kinds' write marks (generation.c) with what the reader has seen. The
 * leader signals them after letting go of the lock (store_waiters_take_due()).
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "store_internal.h"

struct xp_store_waiter {
        struct xp_store *store;
        const char *const *kinds;
        size_t n;
        pthread_cond_t cond; /* CLOCK_MONOTONIC */
        /* under the store's lock */
        bool written; /* a write of its kinds since the wait began */
        bool due;     /* written, and not yet signalled (store_waiters_take_due()) */
        bool woken;   /* xp_store_waiter_wake() since the last wait */
        struct xp_store_waiter *next;
};

void store_deadline(int timeout_ms, struct timespec *ret)
{
        clock_gettime(CLOCK_MONOTONIC, ret);
        ret->tv_sec += timeout_ms / 1000;
        ret->tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
        if (ret->tv_nsec >= 1000000000L) {
                ret->tv_sec++;
                ret->tv_nsec -= 1000000000L;
        }
}

int xp_store_waiter_new(struct xp_store *store,
                        const char *const *kinds,
                        size_t n,
                        struct xp_store_waiter **ret)
{
        struct xp_store_waiter *w = calloc(1, sizeof *w);
        pthread_condattr_t attr;

        if (!w)
                return -ENOMEM;
        *w = (struct xp_store_waiter){.store = store, .kinds = kinds, .n = n};
        pthread_condattr_init(&attr);
        pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
        pthread_cond_init(&w->cond, &attr);
        pthread_condattr_destroy(&attr);
        pthread_mutex_lock(&store->lock);
        w->next = store->waiters;
        store->waiters = w;
        atomic_fetch_add(&store->n_waiters, 1);
        pthread_mutex_unlock(&store->lock);
        *ret = w;
        return 0;
}

void xp_store_waiter_free(struct xp_store_waiter *w)
{
        struct xp_store_waiter **at;

        if (!w)
                return;
        pthread_mutex_lock(&w->store->lock);
        for (at = &w->store->waiters; *at; at = &(*at)->next)
                if (*at == w) {
                        *at = w->next;
                        atomic_fetch_sub(&w->store->n_waiters, 1);
                        break;
                }
        pthread_mutex_unlock(&w->store->lock);
        /* a leader that took it before it left the list may still be signalling it; one that
         * took it later cannot: a few microseconds at most, and a waiter's free is rare */
        while (atomic_load(&w->store->waiter_signallers))
                sched_yield();
        pthread_cond_destroy(&w->cond);
        free(w);
}

static bool follows(const struct xp_store_waiter *w, const char *kind)
{
        for (size_t i = 0; i < w->n; i++)
                if (strcmp(w->kinds[i], kind) == 0)
                        return true;
        return false;
}

void store_waiters_written(struct xp_store *store, const char *kind)
{
        for (struct xp_store_waiter *w = store->waiters; w; w = w->next)
                if (!w->written && follows(w, kind)) {
                        w->written = true;
                        w->due = true;
                }
}

void store_waiters_take_due(struct xp_store *store, struct store_due *ret)
{
        ret->n = 0;
        for (struct xp_store_waiter *w = store->waiters; w; w = w->next) {
                if (!w->due)
                        continue;
                w->due = false;
                if (ret->n < STORE_DUE_MAX)
                        ret->w[ret->n++] = w;
                else
                        pthread_cond_signal(&w->cond);
        }
        if (ret->n)
                atomic_fetch_add(&store->waiter_signallers, 1);
}

void store_waiters_signal_due(struct xp_store *store, struct store_due *due)
{
        if (!due->n)
                return;
        for (size_t i = 0; i < due->n; i++)
                pthread_cond_signal(&due->w[i]->cond);
        atomic_fetch_sub(&store->waiter_signallers, 1);
}

/* Under lock: whether a write of one of the kinds is newer than what the reader saw of it. */
static bool news(const struct xp_store_waiter *w, const uint64_t *since)
{
        uint64_t oldest = UINT64_MAX;

        for (size_t i = 0; i < w->n; i++)
                if (since[i] < oldest)
                        oldest = since[i];
        if (w->store->version <= oldest)
                return false; /* nothing written since the reader's last scan: no kind to look at */
        for (size_t i = 0; i < w->n; i++)
                if (xp_store_kind_generation(w->store, w->kinds[i]) > since[i])
                        return true;
        return false;
}

void xp_store_waiter_wake(struct xp_store_waiter *w)
{
        pthread_mutex_lock(&w->store->lock);
        w->woken = true;
        pthread_cond_signal(&w->cond);
        pthread_mutex_unlock(&w->store->lock);
}

int xp_store_waiter_wait(struct xp_store_waiter *w, const uint64_t *since, int timeout_ms)
{
        struct xp_store *store = w->store;
        struct timespec deadline;
        int r;

        if (timeout_ms >= 0)
                store_deadline(timeout_ms, &deadline);
        pthread_mutex_lock(&store->lock);
        /* what was written before this wait is judged by the marks, not by the flag */
        w->written = news(w, since);
        while (!w->written && !w->woken) {
                if (timeout_ms < 0)
                        pthread_cond_wait(&w->cond, &store->lock);
                else if (pthread_cond_timedwait(&w->cond, &store->lock, &deadline) == ETIMEDOUT)
                        break;
        }
        r = w->written || w->woken;
        w->written = false;
        w->woken = false;
        pthread_mutex_unlock(&store->lock);
        return r;
}

size_t xp_store_waiters(struct xp_store *store)
{
        return atomic_load(&store->n_waiters);
}
