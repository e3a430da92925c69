/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Gangs in the scheduler core at cluster scale (issue 19): NODES synthetic nodes (8 whole GPUs,
 * 96 CPUs; labelled in zones of 100 nodes and NVLink cliques of 8), then
 *  1. PODS pods placed as gangs of 8 one-GPU members (xp_sched_gang_place(), committed),
 *     interleaved with as many single pods (xp_sched_place() + xp_sched_pod_add()):
 *     placements/s over all of them;
 *  2. one 1,000-member gang of 8-GPU pods on a fresh snapshot (not committed, so each run
 *     starts alike): the time of one call, best and median of RUNS.
 * Prints the load average at start and end (the machine is shared). Asserts nothing.
 *
 *   build/bench/bench_gang [NODES [PODS [RUNS]]]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"
#include "xpool/codec.h"
#include "xpool/gang.h"
#include "xpool/sched.h"

#define GANG 8

static int cmp_u64(const void *a, const void *b)
{
        uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
        return (x > y) - (x < y);
}

static struct xp_sched *cluster(int n_nodes)
{
        struct xp_sched_options o = {
            .profile = XP_SCHED_SPREAD, .seed = 1, .feasible_nodes_to_find = 100};
        struct xp_sched *sched = NULL;
        struct xp_error err = {0};

        if (xp_sched_new(&o, &sched) < 0)
                return NULL;
        for (int i = 0; i < n_nodes; i++) {
                char *buf = NULL;
                size_t len = 0;
                FILE *f = open_memstream(&buf, &len);
                struct xp_node *node = NULL;

                fprintf(
                    f,
                    "{\"metadata\":{\"name\":\"node-%d\",\"labels\":{"
                    "\"topology.kubernetes.io/zone\":\"z%d\",\"nvidia.com/gpu.clique\":\"c%d\"}},"
                    "\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}],"
                    "\"allocatable\":{\"cpu\":\"96\",\"memory\":\"768Gi\",\"pods\":\"110\","
                    "\"nvidia.com/gpu\":\"8\"},\"xpool\":{\"devices\":[",
                    i,
                    i / 100,
                    i / 8);
                for (int d = 0; d < 8; d++)
                        fprintf(f,
                                "%s{\"id\":\"n%d-gpu%d\",\"kind\":\"gpu\",\"vendor\":\"NVIDIA\","
                                "\"resourceName\":\"nvidia.com/gpu\",\"index\":%d,"
                                "\"memoryBytes\":85899345920}",
                                d ? "," : "",
                                i,
                                d,
                                d);
                fprintf(f, "]}}}");
                fclose(f);
                if (xp_node_from_json_text(buf, len, "node", XP_DECODE_TRUSTED, &node, &err) < 0 ||
                    xp_sched_node_set(sched, node, &err) < 0) {
                        fprintf(stderr, "node %d: %s\n", i, err.msg);
                        return NULL;
                }
                xp_node_free(node);
                free(buf);
        }
        return sched;
}

static struct xp_pod *pod(const char *prefix, int i, int gpus)
{
        struct xp_pod *p = NULL;
        struct xp_error err = {0};
        char *text = NULL;

        if (asprintf(
                &text,
                "{\"metadata\":{\"name\":\"%s-%d\",\"namespace\":\"bench\"},"
                "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"i\",\"resources\":"
                "{\"limits\":{\"cpu\":\"4\",\"memory\":\"16Gi\",\"nvidia.com/gpu\":\"%d\"}}}]}}",
                prefix,
                i,
                gpus) < 0 ||
            xp_pod_from_json_text(text, strlen(text), "pod", XP_DECODE_TRUSTED, &p, &err) < 0) {
                fprintf(stderr, "pod: %s\n", err.msg);
                exit(1);
        }
        free(text);
        return p;
}

