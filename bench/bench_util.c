/* SPDX-License-Identifier: Apache-2.0 */
/* The load average and clocks every benchmark prints (bench_util.h). */
#include "bench_util.h"

#include <stdio.h>

void bench_loadavg(const char *when)
{
        char buf[128] = "?\n";
        FILE *f = fopen("/proc/loadavg", "re");

        if (f) {
                if (!fgets(buf, sizeof(buf), f))
                        snprintf(buf, sizeof(buf), "?\n");
                fclose(f);
        }
        printf("load average at %s: %s", when, buf);
}

uint64_t bench_clock_ns(clockid_t id)
{
        struct timespec ts;

        clock_gettime(id, &ts);
        return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

double bench_clock_s(clockid_t id)
{
        return (double)bench_clock_ns(id) / 1e9;
}

uint64_t bench_now_ns(void)
{
        return bench_clock_ns(CLOCK_MONOTONIC);
}

uint64_t bench_cpu_ns(void)
{
        return bench_clock_ns(CLOCK_THREAD_CPUTIME_ID);
}

double bench_rusage_s(const struct rusage *u)
{
        return (double)u->ru_utime.tv_sec + (double)u->ru_utime.tv_usec / 1e6 +
               (double)u->ru_stime.tv_sec + (double)u->ru_stime.tv_usec / 1e6;
}
