/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A gang as preemptor (include/sched/xpool/preempt.h): its members are weighed one after the
 * other, each on the snapshot as the members before it left it: a member that fits as the
 * cluster is takes its place, one that does not gets xp_sched_preempt()'s choice. What a member
 * took is held and its victims count as gone for the members after it, so two members never
 * count on the same freed devices. All or nothing: when one member finds no room even with
 * evictions, no victim is chosen for any. The snapshot ends as it began either way.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "preempt_internal.h"

/* The victims taken out so far (to be accounted again) and the members held. */
struct trial {
        struct spod **out;
        size_t n_out;
        size_t n_held;
};

/* Takes a member's victims out of the snapshot: they count as gone (and are no candidates). */
static int victims_out(struct xp_sched *sched, const struct xp_preemption *pre, struct trial *t)
{
        struct spod **more = realloc(t->out, (t->n_out + pre->n_victims) * sizeof *more);

        if (!more && pre->n_victims)
                return -ENOMEM;
        t->out = more;
        for (size_t i = 0; i < pre->n_victims; i++) {
                const struct xp_sched_victim *v = &pre->victims[i];
                char key[2 * 254 + 2];
                struct spod *p;

                if (snprintf(key, sizeof key, "%s/%s", v->namespace, v->name) >= (int)sizeof key)
                        continue;
                p = xp_map_get(&sched->pod_map, key);
                if (!p || p->terminating)
                        continue;
                if (p->node)
                        sched_account(p->node, p, -1);
                p->terminating = true;
                t->out[t->n_out++] = p;
        }
        return 0;
}

/* Puts back what the trial changed: the victims accounted again, the members' holds released. */
static void trial_undo(struct xp_sched *sched, const struct xp_pod *const *pods, struct trial *t)
{
        for (size_t i = t->n_out; i-- > 0;) {
                t->out[i]->terminating = false;
                if (t->out[i]->node)
                        sched_account(t->out[i]->node, t->out[i], +1);
        }
        for (size_t i = 0; i < t->n_held; i++)
                (void)xp_sched_release(sched, pods[i]->metadata.namespace, pods[i]->metadata.name);
        free(t->out);
        *t = (struct trial){0};
}

/* One member: 1 with *ret (its place, and victims when it needs any), 0 no room, -errno. */
static int member_weigh(struct xp_sched *sched,
                        const struct xp_pod *pod,
                        const struct xp_preempt_options *options,
                        struct xp_preemption *ret,
                        struct xp_error *err)
{
        char *reason = NULL;
        int r = xp_sched_place(sched, pod, &ret->placement, &reason, err);

        free(reason);
        if (r > 0) {
                ret->node = strdup(ret->placement.node);
                return ret->node ? 1 : -ENOMEM;
        }
        if (r < 0)
                return r;
        return xp_sched_preempt(sched, pod, options, ret, err);
}

int xp_sched_preempt_gang(struct xp_sched *sched,
                          const struct xp_pod *const *pods,
                          size_t n,
                          const struct xp_preempt_options *options,
                          struct xp_preemption *ret,
                          struct xp_error *err)
{
        struct trial t = {0};
        size_t victims = 0;
        int r = 1;

        for (size_t i = 0; i < n; i++)
                ret[i] = (struct xp_preemption){0};
        for (size_t i = 0; i < n && r > 0; i++) {
                r = member_weigh(sched, pods[i], options, &ret[i], err);
                if (r > 0)
                        r = victims_out(sched, &ret[i], &t);
                if (r >= 0 && ret[i].node) {
                        r = xp_sched_hold(sched, pods[i], &ret[i].placement, err);
                        r = r < 0 ? r : 1;
                        t.n_held = i + 1;
                }
                victims += ret[i].n_victims;
        }
        trial_undo(sched, pods, &t);
        if (r > 0 && victims == 0)
                r = 0; /* it fits without evictions: nothing for preemption to do */
        if (r <= 0)
                for (size_t i = 0; i < n; i++)
                        xp_preemption_done(&ret[i]);
        return r;
}
