/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The agent's write queue with an injected clock: back-off (doubling, capped, never giving up),
 * coalescing (the newest status of a pod replaces one waiting, one equal to the write out is
 * dropped; memory bounded by the pods), the delete behind the status, and the only way a write
 * ends unwritten: the pod is gone (404).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "agent/retryq.h"

#define MS INT64_C(1000000)

static struct xp_retryq *queue(void)
{
        const struct xp_retryq_config c = {.initial_ns = 200 * MS, .max_ns = 3200 * MS};
        struct xp_retryq *q = NULL;

        assert_int_equal(xp_retryq_new(&c, &q), 0);
        return q;
}

/* A status that says which one it is. */
static json_t *status(int n)
{
        return json_pack("{s:s, s:i}", "phase", "Running", "n", n);
}

static int status_n(const struct xp_retryq_write *w)
{
        assert_non_null(w->status);
        return (int)json_integer_value(json_object_get(w->status, "n"));
}

static void put(struct xp_retryq *q, const char *uid, int n)
{
        assert_int_equal(xp_retryq_put_status(q, "default", uid, uid, status(n), 0), 0);
}

/* Takes the write due at now: it must be one. */
static struct xp_retryq_write take(struct xp_retryq *q, int64_t now)
{
        struct xp_retryq_write w;
        int64_t next;

        if (!xp_retryq_take(q, now, &w, &next))
                fail_msg("nothing due at %lld ms (next %lld ms)",
                         (long long)(now / MS),
                         (long long)(next / MS));
        return w;
}

/* Nothing is due at now; returns when the next one is (0: none waits). */
static int64_t none_due(struct xp_retryq *q, int64_t now)
{
        struct xp_retryq_write w;
        int64_t next;

        if (xp_retryq_take(q, now, &w, &next))
                fail_msg("%s due at %lld ms", w.uid, (long long)(now / MS));
        return next;
}

static void config_checked(void **state)
{
        struct xp_retryq *q = NULL;

        (void)state;
        assert_int_equal(xp_retryq_new(&(struct xp_retryq_config){0}, &q), -EINVAL);
        assert_int_equal(
            xp_retryq_new(&(struct xp_retryq_config){.initial_ns = 2, .max_ns = 1}, &q), -EINVAL);
        assert_null(q);
}

static void backoff_doubles_to_the_cap_and_never_gives_up(void **state)
{
        static const int64_t waits_ms[] = {200, 400, 800, 1600, 3200, 3200, 3200};
        struct xp_retryq *q = queue();
        struct xp_retryq_write w;
        int64_t now = 1000 * MS;

        (void)state;
        put(q, "a", 1);
        w = take(q, now);
        assert_int_equal(w.tries, 0);
        for (size_t i = 0; i < sizeof(waits_ms) / sizeof(waits_ms[0]); i++) {
                assert_int_equal(xp_retryq_done(q, &w, XP_RETRYQ_UNREACHABLE, now),
                                 waits_ms[i] * MS);
                assert_null(w.status); /* the queue took it back */
                /* not before its time, and the earliest time is told */
                assert_int_equal(none_due(q, now + waits_ms[i] * MS - 1), now + waits_ms[i] * MS);
                now += waits_ms[i] * MS;
                w = take(q, now);
                assert_int_equal(status_n(&w), 1);
                assert_int_equal(w.tries, i + 1);
        }
        /* an hour of failures later it is still there, still at the cap */
        for (int i = 0; i < 1200; i++) {
                assert_int_equal(xp_retryq_done(q, &w, XP_RETRYQ_REFUSED, now), 3200 * MS);
                now += 3200 * MS;
                w = take(q, now);
        }
        assert_int_equal(status_n(&w), 1);
        /* it lands: the entry goes, and the next status of the pod starts afresh */
        assert_int_equal(xp_retryq_done(q, &w, XP_RETRYQ_LANDED, now), 0);
        assert_int_equal(xp_retryq_pods(q), 0);
        assert_int_equal(none_due(q, now), 0);
        put(q, "a", 2);
        w = take(q, now);
        assert_int_equal(w.tries, 0);
        assert_int_equal(xp_retryq_done(q, &w, XP_RETRYQ_UNREACHABLE, now), 200 * MS);
        xp_retryq_free(q);
}

