/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A pod's effective requests, as Kubernetes computes them (resource.PodRequests): for each
 * resource the larger of the largest init container and the sum of the app containers, sidecars
 * (init containers with restartPolicy Always) counted with both. A
 * container's request defaults to its limit (the API server defaults requests from limits, and
 * extended resources are set through limits), and every pod takes one of the node's "pods".
 */
#include <errno.h>
#include <string.h>

#include "sched_internal.h"
#include "xpool/strutil.h"

static int add_item(struct podreq *req, uint32_t res, int64_t milli, bool sum)
{
        size_t i;

        for (i = 0; i < req->n; i++)
                if (req->items[i].res == res)
                        break;
        if (i == req->n) {
                if (req->n == SCHED_POD_RESOURCES_MAX)
                        return -E2BIG;
                req->items[req->n++] = (struct sreq){.res = res, .milli = 0};
        }
        if (sum) {
                if (__builtin_add_overflow(req->items[i].milli, milli, &req->items[i].milli))
                        return -ERANGE;
        } else if (milli > req->items[i].milli) {
                req->items[i].milli = milli;
        }
        return 0;
}

/* The container's requests (limits where a request is missing) into one pass of *req. */
static int container_requests(struct xp_sched *sched,
                              const struct xp_container *c,
                              const char *field,
                              size_t index,
                              struct podreq *req,
                              bool sum,
                              struct xp_error *err)
{
        const struct xp_resource_list *lists[] = {&c->resources.requests, &c->resources.limits};

        for (size_t l = 0; l < 2; l++)
                for (size_t i = 0; i < lists[l]->n; i++) {
                        const struct xp_resource *res = &lists[l]->items[i];
                        int64_t milli;
                        uint32_t id;
                        int r;

                        if (l == 1 && xp_resource_list_get(&c->resources.requests, res->name))
                                continue;
                        if (xp_quantity_to_milli(&res->quantity, &milli) < 0 || milli < 0)
                                return xp_errorf(err,
                                                 -EINVAL,
                                                 "spec.%s[%zu].resources.%s[%s]: out of range",
                                                 field,
                                                 index,
                                                 l ? "limits" : "requests",
                                                 res->name);
                        if (milli == 0)
                                continue;
                        r = sched_res_id(sched, res->name, true, &id);
                        if (r < 0)
                                return r;
                        r = add_item(req, id, milli, sum);
                        if (r == -E2BIG)
                                return xp_errorf(
                                    err,
                                    -EINVAL,
                                    "spec.%s[%zu].resources: more than %d resources in the pod",
                                    field,
                                    index,
                                    SCHED_POD_RESOURCES_MAX);
                        if (r < 0)
                                return xp_errorf(err,
                                                 -EINVAL,
                                                 "spec.%s[%zu].resources.%s[%s]: sum out of range",
                                                 field,
                                                 index,
                                                 l ? "limits" : "requests",
                                                 res->name);
                }
        return 0;
}

/*
 * Item k of req when it is "<device resource>-memory": records the share by memory. One per
 * pod, and never beside whole or milli requests of the same device resource. -EINVAL naming
 * both; -ENOMEM.
 */
static int memory_share(struct xp_sched *sched, struct podreq *req, size_t k, struct xp_error *err)
{
        const char *name = sched->res_names[req->items[k].res];
        size_t len = memshare_base_len(name);
        _cleanup_free_ char *base = NULL;
        uint32_t id;
        int r;

        if (len == 0)
                return 0;
        if (req->mem_bytes > 0)
                return xp_errorf(
                    err,
                    -EINVAL,
                    "spec.containers[].resources.limits: %s and %s both requested; a pod takes a share of one device",
                    sched->res_names[req->mem_res],
                    name);
        base = strndup(name, len);
        if (!base)
                return -ENOMEM;
        r = sched_res_id(sched, base, true, &id);
        if (r < 0)
                return r;
        for (size_t i = 0; i < req->n; i++)
                if (req->items[i].res == id)
                        return xp_errorf(
                            err,
                            -EINVAL,
                            "spec.containers[].resources.limits: %s and %s both requested; ask for devices or for memory, not both",
                            base,
                            name);
        /* bytes, rounded up: a share is never smaller than asked */
        req->mem_bytes = req->items[k].milli / 1000 + (req->items[k].milli % 1000 != 0);
        req->mem_res = req->items[k].res;
        req->mem_base = id;
        return 0;
}

static int cmp_req(const void *a, const void *b)
{
        const struct sreq *x = a, *y = b;
        return (x->res > y->res) - (x->res < y->res);
}

/* A sidecar: an init container with restartPolicy Always, which runs beside the containers. */
bool sched_container_is_sidecar(const struct xp_container *c)
{
        const char *policy = json_string_value(json_object_get(c->extra, "restartPolicy"));

        return policy && strcmp(policy, "Always") == 0;
}

