/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The kubelet pod-resources client (include/kube/xpool/podresources.h): blocking unary calls, a
 * connection each (rpc_client.c), each answer copied out of protobuf-c's structs into the header's
 * plain ones.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "podresources.pb-c.h"
#include "rpc.h"
#include "xpool/podresources.h"
#include "xpool/strutil.h"

struct xp_podres_client {
        char *path;
        int64_t timeout_ms;
};

static void devices_done(struct xp_podres_devices *d)
{
        free(d->resource_name);
        for (size_t i = 0; i < d->ids.n; i++)
                free(d->ids.items[i]);
        free(d->ids.items);
        free(d->numa_nodes.items);
}

static void container_done(struct xp_podres_container *c)
{
        free(c->name);
        for (size_t i = 0; i < c->devices.n; i++)
                devices_done(&c->devices.items[i]);
        free(c->devices.items);
        free(c->cpu_ids.items);
        for (size_t i = 0; i < c->cdi_devices.n; i++)
                free(c->cdi_devices.items[i]);
        free(c->cdi_devices.items);
}

void xp_podres_pod_done(struct xp_podres_pod *pod)
{
        if (!pod)
                return;
        free(pod->name);
        free(pod->namespace);
        for (size_t i = 0; i < pod->containers.n; i++)
                container_done(&pod->containers.items[i]);
        free(pod->containers.items);
        *pod = (struct xp_podres_pod){0};
}

void xp_podres_list_done(struct xp_podres_list *list)
{
        if (!list)
                return;
        for (size_t i = 0; i < list->pods.n; i++)
                xp_podres_pod_done(&list->pods.items[i]);
        free(list->pods.items);
        *list = (struct xp_podres_list){0};
}

void xp_podres_allocatable_done(struct xp_podres_allocatable *alloc)
{
        if (!alloc)
                return;
        for (size_t i = 0; i < alloc->devices.n; i++)
                devices_done(&alloc->devices.items[i]);
        free(alloc->devices.items);
        free(alloc->cpu_ids.items);
        *alloc = (struct xp_podres_allocatable){0};
}

/* ---- copying out of protobuf-c ------------------------------------------------------------ */

static int copy_ints(const int64_t *src, size_t n, int64_t **ret, size_t *ret_n)
{
        if (n == 0)
                return 0;
        *ret = malloc(n * sizeof(**ret));
        if (!*ret)
                return -ENOMEM;
        memcpy(*ret, src, n * sizeof(**ret));
        *ret_n = n;
        return 0;
}

static int copy_devices(const V1__ContainerDevices *src, struct xp_podres_devices *d)
{
        d->resource_name = xp_strdup0(src->resource_name ? src->resource_name : "");
        if (!d->resource_name)
                return -ENOMEM;
        if (src->n_device_ids > 0 && !(d->ids.items = calloc(src->n_device_ids, sizeof(char *))))
                return -ENOMEM;
        for (size_t i = 0; i < src->n_device_ids; i++) {
                d->ids.items[i] = strdup(src->device_ids[i] ? src->device_ids[i] : "");
                if (!d->ids.items[i])
                        return -ENOMEM;
                d->ids.n++;
        }
        if (src->topology && src->topology->n_nodes > 0) {
                d->numa_nodes.items = calloc(src->topology->n_nodes, sizeof(int64_t));
                if (!d->numa_nodes.items)
                        return -ENOMEM;
                for (size_t i = 0; i < src->topology->n_nodes; i++)
                        d->numa_nodes.items[d->numa_nodes.n++] =
                            src->topology->nodes[i] ? src->topology->nodes[i]->id : 0;
        }
        return 0;
}

static int copy_device_list(V1__ContainerDevices *const *src,
                            size_t n,
                            struct xp_podres_devices **ret,
                            size_t *ret_n)
{
        if (n == 0)
                return 0;
        *ret = calloc(n, sizeof(**ret));
        if (!*ret)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                (*ret_n)++;
                if (copy_devices(src[i], &(*ret)[i]) < 0)
                        return -ENOMEM;
        }
        return 0;
}

