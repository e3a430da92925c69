/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Where a writer sleeps until its writes are done or the queue's head is asked to lead: one
 * futex word per writer (a group's writes share their writer's), the number of its queued writes
 * not yet done with WRITER_WAIT_TURN for "lead the next batch". A leader wakes each writer of its
 * batch with one atomic decrement and one FUTEX_WAKE, after letting go of the store's lock.
 *
 * Why not a mutex and a condition variable, as before: the leader locked the writer's mutex,
 * broadcast and unlocked; a writer woken on the other core then often found the mutex still held
 * and slept on it again, and the unlock woke it a second time (two more futex calls and a context
 * switch per write), and glibc's condition variable takes its own internal locks on both sides.
 * The word also frees the waker from the writer's frame: the decrement that says "done" is the
 * last it reads or writes of the wait, so the writer may return and its stack be reused at once.
 * The FUTEX_WAKE that follows may then name an address that holds something else by now: the
 * kernel touches no memory for a private wake, and whatever sleeps there wakes spuriously and
 * checks its own condition, as every futex user does (glibc's sem_post() relies on the same).
 */
#include <limits.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "store_internal.h"

static void futex_sleep(atomic_uint *word, unsigned int seen)
{
        /* returns at once when the word no longer holds seen; a wake-up may be spurious */
        (void)syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, seen, NULL, NULL, 0);
}

static void futex_wake_one(atomic_uint *word)
{
        (void)syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

void writer_wait_init(struct writer_wait *w)
{
        atomic_init(&w->word, 0);
}

void writer_wait_queued(struct writer_wait *w)
{
        atomic_fetch_add(&w->word, 1);
}

void writer_wait_done(struct writer_wait *w, atomic_bool *done, bool own)
{
        atomic_store(done, true);
        /* the last touch of the wait's memory: its writer may be gone once it sees this */
        atomic_fetch_sub(&w->word, 1);
        if (!own) /* the leader itself, settling its own write, is not asleep */
                futex_wake_one(&w->word);
}

void writer_wait_turn(struct writer_wait *w)
{
        atomic_fetch_or(&w->word, WRITER_WAIT_TURN);
        futex_wake_one(&w->word);
}

bool writer_wait(struct writer_wait *w)
{
        for (;;) {
                unsigned int seen = atomic_load(&w->word);

                if ((seen & ~WRITER_WAIT_TURN) == 0)
                        return true;
                if (seen & WRITER_WAIT_TURN) {
                        atomic_fetch_and(&w->word, ~WRITER_WAIT_TURN);
                        return false;
                }
                futex_sleep(&w->word, seen);
        }
}
