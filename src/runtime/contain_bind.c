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
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "contain_internal.h"
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
        struct open_how how = {.flags = O_PATH | O_CLOEXEC,
                               .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS};
        int fd = (int)syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof how);

        return fd < 0 ? -errno : fd;
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

int contain_plan_binds(struct contain_plan *p, const json_t *list, struct xp_error *err)
{
        size_t n = json_array_size(list);
        int r;

        if (n == 0)
                return 0;
        if (!p->namespaces)
                return xp_errorf(
                    err,
                    -EPERM,
                    "the volumes of a process pod need the container's own mount namespace, which this node cannot give (isolation is degraded)");
        p->binds = calloc(n, sizeof(*p->binds));
        if (!p->binds)
                return xp_errorf(err, -ENOMEM, "spec: out of memory");
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

/* The missing directories above path (0755): the in-cluster
 * /var/run/secrets/kubernetes.io/serviceaccount of every pod's token is on no node. */
static int make_parents(const char *path)
{
        char buf[PATH_MAX];
        size_t n = strlen(path);

        if (n >= sizeof buf) {
                errno = ENAMETOOLONG;
                return -1;
        }
        memcpy(buf, path, n + 1);
        for (char *p = buf + 1; *p; p++) {
                if (*p != '/')
                        continue;
                *p = '\0';
                if (mkdir(buf, 0755) < 0 && errno != EEXIST)
                        return -1;
                *p = '/';
        }
        return 0;
}

/* The mount point, made with its missing parents when it is missing. */
static int mount_point(const struct contain_bind *b)
{
        struct stat st;
        int fd;

        if (stat(b->destination, &st) == 0)
                return 0;
        if (errno != ENOENT || make_parents(b->destination) < 0)
                return -1;
        if (b->dir)
                return mkdir(b->destination, 0755) < 0 && errno != EEXIST ? -1 : 0;
        fd = open(b->destination, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (fd < 0)
                return -1;
        close(fd);
        return 0;
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
 * Each source opened again here with no symbolic link allowed on its real path, and that open
 * file bound: a directory of an emptyDir's path swapped for a link since the plan resolved it (by
 * another container of the pod) fails the start with ELOOP rather than binding the node's files.
 * Opened in this mount namespace: a bind from a file of the parent's is refused (EINVAL).
 */
int contain_child_binds(const struct contain_plan *p, const char **what, const char **arg)
{
        for (size_t i = 0; i < p->n_binds; i++) {
                const struct contain_bind *b = &p->binds[i];
                char path[32];
                int fd, r = 0;

                *what = "binding a volume at";
                *arg = b->destination;
                if (mount_point(b) < 0)
                        return errno ? -errno : -EIO;
                fd = open_no_links(b->source);
                if (fd < 0) {
                        *what = "opening the volume source (a link appeared on its path) for";
                        return fd;
                }
                fd_path(fd, path);
                if (mount(path, b->destination, NULL, MS_BIND, NULL) < 0)
                        r = errno ? -errno : -EIO;
                close(fd);
                if (r < 0)
                        return r;
                if (b->read_only && mount(NULL,
                                          b->destination,
                                          NULL,
                                          MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV,
                                          NULL) < 0)
                        return errno ? -errno : -EIO;
        }
        return 0;
}
