/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Which waiting pods leave the unschedulable set after a cluster event (docs/scheduler.md,
 * "Backoff"): kube-scheduler's queueing hints, made capacity-aware.
 *
 * Why not all of them: a node full with hundreds of pods waiting freed one pod's room at each
 * end, and every waiting pod was tried again and failed again (273 failed attempts per pod
 * done in bench_pods, each an attempt and often a write). After placed pods ended, the waiting
 * pods are walked in queue order (priority, then FIFO) and released while what the nodes have
 * free (xp_sched_headroom_take()) still covers their request; the rest stay parked and are
 * walked again at the next end. The headroom is the nodes' whole free, not what one event
 * freed, so a pod that asks more than one end frees is released once enough ends add up.
 *
 * Released at every event as before, whatever the headroom: after a node was added or changed or
 * an error (what was freed is not known), gang members (placed together), pods of a queue
 * (admission and reclaim go by more than what is free), nominated pods (their room is held for
 * them), and pods the headroom let through once and that then failed for another reason than
 * room (a selector, a taint: the headroom does not see those, and such a pod taking the
 * headroom at every walk would park the pods behind it).
 */
#include <stdlib.h>

#include "scheduler_state.h"
#include "xpool/sched.h"

/* Pods released whatever what is free (see above). */
static bool released_always(struct pending *p)
{
        /* a decoded form of an older version asks the same: a change of spec, labels or
         * annotations releases the pod by itself (pending_upsert()), and its status writes
         * change none of them */
        return p->gang || p->queue || p->headroom_blind || !p->decoded || pending_nominated(p);
}

/* Walks parked[0..n) in queue order, releasing those the headroom covers. */
static void release_covered(struct xp_scheduler *s,
                            struct xp_sched_headroom *headroom,
                            struct pending **parked,
                            size_t n)
{
        /* pods of one shape ask the same: once one is refused, the rest of it are (the
         * headroom only shrinks during the walk), without reading their requests */
        uint64_t walk = ++s->release_walks;

        qsort(parked, n, sizeof *parked, pending_compare);
        for (size_t i = 0; i < n; i++) {
                struct pending *p = parked[i];
                struct shape *shape = pending_shape(s, p);
                int r;

                if (shape && shape->refused_walk == walk)
                        continue;
                r = xp_sched_headroom_take(
                    headroom, p->decoded, s->hooks.preempt ? &p->priority : NULL, NULL);
                if (r == 0) {
                        if (shape)
                                shape->refused_walk = walk;
                        continue;
                }
                /* an error: the attempt says what is wrong with the pod */
                p->waiting = false;
                p->by_headroom = r > 0;
        }
}

void release_waiting(struct xp_scheduler *s, bool all)
{
        struct xp_sched_headroom *headroom = NULL;
        size_t n = 0;

        /* without memory for the headroom, every pod is released: tried, not lost */
        if (!all && xp_sched_headroom_new(s->sched, &headroom) < 0)
                all = true;
        for (size_t i = 0; i < s->n_queue; i++) {
                struct pending *p = s->queue[i];

                if (!p->waiting || p->drop)
                        continue;
                if (all || released_always(p)) {
                        p->waiting = false;
                        continue;
                }
                s->scratch[n++] = p;
        }
        if (n > 0)
                release_covered(s, headroom, s->scratch, n);
        xp_sched_headroom_free(headroom);
}

void release_missed(struct xp_scheduler *s, struct pending *p, const char *message)
{
        if (!p->by_headroom)
                return;
        p->by_headroom = false;
        /* lost a race for the room (to a pod tried before it): the walk was right, and the
         * next end releases it again */
        if (reasons_room_only(message))
                return;
        p->headroom_blind = true;
        /* the headroom it took may admit a pod parked behind it */
        s->freed = true;
}
