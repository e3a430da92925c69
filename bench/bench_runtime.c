/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Container starts through the process runtime: COUNT containers running `true`, started by
 * THREADS threads each one after another (as an agent's workers would), each with a memory and
 * pids limit when cgroups are usable. Prints the start
 * latency (xp_runtime_start() called -> returned, i.e. until the container has exec'd) p50/p99/
 * max, the starts per second, and how long until every exit was recorded. This binary is its
 * own shim. Prints figures; asserts nothing.
 *
 *   build/bench/bench_runtime [COUNT [THREADS [DIR [CGROUP_ROOT]]]]
 *   defaults: 1000, 1, $TMPDIR or /tmp, /
 * (a CGROUP_ROOT without cgroups, e.g. /var/empty, measures the runtime without them)
 * BENCH_RUNTIME_MOUNT=DEST gives each container a read-only volume (a directory of DIR) at DEST:
 * one missing directly in / (/bench-missing) measures a start with a root of its own.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "xpool/runtime.h"

static int64_t now_ns(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int cmp_i64(const void *a, const void *b)
{
        int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

        return (x > y) - (x < y);
}

/* Removes every exited container; returns how many are still running. */
static size_t reap(struct xp_runtime *rt, size_t *exited)
{
        struct xp_container_record *v = NULL;
        size_t n = 0, running = 0;

        if (xp_runtime_list(rt, &v, &n, NULL) < 0)
                return 0;
        for (size_t i = 0; i < n; i++) {
                if (!v[i].exited) {
                        running++;
                        continue;
                }
                if (xp_runtime_remove(rt, v[i].pod_uid, v[i].container, NULL) == 0)
                        (*exited)++;
        }
        xp_container_records_free(v, n);
        return running;
}

static struct xp_runtime *rt;
static int64_t *lat;
static size_t count;
static atomic_size_t next;
static atomic_int failed;
static struct xp_container_mount volume = {.kind = XP_VOLUME_FILES, .read_only = true};

static void *worker(void *arg)
{
        char *const args[] = {"true", NULL};
        char *const env[] = {"PATH=/usr/bin:/bin", NULL};
        struct xp_cgroup_limits limits = {.memory_bytes = 64 << 20, .pids_max = 64};
        struct xp_error err = {0};
        char uid[64];

        (void)arg;
        for (size_t i; !atomic_load(&failed) && (i = atomic_fetch_add(&next, 1)) < count;) {
                struct xp_container_record rec = {0};
                struct xp_container_launch l = {
                    .pod_uid = uid,
                    .pod_namespace = "bench",
                    .pod_name = "pod",
                    .container = "main",
                    .argv = args,
                    .env = env,
                    .limits = xp_runtime_cgroup_mode(rt) != XP_CGROUP_NONE ? &limits : NULL,
                    .mounts = volume.destination ? &volume : NULL,
                    .n_mounts = volume.destination ? 1 : 0,
                };
                int64_t s = now_ns();

                snprintf(uid, sizeof(uid), "bench-%zu", i);
                if (xp_runtime_start(rt, &l, &rec, &err) < 0) {
                        fprintf(
                            stderr, "bench_runtime: start %zu: %s\n", i, xp_error_message(&err));
                        atomic_store(&failed, 1);
                        break;
                }
                lat[i] = now_ns() - s;
                xp_container_record_clear(&rec);
        }
        return NULL;
}

int main(int argc, char **argv)
{
        const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
        char base[256], state[300], logs[300], files[300], cmd[300];
        struct xp_error err = {0};
        int64_t t0, total, drained;
        size_t exited = 0, threads = 1;
        const char *cgroup_root = NULL;
        pthread_t tids[64];

        if (argc >= 2 && strcmp(argv[1], "__shim") == 0)
                return xp_shim_main(argc - 1, argv + 1);
        count = argc >= 2 ? strtoul(argv[1], NULL, 10) : 1000;
        if (argc >= 3)
                threads = strtoul(argv[2], NULL, 10);
        if (argc >= 4)
                tmp = argv[3];
        if (argc >= 5)
                cgroup_root = argv[4];
        if (count == 0)
                count = 1;
        if (threads == 0 || threads > 64)
                threads = 1;
        snprintf(base, sizeof(base), "%s/xpool-bench-runtime-XXXXXX", tmp);
        if (!mkdtemp(base)) {
                perror(base);
                return 1;
        }
        snprintf(state, sizeof(state), "%s/containers", base);
        snprintf(logs, sizeof(logs), "%s/logs", base);
        snprintf(files, sizeof(files), "%s/files", base);
        if (getenv("BENCH_RUNTIME_MOUNT") && *getenv("BENCH_RUNTIME_MOUNT")) {
                if (mkdir(files, 0755) < 0) {
                        perror(files);
                        return 1;
                }
                volume.source = files;
                volume.destination = getenv("BENCH_RUNTIME_MOUNT");
        }
        if (xp_runtime_open(&(struct xp_runtime_options){.state_dir = state,
                                                         .log_dir = logs,
                                                         .cgroup_root = cgroup_root},
                            &rt,
                            &err) < 0) {
                fprintf(stderr, "bench_runtime: %s\n", xp_error_message(&err));
                return 1;
        }
        printf("cgroups: %s%s%s\n",
               xp_cgroup_mode_to_string(xp_runtime_cgroup_mode(rt)),
               xp_runtime_warning(rt) ? "; " : "",
               xp_runtime_warning(rt) ? xp_runtime_warning(rt) : "");
        lat = calloc(count, sizeof(*lat));
        if (!lat)
                return 1;
        t0 = now_ns();
        for (size_t t = 0; t < threads; t++)
                if (pthread_create(&tids[t], NULL, worker, NULL) != 0)
                        return 1;
        for (size_t t = 0; t < threads; t++)
                pthread_join(tids[t], NULL);
        total = now_ns() - t0;
        if (atomic_load(&failed))
                return 1;
        while (reap(rt, &exited) > 0 || exited < count) {
                struct pollfd p = {.fd = xp_runtime_event_fd(rt), .events = POLLIN};

                if (poll(&p, 1, 5000) == 0 && exited < count) {
                        fprintf(stderr,
                                "bench_runtime: %zu of %zu exits after 5 s idle\n",
                                exited,
                                count);
                        break;
                }
        }
        drained = now_ns() - t0;
        qsort(lat, count, sizeof(*lat), cmp_i64);
        printf("containers: %zu (true), %zu starting threads\n", count, threads);
        printf("start latency: p50 %.2f ms, p99 %.2f ms, max %.2f ms\n",
               (double)lat[count / 2] / 1e6,
               (double)lat[(count * 99) / 100] / 1e6,
               (double)lat[count - 1] / 1e6);
        printf("starts/s: %.0f\n", (double)count / ((double)total / 1e9));
        printf("all exits recorded after %.2f s (%zu removed)\n", (double)drained / 1e9, exited);
        xp_runtime_free(rt);
        free(lat);
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
        return system(cmd) == 0 ? 0 : 1;
}
