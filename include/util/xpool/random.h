/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <stddef.h>

/*
 * Fills buf with len bytes from the kernel's random number generator (getrandom(), which waits
 * once at boot until it is seeded): for secrets, ids, serials and uids. 0 or -errno.
 */
int xp_random_bytes(void *buf, size_t len);
