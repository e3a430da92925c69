/* SPDX-License-Identifier: Apache-2.0 */
/*
 * port-forward (stream_internal.h): Kubernetes' portforward.k8s.io protocol over SPDY, on its own
 * or tunnelled through a WebSocket. For each connection kubectl forwards it opens two streams with
 * the same "requestID" and "port": "error" and "data". Once both are open this side connects to
 * the port on localhost in the pod's network namespace and copies bytes both ways; a port nobody
 * listens on is one line on the error stream, which kubectl prints, and the session goes on.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "stream_internal.h"
#include "xpool/macro.h"
#include "xpool/runtime.h"

#define PAIRS_MAX 64

struct pair {
        char id[64];
        uint16_t port;
        struct spdy_stream *error, *data;
        int sock; /* -1 until connected, or after both directions ended */
        uint8_t *to_sock;
        size_t to_len, to_off;
        bool client_fin, sock_eof, failed;
};

struct pf {
        struct session *s;
        struct pair *pairs[PAIRS_MAX];
        int poll_pair[SESSION_POLL_MAX];
};

static struct pf *pf_of(struct session *s)
{
        return s->state;
}

static void pair_free(struct pf *pf, size_t i)
{
        struct pair *p = pf->pairs[i];

        if (!p)
                return;
        if (p->sock >= 0)
                close(p->sock);
        free(p->to_sock);
        free(p);
        pf->pairs[i] = NULL;
}

static int pair_find(struct pf *pf, const char *id, bool create)
{
        int free_slot = -1;

        for (int i = 0; i < PAIRS_MAX; i++) {
                if (pf->pairs[i] && strcmp(pf->pairs[i]->id, id) == 0)
                        return i;
                if (!pf->pairs[i] && free_slot < 0)
                        free_slot = i;
        }
        if (!create || free_slot < 0)
                return -ENOSPC;
        pf->pairs[free_slot] = calloc(1, sizeof(struct pair));
        if (!pf->pairs[free_slot])
                return -ENOMEM;
        *pf->pairs[free_slot] = (struct pair){.sock = -1};
        snprintf(pf->pairs[free_slot]->id, sizeof(pf->pairs[free_slot]->id), "%s", id);
        return free_slot;
}

/* The pair's end: the error stream's FIN (with a message when it failed), the data stream's. */
static void pair_end(struct pf *pf, struct pair *p, const char *message)
{
        struct spdy *sp = &pf->s->spdy;

        if (p->error && !p->error->local_fin && !p->error->reset)
                (void)spdy_send(sp, p->error, message, message ? strlen(message) : 0, true);
        if (p->data && !p->data->local_fin && !p->data->reset)
                (void)spdy_send(sp, p->data, NULL, 0, true);
        if (p->sock >= 0)
                close(p->sock);
        p->sock = -1;
        p->failed = true;
}

