/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Replacing a file so that readers (and a crash) see either the old contents or the new, never
 * a mix: a temporary file in the same directory, written, fsync()ed, renamed over the target,
 * then the directory fsync()ed.
 */

#include <stddef.h>
#include <sys/types.h>

#include "xpool/error.h"

/*
 * Writes data[0..size) to path with the given mode (exactly: the umask does not apply).
 * Refuses with -ELOOP when path is a symbolic link and -EEXIST when it is anything but a regular
 * file, so a planted link cannot redirect the write. -errno with err naming the file on failure,
 * when the target is left as it was and no temporary file remains.
 */
int xp_write_file_atomic(
    const char *path, const void *data, size_t size, mode_t mode, struct xp_error *err);
