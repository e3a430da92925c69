/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The scheduling policy of scheduling.k8s.io/v1alpha2's gang kinds (kind_gang.h), in the words
 * of Kubernetes' declarative validation.
 */
#include <errno.h>
#include <stdio.h>

#include "kind_gang.h"
#include "schema.h"
#include "xpool/names.h"

int xp_gang_name_check(struct xp_decode_ctx *ctx, const char *name, const char *field)
{
        struct xp_error err = {0};

        if (!name || !name[0])
                return xp_fail_field(ctx, -EINVAL, field, "Required value");
        if (xp_check_dns1123_label(name, &err) < 0)
                return xp_fail_field(ctx, -EINVAL, field, "%s", err.msg);
        return 0;
}

int xp_gang_union_check(struct xp_decode_ctx *ctx,
                        const json_t *object,
                        const char *field,
                        const char *const members[],
                        size_t n,
                        const char *expected)
{
        size_t set = 0;

        for (size_t i = 0; i < n; i++)
                set += json_object_get(object, members[i]) != NULL;
        if (set == 1)
                return 0;
        return xp_fail_field(ctx,
                             -EINVAL,
                             field,
                             "Invalid value: \"\": must specify %s of: %s",
                             set ? "exactly one" : "one",
                             expected);
}

int xp_gang_policy_check(struct xp_decode_ctx *ctx, const json_t *policy, const char *field)
{
        static const char *const members[] = {"basic", "gang"};
        const json_t *gang, *min;
        struct xp_ge_msg m;
        char where[128];
        int r;

        if (!json_is_object(policy))
                return xp_fail_field(ctx, -EINVAL, field, "Required value");
        r = xp_gang_union_check(ctx, policy, field, members, 2, "`basic`, `gang`");
        if (r < 0 || !(gang = json_object_get(policy, "gang")))
                return r;
        snprintf(where, sizeof(where), "%s.gang.minCount", field);
        min = json_object_get(gang, "minCount");
        if (!min)
                return xp_fail_field(ctx, -EINVAL, where, "Required value");
        if (json_integer_value(min) < 1)
                return xp_fail_field(
                    ctx, -EINVAL, where, "%s", xp_ge_msg_int(&m, json_integer_value(min), 1));
        if (json_integer_value(min) > XP_GANG_MIN_MAX)
                return xp_fail_field(ctx,
                                     -EINVAL,
                                     where,
                                     "Invalid value: %lld: must be less than or equal to %d",
                                     (long long)json_integer_value(min),
                                     XP_GANG_MIN_MAX);
        return 0;
}
