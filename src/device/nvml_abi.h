/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The part of NVML's ABI xpool uses, declared from NVIDIA's public API reference (no NVIDIA
 * header): shared by the nvml backend, which loads libnvidia-ml.so.1 with dlopen(), and the fake
 * library the tests build, so both agree on every type and value. NVML's own names are in the
 * comments.
 */

#include <stdint.h>

/* nvmlReturn_t */
enum nvml_return {
        NVML_SUCCESS = 0,
        NVML_ERROR_UNINITIALIZED = 1,
        NVML_ERROR_INVALID_ARGUMENT = 2,
        NVML_ERROR_NOT_SUPPORTED = 3,
        NVML_ERROR_NO_PERMISSION = 4,
        NVML_ERROR_NOT_FOUND = 6,
        NVML_ERROR_INSUFFICIENT_SIZE = 7,
        NVML_ERROR_DRIVER_NOT_LOADED = 9,
        NVML_ERROR_TIMEOUT = 10,
        NVML_ERROR_FUNCTION_NOT_FOUND = 13,
        NVML_ERROR_GPU_IS_LOST = 15,
        NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18,
        NVML_ERROR_MEMORY = 20,
        NVML_ERROR_UNKNOWN = 999,
};

/* nvmlEnableState_t */
enum nvml_enable_state {
        NVML_FEATURE_DISABLED = 0,
        NVML_FEATURE_ENABLED = 1,
};

/* nvmlTemperatureSensors_t */
enum nvml_temperature_sensor {
        NVML_TEMPERATURE_GPU = 0,
};

/* nvmlClockType_t */
enum nvml_clock_type {
        NVML_CLOCK_GRAPHICS = 0,
        NVML_CLOCK_SM = 1,
        NVML_CLOCK_MEM = 2,
};

/* nvmlProcessInfo_t, as nvmlDeviceGetComputeRunningProcesses_v3 fills it */
struct nvml_process_info {
        unsigned int pid;
        unsigned long long used_gpu_memory; /* bytes; NVML_VALUE_NOT_AVAILABLE when unknown */
        unsigned int gpu_instance_id;
        unsigned int compute_instance_id;
};
#define NVML_VALUE_NOT_AVAILABLE_ULL 0xffffffffffffffffULL

/* nvmlIntNvLinkDeviceType_t */
enum nvml_nvlink_device_type {
        NVML_NVLINK_DEVICE_TYPE_GPU = 0x00,
        NVML_NVLINK_DEVICE_TYPE_IBMNPU = 0x01,
        NVML_NVLINK_DEVICE_TYPE_SWITCH = 0x02,
        NVML_NVLINK_DEVICE_TYPE_UNKNOWN = 0xff,
};

#define NVML_NVLINK_MAX_LINKS              18
#define NVML_DEVICE_UUID_V2_BUFFER_SIZE    96
#define NVML_DEVICE_NAME_V2_BUFFER_SIZE    96
#define NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE 32
#define NVML_DEVICE_PCI_BUS_ID_LEGACY_SIZE 16
#define NVML_DEVICE_MIG_ENABLE             1
#define NVML_EVENT_TYPE_XID_CRITICAL_ERROR UINT64_C(0x0000000000000008)

/* nvmlDevice_t and nvmlEventSet_t: opaque handles */
struct nvml_device;
struct nvml_event_set;

/* nvmlMemory_t: bytes */
struct nvml_memory {
        unsigned long long total;
        unsigned long long free;
        unsigned long long used;
};

/* nvmlUtilization_t: percent over the last sample period */
struct nvml_utilization {
        unsigned int gpu;
        unsigned int memory;
};

/* nvmlPciInfo_t (the layout nvmlDeviceGetPciInfo_v3 and ..._NvLinkRemotePciInfo_v2 fill) */
struct nvml_pci_info {
        char bus_id_legacy[NVML_DEVICE_PCI_BUS_ID_LEGACY_SIZE]; /* busIdLegacy */
        unsigned int domain;
        unsigned int bus;
        unsigned int device;
        unsigned int pci_device_id;    /* pciDeviceId: device id << 16 | vendor id */
        unsigned int pci_subsystem_id; /* pciSubSystemId */
        char bus_id[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE]; /* busId, "00000000:18:00.0" */
};

/* nvmlEventData_t */
struct nvml_event_data {
        struct nvml_device *device;
        unsigned long long event_type;
        unsigned long long event_data; /* the Xid, for Xid critical error events */
        unsigned int gpu_instance_id;
        unsigned int compute_instance_id;
};

