/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Words to sleep on (xpool/wake_word.h): Linux futexes, process-private. Bit 0 says that a
 * waiter marked itself since the last bump; the other bits count bumps. The bump and the mark are
 * read-modify-writes of the one word, so one of them comes first: a bump that finds no mark is
 * seen by the waiter's later condition check (the mark reads the bump's value), and a bump that
 * finds it wakes, or changes the word under a waiter about to sleep, which then does not.
 */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "xpool/timeutil.h"
#include "xpool/wake_word.h"

#define SLEEPER           1u
#define FALLBACK_SLEEP_MS 10

unsigned int xp_wake_word_prepare(atomic_uint *word)
{
        return atomic_fetch_or(word, SLEEPER) | SLEEPER;
}

void xp_wake_word_cancel(atomic_uint *word, unsigned int seen)
{
        (void)atomic_compare_exchange_strong(word, &seen, seen & ~SLEEPER);
}

/*
 * The futex refused the wait (a seccomp filter's ENOSYS, a deadline it finds invalid): sleeps a
 * short while instead, to the deadline at most, so that a caller's loop polls rather than spins.
 */
static int wait_without_futex(const struct timespec *deadline)
{
        struct timespec until = xp_monotonic_deadline(FALLBACK_SLEEP_MS);

        if (deadline && deadline->tv_nsec >= 0 && deadline->tv_nsec < 1000000000L) {
                int64_t left_ns =
                    (int64_t)deadline->tv_sec * 1000000000 + deadline->tv_nsec - xp_monotonic_ns();

                if (left_ns <= 0)
                        return -ETIMEDOUT;
                if (left_ns < FALLBACK_SLEEP_MS * 1000000)
                        until = *deadline;
        }
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL) == EINTR)
                ;
        return 0;
}

int xp_wake_word_wait(atomic_uint *word, unsigned int seen, const struct timespec *deadline)
{
        /* FUTEX_WAIT_BITSET takes an absolute deadline, on CLOCK_MONOTONIC without
         * FUTEX_CLOCK_REALTIME: a retry after a signal does not stretch the wait */
        long r = syscall(SYS_futex,
                         word,
                         FUTEX_WAIT_BITSET_PRIVATE,
                         seen,
                         deadline,
                         NULL,
                         FUTEX_BITSET_MATCH_ANY);

        if (r == 0 || errno == EAGAIN || errno == EINTR)
                return 0;
        if (errno == ETIMEDOUT)
                return -ETIMEDOUT;
        return wait_without_futex(deadline);
}

void xp_wake_word_bump(atomic_uint *word)
{
        unsigned int old = atomic_load(word);

        while (!atomic_compare_exchange_weak(word, &old, (old + 2) & ~SLEEPER))
                ;
        if (old & SLEEPER)
                (void)syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}
