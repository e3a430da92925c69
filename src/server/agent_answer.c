/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Reading an agent's answer, as the log proxy (logproxy.c) and the streaming proxy
 * (api_stream.c) both do: wait for it in polls of at most a second, so that a proxy notices the
 * server stopping and the client going away; read its status line and headers; and turn its
 * refusal into the Status the client gets.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "internal.h"

#define WAIT_MS 1000

static int64_t now_ms(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int agent_wait_readable(struct api *api, int fd, int client_fd, int timeout_ms)
{
        int64_t deadline = now_ms() + timeout_ms;

        for (;;) {
                struct pollfd fds[2] = {
                    {.fd = fd, .events = POLLIN},
                    {.fd = client_fd, .events = POLLRDHUP},
                };
                int r = poll(fds, client_fd >= 0 ? 2 : 1, WAIT_MS);

                if (atomic_load(&api->stopping))
                        return -ECANCELED;
                if (r < 0 && errno != EINTR)
                        return -errno;
                if (r > 0 && fds[0].revents)
                        return 1;
                if (r > 0 && (fds[1].revents & (POLLRDHUP | POLLHUP | POLLERR)))
                        return -ECANCELED;
                if (timeout_ms >= 0 && now_ms() >= deadline)
                        return 0;
        }
}

int agent_read_head(struct api *api,
                    int fd,
                    int client_fd,
                    int timeout_ms,
                    char buf[static AGENT_HEAD_MAX + 1],
                    size_t *ret_head_len,
                    unsigned *ret_code,
                    struct xp_error *err)
{
        size_t len = 0;
        char *end;
        int r;

        for (;;) {
                ssize_t n;

                r = agent_wait_readable(api, fd, client_fd, timeout_ms);
                if (r < 0)
                        return xp_errorf(err, r, "the request was cancelled");
                if (r == 0)
                        return xp_errorf(
                            err, -ETIMEDOUT, "no answer within %d s", timeout_ms / 1000);
                n = recv(fd, buf + len, AGENT_HEAD_MAX - len, 0);
                if (n < 0 && (errno == EINTR || errno == EAGAIN))
                        continue;
                if (n < 0)
                        return xp_errorf(err, -errno, "cannot read the answer: %m");
                if (n == 0)
                        return xp_errorf(err,
                                         -EPROTO,
                                         "the connection closed before the answer's headers ended");
                len += (size_t)n;
                buf[len] = '\0';
                end = strstr(buf, "\r\n\r\n");
                if (end)
                        break;
                if (len == AGENT_HEAD_MAX)
                        return xp_errorf(err,
                                         -EPROTO,
                                         "the answer's headers are longer than %d bytes",
                                         AGENT_HEAD_MAX);
        }
        if (sscanf(buf, "HTTP/1.%*1[01] %3u", ret_code) != 1)
                return xp_errorf(
                    err, -EPROTO, "the answer does not start with an HTTP/1 status line");
        *ret_head_len = (size_t)(end - buf) + 4;
        return (int)len;
}

int agent_read_body(struct api *api,
                    int fd,
                    int timeout_ms,
                    char buf[static AGENT_HEAD_MAX + 1],
                    size_t len,
                    size_t head_len)
{
        const char *field;
        size_t want = AGENT_HEAD_MAX;
        unsigned long declared;
        char after_head = buf[head_len - 2];

        /* the field is looked for in the head alone, not in body bytes already read */
        buf[head_len - 2] = '\0';
        field = strcasestr(buf, "\r\nContent-Length:");

        /* the head may end one read (one TLS record) before its body comes */
        if (field && sscanf(field + strlen("\r\nContent-Length:"), " %lu", &declared) == 1 &&
            declared < AGENT_HEAD_MAX - head_len)
                want = head_len + declared;
        buf[head_len - 2] = after_head;
        while (len < want) {
                ssize_t n;

                if (agent_wait_readable(api, fd, -1, timeout_ms) <= 0)
                        break;
                n = recv(fd, buf + len, want - len, 0);
                if (n < 0 && (errno == EINTR || errno == EAGAIN))
                        continue;
                if (n <= 0)
                        break;
                len += (size_t)n;
        }
        buf[len] = '\0';
        return (int)len;
}

int agent_refusal(const struct request *req,
                  const char *node,
                  unsigned code,
                  const char *what,
                  bool forbidden_is_client,
                  char *body,
                  struct reply *ret)
{
        size_t len = strlen(body);

        while (len > 0 && strchr(" \r\n", body[len - 1]))
                body[--len] = '\0';
        if (code == 400 || (code == 403 && forbidden_is_client))
                return reply_status(ret, 400, "BadRequest", req->name, "pods", "%s", body);
        if (code == 404)
                return reply_status(ret, 404, "NotFound", req->name, "pods", "%s", body);
        return reply_status(ret,
                            503,
                            "ServiceUnavailable",
                            req->name,
                            "pods",
                            "the xpool agent of node \"%s\" answered %u%s: %s",
                            node,
                            code,
                            what,
                            body);
}
