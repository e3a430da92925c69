/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The nvml backend: NVIDIA GPUs through the NVIDIA Management Library, loaded at run time with
 * dlopen() so that one binary runs on nodes with and without the driver. No NVIDIA header is
 * used: the few types and prototypes below are declared from NVML's public API reference, and
 * every function is looked up by its versioned name (nvmlInit_v2, ...).
 *
 * A missing library, a missing required symbol or a driver that does not initialise means
 * "backend unavailable" (-ENODEV from probe), never an error. Optional functions that an older
 * driver lacks (or that answer NOT_SUPPORTED / FUNCTION_NOT_FOUND) leave their field empty.
 *
 * Topology: NVLinks are counted per peer. A link whose remote end is a GPU joins the two GPUs
 * directly. Links that end on NVSwitches join every pair of GPUs on the switch fabric, with as
 * many links as the smaller of the two GPUs' switch-link counts (nvidia-smi shows NV18 between
 * every pair on a DGX H100). Bandwidth is the sum over those links of the per-link, per-direction
 * rate of the link's NVLink version (see nvlink_rates[]).
 *
 * Health: a pending Xid critical error event (polled without waiting) whose Xid is not an
 * application error makes the device Unhealthy, as NVIDIA's Kubernetes device plugin decides.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "backend.h"
#include "nvml_abi.h"
#include "nvml_api.h"
#include "xpool/log.h"
#include "xpool/strutil.h"

/*
 * Per-link, per-direction bandwidth in GB/s by the version nvmlDeviceGetNvLinkVersion reports
 * (nvmlNvlinkVersion_t: 1 = NVLink 1.0, 2 = 2.0, 3 = 2.2, 4 = 3.0, 5 = 3.1, 6 = 4.0, 7 = 5.0).
 *   NVLink 1.0 (P100)            20 GB/s
 *   NVLink 2.0, 2.2 (V100)       25 GB/s
 *   NVLink 3.0, 3.1 (A100, A30)  25 GB/s (12 links: 300 GB/s each way, 600 GB/s both)
 *   NVLink 4.0 (H100, H200)      25 GB/s (18 links: 450 GB/s each way, 900 GB/s both)
 *   NVLink 5.0 (B200, GB200)     50 GB/s (18 links: 900 GB/s each way, 1.8 TB/s both)
 * An unknown version contributes 0 (bandwidth unknown).
 */
static const struct {
        unsigned int version;
        double gbps;
} nvlink_rates[] = {
    {1, 20.0},
    {2, 25.0},
    {3, 25.0},
    {4, 25.0},
    {5, 25.0},
    {6, 25.0},
    {7, 50.0},
};

/* Events drained in one discovery, so a flood cannot keep discovery busy. */
#define NVML_EVENTS_MAX 4096
/* GPUs listed from one NVML (its count sizes an n x n link matrix). */
#define NVML_GPUS_MAX 256

/* ---- loading ------------------------------------------------------------------------------ */

static const char *nvml_library(const struct xp_discovery *d)
{
        return xp_nvml_library(d->config->nvml_library);
}

/* ---- per-GPU queries ------------------------------------------------------------------------ */

struct nvml_gpu {
        struct nvml_device *handle;
        size_t slot;       /* in d->inventory->devices */
        char *id;          /* owned copy of the device id */
        char *pci_address; /* owned, sysfs form, or NULL */
        unsigned switch_links;
        double switch_gbps;
};

/* NVML's "00000000:18:00.0" (upper-case hex, 8-digit domain) as sysfs writes it. */
static int normalize_bus_id(const char *bus_id, char out[static 32])
{
        unsigned domain, bus, device, function;
        char tail;

        if (sscanf(bus_id, "%x:%x:%x.%x%c", &domain, &bus, &device, &function, &tail) != 4)
                return -EINVAL;
        if (bus > 0xff || device > 0x1f || function > 7)
                return -EINVAL;
        snprintf(out, 32, "%04x:%02x:%02x.%x", domain, bus, device, function);
        return 0;
}

static bool supported(enum nvml_return r)
{
        return r == NVML_SUCCESS;
}

static int add_device_node(struct xp_device *dev, const char *node)
{
        char **grown = realloc(dev->device_nodes.items, (dev->device_nodes.n + 1) * sizeof(*grown));

        if (!grown)
                return -ENOMEM;
        dev->device_nodes.items = grown;
        grown[dev->device_nodes.n] = strdup(node);
        if (!grown[dev->device_nodes.n])
                return -ENOMEM;
        dev->device_nodes.n++;
        return 0;
}

