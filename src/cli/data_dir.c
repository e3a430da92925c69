/* SPDX-License-Identifier: Apache-2.0 */
/* The data directory that `xpool server` keeps its state in and `xpool token` manages. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "xpool/macro.h"

char *xp_cli_default_data_dir(void)
{
        const char *state = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
        char *dir;

        if (state && state[0] == '/')
                return asprintf(&dir, "%s/xpool", state) < 0 ? NULL : dir;
        if (home && home[0])
                return asprintf(&dir, "%s/.local/state/xpool", home) < 0 ? NULL : dir;
        return strdup("xpool-data");
}

int xp_cli_make_data_dir(const char *path)
{
        _cleanup_free_ char *copy = strdup(path);

        if (!copy)
                return -ENOMEM;
        for (char *p = copy + 1; *p; p++) {
                if (*p != '/')
                        continue;
                *p = '\0';
                if (mkdir(copy, 0755) < 0 && errno != EEXIST)
                        return -errno;
                *p = '/';
        }
        /* the last component 0700: the state (the store, tokens, keys) is the cluster's */
        if (mkdir(copy, 0700) < 0 && errno != EEXIST)
                return -errno;
        return 0;
}
