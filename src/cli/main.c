/* SPDX-License-Identifier: Apache-2.0 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "xpool/log.h"

int main(int argc, char **argv)
{
        xp_log_init();
        if (argc < 2) {
                xp_cmd_help(0, NULL);
                return XP_EXIT_USAGE;
        }
        if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)
                return xp_cmd_help(0, NULL);
        if (strcmp(argv[1], "--version") == 0)
                return xp_cmd_version(0, NULL);
        for (const struct xp_cli_command *c = xp_cli_commands; c->name; c++)
                if (strcmp(argv[1], c->name) == 0)
                        return c->run(argc - 1, argv + 1);
        fprintf(stderr, "xpool: unknown command '%s'; run 'xpool help' for the list\n", argv[1]);
        return XP_EXIT_USAGE;
}
