/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>

#include "backend.h"

static int pci_probe(struct xp_discovery *d)
{
        (void)d;
        return -ENODEV;
}

static int pci_discover(struct xp_discovery *d, struct xp_error *err)
{
        (void)d;
        (void)err;
        return 0;
}

const struct xp_device_backend xp_pci_backend = {
    .name = "pci",
    .probe = pci_probe,
    .discover = pci_discover,
};
