/* SPDX-License-Identifier: Apache-2.0 */
/* Words to sleep on (xpool/wake_word.h). */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

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
        int result;
};

static void *sleeper_main(void *arg)
{
        struct sleeper *s = arg;
        struct timespec deadline = xp_monotonic_deadline(LIMIT_MS);

        for (;;) {
                unsigned int seen = xp_wake_word_prepare(&s->word);

                if (atomic_load(&s->flag))
                        break;
                s->result = xp_wake_word_wait(&s->word, seen, &deadline);
                if (s->result == -ETIMEDOUT)
                        break;
        }
        return NULL;
}

/* A thread asleep on the word wakes at the bump that follows the change of its condition. */
static void a_bump_wakes_a_sleeper(void **state)
{
        struct sleeper s = {0};
        pthread_t thread;

        (void)state;
        assert_int_equal(pthread_create(&thread, NULL, sleeper_main, &s), 0);
        atomic_store(&s.flag, true);
        xp_wake_word_bump(&s.word);
        pthread_join(thread, NULL);
        assert_int_equal(s.result, 0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(a_bump_changes_the_word),
            cmocka_unit_test(a_wait_ends_at_its_deadline),
            cmocka_unit_test(a_cancel_takes_back_the_mark),
            cmocka_unit_test(a_bump_wakes_a_sleeper),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
