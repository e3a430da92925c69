/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Container starts through the OCI runtime path (docs/containers.md): COUNT containers running
 * `true` from a one-layer image (busybox-static, as scripts/seed-image builds the seed's), one
 * after another, each with a memory and pids limit when cgroups are usable, under crun (or
 * RUNTIME). Prints the start latency (xp_runtime_start() called -> returned: the bundle, the
 * shim, the overlay and the runtime's create and start, until the container has exec'd) p50/p99/
 * max, and beside it the cost of the OCI runtime alone: `RUNTIME run` of an equivalent bundle
 * (its own rootfs directory, no overlay, no shim), p50/p99 over the same count, so the overhead
 * xpool adds is visible. The shim is the agent's, the lean xpool-shim of the same build (this
 * binary, which is its own shim too, where that is missing). Prints figures; asserts nothing.
 *
 *   build/bench/bench_containers [COUNT [RUNTIME [DIR]]]
 *   defaults: 200, /usr/bin/crun, $TMPDIR or /tmp
 */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <time.h>
#include <unistd.h>

#include "xpool/runtime.h"

#define BUSYBOX "/bin/busybox"

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

__attribute__((format(printf, 1, 2))) static int sh(const char *fmt, ...)
{
        char cmd[2048];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(cmd, sizeof(cmd), fmt, ap);
        va_end(ap);
        return system(cmd) == 0 ? 0 : -1;
}

static void print_latency(const char *what, int64_t *lat, size_t n)
{
        qsort(lat, n, sizeof(*lat), cmp_i64);
        printf("%s: p50 %.2f ms, p99 %.2f ms, max %.2f ms\n",
               what,
               (double)lat[n / 2] / 1e6,
               (double)lat[(n * 99) / 100] / 1e6,
               (double)lat[n - 1] / 1e6);
}

/*
 * CPU time of this process and everything it starts (shims, the runtime's calls; not the
 * containers' own processes, which their groups take): the bench runs in a cgroup v1 cpuacct
 * group of its own, whose usage survives a loaded machine better than wall time does.
 */
static char cpu_group[128];

static void cpu_group_enter(void)
{
        static const char *const mounts[] = {"/sys/fs/cgroup/cpuacct",
                                             "/sys/fs/cgroup/cpu,cpuacct"};

        for (size_t i = 0; i < sizeof(mounts) / sizeof(mounts[0]) && !cpu_group[0]; i++) {
                snprintf(
                    cpu_group, sizeof(cpu_group), "%s/xpool-bench-%d", mounts[i], (int)getpid());
                if (sh("mkdir '%s' 2>/dev/null && echo %d > '%s/cgroup.procs'",
                       cpu_group,
                       (int)getpid(),
                       cpu_group) < 0) {
                        (void)rmdir(cpu_group);
                        cpu_group[0] = '\0';
                }
        }
}

static void cpu_group_leave(void)
{
        char parent[160];
        FILE *f;

        if (!cpu_group[0])
                return;
        fflush(stdout);
        snprintf(parent, sizeof(parent), "%s/../cgroup.procs", cpu_group);
        f = fopen(parent, "we");
        if (f) {
                fprintf(f, "%d\n", (int)getpid());
                fclose(f);
        }
        if (rmdir(cpu_group) < 0)
                fprintf(stderr, "bench_containers: %s left behind: %m\n", cpu_group);
}

/* Nanoseconds of CPU used in the group so far; -1 without one. */
static int64_t cpu_used(void)
{
        char path[160];
        long long ns = -1;
        FILE *f;

        if (!cpu_group[0])
                return -1;
        snprintf(path, sizeof(path), "%s/cpuacct.usage", cpu_group);
        f = fopen(path, "re");
        if (f && fscanf(f, "%lld", &ns) != 1)
                ns = -1;
        if (f)
                fclose(f);
        return ns;
}

static void print_cpu(const char *what, int64_t before, size_t count)
{
        int64_t after = cpu_used();

        if (before >= 0 && after >= 0)
                printf("%s: %.2f ms CPU per container\n",
                       what,
                       (double)(after - before) / 1e6 / (double)count);
}

