/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Readers that wait for the writes of some kinds only (xp_store_waiter_new()). Each has its own
 * condition; the leader, settling a batch, signals the waiters that follow each write's kind
 * (store_waiters_written()), where xp_store_wait()'s one condition wakes every waiter for every
 * write. No write is missed between a reader's last scan and its wait: under the lock, the wait
 * first compares the kinds' write marks (generation.c) with what the reader has seen. The
 * leader signals them after letting go of the lock (store_waiters_take_due()).
 *
 * A waiter is also a registered reader of the ring of recent writes (recent.c): each write counts
 * the waiters following its kind, and a waiter's waits and scans (xp_store_waiter_scan_into())
 * tell how far it has read, so the ring lets a write's object go once the last of them has passed
 * it (the next leader frees it), rather than a thousand writes later. A waiter that leaves passes
 * everything.
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
        /* under the store's lock, per kind: where the reader said it was (its waits' since, its
         * scans' through), and up to where the ring's entries of the kind were passed (kept in
         * the first of the kinds of a name: a write counted the waiter once) */
        uint64_t *at, *passed;
        size_t *first; /* per kind: the first of w's kinds of its name */
        /* it has waited: a reader that keeps reading, for the writes after to count (a reader
         * that only reads now and then, when asked, would keep every object to the ring's end) */
        bool reading;
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

/* The first of w's kinds named as kind i (a write counted w once). */
static size_t first_of_kind(const struct xp_store_waiter *w, size_t i)
{
        for (size_t j = 0; j < i; j++)
                if (strcmp(w->kinds[j], w->kinds[i]) == 0)
                        return j;
        return i;
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
        w->at = calloc(n ? n : 1, sizeof(*w->at));
        w->passed = calloc(n ? n : 1, sizeof(*w->passed));
        w->first = calloc(n ? n : 1, sizeof(*w->first));
        if (!w->at || !w->passed || !w->first) {
                free(w->at);
                free(w->passed);
                free(w->first);
                free(w);
                return -ENOMEM;
        }
        for (size_t i = 0; i < n; i++)
                w->first[i] = first_of_kind(w, i);
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

/* Under lock: the ring's entries of w's kind f (the first of its name) up to where the reader is
 * in all the kinds of that name have one reader less to wait for (store_recent_pass()). */
static void pass_kind(struct xp_store_waiter *w, size_t f)
{
        uint64_t to = w->at[f], last;

        for (size_t j = f + 1; j < w->n; j++)
                if (w->first[j] == f && w->at[j] < to)
                        to = w->at[j];
        if (to <= w->passed[f])
                return;
        /* most of an informer's kinds have had no write since it last passed them: no walk */
        last = xp_store_kind_generation(w->store, w->kinds[f]);
        if (last > w->passed[f])
                store_recent_pass(w->store, w->kinds[f], w->passed[f], last < to ? last : to);
        w->passed[f] = to;
}

void store_waiter_scanned(const struct store_event_list *l, uint64_t through)
{
        struct xp_store_waiter *w = l->reader;
        size_t i = l->reader_kind;

        if (!w->reading)
                return;
        if (through > w->at[i])
                w->at[i] = through;
        pass_kind(w, w->first[i]);
}

/* Under lock: moves w's positions on to since (to all in every kind when since is NULL). */
static void pass(struct xp_store_waiter *w, const uint64_t *since, uint64_t all)
{
        for (size_t i = 0; i < w->n; i++) {
                uint64_t to = since ? since[i] : all;

                if (to > w->at[i])
                        w->at[i] = to;
        }
        for (size_t i = 0; i < w->n; i++)
                if (w->first[i] == i)
                        pass_kind(w, i);
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
        /* the writes up to now counted it, none after */
        if (w->reading)
                pass(w, NULL, w->store->version);
        pthread_mutex_unlock(&w->store->lock);
        /* a leader that took it before it left the list may still be signalling it; one that
         * took it later cannot: a few microseconds at most, and a waiter's free is rare */
        while (atomic_load(&w->store->waiter_signallers))
                sched_yield();
        pthread_cond_destroy(&w->cond);
        free(w->at);
        free(w->passed);
        free(w->first);
        free(w);
}

static bool follows(const struct xp_store_waiter *w, const char *kind)
{
        for (size_t i = 0; i < w->n; i++)
                if (strcmp(w->kinds[i], kind) == 0)
                        return true;
        return false;
}

int store_waiters_written(struct xp_store *store, const char *kind)
{
        int n = 0;

        for (struct xp_store_waiter *w = store->waiters; w; w = w->next) {
                if (!follows(w, kind))
                        continue;
                n += w->reading;
                if (!w->written) {
                        w->written = true;
                        w->due = true;
                }
        }
        return n;
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
        if (w->reading) {
                pass(w, since, 0);
        } else {
                /* from its first wait on: the writes before did not count it */
                for (size_t i = 0; i < w->n; i++)
                        w->at[i] = w->passed[i] = store->version;
                w->reading = true;
        }
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

struct xp_store *store_waiter_store(const struct xp_store_waiter *w)
{
        return w->store;
}

const char *store_waiter_kind(const struct xp_store_waiter *w, size_t i)
{
        return w->kinds[i];
}

size_t xp_store_waiters(struct xp_store *store)
{
        return atomic_load(&store->n_waiters);
}
