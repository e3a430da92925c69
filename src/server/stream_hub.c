/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The stream hub (stream_hub.h): a few threads for every watch of the server. The listener waits
 * on the store and, for each write, nudges the writers through their eventfds; each writer, in
 * epoll_wait() on its eventfd and on the sockets it could not finish writing, asks each of its
 * streams for its news and writes them. While no stream is served the listener rests on the hub's
 * own condition instead: woken by every commit to pass news to nobody, it cost a context switch
 * and three or four futex calls per commit of a server without watches (bench_api's creates).
 * A stream that arrives meanwhile misses nothing: the listener's version is still the one it last
 * passed on, so its first wait on the store returns at once with what was written since.
 *
 * Why: with a thread per watch, each commit woke every watch's thread (a futex, a context switch,
 * libmicrohttpd's poll() and a send() each): 200 watches of 1,000 creates/s cost more CPU than
 * the creates. Here a commit costs a wake-up of each writer, which then makes one pass.
 *
 * Gathering: with many streams (HUB_GATHER_STREAMS), the listener passes news on at most every
 * HUB_GATHER_MS while writes keep coming, so that a stream of writes goes out in few passes, each
 * write() carrying several events. A write after a quiet spell goes out at once; one in a stream
 * waits up to HUB_GATHER_MS. With few streams (a small cluster's agents) every commit goes out at
 * once: a pod's bind right after its create is not held back.
 *
 * A socket is written without blocking (MSG_DONTWAIT; a TLS session's socket is made
 * non-blocking while the hub holds it, and a record gnutls could not finish is sent again with
 * the same bytes, as gnutls asks). Over plain TCP a chunk's head, data and tail go in one
 * sendmsg() from the stream's own buffer; only what the socket did not take is copied. A stream
 * with bytes left waits for EPOLLOUT and is asked for nothing more meanwhile: its watch stays
 * where it read the log to, as a blocked send() kept it before; once they went it is asked at
 * once. EPOLLRDHUP, EPOLLHUP or EPOLLERR: the client went away, the stream ends.
 *
 * Fairness: a stream is asked at most HUB_PASS_PUMPS times, for HUB_PASS_BYTES, per pass; one
 * with more (a watch's initial state) is due again at once and goes last in the next pass, so
 * that its backlog does not hold back the news of the writer's other streams.
 */
#include <errno.h>
#include <fcntl.h>
#include <gnutls/gnutls.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "stream_hub.h"
#include "xpool/store.h"
#include "xpool/timeutil.h"

#define HUB_WAKE_MS        1000 /* longest sleep of the writer: a stopping server is noticed */
#define HUB_LISTEN_MS      250  /* longest wait of the listener: the hub's stop is noticed */
#define HUB_GATHER_MS      25
#define HUB_GATHER_STREAMS 32
#define HUB_EVENTS         64
/* Fairness: a stream with a backlog (a watch's initial state of every pod) is asked at most this
 * often and given at most this many bytes per pass, then waits for the writer's other streams;
 * the rest goes out in the next pass, which comes at once. */
#define HUB_PASS_PUMPS 8
#define HUB_PASS_BYTES (512 * 1024)
/* Several writers, not one: the streams' passes (each a read of the log and a send()) run on
 * every core, and on a busy machine the server's watches are not held to one thread's share of
 * the CPU (one thread fell seconds behind 200 watches at a load average of 30 on 2 cores). A
 * writer without streams sleeps; each stream goes to the writer with the fewest. */
#define HUB_WRITERS    16
#define HUB_CHUNK_HEAD (2 * sizeof(size_t) + 2) /* hex digits and CRLF */

struct hub_stream {
        struct hub_writer *writer;
        int fd;
        gnutls_session_t tls;
        int fd_flags;      /* as the connection had them, put back at the end */
        int cork, nodelay; /* likewise: libmicrohttpd keeps its own account of them */
        stream_pump_fn pump;
        void *state;
        char *out; /* framed chunks not yet written */
        size_t len, off, cap;
        int64_t due_ms;
        bool gone;          /* the socket hung up */
        bool ending;        /* the pump said the end: done once out is written */
        bool want_out;      /* registered for EPOLLOUT */
        bool capped;        /* held back by the pass's caps: last in the next pass */
        int64_t stalled_ms; /* when the socket last took nothing (0: it takes what it is given) */
        /* under the hub's lock */
        bool done;
        int result;
        pthread_cond_t finished;
        struct hub_stream *next;
};

/* A writer's thread and the streams it writes. */
struct hub_writer {
        struct stream_hub *hub;
        int epfd, wakefd;
        pthread_t thread;
        bool started;
        atomic_size_t n_streams;
        struct hub_stream *arriving; /* under the hub's lock: handed over, not yet taken */
        struct hub_stream *streams;  /* the writer's own */
};

struct stream_hub {
        struct xp_store *store;
        const atomic_bool *stopping;
        pthread_t listener;
        bool listener_started;
        atomic_bool stop;
        int64_t stall_ms; /* a client that takes nothing for this long is dropped */
        atomic_size_t n_streams;
        _Atomic uint64_t version; /* the store's, as the listener last passed it on */
        atomic_bool listening;    /* the listener waits on the store, not resting */
        pthread_mutex_t lock;
        pthread_cond_t stream_came; /* a stream arrived, or the hub closed: the listener goes on */
        bool closed;                /* under lock: no stream is taken any more */
        struct hub_writer writers[HUB_WRITERS];
};

static void wake(struct hub_writer *w)
{
        uint64_t one = 1;

        if (write(w->wakefd, &one, sizeof one) < 0) {
                /* the counter is full: the writer has a wake-up pending anyway */
        }
}

/* ---- the listener --------------------------------------------------------------------------- */

/* Lets a stream of writes gather before it is passed on, when many streams would each be asked. */
static void gather(struct stream_hub *hub, int64_t passed_ms)
{
        int64_t wait_ms = passed_ms + HUB_GATHER_MS - xp_monotonic_ms();
        struct timespec ts = {.tv_nsec = wait_ms * 1000000L};

        if (wait_ms > 0 && wait_ms <= HUB_GATHER_MS &&
            atomic_load(&hub->n_streams) >= HUB_GATHER_STREAMS)
                nanosleep(&ts, NULL);
}

/* Waits while no stream is served: nothing to pass news to. */
static void rest_without_streams(struct stream_hub *hub)
{
        pthread_mutex_lock(&hub->lock);
        while (atomic_load(&hub->n_streams) == 0 && !hub->closed) {
                atomic_store(&hub->listening, false);
                pthread_cond_wait(&hub->stream_came, &hub->lock);
        }
        atomic_store(&hub->listening, true);
        pthread_mutex_unlock(&hub->lock);
}

static void *listen_store(void *arg)
{
        struct stream_hub *hub = arg;
        /* from the version the hub was made at, not the store's when this thread first runs: a
         * write between the two (a busy machine may start the thread late) woke no writer, and
         * a stream that had its start by then waited for the next write to have its news */
        uint64_t version = atomic_load(&hub->version);
        int64_t passed_ms = 0;

        while (!atomic_load(&hub->stop)) {
                rest_without_streams(hub);
                if (xp_store_wait(hub->store, version, HUB_LISTEN_MS) <= 0)
                        continue;
                gather(hub, passed_ms);
                version = xp_store_version(hub->store);
                atomic_store(&hub->version, version);
                passed_ms = xp_monotonic_ms();
                for (size_t i = 0; i < HUB_WRITERS; i++)
                        if (atomic_load(&hub->writers[i].n_streams) > 0)
                                wake(&hub->writers[i]);
        }
        return NULL;
}

/* ---- the writer ----------------------------------------------------------------------------- */

static void watch_socket(struct hub_stream *s, bool want_out)
{
        struct epoll_event ev = {
            .events = EPOLLRDHUP | (want_out ? EPOLLOUT : 0),
            .data.ptr = s,
        };

        if (s->want_out == want_out)
                return;
        s->want_out = want_out;
        epoll_ctl(s->writer->epfd, EPOLL_CTL_MOD, s->fd, &ev);
}

/* Writes what it can of s->out: 1 when all of it went, 0 when the socket is full, -EPIPE. */
static int flush(struct hub_stream *s)
{
        while (s->off < s->len) {
                ssize_t n;

                if (s->tls) {
                        n = gnutls_record_send(s->tls, s->out + s->off, s->len - s->off);
                        if (n == GNUTLS_E_AGAIN || n == GNUTLS_E_INTERRUPTED)
                                return 0;
                        if (n < 0)
                                return -EPIPE;
                } else {
                        n = send(
                            s->fd, s->out + s->off, s->len - s->off, MSG_NOSIGNAL | MSG_DONTWAIT);
                        if (n < 0 && errno == EINTR)
                                continue;
                        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                                return 0;
                        if (n < 0)
                                return -EPIPE;
                }
                s->off += (size_t)n;
                s->stalled_ms = 0; /* it took some: the stall counts from here */
        }
        s->off = s->len = 0;
        return 1;
}

/* Room for need bytes in s->out. */
static int reserve(struct hub_stream *s, size_t need)
{
        char *out;

        if (need <= s->cap)
                return 0;
        out = realloc(s->out, need);
        if (!out)
                return -ENOMEM;
        s->out = out;
        s->cap = need;
        return 0;
}

/* Keeps in s->out (empty) what the socket did not take of iov, the first sent bytes gone. */
static int keep_rest(struct hub_stream *s, const struct iovec *iov, size_t n_iov, size_t sent)
{
        size_t need = 0;

        for (size_t i = 0; i < n_iov; i++)
                need += iov[i].iov_len;
        if (reserve(s, need - sent) < 0)
                return -ENOMEM;
        s->off = s->len = 0;
        for (size_t i = 0; i < n_iov; i++) {
                size_t skip = sent < iov[i].iov_len ? sent : iov[i].iov_len;

                memcpy(
                    s->out + s->len, (const char *)iov[i].iov_base + skip, iov[i].iov_len - skip);
                s->len += iov[i].iov_len - skip;
                sent -= skip;
        }
        return 0;
}

/*
 * Sends data as one chunk (s->out is empty): 1 when all of it went, 0 when the socket is full (the
 * rest waits in s->out), -EPIPE, -ENOMEM. Over plain TCP the head, the data and the tail go in one
 * sendmsg() straight from the stream's buffer: only what the socket does not take is copied.
 */
static int send_chunk(struct hub_stream *s, const char *data, size_t len)
{
        char head[HUB_CHUNK_HEAD + 1];
        struct iovec iov[3] = {
            {head, (size_t)snprintf(head, sizeof head, "%zx\r\n", len)},
            {(void *)data, len},
            {"\r\n", 2},
        };
        struct msghdr msg = {.msg_iov = iov, .msg_iovlen = 3};
        ssize_t n;

        if (s->tls) {
                /* a record gnutls could not finish is sent again with the same bytes: they stay */
                int r = keep_rest(s, iov, 3, 0);

                return r < 0 ? r : flush(s);
        }
        do
                n = sendmsg(s->fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
        while (n < 0 && errno == EINTR);
        if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
                return -EPIPE;
        if (n > 0)
                s->stalled_ms = 0;
        if (n == (ssize_t)(iov[0].iov_len + len + 2))
                return 1;
        return keep_rest(s, iov, 3, n > 0 ? (size_t)n : 0) < 0 ? -ENOMEM : 0;
}

/*
 * The socket as the hub writes it: each pass's chunk leaves at once (a cork that libmicrohttpd
 * left after the head, or Nagle waiting for an ACK, would hold it back), and a TLS session's
 * socket without blocking, as a plain one is written (MSG_DONTWAIT).
 */
static void socket_take(struct hub_stream *s)
{
        socklen_t len = sizeof(int);
        int off = 0, on = 1;

        s->fd_flags = fcntl(s->fd, F_GETFL);
        if (s->tls && s->fd_flags >= 0)
                fcntl(s->fd, F_SETFL, s->fd_flags | O_NONBLOCK);
        if (getsockopt(s->fd, IPPROTO_TCP, TCP_CORK, &s->cork, &len) < 0)
                s->cork = -1; /* not TCP (a test's socket pair): nothing to change */
        len = sizeof(int);
        if (getsockopt(s->fd, IPPROTO_TCP, TCP_NODELAY, &s->nodelay, &len) < 0)
                s->nodelay = -1;
        if (s->cork > 0)
                setsockopt(s->fd, IPPROTO_TCP, TCP_CORK, &off, sizeof off);
        if (s->nodelay == 0)
                setsockopt(s->fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
}

static void socket_restore(struct hub_stream *s)
{
        if (s->tls && s->fd_flags >= 0)
                fcntl(s->fd, F_SETFL, s->fd_flags);
        if (s->cork > 0)
                setsockopt(s->fd, IPPROTO_TCP, TCP_CORK, &s->cork, sizeof s->cork);
        if (s->nodelay == 0)
                setsockopt(s->fd, IPPROTO_TCP, TCP_NODELAY, &s->nodelay, sizeof s->nodelay);
}

/* The stream is done: its thread goes on. The writer does not touch s after this. */
static void finish(struct hub_stream *s, int result)
{
        struct hub_writer *w = s->writer;
        struct stream_hub *hub = w->hub;

        epoll_ctl(w->epfd, EPOLL_CTL_DEL, s->fd, NULL);
        socket_restore(s);
        for (struct hub_stream **at = &w->streams; *at; at = &(*at)->next)
                if (*at == s) {
                        *at = s->next;
                        break;
                }
        atomic_fetch_sub(&w->n_streams, 1);
        atomic_fetch_sub(&hub->n_streams, 1);
        pthread_mutex_lock(&hub->lock);
        s->result = result;
        s->done = true;
        pthread_cond_signal(&s->finished);
        pthread_mutex_unlock(&hub->lock);
}

/*
 * Asks the stream for what is due and writes it: 1 to go on, 2 when the pass's caps held it back
 * (it is due again at once), 0 when it ended, -errno.
 */
static int serve_pass(struct hub_stream *s, bool news, int64_t now)
{
        const char *data;
        size_t len, given = 0;
        int r, pumps = 0;

        if (s->off < s->len) {
                r = flush(s);
                if (r <= 0) {
                        watch_socket(s, r == 0);
                        return r < 0 ? r : 1;
                }
                watch_socket(s, false);
                /* it was asked nothing while its bytes waited: what came meanwhile is due now,
                 * not at the due time it gave before (up to HUB_WAKE_MS later, or never) */
                s->due_ms = now;
        }
        if (s->ending)
                return 0;
        /* a stream that filled a chunk may have more: its due time says so */
        while (news || now >= s->due_ms) {
                if (pumps++ == HUB_PASS_PUMPS || given >= HUB_PASS_BYTES)
                        return 2;
                news = false;
                r = s->pump(s->state, now, &data, &len, &s->due_ms);
                if (r <= 0)
                        return r;
                if (len == 0)
                        break;
                given += len;
                r = send_chunk(s, data, len);
                if (r <= 0) {
                        watch_socket(s, r == 0);
                        return r < 0 ? r : 1;
                }
        }
        return 1;
}

/* Takes the streams handed over since the last pass. */
static void take_arriving(struct hub_writer *w, int64_t now)
{
        struct hub_stream *s, *next;

        pthread_mutex_lock(&w->hub->lock);
        s = w->arriving;
        w->arriving = NULL;
        pthread_mutex_unlock(&w->hub->lock);
        for (; s; s = next) {
                struct epoll_event ev = {.events = EPOLLRDHUP, .data.ptr = s};

                next = s->next;
                s->next = w->streams;
                w->streams = s;
                s->due_ms = now; /* what the stream has from its start goes out at once */
                socket_take(s);
                if (epoll_ctl(w->epfd, EPOLL_CTL_ADD, s->fd, &ev) < 0)
                        s->gone = true;
        }
}

/* Whether the client has taken nothing of what is due for the hub's stall limit. */
static bool stalled(struct hub_stream *s, int64_t now)
{
        if (!s->want_out) {
                s->stalled_ms = 0;
                return false;
        }
        if (s->stalled_ms == 0)
                s->stalled_ms = now;
        return now - s->stalled_ms >= s->writer->hub->stall_ms;
}

/* Round robin: the streams the caps held back go last in the next pass, after the others. */
static void capped_last(struct hub_writer *w)
{
        struct hub_stream *first = NULL, **tail = &first, *capped = NULL, **capped_tail = &capped;

        for (struct hub_stream *s = w->streams, *next; s; s = next) {
                next = s->next;
                s->next = NULL;
                if (s->capped) {
                        s->capped = false;
                        *capped_tail = s;
                        capped_tail = &s->next;
                } else {
                        *tail = s;
                        tail = &s->next;
                }
        }
        *tail = capped;
        w->streams = first;
}

/* One pass over the streams: each that has news, falls due or may write again. */
static int64_t pass(struct hub_writer *w, bool news, bool stopping)
{
        int64_t now = xp_monotonic_ms(), next_ms = now + HUB_WAKE_MS;
        struct hub_stream *s, *next;

        take_arriving(w, now);
        for (s = w->streams; s; s = next) {
                int r;

                next = s->next;
                if (s->gone) {
                        finish(s, -EPIPE);
                        continue;
                }
                if (stopping) {
                        /* bytes left unsent: an error, so that no end of stream follows half a
                         * chunk (nor a TLS record gnutls still holds) */
                        finish(s, s->off < s->len ? -EPIPE : 0);
                        continue;
                }
                if (stalled(s, now)) {
                        finish(s, -ETIMEDOUT);
                        continue;
                }
                r = serve_pass(s, news, now);
                s->capped = r == 2;
                if (r == 0 && s->off < s->len)
                        s->ending = true; /* the last bytes first */
                else if (r <= 0) {
                        finish(s, r);
                        continue;
                }
                if (!s->want_out && s->due_ms < next_ms)
                        next_ms = s->due_ms;
        }
        capped_last(w);
        return next_ms;
}

static void *write_streams(void *arg)
{
        struct hub_writer *w = arg;
        struct stream_hub *hub = w->hub;
        struct epoll_event events[HUB_EVENTS];
        uint64_t seen = atomic_load(&hub->version);
        int64_t next_ms = xp_monotonic_ms();
        sigset_t pipe;

        /* a write to a socket the client closed is an error, not the end of the server */
        sigemptyset(&pipe);
        sigaddset(&pipe, SIGPIPE);
        pthread_sigmask(SIG_BLOCK, &pipe, NULL);
        for (;;) {
                int64_t wait_ms = next_ms - xp_monotonic_ms();
                uint64_t version;
                bool stopping;
                int n;

                /* a writer without streams sleeps until one is handed over, or the hub stops */
                if (!w->streams)
                        wait_ms = -1;
                else if (wait_ms < 0)
                        wait_ms = 0;
                n = epoll_wait(w->epfd, events, HUB_EVENTS, (int)wait_ms);
                for (int i = 0; i < n; i++) {
                        struct hub_stream *s = events[i].data.ptr;
                        uint64_t count;

                        if (!s) {
                                if (read(w->wakefd, &count, sizeof count) < 0) {
                                        /* nothing to read: another pass drained it */
                                }
                        } else if (events[i].events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
                                s->gone = true;
                        }
                }
                version = atomic_load(&hub->version);
                stopping = atomic_load(&hub->stop) || atomic_load(hub->stopping);
                next_ms = pass(w, version != seen, stopping);
                seen = version;
                if (atomic_load(&hub->stop)) {
                        pass(w, false, true); /* those handed over meanwhile */
                        return NULL;
                }
        }
}

/* ---- the hub -------------------------------------------------------------------------------- */

static int writer_start(struct stream_hub *hub, struct hub_writer *w)
{
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};

        w->hub = hub;
        w->epfd = epoll_create1(EPOLL_CLOEXEC);
        w->wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (w->epfd < 0 || w->wakefd < 0 || epoll_ctl(w->epfd, EPOLL_CTL_ADD, w->wakefd, &ev) < 0)
                return -errno;
        if (pthread_create(&w->thread, NULL, write_streams, w) != 0)
                return -EAGAIN;
        w->started = true;
        return 0;
}

int stream_hub_new(struct xp_store *store,
                   const atomic_bool *stopping,
                   int64_t stall_ms,
                   struct stream_hub **ret)
{
        struct stream_hub *hub = calloc(1, sizeof *hub);
        int r = 0;

        if (!hub)
                return -ENOMEM;
        hub->store = store;
        hub->stopping = stopping;
        hub->stall_ms = stall_ms > 0 ? stall_ms : STREAM_HUB_STALL_MS;
        pthread_mutex_init(&hub->lock, NULL);
        pthread_cond_init(&hub->stream_came, NULL);
        atomic_store(&hub->version, xp_store_version(store));
        atomic_store(&hub->listening, true);
        for (size_t i = 0; i < HUB_WRITERS; i++)
                hub->writers[i].epfd = hub->writers[i].wakefd = -1;
        for (size_t i = 0; i < HUB_WRITERS && r >= 0; i++)
                r = writer_start(hub, &hub->writers[i]);
        if (r >= 0)
                r = -pthread_create(&hub->listener, NULL, listen_store, hub);
        if (r < 0) {
                stream_hub_stop(hub);
                stream_hub_free(hub);
                return r;
        }
        hub->listener_started = true;
        *ret = hub;
        return 0;
}

void stream_hub_stop(struct stream_hub *hub)
{
        if (!hub)
                return;
        pthread_mutex_lock(&hub->lock);
        hub->closed = true;
        pthread_cond_signal(&hub->stream_came);
        pthread_mutex_unlock(&hub->lock);
        if (atomic_exchange(&hub->stop, true))
                return;
        for (size_t i = 0; i < HUB_WRITERS; i++)
                if (hub->writers[i].started) {
                        wake(&hub->writers[i]);
                        pthread_join(hub->writers[i].thread, NULL);
                }
        if (hub->listener_started)
                pthread_join(hub->listener, NULL);
}

void stream_hub_free(struct stream_hub *hub)
{
        if (!hub)
                return;
        for (size_t i = 0; i < HUB_WRITERS; i++) {
                if (hub->writers[i].epfd >= 0)
                        close(hub->writers[i].epfd);
                if (hub->writers[i].wakefd >= 0)
                        close(hub->writers[i].wakefd);
        }
        pthread_cond_destroy(&hub->stream_came);
        pthread_mutex_destroy(&hub->lock);
        free(hub);
}

/* The writer with the fewest streams. */
static struct hub_writer *least_busy(struct stream_hub *hub)
{
        struct hub_writer *best = &hub->writers[0];

        for (size_t i = 1; i < HUB_WRITERS; i++)
                if (atomic_load(&hub->writers[i].n_streams) < atomic_load(&best->n_streams))
                        best = &hub->writers[i];
        return best;
}

int stream_hub_serve(struct stream_hub *hub, int fd, void *tls, stream_pump_fn pump, void *state)
{
        struct hub_stream s = {.fd = fd, .tls = tls, .pump = pump, .state = state};
        int r;

        pthread_cond_init(&s.finished, NULL);
        pthread_mutex_lock(&hub->lock);
        if (hub->closed) {
                pthread_mutex_unlock(&hub->lock);
                pthread_cond_destroy(&s.finished);
                return -ESHUTDOWN;
        }
        s.writer = least_busy(hub);
        s.next = s.writer->arriving;
        s.writer->arriving = &s;
        atomic_fetch_add(&s.writer->n_streams, 1);
        atomic_fetch_add(&hub->n_streams, 1);
        pthread_cond_signal(&hub->stream_came);
        pthread_mutex_unlock(&hub->lock);
        wake(s.writer);
        pthread_mutex_lock(&hub->lock);
        while (!s.done)
                pthread_cond_wait(&s.finished, &hub->lock);
        r = s.result;
        pthread_mutex_unlock(&hub->lock);
        pthread_cond_destroy(&s.finished);
        free(s.out);
        return r;
}

bool stream_hub_listening(struct stream_hub *hub)
{
        return atomic_load(&hub->listening);
}
