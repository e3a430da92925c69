/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libmicrohttpd's own error pages, and the door's answers.
 *
 * libmicrohttpd answers some requests itself, before any callback of ours sees them, with a
 * small HTML page: a request line it cannot parse (400), an HTTP version it does not serve
 * (505), a Content-Length it cannot read (400, 413), malformed chunks (400), a head larger than
 * its memory (414, 431). It offers no hook for those answers, but it logs each one, through the
 * error log it is given, with its code, in the connection's own thread (a thread per
 * connection), just before it queues the page. So the door's error log, knowing which connection
 * the thread serves, writes the owner's answer (a Status object) on the connection first and
 * shuts the socket's writing side: the library's page then fails to send and it closes.
 *
 * Which connection the thread serves is recorded when a request begins (the URI log callback)
 * and, for TLS, on each read (the door routes the session's reads through tls_pull()), since a
 * TLS connection's first request line arrives with no callback before it. A plain connection's
 * first request line comes before any callback too, but the door checked that head (head.h)
 * before the daemon got the connection, so libmicrohttpd finds nothing to refuse in it.
 */
#include <errno.h>
#include <gnutls/gnutls.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "door_internal.h"
#include "xpool/log.h"
#include "xpool/macro.h"

/* What libmicrohttpd 0.9.75 logs before it queues one of its error pages. */
#define MHD_ERROR_FORMAT                                                                           \
        "Error processing request (HTTP response code is %u ('%s')). Closing connection.\n"

#define SEND_WAIT_MS 1000

static _Thread_local struct conn *current;

void mhderr_set_current(struct conn *c)
{
        current = c;
}

static ssize_t tls_pull(gnutls_transport_ptr_t ptr, void *data, size_t len)
{
        struct conn *c = ptr;

        current = c;
        return recv(c->fd, data, len, 0);
}

static int tls_pull_timeout(gnutls_transport_ptr_t ptr, unsigned int ms)
{
        struct conn *c = ptr;
        struct pollfd p = {.fd = c->fd, .events = POLLIN};

        return poll(&p, 1, ms == GNUTLS_INDEFINITE_TIMEOUT ? -1 : (int)ms);
}

void mhderr_watch_tls(struct conn *c)
{
        /* reads come with the record; writes keep the library's default, on the descriptor */
        gnutls_transport_set_ptr2(c->tls, c, (gnutls_transport_ptr_t)(intptr_t)c->fd);
        gnutls_transport_set_pull_function(c->tls, tls_pull);
        gnutls_transport_set_pull_timeout_function(c->tls, tls_pull_timeout);
}

char *door_format_answer(const struct xp_http_door *d,
                         const struct xp_http_refusal *refusal,
                         size_t *ret_len)
{
        _cleanup_free_ char *body = NULL;
        const char *type = "text/plain; charset=utf-8";
        const char *phrase = MHD_get_reason_phrase_for(refusal->code);
        char *answer = NULL;
        int n;

        if (d->format_error(refusal->code, refusal->reason, refusal->message, &body, &type) < 0)
                return NULL;
        n = asprintf(&answer,
                     "HTTP/1.1 %u %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
                     "Cache-Control: no-cache, private\r\nConnection: close\r\n%s\r\n%s",
                     refusal->code,
                     phrase && phrase[0] ? phrase : "Error",
                     type,
                     strlen(body),
                     refusal->code == 429 ? "Retry-After: 1\r\n" : "",
                     body);
        if (n < 0)
                return NULL;
        *ret_len = (size_t)n;
        return answer;
}

enum MHD_Result xp_http_door_send_refusal(struct xp_http_door *d,
                                          struct MHD_Connection *mhd,
                                          const struct xp_http_refusal *refusal)
{
        struct MHD_Response *response;
        const char *type = "text/plain; charset=utf-8";
        char *body = NULL;
        enum MHD_Result r;

        if (d->format_error(refusal->code, refusal->reason, refusal->message, &body, &type) < 0)
                return MHD_NO;
        response = MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE);
        if (!response) {
                free(body);
                return MHD_NO;
        }
        MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE, type);
        MHD_add_response_header(response, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache, private");
        /* What follows a refused head cannot be trusted to be the next request. */
        MHD_add_response_header(response, MHD_HTTP_HEADER_CONNECTION, "close");
        if (refusal->code == 429)
                MHD_add_response_header(response, MHD_HTTP_HEADER_RETRY_AFTER, "1");
        r = MHD_queue_response(mhd, refusal->code, response);
        MHD_destroy_response(response);
        if (r == MHD_YES)
                xp_http_door_response_queued(d, mhd);
        return r;
}

/* ---- rewriting libmicrohttpd's own answers ------------------------------------------------------
 */

static const char *message_for(unsigned code)
{
        switch (code) {
        case 400:
                return "malformed request: the HTTP layer cannot parse it";
        case 413:
                return "the request's Content-Length or a chunk's size is larger than the HTTP layer accepts";
        case 414:
                return "the request URI is too long";
        case 431:
                return "the request's headers are too large";
        case 505:
                return "the request's HTTP version is not supported: use HTTP/1.1 or HTTP/1.0";
        default:
                return "the HTTP layer cannot serve this request";
        }
}

/* Writes all of buf, waiting at most SEND_WAIT_MS for room: 0 or -errno. */
static int send_all(struct conn *c, const char *buf, size_t len)
{
        while (len > 0) {
                ssize_t n;

                if (c->tls) {
                        n = gnutls_record_send(c->tls, buf, len);
                        if (n == GNUTLS_E_AGAIN || n == GNUTLS_E_INTERRUPTED)
                                n = -1, errno = EAGAIN;
                        else if (n < 0)
                                return -EIO;
                } else {
                        n = send(c->fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
                }
                if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
                        struct pollfd p = {.fd = c->fd, .events = POLLOUT};

                        if (poll(&p, 1, SEND_WAIT_MS) <= 0)
                                return -ETIMEDOUT;
                        continue;
                }
                if (n < 0)
                        return -errno;
                buf += n;
                len -= (size_t)n;
        }
        return 0;
}

static void rewrite(struct xp_http_door *d, struct conn *c, unsigned code)
{
        struct xp_http_refusal refusal;
        _cleanup_free_ char *answer = NULL;
        size_t len = 0;

        /* Once an answer of ours is queued, the library only closes: nothing to replace. */
        if (!c || c->response_queued || c->rewritten)
                return;
        xp_http_refuse(&refusal, code, "%s", message_for(code));
        if (code == 413)
                refusal.reason = "RequestEntityTooLarge";
        answer = door_format_answer(d, &refusal, &len);
        if (!answer || send_all(c, answer, len) < 0)
                return;
        c->rewritten = true;
        shutdown(c->fd, SHUT_WR);
}

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
void mhderr_log(void *cls, const char *fmt, va_list ap)
{
        struct xp_http_door *d = cls;
        char line[512];
        size_t len;
        va_list copy;

        va_copy(copy, ap);
        vsnprintf(line, sizeof line, fmt, copy);
        va_end(copy);
        len = strlen(line);
        while (len > 0 && line[len - 1] == '\n')
                line[--len] = '\0';
        xp_debug("http", "libmicrohttpd: %s", line);
        if (strcmp(fmt, MHD_ERROR_FORMAT) == 0)
                rewrite(d, current, va_arg(ap, unsigned));
}
#pragma GCC diagnostic pop
