/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A fake libcndev.so for tests: the CNDev calls xpool's Cambricon sampler makes, answering from a
 * JSON configuration named by $FAKE_CNDEV_CONFIG, read by cndevInit. Without the variable
 * cndevInit fails with CNDEV_ERROR_NO_DRIVER, as on a node without the MLU driver.
 *
 * The configuration (tests/data/cndev/ *.json):
 *   {"max_version": 5,              // the newest struct version it knows (default 5): a newer
 *                                   // one is refused with CNDEV_ERROR_UNSUPPORTED_API_VERSION
 *    "cards": [{
 *       "pci": "0000:0a:00.0",      // domain:bus:device.function, what cndevGetPCIeInfo says
 *       "utilization": 63,          // cndevGetDeviceUtilizationInfo's average, percent
 *       "memory_used_mib": 12288,   // cndevGetMemoryUsage, MiB
 *       "memory_total_mib": 49152,
 *       "temperature": 48,          // cndevGetTemperatureInfo's board, degrees Celsius
 *       "power": 151,               // cndevGetPowerInfo's usage, watts
 *       "health": 1,                // cndevGetCardHealthState: 1 healthy, 0 not
 *       "errors": {"power": 7}      // a call that answers this CNDev error code instead
 *   }]}
 * A figure left out answers CNDEV_ERROR_NOT_SUPPORTED. While the file $FAKE_CNDEV_SLEEP_FILE
 * exists, every call first sleeps the milliseconds it holds: a hung driver.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum {
        CNDEV_SUCCESS = 0,
        CNDEV_ERROR_NO_DRIVER = 1,
        CNDEV_ERROR_UNSUPPORTED_API_VERSION = 3,
        CNDEV_ERROR_UNINITIALIZED = 4,
        CNDEV_ERROR_INVALID_ARGUMENT = 5,
        CNDEV_ERROR_INVALID_DEVICE_ID = 6,
        CNDEV_ERROR_NOT_SUPPORTED = 10,
};

/* Version 5's layouts, as Cambricon's CNDev reference gives them. */
struct card_info {
        int version;
        unsigned number;
};
struct pcie_info {
        int version;
        unsigned subsystem_id, device_id;
        uint16_t vendor, subsystem_vendor;
        unsigned domain, bus, device, function;
        const char *physical_slot;
        int slot_id;
};
struct utilization_info {
        int version, average, core[80];
};
struct memory_info {
        int version;
        int64_t physical_total, physical_used, virtual_total, virtual_used, channels, channel[20];
};
struct temperature_info {
        int version, board, cluster[20], memory_die[8], chip, air_in, air_out, memory, video, cpu;
};
struct power_info {
        int version, usage, cap, usage_decimal, machine, cap_decimal;
        uint16_t tdp;
};
struct health_state {
        int version, health;
};

/* What libcndev.so exports. */
int cndevInit(int reserved);
int cndevRelease(void);
const char *cndevGetErrorString(int code);
int cndevGetDeviceCount(struct card_info *info);
int cndevGetPCIeInfo(struct pcie_info *info, int card);
int cndevGetDeviceUtilizationInfo(struct utilization_info *info, int card);
int cndevGetMemoryUsage(struct memory_info *info, int card);
int cndevGetTemperatureInfo(struct temperature_info *info, int card);
int cndevGetPowerInfo(struct power_info *info, int card);
int cndevGetCardHealthState(struct health_state *info, int card);

static json_t *config;

