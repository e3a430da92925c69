/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A node's write of a pod's status keeps the conditions other writers own (docs/kubernetes.md,
 * "Pod conditions"). The agent builds a pod's whole status from its own copy of the pod and its
 * write replaces the stored status whole (agent/status.c), so a condition added since its copy
 * was taken (DisruptionTarget from an eviction or a preemption, a readiness gate's) would go with
 * its next write. The kubelet merges on its side (mergePodStatus); here the merge is done where
 * the write lands, against the status as stored at that moment, so no write in between is lost.
 */
#include <errno.h>
#include <string.h>

#include "auth.h"
#include "internal.h"
#include "xpool/condition.h"

static bool from_node(const struct request *req)
{
        return req->who && req->who->role == XP_TOKEN_NODE && !req->who->service_account;
}

int node_status_keep_conditions(const struct request *req,
                                const struct xp_kind *kind,
                                const json_t *stored,
                                json_t *candidate)
{
        json_t *kept = NULL;
        int r;

        if (!from_node(req) || strcmp(kind->plural, "pods") != 0 || *kind->group)
                return 0;
        r = xp_pod_status_keep_conditions(
            json_object_get(candidate, "status"), json_object_get(stored, "status"), &kept);
        if (r <= 0)
                return r;
        return json_object_set_new(candidate, "status", kept) < 0 ? -ENOMEM : 0;
}