/* NUMA node and local CPUs from sysfs below the root, where the PCI device is there. */
static int read_locality(struct xp_discovery *d, struct xp_device *dev)
{
        _cleanup_free_ char *cpus = NULL;
        char path[128];
        int64_t node;
        int r;

        snprintf(path, sizeof(path), "sys/bus/pci/devices/%s/numa_node", dev->pci_address);
        if (xp_root_read_i64(d, path, &node) == 0 && node >= 0)
                dev->numa_node = (struct xp_opt_int64){.set = true, .value = node};
        snprintf(path, sizeof(path), "sys/bus/pci/devices/%s/local_cpulist", dev->pci_address);
        r = xp_root_read(d, path, &cpus);
        if (r == -ENOMEM)
                return r;
        if (r == 0 && *cpus) {
                struct xp_cpuset set;

                /* as the PCI backend writes it; a list that does not read is left out */
                if (xp_cpuset_parse(cpus, &set) == 0)
                        return xp_cpuset_format(&set, &dev->local_cpus);
        }
        return 0;
}

static int fill_metrics(const struct nvml_api *api, struct nvml_device *h, struct xp_device *dev)
{
        struct xp_device_metrics m = {0};
        struct nvml_utilization util;
        struct nvml_memory mem;
        unsigned int value;
        bool any = false;

        if (api->get_utilization_rates && supported(api->get_utilization_rates(h, &util))) {
                m.utilization_percent = util.gpu;
                any = true;
        }
        if (api->get_memory_info && supported(api->get_memory_info(h, &mem))) {
                m.memory_used_bytes = mem.used > INT64_MAX ? INT64_MAX : (int64_t)mem.used;
                any = true;
        }
        if (api->get_temperature &&
            supported(api->get_temperature(h, NVML_TEMPERATURE_GPU, &value))) {
                m.temperature_celsius = value;
                any = true;
        }
        if (api->get_power_usage && supported(api->get_power_usage(h, &value))) {
                m.power_watts = value / 1000.0;
                any = true;
        }
        if (!any)
                return 0;
        dev->metrics = calloc(1, sizeof(*dev->metrics));
        if (!dev->metrics)
                return -ENOMEM;
        *dev->metrics = m;
        return 0;
}

static bool id_taken(const struct nvml_gpu *gpus, size_t n, const char *id)
{
        for (size_t i = 0; i < n; i++)
                if (xp_streq0(gpus[i].id, id))
                        return true;
        return false;
}

/* The GPU's device nodes; the minor number names its own, which the driver allows 0-254. */
static int add_nodes(const struct nvml_api *api, struct nvml_device *h, struct xp_device *dev)
{
        unsigned int minor;
        char node[64];

        if (api->get_minor_number && supported(api->get_minor_number(h, &minor)) && minor < 255) {
                dev->index =
                    minor; /* index means nvidiaN everywhere, as the pci backend reads it */
                snprintf(node, sizeof(node), "/dev/nvidia%u", minor);
                if (add_device_node(dev, node) < 0)
                        return -ENOMEM;
        }
        if (add_device_node(dev, "/dev/nvidiactl") < 0 ||
            add_device_node(dev, "/dev/nvidia-uvm") < 0 ||
            add_device_node(dev, "/dev/nvidia-uvm-tools") < 0)
                return -ENOMEM;
        return 0;
}

/*
 * Adds the GPU at NVML index `index` to the inventory and records it in *gpu. Returns 1 when
 * added, 0 when NVML cannot tell us enough about it to list it (skipped), -ENOMEM.
 */
