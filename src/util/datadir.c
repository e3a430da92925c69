/* SPDX-License-Identifier: Apache-2.0 */
/* The data directory's layout and default root (include/util/xpool/datadir.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "xpool/datadir.h"
#include "xpool/fileio.h"
#include "xpool/macro.h"

int xp_datadir_default(char **ret, struct xp_error *err)
{
        const char *state = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
        int r;

        /* An explicit XDG_STATE_HOME wins for every user: whoever set it asked for it. */
        if (state && state[0] == '/')
                r = asprintf(ret, "%s/xpool", state);
        else if (geteuid() == 0)
                r = asprintf(ret, "%s", XP_DATADIR_SYSTEM);
        else if (home && home[0] == '/')
                r = asprintf(ret, "%s/.local/state/xpool", home);
        else
                return xp_errorf(err,
                                 -ENOENT,
                                 "no default data directory (neither XDG_STATE_HOME nor HOME is "
                                 "set): give one with --data-dir");
        return r < 0 ? -ENOMEM : 0;
}

int xp_datadir_agent_default(char **ret, struct xp_error *err)
{
        _cleanup_free_ char *root = NULL;
        char *path;
        int r;

        r = xp_datadir_default(&root, err);
        if (r < 0)
                return r;
        path = xp_datadir_path(root, XP_DATADIR_AGENT);
        if (!path)
                return -ENOMEM;
        *ret = path;
        return 0;
}

char *xp_datadir_path(const char *dir, const char *name)
{
        char *path;

        return asprintf(&path, "%s/%s", dir, name) < 0 ? NULL : path;
}

int xp_datadir_make(const char *dir, struct xp_error *err)
{
        /* the last component 0700: the state (the store, tokens, keys, pods' logs) is private */
        return xp_mkdir_p(dir, 0700, err);
}

int xp_datadir_check_private(const char *path, struct xp_error *err)
{
        struct stat st;

        if (stat(path, &st) < 0)
                return xp_errorf(err, -errno, "cannot examine '%s': %m", path);
        if ((st.st_mode & 0077) == 0)
                return 0;
        xp_errorf(err,
                  -EPERM,
                  "'%s' is mode %04o: others may %s it; it holds the cluster's state and keys: "
                  "chmod %s %s",
                  path,
                  (unsigned)(st.st_mode & 07777),
                  S_ISDIR(st.st_mode) ? "look into" : "read",
                  S_ISDIR(st.st_mode) ? "0700" : "0600",
                  path);
        return 1;
}

int xp_datadir_legacy(const char *dir, char **ret)
{
        _cleanup_free_ char *store = NULL, *old = NULL, *old_store = NULL;
        const char *home = getenv("HOME");

        if (strcmp(dir, XP_DATADIR_SYSTEM) != 0 || !home || home[0] != '/')
                return 0;
        store = xp_datadir_path(dir, XP_DATADIR_STORE);
        if (asprintf(&old, "%s/.local/state/xpool", home) < 0)
                old = NULL;
        old_store = old ? xp_datadir_path(old, XP_DATADIR_STORE) : NULL;
        if (!store || !old_store)
                return -ENOMEM;
        if (access(store, F_OK) == 0 || access(old_store, F_OK) < 0)
                return 0;
        *ret = TAKE_PTR(old);
        return 1;
}
