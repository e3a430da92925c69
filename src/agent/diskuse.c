/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The disk use of a directory tree, as du counts it: st_blocks of every entry, read with
 * statx(AT_SYMLINK_NOFOLLOW) from the directory's descriptor, so a link is counted, never
 * followed, and an entry of another mount is neither counted, entered nor removed: one on another
 * device (a Memory emptyDir's tmpfs), and one of the same file system bound there (a node's
 * directory a pod's Bidirectional mount propagated back into its emptyDir), told apart by its mount
 * id (STATX_MNT_ID, Linux 5.8; the device alone before). The walk is bounded in entries and depth
 * (struct xp_disk_walk): a pod cannot make one pass of the agent's housekeeping long by making many
 * files; what the bound leaves out is reported (walk->truncated): the caller treats a pod so walked
 * as over its limit. Cost: one getdents64 per 32 KiB of names and one statx per entry. The same
 * walk empties a directory (walk->remove), with the same bounds and the same refusal to leave its
 * device.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "ephemeral.h"

/* The mount the walk stays on: its device, and its id where the kernel gives one. */
struct walk_mount {
        dev_t dev;
        uint64_t mnt_id;
        bool has_mnt_id;
};

/* What an entry is, when it lies on m: false for another mount's. */
static bool stat_on(int dfd, const char *name, const struct walk_mount *m, struct statx *stx)
{
        if (statx(dfd,
                  name,
                  AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT,
                  STATX_TYPE | STATX_BLOCKS | STATX_MNT_ID,
                  stx) < 0)
                return false;
        if (makedev(stx->stx_dev_major, stx->stx_dev_minor) != m->dev)
                return false;
        return !m->has_mnt_id || !(stx->stx_mask & STATX_MNT_ID) || stx->stx_mnt_id == m->mnt_id;
}

static void walk_dir(
    int dfd, const struct walk_mount *m, unsigned depth, struct xp_disk_walk *walk, uint64_t *bytes)
{
        DIR *d = fdopendir(dfd);
        struct dirent *de;
        struct statx st;

        if (!d) {
                close(dfd);
                return;
        }
        while ((de = readdir(d))) {
                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                        continue;
                if (walk->entries >= walk->max_entries) {
                        walk->truncated = true;
                        break;
                }
                walk->entries++;
                if (!stat_on(dirfd(d), de->d_name, m, &st))
                        continue;
                *bytes += (uint64_t)st.stx_blocks * 512;
                if (!S_ISDIR(st.stx_mode)) {
                        if (walk->remove)
                                (void)unlinkat(dirfd(d), de->d_name, 0);
                        continue;
                }
                if (depth + 1 >= XP_DISK_WALK_MAX_DEPTH) {
                        walk->truncated = true;
                        walk->too_deep = true;
                        continue;
                }
                int sub = openat(dirfd(d),
                                 de->d_name,
                                 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NOATIME);

                if (sub < 0 && errno == EPERM) /* O_NOATIME on a file of another user */
                        sub = openat(
                            dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (sub >= 0)
                        walk_dir(sub, m, depth + 1, walk, bytes);
                if (walk->remove)
                        (void)unlinkat(dirfd(d), de->d_name, AT_REMOVEDIR);
        }
        closedir(d);
}

int xp_agent_disk_usage(const char *path, struct xp_disk_walk *walk, uint64_t *bytes)
{
        int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        struct walk_mount m;
        struct statx st;

        if (fd < 0)
                return errno == ENOENT || errno == ENOTDIR ? 0 : -errno;
        if (statx(fd, "", AT_EMPTY_PATH, STATX_TYPE | STATX_BLOCKS | STATX_MNT_ID, &st) < 0) {
                int r = -errno;

                close(fd);
                return r;
        }
        m = (struct walk_mount){.dev = makedev(st.stx_dev_major, st.stx_dev_minor),
                                .mnt_id = st.stx_mnt_id,
                                .has_mnt_id = (st.stx_mask & STATX_MNT_ID) != 0};
        *bytes += (uint64_t)st.stx_blocks * 512;
        walk_dir(fd, &m, 0, walk, bytes);
        return 0;
}
