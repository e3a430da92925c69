/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Namespaces as the API answers about them: the registry (src/registry/namespace.c) decides, these
 * turn its errors into the Status objects Kubernetes sends.
 */
#include <errno.h>

#include "internal.h"

#define NAMESPACES "namespaces"

void namespace_release(const struct request *req, const struct xp_kind *kind)
{
        xp_registry_namespace_release(req->api->registry, kind->namespaced ? req->namespace : NULL);
}

int namespace_check(const struct request *req, const struct xp_kind *kind, struct reply *ret)
{
        struct xp_error err = {0};
        int r;

        r = xp_registry_namespace_hold(
            req->api->registry, kind->namespaced ? req->namespace : NULL, &err);
        if (r >= 0)
                return 1;
        if (r == -ENOENT)
                return reply_status(ret,
                                    404,
                                    "NotFound",
                                    req->namespace,
                                    NAMESPACES,
                                    "namespaces \"%s\" not found",
                                    req->namespace);
        if (r == -XP_REGISTRY_TERMINATING)
                return reply_status(
                    ret,
                    403,
                    "Forbidden",
                    req->name,
                    kind->plural,
                    "%s is forbidden: unable to create new content in namespace %s because it is being terminated",
                    kind->plural,
                    req->namespace);
        return reply_store_error(ret, r, NULL, req->namespace, &err);
}

int namespace_delete(const struct request *req,
                     const struct xp_kind *kind,
                     uint64_t expected,
                     bool dry,
                     struct reply *ret)
{
        struct xp_error err = {0};
        json_t *ns = NULL;
        int r;

        r = xp_registry_namespace_delete(req->api->registry, req->name, expected, dry, &ns, &err);
        if (r == -EPERM)
                return reply_status(
                    ret, 403, "Forbidden", req->name, NAMESPACES, "%s", xp_error_message(&err));
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return reply_store_error(ret, r, kind, req->name, &err);
        return reply_json(ret, 200, ns);
}