static int add_gpu(struct xp_discovery *d,
                   const struct nvml_api *api,
                   unsigned index,
                   const struct nvml_gpu *known,
                   size_t n_known,
                   struct nvml_gpu *gpu)
{
        char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = "";
        char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE] = "";
        char pci_address[32] = "", pci_id[16] = "";
        struct nvml_pci_info pci;
        struct nvml_memory mem;
        struct nvml_device *h = NULL;
        struct xp_device *dev;
        unsigned int current, pending;
        const char *id;
        int major_cc, minor_cc, r;
        enum nvml_return nr;

        nr = api->get_handle_by_index(index, &h);
        if (nr != NVML_SUCCESS || !h) {
                xp_debug("nvml", "GPU %u: no handle: %s", index, xp_nvml_strerror(api, nr));
                return 0;
        }
        if (api->get_uuid && !supported(api->get_uuid(h, uuid, sizeof(uuid))))
                uuid[0] = '\0';
        uuid[sizeof(uuid) - 1] = '\0';
        if (api->get_pci_info && supported(api->get_pci_info(h, &pci))) {
                pci.bus_id[sizeof(pci.bus_id) - 1] = '\0';
                if (normalize_bus_id(pci.bus_id, pci_address) < 0)
                        pci_address[0] = '\0';
                snprintf(pci_id,
                         sizeof(pci_id),
                         "%04x:%04x",
                         pci.pci_device_id & 0xffff,
                         pci.pci_device_id >> 16);
        }
        id = uuid[0] ? uuid : pci_address;
        if (!id[0] || id_taken(known, n_known, id)) {
                xp_debug("nvml", "GPU %u: no UUID nor PCI address, or a duplicate id", index);
                return 0;
        }

        *gpu = (struct nvml_gpu){.handle = h, .slot = d->inventory->devices.n};
        gpu->id = strdup(id);
        if (!gpu->id || (pci_address[0] && !(gpu->pci_address = strdup(pci_address))))
                return -ENOMEM;

        dev = xp_discovery_add_device(d);
        if (!dev)
                return -ENOMEM;
        dev->kind = XP_DEVICE_GPU;
        dev->index = index;
        dev->health = XP_DEVICE_HEALTHY;
        if (api->get_name && supported(api->get_name(h, name, sizeof(name))))
                name[sizeof(name) - 1] = '\0';
        else
                name[0] = '\0';
        if (xp_discovery_set_string(&dev->id, id) < 0 ||
            xp_discovery_set_string(&dev->vendor, "NVIDIA") < 0 ||
            xp_discovery_set_string(&dev->model, name[0] ? name : NULL) < 0 ||
            xp_discovery_set_string(&dev->resource_name, "nvidia.com/gpu") < 0 ||
            xp_discovery_set_string(&dev->pci_address, pci_address[0] ? pci_address : NULL) < 0 ||
            xp_discovery_set_string(&dev->pci_id, pci_id[0] ? pci_id : NULL) < 0)
                return -ENOMEM;

        if (add_nodes(api, h, dev) < 0)
                return -ENOMEM;

        if (api->get_memory_info && supported(api->get_memory_info(h, &mem)))
                dev->memory_bytes = mem.total > INT64_MAX ? INT64_MAX : (int64_t)mem.total;
        if (api->get_cuda_compute_capability &&
            supported(api->get_cuda_compute_capability(h, &major_cc, &minor_cc)) && major_cc >= 0 &&
            minor_cc >= 0) {
                char cc[32];

                snprintf(cc, sizeof(cc), "%d.%d", major_cc, minor_cc);
                if (xp_discovery_set_string(&dev->compute_capability, cc) < 0)
                        return -ENOMEM;
        }
        if (api->get_mig_mode && supported(api->get_mig_mode(h, &current, &pending)))
                dev->mig_enabled = (struct xp_opt_bool){
                    .set = true,
                    .value = current == NVML_DEVICE_MIG_ENABLE,
                };
        r = fill_metrics(api, h, dev);
        if (r < 0)
                return r;
        if (dev->pci_address) {
                r = read_locality(d, dev);
                if (r < 0)
                        return r;
        }
        return 1;
}

/* ---- NVLink ------------------------------------------------------------------------------- */

static double nvlink_rate(const struct nvml_api *api, struct nvml_device *h, unsigned link)
{
        unsigned int version;

        if (!api->get_nvlink_version || !supported(api->get_nvlink_version(h, link, &version)))
                return 0;
        for (size_t i = 0; i < XP_ELEMENTSOF(nvlink_rates); i++)
                if (nvlink_rates[i].version == version)
                        return nvlink_rates[i].gbps;
        return 0;
}

static ssize_t find_gpu_by_pci(const struct nvml_gpu *gpus, size_t n, const char *pci_address)
{
        for (size_t i = 0; i < n; i++)
                if (gpus[i].pci_address && strcmp(gpus[i].pci_address, pci_address) == 0)
                        return (ssize_t)i;
        return -1;
}

/*
 * Walks GPU i's links: counts[i * n + j] and gbps[i * n + j] get its direct links to GPU j,
 * gpus[i].switch_* its links to NVSwitches. A link whose far end is neither a GPU we list nor a
 * known switch (a CPU, or an unknown end on a driver without nvmlDeviceGetNvLinkRemoteDeviceType)
 * is left out.
 */
