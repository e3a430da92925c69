/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * What discovery backends share: the ops table, the discovery context with the inventory being
 * built, and helpers to read files below the configured root. Only src/device/ includes this.
 */

#include <stdbool.h>
#include <stdint.h>

#include "link_index.h"
#include "xpool/cpuset.h"
#include "xpool/device.h"

struct xp_discovery {
        const struct xp_discovery_config *config;
        int root_fd; /* O_PATH|O_DIRECTORY of config->root */
        struct xp_node_inventory *inventory;
        void *state; /* what a backend's probe keeps for its discover; its release frees it */
        struct xp_link_index link_index; /* over inventory->links, for xp_discovery_add_link() */
        const void *links_array; /* inventory->links.items as xp_discovery_add_link() left it */
        size_t links_capacity;   /* its room, in links */
        bool nvml_listed; /* NVML ran and listed the node's NVIDIA GPUs: one it missed is in trouble
                           */
};

struct xp_device_backend {
        const char *name;
        /* 0 when the backend can run here, -ENODEV when its hardware/driver/library is absent. */
        int (*probe)(struct xp_discovery *d);
        /* Adds to (or enriches) d->inventory. Fails only for real errors (-ENOMEM, a bad file). */
        int (*discover)(struct xp_discovery *d, struct xp_error *err);
        /* Optional: frees d->state after discover (a loaded library, an open handle). */
        void (*release)(struct xp_discovery *d);
};

extern const struct xp_device_backend xp_cpu_backend;
extern const struct xp_device_backend xp_nvml_backend;
extern const struct xp_device_backend xp_pci_backend;
extern const struct xp_device_backend xp_sim_backend;

/* ---- the inventory being built ----------------------------------------------------------- */

/*
 * Appends a zeroed device and returns it, or NULL on -ENOMEM. The pointer stays valid only until
 * the next append.
 */
struct xp_device *xp_discovery_add_device(struct xp_discovery *d);

/* The device with this PCI address ("0000:18:00.0", case-insensitive), or NULL. */
struct xp_device *xp_discovery_find_pci(struct xp_discovery *d, const char *pci_address);

struct xp_device *xp_discovery_find_id(struct xp_discovery *d, const char *id);

/*
 * Records the link between devices a and b (ids) unless one exists already (backends add links
 * only through this function, which keeps an index and spare room): the first backend to
 * report a pair wins, so NVLink from nvml runs before the PCIe levels from pci. Returns 1 when
 * added, 0 when the pair had a link, -ENOMEM.
 */
int xp_discovery_add_link(struct xp_discovery *d,
                          const char *a,
                          const char *b,
                          enum xp_link_level level,
                          int64_t nvlinks,
                          double bandwidth_gbps);

/* Replaces a string member (*field) with a copy of value (NULL clears). 0 or -ENOMEM. */
int xp_discovery_set_string(char **field, const char *value);

/* ---- files below the root ----------------------------------------------------------------- */

/*
 * Reads a whole small file (at most 1 MiB) at path relative to the root ("sys/bus/pci/devices"),
 * with trailing whitespace removed. 0, -ENOENT and friends, -EFBIG. Caller frees *ret.
 */
int xp_root_read(struct xp_discovery *d, const char *path, char **ret);
int xp_root_read_u64(struct xp_discovery *d,
                     const char *path,
                     uint64_t *ret); /* decimal or 0x hex */
int xp_root_read_i64(struct xp_discovery *d, const char *path, int64_t *ret);

/* The target of a symbolic link below the root (as written in the link). Caller frees. */
int xp_root_readlink(struct xp_discovery *d, const char *path, char **ret);

/* The names in a directory below the root, sorted, without "." and "..". Free with xp_strv_free().
 */
int xp_root_list(struct xp_discovery *d, const char *path, char ***ret, size_t *ret_n);
void xp_strv_free(char **names, size_t n);

bool xp_root_exists(struct xp_discovery *d, const char *path);