static void maybe_hang(void)
{
        const char *path = getenv("FAKE_CNDEV_SLEEP_FILE");
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

int cndevInit(int reserved)
{
        const char *path = getenv("FAKE_CNDEV_CONFIG");

        (void)reserved;
        if (config)
                return CNDEV_SUCCESS;
        if (!path)
                return CNDEV_ERROR_NO_DRIVER;
        config = json_load_file(path, 0, NULL);
        return config ? CNDEV_SUCCESS : CNDEV_ERROR_NO_DRIVER;
}

int cndevRelease(void)
{
        json_decref(config);
        config = NULL;
        return CNDEV_SUCCESS;
}

const char *cndevGetErrorString(int code)
{
        switch (code) {
        case CNDEV_ERROR_UNSUPPORTED_API_VERSION:
                return "API Version is not support";
        case CNDEV_ERROR_NOT_SUPPORTED:
                return "not supported";
        case 7:
                return "Unknown error";
        default:
                return "Cndev_ERROR not found!";
        }
}

/* Whether a call may go on with the struct version it was given: CNDEV_SUCCESS if so. */
static int check(int version)
{
        json_t *max = json_object_get(config, "max_version");

        maybe_hang();
        if (!config)
                return CNDEV_ERROR_UNINITIALIZED;
        if (version < 1)
                return CNDEV_ERROR_INVALID_ARGUMENT;
        if (version > (max ? json_integer_value(max) : 5))
                return CNDEV_ERROR_UNSUPPORTED_API_VERSION;
        return CNDEV_SUCCESS;
}

int cndevGetDeviceCount(struct card_info *info)
{
        int r = info ? check(info->version) : CNDEV_ERROR_INVALID_ARGUMENT;

        if (r == CNDEV_SUCCESS)
                info->number = (unsigned)json_array_size(json_object_get(config, "cards"));
        return r;
}

static json_t *card_of(int card)
{
        return card < 0 ? NULL : json_array_get(json_object_get(config, "cards"), (size_t)card);
}

int cndevGetPCIeInfo(struct pcie_info *info, int card)
{
        int r = info ? check(info->version) : CNDEV_ERROR_INVALID_ARGUMENT;
        const char *pci = json_string_value(json_object_get(card_of(card), "pci"));
        unsigned domain, bus, dev, fn;

        if (r != CNDEV_SUCCESS)
                return r;
        if (!pci || sscanf(pci, "%x:%x:%x.%x", &domain, &bus, &dev, &fn) != 4)
                return CNDEV_ERROR_INVALID_DEVICE_ID;
        *info = (struct pcie_info){.version = info->version,
                                   .vendor = 0xcabc,
                                   .domain = domain,
                                   .bus = bus,
                                   .device = dev,
                                   .function = fn};
        return CNDEV_SUCCESS;
}

/* The card's figure name (the call's errors key is the same), or its error code. */
static int figure(int version, int card, const char *name, long long *ret)
{
        json_t *c = card_of(card), *v = json_object_get(c, name);
        json_t *error = json_object_get(json_object_get(c, "errors"), name);
        int r = check(version);

        if (r != CNDEV_SUCCESS)
                return r;
        if (!c)
                return CNDEV_ERROR_INVALID_DEVICE_ID;
        if (json_is_integer(error))
                return (int)json_integer_value(error);
        if (!json_is_integer(v))
                return CNDEV_ERROR_NOT_SUPPORTED;
        *ret = json_integer_value(v);
        return CNDEV_SUCCESS;
}

int cndevGetDeviceUtilizationInfo(struct utilization_info *info, int card)
{
        long long v = 0;
        int r = figure(info->version, card, "utilization", &v);

        if (r == CNDEV_SUCCESS)
                info->average = (int)v;
        return r;
}

int cndevGetMemoryUsage(struct memory_info *info, int card)
{
        long long used = 0, total = 0;
        int r = figure(info->version, card, "memory_used_mib", &used);

        if (r == CNDEV_SUCCESS)
                r = figure(info->version, card, "memory_total_mib", &total);
        if (r == CNDEV_SUCCESS) {
                info->physical_used = used;
                info->physical_total = total;
        }
        return r;
}

int cndevGetTemperatureInfo(struct temperature_info *info, int card)
{
        long long v = 0;
        int r = figure(info->version, card, "temperature", &v);

        if (r == CNDEV_SUCCESS)
                info->board = (int)v;
        return r;
}

int cndevGetPowerInfo(struct power_info *info, int card)
{
        long long v = 0;
        int r = figure(info->version, card, "power", &v);

        if (r == CNDEV_SUCCESS)
                info->usage = (int)v;
        return r;
}

int cndevGetCardHealthState(struct health_state *info, int card)
{
        long long v = 0;
        int r = figure(info->version, card, "health", &v);

        if (r == CNDEV_SUCCESS)
                info->health = (int)v;
        return r;
}
