/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the container's process does to itself between the shim's fork and its exec, in the
 * order runc does it: namespaces and mounts while it still holds every capability, then the
 * bounding set, the user, the other capability sets, no_new_privs, and the seccomp filter last
 * (or before the user changes, when it must be loaded with CAP_SYS_ADMIN). System calls only:
 * everything was prepared before the fork (contain_plan.c), so this stays async-signal-safe.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "contain_internal.h"

#define MNT_SAFE (MS_NOSUID | MS_NODEV | MS_NOEXEC)

static int fail(const char *step, const char *path, const char **what, const char **arg)
{
        int r = -errno;

        *what = step;
        *arg = path;
        return r < 0 ? r : -EIO;
}

/* An empty read-only directory, or /dev/null, over path. One not in the container's view (below
 * the node's /tmp, which the container's own covers) has nothing to hide. */
static int mask(const char *path, bool dir, const char **what, const char **arg)
{
        if (dir ? mount("tmpfs", path, "tmpfs", MS_RDONLY | MNT_SAFE, "mode=0555,nr_inodes=1") < 0
                : mount("/dev/null", path, NULL, MS_BIND, NULL) < 0)
                return errno == ENOENT ? 0 : fail("hiding", path, what, arg);
        return 0;
}

/* path bound onto itself read-only, with what is mounted below it, and attrs besides. */
static int read_only(const char *path, uint64_t attrs, const char **what, const char **arg)
{
        struct mount_attr ro = {.attr_set = MOUNT_ATTR_RDONLY | attrs};

        if (mount(path, path, NULL, MS_BIND | MS_REC, NULL) < 0)
                return fail("making read-only", path, what, arg);
        if (mount_setattr(AT_FDCWD, path, AT_RECURSIVE, &ro, sizeof(ro)) == 0)
                return 0;
        /* before Linux 5.12: the mount itself */
        if (errno != ENOSYS ||
            mount(NULL,
                  path,
                  NULL,
                  MS_BIND | MS_REMOUNT | MS_RDONLY | (attrs ? MS_NOSUID | MS_NODEV | MS_NOEXEC : 0),
                  NULL) < 0)
                return fail("making read-only", path, what, arg);
        return 0;
}

#define ATTR_SAFE (MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC)

/* The directories where every user of the node may write, which the container gets its own of. */
static const char *const private_tmp_paths[] = {"/tmp", "/var/tmp"};
#define N_PRIVATE_TMP (sizeof private_tmp_paths / sizeof *private_tmp_paths)

static bool volume_at(const struct contain_plan *p, const char *path)
{
        for (size_t i = 0; i < p->n_binds; i++)
                if (strcmp(p->binds[i].destination, path) == 0)
                        return true;
        return false;
}

/*
 * The container's own /tmp and /var/tmp: tmpfs, charged to its memory limit as /dev/shm is, each
 * half as large (a write past it is ENOSPC, not the OOM killer), unless a volume is mounted there
 * (an emptyDir at /tmp, as on Kubernetes). The node's are shared by its users and pods: what one
 * pod leaves there (a link, a program) another would find. fds[i]: the mount, made writable again
 * once the node is read-only; -1 where none.
 */
static int private_tmp(const struct contain_plan *p, int fds[], const char **what, const char **arg)
{
        for (size_t i = 0; i < N_PRIVATE_TMP; i++) {
                const char *path = private_tmp_paths[i];
                struct stat st;

                if (volume_at(p, path) || lstat(path, &st) < 0 || !S_ISDIR(st.st_mode))
                        continue;
                if (mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, p->tmp_options) < 0)
                        return fail("mounting", path, what, arg);
                fds[i] = open(path, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (fds[i] < 0)
                        return fail("opening", path, what, arg);
        }
        return 0;
}

/*
 * Every mount of the node read-only, /dev and what is below it (shm, pts, mqueue) left
 * writable, and the container's own /tmp and /var/tmp writable again unless
 * readOnlyRootFilesystem (its volumes too, by contain_child_binds_writable()). *all: every
 * mount turned read-only (Linux 5.12's mount_setattr), else the root mount alone did.
 */
