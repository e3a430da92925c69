/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The commands that run in xpool-full (src/cli/main_full.c): those of xp_cli_commands whose
 * libraries the `xpool` front leaves out. A file of its own, so that the front, which links the
 * cli layer's library too, pulls none of them in.
 */
#include <stddef.h>

#include "cli.h"

const struct xp_cli_command xp_cli_full_commands[] = {
    {"up", NULL, xp_cmd_up},
    {"server", NULL, xp_cmd_server},
    {"token", NULL, xp_cmd_token},
    {"store", NULL, xp_cmd_store},
    {"extender", NULL, xp_cmd_extender},
    {"inventory", NULL, xp_cmd_inventory},
    {"image", NULL, xp_cmd_image},
    {"agent", NULL, xp_cmd_agent},
    {"device-plugin", NULL, xp_cmd_device_plugin},
    {NULL, NULL, NULL},
};
