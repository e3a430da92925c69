/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Whether a pod's status that is not final waits for the pod's next change (statushold.h), with
 * an injected clock: a long pod's Running goes at once; once a short pod (its final status within
 * XP_STATUS_HOLD_STRETCH times the wait of its first one) was seen, statuses wait, until no short
 * pod was seen for XP_STATUS_HOLD_MEMORY_NS, as long as the last short pods took (within bounds,
 * the stretch at most XP_STATUS_HOLD_STRETCH_MAX_NS);
 * a final status never waits; a wait of 0 never holds.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "agent/statushold.h"

#define MS   INT64_C(1000000)
#define WAIT (5 * MS)

static void a_long_pods_running_goes_at_once(void **state)
{
        struct xp_status_hold h;
        int64_t now = 1000 * MS;

        (void)state;
        xp_status_hold_init(&h, WAIT);
        /* `sleep` pods, one after another: none ends by itself, none is held */
        for (int i = 0; i < 100; i++) {
                char uid[32];

                snprintf(uid, sizeof(uid), "sleep-%d", i);
                assert_int_equal(xp_status_hold_until(&h, uid, false, now), 0);
                assert_int_equal(xp_status_hold_until(&h, uid, false, now + 1 * MS), 0);
                now += 20 * MS;
        }
        /* one that ends after the longest wait: still none */
        assert_int_equal(xp_status_hold_until(&h, "long", false, now), 0);
        assert_int_equal(
            xp_status_hold_until(&h, "long", true, now + XP_STATUS_HOLD_STRETCH * WAIT + 1), 0);
        assert_int_equal(
            xp_status_hold_until(&h, "next", false, now + (XP_STATUS_HOLD_STRETCH + 1) * WAIT), 0);
}

static void short_pods_turn_the_holds_on_for_a_while(void **state)
{
        struct xp_status_hold h;
        int64_t now = 1000 * MS;

        (void)state;
        xp_status_hold_init(&h, WAIT);
        /* the first short pod of a burst: its Running at once, its Succeeded 2 ms later */
        assert_int_equal(xp_status_hold_until(&h, "a", false, now), 0);
        assert_int_equal(xp_status_hold_until(&h, "a", true, now + 2 * MS), 0);
        /* the next ones wait for their end */
        assert_int_equal(xp_status_hold_until(&h, "b", false, now + 3 * MS), now + 3 * MS + WAIT);
        /* a Running put again (the echo of its write) waits no longer than the first did */
        assert_int_equal(xp_status_hold_until(&h, "b", false, now + 4 * MS), now + 4 * MS + WAIT);
        assert_int_equal(xp_status_hold_until(&h, "b", true, now + 7 * MS), 0);
        /* short pods keep it on; a second without one turns it off */
        now += 7 * MS;
        assert_int_equal(xp_status_hold_until(&h, "c", false, now + XP_STATUS_HOLD_MEMORY_NS),
                         now + XP_STATUS_HOLD_MEMORY_NS + WAIT);
        /* c is no short pod: it ends after the longest wait */
        now += XP_STATUS_HOLD_MEMORY_NS + XP_STATUS_HOLD_STRETCH * WAIT;
        assert_int_equal(xp_status_hold_until(&h, "c", true, now + 1 * MS), 0);
        assert_int_equal(xp_status_hold_until(&h, "d", false, now + 2 * MS), 0);
}

static void the_first_status_decides_not_a_repeat(void **state)
{
        struct xp_status_hold h;
        int64_t now = 1000 * MS;

        (void)state;
        xp_status_hold_init(&h, WAIT);
        /* a long pod whose Running is put again just before it ends is no short pod */
        assert_int_equal(xp_status_hold_until(&h, "long", false, now), 0);
        assert_int_equal(xp_status_hold_until(&h, "long", false, now + 100 * MS), 0);
        assert_int_equal(xp_status_hold_until(&h, "long", true, now + 101 * MS), 0);
        assert_int_equal(xp_status_hold_until(&h, "next", false, now + 102 * MS), 0);
        /* a final status of a pod never seen before (the agent restarted) teaches nothing */
        assert_int_equal(xp_status_hold_until(&h, "old", true, now + 103 * MS), 0);
        assert_int_equal(xp_status_hold_until(&h, "next2", false, now + 104 * MS), 0);
}

static void the_newest_pods_are_remembered(void **state)
{
        struct xp_status_hold h;
        int64_t now = 1000 * MS;

        (void)state;
        xp_status_hold_init(&h, WAIT);
        /* a short pod among many running ones is still seen while it is among the newest */
        for (int i = 0; i < XP_STATUS_HOLD_RECENT - 1; i++) {
                char uid[32];

                snprintf(uid, sizeof(uid), "run-%d", i);
                assert_int_equal(xp_status_hold_until(&h, uid, false, now), 0);
        }
        assert_int_equal(xp_status_hold_until(&h, "short", false, now), 0);
        assert_int_equal(xp_status_hold_until(&h, "short", true, now + 1 * MS), 0);
        assert_int_equal(xp_status_hold_until(&h, "x", false, now + 2 * MS), now + 2 * MS + WAIT);
}