/* Waits until every container has exited and removes it (each a pod of its own). */
static void drain(struct xp_runtime *rt, size_t count)
{
        size_t removed = 0;

        for (int idle = 0; removed < count && idle < 10;) {
                struct xp_container_record *v = NULL;
                struct pollfd p = {.fd = xp_runtime_event_fd(rt), .events = POLLIN};
                size_t n = 0;

                if (xp_runtime_list(rt, &v, &n, NULL) < 0)
                        break;
                for (size_t i = 0; i < n; i++)
                        if (v[i].exited &&
                            xp_runtime_remove(rt, v[i].pod_uid, v[i].container, NULL) == 0 &&
                            xp_runtime_remove_pod(rt, v[i].pod_uid, NULL) >= 0)
                                removed++;
                xp_container_records_free(v, n);
                if (removed < count && poll(&p, 1, 500) == 0)
                        idle++;
        }
        if (removed < count)
                fprintf(
                    stderr, "bench_containers: %zu of %zu exits after 5 s idle\n", removed, count);
}

static int start_one(struct xp_runtime *rt, const char *layer, const char *runtime, size_t i)
{
        char *const args[] = {"true", NULL};
        char *const env[] = {"PATH=/bin", NULL};
        char *const layers[] = {(char *)layer, NULL};
        struct xp_cgroup_limits limits = {.memory_bytes = 64 << 20, .pids_max = 64};
        struct xp_container_oci oci = {
            .runtime_class = "bench",
            .runtime_path = runtime,
            .layers = layers,
            .image = "bench:latest",
            .hostname = "bench",
        };
        struct xp_container_record rec = {0};
        struct xp_error err = {0};
        char uid[64];
        struct xp_container_launch l = {
            .pod_uid = uid,
            .pod_namespace = "bench",
            .pod_name = "pod",
            .container = "main",
            .argv = args,
            .env = env,
            .limits = xp_runtime_cgroup_mode(rt) != XP_CGROUP_NONE ? &limits : NULL,
            .oci = &oci,
        };

        snprintf(uid, sizeof(uid), "bench-%zu", i);
        if (xp_runtime_start(rt, &l, &rec, &err) < 0) {
                fprintf(stderr, "bench_containers: start %zu: %s\n", i, xp_error_message(&err));
                return -1;
        }
        xp_container_record_clear(&rec);
        return 0;
}

/*
 * `RUNTIME run` of a bundle over a copy of the layer: the runtime's own cost per container. As
 * the shim does (oci_shim.c), in a mount namespace of our own where a hybrid cgroup machine's v2
 * controller list is hidden, which crun refuses to run beside.
 */
static int
runtime_alone(const char *base, const char *layer, const char *runtime, int64_t *lat, size_t count)
{
        char bundle[600], root[700], id[64];

        if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0)
                return -1;
        (void)mount("/dev/null", "/sys/fs/cgroup/unified/cgroup.controllers", NULL, MS_BIND, NULL);

        snprintf(bundle, sizeof(bundle), "%s/plain", base);
        snprintf(root, sizeof(root), "%s/state", bundle);
        if (sh("mkdir -p '%s' && cp -a '%s' '%s/rootfs'", bundle, layer, bundle) < 0 ||
            sh("cd '%s' && '%s' spec && sed -i 's/\"sh\"/\"true\"/; s/\"terminal\": true/\"terminal\": false/' config.json",
               bundle,
               runtime) < 0)
                return -1;
        for (size_t i = 0; i < count; i++) {
                char cmd[2048];
                int64_t s;

                snprintf(id, sizeof(id), "bench-plain-%zu", i);
                snprintf(cmd,
                         sizeof(cmd),
                         "'%s' --root '%s' run --bundle '%s' %s </dev/null >/dev/null",
                         runtime,
                         root,
                         bundle,
                         id);
                s = now_ns();
                if (system(cmd) != 0)
                        return -1;
                lat[i] = now_ns() - s;
        }
        return 0;
}

