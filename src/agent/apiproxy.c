/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The TCP forwarder of the pods' API address (apiproxy.h). A thread accepts; each connection
 * gets a thread that connects to the API server and moves bytes both ways through two buffers
 * with poll(), so that neither direction waits on the other (a watch's stream while the client
 * sends nothing, a request body the server reads late). One side's end is passed on as a
 * half-close; the pair ends when both directions have ended, on an error, or on stop.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "apiproxy.h"
#include "apiproxy_admit.h"
#include "xpool/log.h"
#include "xpool/macro.h"
#include "xpool/timeutil.h"

#define RELAY_BUF        (32 * 1024)
#define CONNECT_MS       10000
#define RELAY_STACK_SIZE (256 * 1024)
#define REFUSAL_LOG_MS   60000 /* one line a minute at most, with the count since the last */
/* a dead peer (a pod killed with its network, a server gone) ends its relay in about 2 min */
#define KEEPALIVE_IDLE_S  60
#define KEEPALIVE_INTVL_S 10
#define KEEPALIVE_COUNT   6

/* A peer's address, to count its connections. */
struct source {
        int family;
        unsigned char addr[16];
        unsigned conns;
};

struct xp_apiproxy {
        int listen_fd, stop_fd;
        struct sockaddr_storage target;
        socklen_t target_len;
        char where[320]; /* "listen -> target", for the log */
        pthread_t acceptor;
        pthread_mutex_t lock;
        pthread_cond_t idle;
        unsigned active; /* relaying threads */
        bool warned;     /* a failed connection to the server was logged since the last success */
        struct xp_apiproxy_admit admit;
        struct source sources[XP_APIPROXY_CONNS_MAX]; /* those with connections, in no order */
        size_t n_sources;
        int64_t refusal_logged_ms; /* when refusals were last logged, and how many since */
        unsigned refusals;
};

/* One direction of a relayed connection. */
struct flow {
        int from, to;
        size_t start, end;
        bool eof, shut;
        char buf[RELAY_BUF];
};

struct relay {
        struct xp_apiproxy *proxy;
        struct source from; /* the client's address (conns unused) */
        int client, server;
        struct flow up, down; /* client to server, server to client */
};

int xp_apiproxy_parse(const char *text, char ip[static 46], unsigned *port, struct xp_error *err)
{
        const char *colon = strrchr(text, ':');
        unsigned char bytes[16];
        size_t len = colon ? (size_t)(colon - text) : 0;
        bool v6 = len >= 2 && text[0] == '[' && text[len - 1] == ']';
        char *end;
        unsigned long value;

        if (!colon || len == 0 || len - (v6 ? 2 : 0) >= 46)
                goto bad;
        memcpy(ip, text + v6, len - 2 * v6);
        ip[len - 2 * v6] = '\0';
        if (inet_pton(v6 ? AF_INET6 : AF_INET, ip, bytes) != 1)
                goto bad;
        errno = 0;
        value = strtoul(colon + 1, &end, 10);
        if (colon[1] < '0' || colon[1] > '9' || *end || errno || value < 1 || value > 65535)
                goto bad;
        *port = (unsigned)value;
        return 0;
bad:
        return xp_errorf(err,
                         -EINVAL,
                         "--api-service-address '%s': expected IPv4:PORT (10.96.0.1:443) or "
                         "[IPv6]:PORT ([fd00:10:96::1]:443), or none",
                         text);
}

static int resolve(const char *host, unsigned port, struct xp_apiproxy *p, struct xp_error *err)
{
        struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *list = NULL;
        char service[8];
        int r;

        snprintf(service, sizeof(service), "%u", port);
        r = getaddrinfo(host, service, &hints, &list);
        if (r != 0)
                return xp_errorf(err,
                                 -EHOSTUNREACH,
                                 "cannot resolve the API server %s: %s",
                                 host,
                                 gai_strerror(r));
        memcpy(&p->target, list->ai_addr, list->ai_addrlen);
        p->target_len = list->ai_addrlen;
        freeaddrinfo(list);
        return 0;
}

/* The ends decide how their bytes are cut: a relay that held a small write back (Nagle's
 * algorithm) until the previous one is acknowledged would add a delayed ACK's 40 ms to every
 * request of a keep-alive connection. */
