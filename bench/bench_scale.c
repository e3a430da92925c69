/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The API server at scale: stores NODES nodes and PODS pods (created over HTTP from CLIENTS
 * keep-alive connections), then times a full list of every pod, a label-selected list (1 pod in
 * 100 matches), a list of the nodes, and prints the server's RSS. Then WATCHERS watches of one
 * namespace receive RATE creates/s for SECONDS seconds: it prints how many events arrived and how
 * long after its create was sent each watcher saw each one (p50, p99, max). Prints figures and
 * the load average at start and end; asserts nothing.
 *
 *   build/bench/bench_scale --xpool build/xpool [--pods 100000] [--nodes 5000] [--clients 32]
 *                           [--watchers 200] [--rate 1000] [--seconds 5]
 *
 * The server is its own (`xpool server --no-scheduler`: the pods stay pending, no binding
 * writes), in a directory removed at the end.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "http_client.h"
#include "server_child.h"
#include "xpool/macro.h"

#define WATCHERS_MAX 1000
#define CREATORS     16 /* threads pacing the fan-out's creates */

/* A pod as a client sends it, about 700 bytes; NAMESPACE, NAME and the group label vary. */
static const char pod_template[] =
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\",\"labels\":{\"app\":"
    "\"trainer\",\"group\":\"g%ld\"}},\"spec\":{\"containers\":[{\"name\":\"trainer\",\"image\":"
    "\"ai-framework:latest\",\"command\":[\"python\",\"train.py\"],\"env\":[{\"name\":"
    "\"NCCL_DEBUG\",\"value\":\"INFO\"}],\"resources\":{\"limits\":{\"cpu\":\"8\",\"memory\":"
    "\"64Gi\",\"nvidia.com/gpu\":\"4\"},\"requests\":{\"cpu\":\"4\",\"memory\":\"32Gi\","
    "\"nvidia.com/gpu\":\"4\"}}}],\"restartPolicy\":\"Never\",\"schedulerName\":\"xpool\","
    "\"tolerations\":[{\"key\":\"nvidia.com/gpu\",\"operator\":\"Exists\",\"effect\":"
    "\"NoSchedule\"}]}}";

static const char node_template[] =
    "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"%s\",\"labels\":{"
    "\"kubernetes.io/hostname\":\"%s\",\"xpool.io/gpu-product\":\"H100-SXM\"}},\"status\":{"
    "\"capacity\":{\"cpu\":\"128\",\"memory\":\"2Ti\",\"nvidia.com/gpu\":\"8\",\"pods\":\"110\"},"
    "\"allocatable\":{\"cpu\":\"128\",\"memory\":\"2Ti\",\"nvidia.com/gpu\":\"8\",\"pods\":"
    "\"110\"}}}";

struct options {
        const char *xpool;
        long pods, nodes, clients, watchers, rate, seconds;
};

static struct http_target target;
static char *token;

/* ---- creates from many connections ------------------------------------------------------- */

struct creates {
        const char *path;   /* the collection */
        const char *prefix; /* names are PREFIX-INDEX */
        bool node;
        long count;
        double rate; /* creates/s over all threads; 0: as fast as they go */
        double t0;
        atomic_long next;
        atomic_long errors;
        _Atomic double *sent; /* per index: when its request went out (fan-out only) */
};

static int create_one(struct http_conn *c, struct creates *w, long i)
{
        char name[64], body[2048], req[4096];
        bool close_after = false;
        int n, r;

        snprintf(name, sizeof(name), "%s-%ld", w->prefix, i);
        if (w->node)
                snprintf(body, sizeof(body), node_template, name, name);
        else
                snprintf(body, sizeof(body), pod_template, name, i % 100);
        n = http_format_json_request(
            req, sizeof(req), "POST", w->path, &target, "application/json", token, body);
        if (n < 0)
                return n;
        if (c->fd < 0 && (r = http_conn_open(c, &target)) < 0)
                return r;
        if (w->sent)
                atomic_store(&w->sent[i], bench_now());
        r = http_conn_exchange(c, req, (size_t)n, &close_after);
        if (r < 0 || close_after)
                http_conn_close(c);
        return r;
}

