/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `xpool-full COMMAND [OPTIONS]`: every command of xpool in one executable, with every library;
 * the `xpool` front runs it for the commands whose libraries it leaves out (server, up, token,
 * store, extender, inventory, image).
 */
#include "cli.h"
#include "xpool/log.h"

int main(int argc, char **argv)
{
        static const struct xp_cli_command *const tables[] = {
            xp_cli_full_commands, xp_cli_commands, NULL};

        xp_log_init();
        return xp_cli_dispatch(tables, argc, argv);
}
