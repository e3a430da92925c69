/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The cgroup layer (src/runtime/cgroup*.c) over fake v1 and v2 trees in a temporary directory:
 * directories holding the files the kernel would have, so the exact values written can be read
 * back. One test works on the real /sys/fs/cgroup and skips unless run as root on a writable one.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <setjmp.h>
#include <signal.h>
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
#include "xpool/cgroup.h"
#include "xpool/macro.h"
#include "xpool/runtime.h"

struct fixture {
        char root[256];
};

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
        (void)st;
        (void)flag;
        (void)ftw;
        return remove(path);
}

static int setup(void **state)
{
        struct fixture *f = calloc(1, sizeof(*f));
        const char *tmp = getenv("TMPDIR");

        if (!f)
                return -1;
        snprintf(f->root, sizeof(f->root), "%s/xpool-cgroup-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(f->root)) {
                free(f);
                return -1;
        }
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        struct fixture *f = *state;

        nftw(f->root, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
        free(f);
        return 0;
}

/* Writes content to root/path, creating the directories on the way. */
static void put(struct fixture *f, const char *path, const char *content)
{
        char full[1024];
        FILE *file;

        snprintf(full, sizeof(full), "%s/%s", f->root, path);
        for (char *slash = strchr(full + strlen(f->root) + 1, '/'); slash;
             slash = strchr(slash + 1, '/')) {
                *slash = '\0';
                if (mkdir(full, 0755) < 0 && errno != EEXIST)
                        fail_msg("mkdir %s: %s", full, strerror(errno));
                *slash = '/';
        }
        file = fopen(full, "we");
        if (!file)
                fail_msg("creating %s: %s", full, strerror(errno));
        assert_int_equal(fwrite(content, 1, strlen(content), file), strlen(content));
        assert_int_equal(fclose(file), 0);
}

/* The content of root/path; "<missing>" when there is no such file. Static buffer. */
static const char *get(struct fixture *f, const char *path)
{
        static char buf[4096];
        char full[1024];
        FILE *file;
        size_t n;

        snprintf(full, sizeof(full), "%s/%s", f->root, path);
        file = fopen(full, "re");
        if (!file)
                return "<missing>";
        n = fread(buf, 1, sizeof(buf) - 1, file);
        buf[n] = '\0';
        fclose(file);
        return buf;
}

/* A FIFO at root/path, opened for reading, so every write to it can be read back in order. */
static int put_fifo(struct fixture *f, const char *path)
{
        char full[1024];
        int fd;

        put(f, path, "");
        snprintf(full, sizeof(full), "%s/%s", f->root, path);
        assert_int_equal(unlink(full), 0);
        assert_int_equal(mkfifo(full, 0644), 0);
        fd = open(full, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
        assert_true(fd >= 0);
        return fd;
}

static const char *drain(int fd)
{
        static char buf[4096];
        ssize_t n = read(fd, buf, sizeof(buf) - 1);

        buf[n > 0 ? n : 0] = '\0';
        return buf;
}

static void unlink_in(struct fixture *f, const char *path)
{
        char full[1024];

        snprintf(full, sizeof(full), "%s/%s", f->root, path);
        assert_int_equal(unlink(full), 0);
}

static bool exists(struct fixture *f, const char *path)
{
        char full[1024];
        struct stat st;

        snprintf(full, sizeof(full), "%s/%s", f->root, path);
        return stat(full, &st) == 0;
}

/* ---- fake trees ------------------------------------------------------------------------------ */

#define V1_CG "sys/fs/cgroup"
static const char v1_mountinfo[] =
    "25 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
    "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
    "32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct\n"
    "34 31 0:31 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset\n"
    "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
    "36 31 0:33 / /sys/fs/cgroup/devices rw,relatime - cgroup cgroup rw,devices\n"
    "39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n"
    "40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd\n"
    "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";

static const char *const v1_files[][8] = {
    {"cpu,cpuacct", "cgroup.procs", "cpu.cfs_period_us", "cpu.cfs_quota_us"},
    {"cpuset", "cgroup.procs", "cpuset.cpus", "cpuset.mems"},
    {"memory", "cgroup.procs", "memory.limit_in_bytes", "memory.oom_control"},
    {"devices", "cgroup.procs", "devices.allow", "devices.deny"},
    {"pids", "cgroup.procs", "pids.max"},
};

/* Each hierarchy with its files at the root and at every level of group, as mkdir would make. */
static void v1_tree(struct fixture *f, const char *group)
{
        char path[512], prefix[256];

        put(f, "proc/self/mountinfo", v1_mountinfo);
        put(f, V1_CG "/unified/cgroup.controllers", "");
        for (size_t h = 0; h < XP_ELEMENTSOF(v1_files); h++) {
                for (size_t i = 1; v1_files[h][i]; i++) {
                        snprintf(
                            path, sizeof(path), V1_CG "/%s/%s", v1_files[h][0], v1_files[h][i]);
                        put(f, path, "");
                }
                for (const char *p = group; p;) {
                        p = strchr(p, '/');
                        snprintf(prefix,
                                 sizeof(prefix),
                                 "%.*s",
                                 p ? (int)(p - group) : (int)strlen(group),
                                 group);
                        for (size_t i = 1; v1_files[h][i]; i++) {
                                snprintf(path,
                                         sizeof(path),
                                         V1_CG "/%s/%s/%s",
                                         v1_files[h][0],
                                         prefix,
                                         v1_files[h][i]);
                                put(f, path, "");
                        }
                        if (p)
                                p++;
                }
        }
        put(f, V1_CG "/cpuset/cpuset.cpus", "0-7\n");
        put(f, V1_CG "/cpuset/cpuset.mems", "0\n");
}

static const char *const v2_files[] = {"cgroup.procs",
                                       "cgroup.subtree_control",
                                       "cpu.max",
                                       "memory.max",
                                       "memory.events",
                                       "pids.max",
                                       "cpuset.cpus",
                                       "cpuset.mems"};

static void v2_tree(struct fixture *f, const char *controllers, const char *group)
{
        char path[512], prefix[256];

        put(f,
            "proc/self/mountinfo",
            "30 23 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n");
        put(f, V1_CG "/cgroup.controllers", controllers);
        put(f, V1_CG "/cgroup.subtree_control", "");
        for (const char *p = group; p;) {
                p = strchr(p, '/');
                snprintf(prefix,
                         sizeof(prefix),
                         "%.*s",
                         p ? (int)(p - group) : (int)strlen(group),
                         group);
                for (size_t i = 0; i < XP_ELEMENTSOF(v2_files); i++) {
                        snprintf(path, sizeof(path), V1_CG "/%s/%s", prefix, v2_files[i]);
                        put(f, path, "");
                }
                if (p)
                        p++;
        }
}

static struct xp_cgroup_root *open_root(struct fixture *f, enum xp_cgroup_mode mode)
{
        struct xp_cgroup_root *root = NULL;
        struct xp_error err = {0};

        if (xp_cgroup_root_open(f->root, &root, &err) < 0)
                fail_msg("xp_cgroup_root_open: %s", err.msg);
        assert_int_equal(xp_cgroup_root_mode(root), mode);
        return root;
}

/* ---- detection ------------------------------------------------------------------------------- */

static void detect_modes(void **state)
{
        struct fixture *f = *state;
        _cleanup_(xp_cgroup_root_freep) struct xp_cgroup_root *root = NULL;
        struct xp_cgroup *cg = (struct xp_cgroup *)0x1;
        struct xp_error err = {0};

        assert_string_equal(xp_cgroup_mode_to_string(XP_CGROUP_NONE), "none");
        assert_string_equal(xp_cgroup_mode_to_string(XP_CGROUP_V1), "v1");
        assert_string_equal(xp_cgroup_mode_to_string(XP_CGROUP_V2), "v2");
        assert_null(xp_cgroup_mode_to_string((enum xp_cgroup_mode)3));

        /* an empty tree: no cgroups, which is a mode, not an error */
        root = open_root(f, XP_CGROUP_NONE);
        assert_int_equal(xp_cgroup_create(root, "xpool/a/b", &cg, &err), -EOPNOTSUPP);
        assert_non_null(strstr(err.msg, "no cgroups"));
        assert_ptr_equal(cg, (struct xp_cgroup *)0x1);
        xp_cgroup_root_free(TAKE_PTR(root));

        /* only non-cgroup mounts and a named (controller-less) v1 hierarchy: still none */
        put(f,
            "proc/self/mountinfo",
            "25 1 8:1 / / rw - ext4 /dev/sda1 rw\n"
            "40 31 0:37 / /sys/fs/cgroup/systemd rw - cgroup cgroup rw,name=systemd\n");
        root = open_root(f, XP_CGROUP_NONE);
        xp_cgroup_root_free(TAKE_PTR(root));

        /* hybrid: an empty cgroup.controllers at the top does not make it v2 */
        v1_tree(f, "g");
        put(f, V1_CG "/cgroup.controllers", "\n");
        root = open_root(f, XP_CGROUP_V1);
        xp_cgroup_root_free(TAKE_PTR(root));

        put(f, V1_CG "/cgroup.controllers", "cpuset cpu io memory hugetlb pids rdma misc\n");
        root = open_root(f, XP_CGROUP_V2);
}

static void detect_errors(void **state)
{
        struct fixture *f = *state;
        struct xp_cgroup_root *root = (struct xp_cgroup_root *)0x1;
        struct xp_error err = {0};
        char missing[300];

        snprintf(missing, sizeof(missing), "%s/nowhere", f->root);
        assert_int_equal(xp_cgroup_root_open(missing, &root, &err), -ENOENT);
        assert_non_null(strstr(err.msg, missing));

        put(f, "proc/self/mountinfo", "25 1 8:1 / / rw - ext4 /dev/sda1 rw\nnonsense line\n");
        assert_int_equal(xp_cgroup_root_open(f->root, &root, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "mountinfo:2:"));

        put(f, "proc/self/mountinfo", "32 31 0:29 / /x - cgroup\n");
        assert_int_equal(xp_cgroup_root_open(f->root, &root, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "mountinfo:1: cgroup mount without options"));

        /* a mount point with an escaped space is decoded */
        put(f, "proc/self/mountinfo", "32 31 0:29 / /c\\040g rw - cgroup cgroup rw,pids\n");
        put(f, "c g/cgroup.procs", "");
        assert_int_equal(xp_cgroup_root_open(f->root, &root, &err), 0);
        assert_int_equal(xp_cgroup_root_mode(root), XP_CGROUP_V1);
        {
                _cleanup_(xp_cgroup_freep) struct xp_cgroup *cg = NULL;

                assert_int_equal(xp_cgroup_create(root, "g", &cg, &err), 0);
                assert_true(exists(f, "c g/g"));
        }
        xp_cgroup_root_free(root);
}

/* ---- paths ----------------------------------------------------------------------------------- */

static void paths(void **state)
{
        struct fixture *f = *state;
        _cleanup_(xp_cgroup_root_freep) struct xp_cgroup_root *root = NULL;
        struct xp_cgroup *cg = (struct xp_cgroup *)0x1;
        struct xp_error err = {0};
        char *path = NULL, longname[300];
        static const char *const bad[] = {
            "", "/a", "a/", "a//b", "a/../b", "..", "./a", "a/.", "a\nb"};

        /* no parent: where agents before per-runtime parents put them */
        assert_int_equal(xp_cgroup_container_path(NULL, "0d5c-11", "main", &path, &err), 0);
        assert_string_equal(path, "xpool/0d5c-11/main");
        free(path);
        assert_int_equal(
            xp_cgroup_container_path("xpool/agent-0123", "0d5c-11", "main", &path, &err), 0);
        assert_string_equal(path, "xpool/agent-0123/0d5c-11/main");
        free(path);
        path = (char *)"untouched";
        assert_int_equal(xp_cgroup_container_path(NULL, "a/b", "main", &path, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "pod uid 'a/b'"));
        assert_int_equal(xp_cgroup_container_path(NULL, "uid", "..", &path, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "container '..'"));
        assert_int_equal(xp_cgroup_container_path(NULL, "", "c", &path, &err), -EINVAL);
        memset(longname, 'u', sizeof(longname) - 1);
        longname[sizeof(longname) - 1] = '\0';
        assert_int_equal(xp_cgroup_container_path(NULL, longname, "c", &path, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "is longer than 256"));
        assert_string_equal(path, "untouched");

        v2_tree(f, "cpu memory pids", "ok");
        root = open_root(f, XP_CGROUP_V2);
        for (size_t i = 0; i < XP_ELEMENTSOF(bad); i++) {
                assert_int_equal(xp_cgroup_create(root, bad[i], &cg, &err), -EINVAL);
                assert_non_null(strstr(err.msg, "cgroup path"));
        }
        assert_int_equal(xp_cgroup_create(root, longname, &cg, &err), -EINVAL);
        assert_ptr_equal(cg, (struct xp_cgroup *)0x1);
        assert_false(exists(f, V1_CG "/a"));
}

/* ---- v1 -------------------------------------------------------------------------------------- */

static const struct xp_cgroup_device gpu_devices[] = {
    {.type = 'c', .major = 195, .minor = 0, .access = "rwm"},
    {.type = 'c', .major = 1, .minor = 3, .access = "rw"},
    {.type = 'b', .major = 8, .minor = 16, .access = "r"},
    {.type = 'c', .major = 136, .minor = XP_CGROUP_DEVICE_ANY, .access = "rwm"},
};

static void v1_create_apply(void **state)
{
        struct fixture *f = *state;
        _cleanup_(xp_cgroup_root_freep) struct xp_cgroup_root *root = NULL;
        _cleanup_(xp_cgroup_freep) struct xp_cgroup *cg = NULL;
        struct xp_error err = {0};
        struct xp_cgroup_limits limits = {
            .cpu_millis = 1500,
            .memory_bytes = 512 * 1024 * 1024,
            .pids_max = 64,
            .cpuset_cpus = "2-3",
            .cpuset_mems = "0",
            .restrict_devices = true,
            .devices = gpu_devices,
            .n_devices = XP_ELEMENTSOF(gpu_devices),
        };
        _cleanup_close_ int deny = -1, allow = -1;

        v1_tree(f, "xpool/uid1/main");
        root = open_root(f, XP_CGROUP_V1);
        if (xp_cgroup_create(root, "xpool/uid1/main", &cg, &err) < 0)
                fail_msg("create: %s", err.msg);
        assert_string_equal(xp_cgroup_path(cg), "xpool/uid1/main");
        /* no cpuset group until the limits pin CPUs: nothing inherited yet */
        assert_string_equal(get(f, V1_CG "/cpuset/xpool/cpuset.cpus"), "");
        assert_string_equal(get(f, V1_CG "/cpuset/xpool/uid1/main/cpuset.cpus"), "");

        deny = put_fifo(f, V1_CG "/devices/xpool/uid1/main/devices.deny");
        allow = put_fifo(f, V1_CG "/devices/xpool/uid1/main/devices.allow");
        if (xp_cgroup_apply(cg, &limits, &err) < 0)
                fail_msg("apply: %s", err.msg);
        assert_string_equal(get(f, V1_CG "/cpu,cpuacct/xpool/uid1/main/cpu.cfs_period_us"),
                            "100000");
        assert_string_equal(get(f, V1_CG "/cpu,cpuacct/xpool/uid1/main/cpu.cfs_quota_us"),
                            "150000");
        assert_string_equal(get(f, V1_CG "/memory/xpool/uid1/main/memory.limit_in_bytes"),
                            "536870912");
        assert_string_equal(get(f, V1_CG "/pids/xpool/uid1/main/pids.max"), "64");
        /* pinned: the new cpuset levels inherit the parent's cpus and mems, top to bottom */
        assert_string_equal(get(f, V1_CG "/cpuset/xpool/cpuset.cpus"), "0-7");
        assert_string_equal(get(f, V1_CG "/cpuset/xpool/uid1/cpuset.mems"), "0");
        assert_string_equal(get(f, V1_CG "/cpuset/xpool/uid1/main/cpuset.cpus"), "2-3");
        assert_string_equal(get(f, V1_CG "/cpuset/xpool/uid1/main/cpuset.mems"), "0");
        assert_string_equal(drain(deny), "a");
        /* four separate writes, in order, one rule each; any minor is "*" */
        assert_string_equal(drain(allow), "c 195:0 rwmc 1:3 rwb 8:16 rc 136:* rwm");

        /* a short period and a tiny quota: the kernel's 1 ms minimum */
        limits = (struct xp_cgroup_limits){.cpu_millis = 1, .cpu_period_us = 10000};
        put(f, V1_CG "/cpu,cpuacct/xpool/uid1/main/cpu.cfs_quota_us", "");
        put(f, V1_CG "/cpu,cpuacct/xpool/uid1/main/cpu.cfs_period_us", "");
        assert_int_equal(xp_cgroup_apply(cg, &limits, &err), 0);
        assert_string_equal(get(f, V1_CG "/cpu,cpuacct/xpool/uid1/main/cpu.cfs_period_us"),
                            "10000");
        assert_string_equal(get(f, V1_CG "/cpu,cpuacct/xpool/uid1/main/cpu.cfs_quota_us"), "1000");
}

/* The warming thread's make step for a pinned group (cgroup_warm.c) runs beside the shim's create
 * and apply in another process: it makes the cpuset directories and writes no cpuset file, so it
 * can never write the parent's CPUs over the shim's pinning (review31 M2). */
static void v1_warm_make_cpuset_writes_nothing(void **state)
{
        struct fixture *f = *state;
        _cleanup_(xp_cgroup_root_freep) struct xp_cgroup_root *root = NULL;
        _cleanup_(xp_cgroup_freep) struct xp_cgroup *cg = NULL;
        struct xp_error err = {0};
        struct xp_cgroup_limits limits = {.cpuset_cpus = "2-3", .cpuset_mems = "0"};

        v1_tree(f, "xpool/uid1/main");
        root = open_root(f, XP_CGROUP_V1);
        if (xp_cgroup_create(root, "xpool/uid1/main", &cg, &err) < 0)
                fail_msg("create: %s", err.msg);
        /* blank levels stay blank: filling them in is the shim's */
        if (cgroup_v1_make_cpuset(cg, &err) < 0)
                fail_msg("make: %s", err.msg);
        assert_string_equal(get(f, V1_CG "/cpuset/xpool/cpuset.cpus"), "");
        assert_string_equal(get(f, V1_CG "/cpuset/xpool/uid1/main/cpuset.cpus"), "");
        assert_string_equal(get(f, V1_CG "/cpuset/xpool/uid1/main/cpuset.mems"), "");
        /* after the shim's apply, the make step leaves the pinning as it is */
        if (xp_cgroup_apply(cg, &limits, &err) < 0)
                fail_msg("apply: %s", err.msg);
        assert_int_equal(cgroup_v1_make_cpuset(cg, &err), 0);
        assert_string_equal(get(f, V1_CG "/cpuset/xpool/uid1/main/cpuset.cpus"), "2-3");
        assert_string_equal(get(f, V1_CG "/cpuset/xpool/uid1/main/cpuset.mems"), "0");
        /* a group whose cpuset directories are not there yet gets them, with no files written */
        xp_cgroup_free(TAKE_PTR(cg));
        if (xp_cgroup_create(root, "xpool/uid2/new", &cg, &err) < 0)
                fail_msg("create: %s", err.msg);
        if (cgroup_v1_make_cpuset(cg, &err) < 0)
                fail_msg("make: %s", err.msg);
        assert_true(exists(f, V1_CG "/cpuset/xpool/uid2/new"));
        assert_false(exists(f, V1_CG "/cpuset/xpool/uid2/new/cpuset.cpus"));
        assert_false(exists(f, V1_CG "/cpuset/xpool/uid2/cpuset.cpus"));
}

/* Where cpuset is v1's only hierarchy, a group's create writes its cpuset files (the group gets its
 * cpuset at once), so the warming thread must make no group there (review31 M2): it is told so. */
static void v1_create_writes_cpuset_only_alone(void **state)
{
        struct fixture *f = *state;
        struct xp_cgroup_root *root;

        v1_tree(f, "g");
        root = open_root(f, XP_CGROUP_V1);
        assert_false(cgroup_v1_create_writes_cpuset(root));
        xp_cgroup_root_free(root);
        put(f,
            "proc/self/mountinfo",
            "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
            "34 31 0:31 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset\n");
        root = open_root(f, XP_CGROUP_V1);
        assert_true(cgroup_v1_create_writes_cpuset(root));
        xp_cgroup_root_free(root);
        v2_tree(f, "cpuset cpu memory pids", "g");
        root = open_root(f, XP_CGROUP_V2);
        assert_false(cgroup_v1_create_writes_cpuset(root));
        xp_cgroup_root_free(root);
}

static void v1_apply_errors(void **state)
{
        struct fixture *f = *state;
        _cleanup_(xp_cgroup_root_freep) struct xp_cgroup_root *root = NULL;
        _cleanup_(xp_cgroup_freep) struct xp_cgroup *cg = NULL;
        struct xp_error err = {0};
        struct xp_cgroup_device dev = {.type = 'x', .major = 1, .minor = 1, .access = "rw"};
        struct xp_cgroup_limits limits = {
            .memory_bytes = 4096, .restrict_devices = true, .devices = &dev, .n_devices = 1};

        v1_tree(f, "g");
        root = open_root(f, XP_CGROUP_V1);
        assert_int_equal(xp_cgroup_create(root, "g", &cg, &err), 0);

        /* checked before any write: nothing changes */
        assert_int_equal(xp_cgroup_apply(cg, &limits, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "devices[0].type"));
        dev.type = 'c';
        strcpy(dev.access, "rwx");
        assert_int_equal(xp_cgroup_apply(cg, &limits, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "devices[0].access"));
        dev.access[0] = '\0';
        assert_int_equal(xp_cgroup_apply(cg, &limits, &err), -EINVAL);
        limits.restrict_devices = false;
        strcpy(dev.access, "rw");
        assert_int_equal(xp_cgroup_apply(cg, &limits, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "without restrict_devices"));
        limits = (struct xp_cgroup_limits){.memory_bytes = 4096, .cpuset_cpus = "0-3; rm"};
        assert_int_equal(xp_cgroup_apply(cg, &limits, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "cpuset_cpus: '0-3; rm'"));
        limits =
            (struct xp_cgroup_limits){.memory_bytes = 4096, .cpu_millis = 1, .cpu_period_us = 5};
        assert_int_equal(xp_cgroup_apply(cg, &limits, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "cpu_period_us: 5"));
        assert_string_equal(get(f, V1_CG "/memory/g/memory.limit_in_bytes"), "");
        assert_string_equal(get(f, V1_CG "/cpu,cpuacct/g/cpu.cfs_period_us"), "");

        /* a file the kernel would have is missing: the error names file and value */
        unlink_in(f, V1_CG "/pids/g/pids.max");
        limits = (struct xp_cgroup_limits){.pids_max = 99};
        assert_int_equal(xp_cgroup_apply(cg, &limits, &err), -ENOENT);
        assert_non_null(strstr(err.msg, "writing '99' to /sys/fs/cgroup/pids/g/pids.max"));
}

static void v1_missing_controller(void **state)
{
        struct fixture *f = *state;
        _cleanup_(xp_cgroup_root_freep) struct xp_cgroup_root *root = NULL;
        _cleanup_(xp_cgroup_freep) struct xp_cgroup *cg = NULL;
        struct xp_error err = {0};
        struct xp_cgroup_limits limits = {.memory_bytes = 4096, .pids_max = 5};

        put(f,
            "proc/self/mountinfo",
            "35 31 0:32 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n");
        put(f, V1_CG "/memory/g/memory.limit_in_bytes", "");
        root = open_root(f, XP_CGROUP_V1);
        assert_int_equal(xp_cgroup_create(root, "g", &cg, &err), 0);
        assert_int_equal(xp_cgroup_apply(cg, &limits, &err), -EOPNOTSUPP);
        assert_non_null(strstr(err.msg, "pids_max needs the v1 pids controller"));
        assert_string_equal(get(f, V1_CG "/memory/g/memory.limit_in_bytes"), "");
        /* create really makes the directories of a new group */
        xp_cgroup_free(TAKE_PTR(cg));
        assert_int_equal(xp_cgroup_create(root, "new/deeper", &cg, &err), 0);
        assert_true(exists(f, V1_CG "/memory/new/deeper"));
        assert_int_equal(xp_cgroup_remove(cg, &err), 0);
        assert_false(exists(f, V1_CG "/memory/new/deeper"));
        assert_true(exists(f, V1_CG "/memory/new"));
}

/* A container that pins nothing gets no cpuset group (issue 21): its processes join the other
 * hierarchies and stay in the parent's cpuset; removing the group still succeeds. */
static void v1_unpinned_no_cpuset(void **state)
{
        struct fixture *f = *state;
        _cleanup_(xp_cgroup_root_freep) struct xp_cgroup_root *root = NULL;
        _cleanup_(xp_cgroup_freep) struct xp_cgroup *cg = NULL;
        struct xp_error err = {0};
        struct xp_cgroup_limits limits = {.cpu_millis = 500, .pids_max = 64};
        char path[512];
        struct stat st;

        v1_tree(f, "xpool");
        root = open_root(f, XP_CGROUP_V1);
        /* the fixture's files stand for the kernel's: a group's directory is made here */
        assert_int_equal(xp_cgroup_create(root, "xpool/uid9/main", &cg, &err), 0);
        snprintf(path, sizeof(path), "%s/" V1_CG "/cpuset/xpool/uid9", f->root);
        assert_int_equal(stat(path, &st), -1);
        assert_int_equal(errno, ENOENT);
        snprintf(path, sizeof(path), "%s/" V1_CG "/memory/xpool/uid9/main", f->root);
        assert_int_equal(stat(path, &st), 0);
        for (size_t h = 0; h < XP_ELEMENTSOF(v1_files); h++)
                for (size_t i = 1; strcmp(v1_files[h][0], "cpuset") != 0 && v1_files[h][i]; i++) {
                        char file[256];

                        snprintf(file,
                                 sizeof(file),
                                 V1_CG "/%s/xpool/uid9/main/%s",
                                 v1_files[h][0],
                                 v1_files[h][i]);
                        put(f, file, "");
                }
        assert_int_equal(xp_cgroup_apply(cg, &limits, &err), 0);
        assert_int_equal(xp_cgroup_add_pid(cg, 4321, &err), 0);
        assert_string_equal(get(f, V1_CG "/memory/xpool/uid9/main/cgroup.procs"), "4321");
        assert_string_equal(get(f, V1_CG "/pids/xpool/uid9/main/pids.max"), "64");
        snprintf(path, sizeof(path), "%s/" V1_CG "/cpuset/xpool/uid9", f->root);
        assert_int_equal(stat(path, &st), -1);
        /* the parent's cpuset is untouched */
        assert_string_equal(get(f, V1_CG "/cpuset/xpool/cgroup.procs"), "");
}

/* An empty directory at root/path (an idle group), with its parents. */
static void make_dir(struct fixture *f, const char *path)
{
        char file[512];

        snprintf(file, sizeof(file), "%s/.made", path);
        put(f, file, "");
        unlink_in(f, file);
}

static bool keep_named(const char *name, void *userdata)
{
        return strcmp(name, userdata) == 0;
}

/* xp_cgroup_reclaim(): the parent's children that are not kept go, with their subgroups and in
 * every hierarchy (systemd's and the unified one too, where an OCI runtime makes them); another
 * parent's stay; a busy group stays and is not counted. */
static void v1_reclaim(void **state)
{
        struct fixture *f = *state;
        _cleanup_(xp_cgroup_root_freep) struct xp_cgroup_root *root = NULL;
        struct xp_error err = {0};
        static const char *const made[] = {
            V1_CG "/memory/xpool/agent-a/kept/main",
            V1_CG "/memory/xpool/agent-a/gone/main",
            V1_CG "/pids/xpool/agent-a/gone/main",
            V1_CG "/systemd/xpool/agent-a/gone/main",
            V1_CG "/unified/xpool/agent-a/gone/main",
            V1_CG "/cpu,cpuacct/xpool/agent-a/bare",
            V1_CG "/memory/xpool/agent-b/gone/main",
        };

        v1_tree(f, "g");
        for (size_t i = 0; i < XP_ELEMENTSOF(made); i++)
                make_dir(f, made[i]);
        root = open_root(f, XP_CGROUP_V1);
        assert_int_equal(xp_cgroup_reclaim(root, "xpool/agent-a", keep_named, "kept", &err), 2);
        assert_true(exists(f, V1_CG "/memory/xpool/agent-a/kept/main"));
        assert_false(exists(f, V1_CG "/memory/xpool/agent-a/gone"));
        assert_false(exists(f, V1_CG "/pids/xpool/agent-a/gone"));
        assert_false(exists(f, V1_CG "/systemd/xpool/agent-a/gone"));
        assert_false(exists(f, V1_CG "/unified/xpool/agent-a/gone"));
        assert_false(exists(f, V1_CG "/cpu,cpuacct/xpool/agent-a/bare"));
        assert_true(exists(f, V1_CG "/memory/xpool/agent-b/gone/main"));
        assert_true(exists(f, V1_CG "/memory/xpool/agent-a"));

        /* a fake group holding a file cannot be removed, as a busy one: left, not counted */
        put(f, V1_CG "/pids/xpool/agent-a/busy/cgroup.procs", "");
        assert_int_equal(xp_cgroup_reclaim(root, "xpool/agent-a", keep_named, "kept", &err), 0);
        assert_true(exists(f, V1_CG "/pids/xpool/agent-a/busy/cgroup.procs"));
        assert_int_equal(xp_cgroup_reclaim(root, "xpool/agent-none", keep_named, "", &err), 0);
}

static void v1_pids_oom_remove(void **state)
{
        struct fixture *f = *state;
        _cleanup_(xp_cgroup_root_freep) struct xp_cgroup_root *root = NULL;
        _cleanup_(xp_cgroup_freep) struct xp_cgroup *cg = NULL;
        struct xp_error err = {0};
        uint64_t kills = 77;

        v1_tree(f, "g");
        root = open_root(f, XP_CGROUP_V1);
        assert_int_equal(xp_cgroup_create(root, "g", &cg, &err), 0);
        assert_int_equal(xp_cgroup_add_pid(cg, 0, &err), -EINVAL);
        assert_int_equal(xp_cgroup_add_pid(cg, 4321, &err), 0);
        for (size_t h = 0; h < XP_ELEMENTSOF(v1_files); h++) {
                char path[256];

                snprintf(path, sizeof(path), V1_CG "/%s/g/cgroup.procs", v1_files[h][0]);
                assert_string_equal(get(f, path), "4321");
        }

        put(f,
            V1_CG "/memory/g/memory.oom_control",
            "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n");
        assert_int_equal(xp_cgroup_oom_kills(cg, &kills, &err), 0);
        assert_int_equal(kills, 3);
        put(f, V1_CG "/memory/g/memory.oom_control", "oom_kill_disable 0\nunder_oom 0\n");
        assert_int_equal(xp_cgroup_oom_kills(cg, &kills, &err), -ENODATA);
        assert_non_null(strstr(err.msg, "memory.oom_control: no oom_kill line"));
        put(f, V1_CG "/memory/g/memory.oom_control", "oom_kill x\n");
        assert_int_equal(xp_cgroup_oom_kills(cg, &kills, &err), -EINVAL);
        assert_int_equal(kills, 3);

        /* the fake directories hold files, as a busy group holds processes */
        assert_int_equal(xp_cgroup_remove(cg, &err), -ENOTEMPTY);
        assert_non_null(strstr(err.msg, "removing cgroup /sys/fs/cgroup/"));
        for (size_t h = 0; h < XP_ELEMENTSOF(v1_files); h++)
                for (size_t i = 1; v1_files[h][i]; i++) {
                        char path[256];

                        snprintf(
                            path, sizeof(path), V1_CG "/%s/g/%s", v1_files[h][0], v1_files[h][i]);
                        unlink_in(f, path);
                }
        assert_int_equal(xp_cgroup_remove(cg, &err), 0);
        assert_false(exists(f, V1_CG "/pids/g"));
        assert_false(exists(f, V1_CG "/cpu,cpuacct/g"));
        assert_true(exists(f, V1_CG "/pids"));
        /* gone already: still success */
        assert_int_equal(xp_cgroup_remove(cg, &err), 0);
}

/* One lookup tells whether a group was made (the runtime's removal of a pod's legacy level asks
 * before an rmdir in each hierarchy): cpuset is no witness, it is made only for pinned groups */
static void v1_exists(void **state)
{
        struct fixture *f = *state;
        _cleanup_(xp_cgroup_root_freep) struct xp_cgroup_root *root = NULL;

        v1_tree(f, "g/c");
        root = open_root(f, XP_CGROUP_V1);
        assert_true(xp_cgroup_exists(root, "g"));
        assert_true(xp_cgroup_exists(root, "g/c"));
        assert_false(xp_cgroup_exists(root, "h"));
        assert_false(xp_cgroup_exists(root, "g/../g"));
        put(f, V1_CG "/cpuset/p/cgroup.procs", "");
        assert_false(xp_cgroup_exists(root, "p"));
}

static void v2_exists(void **state)
{
        struct fixture *f = *state;
        _cleanup_(xp_cgroup_root_freep) struct xp_cgroup_root *root = NULL;

        v2_tree(f, "cpu memory pids", "a");
        root = open_root(f, XP_CGROUP_V2);
        assert_true(xp_cgroup_exists(root, "a"));
        assert_false(xp_cgroup_exists(root, "b"));
}

/* cpuacct mounted apart from cpu (Debian's hybrid layout): the group joins it too, so its CPU
 * time is the group's own and a process that exited keeps its share; accounting that cannot be
 * joined never stops a start */
static void v1_cpuacct_apart(void **state)
{
        struct fixture *f = *state;
        _cleanup_(xp_cgroup_root_freep) struct xp_cgroup_root *root = NULL;
        _cleanup_(xp_cgroup_freep) struct xp_cgroup *cg = NULL;
        struct xp_cgroup_usage usage = {0};
        struct xp_error err = {0};

        put(f,
            "proc/self/mountinfo",
            "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
            "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
            "33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct\n"
            "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n");
        put(f, V1_CG "/cpu/g/cgroup.procs", "");
        put(f, V1_CG "/cpuacct/g/cgroup.procs", "");
        put(f, V1_CG "/cpuacct/g/cpuacct.usage", "123456789\n");
        put(f, V1_CG "/memory/g/cgroup.procs", "");
        put(f, V1_CG "/memory/g/memory.usage_in_bytes", "8192\n");
        put(f, V1_CG "/memory/g/memory.stat", "total_inactive_file 4096\n");
        put(f, V1_CG "/memory/g/memory.oom_control", "oom_kill 0\n");
        root = open_root(f, XP_CGROUP_V1);
        assert_int_equal(xp_cgroup_create(root, "g", &cg, &err), 0);
        assert_int_equal(xp_cgroup_add_pid(cg, 4321, &err), 0);
        assert_string_equal(get(f, V1_CG "/cpu/g/cgroup.procs"), "4321");
        assert_string_equal(get(f, V1_CG "/cpuacct/g/cgroup.procs"), "4321");
        assert_int_equal(xp_cgroup_usage(cg, &usage), 0);
        assert_true(usage.has & XP_CGROUP_USAGE_CPU);
        assert_int_equal(usage.cpu_ns, 123456789);
        assert_int_equal(usage.working_set_bytes, 4096);

        unlink_in(f, V1_CG "/cpuacct/g/cgroup.procs");
        assert_int_equal(xp_cgroup_add_pid(cg, 4322, &err), 0);
        assert_string_equal(get(f, V1_CG "/cpu/g/cgroup.procs"), "4322");
}

/* What a shim opens: the hierarchies the agent found, given, with no mountinfo to read; the
 * same groups and files as the detected root's. A mount point outside the root is refused. */
static void v1_known_mounts(void **state)
{
        struct fixture *f = *state;
        _cleanup_(xp_cgroup_root_freep) struct xp_cgroup_root *detected = NULL, *known = NULL;
        _cleanup_(xp_cgroup_freep) struct xp_cgroup *cg = NULL;
        const char *mounts[CGROUP_CONTROLLER_MAX] = {0}, *bad[CGROUP_CONTROLLER_MAX] = {0};
        struct xp_cgroup_limits limits = {.cpu_millis = 500, .pids_max = 8};
        struct xp_cgroup_root *none = NULL;
        struct xp_error err = {0};

        v1_tree(f, "xpool/u/c");
        detected = open_root(f, XP_CGROUP_V1);
        for (int c = 0; c < CGROUP_CONTROLLER_MAX; c++)
                mounts[c] = cgroup_v1_mount(detected, (enum cgroup_controller)c);
        assert_string_equal(mounts[CGROUP_PIDS], V1_CG "/pids");
        assert_string_equal(mounts[CGROUP_CPUACCT], V1_CG "/cpu,cpuacct");
        unlink_in(f, "proc/self/mountinfo");
        if (cgroup_root_open_v1(f->root, mounts, &known, &err) < 0)
                fail_msg("cgroup_root_open_v1: %s", err.msg);
        assert_int_equal(xp_cgroup_root_mode(known), XP_CGROUP_V1);
        assert_int_equal(xp_cgroup_create(known, "xpool/u/c", &cg, &err), 0);
        assert_int_equal(xp_cgroup_apply(cg, &limits, &err), 0);
        assert_string_equal(get(f, V1_CG "/cpu,cpuacct/xpool/u/c/cpu.cfs_quota_us"), "50000");
        assert_string_equal(get(f, V1_CG "/pids/xpool/u/c/pids.max"), "8");

        bad[CGROUP_PIDS] = "/sys/fs/cgroup/pids";
        assert_int_equal(cgroup_root_open_v1(f->root, bad, &none, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "pids hierarchy '/sys/fs/cgroup/pids' is not below it"));
        bad[CGROUP_PIDS] = V1_CG "/../../etc";
        assert_int_equal(cgroup_root_open_v1(f->root, bad, &none, &err), -EINVAL);
        assert_null(none);
}

/* The other hierarchies the agent found (systemd's, the unified one), given to a shim's root: a
 * group's removal removes what an OCI runtime made there, so that the runtime's delete finds no
 * group to freeze. A mount point outside the root is refused. */
static void v1_known_others(void **state)
{
        struct fixture *f = *state;
        _cleanup_(xp_cgroup_root_freep) struct xp_cgroup_root *detected = NULL, *known = NULL;
        _cleanup_(xp_cgroup_freep) struct xp_cgroup *cg = NULL;
        const char *mounts[CGROUP_CONTROLLER_MAX] = {0};
        struct xp_error err = {0};
        char *const *others;
        size_t n;

        v1_tree(f, "xpool/u");
        detected = open_root(f, XP_CGROUP_V1);
        for (int c = 0; c < CGROUP_CONTROLLER_MAX; c++)
                mounts[c] = cgroup_v1_mount(detected, (enum cgroup_controller)c);
        n = cgroup_v1_others(detected, &others);
        assert_int_equal(n, 2);
        assert_string_equal(others[0], V1_CG "/systemd");
        assert_string_equal(others[1], V1_CG "/unified");
        if (cgroup_root_open_v1(f->root, mounts, &known, &err) < 0)
                fail_msg("cgroup_root_open_v1: %s", err.msg);
        for (size_t i = 0; i < n; i++)
                assert_int_equal(cgroup_root_add_v1_other(known, others[i], &err), 0);
        assert_int_equal(cgroup_root_add_v1_other(known, V1_CG "/../../etc", &err), -EINVAL);
        assert_non_null(strstr(err.msg, "is not below the root"));
        assert_int_equal(cgroup_v1_others(known, &others), 2);

        /* the runtime made the group, in every hierarchy: opened, then removed everywhere */
        make_dir(f, V1_CG "/pids/xpool/u/c");
        make_dir(f, V1_CG "/systemd/xpool/u/c");
        make_dir(f, V1_CG "/unified/xpool/u/c");
        assert_int_equal(xp_cgroup_open(known, "xpool/u/c", &cg, &err), 0);
        assert_int_equal(xp_cgroup_remove(cg, &err), 0);
        assert_false(exists(f, V1_CG "/pids/xpool/u/c"));
        assert_false(exists(f, V1_CG "/systemd/xpool/u/c"));
        assert_false(exists(f, V1_CG "/unified/xpool/u/c"));
}

static void pids_and_open(void **state)
{
        struct fixture *f = *state;
        _cleanup_(xp_cgroup_root_freep) struct xp_cgroup_root *root = NULL;
        _cleanup_(xp_cgroup_freep) struct xp_cgroup *cg = NULL, *missing = NULL;
        _cleanup_free_ pid_t *pids = NULL;
        struct xp_error err = {0};
        size_t n = 99;

        v1_tree(f, "g");
        root = open_root(f, XP_CGROUP_V1);
        /* open creates nothing */
        assert_int_equal(xp_cgroup_open(root, "h/c", &missing, &err), 0);
        assert_false(exists(f, V1_CG "/pids/h"));
        assert_int_equal(xp_cgroup_open(root, "../x", &cg, &err), -EINVAL);
        assert_int_equal(xp_cgroup_pids(missing, &pids, &n, &err), 0);
        assert_int_equal(n, 0);
        assert_null(pids);
        assert_int_equal(xp_cgroup_kill(missing, 0, &err), 0);

        assert_int_equal(xp_cgroup_open(root, "g", &cg, &err), 0);
        put(f, V1_CG "/pids/g/cgroup.procs", "12\n345\n");
        assert_int_equal(xp_cgroup_pids(cg, &pids, &n, &err), 0);
        assert_int_equal(n, 2);
        assert_int_equal(pids[0], 12);
        assert_int_equal(pids[1], 345);
        free(TAKE_PTR(pids));
        put(f, V1_CG "/pids/g/cgroup.procs", "12\nx\n");
        assert_int_equal(xp_cgroup_pids(cg, &pids, &n, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "pids/g/cgroup.procs: not a pid list"));
}

/* ---- v2 -------------------------------------------------------------------------------------- */

static void v2_create_apply(void **state)
{
        struct fixture *f = *state;
        _cleanup_(xp_cgroup_root_freep) struct xp_cgroup_root *root = NULL;
        _cleanup_(xp_cgroup_freep) struct xp_cgroup *cg = NULL;
        struct xp_error err = {0};
        struct xp_cgroup_limits limits = {
            .cpu_millis = 250,
            .cpu_period_us = 50000,
            .memory_bytes = 1 << 30,
            .pids_max = 100,
            .cpuset_cpus = "0,4-5",
            .cpuset_mems = "0-1",
        };
        uint64_t kills = 0;

        /* no pids controller here, and io is not one xpool enables */
        v2_tree(f, "cpuset cpu io memory\n", "xpool/uid2/c");
        root = open_root(f, XP_CGROUP_V2);
        if (xp_cgroup_create(root, "xpool/uid2/c", &cg, &err) < 0)
                fail_msg("create: %s", err.msg);
        assert_string_equal(get(f, V1_CG "/cgroup.subtree_control"), "+cpu +cpuset +memory");
        assert_string_equal(get(f, V1_CG "/xpool/cgroup.subtree_control"), "+cpu +cpuset +memory");
        assert_string_equal(get(f, V1_CG "/xpool/uid2/cgroup.subtree_control"),
                            "+cpu +cpuset +memory");
        /* the group holds processes, so it enables nothing below it */
        assert_string_equal(get(f, V1_CG "/xpool/uid2/c/cgroup.subtree_control"), "");

        assert_int_equal(xp_cgroup_apply(cg, &limits, &err), -EOPNOTSUPP);
        assert_non_null(strstr(err.msg, "pids_max needs the pids controller"));
        assert_string_equal(get(f, V1_CG "/xpool/uid2/c/cpu.max"), "");
        limits.pids_max = 0;
        if (xp_cgroup_apply(cg, &limits, &err) < 0)
                fail_msg("apply: %s", err.msg);
        assert_string_equal(get(f, V1_CG "/xpool/uid2/c/cpu.max"), "12500 50000");
        assert_string_equal(get(f, V1_CG "/xpool/uid2/c/memory.max"), "1073741824");
        assert_string_equal(get(f, V1_CG "/xpool/uid2/c/cpuset.cpus"), "0,4-5");
        assert_string_equal(get(f, V1_CG "/xpool/uid2/c/cpuset.mems"), "0-1");
        assert_string_equal(get(f, V1_CG "/xpool/uid2/c/pids.max"), "");

        /* device isolation on v2 is a BPF program attached first: in this fake tree (no cgroupfs)
         * the load or the attach fails, before any write */
        put(f, V1_CG "/xpool/uid2/c/memory.max", "");
        limits = (struct xp_cgroup_limits){
            .memory_bytes = 8192, .restrict_devices = true, .devices = gpu_devices, .n_devices = 1};
        assert_true(xp_cgroup_apply(cg, &limits, &err) < 0);
        assert_non_null(strstr(err.msg, "device program"));
        assert_string_equal(get(f, V1_CG "/xpool/uid2/c/memory.max"), "");

        assert_int_equal(xp_cgroup_add_pid(cg, 99, &err), 0);
        assert_string_equal(get(f, V1_CG "/xpool/uid2/c/cgroup.procs"), "99");

        put(f,
            V1_CG "/xpool/uid2/c/memory.events",
            "low 0\nhigh 0\nmax 12\noom 2\noom_kill 1\noom_group_kill 0\n");
        assert_int_equal(xp_cgroup_oom_kills(cg, &kills, &err), 0);
        assert_int_equal(kills, 1);
        put(f, V1_CG "/xpool/uid2/c/memory.events", "oom_kill_other 5\n");
        assert_int_equal(xp_cgroup_oom_kills(cg, &kills, &err), -ENODATA);
        assert_int_equal(kills, 1);
        unlink_in(f, V1_CG "/xpool/uid2/c/memory.events");
        assert_int_equal(xp_cgroup_oom_kills(cg, &kills, &err), -ENOENT);
        assert_non_null(strstr(err.msg, "reading /sys/fs/cgroup/xpool/uid2/c/memory.events"));
}

static void v2_errors(void **state)
{
        struct fixture *f = *state;
        _cleanup_(xp_cgroup_root_freep) struct xp_cgroup_root *root = NULL;
        struct xp_cgroup *cg = (struct xp_cgroup *)0x1;
        struct xp_error err = {0};

        /* a parent without cgroup.subtree_control: the kernel would refuse, and so do we */
        v2_tree(f, "cpu memory pids", "a");
        root = open_root(f, XP_CGROUP_V2);
        assert_int_equal(xp_cgroup_create(root, "a/b/c", &cg, &err), -ENOENT);
        assert_non_null(strstr(
            err.msg, "writing '+cpu +memory +pids' to /sys/fs/cgroup/a/b/cgroup.subtree_control"));
        assert_ptr_equal(cg, (struct xp_cgroup *)0x1);

        /* mkdir fails where a file stands in the way */
        put(f, V1_CG "/blocked", "");
        assert_int_equal(xp_cgroup_create(root, "blocked/x", &cg, &err), -ENOTDIR);
        assert_non_null(strstr(err.msg, "creating cgroup /sys/fs/cgroup/blocked/x"));
}

/* ---- warming task moves --------------------------------------------------------------------- */

static void own_path(void **state)
{
        static const char text[] = "12:pids:/user.slice\n"
                                   "4:cpu,cpuacct:/agent.slice/x\n"
                                   "1:name=systemd:/sd\n"
                                   "0::/unified\n";
        char buf[64];

        (void)state;
        assert_int_equal(cgroup_own_path(text, "cpu", buf, sizeof(buf)), 0);
        assert_string_equal(buf, "/agent.slice/x");
        assert_int_equal(cgroup_own_path(text, "cpuacct", buf, sizeof(buf)), 0);
        assert_string_equal(buf, "/agent.slice/x");
        assert_int_equal(cgroup_own_path(text, "pids", buf, sizeof(buf)), 0);
        assert_string_equal(buf, "/user.slice");
        /* a whole name of the list, never a part of one */
        assert_int_equal(cgroup_own_path(text, "cpus", buf, sizeof(buf)), -ENOENT);
        assert_int_equal(cgroup_own_path(text, "cp", buf, sizeof(buf)), -ENOENT);
        assert_int_equal(cgroup_own_path(text, "memory", buf, sizeof(buf)), -ENOENT);
        assert_int_equal(cgroup_own_path("3:memory:/", "memory", buf, sizeof(buf)), 0);
        assert_string_equal(buf, "/");
        assert_int_equal(cgroup_own_path("3:memory:rel\n", "memory", buf, sizeof(buf)), -EINVAL);
        assert_int_equal(cgroup_own_path("3:memory:\n", "memory", buf, sizeof(buf)), -EINVAL);
        assert_int_equal(cgroup_own_path("3:memory:/abc\n", "memory", buf, 4), -EINVAL);
        assert_int_equal(cgroup_own_path("garbage\n", "memory", buf, sizeof(buf)), -ENOENT);
}

/* The thread's own tid goes to the tasks file of its process's group, which it is in: nothing moves
 */
static void v1_warm_moves(void **state)
{
        struct fixture *f = *state;
        _cleanup_(xp_cgroup_root_freep) struct xp_cgroup_root *root = NULL;
        struct xp_error err = {0};
        char tid[24];

        v1_tree(f, "agent.slice");
        put(f, V1_CG "/cpu,cpuacct/agent.slice/tasks", "");
        put(f, V1_CG "/pids/other/tasks", "");
        put(f, "proc/self/cgroup", "5:pids:/other\n4:cpu,cpuacct:/agent.slice\n");
        root = open_root(f, XP_CGROUP_V1);
        assert_int_equal(xp_cgroup_warm_moves(root, &err), 0);
        snprintf(tid, sizeof(tid), "%d", (int)gettid());
        assert_string_equal(get(f, V1_CG "/cpu,cpuacct/agent.slice/tasks"), tid);
        assert_string_equal(get(f, V1_CG "/pids/other/tasks"), "");
        /* a group that is not there is never made */
        put(f, "proc/self/cgroup", "4:cpu,cpuacct:/gone\n");
        assert_int_equal(xp_cgroup_warm_moves(root, &err), -ENOENT);
        assert_false(exists(f, V1_CG "/cpu,cpuacct/gone"));
        put(f, "proc/self/cgroup", "5:pids:/other\n");
        assert_int_equal(xp_cgroup_warm_moves(root, &err), -ENOENT);
        assert_non_null(strstr(err.msg, "no group of the cpu hierarchy"));
}

/* A hierarchy mounted from below its root (a container's bind of its own group) names paths the
 * mount does not: never written there, the next one mounted whole is */
static void v1_warm_moves_whole_only(void **state)
{
        struct fixture *f = *state;
        _cleanup_(xp_cgroup_root_freep) struct xp_cgroup_root *root = NULL;
        struct xp_error err = {0};
        char tid[24];

        v1_tree(f, "sub");
        put(f,
            "proc/self/mountinfo",
            "32 31 0:29 /sub /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n"
            "34 31 0:31 / /sys/fs/cgroup/cpuset rw - cgroup cgroup rw,cpuset\n");
        put(f, V1_CG "/cpu,cpuacct/sub/tasks", "");
        put(f, V1_CG "/cpuset/sub/tasks", "");
        put(f, "proc/self/cgroup", "4:cpu,cpuacct:/sub\n3:cpuset:/sub\n");
        root = open_root(f, XP_CGROUP_V1);
        assert_int_equal(xp_cgroup_warm_moves(root, &err), 0);
        snprintf(tid, sizeof(tid), "%d", (int)gettid());
        assert_string_equal(get(f, V1_CG "/cpuset/sub/tasks"), tid);
        assert_string_equal(get(f, V1_CG "/cpu,cpuacct/sub/tasks"), "");
        xp_cgroup_root_free(TAKE_PTR(root));

        put(f,
            "proc/self/mountinfo",
            "32 31 0:29 /sub /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n");
        root = open_root(f, XP_CGROUP_V1);
        assert_int_equal(xp_cgroup_warm_moves(root, &err), -EOPNOTSUPP);
}

static void v2_warm_moves(void **state)
{
        struct fixture *f = *state;
        _cleanup_(xp_cgroup_root_freep) struct xp_cgroup_root *root = NULL;
        struct xp_error err = {0};

        v2_tree(f, "cpu memory pids", "a");
        put(f, "proc/self/cgroup", "0::/a\n");
        root = open_root(f, XP_CGROUP_V2);
        assert_int_equal(xp_cgroup_warm_moves(root, &err), -EOPNOTSUPP);
        assert_string_equal(get(f, V1_CG "/a/cgroup.procs"), "");
}

/* How many times text repeats the id of a thread of this process other than the caller's (the
 * writes of one thread, without separators); 0 when it is not such repeats. */
static size_t repeats_of_a_thread(const char *text)
{
        DIR *d = opendir("/proc/self/task");
        size_t found = 0, len = strlen(text);
        struct dirent *e;

        assert_non_null(d);
        while (!found && (e = readdir(d))) {
                size_t n = strlen(e->d_name), k;

                if (e->d_name[0] == '.' || strtol(e->d_name, NULL, 10) == gettid() || len % n)
                        continue;
                for (k = 0; k < len && strncmp(text + k, e->d_name, n) == 0; k += n)
                        ;
                if (len && k == len)
                        found = len / n;
        }
        closedir(d);
        return found;
}

/* Whether the group of container uid1/name below the runtime's parent is in the hierarchy. */
static bool exists_group(struct fixture *f,
                         const struct xp_runtime *rt,
                         const char *hierarchy,
                         const char *name)
{
        char path[512];

        snprintf(path,
                 sizeof(path),
                 V1_CG "/%s/%s/uid1/%s",
                 hierarchy,
                 xp_runtime_cgroup_parent(rt),
                 name);
        return exists(f, path);
}

/* The runtime's thread makes the move when asked, and again while the start asked for is under
 * way (the lock stays warm a grace period after each move), and the runtime's end joins it. The
 * start's container group is made before the first move (the move holds the lock a mkdir needs);
 * cpuset only with the pinning, as the shim makes it. */
static void runtime_warm_moves(void **state)
{
        struct fixture *f = *state;
        struct xp_runtime *rt = NULL;
        char state_dir[512], log_dir[512], got[4096] = "";
        struct xp_runtime_options o = {
            .state_dir = state_dir, .log_dir = log_dir, .cgroup_root = f->root};
        int fifo;

        put(f, "proc/self/mountinfo", v1_mountinfo);
        v1_tree(f, "agent.slice");
        fifo = put_fifo(f, V1_CG "/cpu,cpuacct/agent.slice/tasks");
        put(f, "proc/self/cgroup", "4:cpu,cpuacct:/agent.slice\n");
        snprintf(state_dir, sizeof(state_dir), "%s/state", f->root);
        snprintf(log_dir, sizeof(log_dir), "%s/logs", f->root);
        assert_int_equal(xp_runtime_open(&o, &rt, NULL), 0);
        assert_int_equal(xp_runtime_cgroup_mode(rt), XP_CGROUP_V1);
        assert_false(exists_group(f, rt, "cpu,cpuacct", "c"));
        xp_runtime_warm_moves(rt, "uid1", "c", false);
        xp_runtime_warm_moves(rt, "uid1", "pinned", true);
        /* two moves of the runtime's thread, waited for (60 s at most: a limit) */
        for (int i = 0; i < 6000 && repeats_of_a_thread(got) < 2; i++) {
                size_t len = strlen(got);

                snprintf(got + len, sizeof(got) - len, "%s", drain(fifo));
                if (strlen(got) == len)
                        usleep(10000);
        }
        assert_true(repeats_of_a_thread(got) >= 2);
        assert_true(exists_group(f, rt, "cpu,cpuacct", "c"));
        assert_true(exists_group(f, rt, "memory", "c"));
        assert_true(exists_group(f, rt, "pids", "c"));
        assert_true(exists_group(f, rt, "devices", "c"));
        assert_false(exists_group(f, rt, "cpuset", "c"));
        assert_true(exists_group(f, rt, "memory", "pinned"));
        assert_true(exists_group(f, rt, "cpuset", "pinned"));
        /* a name that is not one path component makes nothing; the move is still made */
        xp_runtime_warm_moves(rt, "../x", "c", true);
        xp_runtime_warm_moves(rt, NULL, NULL, false);
        xp_runtime_free(rt);
        close(fifo);
}

/* ---- the real machine ------------------------------------------------------------------------ */

static void real_machine(void **state)
{
        _cleanup_(xp_cgroup_root_freep) struct xp_cgroup_root *root = NULL;
        _cleanup_(xp_cgroup_freep) struct xp_cgroup *cg = NULL;
        struct xp_error err = {0};
        struct xp_cgroup_device null_dev = {.type = 'c', .major = 1, .minor = 3, .access = "rwm"};
        struct xp_cgroup_limits limits = {
            .cpu_millis = 500, .memory_bytes = 64 << 20, .pids_max = 16};
        char path[64], proc[64], line[1024];
        bool found = false;
        uint64_t kills = 99;
        FILE *file;
        pid_t child;
        int status, r;

        (void)state;
        if (geteuid() != 0) {
                print_message("skipping: not root\n");
                skip();
        }
        if (xp_cgroup_root_open("/", &root, &err) < 0)
                fail_msg("open /: %s", err.msg);
        if (xp_cgroup_root_mode(root) == XP_CGROUP_NONE) {
                print_message("skipping: no cgroups on this machine\n");
                skip();
        }
        snprintf(path, sizeof(path), "xpool-test-%d", (int)getpid());
        r = xp_cgroup_create(root, path, &cg, &err);
        if (r == -EROFS || r == -EACCES || r == -EPERM) {
                print_message("skipping: cgroups not writable: %s\n", err.msg);
                skip();
        }
        if (r < 0)
                fail_msg("create: %s", err.msg);
        if (xp_cgroup_root_mode(root) == XP_CGROUP_V1) {
                limits.restrict_devices = true;
                limits.devices = &null_dev;
                limits.n_devices = 1;
        }
        r = xp_cgroup_apply(cg, &limits, &err);
        if (r < 0) {
                xp_cgroup_remove(cg, NULL);
                fail_msg("apply: %s", err.msg);
        }

        child = fork();
        assert_true(child >= 0);
        if (child == 0) {
                pause();
                _exit(0);
        }
        r = xp_cgroup_add_pid(cg, child, &err);
        snprintf(proc, sizeof(proc), "/proc/%d/cgroup", (int)child);
        file = fopen(proc, "re");
        while (file && fgets(line, sizeof(line), file))
                if (strstr(line, path))
                        found = true;
        if (file)
                fclose(file);
        kill(child, SIGKILL);
        assert_int_equal(waitpid(child, &status, 0), child);
        if (r < 0) {
                xp_cgroup_remove(cg, NULL);
                fail_msg("add_pid: %s", err.msg);
        }
        assert_true(found);
        r = xp_cgroup_oom_kills(cg, &kills, &err);
        assert_true(r == 0 || r == -ENODATA);
        if (r == 0)
                assert_int_equal(kills, 0);
        /* the killed child leaves the group asynchronously; give the kernel a moment (30 s at
         * most: a limit, at load) */
        for (int i = 0; i < 1500 && (r = xp_cgroup_remove(cg, &err)) == -EBUSY; i++)
                usleep(20000);
        if (r < 0)
                fail_msg("remove: %s", err.msg);
}

/* The calling process's groups (its first thread's), /proc/self/cgroup, in buf. */
static void own_groups(char *buf, size_t size)
{
        FILE *file = fopen("/proc/self/cgroup", "re");
        size_t n;

        assert_non_null(file);
        n = fread(buf, 1, size - 1, file);
        buf[n] = '\0';
        fclose(file);
}

/* On a v1 machine the move is allowed and changes nothing: the thread stays in its groups */
static void real_machine_warm(void **state)
{
        _cleanup_(xp_cgroup_root_freep) struct xp_cgroup_root *root = NULL;
        struct xp_error err = {0};
        char before[4096], after[4096];

        (void)state;
        if (geteuid() != 0 || xp_cgroup_root_open("/", &root, &err) < 0 ||
            xp_cgroup_root_mode(root) != XP_CGROUP_V1) {
                print_message("skipping: not root on a cgroup v1 machine\n");
                skip();
        }
        own_groups(before, sizeof(before));
        if (xp_cgroup_warm_moves(root, &err) < 0)
                fail_msg("warm moves: %s", err.msg);
        own_groups(after, sizeof(after));
        assert_string_equal(before, after);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test_setup_teardown(detect_modes, setup, teardown),
            cmocka_unit_test_setup_teardown(detect_errors, setup, teardown),
            cmocka_unit_test_setup_teardown(paths, setup, teardown),
            cmocka_unit_test_setup_teardown(v1_create_apply, setup, teardown),
            cmocka_unit_test_setup_teardown(v1_warm_make_cpuset_writes_nothing, setup, teardown),
            cmocka_unit_test_setup_teardown(v1_create_writes_cpuset_only_alone, setup, teardown),
            cmocka_unit_test_setup_teardown(v1_apply_errors, setup, teardown),
            cmocka_unit_test_setup_teardown(v1_missing_controller, setup, teardown),
            cmocka_unit_test_setup_teardown(v1_unpinned_no_cpuset, setup, teardown),
            cmocka_unit_test_setup_teardown(v1_pids_oom_remove, setup, teardown),
            cmocka_unit_test_setup_teardown(v1_exists, setup, teardown),
            cmocka_unit_test_setup_teardown(v2_exists, setup, teardown),
            cmocka_unit_test_setup_teardown(v1_reclaim, setup, teardown),
            cmocka_unit_test_setup_teardown(v1_cpuacct_apart, setup, teardown),
            cmocka_unit_test_setup_teardown(v1_known_mounts, setup, teardown),
            cmocka_unit_test_setup_teardown(v1_known_others, setup, teardown),
            cmocka_unit_test_setup_teardown(pids_and_open, setup, teardown),
            cmocka_unit_test_setup_teardown(v2_create_apply, setup, teardown),
            cmocka_unit_test_setup_teardown(v2_errors, setup, teardown),
            cmocka_unit_test(own_path),
            cmocka_unit_test_setup_teardown(v1_warm_moves, setup, teardown),
            cmocka_unit_test_setup_teardown(v1_warm_moves_whole_only, setup, teardown),
            cmocka_unit_test_setup_teardown(v2_warm_moves, setup, teardown),
            cmocka_unit_test_setup_teardown(runtime_warm_moves, setup, teardown),
            cmocka_unit_test(real_machine),
            cmocka_unit_test(real_machine_warm),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
