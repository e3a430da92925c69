/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Pod creates through the API server over HTTP: N client threads, each with its own keep-alive
 * HTTP/1.1 connection, POST distinct GPU pods until COUNT are acknowledged (201). Prints
 * creates/s, latency percentiles per create, errors and, when it started the server itself, the
 * server's peak RSS. Prints figures; asserts nothing.
 *
 *   build/bench/bench_api --xpool build/xpool [--clients 32] [--creates 20000] [--token TOKEN]
 *   build/bench/bench_api --server http://127.0.0.1:6443 [...]
 *
 * The HTTP client is written here on a plain socket (no libcurl) so that the figures measure the
 * server, not a client library. The server is started with posix_spawn before any thread exists.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "xpool/macro.h"

extern char **environ;

/* A GPU training pod as a client would send it, about 800 bytes; NAME is replaced per request. */
static const char pod_template[] =
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\",\"labels\":{\"app\":"
    "\"trainer\",\"job\":\"llm\"}},"
    "\"spec\":{\"containers\":[{\"name\":\"trainer\",\"image\":\"ai-framework:latest\","
    "\"command\":[\"python\",\"train.py\",\"--epochs\",\"3\"],\"env\":[{\"name\":\"NCCL_DEBUG\","
    "\"value\":\"INFO\"},{\"name\":\"OMP_NUM_THREADS\",\"value\":\"8\"}],\"resources\":{"
    "\"limits\":{\"cpu\":\"8\",\"memory\":\"64Gi\",\"nvidia.com/gpu\":\"4\"},\"requests\":{"
    "\"cpu\":\"4\",\"memory\":\"32Gi\",\"nvidia.com/gpu\":\"4\"}},\"ports\":[{\"containerPort\":"
    "29500}]}],\"restartPolicy\":"
    "\"Never\",\"schedulerName\":\"xpool\",\"nodeSelector\":{\"xpool.io/gpu-product\":"
    "\"H100-SXM\"},\"tolerations\":[{\"key\":\"nvidia.com/gpu\",\"operator\":\"Exists\","
    "\"effect\":\"NoSchedule\"}],\"affinity\":{\"podAntiAffinity\":{"
    "\"requiredDuringSchedulingIgnoredDuringExecution\":[{\"labelSelector\":{\"matchLabels\":{"
    "\"job\":\"llm\"}},\"topologyKey\":\"kubernetes.io/hostname\"}]}}}}";

#define PODS_PATH   "/api/v1/namespaces/default/pods"
#define LINE_MAX_   8192
#define BUF_SIZE    65536
#define MAX_CLIENTS 1024

/* One keep-alive connection and what has been read from it but not yet parsed. */
struct conn {
        int fd;
        size_t start, end;
        char buf[BUF_SIZE];
};

static struct sockaddr_storage server_addr;
static socklen_t server_addr_len;
static char host_header[300];
static const char *token;
static char run_id[32];
static long count;
static atomic_long next_index;
static atomic_long errors;
static double *latencies; /* seconds, one per create; negative when it failed */