static void *creator(void *arg)
{
        struct creates *w = arg;
        struct http_conn *c = calloc(1, sizeof(*c));

        if (!c)
                return NULL;
        c->fd = -1;
        for (;;) {
                long i = atomic_fetch_add(&w->next, 1);
                double due;
                int r;

                if (i >= w->count)
                        break;
                due = w->rate > 0 ? w->t0 + (double)i / w->rate : 0;
                while (due > 0 && bench_now() < due)
                        usleep(200);
                r = create_one(c, w, i);
                if (r != 201 && atomic_fetch_add(&w->errors, 1) < 5)
                        fprintf(stderr,
                                "bench_scale: create %s-%ld: %s %d\n",
                                w->prefix,
                                i,
                                r < 0 ? "error" : "HTTP",
                                r < 0 ? -r : r);
        }
        http_conn_close(c);
        free(c);
        return NULL;
}

/* Runs the creates from threads threads; the seconds they took. */
static double run_creates(struct creates *w, long threads)
{
        pthread_t th[1024];
        long n = 0;

        w->t0 = bench_now();
        for (; n < threads && n < 1024; n++)
                if (pthread_create(&th[n], NULL, creator, w) != 0)
                        break;
        for (long i = 0; i < n; i++)
                pthread_join(th[i], NULL);
        return bench_now() - w->t0;
}

/* ---- lists --------------------------------------------------------------------------------- */

/* GETs path and reads the whole answer: the seconds it took, or -1. */
static double timed_get(const char *path)
{
        struct http_conn *c = calloc(1, sizeof(*c));
        char req[4096];
        bool close_after;
        double t;
        int n, r = -1;

        if (!c)
                return -1;
        c->fd = -1;
        n = http_format_json_request(
            req, sizeof(req), "GET", path, &target, "application/json", token, "");
        t = bench_now();
        if (n > 0 && http_conn_open(c, &target) >= 0)
                r = http_conn_exchange(c, req, (size_t)n, &close_after);
        t = bench_now() - t;
        http_conn_close(c);
        free(c);
        if (r != 200)
                fprintf(stderr, "bench_scale: GET %s: %d\n", path, r);
        return r == 200 ? t : -1;
}

static void print_list(const struct server_child *ch, const char *what, const char *path)
{
        double best = -1, cpu = -1;

        /* three times, the best shown beside the first: the noise of a shared machine; the
         * server's CPU time beside it does not depend on what else runs */
        for (int i = 0; i < 3; i++) {
                double c0 = server_child_cpu_seconds(ch), t = timed_get(path);
                double c = server_child_cpu_seconds(ch) - c0;

                if (i == 0)
                        printf("%-34s first %7.3f s", what, t);
                if (t >= 0 && (best < 0 || t < best))
                        best = t;
                if (cpu < 0 || c < cpu)
                        cpu = c;
        }
        printf(", best %7.3f s; server CPU %.2f s\n", best, cpu);
}

static int create_namespace(const char *name)
{
        struct http_conn *c = calloc(1, sizeof(*c));
        char body[256], req[4096];
        bool close_after;
        int n, r = -ENOMEM;

        if (!c)
                return r;
        c->fd = -1;
        snprintf(body,
                 sizeof(body),
                 "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"%s\"}}",
                 name);
        n = http_format_json_request(req,
                                     sizeof(req),
                                     "POST",
                                     "/api/v1/namespaces",
                                     &target,
                                     "application/json",
                                     token,
                                     body);
        if (n > 0 && (r = http_conn_open(c, &target)) >= 0)
                r = http_conn_exchange(c, req, (size_t)n, &close_after);
        http_conn_close(c);
        free(c);
        return r == 201 ? 0 : -EIO;
}

/* ---- the watch fan-out ---------------------------------------------------------------------- */

