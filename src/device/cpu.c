/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>

#include "backend.h"

static int cpu_probe(struct xp_discovery *d)
{
        (void)d;
        return -ENODEV;
}

static int cpu_discover(struct xp_discovery *d, struct xp_error *err)
{
        (void)d;
        (void)err;
        return 0;
}

const struct xp_device_backend xp_cpu_backend = {
    .name = "cpu",
    .probe = cpu_probe,
    .discover = cpu_discover,
};
