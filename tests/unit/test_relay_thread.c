/* SPDX-License-Identifier: Apache-2.0 */
/*
 * relay_thread_waits() (src/server/relay_thread.c): how the server's stream tunnel knows that
 * libmicrohttpd's TLS relay holds none of the agent's bytes before it ends the tunnel. A thread
 * asleep in poll() waits; one that runs (however long the scheduler keeps it from sending), or
 * sleeps elsewhere, does not.
 */
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "server/relay_thread.h"

struct subject {
        int pipe[2];
        atomic_int tid;
        atomic_bool stop;
        enum {
                IN_POLL,
                IN_READ,
                SPINNING
        } what;
};

static void *subject_main(void *arg)
{
        struct subject *s = arg;
        struct pollfd p = {.fd = s->pipe[0], .events = POLLIN};
        char c;
        ssize_t n = 0;

        atomic_store(&s->tid, (int)syscall(SYS_gettid));
        if (s->what == IN_POLL)
                n = poll(&p, 1, -1);
        else if (s->what == IN_READ)
                n = read(s->pipe[0], &c, 1);
        else
                while (!atomic_load(&s->stop))
                        ;
        return n < 0 ? arg : NULL;
}

/* Polls relay_thread_waits() until it says want: bounded (60 s), the real condition. */
static int waits_within(pid_t tid, int want)
{
        struct timespec tick = {0, 10 * 1000 * 1000};
        int r = -1;

        for (int i = 0; i < 6000 && (r = relay_thread_waits(tid)) != want; i++)
                nanosleep(&tick, NULL);
        return r;
}

static void run_subject(struct subject *s, pthread_t *thread)
{
        assert_int_equal(pipe(s->pipe), 0);
        assert_int_equal(pthread_create(thread, NULL, subject_main, s), 0);
        for (int i = 0; i < 60000 && !atomic_load(&s->tid); i++)
                usleep(1000);
        assert_true(atomic_load(&s->tid) > 0);
}

static void end_subject(struct subject *s, pthread_t thread)
{
        atomic_store(&s->stop, true);
        assert_int_equal(write(s->pipe[1], "x", 1), 1);
        assert_int_equal(pthread_join(thread, NULL), 0);
        close(s->pipe[0]);
        close(s->pipe[1]);
}

static void test_asleep_in_poll_waits(void **state)
{
        struct subject s = {.what = IN_POLL};
        pthread_t thread;

        (void)state;
        run_subject(&s, &thread);
        assert_int_equal(waits_within(atomic_load(&s.tid), 1), 1);
        end_subject(&s, thread);
}

/* the relay between its recv() and its send: running or runnable, never "waiting" */
static void test_running_does_not_wait(void **state)
{
        struct subject s = {.what = SPINNING};
        pthread_t thread;

        (void)state;
        run_subject(&s, &thread);
        for (int i = 0; i < 100; i++)
                assert_int_equal(relay_thread_waits(atomic_load(&s.tid)), 0);
        end_subject(&s, thread);
}

static void test_asleep_elsewhere_does_not_wait(void **state)
{
        struct subject s = {.what = IN_READ};
        pthread_t thread;
        struct timespec tick = {0, 50 * 1000 * 1000};

        (void)state;
        run_subject(&s, &thread);
        for (int i = 0; i < 20; i++) {
                assert_int_equal(relay_thread_waits(atomic_load(&s.tid)), 0);
                nanosleep(&tick, NULL);
        }
        end_subject(&s, thread);
}

static void test_no_such_thread_is_an_error(void **state)
{
        (void)state;
        assert_true(relay_thread_waits(0x7ffffff0) < 0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_asleep_in_poll_waits),
            cmocka_unit_test(test_running_does_not_wait),
            cmocka_unit_test(test_asleep_elsewhere_does_not_wait),
            cmocka_unit_test(test_no_such_thread_is_an_error),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
