/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pods/log: the request proxied to the agent of the pod's node (docs/agent.md, "Logs"). A small
 * blocking HTTP/1.0 GET over a socket: HTTP/1.0 so the agent ends its answer by closing the
 * connection, and the body passes through as it comes, with no chunked framing to undo. Every
 * wait is a poll of at most a second, so a stream notices the server stopping, and it watches
 * the client's socket too, so a follow ends when kubectl goes away even while no lines come.
 */
#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "agent_tls.h"
#include "internal.h"
#include "xpool/logsign.h"
#include "xpool/macro.h"

#define CONNECT_TIMEOUT_MS 5000
#define HEADER_TIMEOUT_MS  30000
#define ERROR_BODY_MAX     4096
#define SIGNATURE_TTL      30 /* seconds the signature is valid */

struct proxy {
        struct api *api;
        int fd;        /* to the agent */
        int client_fd; /* the client's socket, watched for hang-ups; -1 if unknown */
        char *pending; /* body bytes read with the headers */
        size_t pending_len, pending_off;
};

static void proxy_free(void *state)
{
        struct proxy *p = state;

        if (!p)
                return;
        if (p->fd >= 0)
                close(p->fd);
        free(p->pending);
        free(p);
}

/* Waits until the agent's socket is readable (agent_wait_readable()). */
static int wait_readable(struct proxy *p, int timeout_ms)
{
        return agent_wait_readable(p->api, p->fd, p->client_fd, timeout_ms);
}

static ssize_t proxy_read(void *state, char *buf, size_t max)
{
        struct proxy *p = state;
        ssize_t n;
        int r;

        if (p->pending_off < p->pending_len) {
                size_t k = p->pending_len - p->pending_off;

                if (k > max)
                        k = max;
                memcpy(buf, p->pending + p->pending_off, k);
                p->pending_off += k;
                return (ssize_t)k;
        }
        for (;;) {
                r = wait_readable(p, -1);
                if (r < 0)
                        return r;
                n = recv(p->fd, buf, max, 0);
                if (n >= 0)
                        return n;
                if (errno != EINTR && errno != EAGAIN)
                        return -errno;
        }
}

/* Connects to host:port within CONNECT_TIMEOUT_MS: the socket, or -errno with err. */
static int tcp_connect(const char *host, unsigned port, struct xp_error *err)
{
        struct addrinfo hints = {.ai_socktype = SOCK_STREAM,
                                 .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV};
        struct addrinfo *ai = NULL;
        _cleanup_close_ int fd = -1;
        struct pollfd pfd;
        char service[8];
        socklen_t len;
        int r, soerr = 0;

        snprintf(service, sizeof service, "%u", port);
        r = getaddrinfo(host, service, &hints, &ai);
        if (r != 0)
                return xp_errorf(err, -EINVAL, "'%s' is not an IP address", host);
        fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0) {
                r = -errno;
                freeaddrinfo(ai);
                return xp_errorf(err, r, "cannot create a socket: %s", strerror(-r));
        }
        r = connect(fd, ai->ai_addr, ai->ai_addrlen);
        freeaddrinfo(ai);
        if (r < 0 && errno != EINPROGRESS)
                return xp_errorf(err, -errno, "cannot connect: %m");
        pfd = (struct pollfd){.fd = fd, .events = POLLOUT};
        r = poll(&pfd, 1, CONNECT_TIMEOUT_MS);
        if (r == 0)
                return xp_errorf(
                    err, -ETIMEDOUT, "no answer within %d s", CONNECT_TIMEOUT_MS / 1000);
        len = sizeof soerr;
        if (r < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) < 0)
                return xp_errorf(err, -errno, "cannot connect: %m");
        if (soerr != 0)
                return xp_errorf(err, -soerr, "cannot connect: %s", strerror(soerr));
        return TAKE_FD(fd);
}

int agent_connect(
    const struct api *api, const char *node, const char *host, unsigned port, struct xp_error *err)
{
        int fd = tcp_connect(host, port, err);

        if (fd < 0 || !api->agent_tls)
                return fd;
        return agent_tls_wrap(api->agent_tls, node, host, fd, CONNECT_TIMEOUT_MS, err);
}

int agent_send_all(int fd, const char *data, size_t len)
{
        while (len > 0) {
                ssize_t n = send(fd, data, len, MSG_NOSIGNAL);

                if (n < 0 && errno == EAGAIN) {
                        struct pollfd p = {.fd = fd, .events = POLLOUT};

                        if (poll(&p, 1, CONNECT_TIMEOUT_MS) <= 0)
                                return -ETIMEDOUT;
                        continue;
                }
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                data += n;
                len -= (size_t)n;
        }
        return 0;
}