static int read_only_node(
    const struct contain_plan *p, const int tmp[], bool *all, const char **what, const char **arg)
{
        struct mount_attr ro = {.attr_set = MOUNT_ATTR_RDONLY};
        struct mount_attr rw = {.attr_clr = MOUNT_ATTR_RDONLY};
        struct statx stx;

        *all = false;
        if (mount_setattr(AT_FDCWD, "/", AT_RECURSIVE, &ro, sizeof(ro)) < 0) {
                if (errno != ENOSYS)
                        return fail("making the node read-only", "/", what, arg);
                /* before Linux 5.12: the root mount alone */
                if (mount(NULL, "/", NULL, MS_BIND | MS_REMOUNT | MS_RDONLY, NULL) < 0)
                        return fail("making the node read-only", "/", what, arg);
                return 0;
        }
        *all = true;
        if (statx(AT_FDCWD, "/dev", AT_SYMLINK_NOFOLLOW, STATX_TYPE, &stx) == 0 &&
            (stx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) &&
            (stx.stx_attributes & STATX_ATTR_MOUNT_ROOT) &&
            mount_setattr(AT_FDCWD, "/dev", AT_RECURSIVE, &rw, sizeof(rw)) < 0)
                return fail("keeping /dev writable", "/dev", what, arg);
        for (size_t i = 0; i < N_PRIVATE_TMP && !p->read_only_root; i++)
                if (tmp[i] >= 0 && mount_setattr(tmp[i], "", AT_EMPTY_PATH, &rw, sizeof(rw)) < 0)
                        return fail("keeping writable", private_tmp_paths[i], what, arg);
        return 0;
}

/*
 * /sys read-only, and no cgroup file system but the container's own. In the pod's own network
 * namespace it is a new sysfs of that namespace (its interfaces under /sys/class/net, not the
 * node's), as runc mounts it. A container in the host's network namespace gets the host's /sys
 * bound read-only with everything below it: a new sysfs of a namespace the container does not
 * own is refused.
 */
static int read_only_sys(const struct contain_plan *p, const char **what, const char **arg)
{
        struct stat st;
        int r = 0;

        if (!p->sysfs || mount("sysfs", "/sys", "sysfs", MS_RDONLY | MNT_SAFE, NULL) < 0)
                r = read_only("/sys", ATTR_SAFE, what, arg);
        if (r < 0 || stat("/sys/fs/cgroup", &st) < 0)
                return 0;
        /* v2: the container's own group is mounted on it once it joined the group
         * (contain_child_cgroup_namespace()) */
        return mask("/sys/fs/cgroup", true, what, arg);
}

/* What a container must not change on the node: /proc's and /sys's kernel knobs (OCI's default
 * lists), the node's programs and configuration (already read-only where node_read_only). */
static int kernel_paths(bool node_read_only, const char **what, const char **arg)
{
        struct stat st;
        int r;

        for (size_t i = 0; xp_contain_readonly_paths[i]; i++)
                if (stat(xp_contain_readonly_paths[i], &st) == 0 &&
                    (r = read_only(xp_contain_readonly_paths[i], ATTR_SAFE, what, arg)) < 0)
                        return r;
        /* the node's programs and configuration: a write there is code the node runs as root */
        for (size_t i = 0; !node_read_only && xp_contain_system_paths[i]; i++)
                if (lstat(xp_contain_system_paths[i], &st) == 0 && S_ISDIR(st.st_mode) &&
                    (r = read_only(xp_contain_system_paths[i], 0, what, arg)) < 0)
                        return r;
        for (size_t i = 0; xp_contain_masked_paths[i]; i++)
                if (stat(xp_contain_masked_paths[i], &st) == 0 &&
                    (r = mask(xp_contain_masked_paths[i], S_ISDIR(st.st_mode), what, arg)) < 0)
                        return r;
        return 0;
}

/* A tmpfs at /dev/shm, unless a volume is mounted there (a memory emptyDir is the pod's way to a
 * larger one). contain_plan_binds() refused volumes below it, whose mount points would lie on the
 * node's /dev/shm under this one. */
static int own_shm(const struct contain_plan *p, const char **what, const char **arg)
{
        struct stat st;

        for (size_t i = 0; i < p->n_binds; i++)
                if (strcmp(p->binds[i].destination, "/dev/shm") == 0)
                        return 0;
        if (stat("/dev/shm", &st) < 0 || !S_ISDIR(st.st_mode))
                return 0;
        if (mount("shm", "/dev/shm", "tmpfs", MNT_SAFE, "mode=1777,size=65536k") < 0)
                return fail("mounting", "/dev/shm", what, arg);
        return 0;
}

/* Where the node has a /dev/mqueue, the pod's own message queues there (its IPC namespace's,
 * which a new mqueue file system shows): the node's list the node's and other pods' queues. */
static int own_mqueue(const struct contain_plan *p, const char **what, const char **arg)
{
        struct stat st;

        if (p->ipc_fd < 0 || stat("/dev/mqueue", &st) < 0 || !S_ISDIR(st.st_mode))
                return 0;
        if (mount("mqueue", "/dev/mqueue", "mqueue", MNT_SAFE, NULL) < 0)
                return fail("mounting", "/dev/mqueue", what, arg);
        return 0;
}

