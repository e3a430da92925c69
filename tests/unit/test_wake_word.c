/* SPDX-License-Identifier: Apache-2.0 */
/* Words to sleep on (xpool/wake_word.h). */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "xpool/timeutil.h"
#include "xpool/wake_word.h"

#define LIMIT_MS 60000 /* a limit, not an expectation */

/* The word changes at each bump; a sleep on a value it no longer holds returns at once. */
static void a_bump_changes_the_word(void **state)
{
        atomic_uint word = 0;
        unsigned int seen;
        struct timespec deadline = xp_monotonic_deadline(LIMIT_MS);

        (void)state;
        seen = xp_wake_word_prepare(&word);
        xp_wake_word_bump(&word);
        assert_int_not_equal(atomic_load(&word), seen);
        assert_int_equal(xp_wake_word_wait(&word, seen, &deadline), 0);
}

/* A wait with nobody to wake it ends at its deadline. */
static void a_wait_ends_at_its_deadline(void **state)
{
        atomic_uint word = 0;
        struct timespec deadline = xp_monotonic_deadline(0);

        (void)state;
        assert_int_equal(xp_wake_word_wait(&word, xp_wake_word_prepare(&word), &deadline),
                         -ETIMEDOUT);
}

/* The mark a waiter took back leaves the word as the last bump left it. */
static void a_cancel_takes_back_the_mark(void **state)
{
        atomic_uint word = 0;
        unsigned int unmarked, seen;

        (void)state;
        xp_wake_word_bump(&word);
        unmarked = atomic_load(&word);
        seen = xp_wake_word_prepare(&word);
        assert_int_not_equal(seen, unmarked);
        xp_wake_word_cancel(&word, seen);
        assert_int_equal(atomic_load(&word), unmarked);
        /* a bump after the mark wins: the cancel leaves its value */
        seen = xp_wake_word_prepare(&word);
        xp_wake_word_bump(&word);
        unmarked = atomic_load(&word);
        xp_wake_word_cancel(&word, seen);
        assert_int_equal(atomic_load(&word), unmarked);
}

struct sleeper {
        atomic_uint word;
        atomic_bool flag;
};

struct sleeping {
        struct sleeper *shared;
        _Atomic pid_t tid;
        int result;
};

static void *sleeper_main(void *arg)
{
        struct sleeping *t = arg;
        struct sleeper *s = t->shared;
        struct timespec deadline = xp_monotonic_deadline(LIMIT_MS);

        atomic_store(&t->tid, gettid());
        for (;;) {
                unsigned int seen = xp_wake_word_prepare(&s->word);

                if (atomic_load(&s->flag))
                        break;
                t->result = xp_wake_word_wait(&s->word, seen, &deadline);
                if (t->result == -ETIMEDOUT)
                        break;
        }
        return NULL;
}

/* Whether thread tid sleeps in a futex on word (/proc's syscall file: the call's number, then its
 * arguments). */
static bool asleep_on(pid_t tid, const atomic_uint *word)
{
        char path[64];
        unsigned long nr, uaddr;
        FILE *f;
        int n;

        if (tid == 0)
                return false;
        snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", (int)tid);
        f = fopen(path, "r");
        if (!f)
                return false;
        n = fscanf(f, "%lu 0x%lx", &nr, &uaddr);
        fclose(f);
        return n == 2 && nr == SYS_futex && uaddr == (unsigned long)word;
}

/* Threads asleep on the word (seen asleep in the futex first, so that only the bump's wake-up can
 * end their sleep before the 60 s limit) all wake at the bump that follows their condition's
 * change. */
static void a_bump_wakes_every_sleeper(void **state)
{
        struct sleeper s = {0};
        struct sleeping t[2] = {{.shared = &s}, {.shared = &s}};
        pthread_t thread[2];
        struct timespec limit = xp_monotonic_deadline(LIMIT_MS), now;

        (void)state;
        for (int i = 0; i < 2; i++)
                assert_int_equal(pthread_create(&thread[i], NULL, sleeper_main, &t[i]), 0);
        while (!asleep_on(atomic_load(&t[0].tid), &s.word) ||
               !asleep_on(atomic_load(&t[1].tid), &s.word)) {
                clock_gettime(CLOCK_MONOTONIC, &now);
                if (now.tv_sec > limit.tv_sec)
                        fail_msg("the sleepers never slept");
                sched_yield();
        }
        atomic_store(&s.flag, true);
        xp_wake_word_bump(&s.word);
        for (int i = 0; i < 2; i++) {
                pthread_join(thread[i], NULL);
                assert_int_equal(t[i].result, 0);
        }
}

/* A wait the futex refuses (here an invalid deadline; ENOSYS under a seccomp filter) sleeps a
 * while and returns as if woken, so that its caller polls instead of spinning. The bound is a
 * lower one: a slow machine only makes the sleep longer. */
static void a_refused_wait_sleeps_instead(void **state)
{
        atomic_uint word = 0;
        struct timespec bad = {.tv_sec = 1, .tv_nsec = 2000000000L}, before, after;
        long elapsed_ms;

        (void)state;
        clock_gettime(CLOCK_MONOTONIC, &before);
        assert_int_equal(xp_wake_word_wait(&word, xp_wake_word_prepare(&word), &bad), 0);
        clock_gettime(CLOCK_MONOTONIC, &after);
        elapsed_ms =
            (after.tv_sec - before.tv_sec) * 1000 + (after.tv_nsec - before.tv_nsec) / 1000000;
        assert_true(elapsed_ms >= 5);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(a_bump_changes_the_word),
            cmocka_unit_test(a_wait_ends_at_its_deadline),
            cmocka_unit_test(a_cancel_takes_back_the_mark),
            cmocka_unit_test(a_bump_wakes_every_sleeper),
            cmocka_unit_test(a_refused_wait_sleeps_instead),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
