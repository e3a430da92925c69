/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The nominees of preemptions and what is held for them, as kube-scheduler counts nominated pods
 * in every other pod's filters (its addNominatedPods): a nominee's devices, CPUs and counts stay
 * held in the snapshot on every pass, given back only for the nominee's own attempt (and for its
 * gang's) and held again right after it, a renewed snapshot included; a nominee whose victims
 * are still terminating preempts nobody else (kube-scheduler's podEligibleToPreemptOthers), even
 * once its nomination is forgotten.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "queue_state.h"
#include "xpool/log.h"
#include "xpool/log_limit.h"
#include "xpool/map.h"
#include "xpool/preempt.h"

/* A hold that keeps failing alike is said again after this long */
#define HOLD_FAILED_SAID_AGAIN_MS 60000
/* A failed hold is tried again after this long, doubled at each failure in a row up to the
 * most: tried before every pod, a hold that keeps failing cost pods x failing nominees holds */
#define HOLD_RETRY_FIRST_MS 100
#define HOLD_RETRY_MAX_MS   10000

void nominee_free(struct nominee *n)
{
        if (!n)
                return;
        free(n->key);
        xp_pod_free(n->pod);
        xp_placement_done(&n->placement);
        free(n);
}

/* ns NULL is "default", as the snapshot reads a pod without one: the same nominee either way. */
static char *key_of(const char *ns, const char *name)
{
        char *key;

        if (asprintf(&key, "%s/%s", ns ? ns : "default", name) < 0)
                return NULL;
        return key;
}

char *nominee_key(const struct xp_pod *pod)
{
        return key_of(pod->metadata.namespace, pod->metadata.name);
}

void queue_ctl_unhold(struct queue_ctl *ctl, struct xp_sched *sched, const struct xp_pod *pod)
{
        _cleanup_free_ char *key = NULL;
        struct nominee *n;

        if (ctl->nominees.n == 0)
                return; /* every attempt asks: most often nobody holds anything */
        key = nominee_key(pod);
        n = key ? xp_map_get(&ctl->nominees, key) : NULL;
        if (!n)
                return;
        n->placed = false; /* tried again: a binding that failed left nothing in the snapshot */
        ctl->holds_due = true;
        if (!n->held)
                return;
        (void)xp_sched_release(sched, pod->metadata.namespace, pod->metadata.name);
        n->held = false;
}

/* Whether n still stands: its victims going keep it 90 s past the last of them. */
static bool nominee_current(struct queue_ctl *ctl, const struct xp_sched *sched, struct nominee *n)
{
        int64_t now = xp_clock_monotonic_ms(ctl->clock);

        if (now + NOMINATION_MS > n->until_ms &&
            xp_sched_victims_terminating(sched, n->placement.node, n->priority))
                n->until_ms = now + NOMINATION_MS;
        return now < n->until_ms;
}

/* The earliest a failed hold is due again, for the hold passes before each pod. */
static void holds_retry_at(struct queue_ctl *ctl, int64_t at_ms)
{
        if (ctl->holds_retry_ms == 0 || at_ms < ctl->holds_retry_ms)
                ctl->holds_retry_ms = at_ms;
}

/*
 * Holds what n was nominated to (pod: its pod as the caller has it). A hold that fails leaves
 * the devices its victims free to the next pod tried, the victims' replacements first, and its
 * nominee then evicts again: it is said (once a minute while the same) and tried again after a
 * backoff (HOLD_RETRY_FIRST_MS, doubling to HOLD_RETRY_MAX_MS), before the next pod once it is
 * due (holds_retry_ms). One already held is left as it is: accounting it again and failing
 * would leave the old hold in the snapshot with nobody to give it back.
 */
void nominee_hold(struct queue_ctl *ctl,
                  struct xp_sched *sched,
                  const struct xp_pod *pod,
                  struct nominee *n)
{
        struct xp_error err = {0};
        uint64_t held_back = 0;
        int64_t now;
        int r;

        if (n->held)
                return;
        now = xp_clock_monotonic_ms(ctl->clock);
        if (now < n->hold_retry_ms) {
                holds_retry_at(ctl, n->hold_retry_ms);
                return;
        }
        r = xp_sched_hold(sched, pod, &n->placement, &err);
        n->held = r >= 0;
        if (n->held) {
                n->hold_gap_ms = 0;
                n->hold_retry_ms = 0;
                return;
        }
        n->hold_gap_ms = n->hold_gap_ms == 0                      ? HOLD_RETRY_FIRST_MS
                         : n->hold_gap_ms < HOLD_RETRY_MAX_MS / 2 ? 2 * n->hold_gap_ms
                                                                  : HOLD_RETRY_MAX_MS;
        n->hold_retry_ms = now + n->hold_gap_ms;
        holds_retry_at(ctl, n->hold_retry_ms);
        if (xp_log_limit_check(&ctl->hold_failed,
                               xp_hash_string(n->key),
                               now,
                               HOLD_FAILED_SAID_AGAIN_MS,
                               &held_back))
                xp_log(LOG_WARNING,
                       "scheduler: the devices of nominee %s on node %s not held (tried again "
                       "in %" PRId64 " ms; %" PRIu64 " more failures since last said): %s",
                       n->key,
                       n->placement.node ? n->placement.node : "(none)",
                       n->hold_gap_ms,
                       held_back,
                       err.msg[0] ? err.msg : strerror(-r));
}

bool nominee_waits(struct queue_ctl *ctl,
                   struct xp_sched *sched,
                   const struct xp_pod *pod,
                   struct nominee *n)
{
        int64_t priority = pod->spec.priority.set ? pod->spec.priority.value : 0;

        if (n && nominee_current(ctl, sched, n)) {
                nominee_hold(ctl, sched, pod, n);
                return true;
        }
        /* forgotten (a renewed snapshot, a nomination run out) while its victims still go */
        return xp_sched_victims_terminating(sched, pod->status.nominated_node_name, priority);
}

bool gang_waiting(struct queue_ctl *ctl,
                  struct xp_sched *sched,
                  const struct xp_pod *const *pods,
                  size_t n)
{
        bool waiting = false;

        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *key = nominee_key(pods[i]);
                struct nominee *m = key ? xp_map_get(&ctl->nominees, key) : NULL;

                if (nominee_waits(ctl, sched, pods[i], m))
                        waiting = true;
        }
        return waiting;
}

