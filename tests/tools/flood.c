/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Helper of tests/integration/19-floods.sh: floods an HTTP endpoint on loopback and measures
 * whether a normal request still gets through.
 *
 *   flood URL MODE COUNT SECONDS [--token T] [--probes N] [--probe-path P] [--trickle S]
 *        [--reopen S]
 *
 * URL is http:// or https:// on a loopback address (nothing else is accepted); TLS certificates
 * are not verified (a flood needs no trust). MODE:
 *   idle       COUNT TCP connections that send nothing;
 *   slowloris  COUNT connections that send a request line, then one header line every --trickle
 *              seconds (20), never ending the head;
 *   watch      COUNT watches (GET /api/v1/namespaces/default/pods?watch=true) with --token,
 *              once each; those answered 200 are held open, the others counted by code.
 * (idle and slowloris: a connection the server closes is opened again --reopen seconds later,
 * 0.5 by default, so the flood keeps COUNT going without turning into a busy loop.)
 * For SECONDS seconds, and meanwhile --probes normal requests (GET --probe-path with --token,
 * 20 by default), each on a new connection (TCP, TLS handshake, request, whole answer), spread
 * over the flood after its connections are open. Prints one line of figures for the flood and
 * one for the probes (latency from connect to the answer's last byte). Every wait is bounded:
 * connections and answers time out after 5 s. Exit status 0, or 2 on bad usage and 1 when the
 * flood could not start.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <gnutls/gnutls.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define IO_TIMEOUT_S 5
#define COUNT_MAX    10000
#define PROBES_MAX   1000
#define RAMP_MAX_S   3.0 /* probes start once every connection is up, or after this */

enum mode {
        MODE_IDLE,
        MODE_SLOWLORIS,
        MODE_WATCH
};

struct conn {
        int fd;
        gnutls_session_t tls;
        double opened; /* seconds since the start */
        double trickled;
        double closed;   /* when the server closed it (0: never) */
        bool connecting; /* idle: the connect is under way */
        bool held;       /* established */
};

static struct sockaddr_storage addr;
static socklen_t addr_len;
static bool use_tls;
static gnutls_certificate_credentials_t creds;
static const char *token = "", *probe_path = "/api/v1/namespaces/default/pods";
static double start_time;

static double now_s(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double since_start(void)
{
        return now_s() - start_time;
}

/* ---- connections ---------------------------------------------------------------------------- */

static void conn_close(struct conn *c)
{
        c->connecting = false;
        if (c->tls)
                gnutls_deinit(c->tls);
        if (c->fd >= 0)
                close(c->fd);
        c->tls = NULL;
        c->fd = -1;
        c->held = false;
}

/* Connects (and shakes hands): 0, or -1 with c closed. */
static int conn_open(struct conn *c, bool handshake)
{
        struct timeval tv = {.tv_sec = IO_TIMEOUT_S};
        int one = 1, r;

        /* An idle connection never waits for its connect: a server that stopped accepting
         * must not stall the flood. */
        c->fd =
            socket(addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC | (handshake ? 0 : SOCK_NONBLOCK), 0);
        c->tls = NULL;
        if (c->fd < 0)
                return -1;
        setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        setsockopt(c->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
        setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (connect(c->fd, (struct sockaddr *)&addr, addr_len) < 0 &&
            !(!handshake && errno == EINPROGRESS)) {
                conn_close(c);
                return -1;
        }
        c->opened = since_start();
        if (!handshake)
                return 0;
        if (!use_tls)
                return 0;
        if (gnutls_init(&c->tls, GNUTLS_CLIENT) < 0) {
                c->tls = NULL;
                conn_close(c);
                return -1;
        }
        gnutls_set_default_priority(c->tls);
        gnutls_credentials_set(c->tls, GNUTLS_CRD_CERTIFICATE, creds);
        gnutls_transport_set_int(c->tls, c->fd);
        do
                r = gnutls_handshake(c->tls);
        while (r < 0 && !gnutls_error_is_fatal(r));
        if (r < 0) {
                conn_close(c);
                return -1;
        }
        return 0;
}

static int conn_send(struct conn *c, const char *buf, size_t len)
{
        while (len > 0) {
                ssize_t n = c->tls ? gnutls_record_send(c->tls, buf, len)
                                   : send(c->fd, buf, len, MSG_NOSIGNAL);

                if (n <= 0)
                        return -1;
                buf += n;
                len -= (size_t)n;
        }
        return 0;
}

static ssize_t conn_recv(struct conn *c, char *buf, size_t len)
{
        ssize_t n;

        do
                n = c->tls ? gnutls_record_recv(c->tls, buf, len) : recv(c->fd, buf, len, 0);
        while (c->tls && (n == GNUTLS_E_AGAIN || n == GNUTLS_E_INTERRUPTED));
        return n;
}

/* Reads an answer's head into buf (NUL-terminated): its length, or -1. */
static ssize_t read_head(struct conn *c, char *buf, size_t size)
{
        size_t len = 0;

        while (len + 1 < size) {
                ssize_t n = conn_recv(c, buf + len, size - 1 - len);
                char *end;

                if (n <= 0)
                        return -1;
                len += (size_t)n;
                buf[len] = '\0';
                end = strstr(buf, "\r\n\r\n");
                if (end)
                        return (ssize_t)len;
        }
        return -1;
}

/* The status code of a head, or -1. */
static int status_of(const char *head)
{
        int code;

        return sscanf(head, "HTTP/1.%*d %d", &code) == 1 ? code : -1;
}

/* ---- probes: normal requests ---------------------------------------------------------------- */

struct probes {
        int count;
        atomic_bool ramped; /* the flood is up: first_at and last_at are set */
        double first_at, last_at;
        double latency_ms[PROBES_MAX];
        int code[PROBES_MAX];
};

/* One GET on a new connection; its code (-1 when it failed) and latency. */
static int probe_once(double *ret_ms)
{
        struct conn c = {.fd = -1};
        char req[1024], head[16384];
        double t0 = now_s();
        ssize_t n;
        int code = -1;

        if (conn_open(&c, true) < 0)
                goto out;
        snprintf(req,
                 sizeof req,
                 "GET %s HTTP/1.1\r\nHost: flood\r\nAuthorization: Bearer %s\r\n"
                 "Accept: application/json\r\nConnection: close\r\n\r\n",
                 probe_path,
                 token);
        if (conn_send(&c, req, strlen(req)) < 0)
                goto out;
        n = read_head(&c, head, sizeof head);
        if (n < 0)
                goto out;
        code = status_of(head);
        /* the rest of the answer, to its end (Connection: close) */
        while (conn_recv(&c, head, sizeof head) > 0)
                ;
out:
        *ret_ms = (now_s() - t0) * 1000.0;
        conn_close(&c);
        return code;
}

static void *probe_main(void *arg)
{
        struct probes *p = arg;
        double span;

        while (!atomic_load(&p->ramped))
                usleep(10000);
        span = p->last_at - p->first_at;
        for (int i = 0; i < p->count; i++) {
                double at = p->first_at + (p->count > 1 ? span * i / (p->count - 1) : 0);

                while (since_start() < at)
                        usleep(10000);
                p->code[i] = probe_once(&p->latency_ms[i]);
        }
        return NULL;
}

static int cmp_double(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;

        return x < y ? -1 : x > y;
}

static void probes_report(const struct probes *p)
{
        double sorted[PROBES_MAX];
        int ok = 0, within = 0;

        if (p->count == 0)
                return;
        for (int i = 0; i < p->count; i++) {
                sorted[i] = p->latency_ms[i];
                ok += p->code[i] == 200;
                within += p->code[i] == 200 && p->latency_ms[i] <= 100.0;
        }
        qsort(sorted, (size_t)p->count, sizeof sorted[0], cmp_double);
        printf("probes: %d sent, %d answered 200, %d within 100 ms, p50 %.1f ms, p90 %.1f ms, max "
               "%.1f ms\n",
               p->count,
               ok,
               within,
               sorted[p->count / 2],
               sorted[(p->count * 9) / 10 < p->count ? (p->count * 9) / 10 : p->count - 1],
               sorted[p->count - 1]);
}

/* ---- the flood ------------------------------------------------------------------------------ */

struct flood {
        enum mode mode;
        int count;
        double seconds, trickle, reopen;
        struct conn *conns;
        long opened, closed_by_server, failed, held_min, ramped_held;
        double closed_after_min, closed_after_max;
        int answered[600]; /* watch: by code */
};

/* Starts one flood connection: what the mode sends first. */
static void flood_open(struct flood *f, struct conn *c)
{
        char req[1024];

        if (conn_open(c, f->mode != MODE_IDLE) < 0) {
                f->failed++;
                c->closed = since_start();
                return;
        }
        f->opened++;
        c->connecting = f->mode == MODE_IDLE;
        c->held = !c->connecting;
        c->trickled = c->opened;
        if (f->mode == MODE_SLOWLORIS) {
                snprintf(req,
                         sizeof req,
                         "GET /api/v1/namespaces/default/pods HTTP/1.1\r\nHost: flood\r\n");
                if (conn_send(c, req, strlen(req)) < 0)
                        conn_close(c);
        } else if (f->mode == MODE_WATCH) {
                char head[4096];
                int code;

                snprintf(
                    req,
                    sizeof req,
                    "GET /api/v1/namespaces/default/pods?watch=true HTTP/1.1\r\nHost: flood\r\n"
                    "Authorization: Bearer %s\r\n\r\n",
                    token);
                if (conn_send(c, req, strlen(req)) < 0 || read_head(c, head, sizeof head) < 0) {
                        f->answered[0]++;
                        conn_close(c);
                        return;
                }
                code = status_of(head);
                f->answered[code > 0 && code < 600 ? code : 0]++;
                if (code == 429 && !strcasestr(head, "\r\nRetry-After:"))
                        f->answered[1]++; /* a 429 without Retry-After */
                if (code != 200)
                        conn_close(c);
        }
}

/* One connection the server closed (or that sent us something): count it, open it again. */
static void flood_readable(struct flood *f, struct conn *c)
{
        char buf[4096];
        ssize_t n = conn_recv(c, buf, sizeof buf);
        double after;

        if (n > 0 && f->mode == MODE_WATCH)
                return; /* an event, or the heartbeat */
        after = since_start() - c->opened;
        f->closed_by_server++;
        if (f->closed_by_server == 1 || after < f->closed_after_min)
                f->closed_after_min = after;
        if (after > f->closed_after_max)
                f->closed_after_max = after;
        conn_close(c);
        c->closed = since_start();
}

static void flood_trickle(struct flood *f, struct conn *c)
{
        char line[64];

        if (f->mode != MODE_SLOWLORIS || since_start() - c->trickled < f->trickle)
                return;
        c->trickled = since_start();
        snprintf(line, sizeof line, "X-Slow-%ld: 1\r\n", (long)c->trickled);
        if (conn_send(c, line, strlen(line)) < 0)
                flood_readable(f, c);
}

/* An idle connection's connect finished: established, or failed (opened again later). */
static void flood_connected(struct flood *f, struct conn *c)
{
        int error = 0;
        socklen_t len = sizeof error;

        c->connecting = false;
        if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &error, &len) < 0 || error) {
                f->failed++;
                conn_close(c);
                c->closed = since_start();
                return;
        }
        c->held = true;
}

/* One round: waits up to 100 ms for events, handles them; returns how many are established. */
static long flood_round(struct flood *f, struct pollfd *pfd)
{
        long held = 0;

        for (int i = 0; i < f->count; i++) {
                struct conn *c = &f->conns[i];

                pfd[i].fd = c->held || c->connecting ? c->fd : -1;
                pfd[i].events = c->connecting ? POLLOUT : POLLIN;
                pfd[i].revents = 0;
        }
        if (poll(pfd, (nfds_t)f->count, 100) < 0 && errno != EINTR)
                return -1;
        for (int i = 0; i < f->count; i++) {
                struct conn *c = &f->conns[i];

                if (pfd[i].revents && c->connecting)
                        flood_connected(f, c);
                else if (pfd[i].revents && c->held)
                        flood_readable(f, c);
                else if (c->held)
                        flood_trickle(f, c);
                else if (!c->connecting && f->mode != MODE_WATCH &&
                         since_start() - c->closed >= f->reopen)
                        flood_open(f, c);
                held += c->held;
        }
        return held;
}

static void flood_run(struct flood *f, struct probes *p)
{
        struct pollfd *pfd = calloc((size_t)f->count, sizeof *pfd);
        pthread_t prober;
        bool probing = false;

        for (int i = 0; i < f->count; i++)
                flood_open(f, &f->conns[i]);
        if (p->count > 0 && pthread_create(&prober, NULL, probe_main, p) == 0)
                probing = true;
        f->held_min = -1;
        while (pfd && since_start() < f->seconds) {
                long held = flood_round(f, pfd);

                if (held < 0)
                        break;
                if (!atomic_load(&p->ramped) &&
                    (held == f->count || f->mode == MODE_WATCH || since_start() > RAMP_MAX_S)) {
                        p->first_at = since_start() + 0.5;
                        p->last_at = f->seconds - 0.5;
                        f->ramped_held = held;
                        atomic_store(&p->ramped, true);
                } else if (atomic_load(&p->ramped) && (f->held_min < 0 || held < f->held_min)) {
                        f->held_min = held;
                }
        }
        atomic_store(&p->ramped, true); /* a flood shorter than its ramp: probe at once */
        if (probing)
                pthread_join(prober, NULL);
        free(pfd);
}

static void flood_report(const struct flood *f)
{
        static const char *const names[] = {"idle", "slowloris", "watch"};
        long held = 0;

        for (int i = 0; i < f->count; i++)
                held += f->conns[i].held;
        printf(
            "flood %s: %d connections for %.0f s: opened %ld, failed to open %ld, %ld established "
            "when the probes began, held %ld at the end (at least %ld), closed by the server %ld",
            names[f->mode],
            f->count,
            f->seconds,
            f->opened,
            f->failed,
            f->ramped_held,
            held,
            f->held_min,
            f->closed_by_server);
        if (f->closed_by_server > 0)
                printf(" (after %.1f to %.1f s)", f->closed_after_min, f->closed_after_max);
        if (f->mode == MODE_WATCH)
                printf(", answered 200: %d, 429: %d (without Retry-After: %d), other: %d",
                       f->answered[200],
                       f->answered[429],
                       f->answered[1],
                       f->opened - f->answered[200] - f->answered[429] > 0
                           ? (int)(f->opened - f->answered[200] - f->answered[429])
                           : 0);
        printf("\n");
}

/* ---- main ----------------------------------------------------------------------------------- */

/* http(s)://LOOPBACK:PORT */
static int parse_url(const char *url)
{
        char host[64];
        unsigned port;
        const char *rest;

        if (strncmp(url, "https://", 8) == 0) {
                use_tls = true;
                rest = url + 8;
        } else if (strncmp(url, "http://", 7) == 0) {
                rest = url + 7;
        } else {
                return -1;
        }
        if (sscanf(rest, "%63[0-9.]:%u", host, &port) == 2 && port < 65536) {
                struct sockaddr_in *sin = (struct sockaddr_in *)&addr;

                if (inet_pton(AF_INET, host, &sin->sin_addr) != 1 || strncmp(host, "127.", 4) != 0)
                        return -1;
                sin->sin_family = AF_INET;
                sin->sin_port = htons((uint16_t)port);
                addr_len = sizeof *sin;
                return 0;
        }
        if (sscanf(rest, "[::1]:%u", &port) == 1 && port < 65536) {
                struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&addr;

                sin6->sin6_family = AF_INET6;
                sin6->sin6_addr = in6addr_loopback;
                sin6->sin6_port = htons((uint16_t)port);
                addr_len = sizeof *sin6;
                return 0;
        }
        return -1;
}

static int usage(void)
{
        fprintf(
            stderr,
            "usage: flood URL idle|slowloris|watch COUNT SECONDS [--token T] [--probes N] "
            "[--probe-path P] [--trickle S] [--reopen S]\n(URL: http:// or https:// on a loopback address)\n");
        return 2;
}

int main(int argc, char **argv)
{
        struct flood f = {.trickle = 20, .reopen = 0.5};
        static struct probes p = {.count = 20};
        struct rlimit rl;

        if (argc < 5 || parse_url(argv[1]) < 0)
                return usage();
        if (strcmp(argv[2], "idle") == 0)
                f.mode = MODE_IDLE;
        else if (strcmp(argv[2], "slowloris") == 0)
                f.mode = MODE_SLOWLORIS;
        else if (strcmp(argv[2], "watch") == 0)
                f.mode = MODE_WATCH;
        else
                return usage();
        f.count = atoi(argv[3]);
        f.seconds = atof(argv[4]);
        for (int i = 5; i + 1 < argc; i += 2) {
                if (strcmp(argv[i], "--token") == 0)
                        token = argv[i + 1];
                else if (strcmp(argv[i], "--probes") == 0)
                        p.count = atoi(argv[i + 1]);
                else if (strcmp(argv[i], "--probe-path") == 0)
                        probe_path = argv[i + 1];
                else if (strcmp(argv[i], "--trickle") == 0)
                        f.trickle = atof(argv[i + 1]);
                else if (strcmp(argv[i], "--reopen") == 0)
                        f.reopen = atof(argv[i + 1]);
                else
                        return usage();
        }
        if (f.count < 1 || f.count > COUNT_MAX || f.seconds <= 0 || f.seconds > 600 ||
            p.count < 0 || p.count > PROBES_MAX || (argc - 5) % 2)
                return usage();
        /* COUNT connections and the probes' */
        if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < (rlim_t)f.count + 64) {
                rl.rlim_cur = rl.rlim_max;
                setrlimit(RLIMIT_NOFILE, &rl);
        }
        if (gnutls_global_init() < 0 || gnutls_certificate_allocate_credentials(&creds) < 0)
                return 1;
        f.conns = calloc((size_t)f.count, sizeof *f.conns);
        if (!f.conns)
                return 1;
        for (int i = 0; i < f.count; i++)
                f.conns[i].fd = -1;
        start_time = now_s();
        flood_run(&f, &p);
        flood_report(&f);
        probes_report(&p);
        for (int i = 0; i < f.count; i++)
                conn_close(&f.conns[i]);
        free(f.conns);
        gnutls_certificate_free_credentials(creds);
        gnutls_global_deinit();
        return 0;
}
