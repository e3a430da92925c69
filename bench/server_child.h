/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The server the benchmarks start for themselves (bench_api, bench_scale): `xpool server` on a
 * free loopback port, plain HTTP, in a fresh directory that goes away with it, started with
 * posix_spawn before any thread exists. Bench tooling, not part of libxpool.
 */

#include <sys/types.h>

struct server_child {
        pid_t pid;
        char dir[512];
        char data[600];
        char log[600];
        char url[64]; /* http://127.0.0.1:PORT once it listens */
};

/*
 * Starts `xpool server --listen 127.0.0.1:0 --no-tls --data-dir DIR EXTRA...` (extra: more
 * arguments, NULL-terminated, or NULL) and waits (15 s at most) for it to say where it listens.
 * who names the benchmark in messages. 0, or -errno with the reason printed.
 */
int server_child_start(const char *who,
                       const char *xpool,
                       const char *const *extra,
                       struct server_child *ch);
/* The admin token the server wrote (DATA_DIR/admin.kubeconfig), or NULL; caller frees. */
char *server_child_token(const struct server_child *ch);
/* A "VmRSS" or "VmHWM" figure of the server in KiB, or -1. */
long server_child_kib(const struct server_child *ch, const char *field);
/* The server's CPU time so far (user + system), in seconds; -1 when unknown. */
double server_child_cpu_seconds(const struct server_child *ch);
/* Stops the server (SIGTERM, then SIGKILL after 10 s) and removes its directory. */
void server_child_stop(const char *who, struct server_child *ch);

/* "load average (WHEN) 1.00 2.00 3.00" on stdout: the noise a reader should know of. */
void bench_print_load(const char *when);
/* CLOCK_MONOTONIC in seconds. */
double bench_now(void);
