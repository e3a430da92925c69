/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A fake libnvidia-ml.so.1 for tests: the NVML functions xpool's nvml backend uses, under their
 * versioned names, answering from a JSON configuration named by $FAKE_NVML_CONFIG (read at the
 * first nvmlInit_v2, dropped at the last nvmlShutdown). Without the variable nvmlInit_v2 fails
 * with NVML_ERROR_DRIVER_NOT_LOADED, as on a node without the NVIDIA driver.
 *
 * The configuration (tests/data/nvml/ *.json):
 *   {
 *     "init": "success",                 // or driver_not_loaded, no_permission,
 * lib_rm_version_mismatch, unknown "missing": ["nvmlDeviceGetMigMode"],        // these answer
 * NVML_ERROR_FUNCTION_NOT_FOUND "not_supported": ["nvmlDeviceGetPowerUsage"], // these answer
 * NVML_ERROR_NOT_SUPPORTED "gpus": [{ "uuid": "GPU-...", "name": "NVIDIA H100 80GB HBM3", "minor":
 * 0, "memory": {"total": 85520809984, "used": 0}, "pci": {"bus_id": "00000000:03:00.0",
 * "device_id": "0x233010de", "subsystem_id": "0x16c110de"}, "utilization": {"gpu": 0, "memory": 0},
 * "temperature": 30, "power_mw": 70000, "cuda_cc": [9, 0], "mig": {"current": 0, "pending": 0}, //
 * absent: NOT_SUPPORTED "nvlink_version": 6,                      // nvmlNvlinkVersion_t; absent:
 * NOT_SUPPORTED "nvlinks": [{"count": 5, "remote_bus_id": "00000000:05:00.0", "remote_type":
 * "switch", "state": "active"}],        // remote_type gpu|switch|ibmnpu|unknown, state
 * active|inactive "xids": [79]                              // pending Xid critical error events
 *       "recovery_action": 1              // nvmlDeviceGetFieldValues' GPU recovery action
 *     }]
 *   }
 * Any member may be left out; a device then answers NOT_SUPPORTED for it.
 *
 * Live injection, for a process that keeps NVML initialised (the device plugin's health watch):
 * when the configuration file changes (another inode, size or modification time), the next
 * nvmlEventSetWait_v2 or nvmlDeviceGetFieldValues re-reads each GPU's (matched by uuid) "xids",
 * taken as an append-only log (entries past those already read become new pending events), and
 * its "recovery_action". Replace the file with a rename so a half-written one is never read.
 *
 * The device sampler's figures (xpool/devsample.h), per GPU: "clocks": {"sm": 1980, "mem": 2619},
 * "pcie_replay": 0, "energy_mj": 123456, "processes": [{"pid": 42, "used_memory": 1073741824}],
 * "process_utilization": [{"pid": 42, "sm": 37, "mem": 5}] (empty: NOT_FOUND, no process ran),
 * "ecc": {"sbe_volatile": 2, "dbe_volatile": 0}, "nvlink_throughput_kib": {"tx": 1, "rx": 2}
 * (nvmlDeviceGetFieldValues' NVLink data counters), and "gpm": {"graphics": 80, "sm": 70,
 * "dram": 40, "tensor": 60, "pcie_tx": 100, "pcie_rx": 200, "nvlink_tx": 300, "nvlink_rx": 400}
 * (percent and MiB/s; present: the GPU supports GPM; a member left out answers NOT_SUPPORTED).
 * A pid may be "@FILE": the pid that file holds when the call is made (a test writes a pod's
 * pid there).
 *
 * A hung driver: while the file named by $FAKE_NVML_SLEEP_FILE exists, every call that answers
 * for a device first sleeps for the milliseconds the file holds (a test creates it once the
 * process under test has started, and removes it to end the hang).
 *
 * Built twice: libnvidia-ml.so.1 with every function, and old/libnvidia-ml.so.1 (FAKE_NVML_OLD)
 * without those an older driver lacks (nvmlDeviceGetNvLinkRemoteDeviceType, nvmlDeviceGetMigMode,
 * nvmlEventSetWait_v2), so dlsym() itself fails for them.
 */
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "device/nvml_abi.h"

/* The exported functions (prototypes first, as -Wmissing-prototypes asks). */
enum nvml_return nvmlInit_v2(void);
enum nvml_return nvmlShutdown(void);
const char *nvmlErrorString(enum nvml_return result);
enum nvml_return nvmlDeviceGetCount_v2(unsigned int *count);
enum nvml_return nvmlDeviceGetHandleByIndex_v2(unsigned int index, struct nvml_device **device);
enum nvml_return nvmlDeviceGetUUID(struct nvml_device *device, char *uuid, unsigned int length);
enum nvml_return nvmlDeviceGetName(struct nvml_device *device, char *name, unsigned int length);
enum nvml_return nvmlDeviceGetMinorNumber(struct nvml_device *device, unsigned int *minor);
enum nvml_return nvmlDeviceGetMemoryInfo(struct nvml_device *device, struct nvml_memory *memory);
enum nvml_return nvmlDeviceGetPciInfo_v3(struct nvml_device *device, struct nvml_pci_info *pci);
enum nvml_return nvmlDeviceGetUtilizationRates(struct nvml_device *device,
                                               struct nvml_utilization *utilization);
enum nvml_return nvmlDeviceGetTemperature(struct nvml_device *device,
                                          enum nvml_temperature_sensor sensor,
                                          unsigned int *temperature);
enum nvml_return nvmlDeviceGetPowerUsage(struct nvml_device *device, unsigned int *power);
enum nvml_return
nvmlDeviceGetCudaComputeCapability(struct nvml_device *device, int *major, int *minor);
enum nvml_return nvmlDeviceGetNvLinkState(struct nvml_device *device,
                                          unsigned int link,
                                          enum nvml_enable_state *active);
enum nvml_return nvmlDeviceGetNvLinkRemotePciInfo_v2(struct nvml_device *device,
                                                     unsigned int link,
                                                     struct nvml_pci_info *pci);
enum nvml_return
nvmlDeviceGetNvLinkVersion(struct nvml_device *device, unsigned int link, unsigned int *version);
enum nvml_return nvmlEventSetCreate(struct nvml_event_set **set);
enum nvml_return nvmlDeviceRegisterEvents(struct nvml_device *device,
                                          unsigned long long event_types,
                                          struct nvml_event_set *set);
enum nvml_return nvmlEventSetFree(struct nvml_event_set *set);
enum nvml_return nvmlDeviceGetHandleByUUID(const char *uuid, struct nvml_device **device);
enum nvml_return
nvmlDeviceGetFieldValues(struct nvml_device *device, int count, struct nvml_field_value *values);
#ifndef FAKE_NVML_OLD
enum nvml_return
nvmlDeviceGetMigMode(struct nvml_device *device, unsigned int *current, unsigned int *pending);
enum nvml_return nvmlDeviceGetNvLinkRemoteDeviceType(struct nvml_device *device,
                                                     unsigned int link,
                                                     enum nvml_nvlink_device_type *type);
enum nvml_return nvmlEventSetWait_v2(struct nvml_event_set *set,
                                     struct nvml_event_data *data,
                                     unsigned int timeout_ms);
#endif

/* ---- the fake state ----------------------------------------------------------------------- */

#define FAKE_GPUS_MAX 64
#define FAKE_XIDS_MAX 16

struct fake_link {
        bool active;
        enum nvml_nvlink_device_type remote_type;
        char remote_bus_id[32];
};

struct nvml_device {
        json_t *json;     /* its object in the configuration */
        const char *uuid; /* borrowed from the configuration */
        const char *name;
        bool has_minor, has_memory, has_pci, has_util, has_temp, has_power, has_cc, has_mig;
        bool has_nvlink_version;
        unsigned int minor;
        struct nvml_memory memory;
        struct nvml_pci_info pci;
        struct nvml_utilization util;
        unsigned int temperature, power_mw, nvlink_version;
        int cc_major, cc_minor;
        unsigned int mig_current, mig_pending;
        struct fake_link links[NVML_NVLINK_MAX_LINKS];
        unsigned n_links;
        unsigned long long xids[FAKE_XIDS_MAX];
        unsigned n_xids;
        size_t xids_read; /* entries of the configuration's "xids" log taken so far */
        bool has_recovery;
        unsigned recovery_action;
        bool registered; /* for Xid events in the one event set */
};

struct nvml_event_set {
        int unused;
};

static struct {
        unsigned refs;
        json_t *config;
        struct nvml_device gpus[FAKE_GPUS_MAX];
        unsigned n_gpus;
        struct nvml_event_set set;
        bool set_in_use;
        struct stat config_stat; /* of the file as last read */
} fake;

static bool listed(const char *member, const char *function)
{
        json_t *list = fake.config ? json_object_get(fake.config, member) : NULL;
        size_t i;
        json_t *v;

        json_array_foreach(list, i, v)
        {
                if (json_is_string(v) && strcmp(json_string_value(v), function) == 0)
                        return true;
        }
        return false;
}

/* $FAKE_NVML_SLEEP_FILE: a driver that hangs while the file exists. */
static void maybe_hang(void)
{
        const char *path = getenv("FAKE_NVML_SLEEP_FILE");
        FILE *f = path && *path ? fopen(path, "re") : NULL;
        long ms = 0;

        if (!f)
                return;
        if (fscanf(f, "%ld", &ms) != 1)
                ms = 0;
        fclose(f);
        if (ms > 0) {
                struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};

                nanosleep(&ts, NULL);
        }
}