/* The build's xpool-shim (build/xpool-shim beside build/bench/), which the agent starts; NULL
 * where it is missing: this binary then. */
static char *agent_shim(void)
{
        char self[PATH_MAX], *shim = NULL;
        ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
        char *slash;

        if (n <= 0)
                return NULL;
        self[n] = '\0';
        slash = strrchr(self, '/');
        if (slash)
                *slash = '\0';
        if (asprintf(&shim, "%s/../xpool-shim", self) < 0)
                return NULL;
        if (access(shim, X_OK) == 0)
                return shim;
        free(shim);
        return NULL;
}

int main(int argc, char **argv)
{
        const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
        const char *runtime = "/usr/bin/crun";
        char base[256], state[300], logs[300], layer[300], *shim = NULL;
        struct xp_error err = {0};
        struct xp_runtime *rt = NULL;
        size_t count = 200;
        int64_t *lat, t0, cpu0 = -1;
        int rc = 1;

        if (argc >= 2 && strcmp(argv[1], "__shim") == 0)
                return xp_shim_main(argc - 1, argv + 1);
        if (argc >= 2 && (count = strtoul(argv[1], NULL, 10)) == 0)
                count = 1;
        if (argc >= 3)
                runtime = argv[2];
        if (argc >= 4)
                tmp = argv[3];
        snprintf(base, sizeof(base), "%s/xpool-bench-containers-XXXXXX", tmp);
        if (!mkdtemp(base) || !(lat = calloc(count, sizeof(*lat)))) {
                perror(base);
                return 1;
        }
        snprintf(state, sizeof(state), "%s/containers", base);
        snprintf(logs, sizeof(logs), "%s/logs", base);
        snprintf(layer, sizeof(layer), "%s/layer", base);
        if (sh("mkdir -p '%s' && cd '%s' && mkdir bin proc dev sys etc", layer, layer) < 0 ||
            sh("cp " BUSYBOX " '%s/bin/' && ln -s busybox '%s/bin/true'", layer, layer) < 0)
                goto out;
        shim = agent_shim();
        if (xp_runtime_open(
                &(struct xp_runtime_options){.state_dir = state, .log_dir = logs, .shim_exe = shim},
                &rt,
                &err) < 0) {
                fprintf(stderr, "bench_containers: %s\n", xp_error_message(&err));
                goto out;
        }
        printf("cgroups: %s; runtime: %s; shim: %s%s%s\n",
               xp_cgroup_mode_to_string(xp_runtime_cgroup_mode(rt)),
               runtime,
               shim ? shim : "this binary",
               xp_runtime_oci_warning(rt) ? "; " : "",
               xp_runtime_oci_warning(rt) ? xp_runtime_oci_warning(rt) : "");
        cpu_group_enter();
        cpu0 = cpu_used();
        t0 = now_ns();
        for (size_t i = 0; i < count; i++) {
                int64_t s = now_ns();

                if (start_one(rt, layer, runtime, i) < 0)
                        goto out;
                lat[i] = now_ns() - s;
        }
        printf("containers: %zu (true, one busybox layer), one after another in %.2f s\n",
               count,
               (double)(now_ns() - t0) / 1e9);
        print_latency(
            "xpool start (xp_runtime_start: bundle, shim, overlay, create, start)", lat, count);
        drain(rt, count);
        print_cpu("xpool, start to removal (agent side, shim, runtime calls)", cpu0, count);
        xp_runtime_free(rt);
        rt = NULL;
        cpu0 = cpu_used();
        if (runtime_alone(base, layer, runtime, lat, count) < 0) {
                fprintf(stderr, "bench_containers: %s run failed\n", runtime);
                goto out;
        }
        print_latency("the runtime alone (RUNTIME run to exit, no overlay, no shim)", lat, count);
        print_cpu("the runtime alone (sh -c + RUNTIME run to exit)", cpu0, count);
        rc = 0;
out:
        cpu_group_leave();
        xp_runtime_free(rt);
        free(shim);
        free(lat);
        return sh("rm -rf '%s'", base) == 0 ? rc : 1;
}
