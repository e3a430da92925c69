/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The kubelet's pod-resources answer (xpool/podresources.h) as the inventory's allocation: one
 * use per device a container holds. Devices a pod's containers share (an init container's,
 * handed on) are listed once.
 */
#include <errno.h>

#include "xpool/kubeinventory.h"
#include "xpool/podresources.h"
#include "xpool/strutil.h"

static bool already(const struct xp_kube_allocation *a, const char *resource, const char *id)
{
        for (size_t i = 0; i < a->uses.n; i++)
                if (xp_streq0(a->uses.items[i].device_id, id) &&
                    xp_streq0(a->uses.items[i].resource, resource))
                        return true;
        return false;
}

int xp_kube_allocation_from_podres(const struct xp_podres_list *list,
                                   struct xp_kube_allocation *ret)
{
        struct xp_kube_allocation a = {0};

        for (size_t p = 0; p < list->pods.n; p++) {
                const struct xp_podres_pod *pod = &list->pods.items[p];
                for (size_t c = 0; c < pod->containers.n; c++) {
                        const struct xp_podres_container *ctr = &pod->containers.items[c];
                        for (size_t d = 0; d < ctr->devices.n; d++) {
                                const struct xp_podres_devices *dev = &ctr->devices.items[d];
                                for (size_t i = 0; i < dev->ids.n; i++) {
                                        if (!pod->namespace || !pod->name || !dev->ids.items[i] ||
                                            already(&a, dev->resource_name, dev->ids.items[i]))
                                                continue;
                                        if (xp_kube_allocation_add(&a,
                                                                   pod->namespace,
                                                                   pod->name,
                                                                   dev->resource_name,
                                                                   dev->ids.items[i]) < 0) {
                                                xp_kube_allocation_done(&a);
                                                return -ENOMEM;
                                        }
                                }
                        }
                }
        }
        *ret = a;
        return 0;
}