struct watcher {
        pthread_t thread;
        int fd;
        struct creates *creates; /* whose send times the events are measured against */
        atomic_bool ready;       /* the answer's head arrived: the watch is on */
        long seen;
        double *latency; /* seconds, per event seen */
        long cap;
        /* the chunked body as it comes: in a size line, in data, or in a chunk's CRLF */
        int state;
        size_t left;
        char size_line[32];
        size_t size_len;
        char line[8192]; /* the current event line, up to its newline */
        size_t line_len;
};

enum {
        IN_SIZE,
        IN_DATA,
        IN_CRLF
};

/* One complete event line: the pod's index from its name, and how long after its send. */
static void on_line(struct watcher *w, double at)
{
        static const char marker[] = "\"name\":\"fan-";
        char *p;
        long i;

        w->line[w->line_len] = '\0';
        p = strstr(w->line, marker);
        if (!p || sscanf(p + sizeof(marker) - 1, "%ld", &i) != 1 || i < 0 ||
            i >= w->creates->count || w->seen >= w->cap)
                return;
        w->latency[w->seen++] = at - atomic_load(&w->creates->sent[i]);
}

/* A line at a time (memchr, memcpy), not a byte at a time: 200 watchers' byte loops took a third
 * of the machine's CPU beside the server under test. */
static void on_data(struct watcher *w, const char *d, size_t n, double at)
{
        while (n > 0) {
                const char *nl = memchr(d, '\n', n);
                size_t take = nl ? (size_t)(nl - d) : n;
                size_t room = sizeof(w->line) - 1 - w->line_len;

                memcpy(w->line + w->line_len, d, take < room ? take : room);
                w->line_len += take < room ? take : room;
                if (!nl)
                        return;
                on_line(w, at);
                w->line_len = 0;
                d += take + 1;
                n -= take + 1;
        }
}

/* Feeds the chunked body through; false at its end. */
static bool dechunk(struct watcher *w, const char *buf, size_t n, double at)
{
        size_t k = 0;

        while (k < n) {
                if (w->state == IN_DATA) {
                        size_t take = n - k < w->left ? n - k : w->left;

                        on_data(w, buf + k, take, at);
                        k += take;
                        w->left -= take;
                        if (w->left == 0)
                                w->state = IN_CRLF, w->left = 2;
                } else if (w->state == IN_CRLF) {
                        k++;
                        if (--w->left == 0)
                                w->state = IN_SIZE;
                } else if (buf[k++] == '\n') {
                        w->size_line[w->size_len < sizeof(w->size_line) ? w->size_len : 0] = '\0';
                        w->left = strtoul(w->size_line, NULL, 16);
                        w->size_len = 0;
                        if (w->left == 0)
                                return false;
                        w->state = IN_DATA;
                } else if (w->size_len < sizeof(w->size_line) - 1) {
                        w->size_line[w->size_len++] = buf[k - 1];
                }
        }
        return true;
}

static void *watch_thread(void *arg)
{
        struct watcher *w = arg;
        char buf[65536], *body;
        size_t have = 0;
        ssize_t n;

        /* the head first: the watch is on once it came */
        while ((n = read(w->fd, buf + have, sizeof(buf) - 1 - have)) > 0) {
                have += (size_t)n;
                buf[have] = '\0';
                body = strstr(buf, "\r\n\r\n");
                if (body) {
                        atomic_store(&w->ready, true);
                        body += 4;
                        if (!dechunk(w, body, have - (size_t)(body - buf), bench_now()))
                                return NULL;
                        break;
                }
                if (have == sizeof(buf) - 1)
                        return NULL;
        }
        while ((n = read(w->fd, buf, sizeof(buf))) > 0)
                if (!dechunk(w, buf, (size_t)n, bench_now()))
                        break;
        return NULL;
}

static int watcher_start(struct watcher *w, struct creates *c)
{
        struct http_conn conn = {.fd = -1};
        char req[4096];
        int n, r;

        w->creates = c;
        w->cap = c->count;
        w->latency = calloc((size_t)w->cap, sizeof(*w->latency));
        n = http_format_json_request(req,
                                     sizeof(req),
                                     "GET",
                                     "/api/v1/namespaces/fanout/pods?watch=true",
                                     &target,
                                     "application/json",
                                     token,
                                     "");
        if (!w->latency || n < 0)
                return -ENOMEM;
        r = http_conn_open(&conn, &target);
        if (r < 0)
                return r;
        w->fd = conn.fd;
        if (send(w->fd, req, (size_t)n, MSG_NOSIGNAL) != n)
                return -EIO;
        return pthread_create(&w->thread, NULL, watch_thread, w) == 0 ? 0 : -EAGAIN;
}

