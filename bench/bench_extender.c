/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The scheduler extender at cluster scale (issue 14): 5,000 Nodes as the API serves them, their
 * devices in the xpool.io/inventory annotation (4,000 with 8 GPUs in two NVLink islands, 500 with
 * 8 NPUs, 500 CPU-only; 96 CPUs on 2 NUMA nodes), 20,000 bound pods holding GPUs, then one pod
 * after another answered as kube-scheduler asks: filter, then prioritize, over every node. The
 * time of one pod is both requests through xp_extender_handle(): the JSON body in, the core's
 * verdicts, the JSON answer out. Prints p50 and p99 for NodeNames (nodeCacheCapable) requests,
 * the same over HTTP on loopback, and for whole Nodes. Asserts nothing.
 *
 * Each run is preceded by untimed warm-up pods (caches, page faults, the CPU's clock) and p99
 * is over 1,000 pods; the load average is printed before and after, since on a shared machine
 * the tail is mostly waiting for a core. BENCH_PHASES=1 splits the in-process time into its
 * phases: reading the request, the core's evaluation (with the cache's lock) and writing the
 * answer.
 *
 *   build/bench/bench_extender [NODES [PODS]]      (BENCH_SHAPES=1: CPU time per pod shape too)
 *
 * Over HTTP the requests go as kube-scheduler sends them, without "Expect: 100-continue"
 * (BENCH_EXPECT=1: with it, libcurl's default, for comparison).
 */
#include <curl/curl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "xpool/extender.h"

static uint64_t now_ns(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* CPU time of the whole process: over HTTP, the server's thread and curl's together */
static uint64_t process_cpu_ns(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
        return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t cpu_ns(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
        uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
        return (x > y) - (x < y);
}

/* The inventory annotation of a node: kind 0 GPUs, 1 NPUs. */
static char *inventory(int i, int kind)
{
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);

        fprintf(
            f,
            "{\"version\":1,\"numaNodes\":[{\"id\":0,\"cpus\":\"0-47\"},{\"id\":1,\"cpus\":\"48-95\"}],\"devices\":[");
        for (int d = 0; d < 8; d++) {
                if (d == 0)
                        fprintf(
                            f,
                            "{\"id\":\"n%d-0\",\"resource\":\"%s\",\"kind\":\"%s\",\"vendor\":\"%s\",\"model\":\"%s\",\"memoryBytes\":%lld,\"index\":0,\"numaNode\":0}",
                            i,
                            kind ? "huawei.com/Ascend910" : "nvidia.com/gpu",
                            kind ? "npu" : "gpu",
                            kind ? "Huawei" : "NVIDIA",
                            kind ? "Ascend 910B" : "NVIDIA H100 80GB HBM3",
                            kind ? 68719476736LL : 85520809984LL);
                else
                        fprintf(
                            f, ",{\"id\":\"n%d-%d\",\"index\":%d,\"numaNode\":%d}", i, d, d, d / 4);
        }
        fprintf(f, "],\"links\":[");
        for (int a = 0; a < 7; a++) {
                fprintf(f, "%s\"", a ? "," : "");
                for (int b = a + 1; b < 8; b++)
                        fprintf(f, "%s%s", b > a + 1 ? " " : "", a % 2 == b % 2 ? "NV12" : "SYS");
                fprintf(f, "\"");
        }
        fprintf(f, "]}");
        fclose(f);
        return buf;
}

static json_t *node(int i)
{
        int kind = i % 10 == 8 ? 1 : i % 10 == 9 ? 2 : 0;
        json_t *n =
            json_pack("{s:{s:s%, s:{s:s%, s:s}, s:{}}, s:{s:[{s:s, s:s}], s:{s:s, s:s, s:s}}}",
                      "metadata",
                      "name",
                      "",
                      (size_t)0,
                      "labels",
                      "kubernetes.io/hostname",
                      "",
                      (size_t)0,
                      "topology.kubernetes.io/zone",
                      "z",
                      "annotations",
                      "status",
                      "conditions",
                      "type",
                      "Ready",
                      "status",
                      "True",
                      "allocatable",
                      "cpu",
                      "96",
                      "memory",
                      "768Gi",
                      "pods",
                      "110");
        char name[32];

        snprintf(name, sizeof(name), "node-%d", i);
        json_object_set_new(json_object_get(n, "metadata"), "name", json_string(name));
        json_object_set_new(json_object_get(json_object_get(n, "metadata"), "labels"),
                            "kubernetes.io/hostname",
                            json_string(name));
        if (kind < 2) {
                char *inv = inventory(i, kind);
                json_object_set_new(json_object_get(json_object_get(n, "metadata"), "annotations"),
                                    "xpool.io/inventory",
                                    json_string(inv));
                json_object_set_new(json_object_get(json_object_get(n, "status"), "allocatable"),
                                    kind ? "huawei.com/Ascend910" : "nvidia.com/gpu",
                                    json_string("8"));
                free(inv);
        }
        return n;
}

static json_t *pod(const char *name, const char *limits_json, const char *node_name)
{
        json_t *limits = json_loads(limits_json, 0, NULL);
        json_t *p = json_pack("{s:{s:s, s:s, s:{s:s}}, s:{s:[{s:s, s:s, s:{s:o}}]}, s:{s:s}}",
                              "metadata",
                              "name",
                              name,
                              "namespace",
                              "bench",
                              "labels",
                              "app",
                              "trainer",
                              "spec",
                              "containers",
                              "name",
                              "c",
                              "image",
                              "pytorch",
                              "resources",
                              "limits",
                              limits,
                              "status",
                              "phase",
                              node_name ? "Running" : "Pending");
        if (node_name)
                json_object_set_new(json_object_get(p, "spec"), "nodeName", json_string(node_name));
        return p;
}

static const char *const shapes[] = {
    "{\"nvidia.com/gpu\":\"1\",\"cpu\":\"8\",\"memory\":\"64Gi\"}",
    "{\"nvidia.com/gpu\":\"2\",\"cpu\":\"16\",\"memory\":\"128Gi\"}",
    "{\"nvidia.com/gpu\":\"4\",\"cpu\":\"32\",\"memory\":\"256Gi\"}",
    "{\"nvidia.com/gpu\":\"500m\"}",
    "{\"xpool.io/accelerator\":\"2\"}",
};

/* The request bodies for pod k: NodeNames, or whole Nodes. */
static char *request(int k, const json_t *names, const json_t *nodes)
{
        char name[32];
        json_t *p, *args;
        char *text;

        snprintf(name, sizeof(name), "pending-%d", k);
        p = pod(name, shapes[k % 5], NULL);
        args = nodes ? json_pack("{s:o, s:{s:{}, s:O}, s:n}",
                                 "Pod",
                                 p,
                                 "Nodes",
                                 "metadata",
                                 "items",
                                 nodes,
                                 "NodeNames")
                     : json_pack("{s:o, s:n, s:O}", "Pod", p, "Nodes", "NodeNames", names);
        text = json_dumps(args, JSON_COMPACT);
        json_decref(args);
        return text;
}

static void report(const char *what, uint64_t *t, size_t n, size_t bytes)
{
        qsort(t, n, sizeof(*t), cmp_u64);
        printf("%-40s p50 %7.2f ms   p99 %7.2f ms   max %7.2f ms   (%zu pods, request %zu KiB)\n",
               what,
               (double)t[n / 2] / 1e6,
               (double)t[(n * 99) / 100] / 1e6,
               (double)t[n - 1] / 1e6,
               n,
               bytes / 1024);
}

static void print_load(const char *when)
{
        double l[3];

        if (getloadavg(l, 3) == 3)
                printf("load average %s: %.2f %.2f %.2f\n", when, l[0], l[1], l[2]);
}

/* The phases of one pod's filter and prioritize, in process (BENCH_PHASES=1): reading the body,
 * writing both answers from made-up verdicts of the same size, and the rest (the core's
 * evaluation under the cache's lock) as the whole minus those. */
static void phases(struct xp_extender *e, const json_t *names, int pods, int warm)
{
        uint64_t *dec = calloc((size_t)pods, sizeof(*dec)),
                 *enc = calloc((size_t)pods, sizeof(*enc)),
                 *rest = calloc((size_t)pods, sizeof(*rest));
        size_t bytes = 0;

        for (int k = -warm; k < pods && dec && enc && rest; k++) {
                char *body = request(k < 0 ? -k : k, names, NULL), *out;
                size_t len = strlen(body);
                struct xp_extender_args a = {0};
                struct xp_sched_verdict *v;
                struct xp_error err = {0};
                uint64_t s = now_ns(), d, w, whole;

                xp_extender_args_decode(body, len, &a, &err);
                d = now_ns() - s;
                v = calloc(a.n_names ? a.n_names : 1, sizeof(*v));
                for (size_t i = 0; v && i < a.n_names; i++)
                        v[i] = (struct xp_sched_verdict){
                            .fit = i % 3 != 0,
                            .reason = i % 3 ? NULL : "Insufficient nvidia.com/gpu",
                            .score = (int64_t)i,
                            .best = i == 1};
                s = now_ns();
                if (v && xp_extender_filter_result(&a, v, "unknown", &out) == 0)
                        free(out);
                if (v && xp_extender_priorities(&a, v, &out) == 0)
                        free(out);
                w = now_ns() - s;
                free(v);
                xp_extender_args_done(&a);
                s = now_ns();
                xp_extender_handle(e, "filter", body, len, &out);
                free(out);
                xp_extender_handle(e, "prioritize", body, len, &out);
                free(out);
                whole = now_ns() - s;
                if (k >= 0) {
                        dec[k] = 2 * d; /* filter and prioritize each read the body */
                        enc[k] = w;
                        rest[k] = whole > 2 * d + w ? whole - 2 * d - w : 0;
                }
                bytes = len;
                free(body);
        }
        if (dec && enc && rest) {
                report("  phase: read both requests", dec, (size_t)pods, bytes);
                report("  phase: write both answers", enc, (size_t)pods, bytes);
                report("  phase: evaluate (the rest)", rest, (size_t)pods, bytes);
        }
        free(dec);
        free(enc);
        free(rest);
}

static size_t sink(char *ptr, size_t size, size_t n, void *userdata)
{
        (void)ptr;
        (void)userdata;
        return size * n;
}

static uint64_t http_post(CURL *c, const char *url, const char *body)
{
        uint64_t t0 = now_ns();

        curl_easy_setopt(c, CURLOPT_URL, url);
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        curl_easy_perform(c);
        return now_ns() - t0;
}

int main(int argc, char **argv)
{
        int n_nodes = argc > 1 ? atoi(argv[1]) : 5000, n_bound = argc > 2 ? atoi(argv[2]) : 20000;
        int pods_timed = 1000, pods_http = 1000, pods_whole = 30, warm = 50;
        struct xp_extender_options o = {
            .no_api = true, .listen_host = "127.0.0.1", .sched = {.seed = 1}};
        struct xp_extender *e = NULL;
        struct xp_error err = {0};
        json_t *names = json_array(), *nodes = json_array();
        uint64_t *t = calloc((size_t)pods_timed, sizeof(*t)),
                 *cpu = calloc((size_t)pods_timed, sizeof(*cpu)),
                 *fcpu = calloc((size_t)pods_timed, sizeof(*fcpu)), t0;
        struct rusage ru;
        char url[64];
        size_t bytes = 0;
        struct curl_slist *no_expect = curl_slist_append(NULL, "Expect:");
        CURL *c;

        if (xp_extender_new(&o, &e, &err) < 0) {
                fprintf(stderr, "bench_extender: %s\n", err.msg);
                return 1;
        }
        t0 = now_ns();
        for (int i = 0; i < n_nodes; i++) {
                json_t *n = node(i);
                if (xp_extender_node_set(e, n, &err) < 0) {
                        fprintf(stderr, "node %d: %s\n", i, err.msg);
                        return 1;
                }
                json_array_append(names, json_object_get(json_object_get(n, "metadata"), "name"));
                json_array_append_new(nodes, n);
        }
        printf("nodes: %d fed in %.2f s\n", n_nodes, (double)(now_ns() - t0) / 1e9);
        t0 = now_ns();
        for (int k = 0; k < n_bound; k++) {
                char name[32], on[32];
                json_t *p;
                snprintf(name, sizeof(name), "bound-%d", k);
                snprintf(on,
                         sizeof(on),
                         "node-%d",
                         (k * 7) % n_nodes - ((k * 7) % n_nodes) % 10 + k % 8);
                p = pod(name, shapes[k % 3], on);
                if (xp_extender_pod_set(e, p, &err) < 0) {
                        fprintf(stderr, "pod %d: %s\n", k, err.msg);
                        return 1;
                }
                json_decref(p);
        }
        printf("bound pods: %d fed in %.2f s\n", n_bound, (double)(now_ns() - t0) / 1e9);

        /* NodeNames, in process: the extender's own cost, as elapsed and as CPU time (on a shared
         * machine the first includes waiting for a core) */
        print_load("before");
        for (int k = -warm; k < pods_timed; k++) {
                char *body = request(k < 0 ? -k : k, names, NULL), *out;
                size_t len = strlen(body);
                uint64_t s = now_ns(), c0 = cpu_ns();
                xp_extender_handle(e, "filter", body, len, &out);
                free(out);
                if (k >= 0)
                        fcpu[k] = cpu_ns() - c0;
                xp_extender_handle(e, "prioritize", body, len, &out);
                if (k >= 0) {
                        t[k] = now_ns() - s;
                        cpu[k] = cpu_ns() - c0;
                }
                free(out);
                bytes = len;
                free(body);
        }
        report("filter+prioritize, NodeNames", t, (size_t)pods_timed, bytes);
        for (int sh = 0; sh < 5 && getenv("BENCH_SHAPES"); sh++) {
                uint64_t st[100];
                int m = 0;
                for (int k = sh; k < pods_timed && m < 100; k += 5)
                        st[m++] = cpu[k];
                report(shapes[sh], st, (size_t)m, bytes);
        }
        report("  the same, CPU time", cpu, (size_t)pods_timed, bytes);
        report("  of which filter, CPU time", fcpu, (size_t)pods_timed, bytes);
        if (getenv("BENCH_PHASES"))
                phases(e, names, pods_timed, warm);

        /* the same over HTTP on loopback, one kept-alive connection as kube-scheduler's */
        curl_global_init(CURL_GLOBAL_DEFAULT);
        c = curl_easy_init();
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sink);
        /* as kube-scheduler posts (Go's client sends no Expect): libcurl's default for a body
         * over 1 KiB, "Expect: 100-continue", waits for the server's 100 before the body, one
         * more round trip and two more thread hand-offs per request than the scheduler pays */
        if (!getenv("BENCH_EXPECT"))
                curl_easy_setopt(c, CURLOPT_HTTPHEADER, no_expect);
        for (int k = -warm; k < pods_http; k++) {
                char *body = request(k < 0 ? -k : k, names, NULL);
                uint64_t c0 = process_cpu_ns(), client0 = cpu_ns(), el, all;
                snprintf(url, sizeof(url), "http://127.0.0.1:%u/filter", xp_extender_port(e));
                el = http_post(c, url, body);
                snprintf(url, sizeof(url), "http://127.0.0.1:%u/prioritize", xp_extender_port(e));
                el += http_post(c, url, body);
                if (k >= 0) {
                        t[k] = el;
                        all = process_cpu_ns() - c0;
                        cpu[k] = all;
                        /* curl runs on this thread: the rest is the extender's */
                        fcpu[k] = all - (cpu_ns() - client0);
                }
                free(body);
        }
        report("filter+prioritize, NodeNames over HTTP", t, (size_t)pods_http, bytes);
        report("  the same, CPU time (server and client)", cpu, (size_t)pods_http, bytes);
        report("  of which the extender, CPU time", fcpu, (size_t)pods_http, bytes);
        curl_easy_cleanup(c);
        curl_slist_free_all(no_expect);

        /* whole Nodes (not nodeCacheCapable): the bodies dominate */
        for (int k = 0; k < pods_whole; k++) {
                char *body = request(k, NULL, nodes), *out;
                size_t len = strlen(body);
                uint64_t s = now_ns();
                xp_extender_handle(e, "filter", body, len, &out);
                free(out);
                xp_extender_handle(e, "prioritize", body, len, &out);
                t[k] = now_ns() - s;
                free(out);
                bytes = len;
                free(body);
        }
        report("filter+prioritize, whole Nodes", t, (size_t)pods_whole, bytes);

        print_load("after");
        getrusage(RUSAGE_SELF, &ru);
        printf("peak RSS: %.1f MiB\n", (double)ru.ru_maxrss / 1024);
        xp_extender_free(e);
        json_decref(names);
        json_decref(nodes);
        free(t);
        free(cpu);
        free(fcpu);
        curl_global_cleanup();
        return 0;
}
