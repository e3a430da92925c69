/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A root of the container's own for a process container whose volume needs a mount point
 * directly in / that the node lacks (mountPath /data): a small tmpfs holding every entry of the
 * node's / (each directory bound from the node with what is mounted below it, each link copied,
 * each file bound), made the root with pivot_root, so the mount point is made in the container's
 * view and the node's / gains nothing. The root turns read-only with the rest of the node
 * (contain_child.c). Its tmpfs is first mounted on /proc, where the container's own proc is
 * mounted later anyway. System calls only: it runs in the shim's child between fork and exec.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "contain_internal.h"

#define STAGE_NAME "proc"
#define STAGE      "/" STAGE_NAME

struct dirent64_raw {
        unsigned long long d_ino;
        long long d_off;
        unsigned short d_reclen;
        unsigned char d_type;
        char d_name[];
};

bool contain_needs_own_root(const struct contain_plan *p)
{
        char top[NAME_MAX + 2];
        struct stat st;

        if (!p->namespaces || p->privileged)
                return false;
        for (size_t i = 0; i < p->n_binds; i++) {
                const char *d = p->binds[i].destination;
                size_t n;

                while (*d == '/')
                        d++;
                n = strcspn(d, "/");
                if (p->binds[i].shared || n == 0 || n > NAME_MAX)
                        continue;
                top[0] = '/';
                memcpy(top + 1, d, n);
                top[n + 1] = '\0';
                if (lstat(top, &st) < 0 && errno == ENOENT)
                        return true;
        }
        return false;
}

/* prefix + name into buf (PATH_MAX), without snprintf. */
static void join(char *buf, const char *prefix, const char *name)
{
        size_t a = strlen(prefix), b = strnlen(name, NAME_MAX);

        memcpy(buf, prefix, a);
        memcpy(buf + a, name, b);
        buf[a + b] = '\0';
}

/* The node's /name in the new root (stage): a link copied, anything else made and bound. */
static int mirror(int root, int stage, const char *name, unsigned char type)
{
        char from[PATH_MAX], to[PATH_MAX];
        struct stat st;
        ssize_t n;
        int fd;

        if (type == DT_UNKNOWN) {
                if (fstatat(root, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        return -errno;
                type = S_ISLNK(st.st_mode) ? DT_LNK : S_ISDIR(st.st_mode) ? DT_DIR : DT_REG;
        }
        if (type == DT_LNK) {
                n = readlinkat(root, name, from, sizeof from - 1);
                if (n < 0)
                        return -errno;
                from[n] = '\0';
                return symlinkat(from, stage, name) < 0 ? -errno : 0;
        }
        if (type == DT_DIR
                ? mkdirat(stage, name, 0755) < 0
                : (fd = openat(
                       stage, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644)) <
                          0 ||
                      close(fd) < 0)
                return -errno;
        /* the stage itself: the container's own proc is mounted there later */
        if (strcmp(name, STAGE_NAME) == 0)
                return 0;
        join(from, "/", name);
        join(to, STAGE "/", name);
        if (mount(from, to, NULL, MS_BIND | (type == DT_DIR ? MS_REC : 0), NULL) < 0)
                return -errno;
        return 0;
}

/* Every entry of / mirrored into stage. */
static int mirror_all(int root, int stage)
{
        char buf[8192] __attribute__((aligned(8)));
        long n;

        while ((n = syscall(SYS_getdents64, root, buf, sizeof buf)) > 0)
                for (long off = 0; off < n;) {
                        const struct dirent64_raw *d = (const void *)(buf + off);
                        int r;

                        off += d->d_reclen;
                        if (strcmp(d->d_name, ".") == 0 || strcmp(d->d_name, "..") == 0)
                                continue;
                        r = mirror(root, stage, d->d_name, d->d_type);
                        if (r < 0)
                                return r;
                }
        return n < 0 ? -errno : 0;
}

bool contain_own_root_refused(int mount_setattr_errno)
{
        return mount_setattr_errno == ENOSYS;
}

int contain_child_own_root(const struct contain_plan *p, const char **what, const char **arg)
{
        int root, stage, r;

        if (!p->own_root)
                return 0;
        /* the node's entries bound here turn read-only only with mount_setattr(AT_RECURSIVE):
         * before Linux 5.12 read_only_node() would make this tmpfs alone read-only and leave the
         * node's /root, /home, /var writable, so the start is refused (the probe: a bad fd) */
        if (mount_setattr(-1, "", AT_EMPTY_PATH, NULL, 0) < 0 && contain_own_root_refused(errno)) {
                *what = "a root of its own, which needs Linux 5.12 (mount_setattr), for a mount "
                        "point missing in /, here";
                *arg = "/";
                return -ENOSYS;
        }
        *what = "making a root of its own (for a mount point missing in /) on";
        *arg = STAGE;
        if (mount("tmpfs", STAGE, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m") < 0)
                return -errno;
        root = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        stage = open(STAGE, O_PATH | O_DIRECTORY | O_CLOEXEC);
        r = root < 0 || stage < 0 ? -errno : mirror_all(root, stage);
        if (root >= 0)
                close(root);
        if (r >= 0 && fchdir(stage) < 0)
                r = -errno;
        if (stage >= 0)
                close(stage);
        if (r < 0)
                return r;
        /* the node's root goes, stacked on the new one by pivot_root(".", "."), as runc does */
        if (syscall(SYS_pivot_root, ".", ".") < 0 || umount2(".", MNT_DETACH) < 0 || chdir("/") < 0)
                return -errno;
        return 0;
}
