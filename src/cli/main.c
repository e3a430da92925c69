/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `xpool`, the front: the commands that talk to a server or read files run here; those that need
 * the server's, the store's, the image store's or gRPC's libraries run in the executables beside
 * it (xpool-full, xpool-agent, xpool-device-plugin, xpool-shim), so that a `get` loads none of
 * them (docs/cli.md, "Executables").
 */
#include "cli.h"
#include "xpool/log.h"

int main(int argc, char **argv)
{
        static const struct xp_cli_command *const tables[] = {xp_cli_commands, NULL};

        xp_log_init();
        return xp_cli_dispatch(tables, argc, argv);
}
