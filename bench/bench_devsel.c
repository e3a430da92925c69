/* SPDX-License-Identifier: Apache-2.0 */
/*
 * How fast the device selector chooses: k whole devices (k = 1..8) and shares on an 8-GPU node
 * of two NVLink islands, then on 16- and 64-device nodes, over varied usage states. Prints
 * choices per second; asserts nothing.
 *
 *   build/bench/bench_devsel [ITERATIONS]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sched/devsel.h"
#include "xpool/object.h"

#define STATES 256

struct bench_node {
        size_t n;
        struct devsel_device dev[STATES][DEVSEL_MAX]; /* one usage state per row */
        uint16_t aff[DEVSEL_MAX * DEVSEL_MAX];
};

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint64_t rng(void)
{
        rng_state ^= rng_state << 13;
        rng_state ^= rng_state >> 7;
        rng_state ^= rng_state << 17;
        return rng_state;
}

static double now(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Islands of `island` devices: NV6 for even-odd neighbours, NV4 otherwise; SYS across. */
static void build(struct bench_node *b, size_t n, size_t island)
{
        b->n = n;
        for (size_t i = 0; i < n; i++)
                for (size_t j = 0; j < n; j++) {
                        int level = i / island == j / island ? XP_LINK_NVLINK : XP_LINK_SYS;

                        b->aff[i * n + j] = devsel_link_affinity(level, i / 2 == j / 2 ? 6 : 4);
                }
        /* a quarter of the devices in use on average, some shared; state 0 all free */
        for (size_t s = 0; s < STATES; s++)
                for (size_t i = 0; i < n; i++) {
                        uint64_t r = rng() % 8;

                        b->dev[s][i] = (struct devsel_device){
                            .numa = (int)(i * 2 / n),
                            .memory_bytes = (int64_t)80 << 30,
                            .used_milli = s == 0 || r >= 2 ? 0
                                          : r == 0         ? 1000
                                                           : 500,
                            .healthy = true,
                        };
                }
}

static void run(const struct bench_node *b, const char *name, int64_t milli, long iterations)
{
        struct devsel_request req = {.milli = milli, .numa = -1};
        struct devsel_result ret;
        long served = 0;
        double t;

        t = now();
        for (long it = 0; it < iterations; it++) {
                struct devsel_node node = {
                    .n = b->n, .devices = b->dev[it % STATES], .affinity = b->aff};

                served += devsel_choose(&node, &req, &ret) == 1;
        }
        t = now() - t;
        printf("%-10s %6lld milli  %12.0f choices/s  %9.3f us each  (%ld%% served)\n",
               name,
               (long long)milli,
               (double)iterations / t,
               t * 1e6 / (double)iterations,
               served * 100 / iterations);
}

int main(int argc, char **argv)
{
        long iterations = argc > 1 ? strtol(argv[1], NULL, 10) : 200000;
        struct bench_node *b = malloc(sizeof(*b));

        if (iterations <= 0 || !b) {
                fprintf(stderr, "bench_devsel: bad iteration count or out of memory\n");
                free(b);
                return 1;
        }

        build(b, 8, 4);
        run(b, "8 GPUs", 500, iterations);
        for (int64_t k = 1; k <= 8; k++)
                run(b, "8 GPUs", k * 1000, iterations);

        build(b, 16, 4);
        for (int64_t k = 1; k <= 16; k *= 2)
                run(b, "16 GPUs", k * 1000, iterations / 10);

        build(b, 64, 8);
        run(b, "64 GPUs", 500, iterations / 10);
        for (int64_t k = 1; k <= 64; k *= 2)
                run(b, "64 GPUs", k * 1000, iterations / 100);

        free(b);
        return 0;
}
