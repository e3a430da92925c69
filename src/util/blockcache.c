/* SPDX-License-Identifier: Apache-2.0 */
#include <malloc.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include "xpool/blockcache.h"

/* A cached block's first bytes link it to the next of its class. */
struct block {
        struct block *next;
};

struct block_cache {
        struct block *head[XP_BLOCK_CACHE_CLASSES];
        unsigned count[XP_BLOCK_CACHE_CLASSES];
        size_t held, bytes;
        bool registered; /* the thread's exit drains it (pthread key below) */
};

static _Thread_local struct block_cache cache;
static pthread_key_t exit_key;
static bool exit_key_made;
static pthread_once_t exit_key_once = PTHREAD_ONCE_INIT;

_Static_assert(XP_BLOCK_CACHE_SMALLEST >= sizeof(struct block), "a block holds its link");

void xp_block_cache_drain(void)
{
        for (size_t c = 0; c < XP_BLOCK_CACHE_CLASSES; c++) {
                while (cache.head[c]) {
                        struct block *b = cache.head[c];

                        cache.head[c] = b->next;
                        free(b);
                }
                cache.count[c] = 0;
        }
        cache.held = cache.bytes = 0;
}

static void on_thread_exit(void *unused)
{
        (void)unused;
        /* a later destructor that frees through us registers again (glibc runs them again) */
        cache.registered = false;
        xp_block_cache_drain();
}

static void make_exit_key(void)
{
        exit_key_made = pthread_key_create(&exit_key, on_thread_exit) == 0;
}

/* Whether the thread's blocks will be freed when it exits: before it holds any. */
static bool registered(void)
{
        if (cache.registered)
                return true;
        pthread_once(&exit_key_once, make_exit_key);
        cache.registered = exit_key_made && pthread_setspecific(exit_key, &cache) == 0;
        return cache.registered;
}

/* The class whose every block holds size bytes; XP_BLOCK_CACHE_CLASSES when none does. */
static size_t class_for_request(size_t size)
{
        if (size <= XP_BLOCK_CACHE_SMALLEST)
                return 0;
        if (size > XP_BLOCK_CACHE_LARGEST)
                return XP_BLOCK_CACHE_CLASSES;
        return (size - XP_BLOCK_CACHE_SMALLEST + 15) / 16;
}

/* The class a block of that usable size is filed in (rounded down); CLASSES when none. */
static size_t class_for_block(size_t usable)
{
        if (usable < XP_BLOCK_CACHE_SMALLEST || usable > XP_BLOCK_CACHE_LARGEST)
                return XP_BLOCK_CACHE_CLASSES;
        return (usable - XP_BLOCK_CACHE_SMALLEST) / 16;
}

/* What a block of class c is counted as: the least usable size of the class. */
static size_t class_bytes(size_t c)
{
        return XP_BLOCK_CACHE_SMALLEST + 16 * c;
}

void *xp_block_cache_malloc(size_t size)
{
        size_t c = class_for_request(size);
        struct block *b;

        if (c == XP_BLOCK_CACHE_CLASSES || !cache.head[c])
                return malloc(size);
        b = cache.head[c];
        cache.head[c] = b->next;
        cache.count[c]--;
        cache.held--;
        cache.bytes -= class_bytes(c);
        return b;
}

void xp_block_cache_free(void *p)
{
        struct block *b = p;
        size_t c;

        if (!p)
                return;
        c = class_for_block(malloc_usable_size(p));
        if (c == XP_BLOCK_CACHE_CLASSES || cache.count[c] >= XP_BLOCK_CACHE_DEPTH ||
            cache.bytes + class_bytes(c) > XP_BLOCK_CACHE_BYTES || !registered()) {
                free(p);
                return;
        }
        b->next = cache.head[c];
        cache.head[c] = b;
        cache.count[c]++;
        cache.held++;
        cache.bytes += class_bytes(c);
}

size_t xp_block_cache_held(void)
{
        return cache.held;
}

size_t xp_block_cache_held_bytes(void)
{
        return cache.bytes;
}
