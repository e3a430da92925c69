/* SPDX-License-Identifier: Apache-2.0 */
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "xpool/blockcache.h"

/* A cached block's first bytes link it to the next of its class; the second word marks it as
 * cached (its address mixed in, so that no stale pointer or value left in a block matches), for
 * a second free() of it to be caught before it is filed, and handed out, twice. */
struct block {
        struct block *next;
        uintptr_t cached_mark;
        struct block *next_batch; /* the first block of a batch in the depot: the next batch */
};

#define CACHED_MARK 0x6b63616c62707878u /* "xxpblcak" */

struct block_cache {
        struct block *head[XP_BLOCK_CACHE_CLASSES];
        unsigned count[XP_BLOCK_CACHE_CLASSES];
        size_t held, bytes;
        size_t reserved; /* of the process's allowance: at least bytes, a multiple of a share */
        bool registered; /* the thread's exit drains it (pthread key below) */
};

static _Thread_local struct block_cache cache;

/* Batches of a class that threads gave up, for any thread to take. A block the store's leader
 * frees was made by the thread of another request: without it, the threads that free more than
 * they make filled their depth and freed the rest while the others missed (half of a create's
 * blocks, docs/store.md "What a create costs"). What it holds stays reserved of the process's
 * bound: a thread hands its reservation of a batch over with the batch, and takes it back. */
struct depot_class {
        pthread_mutex_t lock;
        struct block *batches; /* linked by their first block's next_batch */
        atomic_size_t count;   /* batches: written under the lock, read before taking it */
};

static struct depot_class depot[XP_BLOCK_CACHE_CLASSES];
static pthread_once_t depot_once = PTHREAD_ONCE_INIT;
static pthread_key_t exit_key;
static bool exit_key_made;
static pthread_once_t exit_key_once = PTHREAD_ONCE_INIT;
/* What all threads have reserved of XP_BLOCK_CACHE_PROCESS_BYTES, a share at a time, so that
 * a thread touches this shared word once per share filled or emptied, not per block. */
static atomic_size_t process_reserved;

_Static_assert(XP_BLOCK_CACHE_SMALLEST >= sizeof(struct block), "a block holds its links, mark");
_Static_assert(XP_BLOCK_CACHE_BATCH <= XP_BLOCK_CACHE_DEPTH, "a full class gives a batch");
_Static_assert(XP_BLOCK_CACHE_BYTES % XP_BLOCK_CACHE_SHARE == 0, "a thread's bound in shares");

static uintptr_t mark_of(const struct block *b)
{
        return CACHED_MARK ^ (uintptr_t)b;
}

/* Before free(): a plain store there is dead to the compiler, and malloc() could hand the block
 * out still marked, for its first xp_block_cache_free() to be taken for a second. */
static void unmark_before_free(struct block *b)
{
        *(volatile uintptr_t *)&b->cached_mark = 0;
}

/* Gives the process's allowance back until the thread holds at most `keep` shares spare. */
static void give_back_shares(size_t keep)
{
        size_t spare = cache.reserved - cache.bytes;

        if (spare < (keep + 1) * XP_BLOCK_CACHE_SHARE)
                return;
        spare -= spare % XP_BLOCK_CACHE_SHARE;
        spare -= keep * XP_BLOCK_CACHE_SHARE;
        cache.reserved -= spare;
        atomic_fetch_sub_explicit(&process_reserved, spare, memory_order_relaxed);
}

/* Takes one more share of the process's allowance; false when all of it is reserved. */
static bool reserve_share(void)
{
        size_t now = atomic_load_explicit(&process_reserved, memory_order_relaxed);

        do {
                if (now + XP_BLOCK_CACHE_SHARE > XP_BLOCK_CACHE_PROCESS_BYTES)
                        return false;
        } while (!atomic_compare_exchange_weak_explicit(&process_reserved,
                                                        &now,
                                                        now + XP_BLOCK_CACHE_SHARE,
                                                        memory_order_relaxed,
                                                        memory_order_relaxed));
        cache.reserved += XP_BLOCK_CACHE_SHARE;
        return true;
}

static void free_chain(struct block *b)
{
        while (b) {
                struct block *next = b->next;

                unmark_before_free(b);
                free(b);
                b = next;
        }
}