static void no_delay(int fd)
{
        int one = 1;

        (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/* A relay whose peer vanished without a word (a pod's namespace deleted, a host powered off)
 * would otherwise hold its thread and its slot of the source's connections forever. */
static void keep_alive(int fd)
{
        int one = 1, idle = KEEPALIVE_IDLE_S, intvl = KEEPALIVE_INTVL_S, count = KEEPALIVE_COUNT;

        (void)setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
        (void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
        (void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
        (void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof(count));
}

/* A non-blocking connection to the server, within CONNECT_MS; -1 on failure or stop. */
static int connect_server(struct xp_apiproxy *p)
{
        int fd = socket(p->target.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        struct pollfd pfd[2] = {{.fd = fd, .events = POLLOUT},
                                {.fd = p->stop_fd, .events = POLLIN}};
        int so_error = 0;
        socklen_t len = sizeof(so_error);

        if (fd < 0)
                return -1;
        no_delay(fd);
        keep_alive(fd);
        if (connect(fd, (struct sockaddr *)&p->target, p->target_len) == 0)
                return fd;
        if (errno == EINPROGRESS && poll(pfd, 2, CONNECT_MS) > 0 && !pfd[1].revents &&
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &so_error, &len) == 0 && so_error == 0)
                return fd;
        errno = so_error ? so_error : errno ? errno : ETIMEDOUT;
        close(fd);
        return -1;
}

/* Reads into and writes out of f as its sockets allow; false when the pair is to end. */
static bool flow_step(struct flow *f, short from_events, short to_events)
{
        if (!f->eof && f->end < RELAY_BUF && (from_events & (POLLIN | POLLHUP | POLLERR))) {
                ssize_t n = recv(f->from, f->buf + f->end, RELAY_BUF - f->end, 0);

                if (n == 0)
                        f->eof = true;
                else if (n > 0)
                        f->end += (size_t)n;
                else if (errno != EAGAIN && errno != EINTR)
                        return false;
        }
        if (f->end > f->start && (to_events & (POLLOUT | POLLERR))) {
                ssize_t n = send(f->to, f->buf + f->start, f->end - f->start, MSG_NOSIGNAL);

                if (n < 0 && errno != EAGAIN && errno != EINTR)
                        return false;
                if (n > 0)
                        f->start += (size_t)n;
                if (f->start == f->end)
                        f->start = f->end = 0;
        }
        if (f->eof && f->end == f->start && !f->shut) {
                shutdown(f->to, SHUT_WR);
                f->shut = true;
        }
        return true;
}

/* What fd is to be polled for: reading for the flow out of it, writing for the one into it. */
static short wanted(const struct flow *out, const struct flow *in)
{
        return (short)((!out->eof && out->end < RELAY_BUF ? POLLIN : 0) |
                       (in->end > in->start ? POLLOUT : 0));
}

static void relay_run(struct relay *r)
{
        for (;;) {
                short want_client = wanted(&r->up, &r->down),
                      want_server = wanted(&r->down, &r->up);
                /* an fd with nothing to wait for is left out: its POLLHUP would spin the loop */
                struct pollfd pfd[3] = {
                    {.fd = r->proxy->stop_fd, .events = POLLIN},
                    {.fd = want_client ? r->client : -1, .events = want_client},
                    {.fd = want_server ? r->server : -1, .events = want_server},
                };

                if (r->up.shut && r->down.shut)
                        return;
                if (poll(pfd, 3, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        return;
                }
                if (pfd[0].revents)
                        return;
                if (!flow_step(&r->up, pfd[1].revents, pfd[2].revents) ||
                    !flow_step(&r->down, pfd[2].revents, pfd[1].revents))
                        return;
        }
}

/* The entry of the source's connections, or NULL; under p->lock. */
static struct source *source_find(struct xp_apiproxy *p, const struct source *from)
{
        for (size_t i = 0; i < p->n_sources; i++)
                if (p->sources[i].family == from->family &&
                    memcmp(p->sources[i].addr, from->addr, sizeof(from->addr)) == 0)
                        return &p->sources[i];
        return NULL;
}

static void relay_done(struct relay *r)
{
        struct xp_apiproxy *p = r->proxy;
        struct source *s;

        close(r->client);
        if (r->server >= 0)
                close(r->server);
        pthread_mutex_lock(&p->lock);
        s = source_find(p, &r->from);
        if (s && --s->conns == 0)
                *s = p->sources[--p->n_sources];
        if (--p->active == 0)
                pthread_cond_broadcast(&p->idle);
        pthread_mutex_unlock(&p->lock);
        free(r);
}

static void *relay_thread(void *userdata)
{
        struct relay *r = userdata;
        struct xp_apiproxy *p = r->proxy;
        bool warn;
        int why;

        r->server = connect_server(p);
        why = errno;
        pthread_mutex_lock(&p->lock);
        warn = r->server < 0 && !p->warned;
        p->warned = r->server < 0;
        pthread_mutex_unlock(&p->lock);
        if (warn)
                xp_log(LOG_WARNING,
                       "agent: the pods' API address %s: cannot reach the API server: %s",
                       p->where,
                       strerror(why));
        if (r->server >= 0) {
                r->up = (struct flow){.from = r->client, .to = r->server};
                r->down = (struct flow){.from = r->server, .to = r->client};
                relay_run(r);
        }
        relay_done(r);
        return NULL;
}

/* Logs a refused connection, at most once every REFUSAL_LOG_MS: a flood of them would
 * otherwise flood the log. */
static void
refused(struct xp_apiproxy *p, const struct source *from, const char *why, unsigned most)
{
        int64_t now = xp_monotonic_ms();
        char text[INET6_ADDRSTRLEN] = "?", limit[16] = "";
        unsigned more;
        bool log;

        pthread_mutex_lock(&p->lock);
        p->refusals++;
        log = p->refusal_logged_ms == 0 || now - p->refusal_logged_ms >= REFUSAL_LOG_MS;
        more = p->refusals - 1;
        if (log) {
                p->refusal_logged_ms = now;
                p->refusals = 0;
        }
        pthread_mutex_unlock(&p->lock);
        if (!log)
                return;
        inet_ntop(from->family, from->addr, text, sizeof(text));
        if (most)
                snprintf(limit, sizeof(limit), " (%u)", most);
        xp_log(LOG_WARNING,
               "agent: the pods' API address %s: refused a connection from %s: %s%s (and %u more "
               "refused since the last such line; docs/networking.md)",
               p->where,
               text,
               why,
               limit,
               more);
}

/* Room for one more connection from `from`: under the total and under its own share, so that
 * one pod cannot take every other pod's way to the server. NULL when there is room; else why
 * not, with *most the limit reached. */
static const char *take_slot(struct xp_apiproxy *p, const struct source *from, unsigned *most)
{
        struct source *s;
        const char *full = NULL;

        pthread_mutex_lock(&p->lock);
        s = source_find(p, from);
        if (p->active >= XP_APIPROXY_CONNS_MAX) {
                full = "the forwarder has its most connections";
                *most = XP_APIPROXY_CONNS_MAX;
        } else if (s && s->conns >= XP_APIPROXY_SOURCE_CONNS_MAX) {
                full = "that address has its most connections";
                *most = XP_APIPROXY_SOURCE_CONNS_MAX;
        }
        if (!full) {
                if (!s) {
                        s = &p->sources[p->n_sources++];
                        *s = *from;
                        s->conns = 0;
                }
                s->conns++;
                p->active++;
        }
        pthread_mutex_unlock(&p->lock);
        return full;
}

/* A thread for the accepted connection fd from `from`, or fd closed when there is no room. */
static void relay_start(struct xp_apiproxy *p, int fd, const struct source *from)
{
        struct relay *r = malloc(sizeof(*r));
        unsigned most = 0;
        const char *full = r ? take_slot(p, from, &most) : "out of memory";
        pthread_attr_t attr;
        pthread_t thread;

        if (full) {
                refused(p, from, full, most);
                free(r);
                close(fd);
                return;
        }
        *r = (struct relay){.proxy = p, .from = *from, .client = fd, .server = -1};
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        pthread_attr_setstacksize(&attr, RELAY_STACK_SIZE);
        if (pthread_create(&thread, &attr, relay_thread, r) != 0)
                relay_done(r);
        pthread_attr_destroy(&attr);
}

/* The connection fd's peer, admitted or refused (and fd closed): false when refused. */
static bool admit(struct xp_apiproxy *p, int fd, struct source *from)
{
        struct sockaddr_storage ss = {0};
        socklen_t len = sizeof(ss);
        bool ok = getpeername(fd, (struct sockaddr *)&ss, &len) == 0 &&
                  xp_apiproxy_admit_peer(&p->admit, (struct sockaddr *)&ss);

        *from = (struct source){.family = ss.ss_family};
        if (ss.ss_family == AF_INET6)
                memcpy(from->addr, &((struct sockaddr_in6 *)&ss)->sin6_addr, 16);
        else
                memcpy(from->addr, &((struct sockaddr_in *)&ss)->sin_addr, 4);
        if (ok)
                return true;
        refused(p, from, "neither the pod network nor the node", 0);
        close(fd);
        return false;
}

static void *accept_thread(void *userdata)
{
        struct xp_apiproxy *p = userdata;

        for (;;) {
                struct pollfd pfd[2] = {{.fd = p->listen_fd, .events = POLLIN},
                                        {.fd = p->stop_fd, .events = POLLIN}};
                struct source from;
                int fd;

                if (poll(pfd, 2, -1) < 0 && errno != EINTR)
                        break;
                if (pfd[1].revents)
                        break;
                if (!pfd[0].revents)
                        continue;
                fd = accept4(p->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
                /* out of descriptors or memory: the connection waits in the backlog a while
                 * rather than the loop spinning on it */
                if (fd < 0 &&
                    (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM))
                        (void)poll(&pfd[1], 1, 100);
                if (fd < 0 || !admit(p, fd, &from))
                        continue;
                no_delay(fd);
                keep_alive(fd);
                relay_start(p, fd, &from);
        }
        return NULL;
}

static int listen_on(const char *ip, unsigned port, struct xp_apiproxy *p, struct xp_error *err)
{
        struct sockaddr_storage ss = {0};
        struct sockaddr_in *in = (struct sockaddr_in *)&ss;
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
        bool v6 = strchr(ip, ':') != NULL;
        int one = 1;

        if (v6) {
                in6->sin6_family = AF_INET6;
                in6->sin6_port = htons((uint16_t)port);
                inet_pton(AF_INET6, ip, &in6->sin6_addr);
        } else {
                in->sin_family = AF_INET;
                in->sin_port = htons((uint16_t)port);
                inet_pton(AF_INET, ip, &in->sin_addr);
        }
        p->listen_fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (p->listen_fd < 0 ||
            setsockopt(p->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
            bind(p->listen_fd,
                 (struct sockaddr *)&ss,
                 v6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in)) < 0 ||
            listen(p->listen_fd, 128) < 0)
                return xp_errorf(err, -errno, "cannot listen on %s: %m", p->where);
        return 0;
}

int xp_apiproxy_start(const char *listen_ip,
                      unsigned listen_port,
                      const char *target_host,
                      unsigned target_port,
                      const char *const *allow,
                      struct xp_apiproxy **ret,
                      struct xp_error *err)
{
        struct xp_apiproxy *p = calloc(1, sizeof(*p));
        bool v6 = strchr(listen_ip, ':') != NULL, tv6 = strchr(target_host, ':') != NULL;
        int r;

        if (!p)
                return -ENOMEM;
        p->listen_fd = -1;
        pthread_mutex_init(&p->lock, NULL);
        pthread_cond_init(&p->idle, NULL);
        snprintf(p->where,
                 sizeof(p->where),
                 "%s%s%s:%u (to %s%s%s:%u)",
                 v6 ? "[" : "",
                 listen_ip,
                 v6 ? "]" : "",
                 listen_port,
                 tv6 ? "[" : "",
                 target_host,
                 tv6 ? "]" : "",
                 target_port);
        p->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        r = p->stop_fd < 0 ? xp_errorf(err, -errno, "eventfd: %m") : 0;
        if (r >= 0)
                r = xp_apiproxy_admit_init(&p->admit, allow, err);
        if (r >= 0)
                r = resolve(target_host, target_port, p, err);
        if (r >= 0)
                r = listen_on(listen_ip, listen_port, p, err);
        if (r >= 0 && (r = -pthread_create(&p->acceptor, NULL, accept_thread, p)) < 0)
                xp_errorf(err, r, "cannot start the forwarder's thread: %s", strerror(-r));
        if (r < 0) {
                if (p->listen_fd >= 0)
                        close(p->listen_fd);
                if (p->stop_fd >= 0)
                        close(p->stop_fd);
                pthread_mutex_destroy(&p->lock);
                pthread_cond_destroy(&p->idle);
                free(p);
                return r;
        }
        *ret = p;
        return 0;
}

unsigned xp_apiproxy_port(const struct xp_apiproxy *p)
{
        struct sockaddr_storage ss;
        socklen_t len = sizeof(ss);

        if (getsockname(p->listen_fd, (struct sockaddr *)&ss, &len) < 0)
                return 0;
        return ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                              : ((struct sockaddr_in *)&ss)->sin_port);
}

void xp_apiproxy_stop(struct xp_apiproxy *p)
{
        uint64_t one = 1;

        if (!p)
                return;
        if (write(p->stop_fd, &one, sizeof(one)) < 0)
                xp_log(LOG_WARNING, "agent: stopping the pods' API address: %m");
        pthread_join(p->acceptor, NULL);
        close(p->listen_fd);
        pthread_mutex_lock(&p->lock);
        while (p->active > 0)
                pthread_cond_wait(&p->idle, &p->lock);
        pthread_mutex_unlock(&p->lock);
        close(p->stop_fd);
        pthread_mutex_destroy(&p->lock);
        pthread_cond_destroy(&p->idle);
        free(p);
}
