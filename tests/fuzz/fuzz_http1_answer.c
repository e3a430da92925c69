/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzzes the API client's reading of an answer (src/client/http1.c): the bytes are what the
 * server sends on a kept-alive connection (a socket pair, ended after them), read as the answer to
 * a GET. The answer is taken (a status code first, then body pieces that are never empty) or
 * refused with a failure recorded; nothing is read past the bytes given, and a connection whose
 * answer was refused is closed.
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "client/http1.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok)
{
        if (!ok)
                __builtin_trap();
}

struct seen {
        long code;
        size_t body;
        volatile char last;
};

static int on_data(long code, const char *data, size_t len, void *userdata)
{
        struct seen *s = userdata;

        check(code >= 100 && code <= 999);
        if (!data) {
                s->code = code;
                return 0;
        }
        check(s->code == code && len > 0);
        s->body += len;
        s->last = data[0] ^ data[len - 1]; /* every piece readable whole, for ASan */
        return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        static atomic_bool cancelled;
        struct http1_conn c;
        struct seen seen = {0};
        int sv[2], r;

        /* the whole answer sits in the socket's buffer before it is read */
        if (size > 64 * 1024 || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
                return 0;
        /* a refused retry, on a port nothing listens on, is all that may follow */
        check(http1_init(&c, "http://127.0.0.1:1", NULL, NULL, 0, false, &cancelled) == 0);
        c.fd = sv[0];
        if (size > 0)
                check(write(sv[1], data, size) == (ssize_t)size);
        shutdown(sv[1], SHUT_WR);
        r = http1_request(&c,
                          "GET",
                          "/api/v1/pods",
                          "Accept: application/json\r\n",
                          NULL,
                          0,
                          2000,
                          on_data,
                          &seen);
        check(r == 0 || r == -EIO);
        check(r == 0 || c.failure != HTTP1_OK);
        check(r != 0 || seen.code >= 200);
        if (r < 0)
                check(c.fd < 0);
        close(sv[1]);
        http1_done(&c);
        return 0;
}
