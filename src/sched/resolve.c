/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Node names to entries, for xp_sched_evaluate(). kube-scheduler names the same nodes in the
 * same order pod after pod, and thousands of hash lookups (each a cache miss on the slot and one
 * on the entry's name) were a large part of an evaluation. So the names last asked are kept with
 * their entries, and a request that names them again resolves by comparing the names in order:
 * one sequential read. Entries live as long as the scheduler, so a kept entry stays right; a name
 * that had none may have one once an entry is added (n_nodes moves), and then the kept names are
 * looked up afresh. The entries' summaries (struct sfit) and whether a name repeats are kept too,
 * so that an evaluation that can judge by the summaries reads no entry at all.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sched_internal.h"

#define LOOKAHEAD 16 /* names fetched ahead of the one looked up */

struct sched_resolved {
        char *arena;              /* the names, each NUL-terminated, in order */
        struct snode **at;        /* the entry of each name, NULL when none */
        const struct sfit **fits; /* their summaries */
        size_t n;
        size_t n_nodes; /* sched->n_nodes when kept */
        bool missing;   /* some name had no entry */
        bool repeats;   /* some entry is named twice */
};

void sched_resolved_free(struct xp_sched *sched)
{
        if (!sched->resolved)
                return;
        free(sched->resolved->arena);
        free(sched->resolved->at);
        free(sched->resolved->fits);
        free(sched->resolved);
        sched->resolved = NULL;
}

static bool kept_match(const struct xp_sched *sched, const char *const *names, size_t n)
{
        const struct sched_resolved *k = sched->resolved;
        const char *p;

        if (!k || k->n != n || (k->missing && k->n_nodes != sched->n_nodes))
                return false;
        p = k->arena;
        for (size_t i = 0; i < n; i++) {
                const char *a = names[i];
                if (!a)
                        return false;
                while (*p && *p == *a) {
                        p++;
                        a++;
                }
                if (*p != *a)
                        return false;
                p++;
        }
        return true;
}

/* Keeps names and their entries for the next call; on failure keeps nothing (the next call looks
 * up again), since this only saves time. */
static void keep(struct xp_sched *sched,
                 const char *const *names,
                 size_t n,
                 struct snode **at,
                 const struct sfit **fits,
                 bool repeats)
{
        struct sched_resolved *k;
        size_t bytes = 0, off = 0;
        bool missing = false;

        sched_resolved_free(sched);
        for (size_t i = 0; i < n; i++) {
                if (!names[i])
                        return;
                bytes += strlen(names[i]) + 1;
                missing |= !at[i];
        }
        k = calloc(1, sizeof(*k));
        if (!k)
                return;
        k->arena = malloc(bytes ? bytes : 1);
        k->at = malloc((n ? n : 1) * sizeof(*k->at));
        k->fits = malloc((n ? n : 1) * sizeof(*k->fits));
        if (!k->arena || !k->at || !k->fits) {
                free(k->arena);
                free(k->at);
                free(k->fits);
                free(k);
                return;
        }
        for (size_t i = 0; i < n; i++) {
                size_t len = strlen(names[i]) + 1;
                memcpy(k->arena + off, names[i], len);
                off += len;
        }
        memcpy(k->at, at, n * sizeof(*at));
        memcpy(k->fits, fits, n * sizeof(*fits));
        k->n = n;
        k->n_nodes = sched->n_nodes;
        k->missing = missing;
        k->repeats = repeats;
        sched->resolved = k;
}

/* The summaries of the entries, and whether one is named twice (marked with a generation of
 * xp_sched_evaluate()'s, which marks afresh before it reads the marks). */
static bool summaries(struct xp_sched *sched, size_t n, struct snode **at, const struct sfit **fits)
{
        bool repeats = false;

        sched->eval_generation++;
        for (size_t i = 0; i < n; i++) {
                fits[i] = at[i] ? at[i]->fit : NULL;
                if (!at[i])
                        continue;
                repeats |= at[i]->eval_generation == sched->eval_generation;
                at[i]->eval_generation = sched->eval_generation;
        }
        return repeats;
}

/* Thousands of lookups, each a miss on the name's slot and entry: hashed first, then fetched
 * ahead in two steps (the slot, then what it names) so the misses overlap. */
static int
lookup(const struct xp_sched *sched, const char *const *names, size_t n, struct snode **at)
{
        _cleanup_free_ uint64_t *h = malloc((n + 1) * sizeof(*h));

        if (!h)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                h[i] = names[i] ? xp_map_hash(names[i]) : 0;
        for (size_t i = 0; i < n; i++) {
                if (i + LOOKAHEAD < n)
                        xp_map_prefetch(&sched->node_map, h[i + LOOKAHEAD], false, 0);
                if (i + LOOKAHEAD / 2 < n)
                        xp_map_prefetch(&sched->node_map, h[i + LOOKAHEAD / 2], true, 0);
                at[i] = names[i] ? xp_map_get_hashed(&sched->node_map, names[i], h[i]) : NULL;
        }
        return 0;
}

int sched_resolve_names(struct xp_sched *sched,
                        const char *const *names,
                        size_t n,
                        struct snode **at,
                        const struct sfit **fits,
                        bool *ret_repeats)
{
        int r;

        if (kept_match(sched, names, n)) {
                memcpy(at, sched->resolved->at, n * sizeof(*at));
                memcpy(fits, sched->resolved->fits, n * sizeof(*fits));
                *ret_repeats = sched->resolved->repeats;
                return 0;
        }
        r = lookup(sched, names, n, at);
        if (r < 0)
                return r;
        *ret_repeats = summaries(sched, n, at, fits);
        keep(sched, names, n, at, fits, *ret_repeats);
        return 0;
}
