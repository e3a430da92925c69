/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The DevicePlugin service of one endpoint: GetDevicePluginOptions, ListAndWatch,
 * GetPreferredAllocation, Allocate and PreStartContainer, over the endpoint's resource.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "plugin_internal.h"
#include "xpool/log.h"

static int get_options(void *userdata,
                       const ProtobufCMessage *request,
                       ProtobufCMessage **ret,
                       struct xp_error *err)
{
        V1beta1__DevicePluginOptions *o = malloc(sizeof(*o));

        (void)userdata;
        (void)request;
        if (!o)
                return xp_errorf(err, -ENOMEM, "out of memory");
        v1beta1__device_plugin_options__init(o);
        o->get_preferred_allocation_available = true;
        o->pre_start_required = false; /* nothing to prepare before a start */
        *ret = &o->base;
        return 0;
}

static int pre_start(void *userdata,
                     const ProtobufCMessage *request,
                     ProtobufCMessage **ret,
                     struct xp_error *err)
{
        const V1beta1__PreStartContainerRequest *req = (const void *)request;
        struct kube_endpoint *ep = userdata;
        const struct xp_node_inventory *inv = ep->plugin->inventory;
        V1beta1__PreStartContainerResponse *resp;

        /* not asked for (pre_start_required is false), but a kubelet may call it: the devices
         * must still be this resource's */
        for (size_t i = 0; i < req->n_devices_ids; i++) {
                bool found = false;

                for (size_t k = 0; k < ep->res->n && !found; k++)
                        found = strcmp(inv->devices.items[ep->res->slots[k]].id,
                                       req->devices_ids[i]) == 0;
                if (!found)
                        return xp_errorf(err,
                                         -EINVAL,
                                         "devices_ids[%zu]: %s is no %s device of this node",
                                         i,
                                         req->devices_ids[i],
                                         ep->res->name);
        }
        resp = malloc(sizeof(*resp));
        if (!resp)
                return xp_errorf(err, -ENOMEM, "out of memory");
        v1beta1__pre_start_container_response__init(resp);
        *ret = &resp->base;
        return 0;
}

/* One answer per container request, each from fn; the first refusal says which container. */
typedef int
container_fn(struct kube_endpoint *ep, const void *request, void **ret, struct xp_error *err);

static int per_container(struct kube_endpoint *ep,
                         void *const *requests,
                         size_t n,
                         void ***ret_items,
                         size_t *ret_n,
                         container_fn *fn,
                         struct xp_error *err)
{
        int r;

        *ret_items = calloc(n + 1, sizeof(void *));
        if (!*ret_items)
                return xp_errorf(err, -ENOMEM, "out of memory");
        for (size_t i = 0; i < n; i++) {
                r = fn(ep, requests[i], &(*ret_items)[i], err);
                if (r < 0)
                        return xp_error_prefix(err, r, "container_requests[%zu]", i);
                (*ret_n)++;
        }
        return 0;
}

static int
prefer_one(struct kube_endpoint *ep, const void *request, void **ret, struct xp_error *err)
{
        return kube_prefer(ep->plugin->inventory,
                           ep->res,
                           request,
                           (V1beta1__ContainerPreferredAllocationResponse **)ret,
                           err);
}

static int
allocate_one(struct kube_endpoint *ep, const void *request, void **ret, struct xp_error *err)
{
        const V1beta1__ContainerAllocateRequest *c = request;

        return kube_allocate(ep->plugin->inventory,
                             ep->res,
                             &ep->plugin->alloc,
                             c->devices_ids,
                             c->n_devices_ids,
                             (V1beta1__ContainerAllocateResponse **)ret,
                             err);
}

static int preferred(void *userdata,
                     const ProtobufCMessage *request,
                     ProtobufCMessage **ret,
                     struct xp_error *err)
{
        const V1beta1__PreferredAllocationRequest *req = (const void *)request;
        V1beta1__PreferredAllocationResponse *resp = malloc(sizeof(*resp));
        int r;

