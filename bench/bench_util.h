/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * What every benchmark prints beside its figures, once: the load average (timings mean little
 * on a shared machine without it) and clocks for wall and CPU time (the figure that survives
 * load). bench/CMakeLists.txt links it into every bench_*.
 */
#include <stdint.h>
#include <sys/resource.h>
#include <time.h>

/* Prints "load average at WHEN: " and /proc/loadavg's line ("?" when it cannot be read). */
void bench_loadavg(const char *when);

/* The clock's time in nanoseconds / in seconds: CLOCK_MONOTONIC for wall time,
 * CLOCK_THREAD_CPUTIME_ID / CLOCK_PROCESS_CPUTIME_ID for CPU time. */
uint64_t bench_clock_ns(clockid_t id);
double bench_clock_s(clockid_t id);

/* Wall time and this thread's CPU time, in nanoseconds. */
uint64_t bench_now_ns(void);
uint64_t bench_cpu_ns(void);

/* User + system seconds of a getrusage() answer. */
double bench_rusage_s(const struct rusage *u);
