/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * NVML loaded with dlopen(), shared by the nvml backend (nvml.c) and the health watch
 * (health.c): the function table, loading and unloading, and what an Xid means.
 */

#include <stdbool.h>

#include "nvml_abi.h"

struct nvml_api {
        void *dl;
        enum nvml_return (*init)(void);
        enum nvml_return (*shutdown)(void);
        const char *(*error_string)(enum nvml_return result);
        enum nvml_return (*get_count)(unsigned int *count);
        enum nvml_return (*get_handle_by_index)(unsigned int index, struct nvml_device **device);
        enum nvml_return (*get_uuid)(struct nvml_device *device, char *uuid, unsigned int length);
        enum nvml_return (*get_name)(struct nvml_device *device, char *name, unsigned int length);
        enum nvml_return (*get_minor_number)(struct nvml_device *device, unsigned int *minor);
        enum nvml_return (*get_memory_info)(struct nvml_device *device, struct nvml_memory *memory);
        enum nvml_return (*get_pci_info)(struct nvml_device *device, struct nvml_pci_info *pci);
        enum nvml_return (*get_utilization_rates)(struct nvml_device *device,
                                                  struct nvml_utilization *utilization);
        enum nvml_return (*get_temperature)(struct nvml_device *device,
                                            enum nvml_temperature_sensor sensor,
                                            unsigned int *temperature);
        enum nvml_return (*get_power_usage)(struct nvml_device *device, unsigned int *milliwatts);
        enum nvml_return (*get_cuda_compute_capability)(struct nvml_device *device,
                                                        int *major,
                                                        int *minor);
        enum nvml_return (*get_mig_mode)(struct nvml_device *device,
                                         unsigned int *current,
                                         unsigned int *pending);
        enum nvml_return (*get_nvlink_state)(struct nvml_device *device,
                                             unsigned int link,
                                             enum nvml_enable_state *active);
        enum nvml_return (*get_nvlink_remote_pci_info)(struct nvml_device *device,
                                                       unsigned int link,
                                                       struct nvml_pci_info *pci);
        enum nvml_return (*get_nvlink_remote_device_type)(struct nvml_device *device,
                                                          unsigned int link,
                                                          enum nvml_nvlink_device_type *type);
        enum nvml_return (*get_nvlink_version)(struct nvml_device *device,
                                               unsigned int link,
                                               unsigned int *version);
        enum nvml_return (*event_set_create)(struct nvml_event_set **set);
        enum nvml_return (*register_events)(struct nvml_device *device,
                                            unsigned long long event_types,
                                            struct nvml_event_set *set);
        enum nvml_return (*event_set_wait)(struct nvml_event_set *set,
                                           struct nvml_event_data *data,
                                           unsigned int timeout_ms);
        enum nvml_return (*event_set_free)(struct nvml_event_set *set);
        /* the health watch (health.c) */
        enum nvml_return (*get_handle_by_uuid)(const char *uuid, struct nvml_device **device);
        enum nvml_return (*get_field_values)(struct nvml_device *device,
                                             int count,
                                             struct nvml_field_value *values);
        /* the device sampler (sample_nvml.c) */
        enum nvml_return (*get_clock_info)(struct nvml_device *device,
                                           enum nvml_clock_type type,
                                           unsigned int *mhz);
        enum nvml_return (*get_pcie_replay_counter)(struct nvml_device *device,
                                                    unsigned int *value);
        enum nvml_return (*get_total_energy_consumption)(struct nvml_device *device,
                                                         unsigned long long *millijoules);
        enum nvml_return (*get_compute_running_processes)(struct nvml_device *device,
                                                          unsigned int *count,
                                                          struct nvml_process_info *infos);
        enum nvml_return (*get_process_utilization)(struct nvml_device *device,
                                                    struct nvml_process_utilization *samples,
                                                    unsigned int *count,
                                                    unsigned long long last_seen_us);
        enum nvml_return (*get_total_ecc_errors)(struct nvml_device *device,
                                                 enum nvml_memory_error_type error_type,
                                                 enum nvml_ecc_counter_type counter_type,
                                                 unsigned long long *count);
        enum nvml_return (*gpm_query_device_support)(struct nvml_device *device,
                                                     struct nvml_gpm_support *support);
        enum nvml_return (*gpm_sample_alloc)(struct nvml_gpm_sample *sample);
        enum nvml_return (*gpm_sample_free)(struct nvml_gpm_sample sample);
        enum nvml_return (*gpm_sample_get)(struct nvml_device *device,
                                           struct nvml_gpm_sample sample);
        enum nvml_return (*gpm_metrics_get)(struct nvml_gpm_metrics_get *metrics);
};

/* The library to load: path, else $XPOOL_NVML_LIBRARY, else "libnvidia-ml.so.1". */
const char *xp_nvml_library(const char *path);

/* Loads the library, resolves the symbols and initialises NVML: 0 or -ENODEV, nothing held. */
int xp_nvml_api_open(const char *library, struct nvml_api *ret);
void xp_nvml_api_close(struct nvml_api *api);

const char *xp_nvml_strerror(const struct nvml_api *api, enum nvml_return r);

/* Whether an Xid critical error reports the GPU's fault (not an application's). */
bool xp_nvml_xid_is_critical(unsigned long long xid);
/* "Xid 79: GPU has fallen off the bus" */
void xp_nvml_xid_reason(unsigned long long xid, char out[static 128]);
