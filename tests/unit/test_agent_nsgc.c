/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The agent's collection of leaked namespace pins: what is removed (no pod of this agent, no
 * process in it), what is left (a known pod's; one a process is in, as another agent's running
 * pod; hidden names, directories), and the namespaces processes are in read from a proc tree.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "agent/nsgc.h"
#include "tmpdir.h"

static void touch(const char *dir, const char *name)
{
        char path[256];
        int fd;

        snprintf(path, sizeof(path), "%s/%s", dir, name);
        fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0444);
        assert_true(fd >= 0);
        close(fd);
}

static bool exists(const char *dir, const char *name)
{
        char path[256];

        snprintf(path, sizeof(path), "%s/%s", dir, name);
        return access(path, F_OK) == 0;
}

static bool known_a(const char *uid, void *userdata)
{
        (*(int *)userdata)++;
        return strcmp(uid, "pod-a") == 0;
}

static void test_judge(void **state)
{
        (void)state;
        assert_int_equal(xp_nsgc_judge("pod-a", true, false), XP_NSGC_KEEP);
        assert_int_equal(xp_nsgc_judge("pod-a", true, true), XP_NSGC_KEEP);
        assert_int_equal(xp_nsgc_judge("pod-b", false, true), XP_NSGC_IN_USE);
        assert_int_equal(xp_nsgc_judge("pod-b", false, false), XP_NSGC_REMOVE);
        assert_int_equal(xp_nsgc_judge(".hidden", false, false), XP_NSGC_KEEP);
        assert_int_equal(xp_nsgc_judge("", false, false), XP_NSGC_KEEP);
        assert_int_equal(xp_nsgc_judge(NULL, false, false), XP_NSGC_KEEP);
}

/* Only the unknown entry no process is in goes; the sweep says how many went. */
static void test_sweep(void **state)
{
        struct tmpdir *t = *state;
        struct xp_nsgc_inuse inuse = {0};
        struct stat st;
        char path[256];
        int asked = 0;

        touch(t->dir, "pod-a");
        touch(t->dir, "pod-b");
        touch(t->dir, "pod-c");
        touch(t->dir, ".hidden");
        snprintf(path, sizeof(path), "%s/sub", t->dir);
        assert_int_equal(mkdir(path, 0755), 0);
        snprintf(path, sizeof(path), "%s/pod-c", t->dir);
        assert_int_equal(stat(path, &st), 0);
        inuse.ids = calloc(1, sizeof(*inuse.ids));
        assert_non_null(inuse.ids);
        inuse.ids[0].dev = st.st_dev;
        inuse.ids[0].ino = st.st_ino;
        inuse.n = inuse.cap = 1;

        assert_int_equal(xp_nsgc_sweep(t->dir, "network", &inuse, known_a, &asked), 1);
        assert_true(exists(t->dir, "pod-a"));
        assert_false(exists(t->dir, "pod-b"));
        assert_true(exists(t->dir, "pod-c"));
        assert_true(exists(t->dir, ".hidden"));
        assert_true(exists(t->dir, "sub"));
        assert_int_equal(asked, 3); /* the three pod entries, not the hidden one nor the dir */
        /* a second sweep finds nothing more */
        assert_int_equal(xp_nsgc_sweep(t->dir, "network", &inuse, known_a, &asked), 0);
        snprintf(path, sizeof(path), "%s/none", t->dir);
        assert_int_equal(xp_nsgc_sweep(path, "IPC", &inuse, known_a, &asked), 0);
        xp_nsgc_inuse_done(&inuse);
        assert_null(inuse.ids);
}

/* Every thread's namespaces of a proc tree, numeric entries only; the real /proc has ours. */
static void test_inuse_scan(void **state)
{
        struct tmpdir *t = *state;
        struct xp_nsgc_inuse inuse = {0};
        struct stat net, ipc, other;
        char path[256];

        snprintf(path, sizeof(path), "%s/42/task/43/ns", t->dir);
        for (const char *p = path + strlen(t->dir) + 1; (p = strchr(p, '/')); p++) {
                char part[256];

                snprintf(part, sizeof(part), "%.*s", (int)(p - path), path);
                assert_true(mkdir(part, 0755) == 0 || errno == EEXIST);
        }
        assert_int_equal(mkdir(path, 0755), 0);
        touch(path, "net");
        touch(path, "ipc");
        /* a name that is no pid is no process */
        snprintf(path, sizeof(path), "%s/self", t->dir);
        assert_int_equal(mkdir(path, 0755), 0);
        snprintf(path, sizeof(path), "%s/42/task/43/ns/net", t->dir);
        assert_int_equal(stat(path, &net), 0);
        snprintf(path, sizeof(path), "%s/42/task/43/ns/ipc", t->dir);
        assert_int_equal(stat(path, &ipc), 0);
        touch(t->dir, "other");
        snprintf(path, sizeof(path), "%s/other", t->dir);
        assert_int_equal(stat(path, &other), 0);

        assert_int_equal(xp_nsgc_inuse_scan(t->dir, &inuse), 0);
        assert_int_equal(inuse.n, 2);
        assert_true(xp_nsgc_inuse_has(&inuse, net.st_dev, net.st_ino));
        assert_true(xp_nsgc_inuse_has(&inuse, ipc.st_dev, ipc.st_ino));
        assert_false(xp_nsgc_inuse_has(&inuse, other.st_dev, other.st_ino));
        xp_nsgc_inuse_done(&inuse);

        assert_int_equal(stat("/proc/self/ns/net", &net), 0);
        assert_int_equal(xp_nsgc_inuse_scan("/proc", &inuse), 0);
        assert_true(xp_nsgc_inuse_has(&inuse, net.st_dev, net.st_ino));
        xp_nsgc_inuse_done(&inuse);
        snprintf(path, sizeof(path), "%s/none", t->dir);
        assert_int_equal(xp_nsgc_inuse_scan(path, &inuse), -ENOENT);
}

static int setup(void **state)
{
        return tmpdir_setup(state, "nsgc", "x");
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_judge),
            cmocka_unit_test_setup_teardown(test_sweep, setup, tmpdir_teardown),
            cmocka_unit_test_setup_teardown(test_inuse_scan, setup, tmpdir_teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
