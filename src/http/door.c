/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The front door's thread (door.h): it accepts, holds each new connection until its first
 * request is there, checks a plain one's head, and hands the connection to the daemon. The same
 * thread enforces the deadlines of the connections in the daemon (conns.c), a few times a second.
 *
 * Waiting connections are read with MSG_PEEK, edge-triggered: the bytes stay in the socket for
 * the daemon to read, and each new segment wakes the thread once.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "door_internal.h"
#include "xpool/log.h"
#include "xpool/macro.h"
#include "xpool/timeutil.h"

#define TICK_MS      100
#define ACCEPT_BATCH 256
#define FD_SPARE     256 /* descriptors for everything but connections */

const struct xp_http_door_limits xp_http_door_server_limits = {
    .head_timeout_ms = 10000,
    .body_timeout_ms = 60000,
    .idle_timeout_ms = 60000,
    .pending_max = 4096,
    .pending_per_client = 1024,
    .connections_max = 4096,
    .preauth_max = 512,
    .preauth_per_client = 256,
    .user_connections_max = 512,
    .user_streams_max = 256,
};

/* A connection waiting in the door for its first head. */
struct pending {
        int fd;
        uint32_t client;
        int64_t since_ms;
        size_t seen; /* bytes peeked so far */
        bool ready;  /* its head is complete: it waits for room in the daemon */
        struct sockaddr_storage addr;
        socklen_t addr_len;
        struct pending *prev, *next;
};

/* epoll's data for the two descriptors that are not connections */
static char listen_tag, stop_tag;

uint32_t door_client_slot(const struct sockaddr *sa)
{
        const uint8_t *b;
        size_t n;
        uint32_t h = 2166136261u; /* FNV-1a */

        if (sa->sa_family == AF_INET6) {
                b = ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr;
                n = 8; /* a client holds a /64 */
        } else if (sa->sa_family == AF_INET) {
                b = (const uint8_t *)&((const struct sockaddr_in *)sa)->sin_addr;
                n = 4;
        } else {
                return 0;
        }
        for (size_t i = 0; i < n; i++)
                h = (h ^ b[i]) * 16777619u;
        return h % CLIENT_SLOTS;
}

/* ---- waiting connections ----------------------------------------------------------------------
 */

static void pending_unlink(struct xp_http_door *d, struct pending *p)
{
        if (p->prev)
                p->prev->next = p->next;
        else
                d->pending_head = p->next;
        if (p->next)
                p->next->prev = p->prev;
        else
                d->pending_tail = p->prev;
        d->n_pending--;
        d->pending_clients[p->client]--;
}

/*
 * A waiting connection that is gone is freed only after the batch of events at hand: another
 * event of the same batch may still point to it (a connection evicted while handling a new one).
 */
static void pending_bury(struct xp_http_door *d, struct pending *p)
{
        p->fd = -1;
        p->next = d->graveyard;
        d->graveyard = p;
}

static void pending_free_graves(struct xp_http_door *d)
{
        while (d->graveyard) {
                struct pending *p = d->graveyard;

                d->graveyard = p->next;
                free(p);
        }
}

static void pending_close(struct xp_http_door *d, struct pending *p)
{
        pending_unlink(d, p);
        close(p->fd); /* leaves the epoll set with it */
        pending_bury(d, p);
}

/* Answers a refused head itself and closes: the body is the owner's (a Status object). */
static void
pending_refuse(struct xp_http_door *d, struct pending *p, const struct xp_http_refusal *refusal)
{
        _cleanup_free_ char *answer = NULL;
        char sink[4096];
        size_t len = 0;

        xp_debug("http", "refused before the daemon: %u %s", refusal->code, refusal->message);
        answer = door_format_answer(d, refusal, &len);
        /* What was peeked is read, so that closing does not reset the connection before the
         * client has read the answer. */
        for (int i = 0; i < (XP_HTTP_HEAD_MAX + 1) / (int)sizeof sink + 1; i++)
                if (recv(p->fd, sink, sizeof sink, MSG_DONTWAIT) <= 0)
                        break;
        if (answer && send(p->fd, answer, len, MSG_NOSIGNAL | MSG_DONTWAIT) >= 0)
                shutdown(p->fd, SHUT_WR);
        pending_close(d, p);
}

static void pending_hand(struct xp_http_door *d, struct pending *p)
{
        int fd = p->fd;

        if (!conns_make_room(d, p->client)) {
                p->ready = true; /* tried again at each tick, until its deadline */
                return;
        }
        epoll_ctl(d->epoll_fd, EPOLL_CTL_DEL, fd, NULL);
        atomic_fetch_add(&d->handing, 1);
        d->last_hand_ms = xp_monotonic_ms();
        pending_unlink(d, p);
        /* The daemon owns the socket from here, and closes it when it cannot take it. */
        if (MHD_add_connection(d->daemon, fd, (struct sockaddr *)&p->addr, p->addr_len) != MHD_YES)
                atomic_fetch_sub(&d->handing, 1);
        pending_bury(d, p);
}

