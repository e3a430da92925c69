/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The per-thread cache of small blocks (xpool/blockcache.h): what it hands out holds the size
 * asked for, it keeps at most its depth, passes large blocks and NULL through, and what a thread
 * holds is freed when it exits (the ASan build's leak check would name the blocks otherwise).
 */
#include <malloc.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "xpool/blockcache.h"

static int drain_after(void **state)
{
        (void)state;
        xp_block_cache_drain();
        assert_int_equal(xp_block_cache_held(), 0);
        assert_int_equal(xp_block_cache_held_bytes(), 0);
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
        size_t per_class[XP_BLOCK_CACHE_CLASSES] = {0}, expected = 0;
        void *blocks[N];

        (void)state;
        /* malloc(32) may hand out a larger block (one it did not split): classes counted */
        for (size_t i = 0; i < N; i++) {
                assert_non_null(blocks[i] = malloc(32));
                per_class[(malloc_usable_size(blocks[i]) - XP_BLOCK_CACHE_SMALLEST) / 16]++;
        }
        for (size_t c = 0; c < XP_BLOCK_CACHE_CLASSES; c++)
                expected +=
                    per_class[c] < XP_BLOCK_CACHE_DEPTH ? per_class[c] : XP_BLOCK_CACHE_DEPTH;
        for (size_t i = 0; i < N; i++)
                xp_block_cache_free(blocks[i]);
        assert_int_equal(xp_block_cache_held(), expected);
        assert_true(expected < N);
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
                assert_non_null(blocks[i] = malloc(XP_BLOCK_CACHE_LARGEST - 20 * (1 + i % 2)));
                /* the largest request its size class serves */
                fits[i] = XP_BLOCK_CACHE_SMALLEST +
                          16 * ((malloc_usable_size(blocks[i]) - XP_BLOCK_CACHE_SMALLEST) / 16);
        }
        for (size_t i = 0; i < N; i++)
                xp_block_cache_free(blocks[i]);
        assert_true(xp_block_cache_held() < N);
        assert_true(xp_block_cache_held_bytes() <= XP_BLOCK_CACHE_BYTES);
        assert_true(xp_block_cache_held_bytes() > XP_BLOCK_CACHE_BYTES - XP_BLOCK_CACHE_LARGEST);
        /* the counted bytes fall to nothing as the blocks are handed out again */
        for (size_t i = 0; i < N; i++)
                blocks[i] = xp_block_cache_malloc(fits[i]);
        assert_int_equal(xp_block_cache_held(), 0);
        assert_int_equal(xp_block_cache_held_bytes(), 0);
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

/* Its blocks are malloc()'s: free() takes one it handed out, and it takes one malloc() made. */
static void plain_blocks(void **state)
{
        void *a = malloc(100), *b;
        size_t fits;

        (void)state;
        assert_non_null(a);
        /* the largest request its size class serves */
        fits =
            XP_BLOCK_CACHE_SMALLEST + 16 * ((malloc_usable_size(a) - XP_BLOCK_CACHE_SMALLEST) / 16);
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
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
