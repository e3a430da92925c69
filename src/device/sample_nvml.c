/* SPDX-License-Identifier: Apache-2.0 */
/*
 * NVIDIA GPUs' figures through NVML (sample_internal.h): what DCGM's exporter reports by default
 * that NVML itself answers (utilisation, memory copy utilisation, framebuffer, temperature,
 * power, SM and memory clocks, PCIe replays, energy) and the processes running on each GPU.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sample_internal.h"
#include "xpool/log.h"
#include "xpool/strutil.h"

#define PROCESSES_MAX 256

static bool is_nvml_gpu(const struct xp_device *d)
{
        return d->id && !d->simulated && strncmp(d->id, "GPU-", 4) == 0;
}

int nvml_sampler_open(const struct xp_discovery_config *config,
                      const struct xp_node_inventory *inventory,
                      struct nvml_sampler *ret)
{
        struct nvml_sampler s = {0};
        bool any = false;

        for (size_t i = 0; i < inventory->devices.n; i++)
                any = any || is_nvml_gpu(&inventory->devices.items[i]);
        *ret = s;
        if (!any ||
            xp_nvml_api_open(xp_nvml_library(config ? config->nvml_library : NULL), &s.api) < 0)
                return 0;
        s.handles = calloc(inventory->devices.n, sizeof(*s.handles));
        if (!s.handles) {
                xp_nvml_api_close(&s.api);
                return -ENOMEM;
        }
        s.n = inventory->devices.n;
        for (size_t i = 0; i < s.n && s.api.get_handle_by_uuid; i++) {
                const struct xp_device *d = &inventory->devices.items[i];

                if (is_nvml_gpu(d) &&
                    s.api.get_handle_by_uuid(d->id, &s.handles[i]) != NVML_SUCCESS)
                        s.handles[i] = NULL;
        }
        *ret = s;
        return 0;
}

void nvml_sampler_close(struct nvml_sampler *s)
{
        free(s->handles);
        xp_nvml_api_close(&s->api);
        *s = (struct nvml_sampler){0};
}

static void
read_processes(struct nvml_sampler *s, struct nvml_device *h, struct xp_device_sample *ret)
{
        struct nvml_process_info infos[PROCESSES_MAX];
        unsigned int count = PROCESSES_MAX;

        if (!s->api.get_compute_running_processes ||
            s->api.get_compute_running_processes(h, &count, infos) != NVML_SUCCESS)
                return;
        ret->has |= XP_SAMPLE_PROCESSES;
        if (count == 0)
                return;
        ret->processes = calloc(count, sizeof(*ret->processes));
        if (!ret->processes)
                return;
        for (unsigned i = 0; i < count; i++)
                ret->processes[i] = (struct xp_device_process){
                    .pid = infos[i].pid,
                    .memory_used_bytes = infos[i].used_gpu_memory == NVML_VALUE_NOT_AVAILABLE_ULL
                                             ? -1
                                             : (int64_t)infos[i].used_gpu_memory,
                };
        ret->n_processes = count;
}

static void read_clocks(struct nvml_sampler *s, struct nvml_device *h, struct xp_device_sample *ret)
{
        unsigned int mhz, replays;
        unsigned long long energy;

        if (s->api.get_clock_info &&
            s->api.get_clock_info(h, NVML_CLOCK_SM, &mhz) == NVML_SUCCESS) {
                ret->has |= XP_SAMPLE_SM_CLOCK;
                ret->sm_clock_mhz = mhz;
        }
        if (s->api.get_clock_info &&
            s->api.get_clock_info(h, NVML_CLOCK_MEM, &mhz) == NVML_SUCCESS) {
                ret->has |= XP_SAMPLE_MEM_CLOCK;
                ret->memory_clock_mhz = mhz;
        }
        if (s->api.get_pcie_replay_counter &&
            s->api.get_pcie_replay_counter(h, &replays) == NVML_SUCCESS) {
                ret->has |= XP_SAMPLE_PCIE_REPLAY;
                ret->pcie_replays = replays;
        }
        if (s->api.get_total_energy_consumption &&
            s->api.get_total_energy_consumption(h, &energy) == NVML_SUCCESS) {
                ret->has |= XP_SAMPLE_ENERGY;
                ret->energy_millijoules = energy;
        }
}

bool nvml_sampler_read(struct nvml_sampler *s, size_t i, struct xp_device_sample *ret)
{
        struct nvml_device *h = i < s->n ? s->handles[i] : NULL;
        struct nvml_utilization util;
        struct nvml_memory memory;
        unsigned int temp, mw;

        if (!h)
                return false;
        if (s->api.get_utilization_rates &&
            s->api.get_utilization_rates(h, &util) == NVML_SUCCESS) {
                ret->has |= XP_SAMPLE_UTIL | XP_SAMPLE_MEM_COPY_UTIL;
                ret->utilization_percent = util.gpu;
                ret->memory_copy_utilization_percent = util.memory;
        }
        if (s->api.get_memory_info && s->api.get_memory_info(h, &memory) == NVML_SUCCESS) {
                ret->has |= XP_SAMPLE_MEM_USED | XP_SAMPLE_MEM_TOTAL;
                ret->memory_used_bytes = (int64_t)memory.used;
                ret->memory_total_bytes = (int64_t)memory.total;
        }
        if (s->api.get_temperature &&
            s->api.get_temperature(h, NVML_TEMPERATURE_GPU, &temp) == NVML_SUCCESS) {
                ret->has |= XP_SAMPLE_TEMP;
                ret->temperature_celsius = temp;
        }
        if (s->api.get_power_usage && s->api.get_power_usage(h, &mw) == NVML_SUCCESS) {
                ret->has |= XP_SAMPLE_POWER;
                ret->power_watts = mw / 1000.0;
        }
        read_clocks(s, h, ret);
        read_processes(s, h, ret);
        return true;
}
