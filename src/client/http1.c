/* SPDX-License-Identifier: Apache-2.0 */
/* The transport's requests (http1.h): HTTP/1.1 heads, Content-Length and chunked answers. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http1_internal.h"
#include "xpool/timeutil.h"

/* An answer's head (status line and headers) longer than this is refused. */
#define MAX_HEAD_BYTES (64u * 1024)
#define READ_BYTES     16384u

/* What has arrived of the answer and is not consumed yet. */
struct reader {
        struct http1_conn *c;
        int64_t deadline_ms;
        char *buf;
        size_t pos, len, cap;
        size_t received; /* bytes of the answer so far */
};

/* Reads more into r: the number of new bytes, 0 at the end of the connection, or -EIO. */
static ssize_t fill(struct reader *r)
{
        ssize_t n;

        if (r->pos > 0 && r->pos == r->len)
                r->pos = r->len = 0;
        if (r->cap - r->len < READ_BYTES) {
                size_t cap = r->cap ? r->cap * 2 : 2 * READ_BYTES;
                char *buf = realloc(r->buf, cap);

                if (!buf)
                        return -ENOMEM;
                r->buf = buf;
                r->cap = cap;
        }
        n = http1_recv(r->c, r->buf + r->len, r->cap - r->len - 1, r->deadline_ms);
        if (n > 0) {
                r->len += (size_t)n;
                r->received += (size_t)n;
        }
        r->buf[r->len] = '\0';
        return n;
}

/* A line ending in CRLF at r->pos, NUL-terminated in place (without it) and consumed. */
static int read_line(struct reader *r, char **ret)
{
        char *nl;
        ssize_t n;

        /* (no buffer before the first read) */
        while (!(nl = r->len > r->pos ? memchr(r->buf + r->pos, '\n', r->len - r->pos) : NULL)) {
                if (r->len - r->pos > MAX_HEAD_BYTES)
                        return http1_fail(r->c, HTTP1_OTHER, "an answer line over 64 KiB");
                n = fill(r);
                if (n < 0)
                        return (int)n;
                if (n == 0)
                        return http1_fail(r->c, HTTP1_OTHER, "the server ended the connection");
        }
        *nl = '\0';
        if (nl > r->buf + r->pos && nl[-1] == '\r')
                nl[-1] = '\0';
        *ret = r->buf + r->pos;
        r->pos = (size_t)(nl - r->buf) + 1;
        return 0;
}

struct head {
        long code;
        long long length; /* -1: none given */
        bool chunked, close;
};

static void header_line(const char *line, struct head *h)
{
        const char *value = strchr(line, ':');
        size_t name_len;

        if (!value)
                return;
        name_len = (size_t)(value - line);
        value += 1 + strspn(value + 1, " \t");
        if (name_len == 14 && strncasecmp(line, "Content-Length", 14) == 0)
                h->length = strtoll(value, NULL, 10);
        else if (name_len == 17 && strncasecmp(line, "Transfer-Encoding", 17) == 0)
                h->chunked = strcasestr(value, "chunked") != NULL;
        else if (name_len == 10 && strncasecmp(line, "Connection", 10) == 0)
                h->close = strcasestr(value, "close") != NULL;
}

/* The status line and headers; 1xx heads are skipped. */
static int read_head(struct reader *r, struct head *h)
{
        char *line;
        int minor, r_;
        size_t start;

        do {
                *h = (struct head){.length = -1};
                start = r->received - (r->len - r->pos);
                r_ = read_line(r, &line);
                if (r_ < 0)
                        return r_;
                if (sscanf(line, "HTTP/1.%d %ld", &minor, &h->code) != 2 || h->code < 100 ||
                    h->code > 999)
                        return http1_fail(r->c, HTTP1_OTHER, "not an HTTP/1 answer");
                h->close = minor == 0;
                for (;;) {
                        r_ = read_line(r, &line);
                        if (r_ < 0)
                                return r_;
                        if (!*line)
                                break;
                        if (r->received - start > MAX_HEAD_BYTES)
                                return http1_fail(r->c, HTTP1_OTHER, "an answer head over 64 KiB");
                        header_line(line, h);
                }
        } while (h->code < 200);
        return 0;
}

/* Hands up to want bytes (all until the end when want is -1) of the body to fn. */
static int deliver(
    struct reader *r, long long want, long code, http1_data_fn fn, void *userdata, bool *ret_ended)
{
        while (want != 0) {
                size_t have = r->len - r->pos, n;
                int rc;

                if (have == 0) {
                        ssize_t got = fill(r);

                        if (got < 0)
                                return (int)got;
                        if (got == 0) {
                                *ret_ended = true;
                                return want < 0 ? 0
                                                : http1_fail(r->c,
                                                             HTTP1_OTHER,
                                                             "the server ended the answer early");
                        }
                        continue;
                }
                n = want < 0 || (unsigned long long)want > have ? have : (size_t)want;
                rc = fn(code, r->buf + r->pos, n, userdata);
                r->pos += n;
                if (want > 0)
                        want -= (long long)n;
                if (rc < 0)
                        return rc;
        }
        return 0;
}

