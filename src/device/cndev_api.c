/* SPDX-License-Identifier: Apache-2.0 */
/* Cambricon's CNDev through dlopen() (cndev_api.h). */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "cndev_api.h"
#include "dl_table.h"
#include "xpool/log.h"
#include "xpool/macro.h"

#define SYMBOL(n, member, req) XP_DL_SYMBOL(struct cndev_api, n, member, req)

static const struct xp_dl_symbol cndev_symbols[] = {
    SYMBOL("cndevInit", init, true),
    SYMBOL("cndevRelease", release, true),
    SYMBOL("cndevGetDeviceCount", get_device_count, true),
    SYMBOL("cndevGetPCIeInfo", get_pcie_info, true),
    SYMBOL("cndevGetErrorString", error_string, false),
    SYMBOL("cndevGetDeviceUtilizationInfo", get_utilization, false),
    SYMBOL("cndevGetMemoryUsage", get_memory_usage, false),
    SYMBOL("cndevGetTemperatureInfo", get_temperature, false),
    SYMBOL("cndevGetPowerInfo", get_power, false),
    SYMBOL("cndevGetCardHealthState", get_health, false),
};

const char *xp_cndev_library(const char *path)
{
        if (!path || !*path)
                path = getenv("XPOOL_CNDEV_LIBRARY");
        if (!path || !*path)
                path = "libcndev.so";
        return path;
}

const char *xp_cndev_strerror(const struct cndev_api *api, int code, char buf[static 96])
{
        const char *s = api->error_string ? api->error_string(code) : NULL;

        /* the library's words alone may be a useless "not found": the code is always there */
        snprintf(
            buf, 96, "code %d%s%.60s%s", code, s && *s ? " (" : "", s ? s : "", s && *s ? ")" : "");
        return buf;
}

void xp_cndev_api_close(struct cndev_api *api)
{
        if (api->dl) {
                api->release();
                dlclose(api->dl);
        }
        *api = (struct cndev_api){0};
}

int xp_cndev_api_open(const char *path, struct cndev_api *ret, unsigned *n_cards)
{
        struct cndev_api api = {0};
        union cndev_answer count = {.version = CNDEV_API_VERSION};
        char buf[96];
        int r;

        /* only asked for where the inventory has MLUs: their figures are missing then */
        api.dl = xp_dl_load(
            path, "cndev", cndev_symbols, XP_ELEMENTSOF(cndev_symbols), &api, "Cambricon MLUs");
        if (!api.dl)
                return -ENODEV;
        r = api.init(0);
        if (r != CNDEV_SUCCESS) {
                xp_log(LOG_WARNING,
                       "cndev: %s: cndevInit failed (%s): Cambricon MLUs report no live figures",
                       path,
                       xp_cndev_strerror(&api, r, buf));
                dlclose(api.dl);
                return -EPROTO;
        }
        r = api.get_device_count(&count.card);
        if (r != CNDEV_SUCCESS) {
                xp_log(
                    LOG_WARNING,
                    "cndev: %s: cndevGetDeviceCount refuses API version %d: %s%s; Cambricon MLUs "
                    "report no live figures",
                    path,
                    CNDEV_API_VERSION,
                    xp_cndev_strerror(&api, r, buf),
                    r == CNDEV_ERROR_UNSUPPORTED_API_VERSION ? ", a library older than it"
                    : r == CNDEV_ERROR_LOW_DRIVER_VERSION    ? ", the driver is too old"
                                                             : "");
                xp_cndev_api_close(&api);
                return -EPROTO;
        }
        *n_cards = count.card.number;
        *ret = api;
        return 0;
}
