/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Where a store writer sleeps (src/store/writer_wait.c): it returns once every queued write of
 * its wait is done, or when asked to lead, and a waker that says "done" is through with the wait
 * once it returns, so the writer may drop its frame at once; one wake-up wakes every writer of a
 * batch, and a writer whose writes are not done sleeps on through another's wake-up. A thread
 * that sleeps here is woken by the condition it waits for; the settler's wait for each round is
 * bounded at 60 s.
 */
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "store/store_internal.h"

#define WRITES 3
#define ROUNDS 2000

#define LIMIT_S 60 /* a limit, not an expectation */

static struct writer_wake wake;

struct waiting {
        struct writer_wait wait;
        atomic_bool done[WRITES];
        bool result;
        atomic_bool returned;
        _Atomic pid_t tid;
};

static void *wait_main(void *arg)
{
        struct waiting *w = arg;

        atomic_store(&w->tid, gettid());
        writer_wait_init(&w->wait); /* in the writer's thread, as the store does: its bit */
        for (int i = 0; i < WRITES; i++)
                writer_wait_queued(&w->wait);
        w->result = writer_wait(&w->wait, &wake);
        atomic_store(&w->returned, true);
        return NULL;
}

/* A wait of WRITES queued writes, set up in a thread of its own that then sleeps on it. */
static void start_waiting(struct waiting *w, pthread_t *thread)
{
        *w = (struct waiting){0};
        assert_int_equal(pthread_create(thread, NULL, wait_main, w), 0);
        /* its bit is set once it queued: wait until the words say so */
        while ((atomic_load(&w->wait.word) & ~WRITER_WAIT_TURN) != WRITES)
                sched_yield();
}

static time_t now_s(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return ts.tv_sec;
}

/* Whether thread tid sleeps in the futex of the wake-ups' word with word as the value it read:
 * it saw every wake-up up to the one that made word, and sleeps on (/proc's syscall file: the
 * call's number, then its arguments). */
static bool asleep_on(pid_t tid, unsigned int word)
{
        char path[64];
        unsigned long nr, uaddr, op, val;
        FILE *f;
        int n;

        snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", (int)tid);
        f = fopen(path, "r");
        if (!f)
                return false;
        n = fscanf(f, "%lu 0x%lx 0x%lx 0x%lx", &nr, &uaddr, &op, &val);
        fclose(f);
        return n == 4 && nr == SYS_futex && uaddr == (unsigned long)&wake.word && val == word;
}

/* Waits, LIMIT_S at most, until the waiting's thread has seen the last wake-up and sleeps again. */
static void wait_asleep_again(struct waiting *w)
{
        time_t deadline = now_s() + LIMIT_S;

        while (!asleep_on(atomic_load(&w->tid), atomic_load(&wake.word))) {
                if (now_s() > deadline)
                        fail_msg("the writer never slept again after its wake-up");
                sched_yield();
        }
}

/* Settles a waiting's writes as one leader would: every bit, then one wake-up. */
static unsigned int settle_all(struct waiting *w)
{
        unsigned int bits = 0;

        for (int i = 0; i < WRITES; i++)
                bits |= writer_wait_done(&w->wait, &w->done[i], false);
        return bits;
}

/* Done only once the last of its queued writes is, whatever the order they are settled in. */
static void done_after_every_write(void **state)
{
        struct waiting w;
        pthread_t thread;

        (void)state;
        start_waiting(&w, &thread);
        writer_wake(&wake, writer_wait_done(&w.wait, &w.done[2], false));
        writer_wake(&wake, writer_wait_done(&w.wait, &w.done[0], false));
        writer_wake(&wake, writer_wait_done(&w.wait, &w.done[1], false));
        assert_int_equal(pthread_join(thread, NULL), 0);
        assert_true(w.result);
        for (int i = 0; i < WRITES; i++)
                assert_true(atomic_load(&w.done[i]));
}

/* Asked to lead while a write is queued: false, and the request is taken (the next wait sleeps
 * on). The leader's own write settles without a wake-up. */
static void turn_then_done(void **state)
{
        struct waiting w;
        pthread_t thread;

        (void)state;
        start_waiting(&w, &thread);
        writer_wake(&wake, writer_wait_turn(&w.wait));
        assert_int_equal(pthread_join(thread, NULL), 0);
        assert_false(w.result);
        for (int i = 0; i < WRITES; i++)
                assert_int_equal(writer_wait_done(&w.wait, &w.done[i], true), 0);
        assert_true(writer_wait(&w.wait, &wake));
}

/*
 * A batch's writers, each in its own thread, are woken by one system call; a writer whose writes
 * are not done sleeps on through it (its bit named or not) until its own are.
 */
static void one_wakeup_per_batch(void **state)
{
        struct waiting w[4];
        pthread_t thread[4];
        unsigned int bits = 0;
        uint64_t calls;

        (void)state;
        for (int i = 0; i < 4; i++)
                start_waiting(&w[i], &thread[i]);
        calls = atomic_load(&wake.calls);
        for (int i = 0; i < 3; i++)
                bits |= settle_all(&w[i]);
        writer_wake(&wake, bits | w[3].wait.bit); /* w[3]'s bit too: it wakes for nothing */
        assert_int_equal(atomic_load(&wake.calls), calls + 1);
        for (int i = 0; i < 3; i++) {
                assert_int_equal(pthread_join(thread[i], NULL), 0);
                assert_true(w[i].result);
        }
        /* once it saw the wake-up that named it and sleeps again, it has not returned */
        wait_asleep_again(&w[3]);
        assert_false(atomic_load(&w[3].returned));
        writer_wake(&wake, settle_all(&w[3]));
        assert_int_equal(pthread_join(thread[3], NULL), 0);
        assert_true(w[3].result);
}

/* Nothing queued (every write refused before it was): done at once. */
static void nothing_queued(void **state)
{
        struct writer_wait wait;

        (void)state;
        writer_wait_init(&wait);
        assert_true(writer_wait(&wait, &wake));
}

/*
 * A writer whose wait lives in a frame that goes as soon as it returns, round after round at the
 * same address, while another thread settles each round's write: no round is lost or woken early.
 */
struct relay {
        _Atomic(struct writer_wait *) posted;
        _Atomic(atomic_bool *) posted_done;
};

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
                writer_wake(&wake, writer_wait_done(w, atomic_load(&r->posted_done), false));
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
        assert_true(writer_wait(&wait, &wake));
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
            cmocka_unit_test(one_wakeup_per_batch),
            cmocka_unit_test(nothing_queued),
            cmocka_unit_test(frames_go_at_once),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
