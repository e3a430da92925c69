/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The disk use of a directory tree, as du counts it: st_blocks of every entry, read with
 * fstatat(AT_SYMLINK_NOFOLLOW) from the directory's descriptor, so a link is counted, never
 * followed, and a directory on another device (a mount point: a Memory emptyDir's tmpfs, a bind)
 * is not entered. The walk is bounded in entries and depth (struct xp_disk_walk): a pod cannot
 * make one pass of the agent's housekeeping long by making many files; what the bound leaves out
 * is reported (walk->truncated): the caller treats a pod so walked as over its limit.
 * Cost: one getdents64 per 32 KiB of names and one fstatat per entry. The same walk empties a
 * directory (walk->remove), with the same bounds and the same refusal to leave its device.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ephemeral.h"

static void walk_dir(int dfd, dev_t dev, unsigned depth, struct xp_disk_walk *walk, uint64_t *bytes)
{
        DIR *d = fdopendir(dfd);
        struct dirent *de;
        struct stat st;

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
                if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || st.st_dev != dev)
                        continue;
                *bytes += (uint64_t)st.st_blocks * 512;
                if (!S_ISDIR(st.st_mode)) {
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
                        walk_dir(sub, dev, depth + 1, walk, bytes);
                if (walk->remove)
                        (void)unlinkat(dirfd(d), de->d_name, AT_REMOVEDIR);
        }
        closedir(d);
}

int xp_agent_disk_usage(const char *path, struct xp_disk_walk *walk, uint64_t *bytes)
{
        int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        struct stat st;

        if (fd < 0)
                return errno == ENOENT || errno == ENOTDIR ? 0 : -errno;
        if (fstat(fd, &st) < 0) {
                int r = -errno;

                close(fd);
                return r;
        }
        *bytes += (uint64_t)st.st_blocks * 512;
        walk_dir(fd, st.st_dev, 0, walk, bytes);
        return 0;
}