static void newest_status_replaces_the_waiting_one(void **state)
{
        struct xp_retryq *q = queue();
        struct xp_retryq_write w;

        (void)state;
        /* a burst of changes is one write, of the newest */
        for (int n = 1; n <= 1000; n++)
                put(q, n % 10 == 0 ? "b" : "a", n);
        assert_int_equal(xp_retryq_pods(q), 2);
        w = take(q, 0);
        assert_string_equal(w.uid, "a");
        assert_int_equal(status_n(&w), 999);
        /* one write of a pod out at a time: a newer one waits for it */
        put(q, "a", 1001);
        {
                struct xp_retryq_write w2 = take(q, 0);

                assert_string_equal(w2.uid, "b");
                assert_int_equal(status_n(&w2), 1000);
                xp_retryq_done(q, &w2, XP_RETRYQ_LANDED, 0);
        }
        assert_int_equal(none_due(q, 0), 0);
        /* the failed one is not put back over the newer one */
        assert_int_equal(xp_retryq_done(q, &w, XP_RETRYQ_UNREACHABLE, 0), 200 * MS);
        w = take(q, 200 * MS);
        assert_int_equal(status_n(&w), 1001);
        /* a newer status that comes while the pod waits out its back-off waits too */
        xp_retryq_done(q, &w, XP_RETRYQ_UNREACHABLE, 200 * MS);
        put(q, "a", 1002);
        assert_int_equal(none_due(q, 300 * MS), 600 * MS);
        w = take(q, 600 * MS);
        assert_int_equal(status_n(&w), 1002);
        xp_retryq_done(q, &w, XP_RETRYQ_LANDED, 600 * MS);
        assert_int_equal(xp_retryq_pods(q), 0);
        xp_retryq_free(q);
}

static void a_status_equal_to_the_one_out_is_not_written_again(void **state)
{
        struct xp_retryq *q = queue();
        struct xp_retryq_write w;

        (void)state;
        put(q, "a", 1);
        w = take(q, 0);
        /* the pod synced again before its write came back: the same status, dropped */
        put(q, "a", 1);
        assert_int_equal(none_due(q, 0), 0);
        xp_retryq_done(q, &w, XP_RETRYQ_LANDED, 0);
        assert_int_equal(xp_retryq_pods(q), 0);
        /* a different one waits for the write out and goes after it */
        put(q, "a", 2);
        w = take(q, 0);
        put(q, "a", 3);
        /* 2 replaces 3: the newest waiting one is written, equal to the one out or not */
        put(q, "a", 2);
        assert_int_equal(none_due(q, 0), 0);
        xp_retryq_done(q, &w, XP_RETRYQ_LANDED, 0);
        w = take(q, 0);
        assert_int_equal(status_n(&w), 2);
        /* the same one again while that write fails: the failed one is put back and retried */
        put(q, "a", 2);
        assert_int_equal(xp_retryq_done(q, &w, XP_RETRYQ_UNREACHABLE, 0), 200 * MS);
        w = take(q, 200 * MS);
        assert_int_equal(status_n(&w), 2);
        xp_retryq_done(q, &w, XP_RETRYQ_LANDED, 200 * MS);
        assert_int_equal(xp_retryq_pods(q), 0);
        xp_retryq_free(q);
}

