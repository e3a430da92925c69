/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>

#include "backend.h"

static int sim_probe(struct xp_discovery *d)
{
        (void)d;
        return -ENODEV;
}

static int sim_discover(struct xp_discovery *d, struct xp_error *err)
{
        (void)d;
        (void)err;
        return 0;
}

const struct xp_device_backend xp_sim_backend = {
    .name = "sim",
    .probe = sim_probe,
    .discover = sim_discover,
};
