/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The `default` ServiceAccount a new pod runs as, made here when missing, as the service account
 * controller would a moment later, so that a pod created right after its namespace is not
 * refused for the controller's delay. The ServiceAccount admission itself (the account must
 * exist; the token volume and the account's imagePullSecrets) is the registry's pod admission
 * (admission_pod(), src/registry/pod_admit.c), which the workload controllers' pods get too.
 */
#include <errno.h>
#include <string.h>

#include "admission.h"
#include "xpool/registry.h"
#include "xpool/serviceaccounts.h"

int admission_serviceaccount(const struct request *req, const json_t *pod)
{
        int r;

        if (!req->namespace || strcmp(xp_registry_pod_account(pod), XP_SERVICEACCOUNT_DEFAULT) != 0)
                return 1;
        r = xp_serviceaccount_default_ensure(req->api->registry, req->namespace, NULL);
        /* not made (a namespace that does not exist, a store error): the create's own checks and
         * the admission's lookup answer */
        return r == -ENOMEM ? r : 1;
}
