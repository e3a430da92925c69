/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A filter's verdicts kept for the prioritize that follows it. kube-scheduler asks filter and
 * then prioritize for the same pod, and prioritize re-ran every fit check of the filter (most of
 * the cost: the scores themselves are cheap). So filter scores too, and its verdicts are kept
 * with what they depend on: the pod exactly as sent, the cache's generation (any Node or Pod
 * change, or a bind, moves it) and the names asked. The scores rank the nodes that fit among
 * those asked, so they stand for a prioritize asked either about the same names or about exactly
 * the ones that fit, in the same order (what kube-scheduler sends: the filter's answer); any
 * other request is evaluated afresh.
 */
#include <stdlib.h>
#include <string.h>

#include "kube_internal.h"

struct ext_reuse {
        json_t *pod; /* the Pod as the filter got it */
        uint64_t generation;
        char **names; /* the filter's names, into arena */
        char *arena;
        struct xp_sched_verdicts set;    /* set.items[i] for names[i] */
        struct xp_sched_verdict *picked; /* a prioritize's view of set.items */
};

struct ext_reuse *ext_reuse_new(void)
{
        return calloc(1, sizeof(struct ext_reuse));
}

static void forget(struct ext_reuse *r)
{
        json_decref(r->pod);
        free(r->names);
        free(r->arena);
        free(r->picked);
        xp_sched_verdicts_done(&r->set);
        *r = (struct ext_reuse){0};
}

void ext_reuse_free(struct ext_reuse *r)
{
        if (!r)
                return;
        forget(r);
        free(r);
}

void ext_reuse_keep(struct ext_reuse *r,
                    const json_t *pod,
                    uint64_t generation,
                    const char *const *names,
                    size_t n,
                    struct xp_sched_verdicts *set)
{
        size_t bytes = 0, at = 0;

        forget(r);
        for (size_t i = 0; i < n; i++)
                bytes += strlen(names[i]) + 1;
        r->names = malloc((n ? n : 1) * sizeof(*r->names));
        r->arena = malloc(bytes ? bytes : 1);
        r->picked = malloc((n ? n : 1) * sizeof(*r->picked));
        if (!r->names || !r->arena || !r->picked || !pod) {
                forget(r);
                xp_sched_verdicts_done(set);
                return;
        }
        for (size_t i = 0; i < n; i++) {
                size_t len = strlen(names[i]) + 1;
                memcpy(r->arena + at, names[i], len);
                r->names[i] = r->arena + at;
                at += len;
        }
        r->pod = json_incref((json_t *)pod);
        r->generation = generation;
        r->set = *set;
        *set = (struct xp_sched_verdicts){0};
}

/* The kept verdicts for names, when they are the filter's names or exactly those that fit. */
static bool pick(struct ext_reuse *r, const char *const *names, size_t n, bool fitting_only)
{
        size_t k = 0;

        for (size_t i = 0; i < r->set.n; i++) {
                if (fitting_only && r->set.items[i].fit != 1)
                        continue;
                if (k == n || strcmp(r->names[i], names[k]) != 0)
                        return false;
                r->picked[k++] = r->set.items[i];
        }
        return k == n;
}

const struct xp_sched_verdict *ext_reuse_find(
    struct ext_reuse *r, const json_t *pod, uint64_t generation, const char *const *names, size_t n)
{
        if (!r->pod || r->generation != generation || !json_equal(r->pod, (json_t *)pod))
                return NULL;
        if (pick(r, names, n, false) || pick(r, names, n, true))
                return r->picked;
        return NULL;
}
