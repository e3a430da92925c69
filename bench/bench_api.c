/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Pod creates through the API server over HTTP: N client threads, each with its own keep-alive
 * HTTP/1.1 connection, POST distinct GPU pods until COUNT are acknowledged (201). Prints
 * creates/s, latency percentiles per create, errors and, when it started the server itself, the
 * server's peak RSS, switches and page faults. Prints figures; asserts nothing.
 *
 *   build/bench/bench_api --xpool build/xpool [--clients 32] [--creates 20000] [--token TOKEN]
 *   build/bench/bench_api --server http://127.0.0.1:6443 [...]
 *
 * The HTTP client is the small one on a plain socket of tests/tools/http_client.c (no libcurl), so
 * that the figures measure the server, not a client library. The server is started with posix_spawn
 * before any thread exists.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "http_client.h"
#include "server_child.h"
#include "xpool/macro.h"

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
                t = bench_now();
                if (c->fd < 0 && (n = http_conn_open(c, &target)) < 0) {
                        fprintf(stderr, "bench_api: connect: %s; client stops\n", strerror(-n));
                        atomic_fetch_add(&errors, 1);
                        break;
                }
                r = http_conn_exchange(c, req, (size_t)r, &close_after);
                if (r == 201) {
                        latencies[i] = bench_now() - t;
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
        struct server_child ch = {0};
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
                /* the API alone: with no nodes, the scheduler would answer every create with a
                 * status write and an Event of its own */
                static const char *const extra[] = {"--no-scheduler", NULL};

                if (server_child_start("bench_api", xpool, extra, &ch) < 0 ||
                    set_server(ch.url) < 0) {
                        server_child_stop("bench_api", &ch);
                        return 1;
                }
                child_tok = token ? NULL : server_child_token(&ch);
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
        bench_print_load("start");
        if (xpool)
                cpu0 = server_child_cpu_seconds(&ch);
        t0 = bench_now();
        for (long i = 0; i < clients; i++)
                if (pthread_create(&th[i], NULL, client, &conns[i]) != 0) {
                        fprintf(stderr, "bench_api: cannot start client %ld\n", i);
                        return 1;
                }
        for (long i = 0; i < clients; i++)
                pthread_join(th[i], NULL);
        elapsed = bench_now() - t0;
        if (xpool)
                cpu1 = server_child_cpu_seconds(&ch);

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
                kib = server_child_kib(&ch, "VmHWM");
                if (kib >= 0)
                        printf("server peak RSS    %10ld KiB\n", kib);
                else
                        printf("server peak RSS    %10s (not readable)\n", "-");
                server_child_stop("bench_api", &ch);
        } else {
                printf("server peak RSS    %10s (not our process: use --xpool)\n", "-");
        }
        /* on a small machine the clients compete with the server for the same cores */
        getrusage(RUSAGE_SELF, &ru);
        printf("client CPU         %10.2f s user+sys\n", cpu_seconds(&ru));
        if (xpool) {
                getrusage(RUSAGE_CHILDREN, &ru);
                printf("server CPU         %10.2f s user+sys\n", cpu_seconds(&ru));
                /* sleeps (waits, locks, I/O) per create do not grow with the machine's load;
                 * preemptions do */
                if (ok > 0)
                        printf("server switches    %10.2f voluntary, %.2f preempted per create "
                               "(its whole run)\n",
                               (double)ru.ru_nvcsw / (double)ok,
                               (double)ru.ru_nivcsw / (double)ok);
                /* the heap's growth: each fault a few µs of the kernel's, with the pods kept */
                if (ok > 0)
                        printf("server page faults %10.2f minor, %.2f major per create "
                               "(its whole run)\n",
                               (double)ru.ru_minflt / (double)ok,
                               (double)ru.ru_majflt / (double)ok);
        }
        bench_print_load("end");
        if (atomic_load(&errors) > 0 || ok != (size_t)count)
                r = 1;
        free(latencies);
        return r;
}