static void init_depot(void)
{
        for (size_t c = 0; c < XP_BLOCK_CACHE_CLASSES; c++)
                pthread_mutex_init(&depot[c].lock, NULL);
}

static size_t class_bytes(size_t c);

/* Frees the depot's batches and gives their reservation back. */
static void drain_depot(void)
{
        pthread_once(&depot_once, init_depot);
        for (size_t c = 0; c < XP_BLOCK_CACHE_CLASSES; c++) {
                struct block *batches;
                size_t count;

                pthread_mutex_lock(&depot[c].lock);
                batches = depot[c].batches;
                count = atomic_load_explicit(&depot[c].count, memory_order_relaxed);
                depot[c].batches = NULL;
                atomic_store_explicit(&depot[c].count, 0, memory_order_relaxed);
                pthread_mutex_unlock(&depot[c].lock);
                while (batches) {
                        struct block *next = batches->next_batch;

                        free_chain(batches);
                        batches = next;
                }
                atomic_fetch_sub_explicit(&process_reserved,
                                          count * XP_BLOCK_CACHE_BATCH * class_bytes(c),
                                          memory_order_relaxed);
        }
}

void xp_block_cache_drain_all(void)
{
        xp_block_cache_drain();
        drain_depot();
}

void xp_block_cache_drain(void)
{
        for (size_t c = 0; c < XP_BLOCK_CACHE_CLASSES; c++) {
                while (cache.head[c]) {
                        struct block *b = cache.head[c];

                        cache.head[c] = b->next;
                        unmark_before_free(b);
                        free(b);
                }
                cache.count[c] = 0;
        }
        cache.held = cache.bytes = 0;
        /* all of it: batches taken from the depot leave it a part of a share */
        atomic_fetch_sub_explicit(&process_reserved, cache.reserved, memory_order_relaxed);
        cache.reserved = 0;
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

/* Under the class's lock: a plain store, not a locked instruction, for the readers outside it. */
static void add_batches(size_t c, int delta)
{
        size_t now = atomic_load_explicit(&depot[c].count, memory_order_relaxed);

        atomic_store_explicit(&depot[c].count, now + (size_t)delta, memory_order_relaxed);
}

/* Hands the class's first XP_BLOCK_CACHE_BATCH blocks, still marked as cached, to the depot. */
static void give_batch(size_t c)
{
        struct block *first = cache.head[c], *last = first;
        size_t bytes = XP_BLOCK_CACHE_BATCH * class_bytes(c);

        for (size_t i = 1; i < XP_BLOCK_CACHE_BATCH; i++)
                last = last->next;
        cache.head[c] = last->next;
        last->next = NULL;
        cache.count[c] -= XP_BLOCK_CACHE_BATCH;
        cache.held -= XP_BLOCK_CACHE_BATCH;
        cache.bytes -= bytes;
        cache.reserved -= bytes;
        pthread_once(&depot_once, init_depot);
        pthread_mutex_lock(&depot[c].lock);
        first->next_batch = depot[c].batches;
        depot[c].batches = first;
        add_batches(c, 1);
        pthread_mutex_unlock(&depot[c].lock);
}

/* Takes a batch of class c from the depot into the empty class; false when it has none. */
static bool take_batch(size_t c)
{
        struct block *first;
        size_t bytes = XP_BLOCK_CACHE_BATCH * class_bytes(c);

        /* most misses find the depot empty: no lock for them */
        if (atomic_load_explicit(&depot[c].count, memory_order_relaxed) == 0)
                return false;
        pthread_once(&depot_once, init_depot);
        pthread_mutex_lock(&depot[c].lock);
        first = depot[c].batches;
        if (first) {
                depot[c].batches = first->next_batch;
                add_batches(c, -1);
        }
        pthread_mutex_unlock(&depot[c].lock);
        if (!first)
                return false;
        if (!registered()) { /* its exit would not free the batch */
                free_chain(first);
                atomic_fetch_sub_explicit(&process_reserved, bytes, memory_order_relaxed);
                return false;
        }
        cache.head[c] = first;
        cache.count[c] = XP_BLOCK_CACHE_BATCH;
        cache.held += XP_BLOCK_CACHE_BATCH;
        cache.bytes += bytes;
        cache.reserved += bytes;
        return true;
}

/* A block of the classes with its mark's word written, so that its free reads no byte that was
 * never written (valgrind would name each). Asked for at least that word, which a sanitizer
 * counts as the block only when asked for (glibc's least block holds 24 bytes anyway). */
static void *malloc_unmarked(size_t size)
{
        struct block *b = malloc(size < sizeof(*b) ? sizeof(*b) : size);

        if (b)
                b->cached_mark = 0;
        return b;
}

/* For an empty class c: c or the next that holds a block, taken from the depot when the thread
 * holds none; CLASSES when neither does. glibc hands out a block up to a class larger than
 * asked for when the rest would be too small to split off, so blocks drift a class up: without
 * taking the next class, the depot filled with blocks of the larger classes while the smaller
 * missed. */
static size_t class_holding(size_t c)
{
        size_t next = c + 1 < XP_BLOCK_CACHE_CLASSES ? c + 1 : c;

        if (cache.head[next])
                return next;
        if (take_batch(c))
                return c;
        if (next != c && take_batch(next))
                return next;
        return XP_BLOCK_CACHE_CLASSES;
}

void *xp_block_cache_malloc(size_t size)
{
        size_t c = class_for_request(size);
        struct block *b;

        if (c == XP_BLOCK_CACHE_CLASSES)
                return malloc(size);
        if (!cache.head[c])
                c = class_holding(c);
        if (c == XP_BLOCK_CACHE_CLASSES)
                return malloc_unmarked(size);
        b = cache.head[c];
        cache.head[c] = b->next;
        b->cached_mark = 0;
        cache.count[c]--;
        cache.held--;
        cache.bytes -= class_bytes(c);
        if (cache.reserved - cache.bytes > 2 * XP_BLOCK_CACHE_SHARE)
                give_back_shares(1);
        return b;
}

/* What glibc does on a double free: say so and abort, before the block is handed out twice. */
static _Noreturn void double_free(const void *p)
{
        char line[96];
        int n = snprintf(line, sizeof(line), "xp_block_cache_free(): double free of %p\n", p);

        if (n > 0)
                (void)!write(STDERR_FILENO, line, (size_t)n < sizeof(line) ? (size_t)n : 0);
        abort();
}

/* Whether the thread may keep c's block: below its bounds, and the process's. */
static bool may_keep(size_t c)
{
        if (c == XP_BLOCK_CACHE_CLASSES || cache.count[c] >= XP_BLOCK_CACHE_DEPTH ||
            cache.bytes + class_bytes(c) > XP_BLOCK_CACHE_BYTES)
                return false;
        if (cache.bytes + class_bytes(c) > cache.reserved && !reserve_share())
                return false;
        return registered();
}

void xp_block_cache_free(void *p)
{
        struct block *b = p;
        size_t c;

        if (!p)
                return;
        c = class_for_block(malloc_usable_size(p));
        if (c != XP_BLOCK_CACHE_CLASSES && b->cached_mark == mark_of(b))
                double_free(p);
        if (c != XP_BLOCK_CACHE_CLASSES && cache.count[c] >= XP_BLOCK_CACHE_BATCH &&
            (cache.count[c] >= XP_BLOCK_CACHE_DEPTH ||
             cache.bytes + class_bytes(c) > XP_BLOCK_CACHE_BYTES))
                give_batch(c);
        if (!may_keep(c)) {
                free(p);
                return;
        }
        b->next = cache.head[c];
        b->cached_mark = mark_of(b);
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

size_t xp_block_cache_depot_held(void)
{
        size_t held = 0;

        pthread_once(&depot_once, init_depot);
        for (size_t c = 0; c < XP_BLOCK_CACHE_CLASSES; c++) {
                pthread_mutex_lock(&depot[c].lock);
                held += atomic_load_explicit(&depot[c].count, memory_order_relaxed) *
                        XP_BLOCK_CACHE_BATCH;
                pthread_mutex_unlock(&depot[c].lock);
        }
        return held;
}

size_t xp_block_cache_process_reserved(void)
{
        return atomic_load_explicit(&process_reserved, memory_order_relaxed);
}
