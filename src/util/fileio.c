/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "xpool/fileio.h"
#include "xpool/macro.h"

/*
 * The first buffer: a regular file's size and the 4096 bytes its last read (the one that finds
 * the end) needs, else 64 KiB. A small state file (the runtime reads a few per container) then
 * costs a small allocation, not 64 KiB, which glibc's malloc serves only after merging every
 * freed small chunk of the heap (malloc_consolidate, ~2 % of the agent's CPU with short pods).
 */
static size_t first_size(int fd, size_t max)
{
        struct stat st;

        if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 &&
            (uint64_t)st.st_size <= max)
                return (size_t)st.st_size + 4096;
        return 65536;
}

int xp_read_fd_all(int fd, size_t max, char **ret, size_t *ret_size)
{
        _cleanup_free_ char *buf = NULL;
        size_t size = 0, allocated = 0;

        for (;;) {
                ssize_t n;

                if (allocated - size < 4096) {
                        char *grown;

                        allocated = allocated ? allocated * 2 : first_size(fd, max);
                        grown = realloc(buf, allocated);
                        if (!grown)
                                return -ENOMEM;
                        buf = grown;
                }
                n = read(fd, buf + size, allocated - size);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                if (n == 0)
                        break;
                size += (size_t)n;
                if (size > max)
                        return -E2BIG;
        }
        /* the read that found the end had 4096 bytes of room: text reads as a string, never
         * running on into what the heap held there before (servingcert.c compares with strlen) */
        buf[size] = '\0';
        *ret = TAKE_PTR(buf);
        *ret_size = size;
        return 0;
}

/*
 * From the bottom: path itself, and only where that finds no parent the levels above it, then
 * back down. A tree that is there already costs one mkdir, a new leaf one per new level (a
 * container's log and cgroup directories at every start), where the walk from the top makes the
 * kernel resolve each level again. 0, or -errno of the level that failed (path is restored).
 */
static int mkdir_bottom_up(int dirfd, char *path, mode_t mode)
{
        size_t len = strlen(path), cut = len;
        char *slash;

        while (len > 1 && path[len - 1] == '/')
                path[--len] = '\0';
        for (cut = len;; cut = (size_t)(slash - path)) {
                if (mkdirat(dirfd, path, cut == len ? mode : 0755) == 0 || errno == EEXIST)
                        break;
                slash = strrchr(path, '/');
                if (errno != ENOENT || !slash || slash == path)
                        return -errno;
                *slash = '\0';
        }
        while (cut < len) {
                path[cut] = '/';
                cut = strlen(path);
                if (mkdirat(dirfd, path, cut == len ? mode : 0755) < 0 && errno != EEXIST)
                        return -errno;
        }
        return 0;
}

int xp_mkdir_p_at(int dirfd, const char *path, mode_t mode, struct xp_error *err)
{
        _cleanup_free_ char *copy = NULL;

        if (!path[0])
                return xp_errorf(err, -EINVAL, "cannot create a directory without a name");
        copy = strdup(path);
        if (!copy)
                return xp_errorf(err, -ENOMEM, "out of memory");
        if (mkdir_bottom_up(dirfd, copy, mode) == 0)
                return 0;
        /* a failure: the walk from the top names the level that cannot be made */
        strcpy(copy, path);
        for (char *p = copy + 1; *p; p++) {
                if (*p != '/' || p[-1] == '/')
                        continue;
                *p = '\0';
                if (mkdirat(dirfd, copy, 0755) < 0 && errno != EEXIST)
                        return xp_errorf(err, -errno, "cannot create the directory '%s': %m", copy);
                *p = '/';
        }
        if (mkdirat(dirfd, copy, mode) < 0 && errno != EEXIST)
                return xp_errorf(err, -errno, "cannot create the directory '%s': %m", copy);
        return 0;
}

int xp_mkdir_p(const char *path, mode_t mode, struct xp_error *err)
{
        return xp_mkdir_p_at(AT_FDCWD, path, mode, err);
}

int xp_open_no_links(int dirfd, const char *path, unsigned how)
{
        struct open_how o = {.flags = O_PATH | O_CLOEXEC |
                                      (how & XP_NO_LINKS_OPEN_LINK ? O_NOFOLLOW : 0),
                             .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS |
                                        (how & XP_NO_LINKS_BENEATH ? RESOLVE_BENEATH : 0)};
        int fd = (int)syscall(SYS_openat2, dirfd, path, &o, sizeof o);

        return fd < 0 ? -errno : fd;
}