/* Ends a pod that took `took` from its first status to its final one; returns the time after. */
static int64_t short_pod(struct xp_status_hold *h, const char *uid, int64_t now, int64_t took)
{
        (void)xp_status_hold_until(h, uid, false, now);
        assert_int_equal(xp_status_hold_until(h, uid, true, now + took), 0);
        return now + took + 1 * MS;
}

static void the_wait_stretches_to_what_short_pods_take(void **state)
{
        struct xp_status_hold h;
        int64_t now = 1000 * MS;

        (void)state;
        xp_status_hold_init(&h, WAIT);
        /* a loaded node: `true` pods take 12 ms from Running to Succeeded, past the 5 ms wait;
         * the next pod's Running waits those 12 ms and a quarter, to be one write with its end */
        now = short_pod(&h, "a", now, 12 * MS);
        now = short_pod(&h, "b", now, 8 * MS);
        assert_int_equal(xp_status_hold_until(&h, "c", false, now), now + 15 * MS);
        /* never longer than XP_STATUS_HOLD_STRETCH times the wait */
        now = short_pod(&h, "c", now, 24 * MS);
        assert_int_equal(xp_status_hold_until(&h, "d", false, now),
                         now + XP_STATUS_HOLD_STRETCH * WAIT);
        /* a pod longer than that teaches nothing; once the slow ones are past, the wait shrinks
         * back, never under --status-coalesce */
        now = short_pod(&h, "d", now, 40 * MS);
        for (int i = 0; i < XP_STATUS_HOLD_DURATIONS; i++) {
                char uid[32];

                snprintf(uid, sizeof(uid), "fast-%d", i);
                now = short_pod(&h, uid, now, 1 * MS);
        }
        assert_int_equal(xp_status_hold_until(&h, "e", false, now), now + WAIT);
}

/* --status-coalesce takes up to 1 s: the stretch stops at 250 ms (or the option itself, when it is
 * longer), so a Running status never waits five times a long option. */
static void the_stretch_stops_at_250_ms(void **state)
{
        struct xp_status_hold h;
        int64_t now = 1000 * MS;

        (void)state;
        xp_status_hold_init(&h, 200 * MS);
        /* a pod of 240 ms: 300 ms with its quarter, 250 ms at most (not 5 x 200 ms) */
        now = short_pod(&h, "a", now, 240 * MS);
        assert_int_equal(xp_status_hold_until(&h, "b", false, now), now + 250 * MS);

        xp_status_hold_init(&h, 1000 * MS);
        now = short_pod(&h, "d", now, 900 * MS);
        /* 1125 ms with its quarter: the option's own 1 s, never past it */
        assert_int_equal(xp_status_hold_until(&h, "e", false, now), now + 1000 * MS);
}

static void a_deleted_pods_end_teaches_nothing(void **state)
{
        struct xp_status_hold h;
        int64_t now = 1000 * MS;

        (void)state;
        xp_status_hold_init(&h, WAIT);
        /* a `sleep` pod deleted as soon as it runs: its kill's Failed 10 ms after its Running is
         * no short pod's end, and the next pod's Running still goes at once */
        assert_int_equal(xp_status_hold_until(&h, "latency-1", false, now), 0);
        xp_status_hold_forget(&h, "latency-1");
        assert_int_equal(xp_status_hold_until(&h, "latency-1", true, now + 10 * MS), 0);
        assert_int_equal(xp_status_hold_until(&h, "latency-2", false, now + 11 * MS), 0);
        /* forgetting a pod never seen changes nothing */
        xp_status_hold_forget(&h, "unknown");
        assert_int_equal(xp_status_hold_until(&h, "latency-2", true, now + 13 * MS), 0);
        assert_int_equal(xp_status_hold_until(&h, "latency-3", false, now + 14 * MS),
                         now + 14 * MS + WAIT);
}

static void a_zero_wait_never_holds(void **state)
{
        struct xp_status_hold h;

        (void)state;
        xp_status_hold_init(&h, 0);
        assert_int_equal(xp_status_hold_until(&h, "a", false, 1000 * MS), 0);
        assert_int_equal(xp_status_hold_until(&h, "a", true, 1000 * MS), 0);
        assert_int_equal(xp_status_hold_until(&h, "b", false, 1001 * MS), 0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(a_long_pods_running_goes_at_once),
            cmocka_unit_test(short_pods_turn_the_holds_on_for_a_while),
            cmocka_unit_test(the_first_status_decides_not_a_repeat),
            cmocka_unit_test(the_newest_pods_are_remembered),
            cmocka_unit_test(the_wait_stretches_to_what_short_pods_take),
            cmocka_unit_test(the_stretch_stops_at_250_ms),
            cmocka_unit_test(a_deleted_pods_end_teaches_nothing),
            cmocka_unit_test(a_zero_wait_never_holds),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
