/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Watch batches (src/server/watch_shared.c): a batch offered is found by its kind, namespace and
 * version only, as a copy; the first offer of a key stays; empty batches are not kept; slots are
 * taken over in turn, and a batch a watch still holds outlives its slot and the whole set; the
 * slots keep a total of bytes at most, oldest dropped first, and drop a batch past its age.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "server/watch_shared.h"

/* Offers the lines data read after since (through since + 3). */
static void
offer(struct watch_batches *b, const char *plural, const char *ns, uint64_t since, const char *data)
{
        struct watch_batch what = {.plural = plural,
                                   .namespace = ns,
                                   .since = since,
                                   .through = since + 3,
                                   .drained = true,
                                   .len = strlen(data),
                                   .data = data};

        watch_batch_offer(b, &what);
}

static void found_by_key_only(void **state)
{
        struct watch_batches *b;
        struct watch_batch *got;
        char lines[] = "{\"type\":\"ADDED\"}\n";

        (void)state;
        assert_int_equal(watch_batches_new(&b), 0);
        offer(b, "pods", "team", 7, lines);
        lines[0] = 'X'; /* the batch is a copy */
        got = watch_batch_find(b, "pods", "team", 7);
        assert_non_null(got);
        assert_int_equal(got->len, strlen(lines));
        assert_memory_equal(got->data, "{\"type\":\"ADDED\"}\n", got->len);
        assert_int_equal(got->through, 10);
        assert_true(got->drained);
        assert_string_equal(got->plural, "pods");
        assert_string_equal(got->namespace, "team");
        watch_batch_release(got);
        assert_null(watch_batch_find(b, "pods", "team", 8));
        assert_null(watch_batch_find(b, "pods", "other", 7));
        assert_null(watch_batch_find(b, "pods", NULL, 7));
        assert_null(watch_batch_find(b, "nodes", "team", 7));
        watch_batches_free(b);
}

static void every_namespace_is_its_own_key(void **state)
{
        struct watch_batches *b;
        struct watch_batch *got;

        (void)state;
        assert_int_equal(watch_batches_new(&b), 0);
        offer(b, "pods", NULL, 7, "all\n");
        assert_null(watch_batch_find(b, "pods", "team", 7));
        got = watch_batch_find(b, "pods", NULL, 7);
        assert_non_null(got);
        assert_null(got->namespace);
        assert_memory_equal(got->data, "all\n", 4);
        watch_batch_release(got);
        watch_batches_free(b);
}

static void first_offer_stays_and_empty_is_not_kept(void **state)
{
        struct watch_batches *b;
        struct watch_batch *got;

        (void)state;
        assert_int_equal(watch_batches_new(&b), 0);
        offer(b, "pods", "team", 7, "first\n");
        offer(b, "pods", "team", 7, "second, later\n");
        got = watch_batch_find(b, "pods", "team", 7);
        assert_non_null(got);
        assert_int_equal(got->len, 6);
        assert_memory_equal(got->data, "first\n", 6);
        watch_batch_release(got);
        offer(b, "pods", "team", 9, "");
        assert_null(watch_batch_find(b, "pods", "team", 9));
        watch_batches_free(b);
}

/* Slots are taken over oldest first; a held batch lives on (ASan would see a use after free). */
static void held_batch_outlives_its_slot(void **state)
{
        struct watch_batches *b;
        struct watch_batch *held, *got;
        char text[32];
        int oldest_gone_at = -1;

        (void)state;
        assert_int_equal(watch_batches_new(&b), 0);
        offer(b, "pods", "team", 1, "one\n");
        held = watch_batch_find(b, "pods", "team", 1);
        assert_non_null(held);
        for (int v = 2; v < 200 && oldest_gone_at < 0; v++) {
                snprintf(text, sizeof text, "line %d\n", v);
                offer(b, "pods", "team", (uint64_t)v, text);
                got = watch_batch_find(b, "pods", "team", 1);
                if (!got)
                        oldest_gone_at = v;
                watch_batch_release(got);
        }
        assert_true(oldest_gone_at > 2); /* kept for a while, then taken over */
        got = watch_batch_find(b, "pods", "team", (uint64_t)oldest_gone_at);
        assert_non_null(got); /* the newest is there */
        watch_batch_release(got);
        watch_batches_free(b);
        assert_memory_equal(held->data, "one\n", 4);
        watch_batch_release(held);
        watch_batch_release(NULL);
        watch_batches_free(NULL);
}

static bool has(struct watch_batches *b, uint64_t since)
{
        struct watch_batch *got = watch_batch_find(b, "pods", "team", since);

        watch_batch_release(got);
        return got != NULL;
}

/* 10 bytes a batch, 25 in all: the third offer drops the first, the fourth the second. */
static void total_bytes_capped_oldest_first(void **state)
{
        struct watch_batches *b;

        (void)state;
        assert_int_equal(watch_batches_new(&b), 0);
        watch_batches_set_limits(b, 25, 60000);
        offer(b, "pods", "team", 1, "123456789\n");
        offer(b, "pods", "team", 2, "123456789\n");
        assert_true(has(b, 1) && has(b, 2));
        offer(b, "pods", "team", 3, "123456789\n");
        assert_false(has(b, 1));
        assert_true(has(b, 2) && has(b, 3));
        offer(b, "pods", "team", 4, "123456789\n");
        assert_false(has(b, 2));
        assert_true(has(b, 3) && has(b, 4));
        offer(b, "pods", "team", 5, "a batch alone over the 25 bytes\n"); /* not kept */
        assert_false(has(b, 5));
        assert_true(has(b, 3) && has(b, 4));
        watch_batches_free(b);
}

/* A batch older than the age limit is gone at the next find, though no offer took its slot. */
static void old_batch_dropped(void **state)
{
        struct watch_batches *b;
        struct timespec pause = {.tv_nsec = 20 * 1000 * 1000};

        (void)state;
        assert_int_equal(watch_batches_new(&b), 0);
        watch_batches_set_limits(b, 1024, 5);
        offer(b, "pods", "team", 1, "one\n");
        nanosleep(&pause, NULL); /* 20 ms, past the 5 ms */
        assert_false(has(b, 1));
        watch_batches_set_limits(b, 1024, 60000);
        offer(b, "pods", "team", 2, "two\n");
        assert_true(has(b, 2));
        watch_batches_free(b);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(found_by_key_only),
            cmocka_unit_test(every_namespace_is_its_own_key),
            cmocka_unit_test(first_offer_stays_and_empty_is_not_kept),
            cmocka_unit_test(held_batch_outlives_its_slot),
            cmocka_unit_test(total_bytes_capped_oldest_first),
            cmocka_unit_test(old_batch_dropped),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
