/* SPDX-License-Identifier: Apache-2.0 */
/*
 * NVIDIA GPUs' figures through NVML (sample_internal.h): what DCGM's exporter reports by default
 * that NVML itself answers (utilisation, memory copy utilisation, framebuffer, temperature,
 * power, SM and memory clocks, PCIe replays, energy), the processes running on each GPU with
 * their own memory and utilisation, and (sample_nvml_dcgm.c) ECC, NVLink and profiling fields.
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
        s.last_seen_us = calloc(s.n, sizeof(*s.last_seen_us));
        if (!s.last_seen_us) {
                free(s.handles);
                xp_nvml_api_close(&s.api);
                return -ENOMEM;
        }
        for (size_t i = 0; i < s.n && s.api.get_handle_by_uuid; i++) {
                const struct xp_device *d = &inventory->devices.items[i];

                if (is_nvml_gpu(d) &&
                    s.api.get_handle_by_uuid(d->id, &s.handles[i]) != NVML_SUCCESS)
                        s.handles[i] = NULL;
        }
        if (nvml_gpm_open(&s) < 0) {
                nvml_sampler_close(&s);
                return -ENOMEM;
        }
        *ret = s;
        return 0;
}

void nvml_sampler_close(struct nvml_sampler *s)
{
        nvml_gpm_close(s);
        free(s->handles);
        free(s->last_seen_us);
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
                    .sm_util_percent = -1,
                    .mem_util_percent = -1,
                };
        ret->n_processes = count;
}

/* The process of pid in ret's list, appended (its memory unknown) when the list lacks it. */
static struct xp_device_process *process_of(struct xp_device_sample *ret, unsigned int pid)
{
        struct xp_device_process *grown;

        for (size_t k = 0; k < ret->n_processes; k++)
                if (ret->processes[k].pid == pid)
                        return &ret->processes[k];
        grown = realloc(ret->processes, (ret->n_processes + 1) * sizeof(*grown));
        if (!grown)
                return NULL;
        ret->processes = grown;
        ret->has |= XP_SAMPLE_PROCESSES;
        grown[ret->n_processes] = (struct xp_device_process){
            .pid = pid, .memory_used_bytes = -1, .sm_util_percent = -1, .mem_util_percent = -1};
        return &grown[ret->n_processes++];
}

/*
 * Each process's own utilisation since the last sample (nvmlDeviceGetProcessUtilization): the
 * mean of the driver's samples per process. NOT_FOUND means no process ran on the GPU since then:
 * every listed process used 0 %.
 */
static void read_process_util(struct nvml_sampler *s, size_t i, struct xp_device_sample *ret)
{
        struct nvml_process_utilization u[PROCESSES_MAX];
        unsigned int count = PROCESSES_MAX;
        enum nvml_return r;

        if (!s->api.get_process_utilization)
                return;
        r = s->api.get_process_utilization(s->handles[i], u, &count, s->last_seen_us[i]);
        if (r != NVML_SUCCESS && r != NVML_ERROR_NOT_FOUND)
                return;
        ret->has |= XP_SAMPLE_PROCESS_UTIL;
        for (size_t k = 0; k < ret->n_processes; k++)
                ret->processes[k].sm_util_percent = ret->processes[k].mem_util_percent = 0;
        if (r == NVML_ERROR_NOT_FOUND)
                return;
        for (unsigned k = 0; k < count && k < PROCESSES_MAX; k++) {
                struct xp_device_process *p = process_of(ret, u[k].pid);
                unsigned n = 0;
                double sm = 0, mem = 0;

                if (!p || p->sm_util_percent > 0)
                        continue; /* already averaged over its samples */
                for (unsigned j = k; j < count && j < PROCESSES_MAX; j++)
                        if (u[j].pid == u[k].pid) {
                                sm += u[j].sm_util;
                                mem += u[j].mem_util;
                                n++;
                        }
                p->sm_util_percent = sm / n;
                p->mem_util_percent = mem / n;
        }
        for (unsigned k = 0; k < count && k < PROCESSES_MAX; k++)
                if (u[k].timestamp > s->last_seen_us[i])
                        s->last_seen_us[i] = u[k].timestamp;
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
        read_process_util(s, i, ret);
        nvml_read_dcgm(s, i, ret);
        return true;
}
