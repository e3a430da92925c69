/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * What the front door (door.h) checks in a request's head before anything acts on it: the
 * request line, each header and the request target as they arrived, percent-encodings not yet
 * decoded. Pure functions, no I/O: tests/fuzz/fuzz_http.c runs them on arbitrary bytes.
 *
 * The limits are below what libmicrohttpd can hold (XP_HTTP_POOL_SIZE bytes per connection for
 * the head, its parsed headers, query arguments and cookies), so that a request over them is
 * refused by these checks, with the caller's own error body, and never reaches the library's
 * own HTML error pages.
 */

#include <stdbool.h>
#include <stddef.h>

#include "xpool/macro.h"

#define XP_HTTP_HEAD_MAX    (16 * 1024) /* request line and headers together */
#define XP_HTTP_TARGET_MAX  (8 * 1024)  /* the request target: path and query */
#define XP_HTTP_HEADERS_MAX 100
#define XP_HTTP_ARGS_MAX    64 /* query parameters */
/* libmicrohttpd's memory per connection: it reads a request into half of it (a head of
 * XP_HTTP_HEAD_MAX fits twice), keeps the parsed headers and arguments in the rest, and zeroes
 * all of it after each request of a kept-alive connection (128 KiB cost ~1% of the server's CPU
 * in bench_pods). */
#define XP_HTTP_POOL_SIZE (64 * 1024)
_Static_assert(XP_HTTP_POOL_SIZE / 2 >= 2 * XP_HTTP_HEAD_MAX, "a request head must fit the pool");

/* Why a request is refused: the HTTP code, Kubernetes' reason and a message saying where. */
struct xp_http_refusal {
        unsigned code;
        const char *reason; /* static: "BadRequest", ... */
        char message[256];
};

/* Fills ret; returns -EINVAL, so that `return xp_http_refuse(...)` is one line. */
int xp_http_refuse(struct xp_http_refusal *ret, unsigned code, const char *fmt, ...) _printf_(3, 4);

/*
 * The request target as it arrived: at most XP_HTTP_TARGET_MAX bytes (else 414), of visible
 * ASCII, starting with '/'; every '%' followed by two hex digits; no path segment that decodes
 * to a control character (NUL included), a '/', "." or ".."; no query parameter that decodes to
 * a control character; at most XP_HTTP_ARGS_MAX query parameters. 0, or -EINVAL with ret filled
 * (400 or 414).
 */
int xp_http_check_target(const char *target, size_t len, struct xp_http_refusal *ret);

/* What the headers seen so far held, for the checks that span several. Zero-initialise. */
struct xp_http_header_check {
        unsigned count;
        size_t bytes;
        bool content_length, transfer_encoding, host, authorization;
};

/*
 * One header as received (name and value without the colon and surrounding blanks): a name of
 * token characters, a value without control characters but tab; at most XP_HTTP_HEADERS_MAX
 * headers and XP_HTTP_HEAD_MAX bytes (else 431); Content-Length a decimal of at most 18 digits;
 * Transfer-Encoding only "chunked"; Content-Length, Transfer-Encoding, Host and Authorization at
 * most once each. 0, or -EINVAL with ret filled.
 */
int xp_http_check_header(struct xp_http_header_check *c,
                         const char *name,
                         size_t name_len,
                         const char *value,
                         size_t value_len,
                         struct xp_http_refusal *ret);

/* After the last header: Content-Length and Transfer-Encoding not both (request smuggling). */
int xp_http_check_headers_end(const struct xp_http_header_check *c, struct xp_http_refusal *ret);

/*
 * A request's head as the client sent it, from its first byte: the request line ("METHOD
 * TARGET HTTP/1.1", or 1.0; another version is 505), then headers, up to the empty line; lines
 * end with CRLF or LF; empty lines before the request line are skipped. Every check above
 * applies. 1 with *ret_len = the head's length when it is complete and acceptable; 0 while it is
 * incomplete and still within the limits; -EINVAL with ret filled when it is refused.
 */
int xp_http_check_head(const char *buf, size_t len, size_t *ret_len, struct xp_http_refusal *ret);

/* One query parameter, decoded: value NULL for a key without '=' ("?watch"). */
struct xp_http_arg {
        char *key;
        char *value;
};

struct xp_http_query {
        struct xp_http_arg *args;
        size_t n;
};

/*
 * Splits a raw query (after the '?', not decoded; len bytes) at '&' and each part at its first
 * '=', and decodes both sides ("%41" is 'A', '+' is a space), as Go's url.ParseQuery and
 * libmicrohttpd do. Empty parts are skipped. 0 or -ENOMEM; free with xp_http_query_done().
 */
int xp_http_query_parse(const char *query, size_t len, struct xp_http_query *ret);
void xp_http_query_done(struct xp_http_query *q);
/* The value of the first parameter named key (NULL when absent or given without '='). */
const char *xp_http_query_get(const struct xp_http_query *q, const char *key);
