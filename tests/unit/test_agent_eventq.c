/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The agent's Event queue: different Events are out together (so their writes share the
 * server's group commits), one Event's writes (its create, its counts) go one at a time in the
 * order queued, none is lost whatever the writes taken beside it became, and the queue is
 * bounded.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agent/eventq.h"

static struct xp_eventq *queue(size_t max)
{
        struct xp_eventq *q = NULL;

        assert_int_equal(xp_eventq_new(max, &q), 0);
        return q;
}

/* Write n of the Event named key. */
static void put(struct xp_eventq *q, const char *key, int n)
{
        struct xp_eventq_item *item = calloc(1, sizeof(*item));

        assert_non_null(item);
        item->key = strdup(key);
        item->namespace = strdup("default");
        item->body = json_pack("{s:i}", "n", n);
        assert_int_equal(xp_eventq_put(q, item), 0);
}

static int n_of(const struct xp_eventq_item *item)
{
        assert_non_null(item);
        return (int)json_integer_value(json_object_get(item->body, "n"));
}

static void test_new_refuses_no_room(void **state)
{
        struct xp_eventq *q = NULL;

        (void)state;
        assert_int_equal(xp_eventq_new(0, &q), -EINVAL);
        assert_null(q);
        xp_eventq_free(NULL);
}

/* Three Events' writes: the first of each is out at once, in the order queued. */
static void test_events_go_together(void **state)
{
        struct xp_eventq *q = queue(16);
        struct xp_eventq_item *a, *b, *c;

        (void)state;
        put(q, "ev-a", 1);
        put(q, "ev-a", 2);
        put(q, "ev-b", 3);
        put(q, "ev-c", 4);
        a = xp_eventq_take(q);
        b = xp_eventq_take(q);
        c = xp_eventq_take(q);
        assert_int_equal(n_of(a), 1);
        assert_int_equal(n_of(b), 3);
        assert_int_equal(n_of(c), 4);
        /* ev-a's count waits for its create */
        assert_null(xp_eventq_take(q));
        assert_int_equal(xp_eventq_size(q), 4);
        xp_eventq_done(q, b);
        xp_eventq_done(q, c);
        assert_null(xp_eventq_take(q));
        xp_eventq_done(q, a);
        a = xp_eventq_take(q);
        assert_int_equal(n_of(a), 2);
        xp_eventq_done(q, a);
        assert_null(xp_eventq_take(q));
        assert_int_equal(xp_eventq_size(q), 0);
        xp_eventq_free(q);
}

/* One Event's writes come out in the order queued, whatever the others do between. */
static void test_order_kept(void **state)
{
        struct xp_eventq *q = queue(64);
        int next_a = 0, next_b = 100;

        (void)state;
        for (int i = 0; i < 10; i++) {
                put(q, "ev-a", i);
                put(q, "ev-b", 100 + i);
        }
        for (int round = 0; round < 40 && xp_eventq_size(q) > 0; round++) {
                struct xp_eventq_item *x = xp_eventq_take(q), *y = xp_eventq_take(q);

                assert_non_null(x);
                assert_non_null(y);
                assert_null(xp_eventq_take(q));
                assert_int_equal(n_of(x), next_a++);
                assert_int_equal(n_of(y), next_b++);
                /* done in the other order than taken */
                xp_eventq_done(q, y);
                xp_eventq_done(q, x);
        }
        assert_int_equal(next_a, 10);
        assert_int_equal(next_b, 110);
        xp_eventq_free(q);
}

/* Writes taken together end differently (one given up half way through the group, the others
 * still out): every Event not done stays queued and is taken later, none twice. */
static void test_nothing_lost_half_way(void **state)
{
        struct xp_eventq *q = queue(64);
        struct xp_eventq_item *out[4];
        bool seen[8] = {false};
        int taken = 0;

        (void)state;
        for (int i = 0; i < 8; i++) {
                char key[16];

                snprintf(key, sizeof(key), "ev-%d", i % 4);
                put(q, key, i);
        }
        for (int i = 0; i < 4; i++)
                out[i] = xp_eventq_take(q);
        assert_null(xp_eventq_take(q));
        /* the second fails and is given up; the others are still out */
        seen[n_of(out[1])] = true;
        taken++;
        xp_eventq_done(q, out[1]);
        out[1] = xp_eventq_take(q);
        assert_int_equal(n_of(out[1]), 5); /* ev-1's next */
        assert_null(xp_eventq_take(q));
        for (int round = 0; round < 16 && xp_eventq_size(q) > 0; round++) {
                for (int i = 0; i < 4; i++) {
                        if (!out[i])
                                continue;
                        assert_false(seen[n_of(out[i])]);
                        seen[n_of(out[i])] = true;
                        taken++;
                        xp_eventq_done(q, out[i]);
                        out[i] = NULL;
                }
                for (int i = 0; i < 4; i++)
                        out[i] = xp_eventq_take(q);
        }
        assert_int_equal(taken, 8);
        for (int i = 0; i < 8; i++)
                assert_true(seen[i]);
        xp_eventq_free(q);
}

/* At most max wait, out ones included; the one refused is the caller's still. */
static void test_bounded(void **state)
{
        struct xp_eventq *q = queue(2);
        struct xp_eventq_item *item = calloc(1, sizeof(*item)), *first;

        (void)state;
        put(q, "ev-a", 1);
        put(q, "ev-b", 2);
        first = xp_eventq_take(q);
        assert_non_null(item);
        item->key = strdup("ev-c");
        assert_int_equal(xp_eventq_put(q, item), -ENOBUFS);
        xp_eventq_done(q, first);
        assert_int_equal(xp_eventq_put(q, item), 0);
        assert_int_equal(xp_eventq_size(q), 2);
        /* freed with what waits (ASan: no leak) */
        xp_eventq_free(q);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_new_refuses_no_room),
            cmocka_unit_test(test_events_go_together),
            cmocka_unit_test(test_order_kept),
            cmocka_unit_test(test_nothing_lost_half_way),
            cmocka_unit_test(test_bounded),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
