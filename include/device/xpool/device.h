/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Device discovery: what compute a node has, in one vendor-neutral model (struct
 * xp_node_inventory in object.h): CPUs, NUMA nodes and memory, every accelerator with its
 * Kubernetes resource name, and how each pair of accelerators is connected.
 *
 * Backends, each an ops table chosen at run time (src/device/<name>.c):
 *   cpu   sockets, cores, threads, NUMA nodes and memory from sysfs and procfs
 *   nvml  NVIDIA GPUs through libnvidia-ml.so.1 loaded with dlopen: UUID, memory, NVLink, health
 *   pci   every PCI accelerator matched on vendor and device id: GPUs, NPUs, FPGAs, ...; the PCIe
 *         ancestry that gives the topology levels of `nvidia-smi topo -m`
 *   sim   simulated devices from a node description file, marked simulated everywhere
 * A backend whose hardware, driver or library is absent is skipped, never an error.
 *
 * Every file is read below config->root ("/" on a live machine), so tests replay captured sysfs
 * trees through the same code.
 */

#include <stdint.h>

#include "xpool/error.h"
#include "xpool/macro.h"
#include "xpool/object.h"

/* Changes what discovery reports for matching devices (from configuration). */
struct xp_device_override {
        const char *match; /* a model substring (case-insensitive) or a PCI id "10de:2330" */
        const char *resource_name; /* NULL: keep */
        double fp16_tflops;        /* 0: keep */
        double fp32_tflops;        /* 0: keep */
};

struct xp_discovery_config {
        const char *root;             /* where /sys, /proc and /dev are found; NULL means "/" */
        const char *node_description; /* sim: a YAML or JSON node description; NULL: none */
        const char *nvml_library;     /* NULL: $XPOOL_NVML_LIBRARY, else "libnvidia-ml.so.1" */
        const char *dcmi_library;     /* NULL: $XPOOL_DCMI_LIBRARY, else "libdcmi.so" */
        const char *cndev_library;    /* NULL: $XPOOL_CNDEV_LIBRARY, else "libcndev.so" */
        const char *const *backends;  /* NULL-terminated names to run; NULL: all */
        const struct xp_device_override *overrides;
        size_t n_overrides;
};

/*
 * Runs the backends and returns the node's inventory: devices sorted by kind, vendor and index,
 * a link for every pair of accelerators (the best level found), NUMA locality. On failure (a
 * broken node description, bad config, -ENOMEM) returns -errno with err saying what and where,
 * and no inventory.
 */
int xp_device_discover(const struct xp_discovery_config *config,
                       struct xp_node_inventory **ret,
                       struct xp_error *err);

/*
 * The shared control nodes a vendor's user-space stack opens besides each device's own nodes
 * (NVIDIA's /dev/nvidiactl and /dev/nvidia-uvm, AMD GPUs' /dev/kfd, Huawei's
 * /dev/davinci_manager, ...), NULL-terminated, static; NULL for a vendor without any.
 */
const char *const *xp_device_control_nodes(const struct xp_device *device);

/*
 * Stand-ins for the device nodes of the inventory's simulated devices, so that a container can be
 * given them as it would be given real ones: for each node /dev/NAME of a simulated device,
 * the character device dir/NAME (dir created 0755 when missing), made with mknod when missing
 * with major XP_SIM_DEVICE_MAJOR (reserved for local use by the kernel's device list: no
 * driver answers it, so an open fails with ENXIO) and minors 0, 1, ... in order; existing ones
 * are kept. A node that is not directly below /dev is left out. -errno with err naming the
 * path.
 */
#define XP_SIM_DEVICE_MAJOR 120
int xp_device_sim_nodes(const struct xp_node_inventory *inventory,
                        const char *dir,
                        struct xp_error *err);

/* The names of all backends, in the order they run, NULL-terminated. */
const char *const *xp_device_backend_names(void);

/* The link between two devices (either order), or NULL. */
const struct xp_device_link *
xp_device_link_find(const struct xp_node_inventory *inventory, const char *a, const char *b);

/*
 * The connection matrix of the accelerators as `nvidia-smi topo -m` prints it (X, NV#, PIX, PXB,
 * PHB, NODE, SYS), with each device's CPU and NUMA affinity, and the legend. Caller frees.
 */
int xp_device_topology_format(const struct xp_node_inventory *inventory, char **ret_text);

/*
 * Watching device health while a process runs (the kubelet device plugin): a backend that can
 * be told of faults keeps listening between polls, so none is missed.
 *   nvml  Xid critical error events (those NVIDIA's device plugin counts) make a GPU Unhealthy;
 *         an Unhealthy GPU is Healthy again once the driver reports that it needs no recovery
 *         action (NVML's GPU recovery action field says NONE: the reset or reboot it asked for has
 *         happened), checked every recheck_ms. Drivers without that field keep the GPU
 *         Unhealthy until the process restarts, as NVIDIA's plugin does.
 * Devices no backend watches keep the health discovery gave them.
 */
struct xp_device_health_watch;

/*
 * Starts watching the devices of inventory (borrowed for the call). A node without NVML gives a
 * watch that reports nothing. -ENOMEM.
 */
int xp_device_health_watch_new(const struct xp_discovery_config *config,
                               const struct xp_node_inventory *inventory,
                               int64_t recheck_ms,
                               struct xp_device_health_watch **ret,
                               struct xp_error *err);
void xp_device_health_watch_free(struct xp_device_health_watch *watch);
XP_DEFINE_FREEP(struct xp_device_health_watch, xp_device_health_watch_free)

/*
 * Applies what happened since the last poll (without waiting) to the health and health_reason
 * of inventory's devices, matched by id; now_ms is a monotonic clock. Returns how many devices
 * changed health, or -ENOMEM.
 */
int xp_device_health_poll(struct xp_device_health_watch *watch,
                          struct xp_node_inventory *inventory,
                          int64_t now_ms);