/* New bytes on a waiting connection. */
static void pending_readable(struct xp_http_door *d, struct pending *p)
{
        struct xp_http_refusal refusal;
        size_t head_len;
        ssize_t n;
        int r;

        if (p->fd < 0)
                return; /* closed or handed while handling this batch */
        n = recv(p->fd, d->peek, XP_HTTP_HEAD_MAX + 1, MSG_PEEK | MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
                pending_close(d, p); /* gone before it asked anything */
                return;
        }
        if (n < 0 || p->ready)
                return;
        if (d->tls) {
                pending_hand(d, p); /* the daemon reads the handshake */
                return;
        }
        /* The head is judged again only when a line is added (or it reaches the limit): a head
         * trickled byte by byte costs one check per line, not one per byte. */
        if ((size_t)n <= p->seen || ((size_t)n < XP_HTTP_HEAD_MAX &&
                                     !memchr(d->peek + p->seen, '\n', (size_t)n - p->seen))) {
                p->seen = (size_t)n > p->seen ? (size_t)n : p->seen;
                return;
        }
        p->seen = (size_t)n;
        r = xp_http_check_head(d->peek, (size_t)n, &head_len, &refusal);
        if (r < 0)
                pending_refuse(d, p, &refusal);
        else if (r > 0)
                pending_hand(d, p);
}

/* Makes room for one more waiting connection from client: closes the oldest waiting one of that
 * client when it holds its share, else the oldest of all when the door is full. */
static void pending_make_room(struct xp_http_door *d, uint32_t client)
{
        struct pending *victim = NULL;

        if (d->pending_clients[client] >= d->limits.pending_per_client) {
                for (struct pending *p = d->pending_head; p; p = p->next)
                        if (p->client == client) {
                                victim = p;
                                break;
                        }
        } else if (d->n_pending >= d->limits.pending_max) {
                victim = d->pending_head;
        }
        if (victim) {
                xp_debug("http", "closing the oldest waiting connection to make room");
                pending_close(d, victim);
        }
}

/*
 * No descriptor for a new connection: the oldest waiting one makes room, or, with none waiting,
 * accepting pauses until the next tick (else the listening socket would wake the thread at once,
 * again and again).
 */
static void out_of_descriptors(struct xp_http_door *d)
{
        xp_debug("http", "out of file descriptors: making room");
        if (d->pending_head) {
                pending_close(d, d->pending_head);
                return;
        }
        if (epoll_ctl(d->epoll_fd, EPOLL_CTL_DEL, d->listen_fd, NULL) == 0)
                d->accept_paused = true;
}

static void accept_resume(struct xp_http_door *d)
{
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &listen_tag};

        if (d->accept_paused && epoll_ctl(d->epoll_fd, EPOLL_CTL_ADD, d->listen_fd, &ev) == 0)
                d->accept_paused = false;
}

static void accept_all(struct xp_http_door *d)
{
        for (int i = 0; i < ACCEPT_BATCH; i++) {
                struct pending *p = calloc(1, sizeof *p);
                struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP | EPOLLET};
                int one = 1;

                if (!p)
                        return;
                p->addr_len = sizeof p->addr;
                p->fd = accept4(d->listen_fd,
                                (struct sockaddr *)&p->addr,
                                &p->addr_len,
                                SOCK_NONBLOCK | SOCK_CLOEXEC);
                if (p->fd < 0) {
                        int e = errno;

                        free(p);
                        if (e == EMFILE || e == ENFILE)
                                out_of_descriptors(d);
                        else if (e != EAGAIN && e != EINTR && e != ECONNABORTED)
                                xp_debug("http", "accept: %s", strerror(e));
                        return;
                }
                setsockopt(p->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                p->client = door_client_slot((struct sockaddr *)&p->addr);
                p->since_ms = xp_monotonic_ms();
                pending_make_room(d, p->client);
                p->prev = d->pending_tail;
                if (d->pending_tail)
                        d->pending_tail->next = p;
                else
                        d->pending_head = p;
                d->pending_tail = p;
                d->n_pending++;
                d->pending_clients[p->client]++;
                ev.data.ptr = p;
                if (epoll_ctl(d->epoll_fd, EPOLL_CTL_ADD, p->fd, &ev) < 0)
                        pending_close(d, p);
        }
}

/* Closes the waiting connections past the head deadline; hands the ready ones when it can. */
static void pending_tick(struct xp_http_door *d, int64_t now)
{
        struct pending *next;

        for (struct pending *p = d->pending_head; p; p = next) {
                next = p->next;
                if (now - p->since_ms > d->limits.head_timeout_ms)
                        pending_close(d, p);
                else if (p->ready)
                        pending_hand(d, p);
        }
}

static void *door_main(void *arg)
{
        struct xp_http_door *d = arg;
        struct epoll_event events[64];
        int64_t last_tick = 0;

        for (;;) {
                int n = epoll_wait(d->epoll_fd, events, XP_ELEMENTSOF(events), TICK_MS);
                int64_t now;

                for (int i = 0; i < n; i++) {
                        void *tag = events[i].data.ptr;

                        if (tag == &stop_tag)
                                return NULL;
                        if (tag == &listen_tag)
                                accept_all(d);
                        else
                                pending_readable(d, tag);
                }
                now = xp_monotonic_ms();
                if (now - last_tick >= TICK_MS) {
                        last_tick = now;
                        accept_resume(d);
                        pending_tick(d, now);
                        conns_expire(d, now);
                }
                pending_free_graves(d);
        }
}

