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

/* Ancestors looked at to tell whether a directory lies below another (PATH_MAX / 2). */
#define ANCESTORS_MAX 2048

/* The service account token's directory below /run (and /var/run), as Kubernetes mounts it. */
#define TOKEN_DIR "/secrets/kubernetes.io/serviceaccount"

struct walk {
        int root;  /* "/", where absolute link targets start */
        int links; /* trusted links followed so far */
        const struct contain_plan *p;
        const int *tmp; /* the container's own /tmp and /var/tmp (-1: none) */
        size_t n_tmp;
        bool anywhere; /* the agent's token path: its missing directories may be made */
};

static bool same(const struct stat *a, dev_t dev, ino_t ino)
{
        return a->st_dev == dev && a->st_ino == ino;
}

/* Whether st is one of the places: the container's own /tmp and /var/tmp, the shares, and with
 * volumes every volume's source (all that a pod may write). */
static bool is_place(const struct walk *w, const struct stat *st, bool volumes)
{
        struct stat t;

        for (size_t i = 0; i < w->n_tmp; i++)
                if (w->tmp[i] >= 0 && fstat(w->tmp[i], &t) == 0 && same(st, t.st_dev, t.st_ino))
                        return true;
        for (size_t i = 0; i < w->p->n_binds; i++)
                if ((volumes || w->p->binds[i].shared) &&
                    same(st, w->p->binds[i].src_dev, w->p->binds[i].src_ino))
                        return true;
        return false;
}

/* Whether dir is one of the places or lies below one, by its ancestors ("..", across mounts). */
static bool below_place(const struct walk *w, int dir, bool volumes)
{
        struct stat st, up;
        int cur = dup(dir), parent;

        for (int i = 0; cur >= 0 && i < ANCESTORS_MAX && fstat(cur, &st) == 0; i++) {
                if (is_place(w, &st, volumes))
                        break;
                parent = openat(cur, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
                close(cur);
                cur = parent;
                /* the root is its own parent */
                if (cur < 0 || (fstat(cur, &up) == 0 && same(&up, st.st_dev, st.st_ino))) {
                        if (cur >= 0)
                                close(cur);
                        return false;
                }
        }
        if (cur >= 0)
                close(cur);
        return cur >= 0;
}

/* Whether a missing entry may be made in at: below the container's own /tmp or a share, a
 * directory in the container's own root (never the node's: contain_root.c; a privileged one's is
 * the node's, which it writes anyway), or on the agent's token path. Elsewhere the node would
 * gain a file or directory no one asked for (an empty /etc/nologin refuses logins, an empty unit
 * masks one, a directory /forcefsck forces a check at the next boot). */
static bool may_make(const struct walk *w, int at, bool dir)
{
        struct stat st, root, own;

        if (w->anywhere || below_place(w, at, false))
                return true;
        /* in a directory of the container's own below /run (its tmpfs, not a node's entry) */
        for (size_t i = 0; i < w->p->n_own_dirs; i++)
                if (fstat(at, &st) == 0 && stat(w->p->own_dirs[i], &own) == 0 &&
                    st.st_dev == own.st_dev)
                        return true;
        return dir && (w->p->own_root || w->p->privileged) && fstat(at, &st) == 0 &&
               fstat(w->root, &root) == 0 && same(&st, root.st_dev, root.st_ino);
}

static int open_beneath(int at, const char *name)
{
        return xp_open_no_links(at, name, XP_NO_LINKS_BENEATH | XP_NO_LINKS_OPEN_LINK);
}

/* A link only the node's root could have put there: root's, in a directory no one else may
 * write, and none a pod writes (a share, a volume, its own /tmp), where a root pod is root. */
static bool trusted_link(const struct walk *w, int parent, int link)
{
        struct stat dir, st;

        return fstat(parent, &dir) == 0 && fstat(link, &st) == 0 && st.st_uid == 0 &&
               dir.st_uid == 0 && !(dir.st_mode & (S_IWGRP | S_IWOTH)) &&
               !below_place(w, parent, true);
}

/* name under at, made when missing (a directory, or for the last component of a file mount an
 * empty file); -errno. */
static int open_or_make(const struct walk *w, int at, const char *name, bool make_dir)
{
        for (int tries = 0; tries < 3; tries++) {
                int fd = open_beneath(at, name);

                if (fd != -ENOENT)
                        return fd;
                if (!may_make(w, at, make_dir))
                        return -EROFS;
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

        if (!trusted_link(w, parent, fd) || ++w->links > TRUSTED_LINKS_MAX) {
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
        fd = open_or_make(w, at, name, !last || last_dir);
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

/* The service account token's directory, where Kubernetes' clients look for it: the one path
 * whose missing directories may be made outside the places, and only it, not what lies below
 * (a pod's own mountPath /run/secrets/x/y would otherwise make directories, or empty files, on
 * the node). */
bool contain_is_token_path(const char *path)
{
        return strcmp(path, "/var/run" TOKEN_DIR) == 0 || strcmp(path, "/run" TOKEN_DIR) == 0;
}

int contain_mount_point(
    const struct contain_plan *p, const char *path, bool dir, const int *tmp, size_t n_tmp)
{
        struct walk w = {.root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC),
                         .p = p,
                         .tmp = tmp,
                         .n_tmp = n_tmp,
                         .anywhere = dir && contain_is_token_path(path)};
        int fd;

        if (w.root < 0)
                return -errno;
        fd = walk_path(&w, w.root, path, dir);
        close(w.root);
        return fd;
}
