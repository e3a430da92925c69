/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The kubelet's atomic writer for configMap, secret and projected volumes (podconfig.h): the
 * files go into a new "..<time>" directory, the "..data" link is swapped to it by rename(2), and
 * the names a container sees are links through "..data", so a reader of the volume sees one
 * version or the next, never half of each.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <linux/magic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "podconfig.h"
#include "xpool/fileio.h"
#include "xpool/macro.h"

#define DATA     "..data"
#define DATA_TMP "..data_tmp"

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
        (void)st;
        (void)ftw;
        return (flag == FTW_DP ? rmdir(path) : unlink(path)) < 0 && errno != ENOENT ? -1 : 0;
}

/* A new "..YYYY_MM_DD_HH_MM_SS.NNNNNNNNN" directory in dirfd, its name in name. */
static int new_version(int dirfd, char *name, size_t size, struct xp_error *err)
{
        struct timespec ts;
        struct tm tm;

        clock_gettime(CLOCK_REALTIME, &ts);
        gmtime_r(&ts.tv_sec, &tm);
        for (int i = 0; i < 100; i++) {
                size_t n = strftime(name, size, "..%Y_%m_%d_%H_%M_%S.", &tm);

                snprintf(name + n, size - n, "%09ld", (ts.tv_nsec + i) % 1000000000L);
                if (mkdirat(dirfd, name, 0755) == 0)
                        return 0;
                if (errno != EEXIST)
                        return xp_errorf(err, -errno, "%s: %m", name);
        }
        return xp_errorf(err, -EEXIST, "no free version directory name");
}

static int write_one(int dirfd, const struct xp_podconfig_file *f, struct xp_error *err)
{
        _cleanup_free_ char *parent = strdup(f->path);
        char *slash = parent ? strrchr(parent, '/') : NULL;
        size_t done = 0;
        int fd, r = 0;

        if (!parent)
                return xp_errorf(err, -ENOMEM, "out of memory");
        if (slash) {
                *slash = 0;
                r = xp_mkdir_p_at(dirfd, parent, 0755, err);
                if (r < 0)
                        return r;
        }
        fd = openat(dirfd, f->path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
                return xp_errorf(err, -errno, "%s: %m", f->path);
        while (done < f->len && r >= 0) {
                ssize_t w = write(fd, f->data + done, f->len - done);

                if (w < 0 && errno != EINTR)
                        r = xp_errorf(err, -errno, "%s: %m", f->path);
                done += w > 0 ? (size_t)w : 0;
        }
        /* the mode exactly, whatever the umask */
        if (r >= 0 && fchmod(fd, f->mode) < 0)
                r = xp_errorf(err, -errno, "%s: %m", f->path);
        close(fd);
        return r;
}

/* The first component of path ("a" of "a/b"), into buf. */
static const char *top(const char *path, char *buf, size_t size)
{
        snprintf(buf, size, "%.*s", (int)strcspn(path, "/"), path);
        return buf;
}

static bool wanted(const struct xp_podconfig_files *files, const char *name)
{
        char buf[NAME_MAX + 1];

        for (size_t i = 0; i < files->n; i++)
                if (strcmp(top(files->v[i].path, buf, sizeof(buf)), name) == 0)
                        return true;
        return false;
}

/* The user-visible links: one per top-level name, none for a name no longer there. */
static int links(int dirfd, const struct xp_podconfig_files *files, struct xp_error *err)
{
        char name[NAME_MAX + 1], target[PATH_MAX];
        struct dirent *e;
        DIR *d;

        for (size_t i = 0; i < files->n; i++) {
                top(files->v[i].path, name, sizeof(name));
                snprintf(target, sizeof(target), DATA "/%s", name);
                if (symlinkat(target, dirfd, name) < 0 && errno != EEXIST)
                        return xp_errorf(err, -errno, "%s: %m", name);
        }
        d = fdopendir(dup(dirfd));
        if (!d)
                return xp_errorf(err, -errno, "the volume's directory: %m");
        while ((e = readdir(d)))
                if (strncmp(e->d_name, "..", 2) != 0 && strcmp(e->d_name, ".") != 0 &&
                    e->d_type == DT_LNK && !wanted(files, e->d_name))
                        (void)unlinkat(dirfd, e->d_name, 0);
        closedir(d);
        return 0;
}

static _Thread_local size_t counted; /* nftw() has no userdata */

static int count_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
        (void)path;
        (void)st;
        (void)ftw;
        counted += flag == FTW_F;
        return 0;
}

