/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The scheduler core at cluster scale (issue 5, point 6): 5,000 synthetic nodes (8 GPUs each in
 * two NVLink islands, 2 NUMA nodes, 96 CPUs; every tenth node has NPUs instead, every tenth none)
 * and 100,000 pods mixing CPU-only, fractional, 1-, 2-, 4- and 8-device requests, each placed
 * with xp_sched_place() and bound with xp_sched_pod_add(). Prints placements/s, p50 and p99 per
 * placement, the unschedulable count and peak RSS. Asserts nothing.
 *
 *   build/bench/bench_sched [NODES [PODS]]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "bench_util.h"
#include "xpool/codec.h"
#include "xpool/sched.h"

static int cmp_u64(const void *a, const void *b)
{
        uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
        return (x > y) - (x < y);
}

/* A node as JSON text: kind 0 GPUs, 1 NPUs, 2 CPU only. */
static char *node_text(int i, int kind)
{
        static const char *const res[] = {"nvidia.com/gpu", "huawei.com/Ascend910"};
        static const char *const kinds[] = {"gpu", "npu"};
        static const char *const vendors[] = {"NVIDIA", "Huawei"};
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);

        fprintf(
            f,
            "{\"metadata\":{\"name\":\"node-%d\",\"labels\":{\"kubernetes.io/hostname\":\"node-%d\",\"zone\":\"z%d\"}},"
            "\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}],"
            "\"allocatable\":{\"cpu\":\"96\",\"memory\":\"768Gi\",\"pods\":\"110\"",
            i,
            i,
            i % 4);
        if (kind < 2)
                fprintf(f, ",\"%s\":\"8\"", res[kind]);
        fprintf(
            f,
            "},\"xpool\":{\"numaNodes\":[{\"id\":0,\"cpus\":\"0-47\"},{\"id\":1,\"cpus\":\"48-95\"}],\"devices\":[");
        for (int d = 0; kind < 2 && d < 8; d++)
                fprintf(
                    f,
                    "%s{\"id\":\"n%d-%s%d\",\"kind\":\"%s\",\"vendor\":\"%s\",\"resourceName\":\"%s\",\"index\":%d,"
                    "\"numaNode\":%d,\"memoryBytes\":85899345920,\"fp16TFLOPS\":989}",
                    d ? "," : "",
                    i,
                    kinds[kind],
                    d,
                    kinds[kind],
                    vendors[kind],
                    res[kind],
                    d,
                    d / 4);
        fprintf(f, "],\"links\":[");
        for (int a = 0, first = 1; kind < 2 && a < 8; a++)
                for (int b = a + 1; b < 8; b++, first = 0)
                        fprintf(
                            f,
                            "%s{\"a\":\"n%d-%s%d\",\"b\":\"n%d-%s%d\",\"level\":\"%s\",\"nvlinks\":%d}",
                            first ? "" : ",",
                            i,
                            kinds[kind],
                            a,
                            i,
                            kinds[kind],
                            b,
                            a / 4 == b / 4 ? "NVLink" : "SYS",
                            a / 4 == b / 4 ? 12 : 0);
        fprintf(f, "]}}}");
        fclose(f);
        return buf;
}

/* The pod mix, by i % 100. */
static char *pod_text(int i)
{
        int m = i % 100;
        char limits[128];
        char *buf = NULL;

        if (m < 78)
                snprintf(limits,
                         sizeof(limits),
                         "\"cpu\":\"%d\",\"memory\":\"%dGi\"",
                         1 + m % 4,
                         2 + m % 8);
        else if (m < 88)
                snprintf(limits,
                         sizeof(limits),
                         "\"cpu\":\"2\",\"memory\":\"8Gi\",\"nvidia.com/gpu\":\"%s\"",
                         m % 2 ? "250m" : "500m");
        else if (m < 93)
                snprintf(limits,
                         sizeof(limits),
                         "\"cpu\":\"8\",\"memory\":\"64Gi\",\"nvidia.com/gpu\":\"1\"");
        else if (m < 96)
                snprintf(limits,
                         sizeof(limits),
                         "\"cpu\":\"16\",\"memory\":\"128Gi\",\"nvidia.com/gpu\":\"2\"");
        else if (m < 98)
                snprintf(limits,
                         sizeof(limits),
                         "\"cpu\":\"24\",\"memory\":\"256Gi\",\"nvidia.com/gpu\":\"4\"");
        else if (m < 99)
                snprintf(limits,
                         sizeof(limits),
                         "\"cpu\":\"48\",\"memory\":\"512Gi\",\"nvidia.com/gpu\":\"8\"");
        else
                snprintf(limits,
                         sizeof(limits),
                         "\"cpu\":\"8\",\"memory\":\"64Gi\",\"huawei.com/Ascend910\":\"2\"");
        if (asprintf(
                &buf,
                "{\"metadata\":{\"name\":\"pod-%d\",\"namespace\":\"bench\",\"labels\":{\"app\":\"a%d\"}},"
                "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"i\",\"resources\":{\"limits\":{%s}}}]}}",
                i,
                i % 50,
                limits) < 0)
                return NULL;
        return buf;
}

