/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A Deployment scaled from 0 to REPLICAS on NODES simulated nodes (node objects, no agents), with
 * the server's own controllers in their threads: the workload controllers (Deployment, then
 * ReplicaSet) and the scheduler over one store and registry, as `xpool server` runs them.
 * Prints the time until every pod is created, and until every pod is bound, the workload
 * controllers' and the scheduler's busy time over that span (their shares), and the load
 * average at the start and the end. Prints figures; asserts nothing.
 *
 *   build/bench/bench_deploy [REPLICAS [NODES [DIR]]]     defaults: 1000 20 $TMPDIR or /tmp
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "xpool/histogram.h"
#include "xpool/registry.h"
#include "xpool/scheduler.h"
#include "xpool/store.h"
#include "xpool/timeutil.h"
#include "xpool/workloads.h"

static const char node_json[] =
    "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"%s\",\"uid\":\"uid-%s\","
    "\"labels\":{\"kubernetes.io/hostname\":\"%s\"}},\"status\":{\"capacity\":{\"cpu\":\"64\","
    "\"memory\":\"256Gi\",\"pods\":\"110\"},\"allocatable\":{\"cpu\":\"64\",\"memory\":\"256Gi\","
    "\"pods\":\"110\"},\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\",\"reason\":"
    "\"AgentReady\"}]}}";

static const char deploy_json[] =
    "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"bench\","
    "\"namespace\":\"default\",\"uid\":\"bench-deploy-uid\",\"generation\":1,"
    "\"creationTimestamp\":\"2026-12-03T00:00:00Z\"},\"spec\":{\"replicas\":%d,\"selector\":{"
    "\"matchLabels\":{\"app\":\"bench\"}},\"template\":{\"metadata\":{\"labels\":{\"app\":"
    "\"bench\"}},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"bench:1\",\"resources\":{"
    "\"requests\":{\"cpu\":\"10m\",\"memory\":\"16Mi\"}}}]}},\"strategy\":{\"type\":"
    "\"RollingUpdate\",\"rollingUpdate\":{\"maxSurge\":\"25%%\",\"maxUnavailable\":\"25%%\"}},"
    "\"revisionHistoryLimit\":10,\"progressDeadlineSeconds\":600}}";

static void die(const char *what, const struct xp_error *err)
{
        fprintf(stderr, "bench_deploy: %s: %s\n", what, err && err->msg[0] ? err->msg : "failed");
        exit(1);
}

static void
put(struct xp_store *store, const char *kind, const char *ns, const char *name, const char *text)
{
        struct xp_error err = {0};
        json_error_t jerr;
        json_t *o = json_loads(text, 0, &jerr);
        json_t *old = NULL;
        int r;

        if (!o)
                die(jerr.text, NULL);
        if (xp_store_get(store, kind, ns, name, &old, NULL, NULL) >= 0)
                r = xp_store_update(store, kind, ns, name, 0, o, NULL, &err);
        else
                r = xp_store_create(store, kind, ns, name, o, NULL, &err);
        json_decref(old);
        json_decref(o);
        if (r < 0)
                die(name, &err);
}

/* Pods of the Deployment in the store, and how many are bound. */
static void count(struct xp_store *store, int *ret_pods, int *ret_bound)
{
        json_t *items = NULL, *pod;
        size_t i;

        *ret_pods = *ret_bound = 0;
        if (xp_store_list(store, "pods", "default", &items, NULL, NULL) < 0)
                return;
        json_array_foreach(items, i, pod)
        {
                const char *node =
                    json_string_value(json_object_get(json_object_get(pod, "spec"), "nodeName"));

                (*ret_pods)++;
                if (node && *node)
                        (*ret_bound)++;
        }
        json_decref(items);
}

static double scheduler_busy_s(struct xp_scheduler *s)
{
        uint64_t attempts[XP_SCHEDULER_RESULTS];
        struct xp_histogram_snapshot h = {0};

        xp_scheduler_metrics(s, attempts, &h);
        return h.sum;
}

static void loadavg(double *ret)
{
        FILE *f = fopen("/proc/loadavg", "re");

        *ret = -1;
        if (f) {
                if (fscanf(f, "%lf", ret) != 1)
                        *ret = -1;
                fclose(f);
        }
}

int main(int argc, char **argv)
{
        int replicas = argc > 1 ? atoi(argv[1]) : 1000;
        int nodes = argc > 2 ? atoi(argv[2]) : 20;
        const char *base = argc > 3 ? argv[3] : (getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
        char dir[4096], path[4200], text[4096], name[64];
        struct xp_error err = {0};
        struct xp_store *store;
        struct xp_registry *registry;
        struct xp_scheduler *scheduler;
        struct xp_workloads *workloads;
        double load_start, load_end, sched0;
        int64_t start, created_ms = -1, bound_ms = -1, busy0;

        snprintf(dir, sizeof(dir), "%s/bench_deploy.XXXXXX", base);
        if (!mkdtemp(dir))
                die("mkdtemp", NULL);
        snprintf(path, sizeof(path), "%s/state.db", dir);
        if (xp_store_open(&(struct xp_store_options){.path = path}, &store, &err) < 0)
                die("store", &err);
        if (xp_registry_new(store, &registry, &err) < 0)
                die("registry", &err);
        for (int i = 0; i < nodes; i++) {
                snprintf(name, sizeof(name), "node-%d", i);
                snprintf(text, sizeof(text), node_json, name, name, name);
                put(store, "nodes", "", name, text);
        }
        snprintf(text, sizeof(text), deploy_json, 0);
        put(store, "deployments", "default", "bench", text);
        if (xp_scheduler_start(registry, NULL, &scheduler, &err) < 0)
                die("scheduler", &err);
        if (xp_workloads_start(registry, NULL, &workloads, &err) < 0)
                die("workloads", &err);
        usleep(300 * 1000); /* the empty ReplicaSet is made */
        loadavg(&load_start);
        busy0 = xp_workloads_busy_ms(workloads);
        sched0 = scheduler_busy_s(scheduler);
        start = xp_monotonic_ms();
        snprintf(text, sizeof(text), deploy_json, replicas);
        put(store, "deployments", "default", "bench", text);
        while (xp_monotonic_ms() - start < 120000) {
                int pods, bound;

                count(store, &pods, &bound);
                if (created_ms < 0 && pods >= replicas)
                        created_ms = xp_monotonic_ms() - start;
                if (bound >= replicas) {
                        bound_ms = xp_monotonic_ms() - start;
                        break;
                }
                usleep(20 * 1000);
        }
        loadavg(&load_end);
        printf("bench_deploy: %d replicas on %d nodes\n", replicas, nodes);
        printf("  all pods created: %.3f s\n", created_ms / 1000.0);
        printf("  all pods bound:   %.3f s%s\n",
               bound_ms / 1000.0,
               bound_ms < 0 ? " (not within 120 s)" : "");
        printf("  workload controllers busy: %.3f s, scheduler busy: %.3f s\n",
               (xp_workloads_busy_ms(workloads) - busy0) / 1000.0,
               scheduler_busy_s(scheduler) - sched0);
        printf("  load average (1 min): %.2f at start, %.2f at end\n", load_start, load_end);
        xp_workloads_free(workloads);
        xp_scheduler_free(scheduler);
        xp_registry_free(registry);
        xp_store_close(store);
        snprintf(text, sizeof(text), "rm -rf '%s'", dir);
        if (system(text) != 0)
                fprintf(stderr, "bench_deploy: %s left behind\n", dir);
        return 0;
}
