/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cgroup v2 device isolation (src/runtime/cgroup_bpf.c): the program's shape and its checks of
 * the devices, then the real thing where the machine allows it (root, a cgroup2 mount: the whole
 * hierarchy, or the unified one of a hybrid machine, where the kernel runs device programs as
 * well): a child moved into a group with the program opens the allowed device nodes and is
 * refused the others (EPERM), and an access beyond the allowed one.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "runtime/cgroup_internal.h"

static const struct xp_cgroup_device null_and_full[] = {
    {.type = 'c', .major = 1, .minor = 3, .access = "rw"}, /* /dev/null */
    {.type = 'c', .major = 1, .minor = 7, .access = "r"},  /* /dev/full, read only */
};

static void program_shape(void **state)
{
        struct bpf_insn *insns = NULL;
        size_t n = 0;

        (void)state;
        assert_int_equal(cgroup_bpf_device_program(null_and_full, 2, &insns, &n, NULL), 0);
        /* six loads and shifts, eight per device, the final deny */
        assert_int_equal(n, 6 + 2 * 8 + 2);
        /* the second device's block: type, major, minor, then the access mask of "r" alone */
        assert_int_equal(insns[6 + 8].code, BPF_JMP | BPF_JNE | BPF_K);
        assert_int_equal(insns[6 + 8].imm, BPF_DEVCG_DEV_CHAR);
        assert_int_equal(insns[6 + 8 + 1].imm, 1);
        assert_int_equal(insns[6 + 8 + 2].imm, 7);
        assert_int_equal(insns[6 + 8 + 4].imm, BPF_DEVCG_ACC_WRITE | BPF_DEVCG_ACC_MKNOD);
        /* every jump lands inside the program */
        for (size_t i = 0; i < n; i++)
                if (BPF_CLASS(insns[i].code) == BPF_JMP && BPF_OP(insns[i].code) == BPF_JNE)
                        assert_true(i + 1 + (size_t)insns[i].off < n);
        assert_int_equal(insns[n - 1].code, BPF_JMP | BPF_EXIT);
        assert_int_equal(insns[n - 2].imm, 0);
        free(insns);

        /* any minor: no minor check, a block one shorter whose jumps still land on the next */
        {
                static const struct xp_cgroup_device pts[] = {
                    {.type = 'c', .major = 136, .minor = XP_CGROUP_DEVICE_ANY, .access = "rw"},
                    {.type = 'c', .major = 1, .minor = 3, .access = "rw"},
                };

                assert_int_equal(cgroup_bpf_device_program(pts, 2, &insns, &n, NULL), 0);
                assert_int_equal(n, 6 + 7 + 8 + 2);
                assert_int_equal(insns[6].off, 6);       /* type: to the second block */
                assert_int_equal(insns[6 + 1].imm, 136); /* major */
                assert_int_equal(insns[6 + 1].off, 5);
                assert_int_equal(insns[6 + 2].code, BPF_ALU64 | BPF_MOV | BPF_X); /* no minor */
                assert_int_equal(insns[6 + 7 + 2].imm, 3);                        /* next block */
                free(insns);
        }

        /* none allowed: the deny alone */
        assert_int_equal(cgroup_bpf_device_program(NULL, 0, &insns, &n, NULL), 0);
        assert_int_equal(n, 8);
        free(insns);
}

static void bad_devices(void **state)
{
        static const struct xp_cgroup_device no_type[] = {{.type = 'x', .major = 1, .access = "r"}};
        static const struct xp_cgroup_device no_access[] = {
            {.type = 'c', .major = 1, .access = ""}};
        struct bpf_insn *insns = NULL;
        struct xp_error err = {0};
        size_t n = 0;

        (void)state;
        assert_int_equal(cgroup_bpf_device_program(no_type, 1, &insns, &n, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "device 0 (x 1:0 r) is not valid"));
        assert_int_equal(cgroup_bpf_device_program(no_access, 1, &insns, &n, &err), -EINVAL);
        assert_null(insns);
}

/* The cgroup2 mount point from /proc/self/mountinfo, or NULL. */
static char *cgroup2_mount(void)
{
        FILE *fp = fopen("/proc/self/mountinfo", "re");
        char line[4096], *found = NULL;

        while (fp && !found && fgets(line, sizeof(line), fp)) {
                char mount[1024], fstype[64];
                const char *sep = strstr(line, " - ");

                if (sep && sscanf(line, "%*s %*s %*s %*s %1023s", mount) == 1 &&
                    sscanf(sep + 3, "%63s", fstype) == 1 && strcmp(fstype, "cgroup2") == 0)
                        found = strdup(mount);
        }
        if (fp)
                fclose(fp);
        return found;
}

/* In the child: bit 0 /dev/null rw opened, 1 /dev/zero refused, 2 /dev/full r opened, 3
 * /dev/full w refused (each EPERM where refused). */
static int try_devices(void)
{
        int fd, bits = 0;

        if ((fd = open("/dev/null", O_RDWR)) >= 0) {
                bits |= 1;
                close(fd);
        }
        if ((fd = open("/dev/zero", O_RDONLY)) < 0 && errno == EPERM)
                bits |= 2;
        else if (fd >= 0)
                close(fd);
        if ((fd = open("/dev/full", O_RDONLY)) >= 0) {
                bits |= 4;
                close(fd);
        }
        if ((fd = open("/dev/full", O_WRONLY)) < 0 && errno == EPERM)
                bits |= 8;
        else if (fd >= 0)
                close(fd);
        return bits;
}

static void real_group(void **state)
{
        char *mount = cgroup2_mount(), dir[1200], procs[1300];
        struct xp_error err = {0};
        int group, r, status;
        pid_t child;

        (void)state;
        if (geteuid() != 0 || !mount) {
                free(mount);
                skip();
        }
        snprintf(dir, sizeof(dir), "%s/xpool-bpf-test-%d", mount, (int)getpid());
        free(mount);
        if (mkdir(dir, 0755) < 0)
                skip(); /* a read-only cgroup2 mount (a container) */
        group = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(group >= 0);
        r = cgroup_bpf_restrict_devices(group, "xpool-bpf-test", null_and_full, 2, &err);
        close(group);
        if (r == -EOPNOTSUPP) {
                rmdir(dir);
                skip(); /* BPF programs refused here */
        }
        if (r < 0)
                rmdir(dir);
        assert_int_equal(r, 0);

        snprintf(procs, sizeof(procs), "%s/cgroup.procs", dir);
        child = fork();
        assert_true(child >= 0);
        if (child == 0) {
                int fd = open(procs, O_WRONLY);

                if (fd < 0 || dprintf(fd, "%d", (int)getpid()) < 0)
                        _exit(100);
                close(fd);
                _exit(try_devices());
        }
        assert_int_equal(waitpid(child, &status, 0), child);
        rmdir(dir);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 1 | 2 | 4 | 8);
        /* this process, outside the group, is not filtered */
        assert_int_equal(try_devices() & 2, 0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(program_shape),
            cmocka_unit_test(bad_devices),
            cmocka_unit_test(real_group),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
