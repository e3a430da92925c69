/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The HTTP(S) GET of an httpGet probe on a connected socket: the kubelet's request (User-Agent
 * kube-probe, Accept any type, the probe's headers, which may replace them and Host), the
 * response's status code judged 200-399, at most XP_PROBE_OUTPUT_MAX bytes of it read. HTTPS skips
 * the certificate's verification, as the kubelet does.
 */
#include <errno.h>
#include <gnutls/gnutls.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "probe.h"
#include "xpool/macro.h"

/* At least 1: gnutls takes 0 for no timeout at all. */
static int remaining(int64_t deadline_ms)
{
        int left = xp_probe_left_ms(deadline_ms);

        return left < 1 ? 1 : left;
}

static bool has_header(char *const *headers, const char *name)
{
        size_t n = strlen(name);

        for (size_t i = 0; headers && headers[i]; i++)
                if (strncasecmp(headers[i], name, n) == 0 && headers[i][n] == ':')
                        return true;
        return false;
}

/* Appends to buf (cap bytes, *len used): false, and *len past cap, once it does not fit. */
_printf_(4, 5) static bool append(char *buf, size_t cap, size_t *len, const char *fmt, ...)
{
        va_list ap;
        int n;

        if (*len >= cap)
                return false;
        va_start(ap, fmt);
        n = vsnprintf(buf + *len, cap - *len, fmt, ap);
        va_end(ap);
        *len = n < 0 ? cap : *len + (size_t)n;
        return *len < cap;
}

/* The request, in buf of cap bytes: its length, or -1 when it does not fit. */
static int request(const struct xp_probe_spec *spec, const char *host, char *buf, size_t cap)
{
        size_t len = 0;
        bool ok = append(buf,
                         cap,
                         &len,
                         "GET %s HTTP/1.1\r\nConnection: close\r\n",
                         spec->path[0] == '/' ? spec->path : "/");

        if (ok && !has_header(spec->headers, "Host"))
                ok = append(buf, cap, &len, "Host: %s:%d\r\n", host, spec->port);
        if (ok && !has_header(spec->headers, "User-Agent"))
                ok = append(buf, cap, &len, "User-Agent: kube-probe/1.32\r\n");
        if (ok && !has_header(spec->headers, "Accept"))
                ok = append(buf, cap, &len, "Accept: */*\r\n");
        for (size_t i = 0; ok && spec->headers && spec->headers[i]; i++)
                ok = append(buf, cap, &len, "%s\r\n", spec->headers[i]);
        if (ok)
                ok = append(buf, cap, &len, "\r\n");
        return ok ? (int)len : -1;
}

/* Plain sends and reads, or gnutls's on session. */
struct conn {
        int fd;
        gnutls_session_t tls;
        int64_t deadline_ms;
};

static ssize_t conn_io(struct conn *c, void *buf, size_t len, bool send_it)
{
        struct pollfd p = {.fd = c->fd, .events = send_it ? POLLOUT : POLLIN};
        ssize_t k;

        if (c->tls) {
                gnutls_record_set_timeout(c->tls, (unsigned)remaining(c->deadline_ms));
                for (;;) {
                        k = send_it ? gnutls_record_send(c->tls, buf, len)
                                    : gnutls_record_recv(c->tls, buf, len);
                        if (k != GNUTLS_E_AGAIN && k != GNUTLS_E_INTERRUPTED)
                                break;
                        /* the socket is non-blocking: wait for it, never past the deadline */
                        p.events = POLLIN | POLLOUT;
                        if (xp_probe_now_ms() >= c->deadline_ms ||
                            poll(&p, 1, remaining(c->deadline_ms)) <= 0)
                                return -ETIMEDOUT;
                }
                return k < 0 ? (k == GNUTLS_E_PREMATURE_TERMINATION ? 0 : -EIO) : k;
        }
        if (poll(&p, 1, remaining(c->deadline_ms)) <= 0 || xp_probe_now_ms() > c->deadline_ms)
                return -ETIMEDOUT;
        k = send_it ? send(c->fd, buf, len, MSG_NOSIGNAL) : read(c->fd, buf, len);
        return k < 0 ? -errno : k;
}

