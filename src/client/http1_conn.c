/* SPDX-License-Identifier: Apache-2.0 */
/* The transport's connection (http1.h): the URL, TCP with deadlines, TLS through GnuTLS. */
#include <arpa/inet.h>
#include <errno.h>
#include <gnutls/gnutls.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "http1_internal.h"
#include "xpool/timeutil.h"
#include "xpool/url.h"

/* Connecting takes at most this long, whatever the request's own timeout. */
#define CONNECT_TIMEOUT_MS 10000
/* How often a wait looks at the cancel flag. */
#define CANCEL_POLL_MS 200

int http1_fail(struct http1_conn *c, enum http1_failure failure, const char *fmt, ...)
{
        va_list ap;

        c->failure = failure;
        va_start(ap, fmt);
        vsnprintf(c->detail, sizeof(c->detail), fmt, ap);
        va_end(ap);
        return -EIO;
}

/* http(s)://HOST[:PORT][/PREFIX] (HOST may be [V6]) into c; false when url is not one. */
static bool parse_url(struct http1_conn *c, const char *url)
{
        struct xp_url u;
        bool ok;

        if (xp_url_split(url, &u, NULL) < 0)
                return false;
        c->tls = strcasecmp(u.scheme, "https") == 0;
        /* a query or fragment cannot lead a prefix that paths are appended to */
        ok = (c->tls || strcasecmp(u.scheme, "http") == 0) && (!u.path[0] || u.path[0] == '/');
        if (ok) {
                size_t len = strlen(u.path);

                if (asprintf(&c->port, "%u", u.port) < 0)
                        c->port = NULL;
                c->prefix = strndup(u.path, len - (len && u.path[len - 1] == '/'));
                c->host = u.host;
                u.host = NULL;
        }
        xp_url_done(&u);
        return ok && c->host && c->port && c->prefix;
}

int http1_init(struct http1_conn *c,
               const char *url,
               const char *ca_file,
               const char *ca_pem,
               size_t ca_pem_len,
               bool insecure,
               const atomic_bool *cancelled)
{
        *c = (struct http1_conn){.fd = -1, .insecure = insecure, .cancelled = cancelled};
        if (!parse_url(c, url))
                c->failure = HTTP1_BAD_URL;
        if (ca_file && !(c->ca_file = strdup(ca_file)))
                return -ENOMEM;
        if (ca_pem) {
                c->ca_pem = malloc(ca_pem_len + 1);
                if (!c->ca_pem)
                        return -ENOMEM;
                memcpy(c->ca_pem, ca_pem, ca_pem_len);
                c->ca_pem[ca_pem_len] = '\0';
                c->ca_pem_len = ca_pem_len;
        }
        return 0;
}

void http1_close(struct http1_conn *c)
{
        if (c->session) {
                gnutls_deinit(c->session);
                c->session = NULL;
        }
        if (c->fd >= 0) {
                close(c->fd);
                c->fd = -1;
        }
}

void http1_done(struct http1_conn *c)
{
        http1_close(c);
        if (c->cred)
                gnutls_certificate_free_credentials(c->cred);
        free(c->host);
        free(c->port);
        free(c->prefix);
        free(c->ca_file);
        free(c->ca_pem);
        *c = (struct http1_conn){.fd = -1};
}

int http1_wait(struct http1_conn *c, short events, int64_t deadline_ms)
{
        for (;;) {
                int64_t now = xp_monotonic_ms();
                int slice = CANCEL_POLL_MS, n;
                struct pollfd p = {.fd = c->fd, .events = events};

                if (c->cancelled && atomic_load(c->cancelled))
                        return http1_fail(c, HTTP1_CANCELLED, "cancelled");
                if (deadline_ms && now >= deadline_ms)
                        return http1_fail(c, HTTP1_TIMEOUT, "timed out");
                if (deadline_ms && deadline_ms - now < (int64_t)slice)
                        slice = (int)(deadline_ms - now);
                n = poll(&p, 1, slice);
                if (n > 0)
                        return 0;
                if (n < 0 && errno != EINTR)
                        return http1_fail(c, HTTP1_OTHER, "poll: %s", strerror(errno));
        }
}

