/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Node descriptions through the sim backend, the way `xpool devices --node-description` reads
 * them (the input is handed over as a file). Whatever loads must be an inventory the API
 * accepts: it encodes, decodes strictly and validates again, and encodes the same.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "xpool/codec.h"
#include "xpool/device.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok)
{
        if (!ok)
                __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        static const char *const sim_only[] = {"sim", NULL};
        struct xp_node_inventory *inv = NULL, *again = NULL;
        struct xp_error err = {0};
        json_t *first = NULL, *second = NULL;
        char path[64];
        int fd = memfd_create("node-description", MFD_CLOEXEC);
        int r;

        if (fd < 0)
                return 0;
        if (write(fd, data, size) != (ssize_t)size) {
                close(fd);
                return 0;
        }
        snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
        r = xp_device_discover(
            &(struct xp_discovery_config){.node_description = path, .backends = sim_only},
            &inv,
            &err);
        close(fd);
        if (r < 0) {
                check(err.code == r && err.msg[0] != '\0');
                check(inv == NULL);
                return 0;
        }
        for (size_t i = 0; i < inv->devices.n; i++)
                check(inv->devices.items[i].simulated);
        check(xp_node_inventory_to_json(inv, &first) == 0);
        check(xp_node_inventory_from_json(first, NULL, XP_DECODE_STRICT, &again, &err) == 0);
        check(xp_node_inventory_to_json(again, &second) == 0);
        check(json_equal(first, second));
        json_decref(first);
        json_decref(second);
        xp_node_inventory_free(inv);
        xp_node_inventory_free(again);
        return 0;
}
