/* SPDX-License-Identifier: Apache-2.0 */
/* How `xpool` and its sibling executables find and run a command (cli.h). */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const struct xp_cli_command *find(const struct xp_cli_command *const *tables,
                                         const char *name)
{
        for (; *tables; tables++)
                for (const struct xp_cli_command *c = *tables; c->name; c++)
                        if (strcmp(name, c->name) == 0)
                                return c;
        return NULL;
}

int xp_cli_dispatch(const struct xp_cli_command *const *tables, int argc, char **argv)
{
        const struct xp_cli_command *c;

        if (argc < 2) {
                xp_cmd_help(0, NULL);
                return XP_EXIT_USAGE;
        }
        if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)
                return xp_cmd_help(0, NULL);
        if (strcmp(argv[1], "--version") == 0)
                return xp_cmd_version(0, NULL);
        c = find(tables, argv[1]);
        if (!c) {
                fprintf(stderr,
                        "xpool: unknown command '%s'; run 'xpool help' for the list\n",
                        argv[1]);
                return XP_EXIT_USAGE;
        }
        if (c->run)
                return c->run(argc - 1, argv + 1);
        return xp_cli_exec_beside(c->exe, argv);
}