static int cmp_double(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;

        return x < y ? -1 : x > y;
}

static void print_latencies(struct watcher *ws, long n, long expected)
{
        long total = 0, k = 0;
        double *all;

        for (long i = 0; i < n; i++)
                total += ws[i].seen;
        printf("events seen        %10ld of %ld (%ld watchers x %ld creates)\n",
               total,
               expected * n,
               n,
               expected);
        all = calloc((size_t)(total ? total : 1), sizeof(*all));
        if (!all || total == 0) {
                free(all);
                return;
        }
        for (long i = 0; i < n; i++)
                for (long j = 0; j < ws[i].seen; j++)
                        all[k++] = ws[i].latency[j];
        qsort(all, (size_t)total, sizeof(*all), cmp_double);
        printf("create sent -> watcher: p50 %.1f ms, p99 %.1f ms, max %.1f ms\n",
               all[total / 2] * 1e3,
               all[(size_t)((double)total * 0.99)] * 1e3,
               all[total - 1] * 1e3);
        free(all);
}

static int fanout_phase(const struct options *o, struct server_child *ch)
{
        struct creates fan = {.path = "/api/v1/namespaces/fanout/pods",
                              .prefix = "fan",
                              .count = o->rate * o->seconds,
                              .rate = (double)o->rate};
        struct watcher *ws = calloc((size_t)(o->watchers ? o->watchers : 1), sizeof(*ws));
        double deadline, t, cpu0, cpu1;
        long started = 0, ready;
        int r = 0;

        fan.sent = calloc((size_t)(fan.count ? fan.count : 1), sizeof(*fan.sent));
        if (!ws || !fan.sent || create_namespace("fanout") < 0) {
                free(ws);
                free(fan.sent);
                return -ENOMEM;
        }
        for (; started < o->watchers && r >= 0; started++)
                r = watcher_start(&ws[started], &fan);
        /* bounded: every watch on before the first create */
        deadline = bench_now() + 30;
        do {
                ready = 0;
                for (long i = 0; i < started; i++)
                        ready += atomic_load(&ws[i].ready);
        } while (ready < started && bench_now() < deadline && usleep(10000) == 0);
        printf("watchers on        %10ld of %ld\n", ready, o->watchers);
        cpu0 = server_child_cpu_seconds(ch);
        t = run_creates(&fan, CREATORS);
        cpu1 = server_child_cpu_seconds(ch);
        printf("fan-out creates    %10ld in %.2f s (%.0f/s), %ld errors; server CPU %.2f s\n",
               fan.count,
               t,
               (double)fan.count / t,
               atomic_load(&fan.errors),
               cpu1 - cpu0);
        /* bounded: the last events on their way */
        deadline = bench_now() + 10;
        for (long i = 0; i < started; i++)
                while (ws[i].seen < fan.count && bench_now() < deadline)
                        usleep(10000);
        for (long i = 0; i < started; i++) {
                shutdown(ws[i].fd, SHUT_RDWR);
                pthread_join(ws[i].thread, NULL);
                close(ws[i].fd);
        }
        print_latencies(ws, started, fan.count);
        printf("server RSS         %10ld KiB (peak %ld KiB) after the fan-out\n",
               server_child_kib(ch, "VmRSS"),
               server_child_kib(ch, "VmHWM"));
        for (long i = 0; i < started; i++)
                free(ws[i].latency);
        free(ws);
        free(fan.sent);
        return r;
}

/* ---- main ---------------------------------------------------------------------------------- */