static int copy_cdi(const V1__ContainerResources *src, struct xp_podres_container *c)
{
        for (size_t i = 0; i < src->n_dynamic_resources; i++) {
                const V1__DynamicResource *dr = src->dynamic_resources[i];

                for (size_t j = 0; j < dr->n_claim_resources; j++) {
                        const V1__ClaimResource *cr = dr->claim_resources[j];

                        for (size_t k = 0; k < cr->n_cdi_devices; k++) {
                                char **grown = realloc(c->cdi_devices.items,
                                                       (c->cdi_devices.n + 1) * sizeof(char *));

                                if (!grown)
                                        return -ENOMEM;
                                c->cdi_devices.items = grown;
                                grown[c->cdi_devices.n] = strdup(cr->cdi_devices[k]->name);
                                if (!grown[c->cdi_devices.n])
                                        return -ENOMEM;
                                c->cdi_devices.n++;
                        }
                }
        }
        return 0;
}

static int copy_pod(const V1__PodResources *src, struct xp_podres_pod *pod)
{
        pod->name = xp_strdup0(src->name ? src->name : "");
        pod->namespace = xp_strdup0(src->namespace_ ? src->namespace_ : "");
        if (!pod->name || !pod->namespace)
                return -ENOMEM;
        if (src->n_containers > 0 &&
            !(pod->containers.items = calloc(src->n_containers, sizeof(*pod->containers.items))))
                return -ENOMEM;
        for (size_t i = 0; i < src->n_containers; i++) {
                const V1__ContainerResources *cr = src->containers[i];
                struct xp_podres_container *c = &pod->containers.items[i];

                pod->containers.n++;
                c->name = xp_strdup0(cr->name ? cr->name : "");
                if (!c->name ||
                    copy_device_list(cr->devices, cr->n_devices, &c->devices.items, &c->devices.n) <
                        0 ||
                    copy_ints(cr->cpu_ids, cr->n_cpu_ids, &c->cpu_ids.items, &c->cpu_ids.n) < 0 ||
                    copy_cdi(cr, c) < 0)
                        return -ENOMEM;
        }
        return 0;
}

/* ---- the client ----------------------------------------------------------------------------- */

int xp_podres_client_new(const char *path,
                         int64_t timeout_ms,
                         struct xp_podres_client **ret,
                         struct xp_error *err)
{
        struct xp_podres_client *c;

        if (!path)
                path = XP_PODRES_SOCKET;
        c = calloc(1, sizeof(*c));
        if (!c || !(c->path = strdup(path))) {
                free(c);
                return xp_errorf(err, -ENOMEM, "out of memory");
        }
        c->timeout_ms = timeout_ms > 0 ? timeout_ms : XP_PODRES_TIMEOUT_MS;
        *ret = c;
        return 0;
}

void xp_podres_client_free(struct xp_podres_client *c)
{
        if (!c)
                return;
        free(c->path);
        free(c);
}

static int call(struct xp_podres_client *c,
                const char *method,
                const ProtobufCMessage *req,
                const ProtobufCMessageDescriptor *desc,
                ProtobufCMessage **ret,
                struct xp_error *err)
{
        struct stat st;
        int r;

        /* the kubelet removes its socket while it restarts: say so rather than wait */
        if (stat(c->path, &st) < 0)
                return xp_errorf(err, -errno, "pod-resources socket %s: %m", c->path);
        r = kube_rpc_unary(
            c->path, method, req, desc, XP_PODRES_MESSAGE_MAX, c->timeout_ms, ret, err);
        if (r < 0)
                return xp_error_prefix(err, r, "pod-resources %s", c->path);
        return 0;
}

