/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * A small HTTP/1.1 client on a plain socket, for the tools that load the API server
 * (tests/tools/api_burst.c, bench/bench_api.c): keep-alive connections, a request written in one
 * go, and answers read as far as their status and headers, the body (Content-Length, chunked, or
 * up to the end of the stream) discarded. No libcurl, so that what they measure is the server.
 * Test and bench tooling, not part of libxpool.
 */

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

#include "xpool/error.h"

/* Where requests go: the resolved address and the Host header that names it. */
struct http_target {
        struct sockaddr_storage addr;
        socklen_t addr_len;
        char host[300]; /* HOST[:PORT] as the URL gave it */
};

/* One keep-alive connection and what has been read from it but not yet parsed. */
struct http_conn {
        int fd; /* -1 when closed */
        size_t start, end;
        char buf[65536];
};

/*
 * Splits http://HOST[:PORT][/...] (HOST a name, an IPv4 address or a bracketed IPv6 one; PORT 80
 * when not given) and resolves it into *ret. -EINVAL with err saying why (not http://, no ']',
 * the resolver's message) or -ENOMEM; *ret is untouched on failure.
 */
int http_target_parse(const char *url, struct http_target *ret, struct xp_error *err);

/*
 * Formats a request with a JSON body into buf: Host (target's), Content-Type application/json,
 * Accept when accept is not NULL, "Authorization: Bearer TOKEN" when token is not NULL, and
 * Content-Length. Returns its length, or -EMSGSIZE when it does not fit in size bytes.
 */
int http_format_json_request(char *buf,
                             size_t size,
                             const char *method,
                             const char *path,
                             const struct http_target *target,
                             const char *accept,
                             const char *token,
                             const char *body);

/* Connects c to target (TCP_NODELAY, O_CLOEXEC) with an empty buffer. -errno of socket/connect. */
int http_conn_open(struct http_conn *c, const struct http_target *target);

/* Closes c when it is open; c->fd is -1 after. */
void http_conn_close(struct http_conn *c);

/*
 * Reads one response and discards its body. Returns the status code, or -errno when the connection
 * broke (-ECONNRESET at an early end of stream) or the answer is not HTTP (-EPROTO, -EMSGSIZE for a
 * line longer than 8 KiB). *ret_close says the connection cannot carry another request.
 */
int http_conn_read_response(struct http_conn *c, bool *ret_close);

/* Sends the n bytes of request on c (no SIGPIPE) and reads the answer, as
 * http_conn_read_response() does; -errno of send too. */
int http_conn_exchange(struct http_conn *c, const char *request, size_t n, bool *ret_close);