void queue_ctl_hold_nominees(struct queue_ctl *ctl, struct xp_sched *sched, bool all)
{
        struct xp_map *m = &ctl->nominees;
        bool relisted = ctl->nominees_relisted; /* holds_due too: this pass walks them all */
        bool retry_due =
            ctl->holds_retry_ms > 0 && xp_clock_monotonic_ms(ctl->clock) >= ctl->holds_retry_ms;

        ctl->nominees_relisted = false;
        if (m->n == 0 || (!all && !ctl->holds_due && !retry_due))
                return;
        ctl->holds_due = false;
        ctl->holds_retry_ms = 0; /* the walk meets every hold not made, each says when it is due */
        /* a removal leaves a tombstone: the walk goes on over the same slots */
        for (size_t i = 0; i < m->cap; i++) {
                struct nominee *n = m->keys && m->keys[i] ? m->values[i] : NULL;

                if (!n || (n->held && !all) || n->placed)
                        continue;
                /* gone while the snapshot was renewed (deleted in the relist's gap): nothing
                 * says so but its absence from the list */
                if (!nominee_current(ctl, sched, n) || (relisted && !n->listed))
                        queue_ctl_forget(
                            ctl, sched, n->pod->metadata.namespace, n->pod->metadata.name);
                else
                        nominee_hold(ctl, sched, n->pod, n);
        }
        ctl->nominees_relisted = false;
}

void queue_ctl_nominee_placed(struct queue_ctl *ctl, const char *ns, const char *name, bool placed)
{
        _cleanup_free_ char *key = NULL;
        struct nominee *n;

        if (ctl->nominees.n == 0 || !(key = key_of(ns, name)))
                return;
        n = xp_map_get(&ctl->nominees, key);
        if (!n)
                return;
        n->placed = placed;
        if (!placed)
                ctl->holds_due = true; /* its binding failed: held again until it is tried */
}

void queue_ctl_nominees_renewed(struct queue_ctl *ctl)
{
        struct xp_map *m = &ctl->nominees;

        /* the renewed snapshot has no holds: the next pass holds every nominee again */
        for (size_t i = 0; i < m->cap; i++) {
                struct nominee *n = m->keys && m->keys[i] ? m->values[i] : NULL;

                if (n) {
                        n->held = false;
                        n->placed = false;
                        n->listed = false;
                        n->hold_retry_ms = 0; /* a new snapshot: what failed may not now */
                        n->hold_gap_ms = 0;
                }
        }
        ctl->holds_due = true;
        ctl->nominees_relisted = true;
}

void queue_ctl_nominee_listed(struct queue_ctl *ctl, const char *ns, const char *name, bool waiting)
{
        _cleanup_free_ char *key = NULL;
        struct nominee *n;

        if (ctl->nominees.n == 0 || !(key = key_of(ns, name)))
                return;
        n = xp_map_get(&ctl->nominees, key);
        if (n)
                n->listed = waiting;
}

/* A pod placed or gone is no nominee any more. */
void queue_ctl_forget(struct queue_ctl *ctl,
                      struct xp_sched *sched,
                      const char *ns,
                      const char *name)
{
        _cleanup_free_ char *key = NULL;
        struct nominee *n;

        if (!(key = key_of(ns, name)))
                return;
        n = xp_map_del(&ctl->nominees, key);
        if (n && n->held)
                (void)xp_sched_release(sched, ns, name);
        /* held, or given back for its attempt and not placed: room the parked pods may fit in,
         * which no pod's end says (a hold that failed counts too: one walk more) */
        if (n && (n->held || !n->placed))
                ctl->room_freed = true;
        nominee_free(n);
}

bool queue_ctl_room_freed(struct queue_ctl *ctl)
{
        bool freed = ctl->room_freed;

        ctl->room_freed = false;
        return freed;
}