static int tls_begin(struct conn *c, gnutls_certificate_credentials_t *cred, const char *host)
{
        int r;

        if (gnutls_certificate_allocate_credentials(cred) < 0)
                return -ENOMEM;
        if (gnutls_init(&c->tls, GNUTLS_CLIENT | GNUTLS_NONBLOCK) < 0) {
                c->tls = NULL;
                return -ENOMEM;
        }
        gnutls_set_default_priority(c->tls);
        gnutls_credentials_set(c->tls, GNUTLS_CRD_CERTIFICATE, *cred);
        gnutls_server_name_set(c->tls, GNUTLS_NAME_DNS, host, strlen(host));
        gnutls_transport_set_int(c->tls, c->fd);
        gnutls_handshake_set_timeout(c->tls, (unsigned)remaining(c->deadline_ms));
        do {
                struct pollfd p = {.fd = c->fd, .events = POLLIN | POLLOUT};

                r = gnutls_handshake(c->tls);
                if (r == GNUTLS_E_AGAIN && poll(&p, 1, remaining(c->deadline_ms)) <= 0)
                        return -ETIMEDOUT;
        } while ((r == GNUTLS_E_AGAIN || r == GNUTLS_E_INTERRUPTED) &&
                 xp_probe_now_ms() < c->deadline_ms);
        return r < 0 ? -EPROTO : 0;
}

/* The response's status code from its first line, or -1. */
static int status_code(const char *resp)
{
        int code = -1;

        if (sscanf(resp, "HTTP/%*d.%*d %3d", &code) != 1)
                return -1;
        return code;
}

static ssize_t exchange(struct conn *c, const char *req, size_t req_len, char *resp, size_t cap)
{
        size_t off = 0, len = 0;
        ssize_t k;

        while (off < req_len) {
                k = conn_io(c, (char *)req + off, req_len - off, true);
                if (k <= 0)
                        return k < 0 ? k : -EPIPE;
                off += (size_t)k;
        }
        /* the status line is all that is judged: read until it and the headers are in */
        while (len + 1 < cap) {
                k = conn_io(c, resp + len, cap - 1 - len, false);
                if (k < 0)
                        return k;
                if (k == 0)
                        break;
                len += (size_t)k;
                resp[len] = '\0';
                if (strstr(resp, "\r\n\r\n"))
                        break;
        }
        resp[len] = '\0';
        return (ssize_t)len;
}

enum xp_probe_result xp_probe_http_run(const struct xp_probe_spec *spec,
                                       const struct xp_probe_target *t,
                                       int fd,
                                       int64_t deadline_ms,
                                       char *msg)
{
        const char *host = spec->host ? spec->host : t->pod_ip ? t->pod_ip : "127.0.0.1";
        bool https = strcmp(spec->scheme, "HTTPS") == 0;
        struct conn c = {.fd = fd, .deadline_ms = deadline_ms};
        gnutls_certificate_credentials_t cred = NULL;
        char req[XP_PROBE_REQUEST_MAX], *resp = malloc(XP_PROBE_OUTPUT_MAX + 1);
        int len = request(spec, host, req, sizeof(req)), r = 0, code = -1;
        ssize_t n = -ENOMEM;

        if (len < 0) {
                free(resp);
                snprintf(msg,
                         XP_PROBE_MESSAGE_MAX,
                         "httpGet: the request (path and headers) is longer than %d bytes",
                         XP_PROBE_REQUEST_MAX);
                return XP_PROBE_FAILURE;
        }
        if (resp && len > 0 && https)
                r = tls_begin(&c, &cred, host);
        if (resp && len > 0 && r >= 0)
                n = exchange(&c, req, (size_t)len, resp, XP_PROBE_OUTPUT_MAX + 1);
        if (n >= 0)
                code = status_code(resp);
        if (c.tls) {
                gnutls_deinit(c.tls);
        }
        if (cred)
                gnutls_certificate_free_credentials(cred);
        free(resp);
        if (code >= 0 && xp_probe_http_status(code) == XP_PROBE_SUCCESS)
                return XP_PROBE_SUCCESS;
        if (code >= 0)
                snprintf(msg, XP_PROBE_MESSAGE_MAX, "HTTP probe failed with statuscode: %d", code);
        else
                snprintf(msg,
                         XP_PROBE_MESSAGE_MAX,
                         "Get \"%s://%s:%d%s\": %s",
                         https ? "https" : "http",
                         host,
                         spec->port,
                         spec->path,
                         r < 0 || n == -ETIMEDOUT || n == -EIO
                             ? (r == -EPROTO || n == -EIO ? "remote error: tls handshake failure"
                                                          : "context deadline exceeded "
                                                            "(Client.Timeout exceeded while "
                                                            "awaiting headers)")
                         : n == 0 || n == -EPIPE ? "EOF"
                                                 : "malformed HTTP response");
        return XP_PROBE_FAILURE;
}
