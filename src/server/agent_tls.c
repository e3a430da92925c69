/* SPDX-License-Identifier: Apache-2.0 */
/* HTTPS to agents, verified against the cluster CA (agent_tls.h). */
#include <errno.h>
#include <fcntl.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "agent_tls.h"
#include "tls.h"
#include "xpool/macro.h"

#define PUMP_BLOCK   (16 * 1024)
#define FREE_WAIT_MS 5000 /* for the pumps to end, once their callers closed */

struct agent_tls {
        gnutls_certificate_credentials_t creds;
        atomic_int pumps; /* running: their sessions use creds */
};

struct pump {
        struct agent_tls *owner;
        gnutls_session_t tls;
        int net;   /* to the agent, blocking */
        int local; /* our end of the pair, blocking */
};

int agent_tls_new(const char *ca_pem, struct agent_tls **ret, struct xp_error *err)
{
        struct agent_tls *t = calloc(1, sizeof(*t));
        gnutls_datum_t d = {.data = (unsigned char *)ca_pem, .size = (unsigned)strlen(ca_pem)};
        int r;

        if (!t)
                return -ENOMEM;
        r = gnutls_certificate_allocate_credentials(&t->creds);
        if (r < 0) {
                free(t);
                return -ENOMEM;
        }
        r = gnutls_certificate_set_x509_trust_mem(t->creds, &d, GNUTLS_X509_FMT_PEM);
        if (r <= 0) {
                agent_tls_free(t);
                return xp_errorf(err,
                                 -EINVAL,
                                 "the cluster CA does not parse: %s",
                                 r < 0 ? gnutls_strerror(r) : "no certificate");
        }
        *ret = t;
        return 0;
}

void agent_tls_free(struct agent_tls *t)
{
        if (!t)
                return;
        for (int i = 0; atomic_load(&t->pumps) > 0 && i < FREE_WAIT_MS / 10; i++)
                nanosleep(&(struct timespec){.tv_nsec = 10 * 1000000}, NULL);
        if (atomic_load(&t->pumps) > 0)
                return; /* a pump still runs: its session keeps the credentials */
        gnutls_certificate_free_credentials(t->creds);
        free(t);
}

static int send_all_local(int fd, const char *buf, size_t len)
{
        while (len > 0) {
                ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        return -1;
                buf += n;
                len -= (size_t)n;
        }
        return 0;
}

static int send_all_tls(gnutls_session_t tls, const char *buf, size_t len)
{
        while (len > 0) {
                ssize_t n = gnutls_record_send(tls, buf, len);

                if (n == GNUTLS_E_AGAIN || n == GNUTLS_E_INTERRUPTED)
                        continue;
                if (n <= 0)
                        return -1;
                buf += n;
                len -= (size_t)n;
        }
        return 0;
}