static void delete_waits_behind_the_status(void **state)
{
        struct xp_retryq *q = queue();
        struct xp_retryq_write w;

        (void)state;
        put(q, "a", 1);
        assert_int_equal(xp_retryq_put_delete(q, "default", "a", "a"), 0);
        w = take(q, 0);
        assert_int_equal(status_n(&w), 1);
        assert_int_equal(none_due(q, 0), 0); /* the delete waits for the status */
        xp_retryq_done(q, &w, XP_RETRYQ_UNREACHABLE, 0);
        /* the status again first, then the delete, which is retried as well */
        w = take(q, 200 * MS);
        assert_non_null(w.status);
        xp_retryq_done(q, &w, XP_RETRYQ_LANDED, 200 * MS);
        w = take(q, 200 * MS);
        assert_null(w.status);
        assert_string_equal(w.name, "a");
        assert_string_equal(w.namespace, "default");
        for (int i = 0; i < 50; i++) {
                int64_t wait = xp_retryq_done(q, &w, XP_RETRYQ_UNREACHABLE, 200 * MS);

                w = take(q, 200 * MS + wait);
                assert_null(w.status);
        }
        xp_retryq_done(q, &w, XP_RETRYQ_LANDED, 0);
        assert_int_equal(xp_retryq_pods(q), 0);
        xp_retryq_free(q);
}

static void only_a_gone_pod_drops_its_writes(void **state)
{
        struct xp_retryq *q = queue();
        struct xp_retryq_write w;

        (void)state;
        put(q, "a", 1);
        assert_int_equal(xp_retryq_put_delete(q, "default", "a", "a"), 0);
        w = take(q, 0);
        /* 404: the pod is gone, its delete with it */
        assert_int_equal(xp_retryq_done(q, &w, XP_RETRYQ_GONE, 0), 0);
        assert_int_equal(xp_retryq_pods(q), 0);
        assert_int_equal(none_due(q, INT64_MAX), 0);

        /* the watch says the pod is gone: what waits goes, and a write out ends quietly */
        put(q, "b", 1);
        put(q, "c", 1);
        w = take(q, 0);
        assert_string_equal(w.uid, "b");
        put(q, "b", 2);
        xp_retryq_drop(q, "b");
        xp_retryq_drop(q, "c");
        xp_retryq_drop(q, "nobody");
        assert_int_equal(xp_retryq_pods(q), 0);
        assert_int_equal(xp_retryq_done(q, &w, XP_RETRYQ_UNREACHABLE, 0), 0);
        assert_int_equal(none_due(q, INT64_MAX), 0);
        xp_retryq_free(q);
}

static void a_landed_write_brings_the_unreachable_ones_forward(void **state)
{
        struct xp_retryq *q = queue();
        struct xp_retryq_write w;
        int64_t now = 0;

        (void)state;
        /* "down" failed for want of a server five times (it waits 3.2 s now), "bad" was refused */
        put(q, "down", 1);
        for (int i = 0; i < 5; i++) {
                int64_t wait;

                w = take(q, now);
                assert_string_equal(w.uid, "down");
                wait = xp_retryq_done(q, &w, XP_RETRYQ_UNREACHABLE, now);
                if (i < 4)
                        now += wait;
        }
        put(q, "bad", 1);
        w = take(q, now);
        assert_string_equal(w.uid, "bad");
        xp_retryq_done(q, &w, XP_RETRYQ_REFUSED, now);
        assert_int_equal(none_due(q, now + 1), now + 200 * MS);
        /* the server is back: a new pod's write lands */
        put(q, "new", 1);
        w = take(q, now + 1);
        assert_string_equal(w.uid, "new");
        xp_retryq_done(q, &w, XP_RETRYQ_LANDED, now + 1);
        w = take(q, now + 1);
        assert_string_equal(w.uid, "down");
        assert_int_equal(w.tries, 5);
        xp_retryq_done(q, &w, XP_RETRYQ_LANDED, now + 1);
        /* the refused one keeps its back-off */
        assert_int_equal(none_due(q, now + 1), now + 200 * MS);
        w = take(q, now + 200 * MS);
        assert_string_equal(w.uid, "bad");
        xp_retryq_done(q, &w, XP_RETRYQ_LANDED, now + 200 * MS);
        assert_int_equal(xp_retryq_pods(q), 0);
        xp_retryq_free(q);
}

