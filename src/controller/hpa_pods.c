/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The target's pods as the replica calculator sees them (struct xp_hpa_pod): phase, readiness and
 * its time, start time and the request of a resource, read from the pods' JSON; and their samples
 * of a per-pod metric from the metrics source (resource usage, the devices of their placement).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hpa_ctl.h"
#include "hpa_pods.h"
#include "xpool/doc.h"
#include "xpool/placement.h"
#include "xpool/quantity.h"
#include "xpool/timeutil.h"

static int64_t time_at(const json_t *o, const char *path)
{
        int64_t t = 0;

        if (xp_time_parse_rfc3339(xp_json_str_at(o, path, ""), &t) < 0)
                return 0;
        return t;
}

static enum xp_hpa_phase phase_of(const json_t *pod)
{
        const char *phase = xp_json_str_at(pod, "status.phase", "Pending");

        if (strcmp(phase, "Running") == 0)
                return XP_HPA_PHASE_RUNNING;
        if (strcmp(phase, "Succeeded") == 0)
                return XP_HPA_PHASE_SUCCEEDED;
        if (strcmp(phase, "Failed") == 0)
                return XP_HPA_PHASE_FAILED;
        return XP_HPA_PHASE_PENDING;
}

static void readiness(const json_t *pod, struct xp_hpa_pod *p)
{
        const json_t *c;
        size_t i;

        json_array_foreach(xp_json_at(pod, "status.conditions"), i, c)
        {
                if (strcmp(xp_json_str_at(c, "type", ""), "Ready") != 0)
                        continue;
                p->ready = strcmp(xp_json_str_at(c, "status", ""), "True") == 0;
                p->ready_change_s = time_at(c, "lastTransitionTime");
        }
}

/* The request of resource summed over the containers (container: only that one); false when a
 * container (the one) has none. */
static bool request_of(const json_t *pod, const char *resource, const char *container, int64_t *ret)
{
        const json_t *c;
        size_t i;
        int64_t sum = 0;
        bool seen = false;

        json_array_foreach(xp_json_at(pod, "spec.containers"), i, c)
        {
                if (container && strcmp(xp_json_str_at(c, "name", ""), container) != 0)
                        continue;
                const json_t *v =
                    json_object_get(xp_json_object_at(c, "resources.requests"), resource);
                struct xp_quantity q;
                int64_t milli;

                if (!json_string_value(v) ||
                    xp_quantity_parse(json_string_value(v), &q, NULL) < 0 ||
                    xp_quantity_to_milli(&q, &milli) < 0)
                        return false;
                sum += milli;
                seen = true;
        }
        *ret = sum;
        return seen;
}

void hpa_pod_basics(const json_t *pod, struct xp_hpa_pod *ret)
{
        *ret = (struct xp_hpa_pod){
            .name = xp_json_str_at(pod, "metadata.name", ""),
            .phase = phase_of(pod),
            .deleting = xp_json_at(pod, "metadata.deletionTimestamp") != NULL,
            .start_s = time_at(pod, "status.startTime"),
        };
        readiness(pod, ret);
}

int32_t hpa_ready_pods(const json_t *pods)
{
        const json_t *pod;
        size_t i;
        int32_t n = 0;

        json_array_foreach(pods, i, pod)
        {
                struct xp_hpa_pod p;

                hpa_pod_basics(pod, &p);
                n += p.ready && !p.deleting && p.phase == XP_HPA_PHASE_RUNNING;
        }
        return n;
}

int hpa_usage_read(struct hpa_usage *u, const struct xp_autoscaler_metrics *m, const char *ns)
{
        if (u->read)
                return 0;
        u->read = true;
        if (!m || !m->pods)
                return 0;
        u->reads++;
        if (m->pods(m->userdata, ns, &u->samples, &u->n) < 0) {
                free(u->samples);
                u->samples = NULL;
                u->n = 0;
                return 0;
        }
        for (size_t i = 0; i < u->n; i++)
                if (xp_map_put(&u->by_name, u->samples[i].name, &u->samples[i]) < 0)
                        return -ENOMEM;
        return 0;
}

void hpa_usage_done(struct hpa_usage *u)
{
        xp_map_done(&u->by_name);
        free(u->samples);
        *u = (struct hpa_usage){0};
}

void hpa_pod_resource(const struct hpa_usage *usage,
                      const json_t *pod,
                      const char *resource,
                      const char *container,
                      struct xp_hpa_pod *p)
{
        const struct xp_autoscaler_pod_sample *sample =
            p->name ? xp_map_get(&usage->by_name, p->name) : NULL;
        bool cpu = strcmp(resource, "cpu") == 0;

        p->has_request = request_of(pod, resource, container, &p->request);
        if (!sample)
                return;
        const struct xp_autoscaler_pod_usage *u = &sample->usage;
        if (!container) {
                p->value = cpu ? u->cpu_milli : u->memory_milli;
        } else {
                size_t k;
                for (k = 0; k < u->n_containers && strcmp(u->containers[k].name, container) != 0;
                     k++)
                        ;
                if (k == u->n_containers)
                        return;
                p->value = cpu ? u->containers[k].cpu_milli : u->containers[k].memory_milli;
        }
        p->has_sample = true;
        p->sample_s = u->time_s;
        p->window_s = u->window_s;
}

void hpa_pod_device(const struct xp_autoscaler_metrics *m,
                    const json_t *pod,
                    bool memory,
                    struct xp_hpa_pod *p)
{
        const char *text = json_string_value(json_object_get(
            xp_json_object_at(pod, "metadata.annotations"), XP_PLACEMENT_ANNOTATION));
        struct xp_placement placement = {.numa_node = -1};
        double sum = 0;
        size_t n = 0;
        int64_t oldest = 0;

        if (!m || !m->device || !text || xp_placement_from_json(text, &placement, NULL) < 0)
                return;
        const char *node =
            placement.node ? placement.node : xp_json_str_at(pod, "spec.nodeName", "");
        for (size_t i = 0; i < placement.devices.n; i++) {
                struct xp_autoscaler_device_usage u;

                if (m->device(m->userdata, node, placement.devices.items[i].id, &u) < 0 ||
                    !(memory ? u.has_memory_used : u.has_utilization))
                        continue;
                sum += memory ? u.memory_used_bytes : u.utilization_percent;
                if (n == 0 || u.time_s < oldest)
                        oldest = u.time_s;
                n++;
        }
        xp_placement_done(&placement);
        if (n == 0)
                return;
        /* utilisation: the mean of the pod's devices; memory: what they hold together */
        p->value = (int64_t)llround((memory ? sum : sum / (double)n) * 1000.0);
        p->has_sample = true;
        p->sample_s = oldest;
}