/* ---- lifecycle --------------------------------------------------------------------------------
 */

/* Enough descriptors for every connection the limits allow, as far as the hard limit goes. */
static void raise_fd_limit(const struct xp_http_door_limits *l)
{
        rlim_t want = (rlim_t)l->pending_max + l->connections_max + FD_SPARE;
        struct rlimit rl;

        if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur >= want)
                return;
        rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > want ? want : rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
                xp_debug("http", "cannot raise RLIMIT_NOFILE: %s", strerror(errno));
}

int xp_http_door_new(const struct xp_http_door_options *o,
                     struct xp_http_door **ret,
                     struct xp_error *err)
{
        struct xp_http_door *d = calloc(1, sizeof *d);
        struct epoll_event ev = {.events = EPOLLIN};

        if (!d) {
                close(o->listen_fd);
                return -ENOMEM;
        }
        d->limits = *o->limits;
        d->format_error = o->format_error;
        d->tls = o->tls;
        d->listen_fd = o->listen_fd;
        d->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        d->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
        d->peek = malloc(XP_HTTP_HEAD_MAX + 1);
        pthread_mutex_init(&d->lock, NULL);
        if (d->stop_fd < 0 || d->epoll_fd < 0 || !d->peek) {
                int r = d->peek ? -errno : -ENOMEM;

                xp_http_door_free(d);
                return xp_errorf(err, r, "cannot set up the connection handling: %s", strerror(-r));
        }
        ev.data.ptr = &stop_tag;
        epoll_ctl(d->epoll_fd, EPOLL_CTL_ADD, d->stop_fd, &ev);
        ev.data.ptr = &listen_tag;
        if (epoll_ctl(d->epoll_fd, EPOLL_CTL_ADD, d->listen_fd, &ev) < 0) {
                int r = -errno;

                xp_http_door_free(d);
                return xp_errorf(err, r, "cannot watch the listening socket: %s", strerror(-r));
        }
        raise_fd_limit(&d->limits);
        *ret = d;
        return 0;
}

unsigned xp_http_door_mhd_flags(void)
{
        return MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_POLL |
               MHD_USE_NO_LISTEN_SOCKET | MHD_USE_ITC | MHD_USE_ERROR_LOG;
}

void xp_http_door_mhd_options(struct xp_http_door *d,
                              struct MHD_OptionItem ret[static XP_HTTP_DOOR_MHD_OPTIONS])
{
        unsigned i = 0;

        /* The error log first, so that libmicrohttpd logs nothing on its own. */
        ret[i++] = (struct MHD_OptionItem){MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)mhderr_log, d};
        ret[i++] = (struct MHD_OptionItem){MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)conns_notify, d};
        /* Room for connections the door has shut down and the daemon has not reaped yet. */
        ret[i++] = (struct MHD_OptionItem){
            MHD_OPTION_CONNECTION_LIMIT, d->limits.connections_max + d->limits.preauth_max, NULL};
        ret[i++] =
            (struct MHD_OptionItem){MHD_OPTION_CONNECTION_MEMORY_LIMIT, XP_HTTP_POOL_SIZE, NULL};
        /* The door's deadlines come first; this only backs them up. */
        ret[i++] = (struct MHD_OptionItem){
            MHD_OPTION_CONNECTION_TIMEOUT, d->limits.idle_timeout_ms / 1000 * 2, NULL};
        ret[i++] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
}

int xp_http_door_start(struct xp_http_door *d, struct MHD_Daemon *daemon, struct xp_error *err)
{
        int r;

        d->daemon = daemon;
        r = -pthread_create(&d->thread, NULL, door_main, d);
        if (r < 0)
                return xp_errorf(err, r, "cannot start the connection thread: %s", strerror(-r));
        d->started = true;
        return 0;
}

void xp_http_door_stop(struct xp_http_door *d)
{
        uint64_t one = 1;

        if (!d || !d->started)
                return;
        if (write(d->stop_fd, &one, sizeof one) < 0)
                xp_debug("http", "cannot stop the connection thread: %s", strerror(errno));
        pthread_join(d->thread, NULL);
        d->started = false;
        while (d->pending_head)
                pending_close(d, d->pending_head);
        pending_free_graves(d);
}

void xp_http_door_free(struct xp_http_door *d)
{
        if (!d)
                return;
        xp_http_door_stop(d);
        while (d->pending_head)
                pending_close(d, d->pending_head);
        pending_free_graves(d);
        if (d->listen_fd >= 0)
                close(d->listen_fd);
        if (d->epoll_fd >= 0)
                close(d->epoll_fd);
        if (d->stop_fd >= 0)
                close(d->stop_fd);
        pthread_mutex_destroy(&d->lock);
        free(d->users);
        free(d->peek);
        free(d);
}
