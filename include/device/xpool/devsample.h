/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Live figures of a node's devices (docs/monitoring.md): utilisation, memory, temperature,
 * power, clocks, PCIe replays, energy, the last Xid, health and the processes using a GPU. NVIDIA
 * GPUs through NVML, AMD GPUs and other PCI accelerators through their sysfs and hwmon files,
 * simulated devices from their node description's metricsScript (or its fixed metrics). A
 * sample may block as long as a driver call does: the agent takes samples on a thread of their
 * own and serves the last one (agent/metrics.h).
 */

#include <stdbool.h>
#include <stdint.h>

#include "xpool/device.h"
#include "xpool/error.h"
#include "xpool/macro.h"
#include "xpool/object.h"

/* Which figures a sample has (xp_device_sample.has). */
enum {
        XP_SAMPLE_UTIL = 1u << 0,
        XP_SAMPLE_MEM_COPY_UTIL = 1u << 1,
        XP_SAMPLE_MEM_USED = 1u << 2,
        XP_SAMPLE_MEM_TOTAL = 1u << 3,
        XP_SAMPLE_TEMP = 1u << 4,
        XP_SAMPLE_POWER = 1u << 5,
        XP_SAMPLE_SM_CLOCK = 1u << 6,
        XP_SAMPLE_MEM_CLOCK = 1u << 7,
        XP_SAMPLE_PCIE_REPLAY = 1u << 8,
        XP_SAMPLE_ENERGY = 1u << 9,
        XP_SAMPLE_XID = 1u << 10,
        XP_SAMPLE_PROCESSES = 1u << 11,
        XP_SAMPLE_ECC_SBE = 1u << 12,
        XP_SAMPLE_ECC_DBE = 1u << 13,
        XP_SAMPLE_NVLINK_TOTAL = 1u << 14,
        XP_SAMPLE_PROCESS_UTIL = 1u << 15, /* the processes' sm/mem_util_percent are the driver's */
};

/* DCGM's profiling figures (xp_device_sample.prof, .has_prof bit per entry): NVML's GPM metrics
 * over the time between two samples, so a GPU has them from its second sample on */
enum xp_sample_prof {
        XP_PROF_GR_ENGINE_ACTIVE,   /* ratio 0-1 */
        XP_PROF_SM_ACTIVE,          /* ratio 0-1 */
        XP_PROF_DRAM_ACTIVE,        /* ratio 0-1 */
        XP_PROF_PIPE_TENSOR_ACTIVE, /* ratio 0-1 */
        XP_PROF_PCIE_TX_BYTES,      /* bytes per second */
        XP_PROF_PCIE_RX_BYTES,
        XP_PROF_NVLINK_TX_BYTES,
        XP_PROF_NVLINK_RX_BYTES,
        XP_PROF_MAX,
};

struct xp_device_process {
        uint32_t pid;
        int64_t memory_used_bytes; /* -1: the driver does not say */
        double sm_util_percent;    /* its own share of the SMs' time; -1: the driver does not say */
        double mem_util_percent;   /* its own share of memory-copy time; -1 as above */
};

struct xp_device_sample {
        unsigned has;
        double utilization_percent;
        double memory_copy_utilization_percent; /* NVML's memory utilisation: busy copying */
        int64_t memory_used_bytes;
        int64_t memory_total_bytes;
        double temperature_celsius;
        double power_watts;
        double sm_clock_mhz;
        double memory_clock_mhz;
        uint64_t pcie_replays;       /* since boot */
        uint64_t energy_millijoules; /* since the driver loaded */
        uint64_t last_xid;           /* 0: none seen */
        uint64_t ecc_sbe_volatile;   /* corrected (single-bit) ECC errors since the driver loaded */
        uint64_t ecc_dbe_volatile;   /* uncorrected (double-bit) */
        uint64_t nvlink_total_kib;   /* NVLink data sent and received, every link, since load */
        unsigned has_prof;           /* bit per enum xp_sample_prof */
        double prof[XP_PROF_MAX];
        enum xp_device_health health; /* the inventory's, updated by Xid events */
        char health_reason[128];
        struct xp_device_process *processes;
        size_t n_processes;
};

/* One sample of every device, items[i] for the inventory's devices.items[i]. */
struct xp_device_samples {
        struct xp_device_sample *items;
        size_t n;
        int64_t taken_ms; /* CLOCK_MONOTONIC */
        int64_t duration_ms;
};

void xp_device_samples_done(struct xp_device_samples *samples);

struct xp_device_sampler;

/*
 * A sampler for inventory's devices (borrowed until xp_device_sampler_free()): loads NVML when
 * the inventory has NVIDIA GPUs (its absence only leaves their figures out) and reads config's
 * node description for its metricsScript. -ENOMEM, or a script's error with err.
 */
int xp_device_sampler_new(const struct xp_discovery_config *config,
                          const struct xp_node_inventory *inventory,
                          struct xp_device_sampler **ret,
                          struct xp_error *err);
void xp_device_sampler_free(struct xp_device_sampler *sampler);
XP_DEFINE_FREEP(struct xp_device_sampler, xp_device_sampler_free)

/*
 * Takes one sample of every device into ret (empty before; free with xp_device_samples_done()).
 * now_ms (CLOCK_MONOTONIC) places simulated devices on their script. 0 or -ENOMEM.
 */
int xp_device_sampler_read(struct xp_device_sampler *sampler,
                           int64_t now_ms,
                           struct xp_device_samples *ret);

/* ---- scripted figures of simulated devices -------------------------------------------------- */

struct xp_sim_script;

/*
 * Parses the metricsScript of a node description (YAML or JSON text; NULL *ret when it has
 * none):
 *   metricsScript:
 *     period: 60            # seconds; the script repeats (0 or absent: holds the last point)
 *     devices:
 *       sim-gpu-0:          # a device id, or "*" for every simulated device without its own
 *       - {at: 0, utilizationPercent: 10, memoryUsedBytes: 1e9, temperatureCelsius: 40,
 *          powerWatts: 100, memoryCopyUtilizationPercent: 5, smClockMHz: 1980,
 *          memoryClockMHz: 2619, graphicsEngineActive: 0.1, smActive: 0.08,
 *          tensorActive: 0.05, dramActive: 0.04}       # the last four: DCGM's ratios (prof)
 *       - {at: 30, utilizationPercent: 90}
 * Figures between points are interpolated linearly; a figure a point leaves out is not
 * reported. -EINVAL with err naming the field.
 */
int xp_sim_script_parse(const char *text,
                        size_t len,
                        const char *name,
                        struct xp_sim_script **ret,
                        struct xp_error *err);
void xp_sim_script_free(struct xp_sim_script *script);
XP_DEFINE_FREEP(struct xp_sim_script, xp_sim_script_free)

/* Fills the scripted figures of device id at t_ms since the script started: true when any. */
bool xp_sim_script_eval(const struct xp_sim_script *script,
                        const char *id,
                        int64_t t_ms,
                        struct xp_device_sample *ret);
