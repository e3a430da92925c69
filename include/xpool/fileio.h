/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <stddef.h>

/*
 * Reads fd to its end into a new buffer (caller frees *ret; not NUL-terminated beyond size).
 * 0; -E2BIG once more than max bytes have come (nothing returned); -ENOMEM; or the read's
 * -errno. Callers say what the file was in their own messages.
 */
int xp_read_fd_all(int fd, size_t max, char **ret, size_t *ret_size);