/* Whether dirfd's current version holds exactly files (so that a refresh leaves it alone). */
static bool same(int dirfd, const char *dir, const struct xp_podconfig_files *files)
{
        char path[PATH_MAX], version[NAME_MAX + 1];
        ssize_t n;

        for (size_t i = 0; i < files->n; i++) {
                const struct xp_podconfig_file *f = &files->v[i];
                _cleanup_free_ char *data = NULL;
                _cleanup_close_ int fd = -1;
                struct stat st;
                size_t size = 0;

                snprintf(path, sizeof(path), DATA "/%s", f->path);
                fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC);
                if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
                    (st.st_mode & 07777) != f->mode || (size_t)st.st_size != f->len ||
                    xp_read_fd_all(fd, f->len + 1, &data, &size) < 0 || size != f->len ||
                    (f->len && memcmp(data, f->data, f->len) != 0))
                        return false;
        }
        /* nftw() would not walk through the link: its version directory */
        n = readlinkat(dirfd, DATA, version, sizeof(version) - 1);
        if (n <= 0 || strncmp(version, "..", 2) != 0 || memchr(version, '/', (size_t)n))
                return false;
        version[n] = 0;
        snprintf(path, sizeof(path), "%s/%s", dir, version);
        counted = 0;
        return nftw(path, count_one, 16, FTW_PHYS) == 0 && counted == files->n;
}

int xp_podconfig_write_atomic(const char *dir,
                              const struct xp_podconfig_files *files,
                              struct xp_error *err)
{
        char version[64], old[NAME_MAX + 1] = "", path[PATH_MAX];
        _cleanup_close_ int dirfd = -1;
        _cleanup_close_ int vfd = -1;
        ssize_t n;
        int r;

        r = xp_mkdir_p(dir, 0755, err);
        if (r < 0)
                return r;
        dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dirfd < 0)
                return xp_errorf(err, -errno, "%s: %m", dir);
        if (same(dirfd, dir, files))
                return 0;
        r = new_version(dirfd, version, sizeof(version), err);
        if (r < 0)
                return r;
        vfd = openat(dirfd, version, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (vfd < 0)
                r = xp_errorf(err, -errno, "%s/%s: %m", dir, version);
        for (size_t i = 0; r >= 0 && i < files->n; i++)
                r = write_one(vfd, &files->v[i], err);
        n = readlinkat(dirfd, DATA, old, sizeof(old) - 1);
        old[n > 0 ? n : 0] = 0;
        (void)unlinkat(dirfd, DATA_TMP, 0);
        if (r >= 0 &&
            (symlinkat(version, dirfd, DATA_TMP) < 0 || renameat(dirfd, DATA_TMP, dirfd, DATA) < 0))
                r = xp_errorf(err, -errno, "%s/" DATA ": %m", dir);
        if (r >= 0)
                r = links(dirfd, files, err);
        /* the version that lost (the old one, or the new one that was never linked) */
        snprintf(path, sizeof(path), "%s/%s", dir, r >= 0 ? old : version);
        if ((r < 0 || old[0]) && strncmp(r >= 0 ? old : version, "..", 2) == 0)
                (void)nftw(path, remove_one, 16, FTW_DEPTH | FTW_PHYS);
        return r;
}

int xp_podconfig_tmpfs(const char *dir, struct xp_error *err)
{
        _cleanup_free_ char *parent = strdup(dir);
        char *slash = parent ? strrchr(parent, '/') : NULL;
        struct stat st, pst;
        struct statfs fs;
        int r;

        if (!slash || slash == parent)
                return xp_errorf(err, -EINVAL, "%s: not a volume directory", dir);
        *slash = 0;
        r = xp_mkdir_p(dir, 0755, err);
        if (r < 0)
                return r;
        if (stat(dir, &st) < 0 || stat(parent, &pst) < 0 || statfs(dir, &fs) < 0)
                return xp_errorf(err, -errno, "%s: %m", dir);
        /* mounted already (an earlier start's), or the data directory is in memory itself (on
         * /run or /dev/shm): a mount and its unmount per pod would buy nothing */
        if (st.st_dev != pst.st_dev || fs.f_type == TMPFS_MAGIC)
                return 0;
        if (mount("tmpfs", dir, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755") < 0)
                return xp_errorf(err,
                                 -errno,
                                 "mounting a tmpfs on %s (a Secret's values never go to the "
                                 "node's disk): %m",
                                 dir);
        return 0;
}

int xp_podconfig_volumes_remove(const char *data_dir, const char *uid)
{
        char path[PATH_MAX];
        DIR *d;

        if (!uid || !*uid || strchr(uid, '/') || strncmp(uid, "..", 2) == 0 || uid[0] == '.')
                return -EINVAL;
        snprintf(path, sizeof(path), "%s/volumes/%s", data_dir, uid);
        /* the tmpfs of each secret or projected volume first: its files go with it */
        d = opendir(path);
        for (struct dirent *e; d && (e = readdir(d));) {
                char sub[PATH_MAX];

                if (e->d_name[0] == '.')
                        continue;
                snprintf(sub, sizeof(sub), "%s/%s", path, e->d_name);
                /* an unmounted tmpfs leaves an empty directory: removed here, not walked */
                if (umount2(sub, MNT_DETACH | UMOUNT_NOFOLLOW) == 0)
                        (void)rmdir(sub);
        }
        if (d)
                closedir(d);
        if (rmdir(path) == 0 || errno == ENOENT)
                return 0;
        return nftw(path, remove_one, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT) < 0 && errno != ENOENT
                   ? -errno
                   : 0;
}
