/* SPDX-License-Identifier: Apache-2.0 */
/* The vendors' shared control nodes (include/xpool/device.h): one table for the process runtime's
 * device cgroup and the CDI specs the OCI runtime injects from. */
#include <strings.h>

#include "xpool/device.h"

static const struct vendor_nodes {
        const char *vendor;       /* status.xpool.devices[].vendor, compared ignoring case */
        enum xp_device_kind kind; /* XP_DEVICE_KIND_UNSET: every kind of the vendor */
        const char *nodes[5];
} vendor_nodes[] = {
    {.vendor = "NVIDIA",
     .nodes =
         {"/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia-modeset"}},
    /* /dev/kfd is the GPUs' compute interface, not the FPGAs' */
    {.vendor = "AMD", .kind = XP_DEVICE_GPU, .nodes = {"/dev/kfd"}},
    {.vendor = "Huawei", .nodes = {"/dev/davinci_manager", "/dev/devmm_svm", "/dev/hisi_hdc"}},
    {.vendor = "Cambricon", .nodes = {"/dev/cambricon_ctl"}},
    {.vendor = "MetaX", .nodes = {"/dev/mxcd"}},
};

const char *const *xp_device_control_nodes(const struct xp_device *d)
{
        if (!d->vendor)
                return NULL;
        for (size_t v = 0; v < XP_ELEMENTSOF(vendor_nodes); v++)
                if (strcasecmp(d->vendor, vendor_nodes[v].vendor) == 0 &&
                    (vendor_nodes[v].kind == XP_DEVICE_KIND_UNSET ||
                     vendor_nodes[v].kind == d->kind))
                        return vendor_nodes[v].nodes;
        return NULL;
}
