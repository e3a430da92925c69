/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <stddef.h>

/*
 * Reads fd to its end into a new buffer (caller frees *ret), with a NUL after its size bytes.
 * 0; -E2BIG once more than max bytes have come (nothing returned); -ENOMEM; or the read's
 * -errno. Callers say what the file was in their own messages.
 */
int xp_read_fd_all(int fd, size_t max, char **ret, size_t *ret_size);

#include <sys/types.h>

#include "xpool/error.h"

/*
 * mkdir -p: makes path and the parents it lacks (0755), path itself with mode; what exists is
 * kept as it is. A relative path is taken from the directory dirfd (AT_FDCWD: the working
 * directory). -errno with err naming the directory that could not be made.
 */
int xp_mkdir_p_at(int dirfd, const char *path, mode_t mode, struct xp_error *err);
/* xp_mkdir_p_at(AT_FDCWD, ...). */
int xp_mkdir_p(const char *path, mode_t mode, struct xp_error *err);

/* What xp_open_no_links() opens besides a path without links on it. */
enum {
        XP_NO_LINKS_BENEATH = 1 << 0, /* nothing outside dirfd (RESOLVE_BENEATH): no "..", no "/" */
        XP_NO_LINKS_OPEN_LINK = 1 << 1, /* a last component that is a link opened itself */
};

/*
 * path (from dirfd, or AT_FDCWD) opened O_PATH as it is now, with no symbolic or magic link
 * followed on it (openat2 RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS), how a set of XP_NO_LINKS_*.
 * The fd, or -errno: -ELOOP (-EXDEV beneath) when a link is on the way. One system call: safe
 * between fork and exec.
 */
int xp_open_no_links(int dirfd, const char *path, unsigned how);