/* "/proc/self/fd/N" without snprintf (async-signal-safe). */
static void fd_path(int fd, char ret[static 32])
{
        char digits[12];
        size_t n = 0, len = 14;

        memcpy(ret, "/proc/self/fd/", len);
        do
                digits[n++] = (char)('0' + (unsigned)fd % 10);
        while ((fd = (int)((unsigned)fd / 10)) > 0);
        while (n > 0)
                ret[len++] = digits[--n];
        ret[len] = '\0';
}

/*
 * /dev/console: the container's terminal (tty_fd, opened on the node's devpts before the fork),
 * bound by its path in this namespace (a mount of the node's namespace, as the fd's is, cannot
 * be bound here), as runc binds a container's console; without one, /dev/null: the node's
 * console is whoever types at the machine.
 */
static int own_console(int tty_fd, const char **what, const char **arg)
{
        char link[32], slave[64];
        struct stat st;
        ssize_t n;

        if (stat("/dev/console", &st) < 0)
                return 0;
        if (tty_fd < 0)
                return mask("/dev/console", false, what, arg);
        fd_path(tty_fd, link);
        n = readlink(link, slave, sizeof(slave) - 1);
        if (n <= 0 || (size_t)n >= sizeof(slave) - 1 || strncmp(slave, "/dev/pts/", 9) != 0)
                return mask("/dev/console", false, what, arg);
        slave[n] = '\0';
        if (mount(slave, "/dev/console", NULL, MS_BIND, NULL) < 0)
                return fail("binding its terminal to", "/dev/console", what, arg);
        return 0;
}

int contain_child_own_terminals(const struct contain_plan *p,
                                int tty_fd,
                                const char **what,
                                const char **arg)
{
        struct stat st;
        int r;

        if (!p->namespaces || p->privileged)
                return 0;
        /* before the node's devpts is covered: the terminal is bound from it */
        if ((r = own_console(tty_fd, what, arg)) < 0)
                return r;
        if (stat("/dev/pts", &st) < 0 || !S_ISDIR(st.st_mode))
                return 0;
        if (mount("devpts",
                  "/dev/pts",
                  "devpts",
                  MS_NOSUID | MS_NOEXEC,
                  "newinstance,ptmxmode=0666,mode=0620,gid=5") < 0)
                return fail("mounting", "/dev/pts", what, arg);
        if (stat("/dev/ptmx", &st) == 0 &&
            mount("/dev/pts/ptmx", "/dev/ptmx", NULL, MS_BIND, NULL) < 0)
                return fail("binding", "/dev/ptmx", what, arg);
        return 0;
}

/* The pod's volumes (and the node's shared paths) over the container's own /tmp, then the node
 * read-only around them: a root pod writes nothing of the node's outside its volumes. */
static int
node_view(const struct contain_plan *p, bool *all_ro, const char **what, const char **arg)
{
        int tmp[N_PRIVATE_TMP], r;

        for (size_t i = 0; i < N_PRIVATE_TMP; i++)
                tmp[i] = -1;
        /* a mount point missing in / is made in a root of its own, not on the node's */
        r = contain_child_own_root(p, what, arg);
        /* and one missing below /run in a directory of its own */
        if (r >= 0)
                r = contain_child_own_dirs(p, what, arg);
        /* the sources first: they may lie below the node's /tmp */
        if (r >= 0)
                r = contain_child_bind_sources(p, what, arg);
        if (r >= 0 && !p->privileged)
                r = private_tmp(p, tmp, what, arg);
        /* before the node turns read-only: a missing mount point is made on it */
        if (r >= 0)
                r = contain_child_binds(p, tmp, N_PRIVATE_TMP, what, arg);
        if (r >= 0 && (!p->privileged || p->read_only_root))
                r = read_only_node(p, tmp, all_ro, what, arg);
        for (size_t i = 0; i < N_PRIVATE_TMP; i++)
                if (tmp[i] >= 0)
                        close(tmp[i]);
        if (r < 0)
                return r;
        return contain_child_binds_writable(p, *all_ro, what, arg);
}