int xp_podres_list(struct xp_podres_client *c, struct xp_podres_list *ret, struct xp_error *err)
{
        V1__ListPodResourcesRequest req = V1__LIST_POD_RESOURCES_REQUEST__INIT;
        V1__ListPodResourcesResponse *resp = NULL;
        struct xp_podres_list list = {0};
        int r;

        r = call(c,
                 "/v1.PodResourcesLister/List",
                 &req.base,
                 &v1__list_pod_resources_response__descriptor,
                 (ProtobufCMessage **)&resp,
                 err);
        if (r < 0)
                return r;
        if (resp->n_pod_resources > 0 &&
            !(list.pods.items = calloc(resp->n_pod_resources, sizeof(*list.pods.items))))
                r = -ENOMEM;
        for (size_t i = 0; r >= 0 && i < resp->n_pod_resources; i++) {
                list.pods.n++;
                r = copy_pod(resp->pod_resources[i], &list.pods.items[i]);
        }
        protobuf_c_message_free_unpacked(&resp->base, NULL);
        if (r < 0) {
                xp_podres_list_done(&list);
                return xp_errorf(err, r, "out of memory");
        }
        *ret = list;
        return 0;
}

int xp_podres_get(struct xp_podres_client *c,
                  const char *namespace,
                  const char *name,
                  struct xp_podres_pod *ret,
                  struct xp_error *err)
{
        V1__GetPodResourcesRequest req = V1__GET_POD_RESOURCES_REQUEST__INIT;
        V1__GetPodResourcesResponse *resp = NULL;
        struct xp_podres_pod pod = {0};
        int r;

        req.pod_name = (char *)name;
        req.pod_namespace = (char *)namespace;
        r = call(c,
                 "/v1.PodResourcesLister/Get",
                 &req.base,
                 &v1__get_pod_resources_response__descriptor,
                 (ProtobufCMessage **)&resp,
                 err);
        if (r < 0)
                return r;
        if (!resp->pod_resources)
                r = xp_errorf(
                    err, -ENOENT, "pod-resources %s: no pod %s/%s", c->path, namespace, name);
        else if (copy_pod(resp->pod_resources, &pod) < 0)
                r = xp_errorf(err, -ENOMEM, "out of memory");
        protobuf_c_message_free_unpacked(&resp->base, NULL);
        if (r < 0) {
                xp_podres_pod_done(&pod);
                return r;
        }
        *ret = pod;
        return 0;
}

int xp_podres_allocatable(struct xp_podres_client *c,
                          struct xp_podres_allocatable *ret,
                          struct xp_error *err)
{
        V1__AllocatableResourcesRequest req = V1__ALLOCATABLE_RESOURCES_REQUEST__INIT;
        V1__AllocatableResourcesResponse *resp = NULL;
        struct xp_podres_allocatable a = {0};
        int r;

        r = call(c,
                 "/v1.PodResourcesLister/GetAllocatableResources",
                 &req.base,
                 &v1__allocatable_resources_response__descriptor,
                 (ProtobufCMessage **)&resp,
                 err);
        if (r < 0)
                return r;
        if (copy_device_list(resp->devices, resp->n_devices, &a.devices.items, &a.devices.n) < 0 ||
            copy_ints(resp->cpu_ids, resp->n_cpu_ids, &a.cpu_ids.items, &a.cpu_ids.n) < 0)
                r = xp_errorf(err, -ENOMEM, "out of memory");
        protobuf_c_message_free_unpacked(&resp->base, NULL);
        if (r < 0) {
                xp_podres_allocatable_done(&a);
                return r;
        }
        *ret = a;
        return 0;
}

const struct xp_podres_pod *
xp_podres_find_device(const struct xp_podres_list *list, const char *resource, const char *id)
{
        for (size_t p = 0; p < list->pods.n; p++) {
                const struct xp_podres_pod *pod = &list->pods.items[p];

                for (size_t c = 0; c < pod->containers.n; c++)
                        for (size_t d = 0; d < pod->containers.items[c].devices.n; d++) {
                                const struct xp_podres_devices *dev =
                                    &pod->containers.items[c].devices.items[d];

                                if (!xp_streq0(dev->resource_name, resource))
                                        continue;
                                for (size_t i = 0; i < dev->ids.n; i++)
                                        if (xp_streq0(dev->ids.items[i], id))
                                                return pod;
                        }
        }
        return NULL;
}
