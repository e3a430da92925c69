/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <stdatomic.h>
#include <time.h>

/*
 * A word a thread sleeps on until another changes it and wakes it (a process-private futex).
 * Unlike a condition variable, the woken thread takes no mutex again: glibc's condition wait
 * retakes its mutex marked contended, so the unlock after every wake-up was a FUTEX_WAKE of its
 * own, and a mutex shared with writers (the store's) made the woken reader collide with them.
 *
 * The waiter marks itself asleep (xp_wake_word_prepare()), then checks its condition, and sleeps
 * only if the word is still what the mark returned; the waker changes what the condition reads,
 * then the word (xp_wake_word_bump()), which makes a system call only when a waiter marked it.
 * A wake-up may be spurious: the waiter checks its condition again. Start the word at 0.
 */

/* Marks a sleeper on the word; the value for xp_wake_word_wait(). Then check the condition. */
unsigned int xp_wake_word_prepare(atomic_uint *word);

/*
 * Takes back the mark of a waiter that will not sleep (its condition held, or its wait timed
 * out), so that the next bump makes no system call for it (a bump since made its own). Only for
 * a word one thread at a time waits on: it would take back another sleeper's mark as well.
 */
void xp_wake_word_cancel(atomic_uint *word, unsigned int seen);

/*
 * Sleeps while *word == seen, until a wake-up or the CLOCK_MONOTONIC deadline (NULL: none).
 * -ETIMEDOUT once the deadline passed, else 0 (woken, the word changed, a signal). Where the
 * futex refuses the wait (ENOSYS under a seccomp filter, an invalid deadline) it sleeps 10 ms, to
 * the deadline at most, and returns as if woken: the caller polls its condition, never spins.
 */
int xp_wake_word_wait(atomic_uint *word, unsigned int seen, const struct timespec *deadline);

/* Changes the word, and wakes every thread that marked itself asleep on it since the last bump.
 * Whatever the waker wrote before is seen by a waiter that reads its condition after. */
void xp_wake_word_bump(atomic_uint *word);
