/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzzes the protobuf decoding of every message the kube layer accepts: the device plugin's
 * requests (AllocateRequest, PreferredAllocationRequest, PreStartContainerRequest, Empty), and
 * the pod-resources answers the client reads. The first byte picks the type, the rest is the
 * message. A request that decodes goes on through the plugin's own handling (Allocate and
 * GetPreferredAllocation over a fixed 4-GPU node), which must answer or refuse with a message;
 * whatever decodes must pack again (the bytes need not decode again: protobuf-c keeps unknown
 * fields it should have refused, such as field number 0, and packs them as they came).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kube/plugin_internal.h"
#include "podresources.pb-c.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok)
{
        if (!ok)
                __builtin_trap();
}

static const ProtobufCMessageDescriptor *const types[] = {
    &v1beta1__allocate_request__descriptor,
    &v1beta1__preferred_allocation_request__descriptor,
    &v1beta1__pre_start_container_request__descriptor,
    &v1beta1__empty__descriptor,
    &v1__list_pod_resources_response__descriptor,
    &v1__allocatable_resources_response__descriptor,
    &v1__get_pod_resources_response__descriptor,
};

static struct xp_node_inventory inv;
static struct kube_resource *res;
static size_t n_res;

static void node_init(void)
{
        static const char *const ids[] = {"GPU-a", "GPU-b", "GPU-c", "GPU-d"};
        static char *nodes[4][2] = {{"/dev/nvidia0", "/dev/nvidiactl"},
                                    {"/dev/nvidia1", "/dev/nvidiactl"},
                                    {"/dev/nvidia2", "/dev/nvidiactl"},
                                    {"/dev/nvidia3", "/dev/nvidiactl"}};
        static struct xp_device devices[4];
        static struct xp_device_link links[2] = {
            {.a = "GPU-a", .b = "GPU-b", .level = XP_LINK_NVLINK, .nvlinks = 6},
            {.a = "GPU-c", .b = "GPU-d", .level = XP_LINK_NVLINK, .nvlinks = 6},
        };

        for (int i = 0; i < 4; i++)
                devices[i] = (struct xp_device){
                    .id = (char *)ids[i],
                    .kind = XP_DEVICE_GPU,
                    .vendor = "NVIDIA",
                    .resource_name = "nvidia.com/gpu",
                    .index = i,
                    .device_nodes = {.items = nodes[i], .n = 2},
                    .numa_node = {.set = true, .value = i / 2},
                    .health = i == 3 ? XP_DEVICE_UNHEALTHY : XP_DEVICE_HEALTHY,
                };
        inv.devices.items = devices;
        inv.devices.n = 4;
        inv.links.items = links;
        inv.links.n = 2;
        check(kube_resources_build(&inv, NULL, NULL, &res, &n_res) == 0 && n_res == 1);
}

static void handle(const ProtobufCMessage *m)
{
        struct kube_alloc_config config = {.cdi = true};
        struct xp_error err = {0};

        if (m->descriptor == &v1beta1__allocate_request__descriptor) {
                const V1beta1__AllocateRequest *req = (const void *)m;

                for (size_t i = 0; i < req->n_container_requests; i++) {
                        V1beta1__ContainerAllocateResponse *resp = NULL;
                        int r = kube_allocate(&inv,
                                              res,
                                              &config,
                                              req->container_requests[i]->devices_ids,
                                              req->container_requests[i]->n_devices_ids,
                                              &resp,
                                              &err);

                        check(r == 0 ? resp != NULL : (resp == NULL && err.msg[0] != '\0'));
                        kube_allocate_free(resp);
                }
        } else if (m->descriptor == &v1beta1__preferred_allocation_request__descriptor) {
                const V1beta1__PreferredAllocationRequest *req = (const void *)m;

                for (size_t i = 0; i < req->n_container_requests; i++) {
                        V1beta1__ContainerPreferredAllocationResponse *resp = NULL;
                        int r = kube_prefer(&inv, res, req->container_requests[i], &resp, &err);

                        check(r == 0 ? resp != NULL &&
                                           resp->n_deviceids ==
                                               (size_t)req->container_requests[i]->allocation_size
                                     : (resp == NULL && err.msg[0] != '\0'));
                        kube_prefer_free(resp);
                }
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        const ProtobufCMessageDescriptor *desc;
        ProtobufCMessage *m, *again;
        uint8_t *packed;
        size_t n;

        if (!res)
                node_init();
        if (size == 0)
                return 0;
        desc = types[data[0] % (sizeof(types) / sizeof(types[0]))];
        m = protobuf_c_message_unpack(desc, NULL, size - 1, data + 1);
        if (!m)
                return 0;
        handle(m);
        n = protobuf_c_message_get_packed_size(m);
        packed = malloc(n ? n : 1);
        check(packed && protobuf_c_message_pack(m, packed) == n);
        again = protobuf_c_message_unpack(desc, NULL, n, packed);
        if (again)
                protobuf_c_message_free_unpacked(again, NULL);
        protobuf_c_message_free_unpacked(m, NULL);
        free(packed);
        return 0;
}
