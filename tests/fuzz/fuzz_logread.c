/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzzes the CRI log reader (xp_log_read): the input after its first byte is written as the live
 * log of attempt 0 and read whole, and again with a tail of (first byte % 8) lines. The tail,
 * found by reading backwards, must be a suffix of the whole output read forwards, and every
 * read must succeed.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "xpool/logread.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct out {
        char *data;
        size_t len;
};

static void check(bool ok)
{
        if (!ok)
                __builtin_trap();
}

static int collect(const char *data, size_t len, void *userdata)
{
        struct out *o = userdata;
        char *p = realloc(o->data, o->len + len + 1);

        check(p != NULL);
        o->data = p;
        memcpy(o->data + o->len, data, len);
        o->len += len;
        return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        static char dir[64];
        struct xp_log_read_options all = {.tail_lines = -1}, tail = {0};
        struct xp_error err = {0};
        struct out whole = {0}, part = {0};
        char path[128];
        int fd;

        if (size < 1)
                return 0;
        if (!dir[0]) {
                snprintf(dir, sizeof dir, "/tmp/xpool-fuzz-logread-XXXXXX");
                check(mkdtemp(dir) != NULL);
        }
        snprintf(path, sizeof path, "%s/0.log", dir);
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        check(fd >= 0);
        check(write(fd, data + 1, size - 1) == (ssize_t)(size - 1));
        close(fd);
        tail.tail_lines = data[0] % 8;
        check(xp_log_read(dir, 0, &all, collect, &whole, &err) == 0);
        check(xp_log_read(dir, 0, &tail, collect, &part, &err) == 0);
        check(part.len <= whole.len);
        check(part.len == 0 || memcmp(whole.data + whole.len - part.len, part.data, part.len) == 0);
        free(whole.data);
        free(part.data);
        return 0;
}
