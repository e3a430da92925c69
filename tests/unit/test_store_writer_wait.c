/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Where a store writer sleeps (src/store/writer_wait.c): it returns once every queued write of
 * its wait is done, or when asked to lead, and a waker that says "done" is through with the wait
 * once it returns, so the writer may drop its frame at once. A thread that sleeps here is woken
 * by the condition it waits for; the settler's wait for each round is bounded at 60 s.
 */
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include <cmocka.h>

#include "store/store_internal.h"

#define WRITES 3
#define ROUNDS 2000

#define LIMIT_S 60 /* a limit, not an expectation */

struct waiting {
        struct writer_wait wait;
        atomic_bool done[WRITES];
        bool result;
};

static void *wait_main(void *arg)
{
        struct waiting *w = arg;

        w->result = writer_wait(&w->wait);
        return NULL;
}

/* Done only once the last of its queued writes is, whatever the order they are settled in. */
static void done_after_every_write(void **state)
{
        struct waiting w = {0};
        pthread_t thread;

        (void)state;
        writer_wait_init(&w.wait);
        for (int i = 0; i < WRITES; i++)
                writer_wait_queued(&w.wait);
        assert_int_equal(pthread_create(&thread, NULL, wait_main, &w), 0);
        writer_wait_done(&w.wait, &w.done[2], false);
        writer_wait_done(&w.wait, &w.done[0], false);
        writer_wait_done(&w.wait, &w.done[1], false);
        assert_int_equal(pthread_join(thread, NULL), 0);
        assert_true(w.result);
        for (int i = 0; i < WRITES; i++)
                assert_true(atomic_load(&w.done[i]));
}

/* Asked to lead while a write is queued: false, and the request is taken (the next wait sleeps
 * on). The leader's own write settles without a wake-up. */
static void turn_then_done(void **state)
{
        struct waiting w = {0};
        pthread_t thread;

        (void)state;
        writer_wait_init(&w.wait);
        writer_wait_queued(&w.wait);
        assert_int_equal(pthread_create(&thread, NULL, wait_main, &w), 0);
        writer_wait_turn(&w.wait);
        assert_int_equal(pthread_join(thread, NULL), 0);
        assert_false(w.result);
        writer_wait_done(&w.wait, &w.done[0], true);
        assert_true(writer_wait(&w.wait));
}

/* Nothing queued (every write refused before it was): done at once. */
static void nothing_queued(void **state)
{
        struct writer_wait wait;

        (void)state;
        writer_wait_init(&wait);
        assert_true(writer_wait(&wait));
}

/*
 * A writer whose wait lives in a frame that goes as soon as it returns, round after round at the
 * same address, while another thread settles each round's write: no round is lost or woken early.
 */
struct relay {
        _Atomic(struct writer_wait *) posted;
        _Atomic(atomic_bool *) posted_done;
};

static time_t now_s(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return ts.tv_sec;
}

/* Settles each round's write as the writer posts it; NULL, or a message when one never came. */
static void *settler_main(void *arg)
{
        struct relay *r = arg;

        for (int i = 0; i < ROUNDS; i++) {
                time_t deadline = now_s() + LIMIT_S;
                struct writer_wait *w;

                while (!(w = atomic_exchange(&r->posted, NULL)))
                        if (now_s() > deadline)
                                return "no write posted";
                        else
                                sched_yield();
                writer_wait_done(w, atomic_load(&r->posted_done), false);
        }
        return NULL;
}

static void one_round(struct relay *r)
{
        struct writer_wait wait;
        atomic_bool done = false;

        writer_wait_init(&wait);
        writer_wait_queued(&wait);
        atomic_store(&r->posted_done, &done);
        atomic_store(&r->posted, &wait);
        assert_true(writer_wait(&wait));
        assert_true(atomic_load(&done));
}

static void frames_go_at_once(void **state)
{
        struct relay r;
        pthread_t settler;
        void *failed = NULL;

        (void)state;
        atomic_init(&r.posted, NULL);
        atomic_init(&r.posted_done, NULL);
        assert_int_equal(pthread_create(&settler, NULL, settler_main, &r), 0);
        for (int i = 0; i < ROUNDS; i++)
                one_round(&r);
        assert_int_equal(pthread_join(settler, &failed), 0);
        assert_null(failed);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(done_after_every_write),
            cmocka_unit_test(turn_then_done),
            cmocka_unit_test(nothing_queued),
            cmocka_unit_test(frames_go_at_once),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
