/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The device sampler's parts (xpool/devsample.h): the front end (sample.c) and NVML's. */

#include "nvml_api.h"
#include "xpool/devsample.h"

struct nvml_sampler {
        struct nvml_api api;          /* api.dl NULL: no NVML */
        struct nvml_device **handles; /* per inventory device; NULL: not NVML's */
        size_t n;
};

/* Loads NVML and finds the handle of every NVIDIA GPU of inventory; no NVML is not an error. */
int nvml_sampler_open(const struct xp_discovery_config *config,
                      const struct xp_node_inventory *inventory,
                      struct nvml_sampler *ret);
void nvml_sampler_close(struct nvml_sampler *s);
/* Device i's figures into ret: true when it is NVML's. */
bool nvml_sampler_read(struct nvml_sampler *s, size_t i, struct xp_device_sample *ret);
