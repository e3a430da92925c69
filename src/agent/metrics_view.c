/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One round's reading of the pods, their cgroups and the node (metrics_internal.h): the pods the
 * watch last saw, each container's group usage, the processes in them (to match NVML's), the
 * node's busy CPU time (/proc/stat) and memory (/proc/meminfo).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent_internal.h"
#include "metrics_internal.h"
#include "xpool/quantity.h"
#include "xpool/strutil.h"

void mview_done(struct mview *v)
{
        for (size_t i = 0; i < v->n_pods; i++) {
                struct mview_pod *p = &v->pods[i];

                free(p->uid);
                free(p->namespace);
                free(p->name);
                free(p->device_container);
                for (size_t c = 0; c < p->n_containers; c++)
                        free(p->containers[c].name);
                free(p->containers);
                xp_placement_done(&p->placement);
                free(p->pids);
        }
        free(v->pods);
        *v = (struct mview){0};
}

static int64_t quantity_of(json_t *list, const char *name, bool milli)
{
        const char *text = json_string_value(json_object_get(list, name));
        struct xp_quantity q;
        int64_t v = 0;

        if (!text || xp_quantity_parse(text, &q, NULL) < 0)
                return 0;
        if (milli)
                xp_quantity_to_milli(&q, &v);
        else if (xp_quantity_to_milli(&q, &v) >= 0)
                v /= 1000;
        return v;
}

/* Containers, the one asking for devices, and the requests of a pod not yet over. */
static int read_containers(json_t *pod, const char *resource, struct mview_pod *p, struct mview *v)
{
        json_t *containers = json_object_get(json_object_get(pod, "spec"), "containers"), *c;
        const char *phase =
            json_string_value(json_object_get(json_object_get(pod, "status"), "phase"));
        bool over = xp_streq0(phase, "Succeeded") || xp_streq0(phase, "Failed");
        size_t i;

        p->containers = calloc(json_array_size(containers) + 1, sizeof(*p->containers));
        if (!p->containers)
                return -ENOMEM;
        json_array_foreach(containers, i, c)
        {
                json_t *res = json_object_get(c, "resources");
                json_t *requests = json_object_get(res, "requests");
                const char *name = json_string_value(json_object_get(c, "name"));

                if (!name)
                        continue;
                p->containers[p->n_containers].name = strdup(name);
                if (!p->containers[p->n_containers++].name)
                        return -ENOMEM;
                if (!p->device_container && resource &&
                    json_object_get(json_object_get(res, "limits"), resource) &&
                    !(p->device_container = strdup(name)))
                        return -ENOMEM;
                if (!over) {
                        v->cpu_requested_milli += quantity_of(requests, "cpu", true);
                        v->memory_requested += quantity_of(requests, "memory", false);
                }
        }
        if (!p->device_container && p->n_containers > 0 &&
            !(p->device_container = strdup(p->containers[0].name)))
                return -ENOMEM;
        return 0;
}

static int read_pod(json_t *pod, struct mview_pod *p, struct mview *v)
{
        json_t *meta = json_object_get(pod, "metadata");
        const char *placement = json_string_value(
            json_object_get(json_object_get(meta, "annotations"), XP_PLACEMENT_ANNOTATION));

        p->uid = xp_strdup0(json_string_value(json_object_get(meta, "uid")));
        p->namespace = xp_strdup0(json_string_value(json_object_get(meta, "namespace")));
        p->name = xp_strdup0(json_string_value(json_object_get(meta, "name")));
        if (!p->uid || !p->namespace || !p->name)
                return -EINVAL;
        if (placement && xp_placement_from_json(placement, &p->placement, NULL) < 0)
                p->placement = (struct xp_placement){0};
        return read_containers(
            pod, p->placement.devices.n ? p->placement.devices.items[0].resource : NULL, p, v);
}

/* Copies what is needed of each pod under the pods' lock; no I/O while it is held. */
static int read_pods(struct xp_agent_pods *pods, struct mview *v)
{
        const char *uid;
        json_t *pod;
        int r = 0;

        pthread_mutex_lock(&pods->lock);
        v->pods = calloc(json_object_size(pods->pods) + 1, sizeof(*v->pods));
        if (!v->pods)
                r = -ENOMEM;
        json_object_foreach(r < 0 ? NULL : pods->pods, uid, pod)
        {
                if (!json_is_object(pod))
                        continue;
                r = read_pod(pod, &v->pods[v->n_pods], v);
                v->n_pods++;
                if (r == -EINVAL)
                        r = 0; /* a pod without a name: nothing to report */
                if (r < 0)
                        break;
        }
        pthread_mutex_unlock(&pods->lock);
        return r;
}