/* Gangs of GANG one-GPU members and single pods, alternately, n pods in all. */
static void mixed(struct xp_sched *sched, int n)
{
        struct xp_gang_options o;
        uint64_t t_gang = 0, t_single = 0, c_gang = 0, c_single = 0, c;
        int gang_pods = 0, singles = 0, failed = 0;

        xp_gang_options_default(&o);
        o.commit = true;
        for (int i = 0; i < n; i += 2 * GANG) {
                struct xp_pod *members[GANG];
                struct xp_gang_result res = {0};
                struct xp_error err = {0};
                char *reason = NULL;
                uint64_t start;
                int r;

                for (int k = 0; k < GANG; k++)
                        members[k] = pod("g", i + k, 1);
                start = bench_now_ns();
                c = bench_cpu_ns();
                r = xp_sched_gang_place(
                    sched, (const struct xp_pod *const *)members, GANG, &o, &res, &reason, &err);
                t_gang += bench_now_ns() - start;
                c_gang += bench_cpu_ns() - c;
                failed += r != 1;
                gang_pods += GANG;
                xp_gang_result_done(&res);
                free(reason);
                for (int k = 0; k < GANG; k++)
                        xp_pod_free(members[k]);
                for (int k = 0; k < GANG; k++) {
                        struct xp_pod *p = pod("s", i + GANG + k, 1);
                        struct xp_placement pl = {0};
                        char *ann = NULL;

                        start = bench_now_ns();
                        c = bench_cpu_ns();
                        r = xp_sched_place(sched, p, &pl, &reason, &err);
                        if (r == 1 && xp_placement_to_json(&pl, &ann) >= 0 &&
                            xp_strmap_set(&p->metadata.annotations, XP_PLACEMENT_ANNOTATION, ann) >=
                                0) {
                                p->spec.node_name = strdup(pl.node);
                                r = xp_sched_pod_add(sched, p, &err);
                        }
                        t_single += bench_now_ns() - start;
                        c_single += bench_cpu_ns() - c;
                        failed += r != 1 && r != 0;
                        singles++;
                        free(ann);
                        free(reason);
                        reason = NULL;
                        xp_placement_done(&pl);
                        xp_pod_free(p);
                }
        }
        printf("gang members placed: %d in gangs of %d: %.0f placements/s wall, %.0f/s CPU\n",
               gang_pods,
               GANG,
               (double)gang_pods / ((double)t_gang / 1e9),
               (double)gang_pods / ((double)c_gang / 1e9));
        printf("single pods placed and bound: %d: %.0f placements/s wall, %.0f/s CPU\n",
               singles,
               (double)singles / ((double)t_single / 1e9),
               (double)singles / ((double)c_single / 1e9));
        printf("all together: %.0f placements/s wall, %.0f/s CPU; failures: %d\n",
               (double)(gang_pods + singles) / ((double)(t_gang + t_single) / 1e9),
               (double)(gang_pods + singles) / ((double)(c_gang + c_single) / 1e9),
               failed);
}

/* One gang of n 8-GPU members, runs times on the same snapshot (left unchanged each time). */
static void big_gang(struct xp_sched *sched, int n, int runs)
{
        struct xp_pod **members = calloc((size_t)n, sizeof(*members));
        uint64_t *t = calloc((size_t)runs, sizeof(*t)), *ct = calloc((size_t)runs, sizeof(*ct));
        struct xp_gang_options o;

        xp_gang_options_default(&o);
        for (int i = 0; i < n; i++)
                members[i] = pod("big", i, 8);
        for (int k = 0; k < runs; k++) {
                struct xp_gang_result res = {0};
                struct xp_error err = {0};
                char *reason = NULL;
                uint64_t start = bench_now_ns(), c = bench_cpu_ns();
                int r = xp_sched_gang_place(sched,
                                            (const struct xp_pod *const *)members,
                                            (size_t)n,
                                            &o,
                                            &res,
                                            &reason,
                                            &err);

                t[k] = bench_now_ns() - start;
                ct[k] = bench_cpu_ns() - c;
                if (r != 1)
                        printf(
                            "run %d: not placed (%d): %s%s\n", k, r, reason ? reason : "", err.msg);
                else if (k == 0)
                        printf("%d-member gang: within %s, %zu domain(s)\n",
                               n,
                               res.key ? res.key : "(no key)",
                               res.domains);
                xp_gang_result_done(&res);
                free(reason);
        }
        qsort(t, (size_t)runs, sizeof(*t), cmp_u64);
        qsort(ct, (size_t)runs, sizeof(*ct), cmp_u64);
        printf("%d-member gang of 8-GPU pods placed in: wall best %.1f ms, median %.1f ms; CPU "
               "best %.1f ms, median %.1f ms (%d runs)\n",
               n,
               (double)t[0] / 1e6,
               (double)t[runs / 2] / 1e6,
               (double)ct[0] / 1e6,
               (double)ct[runs / 2] / 1e6,
               runs);
        for (int i = 0; i < n; i++)
                xp_pod_free(members[i]);
        free(members);
        free(t);
        free(ct);
}

int main(int argc, char **argv)
{
        int n_nodes = argc > 1 ? atoi(argv[1]) : 5000, n_pods = argc > 2 ? atoi(argv[2]) : 20000,
            runs = argc > 3 ? atoi(argv[3]) : 5;
        struct xp_sched *sched;

        if (n_nodes < 1 || n_pods < 1 || runs < 1) {
                fprintf(stderr, "usage: bench_gang [NODES [PODS [RUNS]]]\n");
                return 2;
        }
        bench_loadavg("start");
        sched = cluster(n_nodes);
        if (!sched)
                return 1;
        printf("nodes: %d (8 GPUs each; zones of 100, NVLink cliques of 8)\n", n_nodes);
        mixed(sched, n_pods);
        xp_sched_free(sched);
        sched = cluster(n_nodes);
        if (!sched)
                return 1;
        big_gang(sched, 1000, runs);
        xp_sched_free(sched);
        bench_loadavg("end");
        return 0;
}