static int read_chunked(struct reader *r, long code, http1_data_fn fn, void *userdata)
{
        bool ended = false;
        char *line, *end;
        int rc;

        for (;;) {
                unsigned long long size;

                rc = read_line(r, &line);
                if (rc < 0)
                        return rc;
                errno = 0;
                size = strtoull(line, &end, 16);
                if (end == line || errno || size > (1ull << 40))
                        return http1_fail(r->c, HTTP1_OTHER, "a malformed chunk size");
                if (size == 0)
                        break;
                rc = deliver(r, (long long)size, code, fn, userdata, &ended);
                if (rc < 0)
                        return rc;
                rc = read_line(r, &line); /* the chunk's CRLF */
                if (rc < 0)
                        return rc;
        }
        do /* the trailer, up to its empty line */
                rc = read_line(r, &line);
        while (rc >= 0 && *line);
        return rc;
}

/* The answer to method, read whole unless fn stops it; the connection kept when it may be. */
static int read_answer(struct reader *r, const char *method, http1_data_fn fn, void *userdata)
{
        struct head h;
        bool ended = false;
        int rc;

        rc = read_head(r, &h);
        if (rc < 0)
                return rc;
        rc = fn(h.code, NULL, 0, userdata);
        if (rc < 0)
                return rc;
        if (strcmp(method, "HEAD") == 0 || h.code == 204 || h.code == 304)
                rc = 0;
        else if (h.chunked)
                rc = read_chunked(r, h.code, fn, userdata);
        else if (h.length >= 0)
                rc = deliver(r, h.length, h.code, fn, userdata, &ended);
        else {
                rc = deliver(r, -1, h.code, fn, userdata, &ended);
                h.close = true;
        }
        if (rc >= 0 && (h.close || ended || r->pos != r->len))
                http1_close(r->c);
        return rc;
}

static int send_request(struct http1_conn *c,
                        const char *method,
                        const char *path,
                        const char *headers,
                        const char *body,
                        size_t body_len,
                        int64_t deadline_ms)
{
        _cleanup_free_ char *head = NULL;
        bool with_length = body || strcmp(method, "POST") == 0 || strcmp(method, "PUT") == 0 ||
                           strcmp(method, "PATCH") == 0;
        char length[48] = "";
        int n, r;

        if (with_length)
                snprintf(length, sizeof(length), "Content-Length: %zu\r\n", body ? body_len : 0);
        n = asprintf(&head,
                     "%s %s%s HTTP/1.1\r\nHost: %s%s%s:%s\r\n%s%s\r\n",
                     method,
                     c->prefix,
                     path,
                     strchr(c->host, ':') ? "[" : "",
                     c->host,
                     strchr(c->host, ':') ? "]" : "",
                     c->port,
                     headers,
                     length);
        if (n < 0)
                return -ENOMEM;
        r = http1_send(c, head, (size_t)n, deadline_ms);
        if (r >= 0 && body && body_len > 0)
                r = http1_send(c, body, body_len, deadline_ms);
        return r;
}

int http1_request(struct http1_conn *c,
                  const char *method,
                  const char *path,
                  const char *headers,
                  const char *body,
                  size_t body_len,
                  long timeout_ms,
                  http1_data_fn fn,
                  void *userdata)
{
        int64_t deadline_ms = timeout_ms > 0 ? xp_monotonic_ms() + timeout_ms : 0;
        int rc = 0;

        if (c->failure == HTTP1_BAD_URL || !c->host)
                return http1_fail(c, HTTP1_BAD_URL, "not http(s)://HOST:PORT");
        for (int attempt = 0; attempt < 2; attempt++) {
                struct reader r = {.c = c, .deadline_ms = deadline_ms};
                bool reused = c->fd >= 0;

                c->failure = HTTP1_OK;
                if (!reused) {
                        rc = http1_open(c, deadline_ms);
                        if (rc < 0)
                                return rc;
                }
                rc = send_request(c, method, path, headers, body, body_len, deadline_ms);
                if (rc >= 0)
                        rc = read_answer(&r, method, fn, userdata);
                free(r.buf);
                if (rc < 0)
                        http1_close(c);
                /* a kept-alive connection the server closed while idle: once more, afresh */
                if (rc == -EIO && reused && r.received == 0 && c->failure == HTTP1_OTHER)
                        continue;
                return rc;
        }
        return rc;
}
