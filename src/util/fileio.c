/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "xpool/fileio.h"
#include "xpool/macro.h"

int xp_read_fd_all(int fd, size_t max, char **ret, size_t *ret_size)
{
        _cleanup_free_ char *buf = NULL;
        size_t size = 0, allocated = 0;

        for (;;) {
                ssize_t n;

                if (allocated - size < 4096) {
                        char *grown;

                        allocated = allocated ? allocated * 2 : 65536;
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
        *ret = TAKE_PTR(buf);
        *ret_size = size;
        return 0;
}
