/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A volume's mount point on the node, opened (and made where missing) one component at a time
 * from the root with openat2(RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH) and mkdirat() on the opened
 * parent, so that nobody can redirect where it is made: a symbolic link on the way is followed
 * only when root made it in a directory only root may write (/var/run -> /run); one a pod or a
 * node user planted (in /tmp, in a shared directory) fails the start with ELOOP. The volume is
 * then mounted on the returned file, not on the path again. System calls only: it runs in the
 * shim's child between fork and exec.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "contain_internal.h"
#include "xpool/fileio.h"

/* Trusted links followed on one path at most (the kernel's own limit is 40). */
#define TRUSTED_LINKS_MAX 8

struct walk {
        int root;  /* "/", where absolute link targets start */
        int links; /* trusted links followed so far */
};

static int open_beneath(int at, const char *name)
{
        return xp_open_no_links(at, name, XP_NO_LINKS_BENEATH | XP_NO_LINKS_OPEN_LINK);
}

/* A link only root could have put there: root's, in a directory no one else may write. */
static bool trusted_link(int parent, int link)
{
        struct stat dir, st;

        return fstat(parent, &dir) == 0 && fstat(link, &st) == 0 && st.st_uid == 0 &&
               dir.st_uid == 0 && !(dir.st_mode & (S_IWGRP | S_IWOTH));
}

/* name under at, made when missing (a directory, or for the last component of a file mount an
 * empty file); -errno. */
static int open_or_make(int at, const char *name, bool make_dir)
{
        for (int tries = 0; tries < 3; tries++) {
                int fd = open_beneath(at, name);

                if (fd != -ENOENT)
                        return fd;
                if (make_dir) {
                        if (mkdirat(at, name, 0755) < 0 && errno != EEXIST)
                                return -errno;
                        continue;
                }
                fd = openat(at, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
                if (fd < 0 && errno != EEXIST)
                        return -errno;
                if (fd >= 0)
                        close(fd);
        }
        return -EAGAIN;
}

static int walk_path(struct walk *w, int at, const char *path, bool last_dir);

/* The link opened as fd (closed here) in parent, followed when trusted: its target's fd. */
static int follow(struct walk *w, int parent, int fd, bool dir)
{
        char target[PATH_MAX];
        ssize_t n;

        if (!trusted_link(parent, fd) || ++w->links > TRUSTED_LINKS_MAX) {
                close(fd);
                return -ELOOP;
        }
        n = readlinkat(fd, "", target, sizeof target - 1);
        close(fd);
        if (n <= 0)
                return n < 0 ? -errno : -ENOENT;
        target[n] = '\0';
        return walk_path(w, target[0] == '/' ? w->root : parent, target, dir);
}

/* One component under at (borrowed): its fd, a link followed when trusted. */
static int step(struct walk *w, int at, const char *name, bool last, bool last_dir)
{
        struct stat st;
        int fd;

        if (strcmp(name, "..") == 0) {
                fd = openat(at, "..", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                return fd < 0 ? -errno : fd;
        }
        fd = open_or_make(at, name, !last || last_dir);
        if (fd < 0)
                return fd;
        if (fstat(fd, &st) < 0) {
                close(fd);
                return -errno;
        }
        if (S_ISLNK(st.st_mode))
                return follow(w, at, fd, !last || last_dir);
        if (!last && !S_ISDIR(st.st_mode)) {
                close(fd);
                return -ENOTDIR;
        }
        return fd;
}

/* path's components from at (borrowed); the last one a directory when last_dir. */
static int walk_path(struct walk *w, int at, const char *path, bool last_dir)
{
        char name[NAME_MAX + 1];
        int cur = dup(at);

        if (cur < 0)
                return -errno;
        while (*path) {
                size_t n = strcspn(path, "/");
                const char *next = path + n + strspn(path + n, "/");
                int fd;

                if (n == 0 || (n == 1 && path[0] == '.')) {
                        path = next;
                        continue;
                }
                if (n > NAME_MAX) {
                        close(cur);
                        return -ENAMETOOLONG;
                }
                memcpy(name, path, n);
                name[n] = '\0';
                fd = step(w, cur, name, *next == '\0', last_dir);
                close(cur);
                if (fd < 0)
                        return fd;
                cur = fd;
                path = next;
        }
        return cur;
}

int contain_mount_point(const char *path, bool dir)
{
        struct walk w = {.root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC)};
        int fd;

        if (w.root < 0)
                return -errno;
        fd = walk_path(&w, w.root, path, dir);
        close(w.root);
        return fd;
}