/* One address: a connected, non-blocking socket in c->fd, or -errno. */
static int connect_one(struct http1_conn *c, const struct addrinfo *ai, int64_t deadline_ms)
{
        int one = 1, so_error = 0, r;
        socklen_t len = sizeof(so_error);

        c->fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (c->fd < 0)
                return -errno;
        if (connect(c->fd, ai->ai_addr, ai->ai_addrlen) < 0) {
                if (errno != EINPROGRESS)
                        return -errno;
                r = http1_wait(c, POLLOUT, deadline_ms);
                if (r < 0)
                        return r;
                if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &so_error, &len) < 0)
                        return -errno;
                if (so_error)
                        return -so_error;
        }
        /* a request is one write; the answer must not wait for Nagle */
        setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        setsockopt(c->fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
        return 0;
}

static void note_local_address(struct http1_conn *c)
{
        struct sockaddr_storage sa;
        socklen_t len = sizeof(sa);
        const void *addr = NULL;

        if (getsockname(c->fd, (struct sockaddr *)&sa, &len) < 0)
                return;
        if (sa.ss_family == AF_INET)
                addr = &((struct sockaddr_in *)&sa)->sin_addr;
        else if (sa.ss_family == AF_INET6)
                addr = &((struct sockaddr_in6 *)&sa)->sin6_addr;
        if (!addr || !inet_ntop(sa.ss_family, addr, c->local_ip, sizeof(c->local_ip)))
                c->local_ip[0] = '\0';
}

/* The trust the session checks the server's certificate against, made once. */
static int credentials(struct http1_conn *c)
{
        gnutls_certificate_credentials_t cred;
        int r = 0;

        if (c->cred)
                return 0;
        if (gnutls_certificate_allocate_credentials(&cred) < 0)
                return -ENOMEM;
        if (c->insecure)
                r = 0;
        else if (c->ca_file)
                r = gnutls_certificate_set_x509_trust_file(cred, c->ca_file, GNUTLS_X509_FMT_PEM);
        else if (c->ca_pem)
                r = gnutls_certificate_set_x509_trust_mem(
                    cred,
                    &(gnutls_datum_t){.data = (unsigned char *)c->ca_pem,
                                      .size = (unsigned)c->ca_pem_len},
                    GNUTLS_X509_FMT_PEM);
        else /* no CA given: the system's, as a browser would */
                r = gnutls_certificate_set_x509_system_trust(cred);
        if (r <= 0 && !c->insecure) {
                gnutls_certificate_free_credentials(cred);
                return http1_fail(c,
                                  HTTP1_UNTRUSTED,
                                  "no CA certificate could be read from %s%s",
                                  c->ca_file  ? c->ca_file
                                  : c->ca_pem ? "the given PEM"
                                              : "the system",
                                  r < 0 ? "" : " (none found)");
        }
        c->cred = cred;
        return 0;
}

static bool is_ip_literal(const char *host)
{
        unsigned char buf[sizeof(struct in6_addr)];

        return inet_pton(AF_INET, host, buf) == 1 || inet_pton(AF_INET6, host, buf) == 1;
}

/* The TLS handshake on c->fd, the server's certificate verified unless insecure. */
static int tls_start(struct http1_conn *c, int64_t deadline_ms)
{
        gnutls_session_t s;
        int r;

        r = credentials(c);
        if (r < 0)
                return r;
        if (gnutls_init(&s, GNUTLS_CLIENT | GNUTLS_NONBLOCK) < 0)
                return -ENOMEM;
        c->session = s;
        /* as the server: nothing older than TLS 1.2 (RFC 8996) */
        r = gnutls_set_default_priority_append(s, "-VERS-TLS1.1:-VERS-TLS1.0", NULL, 0);
        if (r >= 0)
                r = gnutls_credentials_set(s, GNUTLS_CRD_CERTIFICATE, c->cred);
        if (r >= 0 && !is_ip_literal(c->host))
                r = gnutls_server_name_set(s, GNUTLS_NAME_DNS, c->host, strlen(c->host));
        if (r < 0)
                return http1_fail(c, HTTP1_OTHER, "TLS setup: %s", gnutls_strerror(r));
        if (!c->insecure)
                gnutls_session_set_verify_cert(s, c->host, 0);
        gnutls_transport_set_int(s, c->fd);
        while ((r = gnutls_handshake(s)) < 0) {
                if (gnutls_error_is_fatal(r))
                        break;
                r = http1_wait(c, gnutls_record_get_direction(s) ? POLLOUT : POLLIN, deadline_ms);
                if (r < 0)
                        return r;
        }
        if (r == GNUTLS_E_CERTIFICATE_VERIFICATION_ERROR) {
                gnutls_datum_t out = {0};
                unsigned status = gnutls_session_get_verify_cert_status(s);

                gnutls_certificate_verification_status_print(status, GNUTLS_CRT_X509, &out, 0);
                http1_fail(c, HTTP1_UNTRUSTED, "%s", out.data ? (char *)out.data : "not verified");
                gnutls_free(out.data);
                return -EIO;
        }
        if (r < 0)
                return http1_fail(c, HTTP1_OTHER, "TLS handshake: %s", gnutls_strerror(r));
        return 0;
}

