/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Huawei's DCMI (libdcmi.so, the Ascend driver's management library) through dlopen(): only the
 * calls the sampler makes, with the types Huawei's DCMI API reference gives them. Every call
 * returns 0 on success, a negative DCMI code otherwise.
 */

#include <stdbool.h>

/* dcmi_get_device_utilization_rate's input_type for the AI cores (the figure npu-exporter
 * reports as npu_chip_info_utilization). */
#define DCMI_UTILIZATION_AICORE 2

/* dcmi_get_device_pcie_info's answer. */
struct dcmi_pcie_info_all {
        unsigned int venderid;
        unsigned int subvenderid;
        unsigned int deviceid;
        unsigned int subdeviceid;
        int domain;
        unsigned int bdf_busid;
        unsigned int bdf_deviceid;
        unsigned int bdf_funcid;
        unsigned char reserve[32];
};

struct dcmi_api {
        void *dl; /* NULL: not loaded */
        int (*init)(void);
        int (*get_card_num_list)(int *card_num, int *card_list, int list_len);
        int (*get_device_num_in_card)(int card_id, int *device_num);
        int (*get_device_pcie_info)(int card_id, int device_id, struct dcmi_pcie_info_all *info);
        /* optional: a driver without one leaves its figure out */
        int (*get_device_utilization_rate)(int card_id,
                                           int device_id,
                                           int input_type,
                                           unsigned int *utilization_rate);
        int (*get_device_temperature)(int card_id, int device_id, int *temperature); /* C */
        int (*get_device_power_info)(int card_id, int device_id, int *power);        /* 0.1 W */
};

/* The library to load: path, else $XPOOL_DCMI_LIBRARY, else "libdcmi.so". */
const char *xp_dcmi_library(const char *path);
/* Loads and initialises DCMI: -ENODEV when it is absent, lacks a required call or fails. */
int xp_dcmi_api_open(const char *path, struct dcmi_api *ret);
void xp_dcmi_api_close(struct dcmi_api *api);
