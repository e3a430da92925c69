/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The read-only shares made read-only again in the container's child (contain_share.c): a share
 * that is a mount turns read-only, and when the kernel cannot say whether it is one (statx
 * refused), the start fails naming the share rather than leaving it writable. Each case runs in
 * a child of its own in a mount namespace of its own; skipped where that is not allowed.
 */
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "runtime/contain_internal.h"

enum {
        CHILD_OK = 0,
        CHILD_SKIP = 77
};

/* statx answers EPERM, everything else runs */
static int refuse_statx(void)
{
        struct sock_filter code[] = {
            BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
            BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_statx, 0, 1),
            BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
            BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        };
        struct sock_fprog prog = {.len = sizeof code / sizeof code[0], .filter = code};

        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                return -errno;
        return syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0 ? -errno : 0;
}

/* in the child: exit status 0 when the case held, 77 when it cannot run here, else 1.. */
static int share_case(const char *dir, bool statx_refused)
{
        char *shares[] = {(char *)dir};
        struct contain_plan p = {.share_ro = shares, .n_share_ro = 1};
        const char *what = NULL, *arg = NULL;
        struct statvfs sv;
        int r;

        if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
            mount("tmpfs", dir, "tmpfs", 0, "size=64k") < 0)
                return CHILD_SKIP;
        if (statx_refused && refuse_statx() < 0)
                return CHILD_SKIP;
        r = contain_child_share_read_only(&p, &what, &arg);
        if (statx_refused) {
                if (r >= 0)
                        return 1; /* left writable without a word */
                if (!what || !strstr(what, "statx") || !arg || strcmp(arg, dir) != 0)
                        return 2;
                return statvfs(dir, &sv) == 0 && !(sv.f_flag & ST_RDONLY) ? CHILD_OK : 3;
        }
        if (r < 0)
                return 4;
        return statvfs(dir, &sv) == 0 && (sv.f_flag & ST_RDONLY) ? CHILD_OK : 5;
}

static void run_case(bool statx_refused)
{
        char dir[] = "/tmp/xpool-share-XXXXXX";
        int status = 0;
        pid_t pid;

        if (geteuid() != 0)
                skip();
        assert_non_null(mkdtemp(dir));
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0)
                _exit(share_case(dir, statx_refused));
        assert_int_equal(waitpid(pid, &status, 0), pid);
        rmdir(dir);
        assert_true(WIFEXITED(status));
        if (WEXITSTATUS(status) == CHILD_SKIP)
                skip();
        assert_int_equal(WEXITSTATUS(status), CHILD_OK);
}

static void share_mount_turns_read_only(void **state)
{
        (void)state;
        run_case(false);
}

static void statx_refused_fails_the_start(void **state)
{
        (void)state;
        run_case(true);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(share_mount_turns_read_only),
            cmocka_unit_test(statx_refused_fails_the_start),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
