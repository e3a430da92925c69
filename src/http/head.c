/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The checks of a request's head (head.h). Everything is judged on the bytes as they arrived:
 * a path is checked before its percent-encodings are decoded, so "sentinel%00extra" is refused
 * rather than read as "sentinel" by whatever stops at the NUL.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "xpool/http.h"
#include "xpool/strutil.h"

/* How much of a target a message quotes. */
#define QUOTE_MAX 96

int xp_http_refuse(struct xp_http_refusal *ret, unsigned code, const char *fmt, ...)
{
        va_list ap;

        ret->code = code;
        switch (code) {
        case 401:
                ret->reason = "Unauthorized";
                break;
        case 404:
                ret->reason = "NotFound";
                break;
        case 429:
                ret->reason = "TooManyRequests";
                break;
        case 413:
                ret->reason = "RequestEntityTooLarge";
                break;
        case 408:
                ret->reason = "Timeout";
                break;
        case 500:
                ret->reason = "InternalError";
                break;
        default:
                /* Kubernetes has no reason of its own for 414, 431 and 505. */
                ret->reason = "BadRequest";
                break;
        }
        va_start(ap, fmt);
        vsnprintf(ret->message, sizeof ret->message, fmt, ap);
        va_end(ap);
        return -EINVAL;
}

