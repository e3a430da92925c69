/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdint.h>
#include <sys/random.h>

#include "xpool/random.h"

int xp_random_bytes(void *buf, size_t len)
{
        uint8_t *p = buf;

        while (len > 0) {
                ssize_t n = getrandom(p, len, 0);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                p += n;
                len -= (size_t)n;
        }
        return 0;
}
