/* SPDX-License-Identifier: Apache-2.0 */
/* NVML through dlopen(): the function table, loading, and the meaning of Xids (nvml_api.h). */
#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dl_table.h"
#include "nvml_api.h"
#include "xpool/log.h"
#include "xpool/macro.h"

#define SYMBOL(n, member, req) XP_DL_SYMBOL(struct nvml_api, n, member, req)

static const struct xp_dl_symbol nvml_symbols[] = {
    SYMBOL("nvmlInit_v2", init, true),
    SYMBOL("nvmlShutdown", shutdown, true),
    SYMBOL("nvmlErrorString", error_string, false),
    SYMBOL("nvmlDeviceGetCount_v2", get_count, true),
    SYMBOL("nvmlDeviceGetHandleByIndex_v2", get_handle_by_index, true),
    SYMBOL("nvmlDeviceGetUUID", get_uuid, false),
    SYMBOL("nvmlDeviceGetName", get_name, false),
    SYMBOL("nvmlDeviceGetMinorNumber", get_minor_number, false),
    SYMBOL("nvmlDeviceGetMemoryInfo", get_memory_info, false),
    SYMBOL("nvmlDeviceGetPciInfo_v3", get_pci_info, false),
    SYMBOL("nvmlDeviceGetUtilizationRates", get_utilization_rates, false),
    SYMBOL("nvmlDeviceGetTemperature", get_temperature, false),
    SYMBOL("nvmlDeviceGetPowerUsage", get_power_usage, false),
    SYMBOL("nvmlDeviceGetCudaComputeCapability", get_cuda_compute_capability, false),
    SYMBOL("nvmlDeviceGetMigMode", get_mig_mode, false),
    SYMBOL("nvmlDeviceGetNvLinkState", get_nvlink_state, false),
    SYMBOL("nvmlDeviceGetNvLinkRemotePciInfo_v2", get_nvlink_remote_pci_info, false),
    SYMBOL("nvmlDeviceGetNvLinkRemoteDeviceType", get_nvlink_remote_device_type, false),
    SYMBOL("nvmlDeviceGetNvLinkVersion", get_nvlink_version, false),
    SYMBOL("nvmlEventSetCreate", event_set_create, false),
    SYMBOL("nvmlDeviceRegisterEvents", register_events, false),
    SYMBOL("nvmlEventSetWait_v2", event_set_wait, false),
    SYMBOL("nvmlEventSetFree", event_set_free, false),
    SYMBOL("nvmlDeviceGetHandleByUUID", get_handle_by_uuid, false),
    SYMBOL("nvmlDeviceGetFieldValues", get_field_values, false),
    SYMBOL("nvmlDeviceGetClockInfo", get_clock_info, false),
    SYMBOL("nvmlDeviceGetPcieReplayCounter", get_pcie_replay_counter, false),
    SYMBOL("nvmlDeviceGetTotalEnergyConsumption", get_total_energy_consumption, false),
    SYMBOL("nvmlDeviceGetComputeRunningProcesses_v3", get_compute_running_processes, false),
    SYMBOL("nvmlDeviceGetProcessUtilization", get_process_utilization, false),
    SYMBOL("nvmlDeviceGetTotalEccErrors", get_total_ecc_errors, false),
    SYMBOL("nvmlGpmQueryDeviceSupport", gpm_query_device_support, false),
    SYMBOL("nvmlGpmSampleAlloc", gpm_sample_alloc, false),
    SYMBOL("nvmlGpmSampleFree", gpm_sample_free, false),
    SYMBOL("nvmlGpmSampleGet", gpm_sample_get, false),
    SYMBOL("nvmlGpmMetricsGet", gpm_metrics_get, false),
};

/*
 * Xids that report an application's fault rather than the GPU's, as NVIDIA's k8s-device-plugin
 * skips them: every other Xid critical error makes the device unhealthy.
 */
static const unsigned long long application_xids[] = {13, 31, 43, 45, 68, 109};

static const struct {
        unsigned long long xid;
        const char *meaning;
} xid_meanings[] = {
    {8, "GPU stopped processing"},
    {48, "double-bit ECC error"},
    {61, "internal micro-controller breakpoint"},
    {62, "internal micro-controller halt"},
    {63, "ECC page retirement or row remapping recorded"},
    {64, "ECC page retirement or row remapping failed"},
    {74, "NVLink error"},
    {79, "GPU has fallen off the bus"},
    {92, "high single-bit ECC error rate"},
    {94, "contained ECC error"},
    {95, "uncontained ECC error"},
    {119, "GSP RPC timeout"},
    {120, "GSP error"},
};

void xp_nvml_api_close(struct nvml_api *api)
{
        if (!api->dl)
                return;
        if (api->shutdown)
                api->shutdown();
        dlclose(api->dl);
        *api = (struct nvml_api){0};
}

const char *xp_nvml_library(const char *path)
{
        if (!path || !*path)
                path = getenv("XPOOL_NVML_LIBRARY");
        if (!path || !*path)
                path = "libnvidia-ml.so.1";
        return path;
}

const char *xp_nvml_strerror(const struct nvml_api *api, enum nvml_return r)
{
        const char *s = api->error_string ? api->error_string(r) : NULL;

        return s ? s : "unknown NVML error";
}

int xp_nvml_api_open(const char *path, struct nvml_api *ret)
{
        struct nvml_api api = {0};
        enum nvml_return nr;

        api.dl = xp_dl_load(path, "nvml", nvml_symbols, XP_ELEMENTSOF(nvml_symbols), &api, NULL);
        if (!api.dl)
                return -ENODEV;
        nr = api.init();
        if (nr != NVML_SUCCESS) {
                xp_debug("nvml", "nvmlInit_v2 failed: %s", xp_nvml_strerror(&api, nr));
                dlclose(api.dl);
                return -ENODEV;
        }
        *ret = api;
        return 0;
}

bool xp_nvml_xid_is_critical(unsigned long long xid)
{
        for (size_t i = 0; i < XP_ELEMENTSOF(application_xids); i++)
                if (application_xids[i] == xid)
                        return false;
        return true;
}

void xp_nvml_xid_reason(unsigned long long xid, char out[static 128])
{
        for (size_t i = 0; i < XP_ELEMENTSOF(xid_meanings); i++)
                if (xid_meanings[i].xid == xid) {
                        snprintf(out, 128, "Xid %llu: %s", xid, xid_meanings[i].meaning);
                        return;
                }
        snprintf(out, 128, "Xid %llu", xid);
}
