/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Proportional scaling (Kubernetes' sync.go scale()): when a Deployment's replicas change in the
 * middle of a rollout, every active ReplicaSet grows or shrinks by its share, so that neither the
 * new nor the old pods absorb the whole change and the rollout's ratio is kept.
 */
#include <stdlib.h>

#include "deployment.h"

bool xp_deploy_is_scaling_event(const struct xp_deploy_spec *spec,
                                const struct xp_deploy_rs *all,
                                size_t n)
{
        for (size_t i = 0; i < n; i++)
                if (all[i].replicas > 0 && all[i].desired >= 0 && all[i].desired != spec->replicas)
                        return true;
        return false;
}

/* Larger first; on a tie the newer first (scaling up) or the older first (scaling down). */
static int by_size_newer(const void *pa, const void *pb)
{
        const struct xp_deploy_rs *a = pa, *b = pb;

        if (a->replicas != b->replicas)
                return a->replicas > b->replicas ? -1 : 1;
        if (a->created_s != b->created_s)
                return a->created_s > b->created_s ? -1 : 1;
        return 0;
}

static int by_size_older(const void *pa, const void *pb)
{
        const struct xp_deploy_rs *a = pa, *b = pb;

        if (a->replicas != b->replicas)
                return a->replicas > b->replicas ? -1 : 1;
        if (a->created_s != b->created_s)
                return a->created_s < b->created_s ? -1 : 1;
        return 0;
}

/* getReplicaSetFraction: rs's share of the new size, less what it has. */
static int32_t fraction(const struct xp_deploy_spec *spec, const struct xp_deploy_rs *rs)
{
        int64_t max_replicas = (int64_t)spec->replicas + spec->max_surge;
        int64_t annotated = rs->max >= 0 ? rs->max : spec->status_replicas;

        if (spec->replicas == 0)
                return -rs->replicas;
        if (annotated <= 0)
                return 0;
        /* rounded half away from zero, as Go's math.Round of a non-negative quotient */
        return (int32_t)((2 * (int64_t)rs->replicas * max_replicas + annotated) / (2 * annotated) -
                         rs->replicas);
}

/* getProportion: the share, within what is left to add (or take). */
static int32_t proportion(const struct xp_deploy_spec *spec,
                          const struct xp_deploy_rs *rs,
                          int32_t to_add,
                          int32_t added)
{
        int32_t share, allowed = to_add - added;

        if (rs->replicas == 0 || to_add == 0 || to_add == added)
                return 0;
        share = fraction(spec, rs);
        if (to_add > 0)
                return share < allowed ? share : allowed;
        return share > allowed ? share : allowed;
}

static ssize_t only_active(const struct xp_deploy_rs *all, size_t n, ssize_t new_index)
{
        ssize_t found = -1;
        size_t active = 0;

        for (size_t i = 0; i < n; i++)
                if (all[i].replicas > 0) {
                        found = (ssize_t)i;
                        active++;
                }
        if (active == 1)
                return found;
        if (active == 0)
                return new_index >= 0 ? new_index : -2;
        return -1;
}

/* FindActiveOrLatest found none active: the newest ReplicaSet takes the replicas. */
static ssize_t latest(const struct xp_deploy_rs *all, size_t n)
{
        ssize_t best = -1;

        for (size_t i = 0; i < n; i++)
                if (best < 0 || all[i].created_s > all[best].created_s)
                        best = (ssize_t)i;
        return best;
}

static void proportionally(const struct xp_deploy_spec *spec, struct xp_deploy_rs *all, size_t n)
{
        int64_t sum = 0, allowed = spec->replicas;
        int32_t to_add, added = 0;

        for (size_t i = 0; i < n; i++)
                sum += all[i].replicas;
        if (spec->replicas > 0)
                allowed += spec->max_surge;
        to_add = (int32_t)(allowed - sum);
        if (to_add == 0)
                return;
        if (n > 1) /* an empty array may be NULL, which qsort may not take */
                qsort(all, n, sizeof(*all), to_add > 0 ? by_size_newer : by_size_older);
        for (size_t i = 0; i < n; i++) {
                int32_t p = proportion(spec, &all[i], to_add, added);

                all[i].replicas += p;
                added += p;
        }
        /* what rounding left goes to the largest */
        if (n > 0) {
                all[0].replicas += to_add - added;
                if (all[0].replicas < 0)
                        all[0].replicas = 0;
        }
}

void xp_deploy_scale(const struct xp_deploy_spec *spec,
                     struct xp_deploy_rs *all,
                     size_t n,
                     ssize_t new_index)
{
        ssize_t one = only_active(all, n, new_index);

        if (one == -2)
                one = latest(all, n);
        if (one >= 0) {
                all[one].replicas = spec->replicas;
                return;
        }
        /* IsSaturated: the new ReplicaSet runs everything; the old ones go */
        if (new_index >= 0 && all[new_index].replicas == spec->replicas &&
            all[new_index].desired == spec->replicas &&
            all[new_index].available == spec->replicas) {
                for (size_t i = 0; i < n; i++)
                        if ((ssize_t)i != new_index)
                                all[i].replicas = 0;
                return;
        }
        if (!spec->recreate)
                proportionally(spec, all, n);
}
