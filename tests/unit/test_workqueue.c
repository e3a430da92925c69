/* SPDX-License-Identifier: Apache-2.0 */
/* The controllers' work queue (src/controller/workqueue.c) on a clock the test moves. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "controller/clock.h"
#include "controller/workqueue.h"

static int64_t fake_ms(void *userdata)
{
        return *(int64_t *)userdata;
}

static int64_t fake_wall(void *userdata)
{
        return *(int64_t *)userdata / 1000;
}

struct fixture {
        int64_t now;
        struct xp_clock clock;
        struct xp_workqueue *queue;
};

static int setup(void **state)
{
        struct fixture *f = calloc(1, sizeof *f);

        assert_non_null(f);
        f->now = 1000;
        f->clock =
            (struct xp_clock){.monotonic_ms = fake_ms, .wall_s = fake_wall, .userdata = &f->now};
        struct xp_workqueue_options options = {
            .clock = &f->clock,
            .base_delay_ms = 10,
            .max_delay_ms = 100,
        };
        assert_int_equal(xp_workqueue_new(&options, &f->queue), 0);
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        struct fixture *f = *state;

        xp_workqueue_free(f->queue);
        free(f);
        return 0;
}

/* The next key, which the test expects to be want (NULL: none due). */
static void expect_get(struct xp_workqueue *queue, const char *want)
{
        const char *key = NULL;
        int r = xp_workqueue_get(queue, &key);

        if (!want) {
                assert_int_equal(r, 0);
                return;
        }
        assert_int_equal(r, 1);
        assert_string_equal(key, want);
}

static void fifo_and_dedup(void **state)
{
        struct fixture *f = *state;

        expect_get(f->queue, NULL);
        assert_int_equal(xp_workqueue_next_ms(f->queue), -1);
        assert_int_equal(xp_workqueue_add(f->queue, "a"), 0);
        assert_int_equal(xp_workqueue_add(f->queue, "b"), 0);
        assert_int_equal(xp_workqueue_add(f->queue, "a"), 0); /* queued already */
        assert_int_equal(xp_workqueue_next_ms(f->queue), 0);
        expect_get(f->queue, "a");
        xp_workqueue_done(f->queue, "a");
        expect_get(f->queue, "b");
        xp_workqueue_done(f->queue, "b");
        expect_get(f->queue, NULL);
}

static void added_while_processing(void **state)
{
        struct fixture *f = *state;

        assert_int_equal(xp_workqueue_add(f->queue, "a"), 0);
        expect_get(f->queue, "a");
        /* not handed out twice at once: it comes back when the work is done, once */
        assert_int_equal(xp_workqueue_add(f->queue, "a"), 0);
        assert_int_equal(xp_workqueue_add(f->queue, "a"), 0);
        expect_get(f->queue, NULL);
        xp_workqueue_done(f->queue, "a");
        expect_get(f->queue, "a");
        xp_workqueue_done(f->queue, "a");
        expect_get(f->queue, NULL);
}

static void delayed_keys(void **state)
{
        struct fixture *f = *state;

        assert_int_equal(xp_workqueue_add_after(f->queue, "late", 50), 0);
        assert_int_equal(xp_workqueue_add_after(f->queue, "soon", 20), 0);
        assert_int_equal(xp_workqueue_add_after(f->queue, "late", 80), 0); /* earlier time kept */
        expect_get(f->queue, NULL);
        assert_int_equal(xp_workqueue_next_ms(f->queue), 20);
        f->now += 20;
        assert_int_equal(xp_workqueue_next_ms(f->queue), 0);
        expect_get(f->queue, "soon");
        xp_workqueue_done(f->queue, "soon");
        expect_get(f->queue, NULL);
        assert_int_equal(xp_workqueue_next_ms(f->queue), 30);
        /* an earlier time wins over the one waiting */
        assert_int_equal(xp_workqueue_add_after(f->queue, "late", 5), 0);
        f->now += 5;
        expect_get(f->queue, "late");
        xp_workqueue_done(f->queue, "late");
        f->now += 100;
        expect_get(f->queue, NULL); /* once only */
        assert_int_equal(xp_workqueue_next_ms(f->queue), -1);
        /* no delay is now */
        assert_int_equal(xp_workqueue_add_after(f->queue, "now", 0), 0);
        expect_get(f->queue, "now");
        xp_workqueue_done(f->queue, "now");
}

static void backoff_doubles_until_forgotten(void **state)
{
        struct fixture *f = *state;
        const int64_t want[] = {10, 20, 40, 80, 100, 100};

        for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
                expect_get(f->queue, NULL);
                assert_int_equal(xp_workqueue_add_rate_limited(f->queue, "k"), 0);
                assert_int_equal(xp_workqueue_next_ms(f->queue), want[i]);
                f->now += want[i] - 1;
                expect_get(f->queue, NULL);
                f->now += 1;
                expect_get(f->queue, "k");
                xp_workqueue_done(f->queue, "k");
        }
        /* success: the next failure starts again at the base delay */
        xp_workqueue_forget(f->queue, "k");
        assert_int_equal(xp_workqueue_add_rate_limited(f->queue, "k"), 0);
        assert_int_equal(xp_workqueue_next_ms(f->queue), 10);
        f->now += 10;
        expect_get(f->queue, "k");
        xp_workqueue_done(f->queue, "k");
        /* per key: another key has its own count, the first one keeps its own */
        assert_int_equal(xp_workqueue_add_rate_limited(f->queue, "other"), 0);
        assert_int_equal(xp_workqueue_next_ms(f->queue), 10);
        assert_int_equal(xp_workqueue_add_rate_limited(f->queue, "k"), 0);
        f->now += 10;
        expect_get(f->queue, "other");
        xp_workqueue_done(f->queue, "other");
        expect_get(f->queue, NULL);
        assert_int_equal(xp_workqueue_next_ms(f->queue), 10);
        xp_workqueue_forget(f->queue, "unknown"); /* harmless */
}

static void many_keys(void **state)
{
        struct fixture *f = *state;
        char key[32];

        for (int i = 0; i < 1000; i++) {
                snprintf(key, sizeof key, "ns/pod-%d", i);
                assert_int_equal(i % 2 ? xp_workqueue_add(f->queue, key)
                                       : xp_workqueue_add_after(f->queue, key, i + 1),
                                 0);
        }
        f->now += 1000;
        for (int i = 0; i < 1000; i++) {
                const char *got;

                assert_int_equal(xp_workqueue_get(f->queue, &got), 1);
                xp_workqueue_done(f->queue, got);
        }
        expect_get(f->queue, NULL);
        assert_int_equal(xp_workqueue_next_ms(f->queue), -1);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test_setup_teardown(fifo_and_dedup, setup, teardown),
            cmocka_unit_test_setup_teardown(added_while_processing, setup, teardown),
            cmocka_unit_test_setup_teardown(delayed_keys, setup, teardown),
            cmocka_unit_test_setup_teardown(backoff_doubles_until_forgotten, setup, teardown),
            cmocka_unit_test_setup_teardown(many_keys, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
