/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A process container's volumes: configMap, secret, projected and downwardAPI ones (the agent's
 * directories of their files, always read-only), emptyDir ones (the pod's directories) and
 * hostPath ones, bound at their mountPath inside the container's own mount namespace, so the
 * node's file system is not changed beyond an empty mount point (and its parent directories)
 * where mountPath did not exist.
 * The source is resolved before the fork (contain_plan_binds), where a hostPath that is, holds or
 * lies below one of the node's hidden secrets is refused: the bind is not recursive, so the masks
 * over those secrets would not follow it. The child only makes the mount point, opens the real
 * path with no link allowed on it and binds that open file (contain_child_binds: system calls
 * only).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "contain_internal.h"
#include "xpool/fileio.h"
#include "xpool/macro.h"
#include "xpool/runtime.h"

json_t *contain_binds_json(const struct xp_container_mount *m, char *const *sources, size_t n)
{
        json_t *a = json_array();

        for (size_t i = 0; a && i < n; i++) {
                json_t *o = json_pack("{s:s, s:s?, s:s, s:b, s:b}",
                                      "source",
                                      sources ? sources[i] : m[i].source,
                                      "sub_path",
                                      sources ? NULL : m[i].sub_path,
                                      "destination",
                                      m[i].destination,
                                      "read_only",
                                      m[i].read_only || m[i].kind == XP_VOLUME_FILES,
                                      "host",
                                      m[i].kind == XP_VOLUME_HOST_PATH);

                if (!o || json_array_append_new(a, o) < 0) {
                        json_decref(a);
                        return NULL;
                }
        }
        return a;
}

/* The real path of source/sub_path, which must stay below source. */
static int resolve(const char *source, const char *sub, char **ret, struct xp_error *err)
{
        char joined[PATH_MAX];
        _cleanup_free_ char *top = realpath(source, NULL);
        char *real;
        size_t n;
        int r;

        if (!top) {
                r = -errno;
                return xp_errorf(err, r, "volume directory %s: %s", source, strerror(-r));
        }
        if ((size_t)snprintf(
                joined, sizeof(joined), "%s%s%s", top, sub ? "/" : "", sub ? sub : "") >=
            sizeof(joined))
                return xp_errorf(err, -ENAMETOOLONG, "volume %s: subPath too long", source);
        real = realpath(joined, NULL);
        if (!real) {
                r = -errno;
                return xp_errorf(err, r, "volume %s: subPath %s: %s", source, sub, strerror(-r));
        }
        n = strlen(top);
        if (strncmp(real, top, n) != 0 || (real[n] != '\0' && real[n] != '/')) {
                free(real);
                return xp_errorf(
                    err, -EPERM, "volume %s: subPath %s leaves the volume", source, sub);
        }
        *ret = real;
        return 0;
}

/* path opened as it is now, with no symbolic link on it (it is a real path): -ELOOP or -EXDEV
 * when a link appeared since it was resolved. */
static int open_no_links(const char *path)
{
        return xp_open_no_links(AT_FDCWD, path, 0);
}

/* b's resolved source checked as it is now, and whether it is a directory. */
static int check_source(struct contain_bind *b, struct xp_error *err)
{
        int fd = open_no_links(b->source), r;
        struct stat st;

        if (fd < 0) {
                r = fd == -ELOOP || fd == -EXDEV ? -EPERM : fd;
                return xp_errorf(err,
                                 r,
                                 "volume source %s: %s",
                                 b->source,
                                 r == -EPERM ? "a symbolic link appeared on its path after it "
                                               "was checked (the pod changed its volume)"
                                             : strerror(-r));
        }
        b->dir = fstat(fd, &st) == 0 && S_ISDIR(st.st_mode);
        close(fd);
        return 0;
}

static bool under(const char *path, const char *parent)
{
        size_t n = strlen(parent);

        return strncmp(path, parent, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/* A hostPath that would show one of the node's secrets (p->hide, resolved) is refused. */
static int host_secrets(const struct contain_plan *p, const char *source, struct xp_error *err)
{
        for (size_t i = 0; i < p->n_hide_all; i++)
                if (under(source, p->hide[i]) || under(p->hide[i], source))
                        return xp_errorf(err,
                                         -EPERM,
                                         "hostPath %s: it %s %s, one of the node's secrets that "
                                         "no container may see",
                                         source,
                                         under(source, p->hide[i]) ? "is inside" : "holds",
                                         p->hide[i]);
        return 0;
}

/* The node's shared paths (--share), first: a volume may be mounted below one. Missing ones are
 * left out; the node's secrets below one stay hidden (masked after the binds). */
static int plan_shares(struct contain_plan *p, const json_t *shares, struct xp_error *err)
{
        if (p->privileged) /* sees the node's file system as it is */
                return 0;
        for (size_t i = 0; i < json_array_size(shares); i++) {
                const char *path = json_string_value(json_array_get(shares, i));
                struct contain_bind *b = &p->binds[p->n_binds];
                int r;

                if (!path || path[0] != '/')
                        return xp_errorf(
                            err, -EINVAL, "spec: contain.share[%zu] is not an absolute path", i);
                b->source = realpath(path, NULL);
                if (!b->source && (errno == ENOENT || errno == ENOTDIR))
                        continue;
                if (!b->source || strcmp(b->source, "/") == 0) {
                        r = b->source ? -EINVAL : -errno;
                        free(b->source);
                        b->source = NULL;
                        return xp_errorf(err,
                                         r,
                                         "sharing %s with pods: %s",
                                         path,
                                         r == -EINVAL ? "it is the root directory" : strerror(-r));
                }
                r = check_source(b, err);
                if (r < 0 || !(b->destination = strdup(b->source))) {
                        free(b->source);
                        b->source = NULL;
                        return r < 0 ? r : xp_errorf(err, -ENOMEM, "spec: out of memory");
                }
                b->shared = true;
                p->n_binds++;
        }
        return 0;
}

int contain_plan_binds(struct contain_plan *p,
                       const json_t *list,
                       const json_t *shares,
                       struct xp_error *err)
{
        size_t n = json_array_size(list), n_shares = json_array_size(shares);
        int r;

        if (n == 0 && (n_shares == 0 || !p->namespaces))
                return 0;
        if (!p->namespaces)
                return xp_errorf(
                    err,
                    -EPERM,
                    "the volumes of a process pod need the container's own mount namespace, which this node cannot give (isolation is degraded)");
        p->binds = calloc(n + n_shares, sizeof(*p->binds));
        if (!p->binds)
                return xp_errorf(err, -ENOMEM, "spec: out of memory");
        r = plan_shares(p, shares, err);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++) {
                const json_t *o = json_array_get(list, i);
                const char *src = json_string_value(json_object_get(o, "source"));
                const char *dst = json_string_value(json_object_get(o, "destination"));
                struct contain_bind *b = &p->binds[p->n_binds];

                if (!src || !dst || dst[0] != '/')
                        return xp_errorf(err,
                                         -EINVAL,
                                         "spec: contain.binds[%zu] has no source or destination",
                                         i);
                /* its mount point would be made on the node's /dev/shm, which the container's
                 * own then covers (contain_child_mounts()) */
                if (!p->privileged && under(dst, "/dev/shm") && strcmp(dst, "/dev/shm") != 0)
                        return xp_errorf(err,
                                         -EINVAL,
                                         "volume at %s: a process container's /dev/shm is its "
                                         "own; mount a volume at /dev/shm itself, not below it",
                                         dst);
                r = resolve(
                    src, json_string_value(json_object_get(o, "sub_path")), &b->source, err);
                if (r >= 0 && json_is_true(json_object_get(o, "host")))
                        r = host_secrets(p, b->source, err);
                if (r >= 0)
                        r = check_source(b, err);
                if (r < 0) {
                        free(b->source);
                        b->source = NULL;
                        return r;
                }
                b->read_only = json_is_true(json_object_get(o, "read_only"));
                p->n_binds++;
                if (!(b->destination = strdup(dst)))
                        return xp_errorf(err, -ENOMEM, "spec: out of memory");
        }
        return 0;
}

void contain_binds_free(struct contain_plan *p)
{
        for (size_t i = 0; i < p->n_binds; i++) {
                free(p->binds[i].source);
                free(p->binds[i].destination);
        }
        free(p->binds);
        p->binds = NULL;
        p->n_binds = 0;
}

/* "/proc/self/fd/N" into buf, without stdio (the child after the fork). */
static void fd_path(int fd, char buf[static 32])
{
        char digits[12];
        size_t n = 0, k = 0;

        do
                digits[n++] = (char)('0' + fd % 10);
        while ((fd /= 10) > 0 && n < sizeof digits);
        memcpy(buf, "/proc/self/fd/", 14);
        k = 14;
        while (n > 0)
                buf[k++] = digits[--n];
        buf[k] = '\0';
}

/*
 * Each source opened again here with no symbolic link allowed on its real path: a directory of
 * an emptyDir's path swapped for a link since the plan resolved it (by another container of the
 * pod) fails the start with ELOOP rather than binding the node's files. Opened in this mount
 * namespace (a bind from a file of the parent's is refused, EINVAL), before the container's own
 * /tmp covers the node's, where a source may lie.
 */
int contain_child_bind_sources(const struct contain_plan *p, const char **what, const char **arg)
{
        for (size_t i = 0; i < p->n_binds; i++)
                p->binds[i].src_fd = p->binds[i].tree_fd = -1;
        for (size_t i = 0; i < p->n_binds; i++) {
                struct contain_bind *b = &p->binds[i];

                struct stat st;

                b->src_fd = open_no_links(b->source);
                if (b->src_fd < 0 || fstat(b->src_fd, &st) < 0) {
                        *what = "opening the volume source (a link appeared on its path) for";
                        *arg = b->destination;
                        return b->src_fd < 0 ? b->src_fd : -errno;
                }
                b->src_dev = st.st_dev;
                b->src_ino = st.st_ino;
        }
        return 0;
}

/*
 * b's source bound on the mount point dst: a detached copy, made read-only before it is
 * attached, moved onto dst's file (open_tree, mount_setattr, move_mount), so that no path is
 * looked up again. Before Linux 5.2 (5.12 for mount_setattr) mount(2) on the fds' paths, and
 * the read-only remount on the destination's path.
 */
static int attach(struct contain_bind *b, int dst)
{
        struct mount_attr ro = {.attr_set =
                                    MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV};
        int tree = open_tree(b->src_fd,
                             "",
                             OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH |
                                 (b->shared ? AT_RECURSIVE : 0));
        bool ro_left = b->read_only;
        char from[32], to[32];

        if (tree >= 0) {
                if (ro_left && mount_setattr(tree, "", AT_EMPTY_PATH, &ro, sizeof ro) == 0)
                        ro_left = false;
                else if (ro_left && errno != ENOSYS)
                        return -errno;
                if (move_mount(
                        tree, "", dst, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
                        return -errno;
                b->tree_fd = tree;
        } else {
                if (errno != ENOSYS)
                        return -errno;
                fd_path(b->src_fd, from);
                fd_path(dst, to);
                if (mount(from, to, NULL, MS_BIND | (b->shared ? MS_REC : 0), NULL) < 0)
                        return -errno;
        }
        if (ro_left && mount(NULL,
                             b->destination,
                             NULL,
                             MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV,
                             NULL) < 0)
                return -errno;
        return 0;
}

/* Each volume bound on its mount point, made where missing (contain_mount_point()). */
int contain_child_binds(
    const struct contain_plan *p, const int *tmp, size_t n_tmp, const char **what, const char **arg)
{
        for (size_t i = 0; i < p->n_binds; i++) {
                struct contain_bind *b = &p->binds[i];
                int dst, r;

                *arg = b->destination;
                dst = contain_mount_point(p, b->destination, b->dir, tmp, n_tmp);
                if (dst < 0) {
                        *what = dst == -ELOOP ? "making the mount point (a symbolic link someone "
                                                "but root made is on its path) of the volume at"
                                : dst == -EROFS
                                    ? "making the mount point (missing on the node, "
                                      "where a process pod makes one only below its "
                                      "own /tmp, a shared path, in / or below /run) of the "
                                      "volume at"
                                    : "making the mount point of the volume at";
                        return dst;
                }
                r = attach(b, dst);
                close(dst);
                close(b->src_fd);
                b->src_fd = -1;
                if (r < 0) {
                        *what = "binding a volume at";
                        return r;
                }
        }
        return 0;
}

/* Each bind's mount set as asked: writable (a share with what is mounted below it), then the
 * node's read-only mounts below the shares and the read-only binds (below a share, the first
 * step made them writable) read-only again. */
static int binds_set(const struct contain_plan *p, const char **what, const char **arg)
{
        struct mount_attr rw = {.attr_clr = MOUNT_ATTR_RDONLY},
                          ro = {.attr_set = MOUNT_ATTR_RDONLY};
        int r;

        for (size_t i = 0; i < p->n_binds; i++) {
                const struct contain_bind *b = &p->binds[i];

                if (b->tree_fd >= 0 && !b->read_only &&
                    mount_setattr(b->tree_fd,
                                  "",
                                  AT_EMPTY_PATH | (b->shared ? AT_RECURSIVE : 0),
                                  &rw,
                                  sizeof rw) < 0) {
                        *what = "making the volumes writable again";
                        *arg = "/";
                        return -errno;
                }
        }
        r = contain_child_share_read_only(p, what, arg);
        for (size_t i = 0; i < p->n_binds && r >= 0; i++) {
                const struct contain_bind *b = &p->binds[i];

                if (b->tree_fd >= 0 && b->read_only &&
                    mount_setattr(b->tree_fd, "", AT_EMPTY_PATH, &ro, sizeof ro) < 0) {
                        r = -errno;
                        *what = "making a read-only volume read-only again";
                        *arg = b->destination;
                }
        }
        return r;
}

int contain_child_binds_writable(const struct contain_plan *p,
                                 bool node_read_only,
                                 const char **what,
                                 const char **arg)
{
        int r = node_read_only ? binds_set(p, what, arg) : 0;

        for (size_t i = 0; i < p->n_binds; i++) {
                struct contain_bind *b = &p->binds[i];

                if (b->tree_fd >= 0)
                        close(b->tree_fd);
                b->tree_fd = -1;
        }
        return r;
}