int contain_child_mounts(const struct contain_plan *p, const char **what, const char **arg)
{
        bool node_read_only = false;
        int r;

        /* the pod's network: every container of the pod joins the one namespace */
        if (p->netns_fd >= 0 && setns(p->netns_fd, CLONE_NEWNET) < 0)
                return fail("joining the network namespace", p->netns, what, arg);
        if (p->ipc_fd >= 0 && setns(p->ipc_fd, CLONE_NEWIPC) < 0)
                return fail("joining the pod's", "IPC namespace", what, arg);
        if (!p->namespaces)
                return 0;
        /* the cgroup namespace comes after the group is joined (contain_child_cgroup_namespace())
         */
        if (unshare(CLONE_NEWNS) < 0)
                return fail("unshare", "the mount namespace", what, arg);
        /* nothing mounted here reaches the host, nothing the host mounts later reaches here */
        if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
                return fail("mount", "/ (private propagation)", what, arg);
        /* the copies of the pods' network namespaces' mounts: kept, they would keep every
         * other pod's namespace (its veth, its address) alive as long as this container */
        for (size_t i = 0; p->detach && p->detach[i]; i++)
                if (umount2(p->detach[i], MNT_DETACH) < 0 && errno != EINVAL && errno != ENOENT)
                        return fail("detaching", p->detach[i], what, arg);
        /* before the node's secrets are hidden (the sources are below the agent's data
         * directory) */
        if ((r = node_view(p, &node_read_only, what, arg)) < 0)
                return r;
        /* the pid namespace's own processes only: no other pod's, no agent's command line */
        if (mount("proc", "/proc", "proc", MNT_SAFE, NULL) < 0)
                return fail("mount", "/proc", what, arg);
        if (!p->privileged) {
                r = read_only_sys(p, what, arg);
                if (r >= 0)
                        r = kernel_paths(node_read_only, what, arg);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < p->n_hide; i++) {
                r = mask(p->hide[i], p->hide_dir[i], what, arg);
                if (r < 0)
                        return r;
        }
        if ((r = own_mqueue(p, what, arg)) < 0)
                return r;
        /* POSIX shared memory of its own, as an OCI container has (64 MiB, charged to its
         * memory limit): the node's /dev/shm holds the node's and other pods' segments. Last:
         * the binds' sources and the hidden paths may lie there (--state-dir /dev/shm/...) */
        if (!p->privileged)
                return own_shm(p, what, arg);
        return 0;
}

int contain_child_cgroup_namespace(const struct contain_plan *p,
                                   const char **what,
                                   const char **arg)
{
        struct stat st;

        if (!p->namespaces)
                return 0;
        /* after joining the cgroup: the namespace's root is the container's own group */
        if (unshare(CLONE_NEWCGROUP) < 0)
                return fail("unshare", "the cgroup namespace", what, arg);
        /* v2: that group, read-only, over the empty /sys/fs/cgroup read_only_sys() left; where
         * the kernel refuses, no cgroup file system at all, which is as safe */
        if (!p->privileged && p->cgroup2 && stat("/sys/fs/cgroup", &st) == 0)
                (void)mount("cgroup2", "/sys/fs/cgroup", "cgroup2", MS_RDONLY | MNT_SAFE, NULL);
        return 0;
}

static int load_filter(const struct contain_plan *p, const char **what, const char **arg)
{
        struct sock_fprog prog = {.len = (unsigned short)p->filter_len, .filter = p->filter};

        if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) < 0)
                return fail("seccomp", "the default filter", what, arg);
        return 0;
}

int contain_child_before_user(const struct contain_plan *p, const char **what, const char **arg)
{
        if (p->set_caps) {
                for (int c = 0; c <= p->last_cap; c++)
                        if (!(p->caps.bounding & XP_CAP_BIT(c)) &&
                            prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0)
                                return fail("prctl", "PR_CAPBSET_DROP", what, arg);
                /* EINVAL: a kernel without ambient capabilities has none to clear */
                if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
                        return fail("prctl", "PR_CAP_AMBIENT_CLEAR_ALL", what, arg);
                /* the permitted set survives the change of user; the effective one is set after */
                if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) < 0)
                        return fail("prctl", "PR_SET_KEEPCAPS", what, arg);
        }
        if (p->filter && !p->no_new_privs)
                return load_filter(p, what, arg);
        return 0;
}

int contain_child_after_user(const struct contain_plan *p, const char **what, const char **arg)
{
        struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
        struct __user_cap_data_struct data[2] = {
            {.effective = (__u32)p->caps.effective,
             .permitted = (__u32)p->caps.permitted,
             .inheritable = (__u32)p->caps.inheritable},
            {.effective = (__u32)(p->caps.effective >> 32),
             .permitted = (__u32)(p->caps.permitted >> 32),
             .inheritable = (__u32)(p->caps.inheritable >> 32)},
        };

        if (p->set_caps) {
                if (syscall(SYS_capset, &hdr, data) < 0)
                        return fail("capset", "the container's capabilities", what, arg);
                if (prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0) < 0)
                        return fail("prctl", "PR_SET_KEEPCAPS", what, arg);
                for (int c = 0; c <= p->last_cap; c++)
                        if ((p->caps.ambient & XP_CAP_BIT(c)) &&
                            prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, c, 0, 0) < 0)
                                return fail("prctl", "PR_CAP_AMBIENT_RAISE", what, arg);
        }
        if (p->no_new_privs && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                return fail("prctl", "PR_SET_NO_NEW_PRIVS", what, arg);
        return 0;
}

int contain_child_seccomp_last(const struct contain_plan *p, const char **what, const char **arg)
{
        if (p->filter && p->no_new_privs)
                return load_filter(p, what, arg);
        return 0;
}