static void pods_keep_their_turn(void **state)
{
        struct xp_retryq *q = queue();
        struct xp_retryq_write w;
        char uid[16];

        (void)state;
        /* one failing pod waits in the queue without holding back the others */
        put(q, "slow", 0);
        w = take(q, 0);
        xp_retryq_done(q, &w, XP_RETRYQ_REFUSED, 0);
        for (int i = 0; i < 100; i++) {
                snprintf(uid, sizeof(uid), "p%d", i);
                put(q, uid, i);
        }
        for (int i = 0; i < 100; i++) {
                w = take(q, 1);
                snprintf(uid, sizeof(uid), "p%d", i);
                assert_string_equal(w.uid, uid); /* first come, first written */
                xp_retryq_done(q, &w, XP_RETRYQ_LANDED, 1);
        }
        assert_int_equal(xp_retryq_pods(q), 1);
        xp_retryq_free(q); /* frees what waits */
}

static void put_held(struct xp_retryq *q, const char *uid, int n, int64_t hold_until)
{
        assert_int_equal(xp_retryq_put_status(q, "default", uid, uid, status(n), hold_until), 0);
}

/* A status that is not final waits for the pod's next one until its hold ends, then goes: a
 * newer one replaces it and never pushes the hold later, and one put without a hold (final) is
 * due at once, the only write of the pod. */
static void a_held_status_waits_for_the_next_one(void **state)
{
        struct xp_retryq *q = queue();
        struct xp_retryq_write w;
        int64_t now = 1000 * MS;

        (void)state;
        put_held(q, "a", 1, now + 5 * MS);
        assert_int_equal(none_due(q, now), now + 5 * MS);
        /* changes keep coming: the hold stays where the first one put it */
        put_held(q, "a", 2, now + 3 * MS + 5 * MS);
        assert_int_equal(none_due(q, now + 3 * MS), now + 5 * MS);
        w = take(q, now + 5 * MS);
        assert_int_equal(status_n(&w), 2);
        assert_int_equal(xp_retryq_done(q, &w, XP_RETRYQ_LANDED, now + 6 * MS), 0);

        /* a final status within the hold: one write, at once */
        put_held(q, "b", 1, now + 10 * MS + 5 * MS);
        assert_int_equal(none_due(q, now + 11 * MS), now + 15 * MS);
        put_held(q, "b", 2, 0);
        w = take(q, now + 11 * MS);
        assert_int_equal(status_n(&w), 2);
        assert_int_equal(none_due(q, now + 11 * MS), 0);
        assert_int_equal(xp_retryq_done(q, &w, XP_RETRYQ_LANDED, now + 12 * MS), 0);
        assert_int_equal(xp_retryq_pods(q), 0);

        /* a shorter hold shortens it; a failed held write waits its back-off, not the hold */
        put_held(q, "c", 1, now + 30 * MS);
        put_held(q, "c", 2, now + 25 * MS);
        assert_int_equal(none_due(q, now + 20 * MS), now + 25 * MS);
        w = take(q, now + 25 * MS);
        assert_int_equal(xp_retryq_done(q, &w, XP_RETRYQ_UNREACHABLE, now + 26 * MS), 200 * MS);
        assert_int_equal(none_due(q, now + 30 * MS), now + 226 * MS);
        w = take(q, now + 226 * MS);
        assert_int_equal(status_n(&w), 2);
        assert_int_equal(xp_retryq_done(q, &w, XP_RETRYQ_LANDED, now + 227 * MS), 0);
        xp_retryq_free(q);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(config_checked),
            cmocka_unit_test(backoff_doubles_to_the_cap_and_never_gives_up),
            cmocka_unit_test(newest_status_replaces_the_waiting_one),
            cmocka_unit_test(a_status_equal_to_the_one_out_is_not_written_again),
            cmocka_unit_test(delete_waits_behind_the_status),
            cmocka_unit_test(only_a_gone_pod_drops_its_writes),
            cmocka_unit_test(a_landed_write_brings_the_unreachable_ones_forward),
            cmocka_unit_test(pods_keep_their_turn),
            cmocka_unit_test(a_held_status_waits_for_the_next_one),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
