/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Watch batches (watch_shared.h): a few slots, reused in turn, each a batch in one block with its
 * key. The watches of a stream of writes all ask for the batches after the same versions within
 * a pass of the stream hub, so a few slots serve them all; a slot taken over releases its batch,
 * which lives on while a watch still sends it. A batch serves the watches of one pass, so one kept
 * longer than a second only holds memory (32 slots of 4 MiB after a burst, on a server gone
 * idle): find and offer drop those, and the slots keep 16 MiB at most in all.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "watch_shared.h"

#define BATCH_SLOTS 32
#define BATCH_MAX   (4 * 1024 * 1024) /* larger reads (an object of megabytes) are not kept */
#define KEPT_MAX    (16 * 1024 * 1024)
#define AGE_MAX_NS  1000000000ull

struct watch_batches {
        pthread_mutex_t lock;
        struct watch_batch *slots[BATCH_SLOTS];
        uint64_t kept_at[BATCH_SLOTS]; /* CLOCK_MONOTONIC ns of each slot's offer */
        size_t next;                   /* the slot taken over next */
        size_t kept_bytes;             /* the slots' batches' lines, in all */
        size_t kept_max;
        uint64_t age_max_ns;
};

int watch_batches_new(struct watch_batches **ret)
{
        struct watch_batches *b = calloc(1, sizeof *b);

        if (!b)
                return -ENOMEM;
        pthread_mutex_init(&b->lock, NULL);
        b->kept_max = KEPT_MAX;
        b->age_max_ns = AGE_MAX_NS;
        *ret = b;
        return 0;
}

void watch_batches_set_limits(struct watch_batches *batches, size_t kept_max, uint64_t age_max_ms)
{
        pthread_mutex_lock(&batches->lock);
        batches->kept_max = kept_max;
        batches->age_max_ns = age_max_ms * 1000000ull;
        pthread_mutex_unlock(&batches->lock);
}

static uint64_t now_ns(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Empties slot i (under the lock). */
static void slot_drop(struct watch_batches *batches, size_t i)
{
        if (!batches->slots[i])
                return;
        batches->kept_bytes -= batches->slots[i]->len;
        watch_batch_release(batches->slots[i]);
        batches->slots[i] = NULL;
}

/* Drops the slots older than the age limit (under the lock). */
static void drop_old(struct watch_batches *batches, uint64_t now)
{
        for (size_t i = 0; i < BATCH_SLOTS; i++)
                if (batches->slots[i] && now - batches->kept_at[i] > batches->age_max_ns)
                        slot_drop(batches, i);
}

void watch_batches_free(struct watch_batches *batches)
{
        if (!batches)
                return;
        for (size_t i = 0; i < BATCH_SLOTS; i++)
                watch_batch_release(batches->slots[i]);
        pthread_mutex_destroy(&batches->lock);
        free(batches);
}

void watch_batch_release(struct watch_batch *batch)
{
        if (batch && atomic_fetch_sub(&batch->refs, 1) == 1)
                free(batch);
}

static bool
same_key(const struct watch_batch *b, const char *plural, const char *namespace, uint64_t since)
{
        if (b->since != since || strcmp(b->plural, plural) != 0)
                return false;
        return namespace && b->namespace ? strcmp(namespace, b->namespace) == 0
                                         : !namespace && !b->namespace;
}

struct watch_batch *watch_batch_find(struct watch_batches *batches,
                                     const char *plural,
                                     const char *namespace,
                                     uint64_t since)
{
        struct watch_batch *found = NULL;

        pthread_mutex_lock(&batches->lock);
        drop_old(batches, now_ns());
        for (size_t i = 0; i < BATCH_SLOTS && !found; i++)
                if (batches->slots[i] && same_key(batches->slots[i], plural, namespace, since))
                        found = batches->slots[i];
        if (found)
                atomic_fetch_add(&found->refs, 1);
        pthread_mutex_unlock(&batches->lock);
        return found;
}

/* A copy of what, in one block: NULL when out of memory. */
static struct watch_batch *batch_copy(const struct watch_batch *what)
{
        size_t lp = strlen(what->plural) + 1,
               ln = what->namespace ? strlen(what->namespace) + 1 : 0;
        struct watch_batch *b = malloc(sizeof *b + lp + ln + what->len);
        char *at;

        if (!b)
                return NULL;
        *b = *what;
        atomic_init(&b->refs, 1);
        at = (char *)(b + 1);
        b->plural = memcpy(at, what->plural, lp);
        b->namespace = what->namespace ? memcpy(at + lp, what->namespace, ln) : NULL;
        b->data = memcpy(at + lp + ln, what->data, what->len);
        return b;
}

/* Takes the next slot for b, then drops the oldest others until the total fits (under the lock). */
static void slot_take(struct watch_batches *batches, struct watch_batch *b, uint64_t now)
{
        size_t at = batches->next;

        slot_drop(batches, at);
        batches->slots[at] = b;
        batches->kept_at[at] = now;
        batches->kept_bytes += b->len;
        batches->next = (at + 1) % BATCH_SLOTS;
        for (size_t k = 1; k < BATCH_SLOTS && batches->kept_bytes > batches->kept_max; k++)
                slot_drop(batches, (at + k) % BATCH_SLOTS); /* from the oldest on */
}

void watch_batch_offer(struct watch_batches *batches, const struct watch_batch *what)
{
        struct watch_batch *b;
        bool drop = false;
        uint64_t now;

        if (what->len == 0 || what->len > BATCH_MAX)
                return;
        b = batch_copy(what);
        if (!b)
                return;
        now = now_ns();
        pthread_mutex_lock(&batches->lock);
        drop_old(batches, now);
        for (size_t i = 0; i < BATCH_SLOTS && !drop; i++)
                drop = batches->slots[i] &&
                       same_key(batches->slots[i], what->plural, what->namespace, what->since);
        /* another watch kept the batch after since first (it holds the same lines), or the batch
         * alone is over the limit */
        drop = drop || what->len > batches->kept_max;
        if (!drop)
                slot_take(batches, b, now);
        pthread_mutex_unlock(&batches->lock);
        if (drop)
                watch_batch_release(b);
}
