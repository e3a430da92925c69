/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The trace simulator's speed (issue 20): one replay of the Alibaba GPU trace (the paper's 1,213
 * nodes, the default pod list inflated to 130 % of the GPUs, seed 42) per policy, and the
 * arrivals it placed or dropped per second of wall clock and of this thread's CPU (the machine
 * is shared: the CPU figure is what the load does not inflate). Prints the load average at start
 * and end. Asserts nothing.
 *
 *   build/bench/bench_sim [DATA_DIR [POLICY,...]]
 *
 * DATA_DIR holds openb_node_list_gpu_node.csv and openb_pod_list_default.csv (default: the
 * shared data folder beside the checkout, ../shared/data/alibaba-gpu-v2023).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"
#include "xpool/sim.h"

static int bench_one(const struct xp_sim_trace *t, enum xp_sched_profile profile)
{
        struct xp_sim_options o = {.profile = profile, .seed = 42, .percent = 130};
        struct xp_sim_result r = {0};
        struct xp_error err = {0};
        double wall = bench_clock_s(CLOCK_MONOTONIC), cpu = bench_clock_s(CLOCK_THREAD_CPUTIME_ID);

        if (xp_sim_run(t, &o, &r, &err) < 0) {
                fprintf(
                    stderr, "bench_sim: %s: %s\n", xp_sched_profile_to_string(profile), err.msg);
                return -1;
        }
        wall = bench_clock_s(CLOCK_MONOTONIC) - wall;
        cpu = bench_clock_s(CLOCK_THREAD_CPUTIME_ID) - cpu;
        printf("%-14s %7zu %12.0f %12.0f %10.2f %9.2f %%\n",
               xp_sched_profile_to_string(profile),
               r.arrived,
               (double)r.arrived / r.seconds,
               (double)r.arrived / cpu,
               wall,
               100 * r.ratio[130]);
        xp_sim_result_done(&r);
        return 0;
}

int main(int argc, char **argv)
{
        const char *dir = argc > 1 ? argv[1] : "../shared/data/alibaba-gpu-v2023";
        char *list = strdup(argc > 2 ? argv[2]
                                     : "random,dotprod,gpuclustering,gpupacking,"
                                       "bestfit,fgd,xpool");
        char nodes[4096], pods[4096], *save = NULL;
        struct xp_sim_trace t = {0};
        struct xp_error err = {0};
        int rc = 0;

        snprintf(nodes, sizeof(nodes), "%s/openb_node_list_gpu_node.csv", dir);
        snprintf(pods, sizeof(pods), "%s/openb_pod_list_default.csv", dir);
        if (!list || xp_sim_read_nodes(nodes, &t, &err) < 0 ||
            xp_sim_read_pods(pods, &t, &err) < 0) {
                fprintf(stderr, "bench_sim: %s\n", list ? err.msg : "out of memory");
                xp_sim_trace_done(&t);
                free(list);
                return 1;
        }
        bench_loadavg("start");
        printf("%zu nodes, %zu trace pods, seed 42, arrivals to 130 %% of the GPUs\n",
               t.n_nodes,
               t.n_pods);
        printf("%-14s %7s %12s %12s %10s %10s\n",
               "POLICY",
               "ARRIVED",
               "PLACED/S",
               "PLACED/CPU-S",
               "WALL-S",
               "ALLOC@130");
        for (char *p = strtok_r(list, ",", &save); p && rc == 0; p = strtok_r(NULL, ",", &save)) {
                enum xp_sched_profile profile;
                if (xp_sched_profile_from_string(p, &profile) < 0) {
                        fprintf(stderr, "bench_sim: unknown policy '%s'\n", p);
                        rc = 1;
                        break;
                }
                if (bench_one(&t, profile) < 0)
                        rc = 1;
                fflush(stdout);
        }
        bench_loadavg("end");
        xp_sim_trace_done(&t);
        free(list);
        return rc;
}