static bool is_tchar(unsigned char c)
{
        /* RFC 9110's token characters */
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
               (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* The byte a "%HH" at p encodes, or -1 when p does not start a valid one (end is the limit). */
static int percent_byte(const char *p, const char *end)
{
        int hi, lo;

        if (end - p < 3)
                return -1;
        hi = xp_hex_digit(p[1]);
        lo = xp_hex_digit(p[2]);
        return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

/* ---- the request target --------------------------------------------------------------------- */

/* One path segment [seg, end); pos is its offset in the target, for the message. */
static int check_segment(const char *target,
                         size_t target_len,
                         const char *seg,
                         const char *end,
                         struct xp_http_refusal *ret)
{
        int quoted = target_len > QUOTE_MAX ? QUOTE_MAX : (int)target_len;
        size_t dots = 0, len = 0;

        for (const char *p = seg; p < end; p++, len++) {
                int b = (unsigned char)*p;

                if (*p == '%') {
                        b = percent_byte(p, end);
                        if (b < 0)
                                return xp_http_refuse(
                                    ret,
                                    400,
                                    "invalid request path \"%.*s\": byte %zu: '%%' must be followed by two hexadecimal digits",
                                    quoted,
                                    target,
                                    (size_t)(p - target));
                        if (b < 0x20 || b == 0x7f || b == '/')
                                return xp_http_refuse(
                                    ret,
                                    400,
                                    "invalid request path \"%.*s\": byte %zu: %.3s encodes %s, which no path segment may hold",
                                    quoted,
                                    target,
                                    (size_t)(p - target),
                                    p,
                                    b == '/' ? "a '/'" : "a control character");
                        p += 2;
                }
                if (b == '.')
                        dots++;
        }
        if (len > 0 && len == dots && dots <= 2)
                return xp_http_refuse(
                    ret,
                    400,
                    "invalid request path \"%.*s\": a path segment may not be \"%s\"",
                    quoted,
                    target,
                    dots == 1 ? "." : "..");
        return 0;
}

/* The query [q, end): valid percent-encodings, no control character, few parameters. */
static int check_query(const char *target,
                       size_t target_len,
                       const char *q,
                       const char *end,
                       struct xp_http_refusal *ret)
{
        int quoted = target_len > QUOTE_MAX ? QUOTE_MAX : (int)target_len;
        unsigned args = q < end ? 1 : 0;

        for (const char *p = q; p < end; p++) {
                int b;

                if (*p == '&' && ++args > XP_HTTP_ARGS_MAX)
                        return xp_http_refuse(ret,
                                              400,
                                              "the request has more than %d query parameters",
                                              XP_HTTP_ARGS_MAX);
                if (*p != '%')
                        continue;
                b = percent_byte(p, end);
                if (b < 0)
                        return xp_http_refuse(
                            ret,
                            400,
                            "invalid query in \"%.*s\": byte %zu: '%%' must be followed by two hexadecimal digits",
                            quoted,
                            target,
                            (size_t)(p - target));
                if (b < 0x20 || b == 0x7f)
                        return xp_http_refuse(
                            ret,
                            400,
                            "invalid query in \"%.*s\": byte %zu: %.3s encodes a control character",
                            quoted,
                            target,
                            (size_t)(p - target),
                            p);
                p += 2;
        }
        return 0;
}

int xp_http_check_target(const char *target, size_t len, struct xp_http_refusal *ret)
{
        const char *end = target + len, *query, *seg;

        if (len > XP_HTTP_TARGET_MAX)
                return xp_http_refuse(
                    ret,
                    414,
                    "the request URI is %zu bytes long, more than the limit of %d",
                    len,
                    XP_HTTP_TARGET_MAX);
        if (len == 0 || target[0] != '/')
                return xp_http_refuse(
                    ret, 400, "the request target must be a path starting with '/'");
        for (size_t i = 0; i < len; i++) {
                unsigned char c = (unsigned char)target[i];

                if (c <= 0x20 || c >= 0x7f || c == '#')
                        return xp_http_refuse(
                            ret,
                            400,
                            "invalid request URI: byte %zu is 0x%02x, which a URI may not hold",
                            i,
                            c);
        }
        query = memchr(target, '?', len);
        if (!query)
                query = end;
        for (seg = target + 1; seg <= query; seg++) {
                const char *slash = memchr(seg, '/', (size_t)(query - seg));
                const char *seg_end = slash ? slash : query;
                int r = check_segment(target, len, seg, seg_end, ret);

                if (r < 0)
                        return r;
                seg = seg_end;
        }
        return query < end ? check_query(target, len, query + 1, end, ret) : 0;
}

/* ---- headers -------------------------------------------------------------------------------- */

static bool name_is(const char *name, size_t len, const char *want)
{
        return len == strlen(want) && strncasecmp(name, want, len) == 0;
}

/* Headers that must come once: a second one is how requests are smuggled past a proxy. */
static int check_once(bool *seen, const char *name, size_t name_len, struct xp_http_refusal *ret)
{
        if (*seen)
                return xp_http_refuse(
                    ret, 400, "the request has more than one %.*s header", (int)name_len, name);
        *seen = true;
        return 0;
}

static int check_framing(struct xp_http_header_check *c,
                         const char *name,
                         size_t name_len,
                         const char *value,
                         size_t value_len,
                         struct xp_http_refusal *ret)
{
        if (name_is(name, name_len, "Content-Length")) {
                if (value_len == 0 || value_len > 18)
                        return xp_http_refuse(
                            ret,
                            400,
                            "Content-Length must be a decimal number of at most 18 digits");
                for (size_t i = 0; i < value_len; i++)
                        if (value[i] < '0' || value[i] > '9')
                                return xp_http_refuse(
                                    ret,
                                    400,
                                    "Content-Length must be a decimal number of at most 18 digits");
                return check_once(&c->content_length, name, name_len, ret);
        }
        if (name_is(name, name_len, "Transfer-Encoding")) {
                if (!(value_len == 7 && strncasecmp(value, "chunked", 7) == 0))
                        return xp_http_refuse(
                            ret,
                            400,
                            "Transfer-Encoding \"%.*s\" is not supported: only chunked",
                            value_len > 64 ? 64 : (int)value_len,
                            value);
                return check_once(&c->transfer_encoding, name, name_len, ret);
        }
        if (name_is(name, name_len, "Host"))
                return check_once(&c->host, name, name_len, ret);
        if (name_is(name, name_len, "Authorization"))
                return check_once(&c->authorization, name, name_len, ret);
        return 0;
}

int xp_http_check_header(struct xp_http_header_check *c,
                         const char *name,
                         size_t name_len,
                         const char *value,
                         size_t value_len,
                         struct xp_http_refusal *ret)
{
        c->bytes += name_len + value_len + 4; /* ": " and the line's end */
        if (++c->count > XP_HTTP_HEADERS_MAX)
                return xp_http_refuse(
                    ret, 431, "the request has more than %d headers", XP_HTTP_HEADERS_MAX);
        if (c->bytes > XP_HTTP_HEAD_MAX)
                return xp_http_refuse(ret,
                                      431,
                                      "the request's headers are larger than the limit of %d bytes",
                                      XP_HTTP_HEAD_MAX);
        if (name_len == 0)
                return xp_http_refuse(ret, 400, "a request header has no name");
        for (size_t i = 0; i < name_len; i++)
                if (!is_tchar((unsigned char)name[i]))
                        return xp_http_refuse(
                            ret,
                            400,
                            "invalid header name \"%.*s\": byte 0x%02x is not a token character",
                            name_len > 64 ? 64 : (int)name_len,
                            name,
                            (unsigned char)name[i]);
        for (size_t i = 0; i < value_len; i++) {
                unsigned char b = (unsigned char)value[i];

                if ((b < 0x20 && b != '\t') || b == 0x7f)
                        return xp_http_refuse(
                            ret,
                            400,
                            "invalid value of header %.*s: byte %zu is the control character 0x%02x",
                            name_len > 64 ? 64 : (int)name_len,
                            name,
                            i,
                            b);
        }
        return check_framing(c, name, name_len, value, value_len, ret);
}

int xp_http_check_headers_end(const struct xp_http_header_check *c, struct xp_http_refusal *ret)
{
        if (c->content_length && c->transfer_encoding)
                return xp_http_refuse(
                    ret, 400, "the request has both Content-Length and Transfer-Encoding");
        return 0;
}

/* ---- the head as received -------------------------------------------------------------------- */

/* "HTTP/1.1" or "HTTP/1.0"; 505 for another version, 400 for what is none. */
static int check_version(const char *v, size_t len, struct xp_http_refusal *ret)
{
        if (len == 8 && memcmp(v, "HTTP/", 5) == 0 && v[5] >= '0' && v[5] <= '9' && v[6] == '.' &&
            v[7] >= '0' && v[7] <= '9') {
                if (v[5] == '1' && (v[7] == '0' || v[7] == '1'))
                        return 0;
                return xp_http_refuse(
                    ret, 505, "HTTP version %.8s is not supported: use HTTP/1.1 or HTTP/1.0", v);
        }
        return xp_http_refuse(ret, 400, "malformed request line: no HTTP version at its end");
}

static int check_request_line(const char *line, size_t len, struct xp_http_refusal *ret)
{
        const char *sp1 = memchr(line, ' ', len), *sp2, *end = line + len;
        int r;

        if (!sp1 || sp1 == line)
                return xp_http_refuse(
                    ret, 400, "malformed request line: want METHOD TARGET HTTP/1.1");
        for (const char *p = line; p < sp1; p++)
                if (!is_tchar((unsigned char)*p))
                        return xp_http_refuse(ret, 400, "malformed request line: invalid method");
        sp2 = memchr(sp1 + 1, ' ', (size_t)(end - sp1 - 1));
        if (!sp2)
                return xp_http_refuse(
                    ret, 400, "malformed request line: want METHOD TARGET HTTP/1.1");
        r = check_version(sp2 + 1, (size_t)(end - sp2 - 1), ret);
        if (r < 0)
                return r;
        return xp_http_check_target(sp1 + 1, (size_t)(sp2 - sp1 - 1), ret);
}

static int check_header_line(struct xp_http_header_check *c,
                             const char *line,
                             size_t len,
                             struct xp_http_refusal *ret)
{
        const char *colon = memchr(line, ':', len), *v, *end = line + len;

        if (line[0] == ' ' || line[0] == '\t')
                return xp_http_refuse(ret, 400, "folded header lines are not accepted");
        if (!colon)
                return xp_http_refuse(ret, 400, "malformed header line: no ':'");
        v = colon + 1;
        while (v < end && (*v == ' ' || *v == '\t'))
                v++;
        while (end > v && (end[-1] == ' ' || end[-1] == '\t'))
                end--;
        return xp_http_check_header(c, line, (size_t)(colon - line), v, (size_t)(end - v), ret);
}

int xp_http_check_head(const char *buf, size_t len, size_t *ret_len, struct xp_http_refusal *ret)
{
        struct xp_http_header_check c = {0};
        size_t pos = 0;
        bool request_line = true;
        int r;

        for (;;) {
                const char *nl = memchr(buf + pos, '\n', len - pos);
                size_t line_len;

                if (!nl) {
                        if (len < XP_HTTP_HEAD_MAX)
                                return 0;
                        if (request_line)
                                return xp_http_refuse(
                                    ret,
                                    414,
                                    "the request line is longer than the limit of %d bytes",
                                    XP_HTTP_TARGET_MAX);
                        return xp_http_refuse(
                            ret,
                            431,
                            "the request's headers are larger than the limit of %d bytes",
                            XP_HTTP_HEAD_MAX);
                }
                line_len = (size_t)(nl - (buf + pos));
                if (line_len > 0 && buf[pos + line_len - 1] == '\r')
                        line_len--;
                for (size_t i = 0; i < line_len; i++) {
                        unsigned char b = (unsigned char)buf[pos + i];

                        if ((b < 0x20 && b != '\t') || b == 0x7f)
                                return xp_http_refuse(
                                    ret,
                                    400,
                                    "malformed request: byte %zu is the control character 0x%02x",
                                    pos + i,
                                    b);
                }
                if (request_line && line_len > 0) {
                        r = check_request_line(buf + pos, line_len, ret);
                        if (r < 0)
                                return r;
                        request_line = false;
                } else if (!request_line && line_len == 0) {
                        r = xp_http_check_headers_end(&c, ret);
                        if (r < 0)
                                return r;
                        *ret_len = (size_t)(nl - buf) + 1;
                        return 1;
                } else if (!request_line) {
                        r = check_header_line(&c, buf + pos, line_len, ret);
                        if (r < 0)
                                return r;
                }
                pos = (size_t)(nl - buf) + 1;
                if (pos > XP_HTTP_HEAD_MAX)
                        return xp_http_refuse(
                            ret,
                            431,
                            "the request's headers are larger than the limit of %d bytes",
                            XP_HTTP_HEAD_MAX);
        }
}

/* ---- query parameters -------------------------------------------------------------------------
 */

/* Decodes [p, end) into a new string: %HH as the byte, '+' as a space. */
static char *decode(const char *p, const char *end)
{
        char *out = malloc((size_t)(end - p) + 1), *o = out;

        if (!out)
                return NULL;
        while (p < end) {
                int b = *p == '%' ? percent_byte(p, end) : -1;

                if (b >= 0) {
                        *o++ = (char)b;
                        p += 3;
                } else {
                        *o++ = *p == '+' ? ' ' : *p;
                        p++;
                }
        }
        *o = '\0';
        return out;
}

void xp_http_query_done(struct xp_http_query *q)
{
        for (size_t i = 0; i < q->n; i++) {
                free(q->args[i].key);
                free(q->args[i].value);
        }
        free(q->args);
        *q = (struct xp_http_query){0};
}

int xp_http_query_parse(const char *query, size_t len, struct xp_http_query *ret)
{
        struct xp_http_query q = {0};
        const char *p = query, *end = query + len;
        size_t cap = 0;

        while (p < end) {
                const char *amp = memchr(p, '&', (size_t)(end - p)), *part_end = amp ? amp : end;
                const char *eq = memchr(p, '=', (size_t)(part_end - p));
                struct xp_http_arg arg = {0};

                if (part_end > p) {
                        if (q.n == cap) {
                                size_t ncap = cap ? cap * 2 : 8;
                                struct xp_http_arg *args = realloc(q.args, ncap * sizeof *args);

                                if (!args)
                                        goto oom;
                                q.args = args;
                                cap = ncap;
                        }
                        arg.key = decode(p, eq ? eq : part_end);
                        if (eq)
                                arg.value = decode(eq + 1, part_end);
                        if (!arg.key || (eq && !arg.value)) {
                                free(arg.key);
                                free(arg.value);
                                goto oom;
                        }
                        q.args[q.n++] = arg;
                }
                p = part_end + 1;
        }
        *ret = q;
        return 0;
oom:
        xp_http_query_done(&q);
        return -ENOMEM;
}

const char *xp_http_query_get(const struct xp_http_query *q, const char *key)
{
        for (size_t i = 0; i < q->n; i++)
                if (strcmp(q->args[i].key, key) == 0)
                        return q->args[i].value;
        return NULL;
}
