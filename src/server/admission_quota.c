/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The admission of a new pod, and ResourceQuota's object counts of a new object of any other
 * kind (admission.h): the registry decides (src/registry/pod_admit.c, quota_count.c); here its
 * answer becomes kube-apiserver's 403.
 */
#include <errno.h>

#include "admission.h"
#include "xpool/doc.h"
#include "xpool/registry.h"

static int
forbidden(const char *plural, const json_t *object, const struct xp_error *err, struct reply *ret)
{
        const char *name = xp_json_str_at(object, "metadata.name", "");

        if (!name[0])
                name = xp_json_str_at(object, "metadata.generateName", "");
        return reply_status(ret,
                            403,
                            "Forbidden",
                            name,
                            plural,
                            "%s \"%s\" is forbidden: %s",
                            plural,
                            name,
                            xp_error_message(err));
}

/* The registry's answer: 1 when the pod may go on, 0 with ret filled, -ENOMEM; a store error is
 * the store's. */
static int answer(const struct request *req,
                  const struct xp_kind *kind,
                  const json_t *object,
                  int r,
                  const struct xp_error *err,
                  struct reply *ret)
{
        if (r >= 0)
                return 1;
        if (r == -ENOMEM)
                return r;
        if (r == -EDQUOT || r == -EPERM)
                return forbidden(kind->plural, object, err, ret);
        return reply_store_error(ret, r, kind, req->name, err);
}

int admission_quota(const struct request *req, const json_t *pod, struct reply *ret)
{
        struct xp_error err = {0};
        int r = xp_registry_pod_admit_written(req->api->registry, req->namespace, pod, &err);

        return answer(req, &xp_kind_pod, pod, r, &err, ret);
}

int admission_pod(const struct request *req, json_t *pod, struct reply *ret)
{
        struct xp_error err = {0};
        int r = xp_registry_pod_admit(req->api->registry, req->namespace, pod, &err);

        return answer(req, &xp_kind_pod, pod, r, &err, ret);
}

int admission_object_quota(const struct request *req,
                           const struct xp_kind *kind,
                           const json_t *object,
                           struct reply *ret)
{
        struct xp_error err = {0};
        int r =
            xp_registry_quota_count_admit(req->api->registry, kind, req->namespace, object, &err);

        return answer(req, kind, object, r, &err, ret);
}
