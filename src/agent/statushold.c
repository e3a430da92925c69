/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The status writers' hold (statushold.h): a ring of the pods' last statuses that are not final,
 * by a hash of the uid (a collision only misjudges one pod's shortness), and when a short pod
 * was last seen.
 */
#include <string.h>

#include "statushold.h"
#include "xpool/map.h"

void xp_status_hold_init(struct xp_status_hold *h, int64_t wait_ns)
{
        memset(h, 0, sizeof(*h));
        h->wait_ns = wait_ns;
}

/* 0 marks an empty slot */
static uint64_t hash_of(const char *uid)
{
        return xp_hash_string(uid) | 1;
}

/* The uid's slot; -1 when it is not remembered. */
static int slot_of(const struct xp_status_hold *h, uint64_t uid_hash)
{
        for (int i = 0; i < XP_STATUS_HOLD_RECENT; i++)
                if (h->recent[i].uid_hash == uid_hash)
                        return i;
        return -1;
}

/* The longest wait: XP_STATUS_HOLD_STRETCH times --status-coalesce, or the stretch's cap when
 * that is less, never under --status-coalesce itself. */
static int64_t longest_wait(const struct xp_status_hold *h)
{
        int64_t longest = h->wait_ns * XP_STATUS_HOLD_STRETCH;

        if (longest > XP_STATUS_HOLD_STRETCH_MAX_NS)
                longest = XP_STATUS_HOLD_STRETCH_MAX_NS;
        return longest < h->wait_ns ? h->wait_ns : longest;
}

/* A final status: was the pod's first one put within the longest wait before it? Then it is a
 * short pod, and how long it took is learnt. */
static void learn_final(struct xp_status_hold *h, uint64_t uid_hash, int64_t now_ns)
{
        int i = slot_of(h, uid_hash);
        int64_t took;

        if (i < 0)
                return;
        took = now_ns - h->recent[i].at_ns;
        if (took <= longest_wait(h)) {
                h->short_at_ns = now_ns;
                h->durations_ns[h->next_duration] = took;
                h->next_duration = (h->next_duration + 1) % XP_STATUS_HOLD_DURATIONS;
        }
        h->recent[i].uid_hash = 0; /* the pod is over */
}

/* The wait now: the last short pods' longest time and a quarter, within the bounds. */
static int64_t stretched_wait(const struct xp_status_hold *h)
{
        int64_t longest = 0, cap = longest_wait(h), wait;

        for (int i = 0; i < XP_STATUS_HOLD_DURATIONS; i++)
                if (h->durations_ns[i] > longest)
                        longest = h->durations_ns[i];
        wait = longest + longest / 4;
        if (wait < h->wait_ns)
                return h->wait_ns;
        return wait > cap ? cap : wait;
}

/* The pod's first status that is not final: a sync that puts its Running again (the echo of its
 * write in the watch) must not make a long pod's end look short. */
static void remember(struct xp_status_hold *h, uint64_t uid_hash, int64_t now_ns)
{
        unsigned i;

        if (slot_of(h, uid_hash) >= 0)
                return;
        i = h->next;
        h->next = (h->next + 1) % XP_STATUS_HOLD_RECENT;
        h->recent[i].uid_hash = uid_hash;
        h->recent[i].at_ns = now_ns;
}

void xp_status_hold_forget(struct xp_status_hold *h, const char *uid)
{
        int i = slot_of(h, hash_of(uid));

        if (i >= 0)
                h->recent[i].uid_hash = 0;
}

int64_t xp_status_hold_until(struct xp_status_hold *h, const char *uid, bool final, int64_t now_ns)
{
        uint64_t uid_hash = hash_of(uid);

        if (h->wait_ns <= 0)
                return 0;
        if (final) {
                learn_final(h, uid_hash, now_ns);
                return 0;
        }
        remember(h, uid_hash, now_ns);
        if (h->short_at_ns == 0 || now_ns - h->short_at_ns > XP_STATUS_HOLD_MEMORY_NS)
                return 0;
        return now_ns + stretched_wait(h);
}
