/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The ServiceAccount admission of a new pod, as kube-apiserver's: the account it runs as
 * (spec.serviceAccountName, `default` when unset) must exist in its namespace. `default` is made
 * here when missing, as the service account controller would a moment later, so a pod created
 * right after its namespace is not refused for the controller's delay. The pod then gets its
 * token volume and the account's imagePullSecrets (src/registry/serviceaccount_mount.c).
 */
#include <errno.h>
#include <string.h>

#include "admission.h"
#include "xpool/doc.h"
#include "xpool/registry.h"
#include "xpool/serviceaccounts.h"

static int admit(const struct request *req, json_t *pod, const char *ns, const char *name)
{
        struct xp_error err = {0};
        json_t *account = NULL;
        int r = xp_registry_serviceaccount_get(req->api->registry, ns, name, &account, NULL);

        if (r == -ENOENT && strcmp(name, XP_SERVICEACCOUNT_DEFAULT) == 0) {
                r = xp_serviceaccount_default_ensure(req->api->registry, ns, &err);
                /* a namespace that does not exist: the create's own check answers */
                if (r == -ENOENT || r == -XP_REGISTRY_TERMINATING)
                        return 1;
        }
        if (r >= 0)
                r = xp_registry_serviceaccount_admit(req->api->registry, pod, account);
        json_decref(account);
        return r >= 0 ? 1 : r;
}

int admission_serviceaccount(const struct request *req, json_t *pod, struct reply *ret)
{
        const char *name = xp_json_str_at(pod, "spec.serviceAccountName", NULL);
        const char *ns = req->namespace;
        int r;

        if (!name || !name[0])
                name = xp_json_str_at(pod, "spec.serviceAccount", NULL);
        if (!name || !name[0])
                name = XP_SERVICEACCOUNT_DEFAULT;
        if (!ns)
                return 1;
        r = admit(req, pod, ns, name);
        if (r == -ENOMEM || r >= 0)
                return r;
        return reply_status(ret,
                            403,
                            "Forbidden",
                            xp_json_str_at(pod, "metadata.name", ""),
                            "pods",
                            "pods \"%s\" is forbidden: error looking up service account %s/%s: "
                            "serviceaccount \"%s\" not found",
                            xp_json_str_at(pod, "metadata.name", ""),
                            ns,
                            name,
                            name);
}