static double now(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Splits http://HOST[:PORT][/...] and resolves it (numeric or by name). */
static int parse_url(const char *url)
{
        _cleanup_free_ char *copy = NULL;
        struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai = NULL;
        char *host, *port = NULL, *end;
        int r;

        if (strncmp(url, "http://", 7) != 0) {
                fprintf(stderr, "bench_api: --server %s: only http:// URLs are supported\n", url);
                return -EINVAL;
        }
        copy = strdup(url + 7);
        if (!copy)
                return -ENOMEM;
        copy[strcspn(copy, "/")] = '\0';
        snprintf(host_header, sizeof(host_header), "%s", copy);
        host = copy;
        if (*host == '[') {
                end = strchr(host, ']');
                if (!end) {
                        fprintf(
                            stderr, "bench_api: --server %s: no ']' after the IPv6 host\n", url);
                        return -EINVAL;
                }
                *end = '\0';
                host++;
                if (end[1] == ':')
                        port = end + 2;
        } else if ((end = strchr(host, ':'))) {
                *end = '\0';
                port = end + 1;
        }
        r = getaddrinfo(host, port && *port ? port : "80", &hints, &ai);
        if (r != 0) {
                fprintf(stderr, "bench_api: --server %s: %s\n", url, gai_strerror(r));
                return -EINVAL;
        }
        memcpy(&server_addr, ai->ai_addr, ai->ai_addrlen);
        server_addr_len = ai->ai_addrlen;
        freeaddrinfo(ai);
        return 0;
}

static int conn_open(struct conn *c)
{
        int one = 1, fd;

        fd = socket(server_addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        /* requests go out in one write; Nagle would only add delay to the next one */
        (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        if (connect(fd, (struct sockaddr *)&server_addr, server_addr_len) < 0) {
                int r = -errno;
                close(fd);
                return r;
        }
        c->fd = fd;
        c->start = c->end = 0;
        return 0;
}

static void conn_close(struct conn *c)
{
        if (c->fd >= 0)
                close(c->fd);
        c->fd = -1;
}

static int send_all(int fd, const char *p, size_t n)
{
        while (n > 0) {
                ssize_t w = send(fd, p, n, MSG_NOSIGNAL);

                if (w < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                p += w;
                n -= (size_t)w;
        }
        return 0;
}

/* Reads more into the buffer; 0 at end of stream. */
static int conn_fill(struct conn *c)
{
        ssize_t n;

        if (c->start > 0) {
                memmove(c->buf, c->buf + c->start, c->end - c->start);
                c->end -= c->start;
                c->start = 0;
        }
        if (c->end == sizeof(c->buf))
                return -EMSGSIZE;
        do
                n = recv(c->fd, c->buf + c->end, sizeof(c->buf) - c->end, 0);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return -errno;
        c->end += (size_t)n;
        return (int)(n > 0);
}

/* One CRLF-terminated line, without the CRLF, into line (at most LINE_MAX_ bytes). */
static int conn_line(struct conn *c, char *line)
{
        for (;;) {
                char *eol = memchr(c->buf + c->start, '\n', c->end - c->start);

                if (eol) {
                        size_t n = (size_t)(eol - (c->buf + c->start));

                        if (n >= LINE_MAX_)
                                return -EMSGSIZE;
                        memcpy(line, c->buf + c->start, n);
                        if (n > 0 && line[n - 1] == '\r')
                                n--;
                        line[n] = '\0';
                        c->start += (size_t)(eol - (c->buf + c->start)) + 1;
                        return 0;
                }
                int r = conn_fill(c);
                if (r <= 0)
                        return r < 0 ? r : -ECONNRESET;
        }
}

static int conn_skip(struct conn *c, unsigned long long n)
{
        while (n > 0) {
                size_t have = c->end - c->start;

                if (have == 0) {
                        int r = conn_fill(c);
                        if (r <= 0)
                                return r < 0 ? r : -ECONNRESET;
                        continue;
                }
                if (have > n)
                        have = (size_t)n;
                c->start += have;
                n -= have;
        }
        return 0;
}

/*
 * Reads one response and discards its body (Content-Length or chunked, else up to the end of the
 * stream). Returns the status code, or -errno when the connection broke or the answer is not HTTP.
 * *ret_close says the connection cannot carry another request.
 */
static int read_response(struct conn *c, bool *ret_close)
{
        char line[LINE_MAX_];
        long long length = -1;
        bool chunked = false, close_after = false;
        int code, r;

        r = conn_line(c, line);
        if (r < 0)
                return r;
        if (sscanf(line, "HTTP/1.%*1[01] %3d", &code) != 1 || code < 100)
                return -EPROTO;
        for (;;) {
                char *value;

                r = conn_line(c, line);
                if (r < 0)
                        return r;
                if (line[0] == '\0')
                        break;
                value = strchr(line, ':');
                if (!value)
                        return -EPROTO;
                *value++ = '\0';
                value += strspn(value, " \t");
                if (strcasecmp(line, "Content-Length") == 0)
                        length = strtoll(value, NULL, 10);
                else if (strcasecmp(line, "Transfer-Encoding") == 0)
                        chunked = strcasestr(value, "chunked") != NULL;
                else if (strcasecmp(line, "Connection") == 0)
                        close_after = strcasestr(value, "close") != NULL;
        }
        if (code < 200 || code == 204 || code == 304)
                length = 0; /* no body whatever the headers say */
        if (chunked) {
                for (;;) {
                        unsigned long long size;
                        char *end;

                        r = conn_line(c, line);
                        if (r < 0)
                                return r;
                        size = strtoull(line, &end, 16);
                        if (end == line)
                                return -EPROTO;
                        if (size == 0)
                                break;
                        r = conn_skip(c, size + 2); /* the chunk and its CRLF */
                        if (r < 0)
                                return r;
                }
                do { /* trailers up to the empty line */
                        r = conn_line(c, line);
                        if (r < 0)
                                return r;
                } while (line[0] != '\0');
        } else if (length >= 0) {
                r = conn_skip(c, (unsigned long long)length);
                if (r < 0)
                        return r;
        } else {
                while ((r = conn_fill(c)) > 0)
                        c->start = c->end;
                if (r < 0)
                        return r;
                close_after = true;
        }
        *ret_close = close_after;
        return code;
}

static void *client(void *arg)
{
        struct conn *c = arg;
        char body[2048], req[4096];

        c->fd = -1;
        for (;;) {
                long i = atomic_fetch_add(&next_index, 1);
                char name[64];
                bool close_after = false;
                int n, r;
                double t;

                if (i >= count)
                        break;
                snprintf(name, sizeof(name), "bench-%s-%ld", run_id, i);
                n = snprintf(body, sizeof(body), pod_template, name);
                r = snprintf(req,
                             sizeof(req),
                             "POST " PODS_PATH " HTTP/1.1\r\nHost: %s\r\nContent-Type: "
                             "application/json\r\nAccept: application/json\r\n%s%s%sContent-Length:"
                             " %d\r\n\r\n%s",
                             host_header,
                             token ? "Authorization: Bearer " : "",
                             token ?: "",
                             token ? "\r\n" : "",
                             n,
                             body);
                if (r < 0 || (size_t)r >= sizeof(req)) {
                        fprintf(stderr, "bench_api: request for %s does not fit\n", name);
                        atomic_fetch_add(&errors, 1);
                        continue;
                }
                t = now();
                if (c->fd < 0 && (n = conn_open(c)) < 0) {
                        fprintf(stderr, "bench_api: connect: %s; client stops\n", strerror(-n));
                        atomic_fetch_add(&errors, 1);
                        break;
                }
                r = send_all(c->fd, req, (size_t)r);
                if (r >= 0)
                        r = read_response(c, &close_after);
                if (r == 201) {
                        latencies[i] = now() - t;
                } else {
                        atomic_fetch_add(&errors, 1);
                        if (r < 0)
                                fprintf(stderr, "bench_api: create %s: %s\n", name, strerror(-r));
                        else
                                fprintf(stderr, "bench_api: create %s: HTTP %d\n", name, r);
                }
                if (r < 0 || close_after)
                        conn_close(c);
        }
        conn_close(c);
        return NULL;
}

/* The server child: started on a free loopback port in a fresh directory, removed at the end. */
struct child {
        pid_t pid;
        char dir[512];
        char data[600];
        char log[600];
};

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
        (void)st;
        (void)flag;
        (void)ftw;
        return remove(path) < 0 ? -errno : 0;
}

static int child_start(const char *xpool, struct child *ch)
{
        const char *tmpdir = getenv("TMPDIR") ?: "/tmp";
        posix_spawn_file_actions_t fa;
        char *argv[] = {(char *)xpool,
                        "server",
                        "--listen",
                        "127.0.0.1:0",
                        "--no-tls",
                        "--data-dir",
                        ch->data,
                        NULL};
        double deadline;
        int r;

        snprintf(ch->dir, sizeof(ch->dir), "%s/bench-api-XXXXXX", tmpdir);
        if (!mkdtemp(ch->dir)) {
                r = -errno;
                fprintf(stderr, "bench_api: mkdtemp %s: %s\n", ch->dir, strerror(-r));
                return r;
        }
        snprintf(ch->data, sizeof(ch->data), "%s/data", ch->dir);
        snprintf(ch->log, sizeof(ch->log), "%s/server.log", ch->dir);
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(
            &fa, STDOUT_FILENO, ch->log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        posix_spawn_file_actions_adddup2(&fa, STDOUT_FILENO, STDERR_FILENO);
        r = posix_spawn(&ch->pid, xpool, &fa, NULL, argv, environ);
        posix_spawn_file_actions_destroy(&fa);
        if (r != 0) {
                fprintf(stderr, "bench_api: cannot start %s: %s\n", xpool, strerror(r));
                ch->pid = 0;
                return -r;
        }

        /* wait (bounded) for the line that names the port */
        deadline = now() + 15;
        while (now() < deadline) {
                char line[1024], *p;
                unsigned port;
                int status;
                FILE *fp;

                if (waitpid(ch->pid, &status, WNOHANG) == ch->pid) {
                        ch->pid = 0;
                        fprintf(stderr, "bench_api: the server exited; its log is %s\n", ch->log);
                        return -ECHILD;
                }
                fp = fopen(ch->log, "re");
                while (fp && fgets(line, sizeof(line), fp)) {
                        p = strstr(line, "listening on http://127.0.0.1:");
                        if (p && sscanf(p, "listening on http://127.0.0.1:%u,", &port) == 1) {
                                char url[64];

                                fclose(fp);
                                snprintf(url, sizeof(url), "http://127.0.0.1:%u", port);
                                return parse_url(url);
                        }
                }
                if (fp)
                        fclose(fp);
                usleep(20000);
        }
        fprintf(
            stderr, "bench_api: the server did not say it listens within 15 s; see %s\n", ch->log);
        return -ETIMEDOUT;
}

/* The admin token the server wrote, when it writes one (DATA_DIR/admin.kubeconfig). */
static char *child_token(const struct child *ch)
{
        char path[700], line[1024];
        char *found = NULL;
        FILE *fp;

        snprintf(path, sizeof(path), "%s/admin.kubeconfig", ch->data);
        fp = fopen(path, "re");
        if (!fp)
                return NULL;
        while (!found && fgets(line, sizeof(line), fp)) {
                char *p = line + strspn(line, " \t");

                if (strncmp(p, "token:", 6) != 0)
                        continue;
                p += 6;
                p += strspn(p, " \t\"'");
                p[strcspn(p, " \t\"'\r\n")] = '\0';
                if (*p)
                        found = strdup(p);
        }
        fclose(fp);
        return found;
}

static long child_peak_rss_kib(const struct child *ch)
{
        char path[64], line[256];
        long kib = -1;
        FILE *fp;

        snprintf(path, sizeof(path), "/proc/%d/status", (int)ch->pid);
        fp = fopen(path, "re");
        if (!fp)
                return -1;
        while (fgets(line, sizeof(line), fp))
                if (sscanf(line, "VmHWM: %ld kB", &kib) == 1)
                        break;
        fclose(fp);
        return kib;
}

static void child_stop(struct child *ch)
{
        if (ch->pid > 0) {
                double deadline = now() + 10;
                int status;

                kill(ch->pid, SIGTERM);
                while (waitpid(ch->pid, &status, WNOHANG) == 0) {
                        if (now() > deadline) {
                                fprintf(stderr,
                                        "bench_api: the server ignored SIGTERM; killing it\n");
                                kill(ch->pid, SIGKILL);
                                waitpid(ch->pid, &status, 0);
                                break;
                        }
                        usleep(20000);
                }
                ch->pid = 0;
        }
        if (ch->dir[0])
                nftw(ch->dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
        ch->dir[0] = '\0';
}

static double cpu_seconds(const struct rusage *u)
{
        return (double)(u->ru_utime.tv_sec + u->ru_stime.tv_sec) +
               (double)(u->ru_utime.tv_usec + u->ru_stime.tv_usec) / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;

        return x < y ? -1 : x > y;
}

static double percentile(const double *sorted, size_t n, double p)
{
        size_t i = (size_t)((double)n * p);

        return sorted[i < n ? i : n - 1];
}

static int usage(void)
{
        fprintf(stderr,
                "usage: bench_api (--server URL | --xpool PATH) [--clients N (1-%d, default 32)] "
                "[--creates N (default 20000)] [--token TOKEN]\n",
                MAX_CLIENTS);
        return 2;
}

int main(int argc, char **argv)
{
        static const struct option options[] = {
            {"server", required_argument, NULL, 's'},
            {"xpool", required_argument, NULL, 'x'},
            {"clients", required_argument, NULL, 'c'},
            {"creates", required_argument, NULL, 'n'},
            {"token", required_argument, NULL, 't'},
            {},
        };
        const char *server = NULL, *xpool = NULL;
        _cleanup_free_ char *child_tok = NULL;
        _cleanup_free_ struct conn *conns = NULL;
        _cleanup_free_ pthread_t *th = NULL;
        struct child ch = {0};
        struct rusage ru;
        long clients = 32, kib = -1;
        size_t ok = 0;
        double t0, elapsed;
        int opt, r = 0;

        count = 20000;
        while ((opt = getopt_long(argc, argv, "", options, NULL)) != -1) {
                char *end = NULL;

                switch (opt) {
                case 's':
                        server = optarg;
                        break;
                case 'x':
                        xpool = optarg;
                        break;
                case 'c':
                        clients = strtol(optarg, &end, 10);
                        break;
                case 'n':
                        count = strtol(optarg, &end, 10);
                        break;
                case 't':
                        token = optarg;
                        break;
                default:
                        return usage();
                }
                if (end && (*end || end == optarg))
                        return usage();
        }
        if (optind != argc || !server == !xpool || clients < 1 || clients > MAX_CLIENTS ||
            count < 1)
                return usage();

        snprintf(run_id, sizeof(run_id), "%x-%x", (unsigned)getpid(), (unsigned)time(NULL));
        latencies = calloc((size_t)count, sizeof(*latencies));
        conns = calloc((size_t)clients, sizeof(*conns));
        th = calloc((size_t)clients, sizeof(*th));
        if (!latencies || !conns || !th) {
                fprintf(stderr, "bench_api: out of memory\n");
                return 1;
        }
        /* a create no client got to (its client stopped) counts as not acknowledged */
        for (long i = 0; i < count; i++)
                latencies[i] = -1;
        if (xpool) {
                if (child_start(xpool, &ch) < 0) {
                        child_stop(&ch);
                        return 1;
                }
                child_tok = token ? NULL : child_token(&ch);
                if (child_tok)
                        token = child_tok;
                server = "its own server";
        } else if (parse_url(server) < 0) {
                return 1;
        }

        printf("%ld clients, %ld creates of a %d-byte pod, against %s (%s)%s\n",
               clients,
               count,
               snprintf(NULL, 0, pod_template, "bench-xxxxxx-xxxxxxxx-0"),
               host_header,
               server,
               token ? ", with a bearer token" : "");
        t0 = now();
        for (long i = 0; i < clients; i++)
                if (pthread_create(&th[i], NULL, client, &conns[i]) != 0) {
                        fprintf(stderr, "bench_api: cannot start client %ld\n", i);
                        return 1;
                }
        for (long i = 0; i < clients; i++)
                pthread_join(th[i], NULL);
        elapsed = now() - t0;

        for (long i = 0; i < count; i++)
                if (latencies[i] >= 0)
                        latencies[ok++] = latencies[i];
        printf("clients            %10ld\n", clients);
        printf("creates            %10zu acknowledged (201) of %ld\n", ok, count);
        printf("wall               %10.2f s\n", elapsed);
        printf("creates/s          %10.0f\n", (double)ok / elapsed);
        if (ok > 0) {
                qsort(latencies, ok, sizeof(*latencies), cmp_double);
                printf("latency p50        %10.2f ms\n", percentile(latencies, ok, 0.50) * 1e3);
                printf("latency p90        %10.2f ms\n", percentile(latencies, ok, 0.90) * 1e3);
                printf("latency p99        %10.2f ms\n", percentile(latencies, ok, 0.99) * 1e3);
                printf("latency max        %10.2f ms\n", latencies[ok - 1] * 1e3);
        }
        printf("errors             %10ld\n", atomic_load(&errors));
        if (xpool) {
                kib = child_peak_rss_kib(&ch);
                if (kib >= 0)
                        printf("server peak RSS    %10ld KiB\n", kib);
                else
                        printf("server peak RSS    %10s (not readable)\n", "-");
                child_stop(&ch);
        } else {
                printf("server peak RSS    %10s (not our process: use --xpool)\n", "-");
        }
        /* on a small machine the clients compete with the server for the same cores */
        getrusage(RUSAGE_SELF, &ru);
        printf("client CPU         %10.2f s user+sys\n", cpu_seconds(&ru));
        if (xpool) {
                getrusage(RUSAGE_CHILDREN, &ru);
                printf("server CPU         %10.2f s user+sys\n", cpu_seconds(&ru));
        }
        if (atomic_load(&errors) > 0 || ok != (size_t)count)
                r = 1;
        free(latencies);
        return r;
}