/* What a knob makes a function answer before it does anything: NVML_SUCCESS to go on. */
static enum nvml_return knob(const char *function)
{
        maybe_hang();
        if (fake.refs == 0)
                return NVML_ERROR_UNINITIALIZED;
        if (listed("missing", function))
                return NVML_ERROR_FUNCTION_NOT_FOUND;
        if (listed("not_supported", function))
                return NVML_ERROR_NOT_SUPPORTED;
        return NVML_SUCCESS;
}

#define KNOB()                                                                                     \
        do {                                                                                       \
                enum nvml_return knob_ = knob(__func__);                                           \
                if (knob_ != NVML_SUCCESS)                                                         \
                        return knob_;                                                              \
        } while (0)

static bool valid_device(const struct nvml_device *device)
{
        return device >= fake.gpus && device < fake.gpus + fake.n_gpus;
}

static bool get_uint(json_t *object, const char *key, unsigned long long *ret)
{
        json_t *v = json_object_get(object, key);

        if (json_is_integer(v) && json_integer_value(v) >= 0) {
                *ret = (unsigned long long)json_integer_value(v);
                return true;
        }
        if (json_is_string(v)) {
                char *end;

                *ret = strtoull(json_string_value(v), &end, 0);
                return *end == '\0';
        }
        return false;
}

