/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The data directory as the commands see it: --data-dir or the default root
 * (include/util/xpool/datadir.h owns the layout), made private when new, and a warning when an
 * existing one is open to others.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "xpool/datadir.h"
#include "xpool/log.h"
#include "xpool/macro.h"

char *xp_cli_data_dir(const char *cmd, const char *given)
{
        struct xp_error err = {0};
        char *dir = NULL;
        int r;

        if (given)
                return strdup(given);
        r = xp_datadir_default(&dir, &err);
        if (r < 0) {
                fprintf(stderr, "%s: %s\n", cmd, xp_error_message(&err));
                return NULL;
        }
        return dir;
}

int xp_cli_prepare_data_dir(const char *cmd, const char *dir, bool given)
{
        _cleanup_free_ char *legacy = NULL, *pki = NULL;
        struct xp_error err = {0};
        int r;

        /* Root's default moved to /var/lib/xpool: a store left in the old place must not be
         * mistaken for an empty cluster. */
        r = given ? 0 : xp_datadir_legacy(dir, &legacy);
        if (r > 0) {
                fprintf(stderr,
                        "%s: the state is in %s, root's former default data directory; root's "
                        "default is now %s. Move it there (mv %s %s) or start with --data-dir "
                        "%s\n",
                        cmd,
                        legacy,
                        dir,
                        legacy,
                        dir,
                        legacy);
                return XP_EXIT_FAILURE;
        }
        r = xp_datadir_make(dir, &err);
        if (r < 0) {
                fprintf(stderr, "%s: %s\n", cmd, xp_error_message(&err));
                return XP_EXIT_FAILURE;
        }
        pki = xp_datadir_path(dir, XP_DATADIR_PKI);
        if (!pki)
                return XP_EXIT_FAILURE;
        if (xp_datadir_check_private(dir, &err) > 0)
                xp_log(LOG_WARNING, "%s: %s", cmd, xp_error_message(&err));
        if (access(pki, F_OK) == 0 && xp_datadir_check_private(pki, &err) > 0)
                xp_log(LOG_WARNING, "%s: %s", cmd, xp_error_message(&err));
        return 0;
}

int xp_cli_start_failed(const char *cmd, const char *dir, int r, const struct xp_error *err)
{
        fprintf(stderr, "%s: %s\n", cmd, xp_error_message(err));
        if (r == -EUCLEAN)
                fprintf(stderr,
                        "%s: nothing was changed. See what is there: xpool store check "
                        "--data-dir %s\n"
                        "%s: to start again with what is intact (the damaged files are kept "
                        "aside, and no resourceVersion is used twice): xpool store recover "
                        "--data-dir %s\n"
                        "%s: docs/store.md, \"Damage\", says what each finding means\n",
                        cmd,
                        dir,
                        cmd,
                        dir,
                        cmd);
        return XP_EXIT_FAILURE;
}