/* Carries the bytes until both directions ended, or either side failed or went away. */
static void *pump_main(void *arg)
{
        struct pump *p = arg;
        bool net_eof = false;
        char buf[PUMP_BLOCK];

        for (;;) {
                struct pollfd fds[2] = {{.fd = p->local, .events = POLLIN},
                                        {.fd = p->net, .events = net_eof ? 0 : POLLIN}};
                bool pending = !net_eof && gnutls_record_check_pending(p->tls) > 0;
                ssize_t n;

                if (!pending && poll(fds, 2, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        break;
                }
                if (!pending && (fds[0].revents & (POLLIN | POLLHUP | POLLERR))) {
                        n = recv(p->local, buf, sizeof(buf), 0);
                        if (n > 0 && send_all_tls(p->tls, buf, (size_t)n) >= 0)
                                continue;
                        /* The caller is done (it half-closes only when its own client went
                         * away, api_stream.c): the TCP connection ends with no close_notify,
                         * as a plain one ended before TLS. That is what ends an exec on the
                         * agent whose client left: libmicrohttpd does not pass a close_notify
                         * on to the upgraded stream as its end, a connection reset it does. */
                        struct linger reset = {.l_onoff = 1, .l_linger = 0};

                        setsockopt(p->net, SOL_SOCKET, SO_LINGER, &reset, sizeof(reset));
                        break;
                }
                if (!net_eof && (pending || (fds[1].revents & (POLLIN | POLLHUP | POLLERR)))) {
                        n = gnutls_record_recv(p->tls, buf, sizeof(buf));
                        if (n == GNUTLS_E_AGAIN || n == GNUTLS_E_INTERRUPTED)
                                continue;
                        if (n <= 0) {
                                net_eof = true; /* the agent ended its answer (or failed) */
                                shutdown(p->local, SHUT_WR);
                        } else if (send_all_local(p->local, buf, (size_t)n) < 0) {
                                break;
                        }
                }
        }
        gnutls_deinit(p->tls);
        close(p->net);
        close(p->local);
        atomic_fetch_sub(&p->owner->pumps, 1);
        free(p);
        return NULL;
}

/* Why the agent's certificate was refused, in words. */
static int
verify_failed(gnutls_session_t tls, const char *node, const char *host, struct xp_error *err)
{
        gnutls_datum_t text = {0};
        unsigned status = gnutls_session_get_verify_cert_status(tls);
        int r;

        r = gnutls_certificate_verification_status_print(status, GNUTLS_CRT_X509, &text, 0);
        r = xp_errorf(err,
                      -EPERM,
                      "the agent's certificate is not valid for node \"%s\" at %s: %s",
                      node,
                      host,
                      r >= 0 ? (const char *)text.data : "verification failed");
        gnutls_free(text.data);
        return r;
}

/* The certificate names the node too, not only the address dialled. */
static int
check_node_name(gnutls_session_t tls, const char *node, const char *host, struct xp_error *err)
{
        unsigned n = 0;
        const gnutls_datum_t *chain = gnutls_certificate_get_peers(tls, &n);
        gnutls_x509_crt_t crt = NULL;
        bool ok = false;

        if (chain && n > 0 && gnutls_x509_crt_init(&crt) >= 0) {
                ok = gnutls_x509_crt_import(crt, &chain[0], GNUTLS_X509_FMT_DER) >= 0 &&
                     gnutls_x509_crt_check_hostname2(crt, node, 0);
                gnutls_x509_crt_deinit(crt);
        }
        if (!ok)
                return xp_errorf(err,
                                 -EPERM,
                                 "the agent at %s has a certificate that is not node \"%s\"'s",
                                 host,
                                 node);
        return 0;
}

static int handshake(const struct agent_tls *t,
                     const char *node,
                     const char *host,
                     int fd,
                     int timeout_ms,
                     gnutls_session_t *ret,
                     struct xp_error *err)
{
        gnutls_session_t tls = NULL;
        int r;

        r = gnutls_init(&tls, GNUTLS_CLIENT | GNUTLS_NO_SIGNAL);
        if (r < 0)
                return -ENOMEM;
        if ((r = gnutls_priority_set_direct(tls, TLS_PRIORITY, NULL)) < 0 ||
            (r = gnutls_credentials_set(tls, GNUTLS_CRD_CERTIFICATE, t->creds)) < 0) {
                gnutls_deinit(tls);
                return xp_errorf(err, -EINVAL, "TLS setup: %s", gnutls_strerror(r));
        }
        gnutls_session_set_verify_cert(tls, host, 0);
        gnutls_transport_set_int(tls, fd);
        gnutls_handshake_set_timeout(tls, (unsigned)timeout_ms);
        do
                r = gnutls_handshake(tls);
        while (r < 0 && !gnutls_error_is_fatal(r));
        if (r == GNUTLS_E_CERTIFICATE_VERIFICATION_ERROR)
                r = verify_failed(tls, node, host, err);
        else if (r < 0)
                r = xp_errorf(err,
                              r == GNUTLS_E_TIMEDOUT ? -ETIMEDOUT : -ECONNRESET,
                              "the TLS handshake with the agent at %s failed: %s",
                              host,
                              gnutls_strerror(r));
        else
                r = check_node_name(tls, node, host, err);
        if (r < 0) {
                gnutls_deinit(tls);
                return r;
        }
        *ret = tls;
        return 0;
}

int agent_tls_wrap(const struct agent_tls *t,
                   const char *node,
                   const char *host,
                   int fd,
                   int timeout_ms,
                   struct xp_error *err)
{
        struct pump *p = NULL;
        gnutls_session_t tls = NULL;
        pthread_t thread;
        int pair[2], r;

        r = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) < 0 ? -errno : 0;
        if (r >= 0)
                r = handshake(t, node, host, fd, timeout_ms, &tls, err);
        if (r < 0) {
                close(fd);
                return r;
        }
        p = calloc(1, sizeof(*p));
        if (!p || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) < 0) {
                r = p ? -errno : -ENOMEM;
                goto fail;
        }
        *p = (struct pump){.owner = (struct agent_tls *)t, .tls = tls, .net = fd, .local = pair[1]};
        r = fcntl(pair[0], F_SETFL, fcntl(pair[0], F_GETFL) | O_NONBLOCK) < 0 ? -errno : 0;
        if (r >= 0) {
                atomic_fetch_add(&p->owner->pumps, 1);
                r = -pthread_create(&thread, NULL, pump_main, p);
                if (r < 0)
                        atomic_fetch_sub(&p->owner->pumps, 1);
        }
        if (r < 0) {
                close(pair[0]);
                close(pair[1]);
                goto fail;
        }
        pthread_detach(thread);
        return pair[0];
fail:
        free(p);
        gnutls_deinit(tls);
        close(fd);
        return xp_errorf(err, r, "cannot carry the TLS connection to %s: %s", host, strerror(-r));
}
