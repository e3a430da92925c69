/* SPDX-License-Identifier: Apache-2.0 */
/* Huawei's DCMI through dlopen() (dcmi_api.h). */
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>

#include "dcmi_api.h"
#include "dl_table.h"
#include "xpool/log.h"
#include "xpool/macro.h"

#define SYMBOL(n, member, req) XP_DL_SYMBOL(struct dcmi_api, n, member, req)

static const struct xp_dl_symbol dcmi_symbols[] = {
    SYMBOL("dcmi_init", init, true),
    SYMBOL("dcmi_get_card_num_list", get_card_num_list, true),
    SYMBOL("dcmi_get_device_num_in_card", get_device_num_in_card, true),
    SYMBOL("dcmi_get_device_pcie_info", get_device_pcie_info, true),
    SYMBOL("dcmi_get_device_utilization_rate", get_device_utilization_rate, false),
    SYMBOL("dcmi_get_device_temperature", get_device_temperature, false),
    SYMBOL("dcmi_get_device_power_info", get_device_power_info, false),
};

const char *xp_dcmi_library(const char *path)
{
        if (!path || !*path)
                path = getenv("XPOOL_DCMI_LIBRARY");
        if (!path || !*path)
                path = "libdcmi.so";
        return path;
}

void xp_dcmi_api_close(struct dcmi_api *api)
{
        /* DCMI has no shutdown call: unloading is all */
        if (api->dl)
                dlclose(api->dl);
        *api = (struct dcmi_api){0};
}

int xp_dcmi_api_open(const char *path, struct dcmi_api *ret)
{
        struct dcmi_api api = {0};
        int r;

        /* only asked for where the inventory has Ascend NPUs: their figures are missing then */
        api.dl = xp_dl_load(
            path, "dcmi", dcmi_symbols, XP_ELEMENTSOF(dcmi_symbols), &api, "Ascend NPUs");
        if (!api.dl)
                return -ENODEV;
        r = api.init();
        if (r != 0) {
                xp_log(LOG_WARNING,
                       "dcmi: %s: dcmi_init failed (code %d): Ascend NPUs report no live figures",
                       path,
                       r);
                xp_dcmi_api_close(&api);
                return -ENODEV;
        }
        *ret = api;
        return 0;
}
