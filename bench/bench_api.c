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
 * The HTTP client is the small one on a plain socket of tests/tools/http_client.c (no libcurl), so
 * that the figures measure the server, not a client library. The server is started with posix_spawn
 * before any thread exists.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "http_client.h"
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
#define MAX_CLIENTS 1024

static struct http_target target;
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

/* Points the clients at url; says what is wrong with it as --server. */
static int set_server(const char *url)
{
        struct xp_error err = {0};
        int r = http_target_parse(url, &target, &err);

        if (r < 0)
                fprintf(stderr, "bench_api: --server %s: %s\n", url, xp_error_message(&err));
        return r;
}

static void *client(void *arg)
{
        struct http_conn *c = arg;
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
                snprintf(body, sizeof(body), pod_template, name);
                r = http_format_json_request(
                    req, sizeof(req), "POST", PODS_PATH, &target, "application/json", token, body);
                if (r < 0) {
                        fprintf(stderr, "bench_api: request for %s does not fit\n", name);
                        atomic_fetch_add(&errors, 1);
                        continue;
                }
                t = now();
                if (c->fd < 0 && (n = http_conn_open(c, &target)) < 0) {
                        fprintf(stderr, "bench_api: connect: %s; client stops\n", strerror(-n));
                        atomic_fetch_add(&errors, 1);
                        break;
                }
                r = http_conn_exchange(c, req, (size_t)r, &close_after);
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
                        http_conn_close(c);
        }
        http_conn_close(c);
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
                        /* the API alone: with no nodes, the scheduler would answer every
                         * create with a status write and an Event of its own */
                        "--no-scheduler",
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
                                return set_server(url);
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

/* The server's CPU time so far (utime + stime from /proc/PID/stat), in seconds; -1 unknown. */
static double child_cpu_seconds(const struct child *ch)
{
        char path[64], buf[1024], *p;
        unsigned long utime, stime;
        ssize_t n;
        int fd;

        snprintf(path, sizeof(path), "/proc/%d/stat", (int)ch->pid);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -1;
        n = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        if (n <= 0)
                return -1;
        buf[n] = '\0';
        /* after the command's name in parentheses: state is field 3, utime 14, stime 15 */
        p = strrchr(buf, ')');
        if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &utime, &stime) != 2)
                return -1;
        return (double)(utime + stime) / (double)sysconf(_SC_CLK_TCK);
}

static void print_load(const char *when)
{
        double load[3];

        if (getloadavg(load, 3) == 3)
                printf("load average (%s) %.2f %.2f %.2f\n", when, load[0], load[1], load[2]);
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
        _cleanup_free_ struct http_conn *conns = NULL;
        _cleanup_free_ pthread_t *th = NULL;
        struct child ch = {0};
        struct rusage ru;
        long clients = 32, kib = -1;
        size_t ok = 0;
        double t0, elapsed, cpu0 = -1, cpu1 = -1;
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
        } else if (set_server(server) < 0) {
                return 1;
        }

        printf("%ld clients, %ld creates of a %d-byte pod, against %s (%s)%s\n",
               clients,
               count,
               snprintf(NULL, 0, pod_template, "bench-xxxxxx-xxxxxxxx-0"),
               target.host,
               server,
               token ? ", with a bearer token" : "");
        print_load("start");
        if (xpool)
                cpu0 = child_cpu_seconds(&ch);
        t0 = now();
        for (long i = 0; i < clients; i++)
                if (pthread_create(&th[i], NULL, client, &conns[i]) != 0) {
                        fprintf(stderr, "bench_api: cannot start client %ld\n", i);
                        return 1;
                }
        for (long i = 0; i < clients; i++)
                pthread_join(th[i], NULL);
        elapsed = now() - t0;
        if (xpool)
                cpu1 = child_cpu_seconds(&ch);

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
        /* the figure that does not depend on what else the machine runs */
        if (cpu0 >= 0 && cpu1 >= 0 && ok > 0)
                printf("server CPU/create  %10.0f us (user+sys during the run / creates)\n",
                       (cpu1 - cpu0) * 1e6 / (double)ok);
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
        print_load("end");
        if (atomic_load(&errors) > 0 || ok != (size_t)count)
                r = 1;
        free(latencies);
        return r;
}