        if (!resp)
                return xp_errorf(err, -ENOMEM, "out of memory");
        v1beta1__preferred_allocation_response__init(resp);
        r = per_container(userdata,
                          (void *const *)req->container_requests,
                          req->n_container_requests,
                          (void ***)&resp->container_responses,
                          &resp->n_container_responses,
                          prefer_one,
                          err);
        if (r < 0) {
                protobuf_c_message_free_unpacked(&resp->base, NULL);
                return r;
        }
        *ret = &resp->base;
        return 0;
}

static int allocate(void *userdata,
                    const ProtobufCMessage *request,
                    ProtobufCMessage **ret,
                    struct xp_error *err)
{
        const V1beta1__AllocateRequest *req = (const void *)request;
        struct kube_endpoint *ep = userdata;
        V1beta1__AllocateResponse *resp = malloc(sizeof(*resp));
        int r;

        if (!resp)
                return xp_errorf(err, -ENOMEM, "out of memory");
        v1beta1__allocate_response__init(resp);
        r = per_container(ep,
                          (void *const *)req->container_requests,
                          req->n_container_requests,
                          (void ***)&resp->container_responses,
                          &resp->n_container_responses,
                          allocate_one,
                          err);
        if (r < 0) {
                protobuf_c_message_free_unpacked(&resp->base, NULL);
                return r;
        }
        xp_log(LOG_INFO,
               "%s: allocated devices to %zu container(s)",
               ep->res->name,
               req->n_container_requests);
        *ret = &resp->base;
        return 0;
}

static void list_and_watch(void *userdata, struct kube_call *call, const ProtobufCMessage *request)
{
        struct kube_endpoint *ep = userdata;
        V1beta1__ListAndWatchResponse *list;
        struct kube_call **grown;

        (void)request;
        grown = realloc(ep->watchers, (ep->n_watchers + 1) * sizeof(*grown));
        if (!grown)
                return; /* the stream stays silent; the kubelet's next one may fare better */
        ep->watchers = grown;
        grown[ep->n_watchers++] = call;
        list = kube_list_build(ep->plugin->inventory, ep->res);
        if (list)
                kube_call_send(call, &list->base);
        kube_list_free(list);
        xp_log(LOG_INFO, "%s: the kubelet watches %zu device(s)", ep->res->name, ep->res->n);
}

void kube_plugin_on_close(void *userdata, struct kube_call *call)
{
        struct kube_endpoint *ep = userdata;

        for (size_t i = 0; i < ep->n_watchers; i++)
                if (ep->watchers[i] == call) {
                        ep->watchers[i] = ep->watchers[--ep->n_watchers];
                        return;
                }
}

void kube_endpoint_broadcast(struct kube_endpoint *ep)
{
        V1beta1__ListAndWatchResponse *list;

        if (ep->n_watchers == 0)
                return;
        list = kube_list_build(ep->plugin->inventory, ep->res);
        if (!list) {
                xp_log(LOG_ERR, "%s: out of memory for the device list", ep->res->name);
                return;
        }
        for (size_t i = 0; i < ep->n_watchers; i++)
                kube_call_send(ep->watchers[i], &list->base);
        kube_list_free(list);
}

static void free_message(ProtobufCMessage *m)
{
        protobuf_c_message_free_unpacked(m, NULL);
}

const struct kube_method kube_plugin_methods[] = {
    {
        .path = "/v1beta1.DevicePlugin/GetDevicePluginOptions",
        .request = &v1beta1__empty__descriptor,
        .unary = get_options,
        .free_response = free_message,
    },
    {
        .path = "/v1beta1.DevicePlugin/ListAndWatch",
        .request = &v1beta1__empty__descriptor,
        .stream = list_and_watch,
    },
    {
        .path = "/v1beta1.DevicePlugin/GetPreferredAllocation",
        .request = &v1beta1__preferred_allocation_request__descriptor,
        .unary = preferred,
        .free_response = free_message,
    },
    {
        .path = "/v1beta1.DevicePlugin/Allocate",
        .request = &v1beta1__allocate_request__descriptor,
        .unary = allocate,
        .free_response = free_message,
    },
    {
        .path = "/v1beta1.DevicePlugin/PreStartContainer",
        .request = &v1beta1__pre_start_container_request__descriptor,
        .unary = pre_start,
        .free_response = free_message,
    },
};
const size_t kube_plugin_n_methods = sizeof(kube_plugin_methods) / sizeof(kube_plugin_methods[0]);