int http1_open(struct http1_conn *c, int64_t deadline_ms)
{
        struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *list = NULL;
        int64_t connect_deadline = xp_monotonic_ms() + CONNECT_TIMEOUT_MS;
        int r = -EHOSTUNREACH;

        if (deadline_ms && deadline_ms < connect_deadline)
                connect_deadline = deadline_ms;
        if (getaddrinfo(c->host, c->port, &hints, &list) != 0)
                return http1_fail(c, HTTP1_UNREACHABLE, "cannot resolve %s", c->host);
        for (const struct addrinfo *ai = list; ai; ai = ai->ai_next) {
                r = connect_one(c, ai, connect_deadline);
                if (r >= 0)
                        break;
                http1_close(c);
                if (r == -EIO && c->failure == HTTP1_CANCELLED)
                        break;
        }
        freeaddrinfo(list);
        if (r == -EIO) /* cancelled or timed out: c->failure says which */
                return r;
        if (r < 0)
                return http1_fail(c, HTTP1_UNREACHABLE, "connect: %s", strerror(-r));
        note_local_address(c);
        if (c->tls) {
                r = tls_start(c, deadline_ms);
                if (r < 0) {
                        http1_close(c);
                        return r;
                }
        }
        return 0;
}

ssize_t http1_recv(struct http1_conn *c, char *buf, size_t len, int64_t deadline_ms)
{
        for (;;) {
                ssize_t n;
                int r;

                if (c->session) {
                        n = gnutls_record_recv(c->session, buf, len);
                        if (n >= 0)
                                return n;
                        /* a server that closes without close_notify: the end, as for curl */
                        if (n == GNUTLS_E_PREMATURE_TERMINATION)
                                return 0;
                        if (n != GNUTLS_E_AGAIN && n != GNUTLS_E_INTERRUPTED)
                                return http1_fail(
                                    c, HTTP1_OTHER, "TLS: %s", gnutls_strerror((int)n));
                } else {
                        n = recv(c->fd, buf, len, 0);
                        if (n >= 0)
                                return n;
                        if (errno == ECONNRESET)
                                return 0; /* as an end: the caller decides whether it was early */
                        if (errno != EAGAIN && errno != EINTR)
                                return http1_fail(c, HTTP1_OTHER, "recv: %s", strerror(errno));
                }
                r = http1_wait(c, POLLIN, deadline_ms);
                if (r < 0)
                        return r;
        }
}

int http1_send(struct http1_conn *c, const char *buf, size_t len, int64_t deadline_ms)
{
        while (len > 0) {
                ssize_t n;
                int r;

                if (c->session) {
                        n = gnutls_record_send(c->session, buf, len);
                        if (n < 0 && n != GNUTLS_E_AGAIN && n != GNUTLS_E_INTERRUPTED)
                                return http1_fail(
                                    c, HTTP1_OTHER, "TLS: %s", gnutls_strerror((int)n));
                } else {
                        n = send(c->fd, buf, len, MSG_NOSIGNAL);
                        if (n < 0 && errno != EAGAIN && errno != EINTR)
                                return http1_fail(c, HTTP1_OTHER, "send: %s", strerror(errno));
                }
                if (n > 0) {
                        buf += n;
                        len -= (size_t)n;
                        continue;
                }
                r = http1_wait(c, POLLOUT, deadline_ms);
                if (r < 0)
                        return r;
        }
        return 0;
}