static int parse(int argc, char **argv, struct options *o)
{
        static const struct option options[] = {
            {"xpool", required_argument, NULL, 'x'},
            {"pods", required_argument, NULL, 'p'},
            {"nodes", required_argument, NULL, 'n'},
            {"clients", required_argument, NULL, 'c'},
            {"watchers", required_argument, NULL, 'w'},
            {"rate", required_argument, NULL, 'r'},
            {"seconds", required_argument, NULL, 's'},
            {},
        };
        int opt;

        *o = (struct options){.pods = 100000,
                              .nodes = 5000,
                              .clients = 32,
                              .watchers = 200,
                              .rate = 1000,
                              .seconds = 5};
        while ((opt = getopt_long(argc, argv, "", options, NULL)) != -1) {
                long *v = opt == 'p'   ? &o->pods
                          : opt == 'n' ? &o->nodes
                          : opt == 'c' ? &o->clients
                          : opt == 'w' ? &o->watchers
                          : opt == 'r' ? &o->rate
                          : opt == 's' ? &o->seconds
                                       : NULL;
                char *end;

                if (opt == 'x') {
                        o->xpool = optarg;
                        continue;
                }
                if (!v)
                        return -EINVAL;
                *v = strtol(optarg, &end, 10);
                if (*end || end == optarg || *v < 0)
                        return -EINVAL;
        }
        if (!o->xpool || optind != argc || o->clients < 1 || o->clients > 1024 ||
            o->watchers > WATCHERS_MAX || o->rate < 1)
                return -EINVAL;
        return 0;
}

static void store_phase(const struct options *o, struct server_child *ch)
{
        struct creates nodes = {
            .path = "/api/v1/nodes", .prefix = "node", .node = true, .count = o->nodes};
        struct creates pods = {
            .path = "/api/v1/namespaces/default/pods", .prefix = "scale", .count = o->pods};
        double t;

        t = run_creates(&nodes, o->clients);
        printf("nodes stored       %10ld in %.2f s (%.0f/s), %ld errors\n",
               o->nodes,
               t,
               (double)o->nodes / t,
               atomic_load(&nodes.errors));
        t = run_creates(&pods, o->clients);
        printf("pods stored        %10ld in %.2f s (%.0f/s), %ld errors\n",
               o->pods,
               t,
               (double)o->pods / t,
               atomic_load(&pods.errors));
        printf("server RSS         %10ld KiB (peak %ld KiB)\n",
               server_child_kib(ch, "VmRSS"),
               server_child_kib(ch, "VmHWM"));
        print_list(ch, "list of every pod", "/api/v1/pods");
        print_list(ch,
                   "list of pods, group=g7 (1 in 100)",
                   "/api/v1/namespaces/default/pods?labelSelector=group%3Dg7");
        print_list(ch, "list of every node", "/api/v1/nodes");
        printf("server RSS         %10ld KiB (peak %ld KiB) after the lists\n",
               server_child_kib(ch, "VmRSS"),
               server_child_kib(ch, "VmHWM"));
}

int main(int argc, char **argv)
{
        static const char *const extra[] = {"--no-scheduler", NULL};
        struct server_child ch = {0};
        struct xp_error err = {0};
        struct options o;
        int r;

        if (parse(argc, argv, &o) < 0) {
                fprintf(stderr,
                        "usage: bench_scale --xpool PATH [--pods N] [--nodes N] "
                        "[--clients N] [--watchers N (<= %d)] [--rate N] [--seconds N]\n",
                        WATCHERS_MAX);
                return 2;
        }
        bench_print_load("start");
        if (server_child_start("bench_scale", o.xpool, extra, &ch) < 0 ||
            http_target_parse(ch.url, &target, &err) < 0) {
                server_child_stop("bench_scale", &ch);
                return 1;
        }
        token = server_child_token(&ch);
        printf("%ld nodes, %ld pods from %ld clients; %ld watchers of %ld creates/s for %ld s\n",
               o.nodes,
               o.pods,
               o.clients,
               o.watchers,
               o.rate,
               o.seconds);
        store_phase(&o, &ch);
        r = fanout_phase(&o, &ch);
        server_child_stop("bench_scale", &ch);
        free(token);
        bench_print_load("end");
        return r < 0 ? 1 : 0;
}
