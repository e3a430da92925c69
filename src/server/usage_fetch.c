/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One signed GET to an agent, whole answer in memory (usage_internal.h): HTTP/1.0 so the agent
 * ends the answer by closing, every wait bounded by the deadline.
 */
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "agent_tls.h"
#include "usage_internal.h"
#include "xpool/logsign.h"
#include "xpool/macro.h"
#include "xpool/timeutil.h"

#define ANSWER_MAX (16 << 20)

static int wait_fd(int fd, short events, int64_t deadline)
{
        struct pollfd p = {.fd = fd, .events = events};
        int64_t left = deadline - xp_monotonic_ms();
        int r;

        if (left <= 0)
                return -ETIMEDOUT;
        r = poll(&p, 1, (int)left);
        return r < 0 ? -errno : r == 0 ? -ETIMEDOUT : 0;
}

static int dial(const char *host, unsigned port, int64_t deadline)
{
        struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICHOST}, *ai;
        char service[16];
        int fd, r, e = 0;
        socklen_t len = sizeof(e);

        snprintf(service, sizeof(service), "%u", port);
        if (getaddrinfo(host, service, &hints, &ai) != 0)
                return -EINVAL;
        fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        r = fd < 0 ? -errno : connect(fd, ai->ai_addr, ai->ai_addrlen) < 0 ? -errno : 0;
        freeaddrinfo(ai);
        if (r == -EINPROGRESS) {
                r = wait_fd(fd, POLLOUT, deadline);
                if (r == 0 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &len) == 0 && e)
                        r = -e;
        }
        if (r < 0 && fd >= 0)
                close(fd);
        return r < 0 ? r : fd;
}

static int read_all(int fd, int64_t deadline, char **ret, size_t *ret_len)
{
        _cleanup_free_ char *buf = NULL;
        size_t len = 0, cap = 0;

        for (;;) {
                ssize_t n;
                int r;

                if (cap - len < 65536) {
                        char *grown;

                        if (cap >= ANSWER_MAX)
                                return -EFBIG;
                        grown = realloc(buf, cap + 65536 + 1);
                        if (!grown)
                                return -ENOMEM;
                        buf = grown;
                        cap += 65536;
                }
                r = wait_fd(fd, POLLIN, deadline);
                if (r < 0)
                        return r;
                n = read(fd, buf + len, cap - len);
                if (n < 0 && errno != EAGAIN && errno != EINTR)
                        return -errno;
                if (n == 0)
                        break;
                if (n > 0)
                        len += (size_t)n;
        }
        buf[len] = '\0';
        *ret = TAKE_PTR(buf);
        *ret_len = len;
        return 0;
}

int usage_fetch(const struct usage_target *t,
                int timeout_ms,
                char **ret_body,
                size_t *ret_len,
                struct xp_error *err)
{
        int64_t deadline = xp_monotonic_ms() + timeout_ms;
        char signature[XP_LOGSIGN_TEXT_MAX], *head = NULL, *body;
        _cleanup_free_ char *answer = NULL;
        _cleanup_close_ int fd = -1;
        bool v6 = strchr(t->host, ':') != NULL;
        unsigned code = 0;
        size_t len = 0;
        int n, r;

        /* no token id: an unsigned GET (the autoscaler's Prometheus queries, hpa_source.c) */
        r = t->token_id[0]
                ? xp_logsign_sign(t->token_id, t->key, t->path, (int64_t)time(NULL) + 30, signature)
                : 0;
        if (r < 0)
                return xp_errorf(err, r, "cannot sign the request");
        n = asprintf(
            &head,
            "GET %s HTTP/1.0\r\nHost: %s%s%s:%u\r\n%s%s%s%sUser-Agent: xpool-server\r\n\r\n",
            t->path,
            v6 ? "[" : "",
            t->host,
            v6 ? "]" : "",
            t->port,
            t->token_id[0] ? XP_LOGSIGN_HEADER : "",
            t->token_id[0] ? ": " : "",
            t->token_id[0] ? signature : "",
            t->token_id[0] ? "\r\n" : "");
        if (n < 0)
                return -ENOMEM;
        fd = dial(t->host, t->port, deadline);
        if (fd >= 0 && t->tls) {
                fd = agent_tls_wrap(t->tls, t->node, t->host, fd, timeout_ms, err);
                if (fd < 0) {
                        free(head);
                        return fd; /* err says why */
                }
        }
        r = fd < 0                            ? fd
            : write(fd, head, (size_t)n) == n ? 0
                                              : -EIO; /* small: the socket takes it */
        free(head);
        if (r >= 0)
                r = read_all(fd, deadline, &answer, &len);
        if (r < 0)
                return xp_errorf(err, r, "%s:%u: %s", t->host, t->port, strerror(-r));
        body = strstr(answer, "\r\n\r\n");
        if (sscanf(answer, "HTTP/1.%*c %u", &code) != 1 || !body)
                return xp_errorf(err, -EPROTO, "%s:%u: not an HTTP answer", t->host, t->port);
        if (code != 200)
                return xp_errorf(err, -EPROTO, "%s:%u answered %u", t->host, t->port, code);
        body += 4;
        len -= (size_t)(body - answer);
        memmove(answer, body, len + 1);
        *ret_body = TAKE_PTR(answer);
        *ret_len = len;
        return 0;
}
