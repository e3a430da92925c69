/* SPDX-License-Identifier: Apache-2.0 */
/* The Priority admission plugin's step in a pod's create (xpool/priority.h), answered as
 * kube-apiserver answers it: 403 Forbidden, `pods "NAME" is forbidden: ...`. */
#include <errno.h>

#include "internal.h"
#include "xpool/priority.h"

int priority_admit(const struct request *req,
                   const struct xp_kind *kind,
                   json_t *pod,
                   struct reply *ret)
{
        const char *name =
            json_string_value(json_object_get(json_object_get(pod, "metadata"), "name"));
        struct xp_error err = {0};
        int r = xp_registry_pod_priority(req->api->registry, pod, &err);

        if (r == -EPERM)
                return reply_status(ret,
                                    403,
                                    "Forbidden",
                                    name,
                                    "pods",
                                    "pods \"%s\" is forbidden: %s",
                                    name ? name : "",
                                    err.msg);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return reply_store_error(ret, r, kind, name, &err);
        return 1;
}