/* Reads the status line and headers: the status code, with what came after them in pending. */
static int read_head(struct proxy *p, bool follow, unsigned *ret_code, struct xp_error *err)
{
        char buf[AGENT_HEAD_MAX + 1];
        size_t head_len = 0;
        int len = agent_read_head(p->api,
                                  p->fd,
                                  p->client_fd,
                                  follow ? -1 : HEADER_TIMEOUT_MS,
                                  buf,
                                  &head_len,
                                  ret_code,
                                  err);

        if (len < 0)
                return len;
        p->pending_len = (size_t)len - head_len;
        if (p->pending_len > 0) {
                p->pending = malloc(p->pending_len);
                if (!p->pending)
                        return -ENOMEM;
                memcpy(p->pending, buf + head_len, p->pending_len);
        }
        buf[head_len - 2] = '\0'; /* the headers, each line ending in CRLF */
        if (strcasestr(buf, "\r\nTransfer-Encoding:"))
                return xp_errorf(
                    err, -EPROTO, "the answer uses a transfer encoding the server does not proxy");
        return 0;
}

/* The rest of an error answer's body (a short plain-text message), trimmed. */
static void read_error_body(struct proxy *p, char buf[static ERROR_BODY_MAX + 1])
{
        size_t len = p->pending_len < ERROR_BODY_MAX ? p->pending_len : ERROR_BODY_MAX;

        memcpy(buf, p->pending ? p->pending : "", len);
        while (len < ERROR_BODY_MAX && wait_readable(p, CONNECT_TIMEOUT_MS) > 0) {
                ssize_t n = recv(p->fd, buf + len, ERROR_BODY_MAX - len, 0);

                if (n <= 0)
                        break;
                len += (size_t)n;
        }
        buf[len] = '\0';
}

int log_proxy(const struct request *req,
              const char *node,
              const char *host,
              unsigned port,
              const char *path_query,
              const char *token_id,
              const uint8_t key[static 32],
              bool follow,
              struct reply *ret)
{
        char signature[XP_LOGSIGN_TEXT_MAX], body[ERROR_BODY_MAX + 1];
        struct xp_error err = {0};
        _cleanup_free_ char *head = NULL;
        struct proxy *p;
        unsigned code = 0;
        bool v6 = strchr(host, ':') != NULL;
        int r, n;

        r = xp_logsign_sign(
            token_id, key, path_query, (int64_t)time(NULL) + SIGNATURE_TTL, signature);
        if (r < 0)
                return reply_status(ret,
                                    500,
                                    "InternalError",
                                    req->name,
                                    "pods",
                                    "cannot sign the log request for node \"%s\"",
                                    node);
        n = asprintf(
            &head,
            "GET %s HTTP/1.0\r\nHost: %s%s%s:%u\r\n%s: %s\r\nUser-Agent: xpool-server\r\n\r\n",
            path_query,
            v6 ? "[" : "",
            host,
            v6 ? "]" : "",
            port,
            XP_LOGSIGN_HEADER,
            signature);
        if (n < 0)
                return -ENOMEM;
        p = calloc(1, sizeof *p);
        if (!p)
                return -ENOMEM;
        *p = (struct proxy){.api = req->api, .fd = -1, .client_fd = request_socket(req)};
        r = agent_connect(req->api, node, host, port, &err);
        if (r >= 0) {
                p->fd = r;
                r = agent_send_all(p->fd, head, (size_t)n);
                if (r < 0)
                        xp_errorf(&err, r, "cannot send the request: %s", strerror(-r));
        }
        if (r >= 0)
                r = read_head(p, follow, &code, &err);
        if (r == -ENOMEM) {
                proxy_free(p);
                return r;
        }
        if (r < 0) {
                proxy_free(p);
                return reply_status(
                    ret,
                    503,
                    "ServiceUnavailable",
                    req->name,
                    "pods",
                    "cannot reach the xpool agent of node \"%s\" at %s%s%s:%u for the logs of pod \"%s\": %s",
                    node,
                    v6 ? "[" : "",
                    host,
                    v6 ? "]" : "",
                    port,
                    req->name,
                    xp_error_message(&err));
        }
        if (code == 200) {
                ret->code = 200;
                ret->content_type = "text/plain";
                ret->stream = (struct stream){.read = proxy_read, .free = proxy_free, .state = p};
                return 0;
        }
        read_error_body(p, body);
        proxy_free(p);
        return agent_refusal(req, node, code, " to the log request", false, body, ret);
}
