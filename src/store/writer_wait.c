/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Where a writer sleeps until its writes are done or the queue's head is asked to lead. Each
 * writer has a word of its own (a group's writes share their writer's): the number of its queued
 * writes not yet done, with WRITER_WAIT_TURN for "lead the next batch". It sleeps, though, on the
 * store's one word of wake-ups (struct writer_wake), with a bit of its thread's for a bitset
 * futex: a leader marks every writer of its batch done (and the next leader's turn), then wakes
 * them all with one FUTEX_WAKE_BITSET naming their bits, after letting go of the store's lock.
 *
 * Why one wake-up per batch, not one per writer: each FUTEX_WAKE returned to the leader with the
 * writer it woke ready to run, and on two cores that writer preempted the leader at the system
 * call's exit about every other time (0.5 preemptions per create in bench_api, each a switch out
 * and one back). One call wakes the batch with one such exit. A writer of a later batch whose
 * thread shares a bit with one of this batch's (threads past 32) wakes for nothing and sleeps
 * again, as after any spurious wake-up.
 *
 * Why not a mutex and a condition variable, as before the words: the leader locked the writer's
 * mutex, broadcast and unlocked; a writer woken on the other core then often found the mutex still
 * held and slept on it again, and the unlock woke it a second time. The words also free the waker
 * from the writer's frame: the decrement that says "done" is the last it reads or writes of the
 * wait (it read the bit before), so the writer may return and its stack be reused at once.
 */
#include <limits.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "store_internal.h"

/* The bit of the calling thread: threads take the 32 bits in turn as they first write. */
static unsigned int thread_bit(void)
{
        static atomic_uint threads;
        static _Thread_local unsigned int bit;

        if (!bit)
                bit = 1u << (atomic_fetch_add(&threads, 1) % 32);
        return bit;
}

void writer_wait_init(struct writer_wait *w)
{
        atomic_init(&w->word, 0);
        w->bit = thread_bit();
}

void writer_wait_queued(struct writer_wait *w)
{
        atomic_fetch_add(&w->word, 1);
}

unsigned int writer_wait_done(struct writer_wait *w, atomic_bool *done, bool own)
{
        /* read before the decrement: the wait may be gone once its writer sees it */
        unsigned int bit = own ? 0 : w->bit;

        atomic_store(done, true);
        atomic_fetch_sub(&w->word, 1);
        return bit; /* the leader itself, settling its own write, is not asleep */
}

unsigned int writer_wait_turn(struct writer_wait *w)
{
        atomic_fetch_or(&w->word, WRITER_WAIT_TURN);
        return w->bit;
}

void writer_wake(struct writer_wake *wake, unsigned int bits)
{
        if (!bits)
                return;
        /* after the words changed: a writer that read the old count slept on the old value, or
         * finds the new one and does not sleep */
        atomic_fetch_add(&wake->word, 1);
        atomic_fetch_add(&wake->calls, 1);
        (void)syscall(SYS_futex, &wake->word, FUTEX_WAKE_BITSET_PRIVATE, INT_MAX, NULL, NULL, bits);
}

bool writer_wait(struct writer_wait *w, struct writer_wake *wake)
{
        for (;;) {
                /* the wake-ups' word first: a change of w's after this read changes it too */
                unsigned int woken = atomic_load(&wake->word);
                unsigned int seen = atomic_load(&w->word);

                if ((seen & ~WRITER_WAIT_TURN) == 0)
                        return true;
                if (seen & WRITER_WAIT_TURN) {
                        atomic_fetch_and(&w->word, ~WRITER_WAIT_TURN);
                        return false;
                }
                /* returns at once when the word moved on since; a wake-up may be spurious */
                (void)syscall(
                    SYS_futex, &wake->word, FUTEX_WAIT_BITSET_PRIVATE, woken, NULL, NULL, w->bit);
        }
}
