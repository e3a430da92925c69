/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The one admission of a new pod (xpool/registry.h), whoever creates it: the API's create and
 * the workload controllers' (ReplicaSet, Job, DaemonSet) call the same two steps, so that a rule
 * added here holds on both paths. The order is kube-apiserver's: the mutating plugins
 * (ServiceAccount, Priority, LimitRanger), the defaults, then ResourceQuota on the pod as it will
 * be written, when what it counts is defaulted.
 */
#include <errno.h>
#include <string.h>

#include "registry_internal.h"
#include "xpool/doc.h"
#include "xpool/poddefaults.h"
#include "xpool/priority.h"
#include "xpool/registry.h"

const char *xp_registry_pod_account(const json_t *pod)
{
        /* two lookups, not a path's parse: a pod's create asks four times */
        const json_t *spec = json_object_get(pod, "spec");
        const char *name = json_string_value(json_object_get(spec, "serviceAccountName"));

        /* the deprecated field, which Kubernetes still reads when the new one is unset */
        if (!name || !name[0])
                name = json_string_value(json_object_get(spec, "serviceAccount"));
        return name && name[0] ? name : "default";
}

void xp_registry_pod_tolerations(struct xp_registry *registry, int64_t toleration_seconds)
{
        registry->pod_toleration_seconds = toleration_seconds;
}

/* The ServiceAccount plugin: the account must exist; the pod gets what it gives. */
static int
admit_account(struct xp_registry *registry, const char *ns, json_t *pod, struct xp_error *err)
{
        const char *name = xp_registry_pod_account(pod);
        json_t *account = NULL;
        int r = xp_registry_serviceaccount_get(registry, ns, name, &account, err);

        if (r == -ENOENT)
                return xp_errorf(err,
                                 -EPERM,
                                 "error looking up service account %s/%s: serviceaccount \"%s\" "
                                 "not found",
                                 ns,
                                 name,
                                 name);
        if (r >= 0)
                r = xp_registry_serviceaccount_admit(registry, pod, account);
        json_decref(account);
        return r == -ENOMEM ? xp_errorf(err, r, "out of memory") : r;
}

int xp_registry_pod_admit(struct xp_registry *registry,
                          const char *ns,
                          json_t *pod,
                          struct xp_error *err)
{
        const struct xp_pod_defaults defaults = {
            .toleration_seconds = registry->pod_toleration_seconds,
        };
        int r = admit_account(registry, ns, pod, err);

        if (r >= 0)
                r = xp_registry_pod_priority(registry, pod, err);
        if (r >= 0)
                r = xp_registry_limitrange_admit(registry, ns, pod, err);
        if (r >= 0 && xp_pod_defaults_apply(pod, &defaults) < 0)
                r = xp_errorf(err, -ENOMEM, "out of memory");
        return r < 0 ? r : 0;
}

int xp_registry_pod_admit_written(struct xp_registry *registry,
                                  const char *ns,
                                  const json_t *pod,
                                  struct xp_error *err)
{
        return xp_registry_quota_admit(registry, ns, pod, err);
}

int xp_registry_pod_admit_check(void *userdata, const json_t *pod)
{
        struct xp_registry_pod_check *c = userdata;
        int r = xp_registry_pod_admit_written(c->registry, c->ns, pod, c->err);

        if (r == -EDQUOT)
                return 0;
        return r < 0 ? r : 1;
}