/* Each container's group usage (CPU time from the group's own accounting, so a process that
 * exited keeps its share), and the processes in them. */
static void
read_groups(struct xp_cgroup_root *cgroups, const char *cgroup_parent, struct mview_pod *p)
{
        for (size_t c = 0; cgroups && p->uid && c < p->n_containers; c++) {
                _cleanup_(xp_cgroup_freep) struct xp_cgroup *cg = NULL;
                _cleanup_free_ char *path = NULL;
                _cleanup_free_ pid_t *pids = NULL;
                size_t n = 0;
                pid_t *grown;

                if (xp_cgroup_container_path(
                        cgroup_parent, p->uid, p->containers[c].name, &path, NULL) < 0 ||
                    xp_cgroup_open(cgroups, path, &cg, NULL) < 0)
                        continue;
                p->containers[c].has_usage = xp_cgroup_usage(cg, &p->containers[c].usage) >= 0;
                if (xp_cgroup_pids(cg, &pids, &n, NULL) < 0 || n == 0)
                        continue;
                grown = realloc(p->pids, (p->n_pids + n) * sizeof(*p->pids));
                if (!grown)
                        continue;
                p->pids = grown;
                memcpy(p->pids + p->n_pids, pids, n * sizeof(*pids));
                p->n_pids += n;
        }
}

/* Busy CPU seconds since boot from /proc/stat's first line (all but idle and iowait). */
static void read_node_cpu(struct mview *v)
{
        unsigned long long t[8] = {0};
        long hz = sysconf(_SC_CLK_TCK);
        FILE *f = fopen("/proc/stat", "re");

        if (!f)
                return;
        if (fscanf(f,
                   "cpu %llu %llu %llu %llu %llu %llu %llu %llu",
                   &t[0],
                   &t[1],
                   &t[2],
                   &t[3],
                   &t[4],
                   &t[5],
                   &t[6],
                   &t[7]) == 8 &&
            hz > 0) {
                unsigned long long busy = t[0] + t[1] + t[2] + t[5] + t[6] + t[7];

                v->node_cpu_seconds = (double)busy / (double)hz;
                v->has_node_cpu = true;
        }
        fclose(f);
        v->node_cpus = sysconf(_SC_NPROCESSORS_ONLN);
}

/* Memory in use: MemTotal less MemAvailable, as the kubelet's node working set. */
static void read_node_memory(struct mview *v)
{
        unsigned long long total = 0, available = 0, kb;
        char line[256], key[64];
        FILE *f = fopen("/proc/meminfo", "re");

        if (!f)
                return;
        while (fgets(line, sizeof(line), f))
                if (sscanf(line, "%63[^:]: %llu", key, &kb) == 2) {
                        if (strcmp(key, "MemTotal") == 0)
                                total = kb;
                        else if (strcmp(key, "MemAvailable") == 0)
                                available = kb;
                }
        fclose(f);
        if (total == 0)
                return;
        v->node_memory_total = (int64_t)total * 1024;
        v->node_memory_used = (int64_t)(total - (available < total ? available : total)) * 1024;
        v->has_node_memory = true;
}

int mview_read(struct xp_agent_pods *pods,
               struct xp_cgroup_root *cgroups,
               const char *cgroup_parent,
               struct mview *ret)
{
        struct mview v = {0};
        struct timespec now;
        int r;

        r = read_pods(pods, &v);
        if (r < 0) {
                mview_done(&v);
                return r;
        }
        for (size_t i = 0; i < v.n_pods; i++)
                read_groups(cgroups, cgroup_parent, &v.pods[i]);
        read_node_cpu(&v);
        read_node_memory(&v);
        clock_gettime(CLOCK_REALTIME, &now);
        v.time_s = (double)now.tv_sec + (double)now.tv_nsec / 1e9;
        *ret = v;
        return 0;
}
