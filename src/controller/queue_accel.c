/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The vendor-neutral accelerator in the queues (docs/scheduler.md, "Queues"): a Queue that names
 * xpool.io/accelerator counts the accelerators of every vendor. A node's devices
 * (status.xpool.devices) are its capacity of it, one per device, and a pod's requests of any
 * resource that nodes report devices of (nvidia.com/gpu, huawei.com/Ascend910, ...) count as its
 * request of it too, on top of what it asks by the neutral name.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "queue_state.h"
#include "xpool/sched.h"

static int accel_put(struct xp_queue_amount *a, size_t *n, int64_t milli);

/* A resource newly known to be a device's: the pods seen before (their node's first report
 * came after them) ask for the accelerator too, as those seen after do. -ENOMEM. */
static int accel_pods_learn(struct queue_ctl *ctl, const char *res)
{
        for (size_t i = 0; i < ctl->pods.cap; i++) {
                struct qpod *p = ctl->pods.keys && ctl->pods.keys[i] ? ctl->pods.values[i] : NULL;
                int64_t milli = 0;
                int r;

                for (size_t j = 0; p && j < p->n; j++)
                        if (strcmp(p->amounts[j].resource, res) == 0)
                                milli += p->amounts[j].milli;
                if (milli == 0)
                        continue;
                qpod_count(ctl, p, -1);
                r = accel_put(p->amounts, &p->n, milli);
                qpod_count(ctl, p, +1);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int accel_node_devices(struct queue_ctl *ctl, const json_t *node, int64_t *ret_milli)
{
        const json_t *devices =
            json_object_get(json_object_get(json_object_get(node, "status"), "xpool"), "devices");
        const json_t *d;
        int64_t count = 0;
        size_t i;

        json_array_foreach(devices, i, d)
        {
                const char *res = json_string_value(json_object_get(d, "resourceName"));
                char *copy;

                count++;
                if (!res || !res[0] || xp_map_get(&ctl->device_resources, res))
                        continue;
                copy = strdup(res);
                if (!copy || xp_map_put(&ctl->device_resources, copy, copy) < 0) {
                        free(copy);
                        return -ENOMEM;
                }
                if (accel_pods_learn(ctl, copy) < 0)
                        return -ENOMEM;
        }
        *ret_milli = count * 1000;
        return 0;
}

/* Adds milli of the accelerator to a (room for XP_QUEUE_RESOURCES_MAX). -ENOMEM. */
static int accel_put(struct xp_queue_amount *a, size_t *n, int64_t milli)
{
        for (size_t i = 0; i < *n; i++)
                if (strcmp(a[i].resource, XP_ACCELERATOR_RESOURCE) == 0) {
                        a[i].milli += milli;
                        return 0;
                }
        if (*n == XP_QUEUE_RESOURCES_MAX)
                return 0; /* more resources than the queues manage: left out, as any other */
        a[*n].resource = strdup(XP_ACCELERATOR_RESOURCE);
        if (!a[*n].resource)
                return -ENOMEM;
        a[(*n)++].milli = milli;
        return 0;
}

int accel_pod_request(struct queue_ctl *ctl, struct xp_queue_amount *a, size_t *n)
{
        int64_t devices = 0;

        for (size_t i = 0; i < *n; i++)
                if (xp_map_get(&ctl->device_resources, a[i].resource))
                        devices += a[i].milli;
        return devices > 0 ? accel_put(a, n, devices) : 0;
}

int accel_node_capacity(struct queue_ctl *ctl,
                        const json_t *node,
                        struct xp_queue_amount *a,
                        size_t *n)
{
        int64_t milli = 0;
        int r = accel_node_devices(ctl, node, &milli);

        return r < 0 || milli == 0 ? r : accel_put(a, n, milli);
}