int main(int argc, char **argv)
{
        int n_nodes = argc > 1 ? atoi(argv[1]) : 5000, n_pods = argc > 2 ? atoi(argv[2]) : 100000;
        struct xp_sched_options o = {
            .profile = XP_SCHED_SPREAD, .seed = 1, .feasible_nodes_to_find = 100};
        struct xp_sched *sched = NULL;
        struct xp_sched_stats st;
        struct xp_error err = {0};
        uint64_t *lat = calloc((size_t)n_pods, sizeof(*lat)), total = 0, t0, t_place = 0,
                 t_bind = 0;
        size_t n_lat = 0, unsched = 0;
        struct rusage ru;
        uint64_t digest =
            1469598103934665603ull; /* FNV-1a over every annotation: same seed, same digest */

        if (!lat || xp_sched_new(&o, &sched) < 0)
                return 1;
        bench_loadavg("start");
        t0 = bench_now_ns();
        for (int i = 0; i < n_nodes; i++) {
                char *text = node_text(i, i % 10 == 9 ? 2 : i % 10 == 8 ? 1 : 0);
                struct xp_node *node = NULL;
                if (xp_node_from_json_text(
                        text, strlen(text), "node", XP_DECODE_TRUSTED, &node, &err) < 0 ||
                    xp_sched_node_set(sched, node, &err) < 0) {
                        fprintf(stderr, "node %d: %s\n", i, err.msg);
                        return 1;
                }
                xp_node_free(node);
                free(text);
        }
        printf("nodes: %d added in %.2f s\n", n_nodes, (double)(bench_now_ns() - t0) / 1e9);
        for (int i = 0; i < n_pods; i++) {
                char *text = pod_text(i), *reason = NULL, *ann = NULL;
                struct xp_pod *pod = NULL;
                struct xp_placement pl = {0};
                uint64_t start;
                int r;

                if (xp_pod_from_json_text(
                        text, strlen(text), "pod", XP_DECODE_TRUSTED, &pod, &err) < 0) {
                        fprintf(stderr, "pod %d: %s\n", i, err.msg);
                        return 1;
                }
                free(text);
                start = bench_now_ns();
                r = xp_sched_place(sched, pod, &pl, &reason, &err);
                t_place += bench_now_ns() - start;
                if (r == 1) {
                        uint64_t bind = bench_now_ns();
                        if (xp_placement_to_json(&pl, &ann) < 0 ||
                            xp_strmap_set(
                                &pod->metadata.annotations, XP_PLACEMENT_ANNOTATION, ann) < 0)
                                return 1;
                        for (const char *c = ann; *c; c++)
                                digest = (digest ^ (unsigned char)*c) * 1099511628211ull;
                        pod->spec.node_name = strdup(pl.node);
                        r = xp_sched_pod_add(sched, pod, &err);
                        t_bind += bench_now_ns() - bind;
                }
                lat[n_lat] = bench_now_ns() - start;
                total += lat[n_lat++];
                if (r < 0) {
                        fprintf(stderr, "pod %d: %s\n", i, err.msg);
                        return 1;
                }
                if (reason) {
                        if (unsched++ == 0)
                                printf("first unschedulable: pod-%d: %s\n", i, reason);
                        free(reason);
                }
                free(ann);
                xp_placement_done(&pl);
                xp_pod_free(pod);
        }
        qsort(lat, n_lat, sizeof(*lat), cmp_u64);
        xp_sched_stats(sched, &st);
        getrusage(RUSAGE_SELF, &ru);
        printf("pods: %d, placed %llu, unschedulable %zu\n",
               n_pods,
               (unsigned long long)st.placements,
               unsched);
        printf("placements/s (place + pod_add): %.0f\n", (double)n_lat / ((double)total / 1e9));
        printf("per placement: p50 %.1f us, p99 %.1f us\n",
               (double)lat[n_lat / 2] / 1e3,
               (double)lat[n_lat * 99 / 100] / 1e3);
        printf("of which place %.1f us, annotation + pod_add %.1f us per pod on average\n",
               (double)t_place / 1e3 / (double)n_lat,
               (double)t_bind / 1e3 / (double)n_lat);
        printf("node checks per placement: %.1f\n", (double)st.nodes_filtered / (double)n_lat);
        printf("placements digest: %016llx\n", (unsigned long long)digest);
        printf("CPU: %.2f s user+sys\n", bench_rusage_s(&ru));
        printf("peak RSS: %.1f MiB\n", (double)ru.ru_maxrss / 1024.0);
        bench_loadavg("end");
        xp_sched_free(sched);
        free(lat);
        return 0;
}