static void scan_links(const struct nvml_api *api,
                       struct nvml_gpu *gpus,
                       size_t n,
                       size_t i,
                       unsigned *counts,
                       double *gbps)
{
        for (unsigned link = 0; link < NVML_NVLINK_MAX_LINKS; link++) {
                enum nvml_nvlink_device_type type = NVML_NVLINK_DEVICE_TYPE_UNKNOWN;
                enum nvml_enable_state active = NVML_FEATURE_DISABLED;
                struct nvml_pci_info remote;
                char address[32];
                ssize_t j;

                if (!supported(api->get_nvlink_state(gpus[i].handle, link, &active)) ||
                    active != NVML_FEATURE_ENABLED)
                        continue;
                if (api->get_nvlink_remote_device_type &&
                    !supported(api->get_nvlink_remote_device_type(gpus[i].handle, link, &type)))
                        type = NVML_NVLINK_DEVICE_TYPE_UNKNOWN;
                if (type == NVML_NVLINK_DEVICE_TYPE_SWITCH) {
                        gpus[i].switch_links++;
                        gpus[i].switch_gbps += nvlink_rate(api, gpus[i].handle, link);
                        continue;
                }
                if (type != NVML_NVLINK_DEVICE_TYPE_GPU && type != NVML_NVLINK_DEVICE_TYPE_UNKNOWN)
                        continue;
                if (!api->get_nvlink_remote_pci_info ||
                    !supported(api->get_nvlink_remote_pci_info(gpus[i].handle, link, &remote)))
                        continue;
                remote.bus_id[sizeof(remote.bus_id) - 1] = '\0';
                if (normalize_bus_id(remote.bus_id, address) < 0)
                        continue;
                j = find_gpu_by_pci(gpus, n, address);
                if (j < 0 || (size_t)j == i)
                        continue;
                counts[i * n + (size_t)j]++;
                gbps[i * n + (size_t)j] += nvlink_rate(api, gpus[i].handle, link);
        }
}

static int
add_nvlinks(struct xp_discovery *d, const struct nvml_api *api, struct nvml_gpu *gpus, size_t n)
{
        _cleanup_free_ unsigned *counts = NULL;
        _cleanup_free_ double *gbps = NULL;

        if (n < 2 || !api->get_nvlink_state)
                return 0;
        counts = calloc(n * n, sizeof(*counts));
        gbps = calloc(n * n, sizeof(*gbps));
        if (!counts || !gbps)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                scan_links(api, gpus, n, i, counts, gbps);

        for (size_t i = 0; i < n; i++)
                for (size_t j = i + 1; j < n; j++) {
                        /* a direct link as GPU i sees it, else as GPU j does */
                        unsigned links = counts[i * n + j];
                        double bandwidth = gbps[i * n + j];
                        int r;

                        if (!links) {
                                links = counts[j * n + i];
                                bandwidth = gbps[j * n + i];
                        }
                        if (gpus[i].switch_links && gpus[j].switch_links) {
                                bool i_fewer = gpus[i].switch_links <= gpus[j].switch_links;

                                links += i_fewer ? gpus[i].switch_links : gpus[j].switch_links;
                                bandwidth += gpus[i].switch_gbps < gpus[j].switch_gbps
                                                 ? gpus[i].switch_gbps
                                                 : gpus[j].switch_gbps;
                        }
                        if (!links)
                                continue;
                        r = xp_discovery_add_link(
                            d, gpus[i].id, gpus[j].id, XP_LINK_NVLINK, links, bandwidth);
                        if (r < 0)
                                return r;
                }
        return 0;
}

/* ---- health ------------------------------------------------------------------------------- */

/*
 * Drains the Xid critical error events pending now (waiting 0 ms) and marks the devices they
 * name unhealthy; the first critical Xid of a device gives the reason. A device whose events
 * cannot be watched (no event functions in this NVML, or they fail) has unknown health; one that
 * has no Xid events (NOT_SUPPORTED) is taken as healthy, as NVIDIA's device plugin does.
 */
