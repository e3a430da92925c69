/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Readers that wait for the writes of some kinds only (xp_store_waiter_new()). Each has its own
 * word to sleep on (xpool/wake_word.h); the leader, settling a batch, marks the waiters that
 * follow each write's kind (store_waiters_written()) and bumps their words after letting go of
 * the lock (store_waiters_take_due()), where xp_store_wait()'s one condition wakes every waiter
 * for every write. No write is missed between a reader's last scan and its wait: the wait
 * compares the kinds' write marks (generation.c), set before the bump, with what the reader has
 * seen.
 *
 * The wait takes no lock of the store's: it was a condition variable on the store's mutex, and
 * each wake-up retook that mutex, which the writers' leaders hold, and (glibc marks a mutex
 * retaken by a condition wait contended) made a FUTEX_WAKE at its unlock: 0.15 futex calls per
 * create in bench_api with the controllers' ten informers, half of them these unlocks.
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "store_internal.h"
#include "xpool/timeutil.h"
#include "xpool/wake_word.h"

struct xp_store_waiter {
        struct xp_store *store;
        const char *const *kinds;
        size_t n;
        atomic_uint word;  /* bumped by each signal and wake-up (xpool/wake_word.h) */
        atomic_bool woken; /* xp_store_waiter_wake() since the last wait */
        /* under the store's lock */
        bool due; /* a write of its kinds in the batch being settled, not yet signalled */
        struct xp_store_waiter *next;
};

int xp_store_waiter_new(struct xp_store *store,
                        const char *const *kinds,
                        size_t n,
                        struct xp_store_waiter **ret)
{
        struct xp_store_waiter *w = calloc(1, sizeof *w);

        if (!w)
                return -ENOMEM;
        *w = (struct xp_store_waiter){.store = store, .kinds = kinds, .n = n};
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
                if (!w->due && follows(w, kind))
                        w->due = true;
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
                        xp_wake_word_bump(&w->word);
        }
        if (ret->n)
                atomic_fetch_add(&store->waiter_signallers, 1);
}

void store_waiters_signal_due(struct xp_store *store, struct store_due *due)
{
        if (!due->n)
                return;
        for (size_t i = 0; i < due->n; i++)
                xp_wake_word_bump(&due->w[i]->word);
        atomic_fetch_sub(&store->waiter_signallers, 1);
}

/* Without the lock: whether a write of one of the kinds is newer than what the reader saw of it.
 * The marks are set before the leader bumps the word, so a wait that misses one sleeps on a word
 * that has changed since, or is yet to be bumped. */
static bool news(const struct xp_store_waiter *w, const uint64_t *since)
{
        for (size_t i = 0; i < w->n; i++)
                if (xp_store_kind_generation(w->store, w->kinds[i]) > since[i])
                        return true;
        return false;
}

void xp_store_waiter_wake(struct xp_store_waiter *w)
{
        atomic_store(&w->woken, true);
        xp_wake_word_bump(&w->word);
}

int xp_store_waiter_wait(struct xp_store_waiter *w, const uint64_t *since, int timeout_ms)
{
        struct timespec deadline;
        unsigned int seen;
        int r;

        if (timeout_ms > 0)
                deadline = xp_monotonic_deadline(timeout_ms);
        for (;;) {
                seen = xp_wake_word_prepare(&w->word);
                r = atomic_exchange(&w->woken, false) || news(w, since);
                if (r || timeout_ms == 0)
                        break;
                if (xp_wake_word_wait(&w->word, seen, timeout_ms > 0 ? &deadline : NULL) ==
                    -ETIMEDOUT) {
                        r = atomic_exchange(&w->woken, false) || news(w, since);
                        break;
                }
        }
        /* awake (one thread waits on a waiter): the leaders' next bumps need no system call */
        xp_wake_word_cancel(&w->word, seen);
        return r;
}

size_t xp_store_waiters(struct xp_store *store)
{
        return atomic_load(&store->n_waiters);
}