/* nvmlFieldValue_t, for nvmlDeviceGetFieldValues */
#define NVML_FI_DEV_GET_GPU_RECOVERY_ACTION 230
/* nvmlDeviceGpuRecoveryAction_t: what the driver asks for before the GPU is usable again */
enum nvml_recovery_action {
        NVML_GPU_RECOVERY_ACTION_NONE = 0,
        NVML_GPU_RECOVERY_ACTION_GPU_RESET = 1,
        NVML_GPU_RECOVERY_ACTION_NODE_REBOOT = 2,
        NVML_GPU_RECOVERY_ACTION_DRAIN_P2P = 3,
        NVML_GPU_RECOVERY_ACTION_DRAIN_AND_RESET = 4,
};

/* nvmlValueType_t */
enum nvml_value_type {
        NVML_VALUE_TYPE_DOUBLE = 0,
        NVML_VALUE_TYPE_UNSIGNED_INT = 1,
        NVML_VALUE_TYPE_UNSIGNED_LONG = 2,
        NVML_VALUE_TYPE_UNSIGNED_LONG_LONG = 3,
        NVML_VALUE_TYPE_SIGNED_LONG_LONG = 4,
        NVML_VALUE_TYPE_SIGNED_INT = 5,
};

/* nvmlValue_t */
union nvml_value {
        double d_val;
        unsigned int ui_val;
        unsigned long ul_val;
        unsigned long long ull_val;
        signed long long sll_val;
        signed int si_val;
};

/* nvmlFieldValue_t */
struct nvml_field_value {
        unsigned int field_id;
        unsigned int scope_id;
        long long timestamp;
        long long latency_usec;
        enum nvml_value_type value_type;
        enum nvml_return nvml_return;
        union nvml_value value;
};

/* nvmlProcessUtilizationSample_t, as nvmlDeviceGetProcessUtilization fills it */
struct nvml_process_utilization {
        unsigned int pid;
        unsigned long long timestamp; /* CPU time of the sample, microseconds */
        unsigned int sm_util;         /* percent */
        unsigned int mem_util;
        unsigned int enc_util;
        unsigned int dec_util;
};

/* nvmlMemoryErrorType_t and nvmlEccCounterType_t, for nvmlDeviceGetTotalEccErrors */
enum nvml_memory_error_type {
        NVML_MEMORY_ERROR_TYPE_CORRECTED = 0,   /* single-bit */
        NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1, /* double-bit */
};
enum nvml_ecc_counter_type {
        NVML_VOLATILE_ECC = 0, /* since the driver loaded */
        NVML_AGGREGATE_ECC = 1,
};

/* nvmlDeviceGetFieldValues' NVLink data counters, every link together: KiB since the driver
 * loaded */
#define NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX 138
#define NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX 139

/* GPM (GPU performance monitoring, Hopper and later): nvmlGpmMetricId_t values xpool reads */
enum nvml_gpm_metric_id {
        NVML_GPM_METRIC_GRAPHICS_UTIL = 1,            /* percent of time the graphics engine ran */
        NVML_GPM_METRIC_SM_UTIL = 2,                  /* percent of SMs busy */
        NVML_GPM_METRIC_ANY_TENSOR_UTIL = 5,          /* percent of cycles a tensor pipe ran */
        NVML_GPM_METRIC_DRAM_BW_UTIL = 10,            /* percent of the DRAM bandwidth */
        NVML_GPM_METRIC_PCIE_TX_PER_SEC = 20,         /* MiB/s */
        NVML_GPM_METRIC_PCIE_RX_PER_SEC = 21,         /* MiB/s */
        NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC = 60, /* MiB/s, every link */
        NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC = 61,
        NVML_GPM_METRIC_MAX = 98,
};

/* nvmlGpmSample_t: a handle passed by value */
struct nvml_gpm_sample {
        struct nvml_gpm_sample_st *handle;
};

/* nvmlGpmMetric_t */
struct nvml_gpm_metric {
        unsigned int metric_id;
        enum nvml_return nvml_return;
        double value;
        struct {
                char *short_name;
                char *long_name;
                char *unit;
        } metric_info;
};

/* nvmlGpmMetricsGet_t, version 1 (the metrics array NVML_GPM_METRIC_MAX long) */
#define NVML_GPM_METRICS_GET_VERSION 1
struct nvml_gpm_metrics_get {
        unsigned int version;
        unsigned int num_metrics;
        struct nvml_gpm_sample sample1;
        struct nvml_gpm_sample sample2;
        struct nvml_gpm_metric metrics[NVML_GPM_METRIC_MAX];
};

/* nvmlGpmSupport_t */
#define NVML_GPM_SUPPORT_VERSION 1
struct nvml_gpm_support {
        unsigned int version;
        unsigned int is_supported_device;
};
