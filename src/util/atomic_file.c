/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "xpool/atomic_file.h"
#include "xpool/macro.h"

static int write_all(int fd, const void *data, size_t size)
{
        const char *p = data;

        while (size > 0) {
                ssize_t n = write(fd, p, size);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                p += n;
                size -= (size_t)n;
        }
        return 0;
}

static int fsync_parent(const char *path)
{
        _cleanup_free_ char *copy = strdup(path);
        _cleanup_close_ int fd = -1;

        if (!copy)
                return -ENOMEM;
        fd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        if (fsync(fd) < 0)
                return -errno;
        return 0;
}

int xp_write_file_atomic(
    const char *path, const void *data, size_t size, mode_t mode, struct xp_error *err)
{
        _cleanup_free_ char *tmp = NULL;
        _cleanup_close_ int fd = -1;
        struct stat st;
        int r;

        if (lstat(path, &st) == 0) {
                if (S_ISLNK(st.st_mode))
                        return xp_errorf(err,
                                         -ELOOP,
                                         "'%s' is a symbolic link: refusing to write through it",
                                         path);
                if (!S_ISREG(st.st_mode))
                        return xp_errorf(
                            err, -EEXIST, "'%s' exists and is not a regular file", path);
        } else if (errno != ENOENT) {
                return xp_errorf(err, -errno, "cannot stat '%s': %m", path);
        }

        if (asprintf(&tmp, "%s.tmp.XXXXXX", path) < 0)
                return xp_errorf(err, -ENOMEM, "out of memory writing '%s'", path);
        fd = mkostemp(tmp, O_CLOEXEC);
        if (fd < 0)
                return xp_errorf(
                    err, -errno, "cannot create a temporary file beside '%s': %m", path);
        if (fchmod(fd, mode) < 0) {
                r = -errno;
                goto fail;
        }
        r = write_all(fd, data, size);
        if (r < 0)
                goto fail;
        if (fsync(fd) < 0) {
                r = -errno;
                goto fail;
        }
        if (rename(tmp, path) < 0) {
                r = -errno;
                goto fail;
        }
        /* The rename is done: a failing directory fsync only weakens durability, the new
         * contents are in place, so report it but do not pretend nothing changed. */
        r = fsync_parent(path);
        if (r < 0)
                return xp_errorf(
                    err, r, "cannot fsync the directory of '%s': %s", path, strerror(-r));
        return 0;
fail:
        unlink(tmp);
        return xp_errorf(err, r, "cannot write '%s': %s", path, strerror(-r));
}
