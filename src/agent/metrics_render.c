/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The agent's expositions (metrics_internal.h). NVIDIA GPUs get DCGM exporter's default counters
 * under its names, units and labels (gpu, UUID, pci_bus_id, device, modelName, Hostname, and
 * container, namespace, pod of the pod the GPU is allocated to: one series per pod when pods
 * share it), so dashboards built for it (Grafana's 12239) read them unchanged; every device gets
 * the vendor-neutral xpool_device_* series; the node and each container their usage under the
 * kubelet's and cAdvisor's names.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "metrics_internal.h"
#include "xpool/macro.h"
#include "xpool/strutil.h"

enum figure_id {
        F_SM_CLOCK,
        F_MEM_CLOCK,
        F_TEMP,
        F_POWER,
        F_ENERGY,
        F_PCIE_REPLAY,
        F_UTIL,
        F_MEM_COPY_UTIL,
        F_XID,
        F_FB_FREE,
        F_FB_USED,
        F_MEM_USED,
        F_MEM_TOTAL,
        F_ECC_SBE,
        F_ECC_DBE,
        F_NVLINK_TOTAL,
        F_PROF, /* + enum xp_sample_prof */
};

struct figure {
        const char *name;
        enum xp_expo_type type;
        const char *help;
        unsigned has; /* the sample bits it needs */
        enum figure_id id;
        int prof; /* F_PROF: which profiling figure */
};

#define PROF_FIGURE(n, h, p)                                                                       \
        {                                                                                          \
                n, XP_EXPO_GAUGE, h, 0, F_PROF, p                                                  \
        }

/* DCGM exporter's default counters that NVML answers, in its order. */
static const struct figure dcgm_figures[] = {
    {"DCGM_FI_DEV_SM_CLOCK", XP_EXPO_GAUGE, "SM clock (MHz).", XP_SAMPLE_SM_CLOCK, F_SM_CLOCK},
    {"DCGM_FI_DEV_MEM_CLOCK",
     XP_EXPO_GAUGE,
     "Memory clock (MHz).",
     XP_SAMPLE_MEM_CLOCK,
     F_MEM_CLOCK},
    {"DCGM_FI_DEV_GPU_TEMP", XP_EXPO_GAUGE, "GPU temperature (C).", XP_SAMPLE_TEMP, F_TEMP},
    {"DCGM_FI_DEV_POWER_USAGE", XP_EXPO_GAUGE, "Power draw (W).", XP_SAMPLE_POWER, F_POWER},
    {"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
     XP_EXPO_COUNTER,
     "Energy used since the driver loaded (mJ).",
     XP_SAMPLE_ENERGY,
     F_ENERGY},
    {"DCGM_FI_DEV_PCIE_REPLAY_COUNTER",
     XP_EXPO_COUNTER,
     "PCIe replays (retries) since boot.",
     XP_SAMPLE_PCIE_REPLAY,
     F_PCIE_REPLAY},
    {"DCGM_FI_DEV_GPU_UTIL", XP_EXPO_GAUGE, "GPU utilization (%).", XP_SAMPLE_UTIL, F_UTIL},
    {"DCGM_FI_DEV_MEM_COPY_UTIL",
     XP_EXPO_GAUGE,
     "Memory copy utilization (%).",
     XP_SAMPLE_MEM_COPY_UTIL,
     F_MEM_COPY_UTIL},
    {"DCGM_FI_DEV_XID_ERRORS",
     XP_EXPO_GAUGE,
     "The last Xid error seen (0: none).",
     XP_SAMPLE_XID,
     F_XID},
    {"DCGM_FI_DEV_FB_FREE",
     XP_EXPO_GAUGE,
     "Framebuffer memory free (MiB).",
     XP_SAMPLE_MEM_USED | XP_SAMPLE_MEM_TOTAL,
     F_FB_FREE},
    {"DCGM_FI_DEV_FB_USED",
     XP_EXPO_GAUGE,
     "Framebuffer memory used (MiB).",
     XP_SAMPLE_MEM_USED,
     F_FB_USED},
    {"DCGM_FI_DEV_ECC_SBE_VOL_TOTAL",
     XP_EXPO_COUNTER,
     "Total number of single-bit volatile ECC errors.",
     XP_SAMPLE_ECC_SBE,
     F_ECC_SBE},
    {"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
     XP_EXPO_COUNTER,
     "Total number of double-bit volatile ECC errors.",
     XP_SAMPLE_ECC_DBE,
     F_ECC_DBE},
    {"DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL",
     XP_EXPO_COUNTER,
     "NVLink data sent and received over every link since the driver loaded (KiB).",
     XP_SAMPLE_NVLINK_TOTAL,
     F_NVLINK_TOTAL},
    PROF_FIGURE("DCGM_FI_PROF_GR_ENGINE_ACTIVE",
                "Ratio of time the graphics engine is active.",
                XP_PROF_GR_ENGINE_ACTIVE),
    PROF_FIGURE("DCGM_FI_PROF_SM_ACTIVE",
                "The ratio of cycles an SM has at least 1 warp assigned.",
                XP_PROF_SM_ACTIVE),
    PROF_FIGURE("DCGM_FI_PROF_DRAM_ACTIVE",
                "Ratio of cycles the device memory interface is active sending or receiving data.",
                XP_PROF_DRAM_ACTIVE),
    PROF_FIGURE("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
                "Ratio of cycles any tensor pipe is active.",
                XP_PROF_PIPE_TENSOR_ACTIVE),
    PROF_FIGURE(
        "DCGM_FI_PROF_PCIE_TX_BYTES",
        "The rate of data transmitted over the PCIe bus - including both protocol headers and data payloads - in bytes per second.",
        XP_PROF_PCIE_TX_BYTES),
    PROF_FIGURE(
        "DCGM_FI_PROF_PCIE_RX_BYTES",
        "The rate of data received over the PCIe bus - including both protocol headers and data payloads - in bytes per second.",
        XP_PROF_PCIE_RX_BYTES),
    PROF_FIGURE(
        "DCGM_FI_PROF_NVLINK_TX_BYTES",
        "The rate of data transmitted over NVLink, not including protocol headers, in bytes per second.",
        XP_PROF_NVLINK_TX_BYTES),
    PROF_FIGURE(
        "DCGM_FI_PROF_NVLINK_RX_BYTES",
        "The rate of data received over NVLink, not including protocol headers, in bytes per second.",
        XP_PROF_NVLINK_RX_BYTES),
};

/* The vendor-neutral figures of every device. */
static const struct figure device_figures[] = {
    {"xpool_device_utilization_percent",
     XP_EXPO_GAUGE,
     "Device utilisation (%).",
     XP_SAMPLE_UTIL,
     F_UTIL},
    {"xpool_device_memory_used_bytes",
     XP_EXPO_GAUGE,
     "Device memory in use (bytes).",
     XP_SAMPLE_MEM_USED,
     F_MEM_USED},
    {"xpool_device_memory_total_bytes",
     XP_EXPO_GAUGE,
     "Device memory (bytes).",
     XP_SAMPLE_MEM_TOTAL,
     F_MEM_TOTAL},
    {"xpool_device_temperature_celsius",
     XP_EXPO_GAUGE,
     "Device temperature (C).",
     XP_SAMPLE_TEMP,
     F_TEMP},
    {"xpool_device_power_watts", XP_EXPO_GAUGE, "Device power draw (W).", XP_SAMPLE_POWER, F_POWER},
};

static double figure_value(const struct xp_device_sample *s, enum figure_id id)
{
        switch (id) {
        case F_SM_CLOCK:
                return s->sm_clock_mhz;
        case F_MEM_CLOCK:
                return s->memory_clock_mhz;
        case F_TEMP:
                return s->temperature_celsius;
        case F_POWER:
                return s->power_watts;
        case F_ENERGY:
                return (double)s->energy_millijoules;
        case F_PCIE_REPLAY:
                return (double)s->pcie_replays;
        case F_UTIL:
                return s->utilization_percent;
        case F_MEM_COPY_UTIL:
                return s->memory_copy_utilization_percent;
        case F_XID:
                return (double)s->last_xid;
        case F_FB_FREE:
                return (double)((s->memory_total_bytes - s->memory_used_bytes) >> 20);
        case F_FB_USED:
                return (double)(s->memory_used_bytes >> 20);
        case F_MEM_USED:
                return (double)s->memory_used_bytes;
        case F_ECC_SBE:
                return (double)s->ecc_sbe_volatile;
        case F_ECC_DBE:
                return (double)s->ecc_dbe_volatile;
        case F_NVLINK_TOTAL:
                return (double)s->nvlink_total_kib;
        case F_MEM_TOTAL:
        default:
                return (double)s->memory_total_bytes;
        }
}

static bool sample_has(const struct xp_device_sample *s, const struct figure *f)
{
        if (f->id == F_PROF)
                return s->has_prof & (1u << f->prof);
        return (s->has & f->has) == f->has;
}

static double value_of(const struct xp_device_sample *s, const struct figure *f)
{
        return f->id == F_PROF ? s->prof[f->prof] : figure_value(s, f->id);
}

/* The pods holding device id (at most ALLOCS_MAX). */
size_t
mrender_allocations(const struct mview *v, const char *id, struct alloc out[static ALLOCS_MAX])
{
        size_t n = 0;

        for (size_t i = 0; v && i < v->n_pods; i++) {
                const struct mview_pod *p = &v->pods[i];

                for (size_t d = 0; p->uid && d < p->placement.devices.n && n < ALLOCS_MAX; d++)
                        if (xp_streq0(p->placement.devices.items[d].id, id))
                                out[n++] = (struct alloc){p, p->placement.devices.items[d].milli};
        }
        return n;
}

static bool is_nvidia_gpu(const struct xp_device *d)
{
        return d->kind == XP_DEVICE_GPU && d->vendor && strcasecmp(d->vendor, "NVIDIA") == 0;
}

/* NVML's form of a PCI address: an eight-digit domain ("00000000:17:00.0"). */
static void nvml_bus_id(const char *pci, char out[static 32])
{
        size_t domain = pci ? strcspn(pci, ":") : 0;

        if (!pci)
                out[0] = '\0';
        else
                snprintf(out, 32, "%.*s%s", domain < 8 ? (int)(8 - domain) : 0, "00000000", pci);
}

/* One DCGM family: a series per NVIDIA GPU and pod (one with empty pod labels when none). */
static void render_dcgm_family(struct xp_expo *w, const struct mrender *r, const struct figure *f)
{
        bool started = false;

        for (size_t i = 0; r->samples && i < r->samples->n && i < r->inventory->devices.n; i++) {
                const struct xp_device *d = &r->inventory->devices.items[i];
                const struct xp_device_sample *s = &r->samples->items[i];
                struct alloc allocs[ALLOCS_MAX];
                size_t n = mrender_allocations(r->view, d->id, allocs);
                char gpu[24], device[32], bus[32];

                if (!is_nvidia_gpu(d) || !sample_has(s, f))
                        continue;
                if (!started)
                        xp_expo_family(w, f->name, f->type, f->help);
                started = true;
                snprintf(gpu, sizeof(gpu), "%" PRId64, d->index);
                snprintf(device, sizeof(device), "nvidia%" PRId64, d->index);
                nvml_bus_id(d->pci_address, bus);
                for (size_t k = 0; k < (n ? n : 1); k++) {
                        const struct mview_pod *p = n ? allocs[k].pod : NULL;
                        struct xp_expo_label labels[] = {
                            {"gpu", gpu},
                            {"UUID", d->id},
                            {"pci_bus_id", bus},
                            {"device", device},
                            {"modelName", d->model},
                            {"Hostname", r->hostname},
                            {"container", p ? p->device_container : ""},
                            {"namespace", p ? p->namespace : ""},
                            {"pod", p ? p->name : ""},
                        };

                        xp_expo_sample(w, "", labels, XP_ELEMENTSOF(labels), value_of(s, f));
                }
        }
}

static void render_device_figure(struct xp_expo *w, const struct mrender *r, const struct figure *f)
{
        bool started = false;

        for (size_t i = 0; r->samples && i < r->samples->n && i < r->inventory->devices.n; i++) {
                const struct xp_device *d = &r->inventory->devices.items[i];
                const struct xp_device_sample *s = &r->samples->items[i];
                struct xp_expo_label labels[] = {
                    {"node", r->node_name},
                    {"device", d->id},
                    {"kind", xp_device_kind_to_string(d->kind)},
                    {"vendor", d->vendor},
                    {"model", d->model},
                };

                if ((s->has & f->has) != f->has)
                        continue;
                if (!started)
                        xp_expo_family(w, f->name, f->type, f->help);
                started = true;
                xp_expo_sample(w, "", labels, XP_ELEMENTSOF(labels), figure_value(s, f->id));
        }
}

static void render_device_info(struct xp_expo *w, const struct mrender *r)
{
        xp_expo_family(w,
                       "xpool_device_info",
                       XP_EXPO_GAUGE,
                       "The node's devices: 1 per device, what it is in the labels.");
        for (size_t i = 0; i < r->inventory->devices.n; i++) {
                const struct xp_device *d = &r->inventory->devices.items[i];
                char index[24];
                struct xp_expo_label labels[] = {
                    {"node", r->node_name},
                    {"device", d->id},
                    {"kind", xp_device_kind_to_string(d->kind)},
                    {"vendor", d->vendor},
                    {"model", d->model},
                    {"resource", d->resource_name},
                    {"index", index},
                    {"pci_bus_id", d->pci_address},
                    {"simulated", d->simulated ? "true" : "false"},
                };

                snprintf(index, sizeof(index), "%" PRId64, d->index);
                xp_expo_sample(w, "", labels, XP_ELEMENTSOF(labels), 1);
        }
}

static const char *health_text(enum xp_device_health h)
{
        return h == XP_DEVICE_HEALTHY     ? "Healthy"
               : h == XP_DEVICE_UNHEALTHY ? "Unhealthy"
                                          : "Unknown";
}

static void render_health(struct xp_expo *w, const struct mrender *r)
{
        if (!r->samples)
                return;
        xp_expo_family(w,
                       "xpool_device_healthy",
                       XP_EXPO_GAUGE,
                       "1 unless the device is Unhealthy; health and reason in the labels.");
        for (size_t i = 0; i < r->samples->n && i < r->inventory->devices.n; i++) {
                const struct xp_device *d = &r->inventory->devices.items[i];
                const struct xp_device_sample *s = &r->samples->items[i];
                struct xp_expo_label labels[] = {
                    {"node", r->node_name},
                    {"device", d->id},
                    {"kind", xp_device_kind_to_string(d->kind)},
                    {"health", health_text(s->health)},
                    {"reason", s->health_reason},
                };

                xp_expo_sample(
                    w, "", labels, XP_ELEMENTSOF(labels), s->health == XP_DEVICE_UNHEALTHY ? 0 : 1);
        }
}

/* Allocation per device and pod: a share is its milli; an idle device one series at 0. */
static void render_allocated(struct xp_expo *w, const struct mrender *r)
{
        xp_expo_family(w,
                       "xpool_device_allocated_milli",
                       XP_EXPO_GAUGE,
                       "Thousandths of the device allocated to the pod (1000: the whole device).");
        for (size_t i = 0; i < r->inventory->devices.n; i++) {
                const struct xp_device *d = &r->inventory->devices.items[i];
                struct alloc allocs[ALLOCS_MAX];
                size_t n = mrender_allocations(r->view, d->id, allocs);

                for (size_t k = 0; k < (n ? n : 1); k++) {
                        const struct mview_pod *p = n ? allocs[k].pod : NULL;
                        struct xp_expo_label labels[] = {
                            {"node", r->node_name},
                            {"device", d->id},
                            {"kind", xp_device_kind_to_string(d->kind)},
                            {"resource", d->resource_name},
                            {"namespace", p ? p->namespace : ""},
                            {"pod", p ? p->name : ""},
                            {"container", p ? p->device_container : ""},
                        };

                        xp_expo_sample(
                            w, "", labels, XP_ELEMENTSOF(labels), n ? (double)allocs[k].milli : 0);
                }
        }
}

static void node_gauge(struct xp_expo *w,
                       const struct mrender *r,
                       const char *name,
                       enum xp_expo_type type,
                       const char *help,
                       double value)
{
        struct xp_expo_label labels[] = {{"node", r->node_name}};

        xp_expo_family(w, name, type, help);
        xp_expo_sample(w, "", labels, XP_ELEMENTSOF(labels), value);
}

static void render_node(struct xp_expo *w, const struct mrender *r)
{
        const struct mview *v = r->view;

        if (v->has_node_cpu)
                node_gauge(w,
                           r,
                           "xpool_node_cpu_usage_seconds_total",
                           XP_EXPO_COUNTER,
                           "CPU time the node spent busy (s).",
                           v->node_cpu_seconds);
        node_gauge(w, r, "xpool_node_cpus", XP_EXPO_GAUGE, "Online CPUs.", (double)v->node_cpus);
        node_gauge(w,
                   r,
                   "xpool_node_cpu_requested_cores",
                   XP_EXPO_GAUGE,
                   "CPU the node's running pods request (cores).",
                   (double)v->cpu_requested_milli / 1000.0);
        if (v->has_node_memory) {
                node_gauge(w,
                           r,
                           "xpool_node_memory_used_bytes",
                           XP_EXPO_GAUGE,
                           "Memory in use: total less available (bytes).",
                           (double)v->node_memory_used);
                node_gauge(w,
                           r,
                           "xpool_node_memory_total_bytes",
                           XP_EXPO_GAUGE,
                           "Memory (bytes).",
                           (double)v->node_memory_total);
        }
        node_gauge(w,
                   r,
                   "xpool_node_memory_requested_bytes",
                   XP_EXPO_GAUGE,
                   "Memory the node's running pods request (bytes).",
                   (double)v->memory_requested);
        node_gauge(w,
                   r,
                   "xpool_device_sample_age_seconds",
                   XP_EXPO_GAUGE,
                   "Time since the devices were last sampled (s): grows while a driver call hangs.",
                   r->sample_age_s);
        if (r->samples)
                node_gauge(w,
                           r,
                           "xpool_device_sample_duration_seconds",
                           XP_EXPO_GAUGE,
                           "How long the last device sample took (s).",
                           (double)r->samples->duration_ms / 1000.0);
}

/* One container family: usage figure which, with the node label when with_node. */
static void render_containers(struct xp_expo *w,
                              const struct mrender *r,
                              const char *name,
                              enum xp_expo_type type,
                              const char *help,
                              unsigned has,
                              bool with_node)
{
        bool started = false;

        for (size_t i = 0; i < r->view->n_pods; i++) {
                const struct mview_pod *p = &r->view->pods[i];

                for (size_t c = 0; p->uid && c < p->n_containers; c++) {
                        const struct xp_cgroup_usage *u = &p->containers[c].usage;
                        struct xp_expo_label labels[] = {
                            {"container", p->containers[c].name},
                            {"namespace", p->namespace},
                            {"pod", p->name},
                            {"node", r->node_name},
                        };
                        double v = has == XP_CGROUP_USAGE_CPU      ? (double)u->cpu_ns / 1e9
                                   : has == XP_CGROUP_USAGE_MEMORY ? (double)u->memory_bytes
                                   : has == XP_CGROUP_USAGE_OOM    ? (double)u->oom_kills
                                                                   : (double)u->working_set_bytes;

                        if (!p->containers[c].has_usage || !(u->has & has))
                                continue;
                        if (!started)
                                xp_expo_family(w, name, type, help);
                        started = true;
                        xp_expo_sample(
                            w, "", labels, XP_ELEMENTSOF(labels) - (with_node ? 0 : 1), v);
                }
        }
}

void mrender_metrics(struct xp_expo *w, const struct mrender *r)
{
        for (size_t i = 0; i < XP_ELEMENTSOF(dcgm_figures); i++)
                render_dcgm_family(w, r, &dcgm_figures[i]);
        mrender_npu(w, r);
        mrender_mlu(w, r);
        render_device_info(w, r);
        for (size_t i = 0; i < XP_ELEMENTSOF(device_figures); i++)
                render_device_figure(w, r, &device_figures[i]);
        render_health(w, r);
        render_allocated(w, r);
        mrender_pod_devices(w, r);
        render_node(w, r);
        render_containers(w,
                          r,
                          "container_cpu_usage_seconds_total",
                          XP_EXPO_COUNTER,
                          "CPU time the container used (s).",
                          XP_CGROUP_USAGE_CPU,
                          true);
        render_containers(w,
                          r,
                          "container_memory_usage_bytes",
                          XP_EXPO_GAUGE,
                          "Memory the container's group uses, page cache included (bytes).",
                          XP_CGROUP_USAGE_MEMORY,
                          true);
        render_containers(w,
                          r,
                          "container_memory_working_set_bytes",
                          XP_EXPO_GAUGE,
                          "The container's working set: usage less inactive file pages (bytes).",
                          XP_CGROUP_USAGE_WORKING_SET,
                          true);
        render_containers(w,
                          r,
                          "container_oom_events_total",
                          XP_EXPO_COUNTER,
                          "Processes of the container the kernel's OOM killer killed.",
                          XP_CGROUP_USAGE_OOM,
                          true);
}

static void render_pod_sums(struct xp_expo *w, const struct mrender *r, bool cpu)
{
        if (cpu)
                xp_expo_family(w,
                               "pod_cpu_usage_seconds_total",
                               XP_EXPO_COUNTER,
                               "CPU time the pod's containers used (s).");
        else
                xp_expo_family(w,
                               "pod_memory_working_set_bytes",
                               XP_EXPO_GAUGE,
                               "The working set of the pod's containers (bytes).");
        for (size_t i = 0; i < r->view->n_pods; i++) {
                const struct mview_pod *p = &r->view->pods[i];
                struct xp_expo_label labels[] = {{"namespace", p->namespace}, {"pod", p->name}};
                double sum = 0;
                bool any = false;

                for (size_t c = 0; p->uid && c < p->n_containers; c++) {
                        const struct xp_cgroup_usage *u = &p->containers[c].usage;

                        if (!p->containers[c].has_usage ||
                            !(u->has & (cpu ? XP_CGROUP_USAGE_CPU : XP_CGROUP_USAGE_WORKING_SET)))
                                continue;
                        any = true;
                        sum += cpu ? (double)u->cpu_ns / 1e9 : (double)u->working_set_bytes;
                }
                if (any)
                        xp_expo_sample(w, "", labels, XP_ELEMENTSOF(labels), sum);
        }
}

void mrender_resource(struct xp_expo *w, const struct mrender *r)
{
        const struct mview *v = r->view;

        if (v->has_node_cpu) {
                xp_expo_family(w,
                               "node_cpu_usage_seconds_total",
                               XP_EXPO_COUNTER,
                               "CPU time the node spent busy (s).");
                xp_expo_sample(w, "", NULL, 0, v->node_cpu_seconds);
        }
        if (v->has_node_memory) {
                xp_expo_family(w,
                               "node_memory_working_set_bytes",
                               XP_EXPO_GAUGE,
                               "Memory in use on the node (bytes).");
                xp_expo_sample(w, "", NULL, 0, (double)v->node_memory_used);
        }
        render_containers(w,
                          r,
                          "container_cpu_usage_seconds_total",
                          XP_EXPO_COUNTER,
                          "CPU time the container used (s).",
                          XP_CGROUP_USAGE_CPU,
                          false);
        render_containers(w,
                          r,
                          "container_memory_working_set_bytes",
                          XP_EXPO_GAUGE,
                          "The container's working set (bytes).",
                          XP_CGROUP_USAGE_WORKING_SET,
                          false);
        render_pod_sums(w, r, true);
        render_pod_sums(w, r, false);
        mrender_pod_device_utilization(w, r);
        for (size_t i = 0; i < XP_ELEMENTSOF(device_figures); i++)
                render_device_figure(w, r, &device_figures[i]);
        xp_expo_family(w,
                       "xpool_resource_time_seconds",
                       XP_EXPO_GAUGE,
                       "When these figures were read (unix time, s).");
        xp_expo_sample(w, "", NULL, 0, v->time_s);
        xp_expo_family(w, "scrape_error", XP_EXPO_GAUGE, "1 when reading the figures failed.");
        xp_expo_sample(w, "", NULL, 0, 0);
}
