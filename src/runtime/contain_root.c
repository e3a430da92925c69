/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A root of the container's own for a process container whose volume needs a mount point
 * directly in / that the node lacks (mountPath /data): a small tmpfs holding every entry of the
 * node's / (each directory bound from the node with what is mounted below it, each link copied,
 * each file bound), made the root with pivot_root, so the mount point is made in the container's
 * view and the node's / gains nothing. The root turns read-only with the rest of the node
 * (contain_child.c). Its tmpfs is first mounted on /proc, where the container's own proc is
 * mounted later anyway. A mount point missing below /run (a secret at /run/secrets/NAME where
 * the node has no /run/secrets) is made the same way in a directory of the container's own: the
 * deepest directory the node has above it becomes a tmpfs holding its entries, staged on /proc
 * and moved there. System calls only: it runs in the shim's child between fork and exec.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
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

/* The node's dir/name (dir ends in '/') in stage: a link copied, anything else made and bound. */
static int mirror(int root, int stage, const char *dir, const char *name, unsigned char type)
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
        if (strcmp(dir, "/") == 0 && strcmp(name, STAGE_NAME) == 0)
                return 0;
        join(from, dir, name);
        join(to, STAGE "/", name);
        if (mount(from, to, NULL, MS_BIND | (type == DT_DIR ? MS_REC : 0), NULL) < 0)
                return -errno;
        return 0;
}

/* Every entry of the node's dir (open as root) mirrored into stage. */
static int mirror_all(int root, int stage, const char *dir)
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
                        r = mirror(root, stage, dir, d->d_name, d->d_type);
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
        r = root < 0 || stage < 0 ? -errno : mirror_all(root, stage, "/");
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

/* The deepest directory of the node that d (below /run, or /var/run when that links to /run)
 * has, into own (PATH_MAX), when a component below it is missing: else false. */
static bool missing_below_run(const char *d, char *own)
{
        char link[16];
        struct stat st;
        size_t n;
        ssize_t k;

        k = strncmp(d, "/var/run/", 9) == 0 ? readlink("/var/run", link, sizeof link - 1) : -1;
        if (k > 0) {
                link[k] = '\0';
                if (strcmp(link, "/run") == 0 || strcmp(link, "../run") == 0)
                        d += 4;
        }
        /* room for the name of an entry mirrored below it (mirror()'s paths) */
        if (strncmp(d, "/run/", 5) != 0 || strlen(d) >= PATH_MAX - NAME_MAX - 8)
                return false;
        n = 4;
        memcpy(own, "/run", 5);
        while (d[n] == '/') {
                size_t next = n + 1 + strcspn(d + n + 1, "/");

                memcpy(own + n, d + n, next - n);
                own[next] = '\0';
                if (lstat(own, &st) < 0) {
                        own[n] = '\0';
                        return errno == ENOENT && next > n + 1;
                }
                if (!S_ISDIR(st.st_mode))
                        return false;
                n = next;
        }
        return false;
}

int contain_plan_own_dirs(struct contain_plan *p)
{
        char own[PATH_MAX];

        if (!p->namespaces || p->privileged)
                return 0;
        for (size_t i = 0; i < p->n_binds && p->n_own_dirs < CONTAIN_OWN_DIRS_MAX; i++) {
                size_t at = 0;

                /* the token's directory is made on the node once (contain_mount_point()): else
                 * every pod of a node without /run/secrets would get a copy of all /run, a
                 * snapshot of it (resolv.conf's target replaced by rename stays old) */
                if (p->binds[i].shared || contain_is_token_path(p->binds[i].destination) ||
                    !missing_below_run(p->binds[i].destination, own))
                        continue;
                /* the shallower first: a deeper one is then bound in its tmpfs */
                while (at < p->n_own_dirs && strcmp(p->own_dirs[at], own) < 0)
                        at++;
                if (at < p->n_own_dirs && strcmp(p->own_dirs[at], own) == 0)
                        continue;
                memmove(p->own_dirs + at + 1,
                        p->own_dirs + at,
                        (p->n_own_dirs - at) * sizeof *p->own_dirs);
                p->own_dirs[at] = strdup(own);
                if (!p->own_dirs[at])
                        return -ENOMEM;
                p->n_own_dirs++;
        }
        return 0;
}

void contain_own_dirs_free(struct contain_plan *p)
{
        for (size_t i = 0; i < p->n_own_dirs; i++)
                free(p->own_dirs[i]);
        p->n_own_dirs = 0;
}

/* The node's directory dir replaced, in the container's view, by a tmpfs of its own holding
 * dir's entries (as the own root holds /'s), staged on /proc and moved onto dir. */
static int own_dir(const char *dir, const char **what, const char **arg)
{
        char prefix[PATH_MAX];
        int from, stage, r;
        size_t n = strlen(dir);

        *what = "making a directory of its own (for a mount point missing below it) of";
        *arg = dir;
        if (n + 2 > sizeof prefix)
                return -ENAMETOOLONG;
        memcpy(prefix, dir, n);
        memcpy(prefix + n, "/", 2);
        if (mount("tmpfs", STAGE, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m") < 0)
                return -errno;
        from = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        stage = open(STAGE, O_PATH | O_DIRECTORY | O_CLOEXEC);
        r = from < 0 || stage < 0 ? -errno : mirror_all(from, stage, prefix);
        if (from >= 0)
                close(from);
        if (stage >= 0)
                close(stage);
        if (r >= 0 && mount(STAGE, dir, NULL, MS_MOVE, NULL) < 0)
                r = -errno;
        return r;
}

int contain_child_own_dirs(const struct contain_plan *p, const char **what, const char **arg)
{
        int r = 0;

        /* as for the own root: before Linux 5.12 the node's entries bound there would stay
         * writable */
        if (p->n_own_dirs > 0 && mount_setattr(-1, "", AT_EMPTY_PATH, NULL, 0) < 0 &&
            contain_own_root_refused(errno)) {
                *what = "a directory of its own, which needs Linux 5.12 (mount_setattr), for a "
                        "mount point missing below";
                *arg = p->own_dirs[0];
                return -ENOSYS;
        }
        for (size_t i = 0; i < p->n_own_dirs && r >= 0; i++)
                r = own_dir(p->own_dirs[i], what, arg);
        return r;
}
