/* SPDX-License-Identifier: Apache-2.0 */
/* Huawei's DCMI through dlopen() (dcmi_api.h). */
#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "dcmi_api.h"
#include "xpool/log.h"
#include "xpool/macro.h"

struct dcmi_symbol {
        const char *name;
        size_t offset; /* of the function pointer in struct dcmi_api */
        bool required;
};

#define SYMBOL(n, member, req)                                                                     \
        {                                                                                          \
                .name = n, .offset = offsetof(struct dcmi_api, member), .required = req            \
        }

static const struct dcmi_symbol dcmi_symbols[] = {
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

        api.dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (!api.dl) {
                xp_debug("dcmi", "cannot load %s: %s", path, dlerror());
                return -ENODEV;
        }
        for (size_t i = 0; i < XP_ELEMENTSOF(dcmi_symbols); i++) {
                const struct dcmi_symbol *s = &dcmi_symbols[i];
                void *fn = dlsym(api.dl, s->name);

                if (!fn && s->required) {
                        xp_debug("dcmi", "%s lacks %s", path, s->name);
                        xp_dcmi_api_close(&api);
                        return -ENODEV;
                }
                memcpy((char *)&api + s->offset, &fn, sizeof(fn));
        }
        r = api.init();
        if (r != 0) {
                xp_debug("dcmi", "dcmi_init failed: %d", r);
                xp_dcmi_api_close(&api);
                return -ENODEV;
        }
        *ret = api;
        return 0;
}
