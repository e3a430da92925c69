/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The arithmetic of a rollout: maxSurge and maxUnavailable, how far the new ReplicaSet grows and
 * the old ones shrink in one step of a rolling update (Kubernetes' rolling.go and
 * deploymentutil), and the Recreate strategy's steps.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "deployment.h"

static int bad_percent(const char *field, const char *text, struct xp_error *err)
{
        return xp_errorf(
            err,
            -EINVAL,
            "%s: Invalid value: \"%s\": a valid percent string must be a numeric string followed by an ending '%%' (e.g. '1%%',  or '93%%', regex used for validation is '[0-9]+%%')",
            field,
            text);
}

int xp_intstr_resolve(const json_t *value,
                      int32_t total,
                      bool round_up,
                      const char *field,
                      int32_t *ret,
                      struct xp_error *err)
{
        const char *text;
        char *end;
        long pct;
        int64_t scaled;

        if (json_is_integer(value)) {
                json_int_t v = json_integer_value(value);

                if (v < 0 || v > INT32_MAX)
                        return xp_errorf(
                            err,
                            -EINVAL,
                            "%s: Invalid value: %lld: must be greater than or equal to 0",
                            field,
                            (long long)v);
                *ret = (int32_t)v;
                return 0;
        }
        text = json_string_value(value);
        if (!text)
                return xp_errorf(
                    err, -EINVAL, "%s: Invalid value: must be an integer or a percentage", field);
        if (!*text || text[strlen(text) - 1] != '%' || text[0] < '0' || text[0] > '9')
                return bad_percent(field, text, err);
        errno = 0;
        pct = strtol(text, &end, 10);
        if (errno || *end != '%' || end[1] || pct > 100000)
                return bad_percent(field, text, err);
        scaled = (int64_t)pct * total;
        *ret = (int32_t)(round_up ? (scaled + 99) / 100 : scaled / 100);
        return 0;
}

int xp_deploy_fenceposts(const json_t *max_surge,
                         const json_t *max_unavailable,
                         int32_t replicas,
                         int32_t *ret_surge,
                         int32_t *ret_unavailable,
                         struct xp_error *err)
{
        json_t *dflt = json_string("25%");
        int32_t surge, unavailable;
        int r;

        if (!dflt)
                return -ENOMEM;
        r = xp_intstr_resolve(max_surge ? max_surge : dflt,
                              replicas,
                              true,
                              "spec.strategy.rollingUpdate.maxSurge",
                              &surge,
                              err);
        if (r >= 0)
                r = xp_intstr_resolve(max_unavailable ? max_unavailable : dflt,
                                      replicas,
                                      false,
                                      "spec.strategy.rollingUpdate.maxUnavailable",
                                      &unavailable,
                                      err);
        json_decref(dflt);
        if (r < 0)
                return r;
        /* Both 0 would never move; validation refuses it, but a percentage of a small count can
         * still come to 0, and then one pod may be unavailable (as Kubernetes does). */
        if (surge == 0 && unavailable == 0)
                unavailable = 1;
        *ret_surge = surge;
        *ret_unavailable = unavailable;
        return 0;
}

static int64_t sum_replicas(const struct xp_deploy_rs *rs, size_t n)
{
        int64_t sum = 0;

        for (size_t i = 0; i < n; i++)
                sum += rs[i].replicas;
        return sum;
}

int32_t xp_deploy_rolling_new(const struct xp_deploy_spec *spec,
                              const struct xp_deploy_rs *all,
                              size_t n,
                              const struct xp_deploy_rs *new_rs)
{
        int64_t current = sum_replicas(all, n);
        int64_t max_total = (int64_t)spec->replicas + spec->max_surge;
        int64_t up;

        if (spec->recreate)
                return spec->replicas;
        if (new_rs->replicas >= spec->replicas)
                return spec->replicas;
        if (current >= max_total)
                return new_rs->replicas;
        up = max_total - current;
        if (up > spec->replicas - new_rs->replicas)
                up = spec->replicas - new_rs->replicas;
        return (int32_t)(new_rs->replicas + up);
}

static int by_creation(const void *pa, const void *pb)
{
        const struct xp_deploy_rs *a = pa, *b = pb;

        if (a->created_s != b->created_s)
                return a->created_s < b->created_s ? -1 : 1;
        return strcmp(a->name ? a->name : "", b->name ? b->name : "");
}

/* cleanupUnhealthyReplicas: the old replicas that are not available go first, up to most. */
static int32_t cleanup_unhealthy(struct xp_deploy_rs *old, size_t n, int64_t most)
{
        int32_t total = 0;

        for (size_t i = 0; i < n && total < most; i++) {
                int32_t unhealthy = old[i].replicas - old[i].available;
                int64_t down = most - total;

                if (old[i].replicas == 0 || unhealthy <= 0)
                        continue;
                if (down > unhealthy)
                        down = unhealthy;
                old[i].replicas -= (int32_t)down;
                total += (int32_t)down;
        }
        return total;
}

int32_t xp_deploy_rolling_old(const struct xp_deploy_spec *spec,
                              struct xp_deploy_rs *old,
                              size_t n_old,
                              const struct xp_deploy_rs *new_rs)
{
        int64_t old_count = sum_replicas(old, n_old);
        int64_t all = old_count + (new_rs ? new_rs->replicas : 0);
        int64_t min_available = (int64_t)spec->replicas - spec->max_unavailable;
        int64_t new_unavailable = new_rs ? new_rs->replicas - new_rs->available : 0;
        int64_t most, available = new_rs ? new_rs->available : 0, left;
        int32_t total;

        if (old_count == 0)
                return 0;
        if (n_old > 1) /* an empty array may be NULL, which qsort may not take */
                qsort(old, n_old, sizeof(*old), by_creation);
        most = all - min_available - (new_unavailable > 0 ? new_unavailable : 0);
        if (most <= 0)
                return 0;
        total = cleanup_unhealthy(old, n_old, most);
        /* scaleDownOldReplicaSetsForRollingUpdate: keep min_available available pods */
        for (size_t i = 0; i < n_old; i++)
                available += old[i].available;
        left = available - min_available;
        for (size_t i = 0; i < n_old && left > 0; i++) {
                int64_t down = old[i].replicas < left ? old[i].replicas : left;

                old[i].replicas -= (int32_t)down;
                left -= down;
                total += (int32_t)down;
        }
        return total;
}

enum xp_recreate_step xp_deploy_recreate_step(const struct xp_deploy_spec *spec,
                                              const struct xp_deploy_rs *old,
                                              size_t n_old,
                                              bool old_pods_active,
                                              const struct xp_deploy_rs *new_rs)
{
        if (sum_replicas(old, n_old) > 0)
                return XP_RECREATE_SCALE_DOWN_OLD;
        if (old_pods_active)
                return XP_RECREATE_WAIT;
        if (!new_rs || new_rs->replicas != spec->replicas)
                return XP_RECREATE_SCALE_UP_NEW;
        return XP_RECREATE_DONE;
}
