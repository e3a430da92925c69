/* SPDX-License-Identifier: Apache-2.0 */
/* The data directory's layout: one default root for server and agent, private directories. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "tmpdir.h"
#include "xpool/datadir.h"

static int setup(void **state)
{
        return tmpdir_setup(state, "datadir", "data");
}

static int teardown(void **state)
{
        return tmpdir_teardown(state);
}

static void default_root(void **state)
{
        struct xp_error err = {0};
        char *dir = NULL, *agent = NULL;

        (void)state;
        /* an explicit XDG_STATE_HOME wins for every user, root included */
        setenv("XDG_STATE_HOME", "/srv/state", 1);
        assert_int_equal(xp_datadir_default(&dir, &err), 0);
        assert_string_equal(dir, "/srv/state/xpool");
        assert_int_equal(xp_datadir_agent_default(&agent, &err), 0);
        assert_string_equal(agent, "/srv/state/xpool/agent");
        free(dir);
        free(agent);

        /* a relative one is ignored, as the XDG spec says */
        setenv("XDG_STATE_HOME", "state", 1);
        setenv("HOME", "/home/u", 1);
        assert_int_equal(xp_datadir_default(&dir, &err), 0);
        assert_string_equal(dir, geteuid() == 0 ? "/var/lib/xpool" : "/home/u/.local/state/xpool");
        assert_int_equal(xp_datadir_agent_default(&agent, &err), 0);
        assert_string_equal(
            agent, geteuid() == 0 ? "/var/lib/xpool/agent" : "/home/u/.local/state/xpool/agent");
        free(dir);
        free(agent);

        if (geteuid() != 0) {
                unsetenv("HOME");
                unsetenv("XDG_STATE_HOME");
                assert_int_equal(xp_datadir_default(&dir, &err), -ENOENT);
                assert_non_null(strstr(err.msg, "--data-dir"));
        }
}

static void make_private(void **state)
{
        struct tmpdir *t = *state;
        struct xp_error err = {0};
        mode_t old = umask(022);
        char deep[160];
        struct stat st;

        snprintf(deep, sizeof(deep), "%s/a/b", t->path);
        assert_int_equal(xp_datadir_make(deep, &err), 0);
        assert_int_equal(stat(deep, &st), 0);
        assert_int_equal(st.st_mode & 0777, 0700);
        assert_int_equal(stat(t->path, &st), 0);
        assert_int_equal(st.st_mode & 0777, 0755);
        assert_int_equal(xp_datadir_check_private(deep, &err), 0);

        /* an existing looser one is kept as it is, and reported */
        assert_int_equal(chmod(deep, 0755), 0);
        assert_int_equal(xp_datadir_make(deep, &err), 0);
        assert_int_equal(xp_datadir_check_private(deep, &err), 1);
        assert_non_null(strstr(err.msg, "mode 0755"));
        assert_non_null(strstr(err.msg, "chmod 0700"));

        snprintf(deep, sizeof(deep), "%s/missing", t->path);
        assert_true(xp_datadir_check_private(deep, &err) < 0);
        umask(old);
}

static void legacy(void **state)
{
        struct tmpdir *t = *state;
        char store[200], *old = NULL;

        setenv("HOME", t->dir, 1);
        /* only the default root, only when the old place has a store */
        assert_int_equal(xp_datadir_legacy(XP_DATADIR_SYSTEM, &old), 0);
        snprintf(store, sizeof(store), "%s/.local/state/xpool", t->dir);
        assert_int_equal(
            system(
                "mkdir -p \"$HOME/.local/state/xpool\" && touch \"$HOME/.local/state/xpool/state.db\""),
            0);
        assert_int_equal(xp_datadir_legacy("/elsewhere", &old), 0);
        if (access(XP_DATADIR_SYSTEM "/" XP_DATADIR_STORE, F_OK) == 0)
                return; /* this machine has a store there: then the old place does not matter */
        assert_int_equal(xp_datadir_legacy(XP_DATADIR_SYSTEM, &old), 1);
        assert_string_equal(old, store);
        free(old);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(default_root),
            cmocka_unit_test_setup_teardown(make_private, setup, teardown),
            cmocka_unit_test_setup_teardown(legacy, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
