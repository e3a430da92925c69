/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What each pod uses of the devices it holds (metrics_internal.h), which DCGM's exporter cannot
 * say when pods share a GPU: the pod's processes (found in its containers' groups) matched to the
 * driver's per-process memory (nvmlDeviceGetComputeRunningProcesses) and utilisation
 * (nvmlDeviceGetProcessUtilization). Where the driver does not attribute utilisation (simulated
 * devices, other vendors), a pod's figure is its device's.
 */
#include <stdio.h>

#include "metrics_internal.h"
#include "xpool/macro.h"

static const struct mview_pod *pod_of_pid(const struct mview *v, uint32_t pid)
{
        for (size_t i = 0; v && i < v->n_pods; i++)
                for (size_t k = 0; v->pods[i].uid && k < v->pods[i].n_pids; k++)
                        if ((uint32_t)v->pods[i].pids[k] == pid)
                                return &v->pods[i];
        return NULL;
}

/* The pod's own memory on the device: true where the driver lists processes. */
static bool pod_memory(const struct mrender *r,
                       const struct xp_device_sample *s,
                       const struct mview_pod *pod,
                       double *ret)
{
        int64_t used = 0;

        if (!(s->has & XP_SAMPLE_PROCESSES))
                return false;
        for (size_t q = 0; q < s->n_processes; q++)
                if (s->processes[q].memory_used_bytes > 0 &&
                    pod_of_pid(r->view, s->processes[q].pid) == pod)
                        used += s->processes[q].memory_used_bytes;
        *ret = (double)used;
        return true;
}

/* The pod's utilisation of the device: its processes' SM time, else the device's. */
static bool pod_utilization(const struct mrender *r,
                            const struct xp_device_sample *s,
                            const struct mview_pod *pod,
                            double *ret)
{
        double sum = 0;

        if (!(s->has & XP_SAMPLE_PROCESS_UTIL)) {
                *ret = s->utilization_percent;
                return s->has & XP_SAMPLE_UTIL;
        }
        for (size_t q = 0; q < s->n_processes; q++)
                if (s->processes[q].sm_util_percent > 0 &&
                    pod_of_pid(r->view, s->processes[q].pid) == pod)
                        sum += s->processes[q].sm_util_percent;
        *ret = sum > 100 ? 100 : sum;
        return true;
}

typedef bool (*pod_figure_fn)(const struct mrender *r,
                              const struct xp_device_sample *s,
                              const struct mview_pod *pod,
                              double *ret);

/* One family: a series per device and pod holding it, where fn has the figure. */
static void render_family(struct xp_expo *w,
                          const struct mrender *r,
                          const char *name,
                          const char *help,
                          pod_figure_fn fn)
{
        bool started = false;

        for (size_t i = 0; r->samples && i < r->samples->n && i < r->inventory->devices.n; i++) {
                const struct xp_device *d = &r->inventory->devices.items[i];
                const struct xp_device_sample *s = &r->samples->items[i];
                struct alloc allocs[ALLOCS_MAX];
                size_t n = mrender_allocations(r->view, d->id, allocs);

                for (size_t k = 0; k < n; k++) {
                        const struct mview_pod *p = allocs[k].pod;
                        struct xp_expo_label labels[] = {
                            {"node", r->node_name},
                            {"device", d->id},
                            {"kind", xp_device_kind_to_string(d->kind)},
                            {"namespace", p->namespace},
                            {"pod", p->name},
                            {"container", p->device_container},
                        };
                        double v;

                        if (!fn(r, s, p, &v))
                                continue;
                        if (!started)
                                xp_expo_family(w, name, XP_EXPO_GAUGE, help);
                        started = true;
                        xp_expo_sample(w, "", labels, XP_ELEMENTSOF(labels), v);
                }
        }
}

void mrender_pod_device_utilization(struct xp_expo *w, const struct mrender *r)
{
        render_family(w,
                      r,
                      "xpool_pod_device_utilization_percent",
                      "The pod's own utilisation of the device (%): its processes' SM time where "
                      "the driver reports per process, else the device's.",
                      pod_utilization);
}

void mrender_pod_devices(struct xp_expo *w, const struct mrender *r)
{
        render_family(w,
                      r,
                      "xpool_pod_device_memory_used_bytes",
                      "Device memory the pod's processes use (bytes), as the driver reports per "
                      "process.",
                      pod_memory);
        mrender_pod_device_utilization(w, r);
}