/* The init containers' part, as Kubernetes counts it: each init container needs its requests
 * plus those of the sidecars started before it, one at a time (the largest, into *init); a
 * sidecar's requests also add to the containers' (*req), beside which it keeps running. */
static int init_requests(struct xp_sched *sched,
                         const struct xp_pod *pod,
                         struct podreq *req,
                         struct podreq *init,
                         struct xp_error *err)
{
        struct podreq sidecars = {0};
        int r;

        for (size_t i = 0; i < pod->spec.init_containers.n; i++) {
                const struct xp_container *c = &pod->spec.init_containers.items[i];
                struct podreq one = {0};
                r = container_requests(sched, c, "initContainers", i, &one, true, err);
                if (r < 0)
                        return r;
                if (sched_container_is_sidecar(c)) {
                        for (size_t k = 0; r >= 0 && k < one.n; k++)
                                r = add_item(req, one.items[k].res, one.items[k].milli, true);
                        for (size_t k = 0; r >= 0 && k < one.n; k++)
                                r = add_item(&sidecars, one.items[k].res, one.items[k].milli, true);
                        one = sidecars;
                } else {
                        for (size_t k = 0; r >= 0 && k < sidecars.n; k++)
                                r = add_item(
                                    &one, sidecars.items[k].res, sidecars.items[k].milli, true);
                }
                if (r < 0)
                        return xp_errorf(
                            err,
                            -EINVAL,
                            "spec.initContainers[%zu]: more than %d resources in the pod",
                            i,
                            SCHED_POD_RESOURCES_MAX);
                for (size_t k = 0; k < one.n; k++)
                        (void)add_item(init, one.items[k].res, one.items[k].milli, false);
        }
        return 0;
}

int sched_pod_requests(struct xp_sched *sched,
                       const struct xp_pod *pod,
                       struct podreq *ret,
                       struct xp_error *err)
{
        struct podreq req = {0}, init = {0};
        const char *numa;
        int r;

        for (size_t i = 0; i < pod->spec.containers.n; i++) {
                r = container_requests(
                    sched, &pod->spec.containers.items[i], "containers", i, &req, true, err);
                if (r < 0)
                        return r;
        }
        r = init_requests(sched, pod, &req, &init, err);
        if (r < 0)
                return r;
        for (size_t k = 0; k < init.n; k++) {
                r = add_item(&req, init.items[k].res, init.items[k].milli, false);
                if (r < 0)
                        return xp_errorf(err,
                                         -EINVAL,
                                         "spec.initContainers: more than %d resources in the pod",
                                         SCHED_POD_RESOURCES_MAX);
        }
        r = add_item(&req, RES_PODS, 1000, true);
        if (r < 0)
                return xp_errorf(err,
                                 -EINVAL,
                                 "spec.containers: more than %d resources in the pod",
                                 SCHED_POD_RESOURCES_MAX - 1);
        qsort(req.items, req.n, sizeof(req.items[0]), cmp_req);
        for (size_t k = 0; k < req.n; k++) {
                if (req.items[k].res == RES_CPU)
                        req.cpu = req.items[k].milli;
                else if (req.items[k].res == RES_ACCEL)
                        req.accel = req.items[k].milli;
                else if (req.items[k].res > RES_ACCEL) {
                        r = memory_share(sched, &req, k, err);
                        if (r < 0)
                                return r;
                }
        }
        numa = xp_strmap_get(&pod->metadata.annotations, XP_NUMA_ANNOTATION);
        if (numa && strcmp(numa, "true") != 0 && strcmp(numa, "false") != 0)
                return xp_errorf(err,
                                 -EINVAL,
                                 "metadata.annotations[%s]: \"%s\" is not \"true\" or \"false\"",
                                 XP_NUMA_ANNOTATION,
                                 numa);
        req.single_numa = numa && strcmp(numa, "true") == 0;
        if (req.accel > 0 || (req.mem_bytes > 0 && req.mem_base == RES_ACCEL)) {
                if (req.accel >= 1000 && req.accel % 1000 != 0)
                        return xp_errorf(
                            err,
                            -EINVAL,
                            "resources[%s]: %lld milli is neither whole devices nor a share of one",
                            XP_ACCELERATOR_RESOURCE,
                            (long long)req.accel);
                r = accel_parse(pod, &req.ac, err);
                if (r < 0)
                        return r;
        }
        req.hash = xp_hash_mix(
            xp_hash_string(pod->metadata.name ? pod->metadata.name : "") ^
            (xp_hash_string(pod->metadata.namespace ? pod->metadata.namespace : "default") * 31));
        r = hostports_from_pod(pod, &req.ports, &req.n_ports);
        if (r < 0) {
                podreq_done(&req);
                return r;
        }
        *ret = req;
        return 0;
}

void podreq_done(struct podreq *req)
{
        accel_done(&req->ac);
        hostports_free(req->ports, req->n_ports);
        req->ports = NULL;
        req->n_ports = 0;
}
