/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The per-thread cache of small blocks (xpool/blockcache.h): what it hands out holds the size
 * asked for, it keeps at most its depth, passes large blocks and NULL through, and what a thread
 * holds is freed when it exits (the ASan build's leak check would name the blocks otherwise),
 * all threads together hold at most the process's bound, what a full class gives up goes to the
 * depot that all threads share and comes back from it, and a second free of a held block aborts.
 */
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "xpool/blockcache.h"

static int drain_after(void **state)
{
        (void)state;
        xp_block_cache_drain_all();
        assert_int_equal(xp_block_cache_held(), 0);
        assert_int_equal(xp_block_cache_depot_held(), 0);
        assert_int_equal(xp_block_cache_held_bytes(), 0);
        /* no other thread lives between tests: nothing of the process's bound stays reserved */
        assert_int_equal(xp_block_cache_process_reserved(), 0);
        return 0;
}

/* A freed block is the next one handed out for a size it holds. */
static void reused(void **state)
{
        void *a = xp_block_cache_malloc(40), *b;

        (void)state;
        assert_non_null(a);
        xp_block_cache_free(a);
        assert_int_equal(xp_block_cache_held(), 1);
        b = xp_block_cache_malloc(40);
        assert_ptr_equal(a, b);
        assert_int_equal(xp_block_cache_held(), 0);
        memset(b, 0xab, 40);
        xp_block_cache_free(b);
}

/* Whatever the mix of sizes, every block handed out holds what was asked: written in full
 * (ASan names an overflow), and its usable size says so. */
static void every_block_holds_its_size(void **state)
{
        void *live[64] = {0};
        unsigned seed = 25;

        (void)state;
        for (int i = 0; i < 20000; i++) {
                size_t slot = (size_t)rand_r(&seed) % 64;
                size_t size = (size_t)rand_r(&seed) % (XP_BLOCK_CACHE_LARGEST + 64);

                xp_block_cache_free(live[slot]);
                live[slot] = xp_block_cache_malloc(size);
                assert_non_null(live[slot]);
                assert_true(malloc_usable_size(live[slot]) >= size);
                memset(live[slot], (int)i, size);
        }
        for (size_t i = 0; i < 64; i++)
                xp_block_cache_free(live[i]);
        assert_true(xp_block_cache_held() <= XP_BLOCK_CACHE_DEPTH * XP_BLOCK_CACHE_CLASSES);
}

/* At most its depth of a size class; the rest go back to malloc at once. */
static void depth_bounded(void **state)
{
        enum {
                N = 3 * XP_BLOCK_CACHE_DEPTH
        };
        void *blocks[N];

        (void)state;
        for (size_t i = 0; i < N; i++)
                assert_non_null(blocks[i] = calloc(1, 32));
        for (size_t i = 0; i < N; i++)
                xp_block_cache_free(blocks[i]);
        /* past its depth a class gives batches to the depot, and none goes to free() (30 KiB
         * in all, below the thread's bytes) */
        assert_true(xp_block_cache_held() <= 2 * XP_BLOCK_CACHE_DEPTH);
        assert_true(xp_block_cache_depot_held() >= N - 2 * XP_BLOCK_CACHE_DEPTH);
        assert_int_equal(xp_block_cache_held() + xp_block_cache_depot_held(), N);
}

/* At most its bytes in all, whatever the classes (two here, each below its depth). */
static void bytes_bounded(void **state)
{
        enum {
                N = 2 * XP_BLOCK_CACHE_BYTES / XP_BLOCK_CACHE_LARGEST
        };
        void *blocks[N];
        size_t fits[N];

        (void)state;
        for (size_t i = 0; i < N; i++) {
                assert_non_null(blocks[i] = calloc(1, XP_BLOCK_CACHE_LARGEST - 20 * (1 + i % 2)));
                /* the largest request its size class serves */
                fits[i] = XP_BLOCK_CACHE_SMALLEST +
                          16 * ((malloc_usable_size(blocks[i]) - XP_BLOCK_CACHE_SMALLEST) / 16);
        }
        for (size_t i = 0; i < N; i++)
                xp_block_cache_free(blocks[i]);
        assert_true(xp_block_cache_held() < N);
        assert_true(xp_block_cache_held_bytes() <= XP_BLOCK_CACHE_BYTES);
        /* past its bytes the thread gave batches to the depot rather than free() its blocks;
         * only a block whose class held less than a batch to give went to free() */
        assert_true(xp_block_cache_depot_held() > 0);
        assert_true(xp_block_cache_held() + xp_block_cache_depot_held() >=
                    N - 2 * XP_BLOCK_CACHE_BATCH);
        /* the counted bytes fall as the blocks are handed out again, the depot's included */
        for (size_t i = 0; i < N; i++)
                assert_non_null(blocks[i] = xp_block_cache_malloc(fits[i]));
        assert_true(xp_block_cache_held() + xp_block_cache_depot_held() < N / 8);
        assert_true(xp_block_cache_held_bytes() <= XP_BLOCK_CACHE_BYTES);
        for (size_t i = 0; i < N; i++)
                free(blocks[i]);
}

/* Large blocks, a zero size and NULL pass through to libc. */
static void passed_through(void **state)
{
        void *big = xp_block_cache_malloc(XP_BLOCK_CACHE_LARGEST + 1);

        (void)state;
        assert_non_null(big);
        xp_block_cache_free(big);
        assert_int_equal(xp_block_cache_held(), 0);
        xp_block_cache_free(NULL);
        assert_int_equal(xp_block_cache_held(), 0);
        /* malloc(0)'s block, if any, is as freeable through the cache as any other */
        xp_block_cache_free(xp_block_cache_malloc(0));
}

/* The largest request the size class of block a serves. */
static size_t largest_request_served(void *a)
{
        return XP_BLOCK_CACHE_SMALLEST +
               16 * ((malloc_usable_size(a) - XP_BLOCK_CACHE_SMALLEST) / 16);
}

/* Its blocks are malloc()'s: free() takes one it handed out, and it takes one calloc() made
 * (the tests' own blocks are calloc()'s: the double free check reads a block's second word,
 * which valgrind would otherwise report as never written). */
static void plain_blocks(void **state)
{
        void *a = calloc(1, 100), *b;
        size_t fits;

        (void)state;
        assert_non_null(a);
        fits = largest_request_served(a);
        xp_block_cache_free(a);
        b = xp_block_cache_malloc(fits);
        assert_ptr_equal(a, b);
        free(b);
        assert_int_equal(xp_block_cache_held(), 0);
}

static void *free_and_exit(void *arg)
{
        void **blocks = arg;

        for (size_t i = 0; blocks[i]; i++)
                xp_block_cache_free(blocks[i]);
        return (void *)(uintptr_t)xp_block_cache_held();
}

/* Blocks made by one thread and freed by another are held by the second, and freed when it
 * exits. */
static void freed_at_thread_exit(void **state)
{
        void *blocks[33] = {0};
        pthread_t t;
        void *held;

        (void)state;
        for (size_t i = 0; i < 32; i++)
                assert_non_null(blocks[i] = xp_block_cache_malloc(24 + 4 * i));
        assert_int_equal(pthread_create(&t, NULL, free_and_exit, blocks), 0);
        assert_int_equal(pthread_join(t, &held), 0);
        assert_int_equal((uintptr_t)held, 32);
        assert_int_equal(xp_block_cache_held(), 0);
}

enum {
        /* twice the threads whose full caches make the process's bound */
        FILLERS = 2 * XP_BLOCK_CACHE_PROCESS_BYTES / XP_BLOCK_CACHE_BYTES,
        /* blocks of FILL_SIZE that fill a thread's cache past its own bound */
        FILL_SIZE = 200,
        FILL_BLOCKS = XP_BLOCK_CACHE_BYTES / (FILL_SIZE - 16) + 8,
};

struct filler {
        pthread_barrier_t *filled, *checked;
        size_t held_bytes;
};

/* Frees a full cache's worth of blocks through the cache, and exits once the main thread has
 * counted what it holds. */
static void *fill_and_wait(void *arg)
{
        struct filler *f = arg;
        void *blocks[FILL_BLOCKS];

        for (size_t i = 0; i < FILL_BLOCKS; i++)
                blocks[i] = calloc(1, FILL_SIZE);
        for (size_t i = 0; i < FILL_BLOCKS; i++)
                xp_block_cache_free(blocks[i]);
        f->held_bytes = xp_block_cache_held_bytes();
        pthread_barrier_wait(f->filled);
        pthread_barrier_wait(f->checked);
        return NULL;
}

/* Many threads each filling their cache hold at most the process's bound together, use most of
 * it, and give it all back as they exit. */
static void process_bounded(void **state)
{
        pthread_barrier_t filled, checked;
        struct filler fillers[FILLERS];
        pthread_t threads[FILLERS];
        size_t held = 0;

        (void)state;
        assert_int_equal(pthread_barrier_init(&filled, NULL, FILLERS + 1), 0);
        assert_int_equal(pthread_barrier_init(&checked, NULL, FILLERS + 1), 0);
        for (size_t i = 0; i < FILLERS; i++) {
                fillers[i] = (struct filler){.filled = &filled, .checked = &checked};
                assert_int_equal(pthread_create(&threads[i], NULL, fill_and_wait, &fillers[i]), 0);
        }
        pthread_barrier_wait(&filled);
        for (size_t i = 0; i < FILLERS; i++) {
                assert_true(fillers[i].held_bytes <= XP_BLOCK_CACHE_BYTES);
                held += fillers[i].held_bytes;
        }
        /* what the threads gave the depot counts in the bound too */
        held += xp_block_cache_depot_held() * FILL_SIZE;
        assert_true(held <= xp_block_cache_process_reserved());
        assert_true(xp_block_cache_process_reserved() <= XP_BLOCK_CACHE_PROCESS_BYTES);
        /* each thread leaves at most a share and a block of it unused */
        assert_true(held + FILLERS * (XP_BLOCK_CACHE_SHARE + FILL_SIZE) >=
                    XP_BLOCK_CACHE_PROCESS_BYTES);
        pthread_barrier_wait(&checked);
        for (size_t i = 0; i < FILLERS; i++)
                assert_int_equal(pthread_join(threads[i], NULL), 0);
        /* the exited threads gave back all but what the depot holds (drain_after frees it) */
        assert_true(xp_block_cache_process_reserved() >= xp_block_cache_depot_held() * FILL_SIZE);
        assert_true(xp_block_cache_process_reserved() <=
                    xp_block_cache_depot_held() * (FILL_SIZE + 16));
        pthread_barrier_destroy(&filled);
        pthread_barrier_destroy(&checked);
}

/* A thread that empties its cache gives back what it reserved but at most two shares. */
static void reservation_given_back(void **state)
{
        enum {
                N = XP_BLOCK_CACHE_BYTES / 64
        };
        void *blocks[N];
        size_t fits[N];

        (void)state;
        for (size_t i = 0; i < N; i++) {
                assert_non_null(blocks[i] = calloc(1, 40));
                /* the largest request its size class serves (a reused block may be larger) */
                fits[i] = XP_BLOCK_CACHE_SMALLEST +
                          16 * ((malloc_usable_size(blocks[i]) - XP_BLOCK_CACHE_SMALLEST) / 16);
        }
        for (size_t i = 0; i < N; i++)
                xp_block_cache_free(blocks[i]);
        assert_true(xp_block_cache_process_reserved() >= xp_block_cache_held_bytes());
        assert_true(xp_block_cache_process_reserved() > 2 * XP_BLOCK_CACHE_SHARE);
        for (size_t i = 0; i < N; i++)
                blocks[i] = xp_block_cache_malloc(fits[i]);
        assert_int_equal(xp_block_cache_held(), 0);
        assert_true(xp_block_cache_process_reserved() <= 2 * XP_BLOCK_CACHE_SHARE);
        for (size_t i = 0; i < N; i++)
                free(blocks[i]);
}

static void *free_past_depth(void *arg)
{
        void **blocks = arg;

        for (size_t i = 0; blocks[i]; i++)
                xp_block_cache_free(blocks[i]);
        return NULL;
}

/* What a thread that frees more than it makes gives up, another thread gets back: the store's
 * leader frees the trees that other requests' threads made. */
static void depot_feeds_other_threads(void **state)
{
        enum {
                N = 2 * XP_BLOCK_CACHE_DEPTH
        };
        void *blocks[N + 1] = {0}, *p;
        size_t in_depot;
        pthread_t t;

        (void)state;
        for (size_t i = 0; i < N; i++)
                assert_non_null(blocks[i] = xp_block_cache_malloc(24));
        assert_int_equal(pthread_create(&t, NULL, free_past_depth, blocks), 0);
        assert_int_equal(pthread_join(t, NULL), 0);
        in_depot = xp_block_cache_depot_held();
        assert_true(in_depot >= N - XP_BLOCK_CACHE_DEPTH);
        p = xp_block_cache_malloc(24);
        assert_non_null(p);
        assert_int_equal(xp_block_cache_depot_held(), in_depot - XP_BLOCK_CACHE_BATCH);
        assert_int_equal(xp_block_cache_held(), XP_BLOCK_CACHE_BATCH - 1);
        free(p);
}

/* A request whose class is empty gets a block of the next class: glibc hands out blocks a class
 * larger than asked for, and they were filed there. */
static void next_class_serves(void **state)
{
        void *a = calloc(1, 100), *b;
        size_t fits;

        (void)state;
        assert_non_null(a);
        fits = largest_request_served(a);
        xp_block_cache_free(a);
        b = xp_block_cache_malloc(fits - 16);
        assert_ptr_equal(a, b);
        free(b);
        assert_int_equal(xp_block_cache_held(), 0);
}

/* A second free of a block it holds aborts, as glibc's free() does, rather than filing the
 * block twice for two owners; freeing it again after it was handed out is no double free. */
static void double_free_aborts(void **state)
{
        void *p = xp_block_cache_malloc(40);
        int status;
        pid_t child;

        (void)state;
        xp_block_cache_free(p);
        assert_ptr_equal(xp_block_cache_malloc(40), p);
        xp_block_cache_free(p);
        child = fork();
        assert_true(child >= 0);
        if (child == 0) {
                int devnull = open("/dev/null", O_WRONLY);

                if (devnull >= 0)
                        dup2(devnull, STDERR_FILENO);
                xp_block_cache_free(p);
                _exit(0);
        }
        assert_int_equal(waitpid(child, &status, 0), child);
        assert_true(WIFSIGNALED(status));
        assert_int_equal(WTERMSIG(status), SIGABRT);
        assert_int_equal(xp_block_cache_held(), 1);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test_teardown(reused, drain_after),
            cmocka_unit_test_teardown(every_block_holds_its_size, drain_after),
            cmocka_unit_test_teardown(depth_bounded, drain_after),
            cmocka_unit_test_teardown(bytes_bounded, drain_after),
            cmocka_unit_test_teardown(passed_through, drain_after),
            cmocka_unit_test_teardown(plain_blocks, drain_after),
            cmocka_unit_test_teardown(freed_at_thread_exit, drain_after),
            cmocka_unit_test_teardown(process_bounded, drain_after),
            cmocka_unit_test_teardown(reservation_given_back, drain_after),
            cmocka_unit_test_teardown(depot_feeds_other_threads, drain_after),
            cmocka_unit_test_teardown(next_class_serves, drain_after),
            cmocka_unit_test_teardown(double_free_aborts, drain_after),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
