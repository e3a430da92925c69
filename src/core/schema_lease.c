/* SPDX-License-Identifier: Apache-2.0 */
/* Lease (coordination.k8s.io/v1): leader election and node heartbeats. */
#include <errno.h>
#include <string.h>

#include "schema.h"
#include "xpool/names.h"
#include "xpool/strutil.h"

/* The one strategy Kubernetes defines without a domain; others are "example.com/name". */
#define LEASE_STRATEGY_BUILTIN "OldestEmulationVersion"

static int check_duration(struct xp_decode_ctx *ctx, const void *value)
{
        int64_t v = ((const struct xp_opt_int64 *)value)->value;

        if (v <= 0)
                return xp_decode_fail(ctx,
                                      -EINVAL,
                                      NULL,
                                      false,
                                      "Invalid value: %lld: must be greater than 0",
                                      (long long)v);
        return 0;
}

static int check_strategy(struct xp_decode_ctx *ctx, const void *value)
{
        const char *strategy = *(char *const *)value;
        struct xp_error cause = {0};
        char q[XP_QUOTE_MAX];

        if (!*strategy || strcmp(strategy, LEASE_STRATEGY_BUILTIN) == 0)
                return 0;
        if (!strchr(strategy, '/'))
                return xp_decode_fail(
                    ctx,
                    -EINVAL,
                    NULL,
                    false,
                    "Unsupported value: %s: supported values: \"" LEASE_STRATEGY_BUILTIN
                    "\", or a name with a domain, e.g. \"example.com/newest\"",
                    xp_quote(strategy, q));
        if (xp_check_qualified_name(strategy, &cause) < 0)
                return xp_decode_fail_error(ctx, &cause, NULL, false);
        return 0;
}

static const struct xp_field lease_spec_fields[] = {
    XP_FIELD("holderIdentity", XP_FT_STRING, struct xp_lease_spec, holder_identity),
    XP_FIELD("leaseDurationSeconds",
             XP_FT_OPT_INT32,
             struct xp_lease_spec,
             lease_duration_seconds,
             .check = check_duration),
    XP_FIELD("acquireTime", XP_FT_MICROTIME, struct xp_lease_spec, acquire_time),
    XP_FIELD("renewTime", XP_FT_MICROTIME, struct xp_lease_spec, renew_time),
    XP_FIELD("leaseTransitions",
             XP_FT_OPT_INT32,
             struct xp_lease_spec,
             lease_transitions,
             .check = xp_check_opt_non_negative),
    XP_FIELD("strategy", XP_FT_STRING, struct xp_lease_spec, strategy, .check = check_strategy),
    XP_FIELD("preferredHolder", XP_FT_STRING, struct xp_lease_spec, preferred_holder),
};

static int validate_lease_spec(struct xp_decode_ctx *ctx, const void *object)
{
        const struct xp_lease_spec *spec = object;

        if (spec->preferred_holder && *spec->preferred_holder &&
            (!spec->strategy || !*spec->strategy))
                return xp_fail_field(ctx,
                                     -EINVAL,
                                     "preferredHolder",
                                     "Forbidden: may only be set together with strategy");
        return 0;
}

static const struct xp_schema lease_spec_schema = XP_SCHEMA(
    struct xp_lease_spec, "LeaseSpec", lease_spec_fields, .validate = validate_lease_spec);

static const struct xp_field lease_fields[] = {
    XP_FIELD("metadata",
             XP_FT_STRUCT,
             struct xp_lease,
             metadata,
             .flags = XP_FIELD_REQUIRED | XP_FIELD_ALWAYS,
             .schema = &xp_object_meta_schema),
    XP_FIELD("spec", XP_FT_STRUCT, struct xp_lease, spec, .schema = &lease_spec_schema),
};

const struct xp_schema xp_lease_schema = XP_SCHEMA(struct xp_lease, "Lease", lease_fields);
