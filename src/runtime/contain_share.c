/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The node's shared paths (--share) as the node has them: writable, what is mounted below one
 * included (a scratch file system under /scratch), except the mounts the node itself has
 * read-only (a dataset bound read-only there), which stay so. The node turns read-only around
 * the container with every mount below it (contain_child.c), so each share is made writable
 * again as a whole and the node's read-only ones, found in the node's mount table before the
 * fork, read-only once more.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "contain_internal.h"
#include "xpool/fileio.h"

#define MOUNTINFO "/proc/self/mountinfo"

static bool at_or_under(const char *path, const char *parent)
{
        size_t n = strlen(parent);

        if (strcmp(parent, "/") == 0)
                return true;
        return strncmp(path, parent, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/* mountinfo's octal escapes (\040 a space) undone in place. */
static void unescape(char *s)
{
        char *out = s;

        for (; *s; s++)
                if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
                    s[3] >= '0' && s[3] <= '7') {
                        *out++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
                        s += 3;
                } else
                        *out++ = *s;
        *out = '\0';
}

static int add_read_only(struct contain_plan *p, const char *path)
{
        char **v = realloc(p->share_ro, (p->n_share_ro + 1) * sizeof(*v));

        if (!v)
                return -ENOMEM;
        p->share_ro = v;
        if (!(v[p->n_share_ro] = strdup(path)))
                return -ENOMEM;
        p->n_share_ro++;
        return 0;
}

/* A mount the node has read-only at or below share, or the mount holding share when that one
 * is read-only (the share's own top, as its clone gets it). */
static int consider(struct contain_plan *p,
                    const char *share,
                    const char *mp,
                    bool ro,
                    size_t *holder_len,
                    bool *holder_ro)
{
        size_t n = strlen(mp);

        /* the longest; of mounts stacked on one point, the last listed (the top) */
        if (at_or_under(share, mp) && (*holder_len == SIZE_MAX || n >= *holder_len)) {
                *holder_len = n;
                *holder_ro = ro;
        }
        if (ro && at_or_under(mp, share) && strcmp(mp, share) != 0)
                return add_read_only(p, mp);
        return 0;
}

/* The node's read-only mounts for one share, from its mount table. -errno. */
static int scan(struct contain_plan *p, const char *share, FILE *f)
{
        char line[8192], mp[4096], opts[256];
        size_t holder_len = SIZE_MAX;
        bool holder_ro = false, ro;
        int r;

        while (fgets(line, sizeof line, f))
                if (sscanf(line, "%*s %*s %*s %*s %4095s %255s", mp, opts) == 2) {
                        unescape(mp);
                        ro = strncmp(opts, "ro", 2) == 0 && (opts[2] == ',' || opts[2] == '\0');
                        r = consider(p, share, mp, ro, &holder_len, &holder_ro);
                        if (r < 0)
                                return r;
                }
        return holder_ro ? add_read_only(p, share) : 0;
}

int contain_plan_share_read_only(struct contain_plan *p, struct xp_error *err)
{
        for (size_t i = 0; i < p->n_binds; i++) {
                const char *share = p->binds[i].source;
                FILE *f;
                int r;

                if (!p->binds[i].shared)
                        continue;
                f = fopen(MOUNTINFO, "re");
                if (!f)
                        return xp_errorf(err, -errno, "sharing %s: %s: %m", share, MOUNTINFO);
                r = scan(p, share, f);
                fclose(f);
                if (r < 0)
                        return xp_errorf(err, r, "sharing %s: out of memory", share);
        }
        return 0;
}

/* Whether fd is the root of a mount (1) or not (0): a mount this container's namespace dropped
 * (the pods' namespace pins, contain_plan's detach) leaves its plain mount point, which has
 * nothing to make read-only. Not knowing is an error: the share would stay writable. */
static int mount_root(int fd)
{
        struct statx stx;

        if (statx(fd, "", AT_EMPTY_PATH, 0, &stx) < 0)
                return -errno;
        if (!(stx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT))
                return -EOPNOTSUPP;
        return (stx.stx_attributes & STATX_ATTR_MOUNT_ROOT) ? 1 : 0;
}

int contain_child_share_read_only(const struct contain_plan *p, const char **what, const char **arg)
{
        struct mount_attr ro = {.attr_set = MOUNT_ATTR_RDONLY};

        for (size_t i = 0; i < p->n_share_ro; i++) {
                int fd = xp_open_no_links(AT_FDCWD, p->share_ro[i], 0), r;

                *arg = p->share_ro[i];
                /* a link on the way (the pod swapped a directory of its share) fails the start */
                if (fd < 0) {
                        *what = "opening a read-only share (a link on the way?)";
                        return fd;
                }
                r = mount_root(fd);
                if (r < 0)
                        *what = "finding whether a read-only share is a mount (statx)";
                else if (r > 0 && mount_setattr(fd, "", AT_EMPTY_PATH, &ro, sizeof ro) < 0) {
                        r = -errno;
                        *what = "making a share read-only";
                }
                close(fd);
                if (r < 0)
                        return r;
        }
        return 0;
}

void contain_share_read_only_free(struct contain_plan *p)
{
        for (size_t i = 0; i < p->n_share_ro; i++)
                free(p->share_ro[i]);
        free(p->share_ro);
        p->share_ro = NULL;
        p->n_share_ro = 0;
}