static int check_health(struct xp_discovery *d,
                        const struct nvml_api *api,
                        const struct nvml_gpu *gpus,
                        size_t n)
{
        struct xp_device *devices = d->inventory->devices.items;
        struct nvml_event_set *set = NULL;
        enum nvml_return nr;
        int r = 0;

        if (!api->event_set_create || !api->register_events || !api->event_set_wait ||
            !api->event_set_free || !supported(api->event_set_create(&set)) || !set) {
                for (size_t i = 0; i < n; i++)
                        devices[gpus[i].slot].health = XP_DEVICE_HEALTH_UNKNOWN;
                return 0;
        }
        for (size_t i = 0; i < n; i++) {
                nr = api->register_events(gpus[i].handle, NVML_EVENT_TYPE_XID_CRITICAL_ERROR, set);
                if (nr == NVML_SUCCESS || nr == NVML_ERROR_NOT_SUPPORTED)
                        continue;
                xp_debug("nvml",
                         "GPU %s: cannot watch Xid events: %s",
                         gpus[i].id,
                         xp_nvml_strerror(api, nr));
                devices[gpus[i].slot].health = XP_DEVICE_HEALTH_UNKNOWN;
        }
        for (unsigned k = 0; k < NVML_EVENTS_MAX; k++) {
                struct nvml_event_data event = {0};
                char reason[128];

                nr = api->event_set_wait(set, &event, 0);
                if (nr == NVML_ERROR_TIMEOUT)
                        break;
                if (nr != NVML_SUCCESS) {
                        xp_debug("nvml", "nvmlEventSetWait_v2: %s", xp_nvml_strerror(api, nr));
                        for (size_t i = 0; i < n; i++)
                                if (devices[gpus[i].slot].health == XP_DEVICE_HEALTHY)
                                        devices[gpus[i].slot].health = XP_DEVICE_HEALTH_UNKNOWN;
                        break;
                }
                if (!(event.event_type & NVML_EVENT_TYPE_XID_CRITICAL_ERROR) ||
                    !xp_nvml_xid_is_critical(event.event_data))
                        continue;
                for (size_t i = 0; i < n; i++) {
                        struct xp_device *dev = &devices[gpus[i].slot];

                        if (gpus[i].handle != event.device || dev->health == XP_DEVICE_UNHEALTHY)
                                continue;
                        xp_nvml_xid_reason(event.event_data, reason);
                        dev->health = XP_DEVICE_UNHEALTHY;
                        r = xp_discovery_set_string(&dev->health_reason, reason);
                        if (r < 0)
                                goto out;
                }
        }
out:
        api->event_set_free(set);
        return r;
}

/* ---- the backend ------------------------------------------------------------------------- */

/* Loads and initialises NVML once; discover uses it and release shuts it down. */
static int nvml_probe(struct xp_discovery *d)
{
        struct nvml_api *api = calloc(1, sizeof(*api));
        int r;

        if (!api)
                return -ENOMEM;
        r = xp_nvml_api_open(nvml_library(d), api);
        if (r < 0) {
                free(api);
                return r;
        }
        d->state = api;
        return 0;
}

static void nvml_release(struct xp_discovery *d)
{
        struct nvml_api *api = d->state;

        if (api) {
                xp_nvml_api_close(api);
                free(api);
        }
}

static void gpus_free(struct nvml_gpu *gpus, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                free(gpus[i].id);
                free(gpus[i].pci_address);
        }
        free(gpus);
}

static int nvml_discover(struct xp_discovery *d, struct xp_error *err)
{
        const struct nvml_api *api = d->state;
        struct nvml_gpu *gpus = NULL;
        unsigned int count = 0;
        size_t n = 0;
        enum nvml_return nr;
        int r = 0;

        nr = api->get_count(&count);
        if (nr != NVML_SUCCESS) {
                xp_debug("nvml", "nvmlDeviceGetCount_v2: %s", xp_nvml_strerror(api, nr));
                return 0;
        }
        d->nvml_listed = true;
        if (count == 0)
                return 0;
        if (count > NVML_GPUS_MAX) {
                xp_debug("nvml", "NVML counts %u GPUs, listing the first %d", count, NVML_GPUS_MAX);
                count = NVML_GPUS_MAX;
        }
        gpus = calloc(count, sizeof(*gpus));
        if (!gpus) {
                r = -ENOMEM;
                goto out;
        }
        for (unsigned i = 0; i < count; i++) {
                r = add_gpu(d, api, i, gpus, n, &gpus[n]);
                if (r < 0) {
                        n++; /* free what add_gpu copied */
                        goto out;
                }
                n += (size_t)r;
        }
        r = add_nvlinks(d, api, gpus, n);
        if (r < 0)
                goto out;
        r = check_health(d, api, gpus, n);
out:
        gpus_free(gpus, n);
        if (r < 0)
                return xp_errorf(err, r, "nvml: out of memory while listing GPUs");
        return 0;
}

const struct xp_device_backend xp_nvml_backend = {
    .name = "nvml",
    .probe = nvml_probe,
    .discover = nvml_discover,
    .release = nvml_release,
};