/* A socket connected to localhost:port in the pod's network namespace: fd, or -errno. */
static int connect_port(struct session *s, uint16_t port, char *why, size_t why_size)
{
        struct xp_error err = {0};
        struct sockaddr_in sa = {.sin_family = AF_INET,
                                 .sin_port = htons(port),
                                 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        _cleanup_close_ int ns = -1, own = -1;
        int fd, r;

        r = xp_runtime_pod_netns(s->runtime, s->req.uid, &ns, &err);
        if (r < 0) {
                snprintf(why, why_size, "%s", xp_error_message(&err));
                return r;
        }
        own = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
        /* this thread only: the socket stays in the namespace it was made in */
        if (own < 0 || setns(ns, CLONE_NEWNET) < 0) {
                r = -errno;
                snprintf(why, why_size, "entering the pod's network namespace: %s", strerror(-r));
                return r;
        }
        fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        r = fd < 0 ? -errno : 0;
        if (setns(own, CLONE_NEWNET) < 0)
                abort(); /* a thread left in a pod's namespace would serve the next stream there */
        if (r < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
                r = -errno;
                snprintf(why,
                         why_size,
                         "failed to connect to localhost:%u inside namespace of pod %s: %s",
                         port,
                         s->req.uid,
                         strerror(-r));
                if (fd >= 0)
                        close(fd);
                return r;
        }
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
        return fd;
}

static void pair_connect(struct pf *pf, struct pair *p)
{
        char why[512], msg[1024];
        int fd = connect_port(pf->s, p->port, why, sizeof(why));

        if (fd < 0) {
                snprintf(msg,
                         sizeof(msg),
                         "error forwarding port %u to pod %s, uid : %s",
                         p->port,
                         pf->s->req.uid,
                         why);
                pair_end(pf, p, msg);
                return;
        }
        p->sock = fd;
}

static int pf_open(void *cls, struct spdy_stream *st)
{
        struct pf *pf = cls;
        const char *type = xp_spdy_headers_get(&st->headers, "streamtype");
        const char *port = xp_spdy_headers_get(&st->headers, "port");
        const char *id = xp_spdy_headers_get(&st->headers, "requestid");
        char *end;
        long n;
        int i;

        if (!type || !port || !id || (strcmp(type, "error") != 0 && strcmp(type, "data") != 0))
                return -EINVAL;
        n = strtol(port, &end, 10);
        if (*end || n <= 0 || n > 65535)
                return -EINVAL;
        i = pair_find(pf, id, true);
        if (i < 0)
                return i;
        if ((strcmp(type, "error") == 0 ? pf->pairs[i]->error : pf->pairs[i]->data) ||
            (pf->pairs[i]->port && pf->pairs[i]->port != n))
                return -EINVAL;
        pf->pairs[i]->port = (uint16_t)n;
        if (strcmp(type, "error") == 0)
                pf->pairs[i]->error = st;
        else
                pf->pairs[i]->data = st;
        st->tag = i;
        if (pf->pairs[i]->error && pf->pairs[i]->data)
                pair_connect(pf, pf->pairs[i]);
        return 0;
}

static struct pair *pair_of(struct pf *pf, const struct spdy_stream *st)
{
        struct pair *p = st->tag >= 0 && st->tag < PAIRS_MAX ? pf->pairs[st->tag] : NULL;

        /* a tag may outlive its pair, whose slot another pair took since */
        return p && (p->error == st || p->data == st) ? p : NULL;
}

static void pf_data(void *cls, struct spdy_stream *st, const uint8_t *data, size_t len)
{
        struct pair *p = pair_of(cls, st);
        uint8_t *b;

        if (!p || st != p->data || p->failed)
                return;
        if (p->to_off == p->to_len)
                p->to_off = p->to_len = 0;
        b = realloc(p->to_sock, p->to_len + len);
        if (!b)
                return;
        memcpy(b + p->to_len, data, len);
        p->to_sock = b;
        p->to_len += len;
}

static void pf_fin(void *cls, struct spdy_stream *st)
{
        struct pair *p = pair_of(cls, st);

        if (p && st == p->data)
                p->client_fin = true;
}

static void pf_reset(void *cls, struct spdy_stream *st)
{
        struct pf *pf = cls;
        struct pair *p = pair_of(pf, st);

        if (!p)
                return;
        if (p->error == st)
                p->error = NULL;
        if (p->data == st)
                p->data = NULL;
        pair_end(pf, p, NULL);
}

static int pf_input(struct session *s)
{
        struct pf *pf = pf_of(s);
        const struct spdy_handler h = {
            .open = pf_open, .data = pf_data, .fin = pf_fin, .reset = pf_reset, .cls = pf};

        for (size_t i = 0; i < PAIRS_MAX; i++)
                if (pf->pairs[i] && pf->pairs[i]->to_len - pf->pairs[i]->to_off >= STREAM_OUT_HIGH)
                        return 0; /* a port that does not take its data holds the rest back */
        return spdy_process(&s->spdy, &h);
}

static size_t pf_poll(struct session *s, struct pollfd *fds, size_t max)
{
        struct pf *pf = pf_of(s);
        bool room = sconn_pending(&s->conn) < STREAM_OUT_HIGH;
        size_t n = 0;

        for (size_t i = 0; i < PAIRS_MAX && n < max; i++) {
                struct pair *p = pf->pairs[i];
                short ev;

                if (!p || p->sock < 0)
                        continue;
                ev = (short)((room && !p->sock_eof ? POLLIN : 0) |
                             (p->to_len > p->to_off ? POLLOUT : 0));
                if (!ev)
                        continue;
                pf->poll_pair[n] = (int)i;
                fds[n++] = (struct pollfd){.fd = p->sock, .events = ev};
        }
        return n;
}

static void pair_io(struct pf *pf, struct pair *p, short revents)
{
        uint8_t buf[STREAM_CHUNK];
        ssize_t n;

        if (p->to_len > p->to_off && (revents & (POLLOUT | POLLERR | POLLHUP))) {
                n = send(p->sock,
                         p->to_sock + p->to_off,
                         p->to_len - p->to_off,
                         MSG_DONTWAIT | MSG_NOSIGNAL);
                if (n > 0)
                        p->to_off += (size_t)n;
                else if (n < 0 && errno != EAGAIN && errno != EINTR)
                        p->sock_eof = p->client_fin = true;
        }
        if (!p->sock_eof && (revents & (POLLIN | POLLHUP | POLLERR))) {
                n = recv(p->sock, buf, sizeof(buf), MSG_DONTWAIT);
                if (n > 0 && p->data)
                        (void)spdy_send(&pf->s->spdy, p->data, buf, (size_t)n, false);
                else if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
                        p->sock_eof = true;
        }
}

static int pf_handle(struct session *s, const struct pollfd *fds, size_t n)
{
        struct pf *pf = pf_of(s);

        for (size_t i = 0; i < n; i++) {
                struct pair *p = pf->pairs[pf->poll_pair[i]];

                if (p && p->sock == fds[i].fd && fds[i].revents)
                        pair_io(pf, p, fds[i].revents);
        }
        for (size_t i = 0; i < PAIRS_MAX; i++) {
                struct pair *p = pf->pairs[i];

                if (!p || p->sock < 0)
                        continue;
                if (p->client_fin && p->to_off == p->to_len)
                        shutdown(p->sock, SHUT_WR);
                /* the port closed its side: the data stream ends (kubectl closes its socket) */
                if (p->sock_eof)
                        pair_end(pf, p, NULL);
        }
        for (size_t i = 0; i < PAIRS_MAX; i++)
                if (pf->pairs[i] && pf->pairs[i]->failed &&
                    (!pf->pairs[i]->data || pf->pairs[i]->data->remote_fin ||
                     pf->pairs[i]->data->reset))
                        pair_free(pf, i);
        /* what spdy_gc() frees no pair may point to */
        for (size_t i = 0; i < PAIRS_MAX; i++) {
                struct pair *p = pf->pairs[i];

                if (p && p->error &&
                    (p->error->reset || (p->error->local_fin && p->error->remote_fin)))
                        p->error = NULL;
                if (p && p->data && (p->data->reset || (p->data->local_fin && p->data->remote_fin)))
                        p->data = NULL;
        }
        spdy_gc(&s->spdy);
        return 0;
}

static int pf_start(struct session *s)
{
        struct pf *pf = calloc(1, sizeof(*pf));

        if (!pf)
                return -ENOMEM;
        pf->s = s;
        s->state = pf;
        return 0;
}

static bool pf_done(struct session *s)
{
        /* the client ends it, by closing the connection */
        return s->spdy.goaway;
}

static void pf_free(struct session *s)
{
        struct pf *pf = pf_of(s);

        if (!pf)
                return;
        for (size_t i = 0; i < PAIRS_MAX; i++)
                pair_free(pf, i);
        free(pf);
        s->state = NULL;
}

const struct session_ops xp_stream_pf_ops = {
    .start = pf_start,
    .input = pf_input,
    .poll = pf_poll,
    .handle = pf_handle,
    .done = pf_done,
    .abort = NULL,
    .free = pf_free,
};
