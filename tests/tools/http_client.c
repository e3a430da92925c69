/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "http_client.h"
#include "xpool/macro.h"

#define LINE_MAX_ 8192

int http_target_parse(const char *url, struct http_target *ret, struct xp_error *err)
{
        _cleanup_free_ char *copy = NULL;
        struct http_target t = {0};
        struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai = NULL;
        char *host, *port = NULL, *end;
        int r;

        if (strncmp(url, "http://", 7) != 0)
                return xp_errorf(err, -EINVAL, "only http:// URLs are supported");
        copy = strdup(url + 7);
        if (!copy)
                return xp_errorf(err, -ENOMEM, "out of memory");
        copy[strcspn(copy, "/")] = '\0';
        snprintf(t.host, sizeof(t.host), "%s", copy);
        host = copy;
        if (*host == '[') {
                end = strchr(host, ']');
                if (!end)
                        return xp_errorf(err, -EINVAL, "no ']' after the IPv6 host");
                *end = '\0';
                host++;
                if (end[1] == ':')
                        port = end + 2;
        } else if ((end = strchr(host, ':'))) {
                *end = '\0';
                port = end + 1;
        }
        r = getaddrinfo(host, port && *port ? port : "80", &hints, &ai);
        if (r != 0)
                return xp_errorf(err, -EINVAL, "%s", gai_strerror(r));
        memcpy(&t.addr, ai->ai_addr, ai->ai_addrlen);
        t.addr_len = ai->ai_addrlen;
        freeaddrinfo(ai);
        *ret = t;
        return 0;
}

int http_format_json_request(char *buf,
                             size_t size,
                             const char *method,
                             const char *path,
                             const struct http_target *target,
                             const char *accept,
                             const char *token,
                             const char *body)
{
        int n =
            snprintf(buf,
                     size,
                     "%s %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n%s%s%s%s%s%s"
                     "Content-Length: %zu\r\n\r\n%s",
                     method,
                     path,
                     target->host,
                     accept ? "Accept: " : "",
                     accept ?: "",
                     accept ? "\r\n" : "",
                     token ? "Authorization: Bearer " : "",
                     token ?: "",
                     token ? "\r\n" : "",
                     strlen(body),
                     body);

        if (n < 0 || (size_t)n >= size)
                return -EMSGSIZE;
        return n;
}

int http_conn_open(struct http_conn *c, const struct http_target *target)
{
        int one = 1, fd;

        fd = socket(target->addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        /* requests go out in one write; Nagle would only add delay to the next one */
        (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        if (connect(fd, (const struct sockaddr *)&target->addr, target->addr_len) < 0) {
                int r = -errno;
                close(fd);
                return r;
        }
        c->fd = fd;
        c->start = c->end = 0;
        return 0;
}

void http_conn_close(struct http_conn *c)
{
        if (c->fd >= 0)
                close(c->fd);
        c->fd = -1;
}

static int conn_send(struct http_conn *c, const char *p, size_t n)
{
        while (n > 0) {
                ssize_t w = send(c->fd, p, n, MSG_NOSIGNAL);

                if (w < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                p += w;
                n -= (size_t)w;
        }
        return 0;
}

/* Reads more into the buffer; 0 at end of stream. */
static int conn_fill(struct http_conn *c)
{
        ssize_t n;

        if (c->start > 0) {
                memmove(c->buf, c->buf + c->start, c->end - c->start);
                c->end -= c->start;
                c->start = 0;
        }
        if (c->end == sizeof(c->buf))
                return -EMSGSIZE;
        do
                n = recv(c->fd, c->buf + c->end, sizeof(c->buf) - c->end, 0);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return -errno;
        c->end += (size_t)n;
        return (int)(n > 0);
}

/* One CRLF-terminated line, without the CRLF, into line (at most LINE_MAX_ bytes). */
static int conn_line(struct http_conn *c, char *line)
{
        for (;;) {
                char *eol = memchr(c->buf + c->start, '\n', c->end - c->start);

                if (eol) {
                        size_t n = (size_t)(eol - (c->buf + c->start));

                        if (n >= LINE_MAX_)
                                return -EMSGSIZE;
                        memcpy(line, c->buf + c->start, n);
                        if (n > 0 && line[n - 1] == '\r')
                                n--;
                        line[n] = '\0';
                        c->start += (size_t)(eol - (c->buf + c->start)) + 1;
                        return 0;
                }
                int r = conn_fill(c);
                if (r <= 0)
                        return r < 0 ? r : -ECONNRESET;
        }
}

static int conn_skip(struct http_conn *c, unsigned long long n)
{
        while (n > 0) {
                size_t have = c->end - c->start;

                if (have == 0) {
                        int r = conn_fill(c);
                        if (r <= 0)
                                return r < 0 ? r : -ECONNRESET;
                        continue;
                }
                if (have > n)
                        have = (size_t)n;
                c->start += have;
                n -= have;
        }
        return 0;
}

int http_conn_read_response(struct http_conn *c, bool *ret_close)
{
        char line[LINE_MAX_];
        long long length = -1;
        bool chunked = false, close_after = false;
        int code, r;

        r = conn_line(c, line);
        if (r < 0)
                return r;
        if (sscanf(line, "HTTP/1.%*1[01] %3d", &code) != 1 || code < 100)
                return -EPROTO;
        for (;;) {
                char *value;

                r = conn_line(c, line);
                if (r < 0)
                        return r;
                if (line[0] == '\0')
                        break;
                value = strchr(line, ':');
                if (!value)
                        return -EPROTO;
                *value++ = '\0';
                value += strspn(value, " \t");
                if (strcasecmp(line, "Content-Length") == 0)
                        length = strtoll(value, NULL, 10);
                else if (strcasecmp(line, "Transfer-Encoding") == 0)
                        chunked = strcasestr(value, "chunked") != NULL;
                else if (strcasecmp(line, "Connection") == 0)
                        close_after = strcasestr(value, "close") != NULL;
        }
        if (code < 200 || code == 204 || code == 304)
                length = 0; /* no body whatever the headers say */
        if (chunked) {
                for (;;) {
                        unsigned long long size;
                        char *end;

                        r = conn_line(c, line);
                        if (r < 0)
                                return r;
                        size = strtoull(line, &end, 16);
                        if (end == line)
                                return -EPROTO;
                        if (size == 0)
                                break;
                        r = conn_skip(c, size + 2); /* the chunk and its CRLF */
                        if (r < 0)
                                return r;
                }
                do { /* trailers up to the empty line */
                        r = conn_line(c, line);
                        if (r < 0)
                                return r;
                } while (line[0] != '\0');
        } else if (length >= 0) {
                r = conn_skip(c, (unsigned long long)length);
                if (r < 0)
                        return r;
        } else {
                while ((r = conn_fill(c)) > 0)
                        c->start = c->end;
                if (r < 0)
                        return r;
                close_after = true;
        }
        *ret_close = close_after;
        return code;
}

int http_conn_exchange(struct http_conn *c, const char *request, size_t n, bool *ret_close)
{
        int r = conn_send(c, request, n);

        return r < 0 ? r : http_conn_read_response(c, ret_close);
}