static void load_links(struct nvml_device *g, json_t *links)
{
        size_t i;
        json_t *l;

        json_array_foreach(links, i, l)
        {
                unsigned long long count = 1;
                const char *type = json_string_value(json_object_get(l, "remote_type"));
                const char *state = json_string_value(json_object_get(l, "state"));
                const char *bus_id = json_string_value(json_object_get(l, "remote_bus_id"));
                struct fake_link link = {.active = !state || strcmp(state, "active") == 0};

                get_uint(l, "count", &count);
                link.remote_type = !type                         ? NVML_NVLINK_DEVICE_TYPE_UNKNOWN
                                   : strcmp(type, "gpu") == 0    ? NVML_NVLINK_DEVICE_TYPE_GPU
                                   : strcmp(type, "switch") == 0 ? NVML_NVLINK_DEVICE_TYPE_SWITCH
                                   : strcmp(type, "ibmnpu") == 0 ? NVML_NVLINK_DEVICE_TYPE_IBMNPU
                                                                 : NVML_NVLINK_DEVICE_TYPE_UNKNOWN;
                snprintf(
                    link.remote_bus_id, sizeof(link.remote_bus_id), "%s", bus_id ? bus_id : "");
                for (unsigned long long k = 0; k < count && g->n_links < NVML_NVLINK_MAX_LINKS; k++)
                        g->links[g->n_links++] = link;
        }
}

static void load_gpu(struct nvml_device *g, json_t *o)
{
        unsigned long long v, w;
        json_t *sub, *x;
        size_t i;

        g->json = o;
        g->uuid = json_string_value(json_object_get(o, "uuid"));
        g->name = json_string_value(json_object_get(o, "name"));
        g->has_minor = get_uint(o, "minor", &v);
        g->minor = (unsigned)v;
        sub = json_object_get(o, "memory");
        if (get_uint(sub, "total", &v)) {
                g->has_memory = true;
                g->memory.total = v;
                g->memory.used = get_uint(sub, "used", &w) ? w : 0;
                g->memory.free = g->memory.total - g->memory.used;
        }
        sub = json_object_get(o, "pci");
        if (json_is_object(sub)) {
                const char *bus_id = json_string_value(json_object_get(sub, "bus_id"));
                unsigned domain = 0, bus = 0, dev = 0;

                g->has_pci = true;
                snprintf(g->pci.bus_id, sizeof(g->pci.bus_id), "%s", bus_id ? bus_id : "");
                if (bus_id && sscanf(bus_id, "%x:%x:%x", &domain, &bus, &dev) == 3) {
                        g->pci.domain = domain;
                        g->pci.bus = bus;
                        g->pci.device = dev;
                }
                snprintf(g->pci.bus_id_legacy,
                         sizeof(g->pci.bus_id_legacy),
                         "%04X:%02X:%02X.0",
                         domain & 0xffff,
                         bus,
                         dev);
                g->pci.pci_device_id = get_uint(sub, "device_id", &v) ? (unsigned)v : 0;
                g->pci.pci_subsystem_id = get_uint(sub, "subsystem_id", &v) ? (unsigned)v : 0;
        }
        sub = json_object_get(o, "utilization");
        if (get_uint(sub, "gpu", &v)) {
                g->has_util = true;
                g->util.gpu = (unsigned)v;
                g->util.memory = get_uint(sub, "memory", &w) ? (unsigned)w : 0;
        }
        g->has_temp = get_uint(o, "temperature", &v);
        g->temperature = (unsigned)v;
        g->has_power = get_uint(o, "power_mw", &v);
        g->power_mw = (unsigned)v;
        sub = json_object_get(o, "cuda_cc");
        if (json_array_size(sub) == 2) {
                g->has_cc = true;
                g->cc_major = (int)json_integer_value(json_array_get(sub, 0));
                g->cc_minor = (int)json_integer_value(json_array_get(sub, 1));
        }
        sub = json_object_get(o, "mig");
        if (get_uint(sub, "current", &v)) {
                g->has_mig = true;
                g->mig_current = (unsigned)v;
                g->mig_pending = get_uint(sub, "pending", &w) ? (unsigned)w : g->mig_current;
        }
        g->has_nvlink_version = get_uint(o, "nvlink_version", &v);
        g->nvlink_version = (unsigned)v;
        load_links(g, json_object_get(o, "nvlinks"));
        json_array_foreach(json_object_get(o, "xids"), i, x)
        {
                if (json_is_integer(x) && g->n_xids < FAKE_XIDS_MAX)
                        g->xids[g->n_xids++] = (unsigned long long)json_integer_value(x);
        }
        g->xids_read = json_array_size(json_object_get(o, "xids"));
        g->has_recovery = get_uint(o, "recovery_action", &v);
        g->recovery_action = (unsigned)v;
}

