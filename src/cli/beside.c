/* SPDX-License-Identifier: Apache-2.0 */
/* Running the executable beside ours that holds a command (cli.h); a file of its own, so that the
 * lean executables that compile it (xpool-device-plugin) pull in no command table. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

int xp_cli_exec_beside(const char *exe, char **argv)
{
        char self[PATH_MAX], path[PATH_MAX + 64];
        ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
        char *slash;

        if (n <= 0) {
                fprintf(stderr, "xpool: cannot find our own executable: %s\n", strerror(errno));
                return XP_EXIT_FAILURE;
        }
        self[n] = '\0';
        slash = strrchr(self, '/');
        snprintf(path,
                 sizeof(path),
                 "%.*s/%s",
                 slash ? (int)(slash - self) : 1,
                 slash ? self : ".",
                 exe);
        argv[0] = path;
        execv(path, argv);
        fprintf(stderr,
                "xpool: cannot run '%s' (the '%s' command; it is installed beside xpool): %s\n",
                path,
                argv[1],
                strerror(errno));
        return XP_EXIT_FAILURE;
}
