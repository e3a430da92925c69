/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The agent's metrics on an 8-GPU node (docs/monitoring.md, "Cost"): the fake NVML's eight H100s
 * (tests/data/nvml/h100-8x-nvswitch.json) with eight pods holding one GPU each. Prints the time
 * of a device sample (every NVML call), of one rendering of /metrics (text and OpenMetrics) and
 * /metrics/resource, and of a scrape's own work (copying the last rendering), p50 and p99.
 *
 *   build/bench/bench_metrics [ROUNDS]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent/metrics_internal.h"
#include "xpool/devsample.h"
#include "xpool/expo.h"

static double now_us(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int compare(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;

        return x < y ? -1 : x > y;
}

static void report(const char *what, double *t, size_t n)
{
        qsort(t, n, sizeof(*t), compare);
        printf("%-40s p50 %8.1f us   p99 %8.1f us\n", what, t[n / 2], t[n * 99 / 100]);
}

static struct mview make_view(const struct xp_node_inventory *inv)
{
        static struct mview_pod pods[8];
        static struct mview_container containers[8];
        static struct xp_placement_device devices[8];
        static char names[8][32], uids[8][32];
        struct mview v = {
            .pods = pods, .node_cpus = 112, .has_node_cpu = true, .has_node_memory = true};

        for (size_t i = 0; i < 8 && i < inv->devices.n; i++) {
                snprintf(names[i], sizeof(names[i]), "train-%zu", i);
                snprintf(uids[i], sizeof(uids[i]), "uid-%zu", i);
                containers[i] =
                    (struct mview_container){.name = (char *)"trainer",
                                             .has_usage = true,
                                             .usage = {.has = 15, .cpu_ns = 1000000000ULL * i}};
                devices[i] = (struct xp_placement_device){.resource = (char *)"nvidia.com/gpu",
                                                          .id = inv->devices.items[i].id,
                                                          .milli = 1000};
                pods[i] = (struct mview_pod){.uid = uids[i],
                                             .namespace = (char *)"default",
                                             .name = names[i],
                                             .device_container = (char *)"trainer",
                                             .containers = &containers[i],
                                             .n_containers = 1};
                pods[i].placement.devices.items = &devices[i];
                pods[i].placement.devices.n = 1;
                v.n_pods++;
        }
        return v;
}

int main(int argc, char **argv)
{
        static const char *const backends[] = {"nvml", NULL};
        size_t rounds = argc > 1 ? strtoul(argv[1], NULL, 10) : 2000, n_text = 0;
        double *t_sample = calloc(rounds, sizeof(double)),
               *t_render = calloc(rounds, sizeof(double));
        double *t_scrape = calloc(rounds, sizeof(double));
        struct xp_discovery_config config = {.nvml_library = XPOOL_FAKE_NVML, .backends = backends};
        struct xp_node_inventory *inv = NULL;
        struct xp_device_sampler *sampler = NULL;
        struct xp_error err = {0};
        char path[512];

        snprintf(path, sizeof(path), "%s/nvml/h100-8x-nvswitch.json", XPOOL_TEST_DATA);
        setenv("FAKE_NVML_CONFIG", path, 1);
        if (!t_sample || !t_render || !t_scrape || xp_device_discover(&config, &inv, &err) < 0 ||
            xp_device_sampler_new(&config, inv, &sampler, &err) < 0) {
                fprintf(stderr, "bench_metrics: %s\n", err.msg);
                return 1;
        }
        struct mview view = make_view(inv);
        char *last = NULL;
        size_t last_len = 0;

        for (size_t i = 0; i < rounds; i++) {
                struct xp_device_samples samples = {0};
                struct xp_expo w;
                char *text;
                size_t len;
                double t0 = now_us();

                xp_device_sampler_read(sampler, (int64_t)i, &samples);
                double t1 = now_us();
                struct mrender r = {.inventory = inv,
                                    .samples = &samples,
                                    .view = &view,
                                    .node_name = "n1",
                                    .hostname = "n1"};
                for (int f = 0; f < 3; f++) {
                        xp_expo_init(&w, f == 1 ? XP_EXPO_OPENMETRICS : XP_EXPO_TEXT);
                        if (f == 2)
                                mrender_resource(&w, &r);
                        else
                                mrender_metrics(&w, &r);
                        xp_expo_finish(&w, &text, &len);
                        if (f == 0) {
                                free(last);
                                last = text;
                                last_len = len;
                        } else {
                                free(text);
                        }
                }
                double t2 = now_us();
                char *copy = malloc(last_len + 1); /* what a scrape does: copy the rendering */
                memcpy(copy, last, last_len + 1);
                double t3 = now_us();
                free(copy);
                t_sample[i] = t1 - t0;
                t_render[i] = t2 - t1;
                t_scrape[i] = t3 - t2;
                xp_device_samples_done(&samples);
        }
        n_text = last_len;
        printf("8 GPUs (fake NVML), 8 pods, %zu rounds; /metrics is %zu bytes\n", rounds, n_text);
        report("device sample (all NVML calls)", t_sample, rounds);
        report("render: text + OpenMetrics + resource", t_render, rounds);
        report("scrape's own work (copy the rendering)", t_scrape, rounds);
        free(last);
        xp_device_sampler_free(sampler);
        xp_node_inventory_free(inv);
        free(t_sample);
        free(t_render);
        free(t_scrape);
        return 0;
}
