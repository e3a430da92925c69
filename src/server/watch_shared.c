/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Watch batches (watch_shared.h): a few slots, reused in turn, each a batch in one block with its
 * key. The watches of a stream of writes all ask for the batches after the same versions within
 * a pass of the stream hub, so a few slots serve them all; a slot taken over releases its batch,
 * which lives on while a watch still sends it.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "watch_shared.h"

#define BATCH_SLOTS 32
#define BATCH_MAX   (4 * 1024 * 1024) /* larger reads (an object of megabytes) are not kept */

struct watch_batches {
        pthread_mutex_t lock;
        struct watch_batch *slots[BATCH_SLOTS];
        size_t next; /* the slot taken over next */
};

int watch_batches_new(struct watch_batches **ret)
{
        struct watch_batches *b = calloc(1, sizeof *b);

        if (!b)
                return -ENOMEM;
        pthread_mutex_init(&b->lock, NULL);
        *ret = b;
        return 0;
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

void watch_batch_offer(struct watch_batches *batches, const struct watch_batch *what)
{
        struct watch_batch *b, *old = NULL;
        bool kept = false;

        if (what->len == 0 || what->len > BATCH_MAX)
                return;
        b = batch_copy(what);
        if (!b)
                return;
        pthread_mutex_lock(&batches->lock);
        for (size_t i = 0; i < BATCH_SLOTS && !kept; i++)
                kept = batches->slots[i] &&
                       same_key(batches->slots[i], what->plural, what->namespace, what->since);
        if (!kept) {
                old = batches->slots[batches->next];
                batches->slots[batches->next] = b;
                batches->next = (batches->next + 1) % BATCH_SLOTS;
        }
        pthread_mutex_unlock(&batches->lock);
        /* another watch kept the batch after since first: it holds the same lines */
        watch_batch_release(kept ? b : old);
}
