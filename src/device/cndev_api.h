/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Cambricon's CNDev (libcndev.so, the MLU driver's management library) through dlopen(): only the
 * calls the sampler makes, declared from Cambricon's public CNDev reference. Every call returns
 * CNDEV_SUCCESS (0) or a positive CNDev error code. Each answer is a struct whose first member is
 * the API version the caller speaks: the library refuses one it does not know
 * (CNDEV_ERROR_UNSUPPORTED_API_VERSION) or needs a newer driver for (..._LOW_DRIVER_VERSION).
 */

#include <stdbool.h>
#include <stdint.h>

/* The layouts below are version 5's. */
#define CNDEV_API_VERSION 5

#define CNDEV_SUCCESS                       0
#define CNDEV_ERROR_LOW_DRIVER_VERSION      2
#define CNDEV_ERROR_UNSUPPORTED_API_VERSION 3
#define CNDEV_ERROR_NOT_SUPPORTED           10

struct cndev_card_info {
        int version;
        unsigned number; /* of cards */
};

struct cndev_pcie_info {
        int version;
        unsigned subsystem_id, device_id;
        uint16_t vendor, subsystem_vendor;
        unsigned domain, bus, device, function;
        const char *physical_slot;
        int slot_id;
};

struct cndev_utilization_info {
        int version;
        int average_core; /* percent, the whole card's */
        int core[80];
};

struct cndev_memory_info {
        int version;
        int64_t physical_total_mib, physical_used_mib;
        int64_t virtual_total_mib, virtual_used_mib;
        int64_t channels;
        int64_t channel_used_mib[20];
};

struct cndev_temperature_info {
        int version;
        int board; /* degrees Celsius: what cnmon and mlu-exporter's mlu_temperature report */
        int cluster[20];
        int memory_die[8];
        int chip, air_inlet, air_outlet, memory, video_input, cpu;
};

struct cndev_power_info {
        int version;
        int usage_w; /* whole watts */
        int cap_w;
        int usage_decimal;
        int machine_w;
        int cap_decimal;
        uint16_t thermal_design_w;
};

struct cndev_health_state {
        int version;
        int health; /* 1: healthy, 0: not */
};

/*
 * A library built for a newer CNDev may write more than version 5's layout holds: every answer
 * is read into one of these, with room to spare, so a longer answer cannot overrun the stack.
 */
union cndev_answer {
        int version;
        struct cndev_card_info card;
        struct cndev_pcie_info pcie;
        struct cndev_utilization_info util;
        struct cndev_memory_info memory;
        struct cndev_temperature_info temperature;
        struct cndev_power_info power;
        struct cndev_health_state health;
        unsigned char room[4096];
};

struct cndev_api {
        void *dl; /* NULL: not loaded */
        int (*init)(int reserved);
        int (*release)(void);
        int (*get_device_count)(struct cndev_card_info *info);
        int (*get_pcie_info)(struct cndev_pcie_info *info, int card);
        /* optional: a library without one leaves its figure out */
        const char *(*error_string)(int code);
        int (*get_utilization)(struct cndev_utilization_info *info, int card);
        int (*get_memory_usage)(struct cndev_memory_info *info, int card);
        int (*get_temperature)(struct cndev_temperature_info *info, int card);
        int (*get_power)(struct cndev_power_info *info, int card);
        int (*get_health)(struct cndev_health_state *info, int card);
};

/* The library to load: path, else $XPOOL_CNDEV_LIBRARY, else "libcndev.so". */
const char *xp_cndev_library(const char *path);
/*
 * Loads and initialises CNDev and reads its card count into *n_cards: -ENODEV when it is absent
 * or lacks a required call, -EPROTO (logged as a warning naming the library and the code) when
 * it fails or refuses version 5's structs.
 */
int xp_cndev_api_open(const char *path, struct cndev_api *ret, unsigned *n_cards);
void xp_cndev_api_close(struct cndev_api *api);
/* "code <code> (<CNDev's words for it>)" in buf. */
const char *xp_cndev_strerror(const struct cndev_api *api, int code, char buf[static 96]);
