/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The device plugin's footprint: `xpool device-plugin` on a node of 8 GPUs (the fake NVML's
 * two-island H100 box, tests/data/nvml/h100-8x-two-islands.json), registered with a minimal
 * kubelet served here (Registration only, on xpool's own gRPC server code, src/kube/rpc_server.c),
 * idle for --idle seconds, then --calls rounds of GetPreferredAllocation and Allocate on its
 * socket, then idle again. Prints the plugin's RSS (VmRSS, with its anonymous part) at each stage
 * and the calls' mean latency. The goal (issue 14): under 10 MiB per node with 8 devices.
 *
 *   build/bench/bench_device_plugin [--xpool build/xpool] [--idle 5] [--calls 1000]
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kube/plugin_internal.h"
#include "kube/rpc.h"
#include "xpool/timeutil.h"

extern char **environ;

static int registered;

static int on_register(void *userdata,
                       const ProtobufCMessage *request,
                       ProtobufCMessage **ret,
                       struct xp_error *err)
{
        V1beta1__Empty *e = malloc(sizeof(*e));

        (void)userdata;
        (void)request;
        if (!e)
                return xp_errorf(err, -ENOMEM, "out of memory");
        v1beta1__empty__init(e);
        registered++;
        *ret = &e->base;
        return 0;
}

static void free_message(ProtobufCMessage *m)
{
        protobuf_c_message_free_unpacked(m, NULL);
}

static const struct kube_method kubelet_methods[] = {{
    .path = "/v1beta1.Registration/Register",
    .request = &v1beta1__register_request__descriptor,
    .unary = on_register,
    .free_response = free_message,
}};

/* A value in kB from a /proc/PID file ("VmRSS:"), -1 when absent. */
static long proc_kib(pid_t pid, const char *file, const char *key)
{
        char path[64], line[256];
        long sum = -1, v;
        FILE *f;

        snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
        f = fopen(path, "re");
        if (!f)
                return -1;
        while (fgets(line, sizeof(line), f))
                if (strncmp(line, key, strlen(key)) == 0 &&
                    sscanf(line + strlen(key), " %ld", &v) == 1)
                        sum = (sum < 0 ? 0 : sum) + v;
        fclose(f);
        return sum;
}

/* RSS, its anonymous part, and the pages this process alone holds (USS: private clean and dirty,
 * what a node would get back without it) and its proportional share of the shared ones (PSS). */
static void report(const char *stage, pid_t pid)
{
        long rss = proc_kib(pid, "status", "VmRSS:"), anon = proc_kib(pid, "status", "RssAnon:");
        long pss = proc_kib(pid, "smaps_rollup", "Pss:");
        long uss = proc_kib(pid, "smaps_rollup", "Private_Clean:") +
                   proc_kib(pid, "smaps_rollup", "Private_Dirty:");

        printf("%-20s RSS %.1f MiB (anonymous %.1f MiB), USS %.1f MiB, PSS %.1f MiB\n",
               stage,
               rss / 1024.0,
               anon / 1024.0,
               uss / 1024.0,
               pss / 1024.0);
}

/* What the RSS is made of: the mappings holding 256 KiB or more, by file (or [heap], [stack],
 * anonymous), largest first. */
static void breakdown(pid_t pid)
{
        struct {
                char name[160];
                long kib;
        } rows[128];
        size_t n = 0;
        char path[64], line[512], name[160] = "";
        FILE *f;
        long v;

        snprintf(path, sizeof(path), "/proc/%d/smaps", (int)pid);
        f = fopen(path, "re");
        if (!f)
                return;
        while (fgets(line, sizeof(line), f)) {
                char *p = strchr(line, ' ');

                if (p && strchr(line, '-') && strchr(line, '-') < p) { /* a mapping's line */
                        /* the sixth field, the file, or "anonymous" */
                        int field = 0;

                        for (p = line; *p && field < 5; field++)
                                p += strcspn(p, " "), p += strspn(p, " ");
                        p[strcspn(p, "\n")] = '\0';
                        snprintf(name, sizeof(name), "%s", *p ? p : "anonymous");
                } else if (sscanf(line, "Rss: %ld kB", &v) == 1 && v > 0) {
                        size_t i;

                        for (i = 0; i < n && strcmp(rows[i].name, name) != 0; i++)
                                ;
                        if (i == n && n < 128) {
                                snprintf(rows[n].name, sizeof(rows[n].name), "%s", name);
                                rows[n++].kib = 0;
                        }
                        if (i < n)
                                rows[i].kib += v;
                }
        }
        fclose(f);
        for (size_t shown = 0; shown < n; shown++) {
                size_t best = 0;

                for (size_t i = 1; i < n; i++)
                        if (rows[i].kib > rows[best].kib)
                                best = i;
                if (rows[best].kib < 256)
                        break;
                printf("    %6.1f MiB  %s\n", rows[best].kib / 1024.0, rows[best].name);
                rows[best].kib = -1;
        }
}

static double calls(const char *sock, int rounds, const char *const *ids)
{
        V1beta1__ContainerPreferredAllocationRequest creq =
            V1BETA1__CONTAINER_PREFERRED_ALLOCATION_REQUEST__INIT;
        V1beta1__ContainerPreferredAllocationRequest *creqs[] = {&creq};
        V1beta1__PreferredAllocationRequest preq = V1BETA1__PREFERRED_ALLOCATION_REQUEST__INIT;
        V1beta1__ContainerAllocateRequest areq = V1BETA1__CONTAINER_ALLOCATE_REQUEST__INIT;
        V1beta1__ContainerAllocateRequest *areqs[] = {&areq};
        V1beta1__AllocateRequest alloc = V1BETA1__ALLOCATE_REQUEST__INIT;
        int64_t start = xp_monotonic_ns();
        struct xp_error err = {0};

        creq.available_deviceids = (char **)ids;
        creq.n_available_deviceids = 8;
        creq.allocation_size = 4;
        preq.container_requests = creqs;
        preq.n_container_requests = 1;
        areq.devices_ids = (char **)ids + 4;
        areq.n_devices_ids = 4;
        alloc.container_requests = areqs;
        alloc.n_container_requests = 1;
        for (int i = 0; i < rounds; i++) {
                ProtobufCMessage *resp = NULL;

                if (kube_rpc_unary(sock,
                                   "/v1beta1.DevicePlugin/GetPreferredAllocation",
                                   &preq.base,
                                   &v1beta1__preferred_allocation_response__descriptor,
                                   1 << 20,
                                   5000,
                                   &resp,
                                   &err) < 0 ||
                    (protobuf_c_message_free_unpacked(resp, NULL), 0) ||
                    kube_rpc_unary(sock,
                                   "/v1beta1.DevicePlugin/Allocate",
                                   &alloc.base,
                                   &v1beta1__allocate_response__descriptor,
                                   1 << 20,
                                   5000,
                                   &resp,
                                   &err) < 0) {
                        fprintf(stderr, "bench_device_plugin: %s\n", xp_error_message(&err));
                        exit(1);
                }
                protobuf_c_message_free_unpacked(resp, NULL);
        }
        return (double)(xp_monotonic_ns() - start) / 1e6 / (2.0 * rounds);
}

static void serve_for(struct kube_loop *loop, int64_t ms)
{
        int64_t end = xp_monotonic_ms() + ms;

        while (xp_monotonic_ms() < end)
                kube_loop_run_once(loop, 50);
}

int main(int argc, char **argv)
{
        static const struct option opts[] = {
            {"xpool", required_argument, NULL, 'x'},
            {"idle", required_argument, NULL, 'i'},
            {"calls", required_argument, NULL, 'c'},
            {NULL, 0, NULL, 0},
        };
        const char *xpool = "build/xpool";
        char dir[] = "/tmp/xpool-bench-plugin-XXXXXX", kubelet[128], sock[160], cfg[128];
        const char *ids[8];
        int idle = 5, rounds = 1000, c;
        struct kube_server *server = NULL;
        struct kube_loop *loop = NULL;
        struct xp_error err = {0};
        pid_t pid;
        int status;

        while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
                if (c == 'x')
                        xpool = optarg;
                else if (c == 'i')
                        idle = atoi(optarg);
                else if (c == 'c')
                        rounds = atoi(optarg);
                else
                        return 2;
        }
        if (!mkdtemp(dir))
                return 1;
        snprintf(kubelet, sizeof(kubelet), "%s/kubelet.sock", dir);
        snprintf(cfg,
                 sizeof(cfg),
                 "FAKE_NVML_CONFIG=%s",
                 XPOOL_TEST_DATA "/nvml/h100-8x-two-islands.json");
        if (kube_loop_new(&loop) < 0)
                return 1;
        if (kube_server_start(&(struct kube_server_config){.socket_path = kubelet,
                                                           .methods = kubelet_methods,
                                                           .n_methods = 1},
                              loop,
                              &server,
                              &err) < 0) {
                fprintf(stderr, "bench_device_plugin: %s\n", xp_error_message(&err));
                return 1;
        }
        {
                char *args[] = {(char *)xpool,
                                "device-plugin",
                                "--plugin-dir",
                                dir,
                                "--no-cdi",
                                "--backends",
                                "nvml",
                                "--nvml-library",
                                XPOOL_FAKE_NVML,
                                NULL};
                char *env[] = {cfg, "XPOOL_LOG_LEVEL=warning", NULL};

                if (posix_spawn(&pid, xpool, NULL, NULL, args, env) != 0) {
                        perror("posix_spawn");
                        return 1;
                }
        }
        for (int i = 0; i < 200 && !registered; i++)
                serve_for(loop, 50);
        printf("xpool device-plugin, 8 GPUs: registered %s\n", registered ? "yes" : "NO");
        serve_for(loop, idle * 1000);
        report("idle, registered", pid);
        breakdown(pid);

        /* the GPUs' ids, as the fake NVML names them */
        for (int i = 0; i < 8; i++) {
                char *id;

                if (asprintf(&id, "GPU-%08x-0000-4000-8000-%012x", 0x1a2b3c00 + i, i) < 0)
                        return 1;
                ids[i] = id;
        }
        snprintf(sock, sizeof(sock), "%s/xpool-nvidia.com_gpu.sock", dir);
        printf("%d x (GetPreferredAllocation + Allocate): mean %.3f ms a call\n",
               rounds,
               calls(sock, rounds, ids));
        report("after the calls", pid);
        serve_for(loop, idle * 1000);
        report("idle again", pid);

        kill(pid, SIGTERM);
        waitpid(pid, &status, 0);
        for (int i = 0; i < 8; i++)
                free((char *)ids[i]);
        kube_server_stop(server);
        kube_loop_free(loop);
        rmdir(dir);
        return 0;
}
