/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The node's disk pressure (docs/agent.md, "Local ephemeral storage"): each housekeeping pass
 * reads the free space of the file system of the agent's data directory (statvfs: f_bavail, what
 * a user other than root may still write) against --eviction-hard's nodefs.available. Below it
 * the Node says DiskPressure=True (written by the lease thread; the server's node lifecycle
 * controller taints it node.kubernetes.io/disk-pressure:NoSchedule), and each pass evicts one pod,
 * the first in the kubelet's ranking, as the kubelet evicts one per housekeeping interval, until
 * the space is back above the threshold; then the condition is False again and the taint removed.
 * Before a pod is evicted, the images no container uses are deleted (imagegc.c), as the kubelet's
 * eviction manager reclaims node-level resources first.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

#include "agent_internal.h"
#include "ephemeral.h"
#include "xpool/log.h"
#include "xpool/strutil.h"
#include "xpool/timeutil.h"

struct xp_agent_pressure {
        pthread_mutex_t lock; /* guards what follows */
        struct xp_disk_threshold threshold;
        bool pressure;   /* now */
        bool published;  /* what the Node's condition says */
        int64_t since_s; /* when it last changed; 0: never */
};

int xp_agent_pressure_new(const char *eviction_hard,
                          struct xp_agent_pressure **ret,
                          struct xp_error *err)
{
        struct xp_agent_pressure *p = calloc(1, sizeof(*p));
        int r;

        if (!p)
                return -ENOMEM;
        r = xp_agent_eviction_hard_parse(
            eviction_hard ? eviction_hard : "nodefs.available<10%", &p->threshold, err);
        if (r < 0) {
                free(p);
                return r;
        }
        pthread_mutex_init(&p->lock, NULL);
        *ret = p;
        return 0;
}

void xp_agent_pressure_free(struct xp_agent_pressure *p)
{
        if (!p)
                return;
        pthread_mutex_destroy(&p->lock);
        free(p);
}

bool xp_agent_pressure_changed(struct xp_agent *a)
{
        bool changed;

        if (!a->pressure)
                return false;
        pthread_mutex_lock(&a->pressure->lock);
        changed = a->pressure->pressure != a->pressure->published;
        pthread_mutex_unlock(&a->pressure->lock);
        return changed;
}

int xp_agent_pressure_capacity(struct xp_agent *a, json_t *status)
{
        struct statvfs st;
        char buf[32];
        uint64_t total;

        if (statvfs(a->data_dir, &st) < 0)
                return 0; /* no figure: the Node says none, as before */
        total = (uint64_t)st.f_blocks * st.f_frsize;
        snprintf(buf, sizeof(buf), "%llu", (unsigned long long)total);
        if (json_object_set_new(
                json_object_get(status, "capacity"), "ephemeral-storage", json_string(buf)) < 0)
                return -ENOMEM;
        /* as the kubelet: what is left above the hard eviction threshold */
        total -= xp_agent_threshold_bytes(&a->pressure->threshold, total) < total
                     ? xp_agent_threshold_bytes(&a->pressure->threshold, total)
                     : total;
        snprintf(buf, sizeof(buf), "%llu", (unsigned long long)total);
        return json_object_set_new(json_object_get(status, "allocatable"),
                                   "ephemeral-storage",
                                   json_string(buf)) < 0
                   ? -ENOMEM
                   : 0;
}

int xp_agent_pressure_node(struct xp_agent *a, json_t *conditions, bool *ret_pressure)
{
        char since[XP_RFC3339_MAX];
        bool pressure;
        int64_t since_s;
        int r;

        *ret_pressure = false;
        if (!a->pressure)
                return 0;
        pthread_mutex_lock(&a->pressure->lock);
        pressure = a->pressure->pressure;
        since_s = a->pressure->since_s;
        pthread_mutex_unlock(&a->pressure->lock);
        if (since_s)
                xp_time_format_rfc3339(since_s, since);
        r = xp_agent_disk_pressure_condition(conditions, pressure, since_s ? since : NULL);
        if (r >= 0)
                *ret_pressure = pressure;
        return r;
}

void xp_agent_pressure_published(struct xp_agent *a, bool pressure)
{
        if (!a->pressure)
                return;
        pthread_mutex_lock(&a->pressure->lock);
        a->pressure->published = pressure;
        pthread_mutex_unlock(&a->pressure->lock);
}

/* The file system's state now into *threshold and *available: false when it cannot be read. */
static bool measure(struct xp_agent *a, uint64_t *threshold, uint64_t *available)
{
        struct statvfs st;

        if (statvfs(a->data_dir, &st) < 0)
                return false;
        *available = (uint64_t)st.f_bavail * st.f_frsize;
        *threshold =
            xp_agent_threshold_bytes(&a->pressure->threshold, (uint64_t)st.f_blocks * st.f_frsize);
        return true;
}

static const json_t *pod_of(const json_t *pods, const char *uid)
{
        const json_t *pod;
        size_t i;

        json_array_foreach(pods, i, pod)
        {
                if (xp_streq0(
                        json_string_value(json_object_get(json_object_get(pod, "metadata"), "uid")),
                        uid))
                        return pod;
        }
        return NULL;
}

void xp_agent_node_pressure(struct xp_agent *a,
                            const json_t *pods,
                            struct xp_disk_candidate *ranked,
                            size_t n,
                            json_t *evicted)
{
        uint64_t threshold, available, freed = 0;
        bool pressure, was, images_busy = false;
        char *message;

        if (!a->pressure || !measure(a, &threshold, &available))
                return;
        pressure = available < threshold;
        /* as the kubelet's eviction manager: node-level resources first, unused images */
        if (pressure && json_object_size(evicted) == 0) {
                images_busy = xp_agent_images_reclaim(a, pods, &freed) == -EAGAIN;
                if (freed > 0 && measure(a, &threshold, &available))
                        pressure = available < threshold;
        }
        pthread_mutex_lock(&a->pressure->lock);
        was = a->pressure->pressure;
        if (was != pressure) {
                a->pressure->pressure = pressure;
                a->pressure->since_s = xp_agent_now_ns() / 1000000000;
        }
        pthread_mutex_unlock(&a->pressure->lock);
        if (was != pressure)
                xp_log(pressure ? LOG_WARNING : LOG_INFO,
                       "agent: %s: %llu bytes available, the threshold is nodefs.available<%s",
                       pressure ? "disk pressure" : "no disk pressure any more",
                       (unsigned long long)available,
                       a->pressure->threshold.text);
        /* as the kubelet waits for an evicted pod's cleanup: what it gives back is seen first */
        /* a pull held the image store: its unused images go first, at the next pass */
        if (!pressure || n == 0 || json_object_size(evicted) > 0 || images_busy)
                return;
        xp_agent_rank_disk_pressure(ranked, n);
        message = xp_agent_disk_pressure_message(threshold, available);
        if (!message)
                return;
        /* one pod a pass, as the kubelet: the next pass sees what its end gave back */
        for (size_t i = 0; i < n; i++) {
                const json_t *pod = pod_of(pods, ranked[i].uid);

                if (!pod || json_object_get(evicted, ranked[i].uid))
                        continue;
                xp_agent_disk_evict(a, pod, message, true);
                (void)json_object_set_new(evicted, ranked[i].uid, json_string(message));
                break;
        }
        free(message);
}