static bool same_file(const struct stat *a, const struct stat *b)
{
        return a->st_ino == b->st_ino && a->st_size == b->st_size &&
               a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

/* Takes the live parts of a changed configuration: new Xid log entries, recovery actions. */
static void reload_live(void)
{
        const char *path = getenv("FAKE_NVML_CONFIG");
        json_t *config, *o;
        struct stat st;
        size_t i;

        if (!path || stat(path, &st) < 0 || same_file(&st, &fake.config_stat))
                return;
        config = json_load_file(path, 0, NULL);
        if (!config)
                return; /* keep the old state; the next change is read again */
        fake.config_stat = st;
        json_array_foreach(json_object_get(config, "gpus"), i, o)
        {
                const char *uuid = json_string_value(json_object_get(o, "uuid"));
                json_t *xids = json_object_get(o, "xids");
                unsigned long long v;

                for (unsigned k = 0; k < fake.n_gpus; k++) {
                        struct nvml_device *g = &fake.gpus[k];

                        if (!uuid || !g->uuid || strcmp(uuid, g->uuid) != 0)
                                continue;
                        for (size_t x = g->xids_read; x < json_array_size(xids); x++)
                                if (g->n_xids < FAKE_XIDS_MAX &&
                                    json_is_integer(json_array_get(xids, x)))
                                        g->xids[g->n_xids++] =
                                            (unsigned long long)json_integer_value(
                                                json_array_get(xids, x));
                        if (json_array_size(xids) > g->xids_read)
                                g->xids_read = json_array_size(xids);
                        g->has_recovery = get_uint(o, "recovery_action", &v);
                        g->recovery_action = (unsigned)v;
                }
        }
        json_decref(config);
}

static enum nvml_return init_result(const char *init)
{
        static const struct {
                const char *name;
                enum nvml_return value;
        } results[] = {
            {"success", NVML_SUCCESS},
            {"driver_not_loaded", NVML_ERROR_DRIVER_NOT_LOADED},
            {"no_permission", NVML_ERROR_NO_PERMISSION},
            {"lib_rm_version_mismatch", NVML_ERROR_LIB_RM_VERSION_MISMATCH},
            {"unknown", NVML_ERROR_UNKNOWN},
        };

        if (!init)
                return NVML_SUCCESS;
        for (size_t i = 0; i < sizeof(results) / sizeof(results[0]); i++)
                if (strcmp(results[i].name, init) == 0)
                        return results[i].value;
        return NVML_ERROR_UNKNOWN;
}

/* ---- the API ------------------------------------------------------------------------------ */

enum nvml_return nvmlInit_v2(void)
{
        const char *path = getenv("FAKE_NVML_CONFIG");
        json_error_t error;
        enum nvml_return r;
        json_t *config, *gpu;
        size_t i;

        if (fake.refs > 0) {
                fake.refs++;
                return NVML_SUCCESS;
        }
        if (!path || !*path)
                return NVML_ERROR_DRIVER_NOT_LOADED;
        config = json_load_file(path, 0, &error);
        if (!config) {
                fprintf(stderr, "fake NVML: %s:%d: %s\n", path, error.line, error.text);
                return NVML_ERROR_UNKNOWN;
        }
        r = init_result(json_string_value(json_object_get(config, "init")));
        if (r != NVML_SUCCESS) {
                json_decref(config);
                return r;
        }
        memset(&fake, 0, sizeof(fake));
        fake.config = config;
        stat(path, &fake.config_stat);
        json_array_foreach(json_object_get(config, "gpus"), i, gpu)
        {
                if (fake.n_gpus < FAKE_GPUS_MAX)
                        load_gpu(&fake.gpus[fake.n_gpus++], gpu);
        }
        fake.refs = 1;
        return NVML_SUCCESS;
}

enum nvml_return nvmlShutdown(void)
{
        if (fake.refs == 0)
                return NVML_ERROR_UNINITIALIZED;
        if (--fake.refs == 0) {
                json_decref(fake.config);
                memset(&fake, 0, sizeof(fake));
        }
        return NVML_SUCCESS;
}

const char *nvmlErrorString(enum nvml_return result)
{
        switch (result) {
        case NVML_SUCCESS:
                return "Success";
        case NVML_ERROR_UNINITIALIZED:
                return "Uninitialized";
        case NVML_ERROR_INVALID_ARGUMENT:
                return "Invalid Argument";
        case NVML_ERROR_NOT_SUPPORTED:
                return "Not Supported";
        case NVML_ERROR_NO_PERMISSION:
                return "Insufficient Permissions";
        case NVML_ERROR_INSUFFICIENT_SIZE:
                return "Insufficient Size";
        case NVML_ERROR_DRIVER_NOT_LOADED:
                return "Driver Not Loaded";
        case NVML_ERROR_TIMEOUT:
                return "Timeout";
        case NVML_ERROR_FUNCTION_NOT_FOUND:
                return "Function Not Found";
        case NVML_ERROR_LIB_RM_VERSION_MISMATCH:
                return "RM has detected an NVML/RM version mismatch";
        case NVML_ERROR_MEMORY:
                return "Insufficient Memory";
        default:
                return "Unknown Error";
        }
}

enum nvml_return nvmlDeviceGetCount_v2(unsigned int *count)
{
        KNOB();
        if (!count)
                return NVML_ERROR_INVALID_ARGUMENT;
        *count = fake.n_gpus;
        return NVML_SUCCESS;
}

enum nvml_return nvmlDeviceGetHandleByIndex_v2(unsigned int index, struct nvml_device **device)
{
        KNOB();
        if (!device || index >= fake.n_gpus)
                return NVML_ERROR_INVALID_ARGUMENT;
        *device = &fake.gpus[index];
        return NVML_SUCCESS;
}

static enum nvml_return copy_string(const char *s, char *buf, unsigned int length)
{
        if (!s)
                return NVML_ERROR_NOT_SUPPORTED;
        if (!buf || strlen(s) >= length)
                return buf ? NVML_ERROR_INSUFFICIENT_SIZE : NVML_ERROR_INVALID_ARGUMENT;
        memcpy(buf, s, strlen(s) + 1);
        return NVML_SUCCESS;
}

enum nvml_return nvmlDeviceGetUUID(struct nvml_device *device, char *uuid, unsigned int length)
{
        KNOB();
        if (!valid_device(device))
                return NVML_ERROR_INVALID_ARGUMENT;
        return copy_string(device->uuid, uuid, length);
}

enum nvml_return nvmlDeviceGetName(struct nvml_device *device, char *name, unsigned int length)
{
        KNOB();
        if (!valid_device(device))
                return NVML_ERROR_INVALID_ARGUMENT;
        return copy_string(device->name, name, length);
}

#define ANSWER(cond, ...)                                                                          \
        do {                                                                                       \
                KNOB();                                                                            \
                if (!valid_device(device))                                                         \
                        return NVML_ERROR_INVALID_ARGUMENT;                                        \
                if (!(cond))                                                                       \
                        return NVML_ERROR_NOT_SUPPORTED;                                           \
                __VA_ARGS__;                                                                       \
                return NVML_SUCCESS;                                                               \
        } while (0)

enum nvml_return nvmlDeviceGetMinorNumber(struct nvml_device *device, unsigned int *minor)
{
        ANSWER(device->has_minor, *minor = device->minor);
}

enum nvml_return nvmlDeviceGetMemoryInfo(struct nvml_device *device, struct nvml_memory *memory)
{
        ANSWER(device->has_memory, *memory = device->memory);
}

enum nvml_return nvmlDeviceGetPciInfo_v3(struct nvml_device *device, struct nvml_pci_info *pci)
{
        ANSWER(device->has_pci, *pci = device->pci);
}

enum nvml_return nvmlDeviceGetUtilizationRates(struct nvml_device *device,
                                               struct nvml_utilization *utilization)
{
        ANSWER(device->has_util, *utilization = device->util);
}

enum nvml_return nvmlDeviceGetTemperature(struct nvml_device *device,
                                          enum nvml_temperature_sensor sensor,
                                          unsigned int *temperature)
{
        ANSWER(device->has_temp && sensor == NVML_TEMPERATURE_GPU,
               *temperature = device->temperature);
}

enum nvml_return nvmlDeviceGetPowerUsage(struct nvml_device *device, unsigned int *power)
{
        ANSWER(device->has_power, *power = device->power_mw);
}

enum nvml_return
nvmlDeviceGetCudaComputeCapability(struct nvml_device *device, int *major, int *minor)
{
        ANSWER(device->has_cc, *major = device->cc_major; *minor = device->cc_minor);
}

enum nvml_return nvmlDeviceGetNvLinkState(struct nvml_device *device,
                                          unsigned int link,
                                          enum nvml_enable_state *active)
{
        ANSWER(link < device->n_links,
               *active = device->links[link].active ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED);
}

enum nvml_return nvmlDeviceGetNvLinkRemotePciInfo_v2(struct nvml_device *device,
                                                     unsigned int link,
                                                     struct nvml_pci_info *pci)
{
        ANSWER(link < device->n_links && device->links[link].remote_bus_id[0], {
                unsigned domain = 0, bus = 0, dev = 0;

                memset(pci, 0, sizeof(*pci));
                snprintf(pci->bus_id, sizeof(pci->bus_id), "%s", device->links[link].remote_bus_id);
                if (sscanf(pci->bus_id, "%x:%x:%x", &domain, &bus, &dev) == 3) {
                        pci->domain = domain;
                        pci->bus = bus;
                        pci->device = dev;
                }
        });
}

enum nvml_return
nvmlDeviceGetNvLinkVersion(struct nvml_device *device, unsigned int link, unsigned int *version)
{
        ANSWER(link < device->n_links && device->has_nvlink_version,
               *version = device->nvlink_version);
}

#ifndef FAKE_NVML_OLD
enum nvml_return
nvmlDeviceGetMigMode(struct nvml_device *device, unsigned int *current, unsigned int *pending)
{
        ANSWER(device->has_mig, *current = device->mig_current; *pending = device->mig_pending);
}

enum nvml_return nvmlDeviceGetNvLinkRemoteDeviceType(struct nvml_device *device,
                                                     unsigned int link,
                                                     enum nvml_nvlink_device_type *type)
{
        ANSWER(link < device->n_links, *type = device->links[link].remote_type);
}
#endif

enum nvml_return nvmlEventSetCreate(struct nvml_event_set **set)
{
        KNOB();
        if (!set)
                return NVML_ERROR_INVALID_ARGUMENT;
        if (fake.set_in_use)
                return NVML_ERROR_MEMORY; /* the fake has one event set */
        fake.set_in_use = true;
        *set = &fake.set;
        return NVML_SUCCESS;
}

enum nvml_return nvmlDeviceRegisterEvents(struct nvml_device *device,
                                          unsigned long long event_types,
                                          struct nvml_event_set *set)
{
        KNOB();
        if (!valid_device(device) || set != &fake.set || !fake.set_in_use)
                return NVML_ERROR_INVALID_ARGUMENT;
        if (!(event_types & NVML_EVENT_TYPE_XID_CRITICAL_ERROR))
                return NVML_ERROR_NOT_SUPPORTED;
        device->registered = true;
        return NVML_SUCCESS;
}

#ifndef FAKE_NVML_OLD
enum nvml_return nvmlEventSetWait_v2(struct nvml_event_set *set,
                                     struct nvml_event_data *data,
                                     unsigned int timeout_ms)
{
        (void)timeout_ms; /* events are pending or not: the fake never waits */
        KNOB();
        reload_live();
        if (set != &fake.set || !fake.set_in_use || !data)
                return NVML_ERROR_INVALID_ARGUMENT;
        for (unsigned i = 0; i < fake.n_gpus; i++) {
                struct nvml_device *g = &fake.gpus[i];

                if (!g->registered || g->n_xids == 0)
                        continue;
                *data = (struct nvml_event_data){
                    .device = g,
                    .event_type = NVML_EVENT_TYPE_XID_CRITICAL_ERROR,
                    .event_data = g->xids[0],
                    .gpu_instance_id = 0xffffffffu,
                    .compute_instance_id = 0xffffffffu,
                };
                memmove(g->xids, g->xids + 1, (g->n_xids - 1) * sizeof(g->xids[0]));
                g->n_xids--;
                return NVML_SUCCESS;
        }
        return NVML_ERROR_TIMEOUT;
}
#endif

enum nvml_return nvmlEventSetFree(struct nvml_event_set *set)
{
        KNOB();
        if (set != &fake.set || !fake.set_in_use)
                return NVML_ERROR_INVALID_ARGUMENT;
        fake.set_in_use = false;
        for (unsigned i = 0; i < fake.n_gpus; i++)
                fake.gpus[i].registered = false;
        return NVML_SUCCESS;
}

enum nvml_return nvmlDeviceGetHandleByUUID(const char *uuid, struct nvml_device **device)
{
        KNOB();
        if (!uuid || !device)
                return NVML_ERROR_INVALID_ARGUMENT;
        for (unsigned i = 0; i < fake.n_gpus; i++)
                if (fake.gpus[i].uuid && strcmp(fake.gpus[i].uuid, uuid) == 0) {
                        *device = &fake.gpus[i];
                        return NVML_SUCCESS;
                }
        return NVML_ERROR_NOT_FOUND;
}

enum nvml_return
nvmlDeviceGetFieldValues(struct nvml_device *device, int count, struct nvml_field_value *values)
{
        KNOB();
        if (!valid_device(device) || count < 0 || (count > 0 && !values))
                return NVML_ERROR_INVALID_ARGUMENT;
        reload_live();
        for (int i = 0; i < count; i++) {
                struct nvml_field_value *v = &values[i];
                json_t *nvlink = json_object_get(device->json, "nvlink_throughput_kib");
                unsigned long long ull;

                v->nvml_return = NVML_ERROR_NOT_SUPPORTED;
                if ((v->field_id == NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX &&
                     get_uint(nvlink, "tx", &ull)) ||
                    (v->field_id == NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX &&
                     get_uint(nvlink, "rx", &ull))) {
                        v->nvml_return = NVML_SUCCESS;
                        v->value_type = NVML_VALUE_TYPE_UNSIGNED_LONG_LONG;
                        v->value.ull_val = ull;
                        continue;
                }
                if (v->field_id != NVML_FI_DEV_GET_GPU_RECOVERY_ACTION || !device->has_recovery)
                        continue;
                v->nvml_return = NVML_SUCCESS;
                v->value_type = NVML_VALUE_TYPE_UNSIGNED_INT;
                v->value.ui_val = device->recovery_action;
        }
        return NVML_SUCCESS;
}

/* ---- the device sampler's functions ------------------------------------------------------- */

enum nvml_return
nvmlDeviceGetClockInfo(struct nvml_device *device, enum nvml_clock_type type, unsigned int *clock);
enum nvml_return nvmlDeviceGetPcieReplayCounter(struct nvml_device *device, unsigned int *value);
enum nvml_return nvmlDeviceGetTotalEnergyConsumption(struct nvml_device *device,
                                                     unsigned long long *energy);
enum nvml_return nvmlDeviceGetComputeRunningProcesses_v3(struct nvml_device *device,
                                                         unsigned int *count,
                                                         struct nvml_process_info *infos);

/* A process entry's "pid": a number, or "@FILE" for the one that file holds now (0: none). */
static unsigned long long pid_of(json_t *p)
{
        const char *text = json_string_value(json_object_get(p, "pid"));
        unsigned long long pid = 0;
        FILE *f;

        if (!text || text[0] != '@')
                return get_uint(p, "pid", &pid) ? pid : 0;
        f = fopen(text + 1, "re");
        if (!f)
                return 0;
        if (fscanf(f, "%llu", &pid) != 1)
                pid = 0;
        fclose(f);
        return pid;
}

enum nvml_return
nvmlDeviceGetClockInfo(struct nvml_device *device, enum nvml_clock_type type, unsigned int *clock)
{
        unsigned long long v;

        KNOB();
        if (!valid_device(device) || !clock)
                return NVML_ERROR_INVALID_ARGUMENT;
        if (!get_uint(
                json_object_get(device->json, "clocks"), type == NVML_CLOCK_MEM ? "mem" : "sm", &v))
                return NVML_ERROR_NOT_SUPPORTED;
        *clock = (unsigned int)v;
        return NVML_SUCCESS;
}

enum nvml_return nvmlDeviceGetPcieReplayCounter(struct nvml_device *device, unsigned int *value)
{
        unsigned long long v;

        KNOB();
        if (!valid_device(device) || !value)
                return NVML_ERROR_INVALID_ARGUMENT;
        if (!get_uint(device->json, "pcie_replay", &v))
                return NVML_ERROR_NOT_SUPPORTED;
        *value = (unsigned int)v;
        return NVML_SUCCESS;
}

enum nvml_return nvmlDeviceGetTotalEnergyConsumption(struct nvml_device *device,
                                                     unsigned long long *energy)
{
        KNOB();
        if (!valid_device(device) || !energy)
                return NVML_ERROR_INVALID_ARGUMENT;
        return get_uint(device->json, "energy_mj", energy) ? NVML_SUCCESS
                                                           : NVML_ERROR_NOT_SUPPORTED;
}

enum nvml_return nvmlDeviceGetComputeRunningProcesses_v3(struct nvml_device *device,
                                                         unsigned int *count,
                                                         struct nvml_process_info *infos)
{
        json_t *list, *p;
        size_t i;

        KNOB();
        if (!valid_device(device) || !count)
                return NVML_ERROR_INVALID_ARGUMENT;
        list = json_object_get(device->json, "processes");
        if (!json_is_array(list))
                return NVML_ERROR_NOT_SUPPORTED;
        if (*count < json_array_size(list)) {
                *count = (unsigned int)json_array_size(list);
                return json_array_size(list) ? NVML_ERROR_INSUFFICIENT_SIZE : NVML_SUCCESS;
        }
        *count = (unsigned int)json_array_size(list);
        json_array_foreach(list, i, p)
        {
                unsigned long long pid = 0, used = NVML_VALUE_NOT_AVAILABLE_ULL;

                pid = pid_of(p);
                get_uint(p, "used_memory", &used);
                infos[i] =
                    (struct nvml_process_info){.pid = (unsigned int)pid, .used_gpu_memory = used};
        }
        return NVML_SUCCESS;
}

/* ---- per-process utilisation, ECC and GPM ------------------------------------------------- */

enum nvml_return nvmlDeviceGetProcessUtilization(struct nvml_device *device,
                                                 struct nvml_process_utilization *utilization,
                                                 unsigned int *count,
                                                 unsigned long long last_seen_us);
enum nvml_return nvmlDeviceGetTotalEccErrors(struct nvml_device *device,
                                             enum nvml_memory_error_type error_type,
                                             enum nvml_ecc_counter_type counter_type,
                                             unsigned long long *count);
enum nvml_return nvmlGpmQueryDeviceSupport(struct nvml_device *device,
                                           struct nvml_gpm_support *support);
enum nvml_return nvmlGpmSampleAlloc(struct nvml_gpm_sample *sample);
enum nvml_return nvmlGpmSampleFree(struct nvml_gpm_sample sample);
enum nvml_return nvmlGpmSampleGet(struct nvml_device *device, struct nvml_gpm_sample sample);
enum nvml_return nvmlGpmMetricsGet(struct nvml_gpm_metrics_get *metrics);

enum nvml_return nvmlDeviceGetProcessUtilization(struct nvml_device *device,
                                                 struct nvml_process_utilization *utilization,
                                                 unsigned int *count,
                                                 unsigned long long last_seen_us)
{
        struct timespec now;
        unsigned long long now_us;
        json_t *list, *p;
        size_t i;

        KNOB();
        if (!valid_device(device) || !count)
                return NVML_ERROR_INVALID_ARGUMENT;
        list = json_object_get(device->json, "process_utilization");
        if (!json_is_array(list))
                return NVML_ERROR_NOT_SUPPORTED;
        clock_gettime(CLOCK_REALTIME, &now);
        now_us =
            (unsigned long long)now.tv_sec * 1000000ULL + (unsigned long long)now.tv_nsec / 1000;
        if (json_array_size(list) == 0 || last_seen_us >= now_us)
                return NVML_ERROR_NOT_FOUND;
        if (!utilization || *count < json_array_size(list)) {
                *count = (unsigned int)json_array_size(list);
                return utilization ? NVML_ERROR_INSUFFICIENT_SIZE : NVML_SUCCESS;
        }
        *count = (unsigned int)json_array_size(list);
        json_array_foreach(list, i, p)
        {
                unsigned long long sm = 0, mem = 0;

                get_uint(p, "sm", &sm);
                get_uint(p, "mem", &mem);
                utilization[i] = (struct nvml_process_utilization){
                    .pid = (unsigned int)pid_of(p),
                    .timestamp = now_us,
                    .sm_util = (unsigned int)sm,
                    .mem_util = (unsigned int)mem,
                };
        }
        return NVML_SUCCESS;
}

enum nvml_return nvmlDeviceGetTotalEccErrors(struct nvml_device *device,
                                             enum nvml_memory_error_type error_type,
                                             enum nvml_ecc_counter_type counter_type,
                                             unsigned long long *count)
{
        json_t *ecc;

        KNOB();
        if (!valid_device(device) || !count)
                return NVML_ERROR_INVALID_ARGUMENT;
        ecc = json_object_get(device->json, "ecc");
        if (counter_type != NVML_VOLATILE_ECC)
                return NVML_ERROR_NOT_SUPPORTED;
        return get_uint(ecc,
                        error_type == NVML_MEMORY_ERROR_TYPE_CORRECTED ? "sbe_volatile"
                                                                       : "dbe_volatile",
                        count)
                   ? NVML_SUCCESS
                   : NVML_ERROR_NOT_SUPPORTED;
}

/* A GPM sample: the device it was taken of (NULL: not yet). */
struct nvml_gpm_sample_st {
        struct nvml_device *device;
};

enum nvml_return nvmlGpmQueryDeviceSupport(struct nvml_device *device,
                                           struct nvml_gpm_support *support)
{
        KNOB();
        if (!valid_device(device) || !support || support->version != NVML_GPM_SUPPORT_VERSION)
                return NVML_ERROR_INVALID_ARGUMENT;
        support->is_supported_device = json_is_object(json_object_get(device->json, "gpm"));
        return NVML_SUCCESS;
}

enum nvml_return nvmlGpmSampleAlloc(struct nvml_gpm_sample *sample)
{
        KNOB();
        if (!sample)
                return NVML_ERROR_INVALID_ARGUMENT;
        sample->handle = calloc(1, sizeof(*sample->handle));
        return sample->handle ? NVML_SUCCESS : NVML_ERROR_MEMORY;
}

enum nvml_return nvmlGpmSampleFree(struct nvml_gpm_sample sample)
{
        if (!sample.handle)
                return NVML_ERROR_INVALID_ARGUMENT;
        free(sample.handle);
        return NVML_SUCCESS;
}

enum nvml_return nvmlGpmSampleGet(struct nvml_device *device, struct nvml_gpm_sample sample)
{
        KNOB();
        if (!valid_device(device) || !sample.handle)
                return NVML_ERROR_INVALID_ARGUMENT;
        sample.handle->device = device;
        return NVML_SUCCESS;
}

static const char *gpm_member(unsigned int metric)
{
        switch (metric) {
        case NVML_GPM_METRIC_GRAPHICS_UTIL:
                return "graphics";
        case NVML_GPM_METRIC_SM_UTIL:
                return "sm";
        case NVML_GPM_METRIC_DRAM_BW_UTIL:
                return "dram";
        case NVML_GPM_METRIC_ANY_TENSOR_UTIL:
                return "tensor";
        case NVML_GPM_METRIC_PCIE_TX_PER_SEC:
                return "pcie_tx";
        case NVML_GPM_METRIC_PCIE_RX_PER_SEC:
                return "pcie_rx";
        case NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC:
                return "nvlink_tx";
        case NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC:
                return "nvlink_rx";
        default:
                return "";
        }
}

enum nvml_return nvmlGpmMetricsGet(struct nvml_gpm_metrics_get *m)
{
        struct nvml_device *device;
        json_t *gpm;

        KNOB();
        if (!m || m->version != NVML_GPM_METRICS_GET_VERSION || !m->sample1.handle ||
            !m->sample2.handle || m->num_metrics > NVML_GPM_METRIC_MAX)
                return NVML_ERROR_INVALID_ARGUMENT;
        device = m->sample1.handle->device;
        if (!device || device != m->sample2.handle->device ||
            m->sample1.handle == m->sample2.handle)
                return NVML_ERROR_INVALID_ARGUMENT; /* two samples of one GPU */
        gpm = json_object_get(device->json, "gpm");
        for (unsigned i = 0; i < m->num_metrics; i++) {
                json_t *v = json_object_get(gpm, gpm_member(m->metrics[i].metric_id));

                m->metrics[i].nvml_return =
                    json_is_number(v) ? NVML_SUCCESS : NVML_ERROR_NOT_SUPPORTED;
                m->metrics[i].value = json_number_value(v);
        }
        return NVML_SUCCESS;
}
