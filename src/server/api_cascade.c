/* SPDX-License-Identifier: Apache-2.0 */
/*
 * DeleteOptions.propagationPolicy (and the older orphanDependents) on a DELETE: Background (the
 * default) removes the object at once and leaves its dependents to the garbage collector;
 * Foreground and Orphan mark it deleting with their finalizer, which the garbage collector
 * removes once the dependents are gone, or have forgotten it (docs/workloads.md, "Deleting").
 */
#include <string.h>

#include "internal.h"
#include "xpool/workloads.h"

/* The policy asked for: 1 with *ret, 0 with ret filled (400). */
static int policy_of(const struct request *req,
                     const struct xp_kind *kind,
                     const json_t *options,
                     enum xp_propagation *ret_policy,
                     struct reply *ret)
{
        const char *policy = json_string_value(json_object_get(options, "propagationPolicy"));
        const json_t *orphan = json_object_get(options, "orphanDependents");

        if (!policy)
                policy = request_query(req, "propagationPolicy");
        *ret_policy = XP_PROPAGATION_BACKGROUND;
        if (!policy) {
                if (json_is_true(orphan))
                        *ret_policy = XP_PROPAGATION_ORPHAN;
                return 1;
        }
        if (strcmp(policy, "Orphan") == 0)
                *ret_policy = XP_PROPAGATION_ORPHAN;
        else if (strcmp(policy, "Foreground") == 0)
                *ret_policy = XP_PROPAGATION_FOREGROUND;
        else if (strcmp(policy, "Background") != 0)
                return reply_status(
                    ret,
                    400,
                    "BadRequest",
                    req->name,
                    kind->plural,
                    "DeleteOptions.propagationPolicy: Unsupported value: \"%s\": supported values: \"Foreground\", \"Background\", \"Orphan\"",
                    policy);
        if (orphan && *ret_policy != XP_PROPAGATION_ORPHAN)
                return reply_status(
                    ret,
                    422,
                    "Invalid",
                    req->name,
                    kind->plural,
                    "DeleteOptions.propagationPolicy: Invalid value: \"%s\": orphanDependents and deletionPropagation cannot be both set",
                    policy);
        return 1;
}

int delete_cascade(const struct request *req,
                   const struct xp_kind *kind,
                   const json_t *options,
                   bool dry,
                   struct reply *ret)
{
        enum xp_propagation policy;
        struct xp_error err = {0};
        json_t *object = NULL;
        int r;

        r = policy_of(req, kind, options, &policy, ret);
        if (r <= 0)
                return r;
        if (policy == XP_PROPAGATION_BACKGROUND)
                return 2;
        r = xp_workloads_delete_with_finalizer(req->api->registry,
                                               kind,
                                               store_namespace(req, kind),
                                               req->name,
                                               policy,
                                               dry,
                                               &object,
                                               &err);
        if (r < 0)
                return reply_store_error(ret, r, kind, req->name, &err);
        return reply_json(ret, 200, object);
}
