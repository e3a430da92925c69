/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The device sampler's parts (xpool/devsample.h): the front end (sample.c) and NVML's. */

#include "cndev_api.h"
#include "dcmi_api.h"
#include "nvml_api.h"
#include "xpool/devsample.h"

/* A GPU's GPM samples: the last one and the one being taken (profiling figures are the
 * difference of two). */
struct nvml_gpm_state {
        bool supported, have_prev;
        struct nvml_gpm_sample prev, cur;
};

struct nvml_sampler {
        struct nvml_api api;              /* api.dl NULL: no NVML */
        struct nvml_device **handles;     /* per inventory device; NULL: not NVML's */
        unsigned long long *last_seen_us; /* per device: the newest process sample read */
        struct nvml_gpm_state *gpm;       /* per device */
        size_t n;
};

/* Loads NVML and finds the handle of every NVIDIA GPU of inventory; no NVML is not an error. */
int nvml_sampler_open(const struct xp_discovery_config *config,
                      const struct xp_node_inventory *inventory,
                      struct nvml_sampler *ret);
void nvml_sampler_close(struct nvml_sampler *s);
/* Device i's figures into ret: true when it is NVML's. */
bool nvml_sampler_read(struct nvml_sampler *s, size_t i, struct xp_device_sample *ret);

/* DCGM's ECC, NVLink and profiling fields (sample_nvml_dcgm.c). */
int nvml_gpm_open(struct nvml_sampler *s);
void nvml_gpm_close(struct nvml_sampler *s);
void nvml_read_dcgm(struct nvml_sampler *s, size_t i, struct xp_device_sample *ret);

/* A device's place in DCMI. */
struct dcmi_chip {
        bool mapped;
        int card, device;
};

struct dcmi_sampler {
        struct dcmi_api api;     /* api.dl NULL: no DCMI */
        struct dcmi_chip *chips; /* per inventory device */
        size_t n;
};

/* Loads DCMI and finds every Ascend NPU of inventory in it (sample_dcmi.c); no DCMI is not an
 * error. */
int dcmi_sampler_open(const struct xp_discovery_config *config,
                      const struct xp_node_inventory *inventory,
                      struct dcmi_sampler *ret);
void dcmi_sampler_close(struct dcmi_sampler *s);
/* Device i's utilisation, temperature and power into ret, those DCMI answers. */
void dcmi_sampler_read(struct dcmi_sampler *s, size_t i, struct xp_device_sample *ret);

/* A device's place in CNDev. */
struct cndev_card {
        bool mapped;
        int card;
        unsigned logged; /* bit per call: its failure was logged */
};

struct cndev_sampler {
        struct cndev_api api;                      /* api.dl NULL: no CNDev */
        const struct xp_node_inventory *inventory; /* borrowed */
        struct cndev_card *cards;                  /* per inventory device */
        size_t n;
};

/* Loads CNDev and finds every Cambricon MLU of inventory in it (sample_cndev.c); no CNDev is not
 * an error. */
int cndev_sampler_open(const struct xp_discovery_config *config,
                       const struct xp_node_inventory *inventory,
                       struct cndev_sampler *ret);
void cndev_sampler_close(struct cndev_sampler *s);
/* Device i's utilisation, memory, temperature and power into ret, those CNDev answers. */
void cndev_sampler_read(struct cndev_sampler *s, size_t i, struct xp_device_sample *ret);
/* Device i's health from CNDev over ret's: an unhealthy card says so with its reason. */
void cndev_sampler_health(struct cndev_sampler *s, size_t i, struct xp_device_sample *ret);
