/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * A node's devices for a Kubernetes cluster, published on its Node through the Kubernetes API
 * (docs/kubernetes.md is the operator's view):
 *
 *   - labels in the style of NVIDIA's GPU feature discovery, for every device resource
 *     (nvidia.com/gpu.product, .memory, .count, .present, ...; amd.com/gpu.*, ...), and xpool's
 *     vendor-neutral ones (xpool.io/gpu.count, xpool.io/accelerator.count, ...);
 *   - the device inventory with its topology and which pod holds each device, in one compact
 *     annotation (XP_INVENTORY_ANNOTATION) that the scheduler extender reads back into the
 *     scheduling core.
 *
 * The publisher merge-patches only these labels and annotations: the Node belongs to the kubelet.
 * Which labels are its own is recorded on the Node (XP_OWNED_LABELS_ANNOTATION), so a label it set
 * once and no longer wants is removed, and nobody else's is touched.
 */

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "xpool/device.h"
#include "xpool/error.h"
#include "xpool/macro.h"
#include "xpool/object.h"

#define XP_INVENTORY_ANNOTATION    "xpool.io/inventory"
#define XP_OWNED_LABELS_ANNOTATION "xpool.io/labels"
/* The inventory annotation's format version; a reader refuses others. */
#define XP_INVENTORY_VERSION 1
/* The default bound on the annotation (Kubernetes allows 256 KiB for all of a Node's
 * annotations together); 8 GPUs take about 1.5 KiB. */
#define XP_INVENTORY_MAX_BYTES (32 * 1024)
/* What a reader accepts: devices, and bytes of any one string. */
#define XP_INVENTORY_DEVICES_MAX 1024
#define XP_INVENTORY_STRING_MAX  512

/* ---- allocation state: which pod holds which device ------------------------------------------ */

struct xp_kube_device_use {
        char *namespace; /* the pod's */
        char *name;
        char *resource;  /* "nvidia.com/gpu" */
        char *device_id; /* the device plugin's id of the device: xpool's device id */
};

struct xp_kube_allocation {
        XP_LIST(struct xp_kube_device_use, uses);
};

void xp_kube_allocation_done(struct xp_kube_allocation *allocation);
/* Appends one use (strings copied). -ENOMEM. */
int xp_kube_allocation_add(struct xp_kube_allocation *allocation,
                           const char *namespace,
                           const char *name,
                           const char *resource,
                           const char *device_id);

/*
 * Where allocation state comes from: the kubelet's pod-resources API (v1.PodResourcesLister),
 * through the plugin's client. An ops table, so a test or another source plugs in the same way.
 */
struct xp_kube_allocation_source {
        const char *name; /* for messages: "pod-resources" */
        /* What pods hold now into *ret (empty on entry). -errno with err. */
        int (*list)(void *userdata, struct xp_kube_allocation *ret, struct xp_error *err);
        void *userdata;
};

struct xp_podres_list;
/* The allocation the kubelet's pod-resources List answered (xpool/podresources.h): one use per
 * device a pod's containers hold. -ENOMEM. */
int xp_kube_allocation_from_podres(const struct xp_podres_list *list,
                                   struct xp_kube_allocation *ret);

/* ---- the annotation ----------------------------------------------------------------------------
 */

/*
 * The inventory annotation's text: {"version":1,"numaNodes":[...],"devices":[...],"links":[...]}.
 * Each device lists id, resource, kind, vendor, model, computeCapability, memoryBytes and
 * fp16TFLOPS only where they differ from the device before it (a reader carries them forward),
 * then index, numaNode, health (when not Healthy) and pod ("namespace/name", from allocation,
 * which may be NULL). links holds one row per device i: the levels to devices i+1.. in order
 * ("NV12", "PIX", "PXB", "PHB", "NODE", "SYS", "-" unknown). When the text would pass max_bytes
 * (0: XP_INVENTORY_MAX_BYTES) the links are left out ("linksOmitted": true); -E2BIG with err
 * when it still does. Caller frees *ret. -ENOMEM.
 */
int xp_kube_inventory_encode(const struct xp_node_inventory *inventory,
                             const struct xp_kube_allocation *allocation,
                             size_t max_bytes,
                             char **ret,
                             struct xp_error *err);

/*
 * Reads the annotation's text back: the inventory (devices, links, NUMA nodes; caller frees with
 * xp_node_inventory_free()) and, when ret_allocation is not NULL, which pod holds which device.
 * The text comes from the API (any node writes its own): -EINVAL with err naming the field
 * (`devices[3].index: must be an integer`), -E2BIG beyond XP_INVENTORY_DEVICES_MAX devices or
 * XP_INVENTORY_STRING_MAX bytes in a string, -ENOMEM. Nothing is returned on failure.
 */
int xp_kube_inventory_decode(const char *text,
                             size_t len,
                             struct xp_node_inventory **ret_inventory,
                             struct xp_kube_allocation *ret_allocation,
                             struct xp_error *err);

/* ---- labels -------------------------------------------------------------------------------- */

/*
 * The labels the node's devices give it, as a JSON object of strings (caller decrefs):
 *   per device resource R ("nvidia.com/gpu", "amd.com/gpu", "huawei.com/Ascend910"):
 *     R.present "true", R.count, R.product (the first device's model, as a label value),
 *     R.memory (MiB), R.compute.major / R.compute.minor (where the vendor has a capability);
 *   per kind K (gpu, npu, fpga, vpu, accelerator): xpool.io/K.count, .product, .memory,
 *     .vendor, and xpool.io/K.nvlink "true" when two such devices share a direct link;
 *   xpool.io/accelerator.count (every device) and xpool.io/numa-nodes.
 * The resources in leave (n_leave of them; another plugin's, docs/kubernetes.md) get no R.*
 * labels: their plugin's feature discovery writes those. -ENOMEM.
 */
int xp_kube_inventory_labels(const struct xp_node_inventory *inventory,
                             const char *const *leave,
                             size_t n_leave,
                             json_t **ret);

/*
 * The JSON merge patch (RFC 7386) that makes node carry labels (a JSON object of strings) and
 * annotations (the inventory's), removing the labels the Node's XP_OWNED_LABELS_ANNOTATION says
 * were ours and labels no longer holds, and recording the new set there. node is the Node as
 * read (NULL: unknown, nothing is removed). *ret is NULL when the Node already carries all of
 * it. -ENOMEM.
 */
int xp_kube_inventory_patch(const json_t *node,
                            const json_t *labels,
                            const json_t *annotations,
                            json_t **ret);

/*
 * Coexistence with another device plugin (NVIDIA's, say): the device resources of inventory
 * (those not in leave) that node's status.capacity already lists although the inventory
 * annotation xpool last published there does not name them, so another plugin advertises them.
 * xpool must not advertise those too: the publisher leaves them (no labels) and says so, and the
 * device plugin registers none of them. A JSON array of names (caller decrefs; empty: none).
 * -ENOMEM.
 */
int xp_kube_inventory_conflicts(const json_t *node,
                                const struct xp_node_inventory *inventory,
                                const char *const *leave,
                                size_t n_leave,
                                json_t **ret);

/* ---- the publisher -------------------------------------------------------------------------- */

struct xp_kube_inventory_options {
        const char *node_name;                  /* the Node to patch */
        const char *kubeconfig;                 /* the API (xpool/kubeapi.h); NULL: in-cluster */
        const char *serviceaccount_dir;         /* NULL: XP_KUBE_SERVICEACCOUNT_DIR */
        struct xp_discovery_config discovery;   /* what devices there are */
        struct xp_kube_allocation_source alloc; /* .list NULL: no allocation state */
        const char *const *leave;               /* resources left to another plugin */
        size_t n_leave;
        /* the resources this process's device plugin advertises: the Node's capacity lists them
         * because of it, not of another plugin */
        const char *const *own;
        size_t n_own;
        /* xpool device-plugin serves every resource not in leave here (the DaemonSet runs both
         * with one list): no resource is another plugin's. false: look for conflicts. */
        bool device_plugin;
        int64_t min_interval_ms; /* at most one patch per this; 0: 10 s */
        int64_t poll_ms;         /* devices and allocation read again; 0: 5 s */
        int64_t resync_ms; /* the Node read and patched again even when unchanged; 0: 10 min */
        size_t max_bytes;  /* the annotation's bound; 0: XP_INVENTORY_MAX_BYTES */
};

struct xp_kube_inventory;

/*
 * Starts publishing on a thread of its own: the first patch as soon as the Node exists, then one
 * whenever the devices, their health or the allocation change, at most one per min_interval_ms
 * (changes in between are coalesced into the next). Failures are logged and retried; the
 * publisher never exits on its own. Strings of options are copied. -errno with err.
 */
int xp_kube_inventory_new(const struct xp_kube_inventory_options *options,
                          struct xp_kube_inventory **ret,
                          struct xp_error *err);
/* Stops the thread (within about a second). Accepts NULL. */
void xp_kube_inventory_free(struct xp_kube_inventory *inventory);
XP_DEFINE_FREEP(struct xp_kube_inventory, xp_kube_inventory_free)
/* Asks for a read and publish now (subject to min_interval_ms): a device's health changed. */
void xp_kube_inventory_poke(struct xp_kube_inventory *inventory);

/* Counters for tests. */
struct xp_kube_inventory_stats {
        uint64_t patches;  /* patches the API accepted */
        uint64_t failures; /* reads or patches that failed */
        size_t last_bytes; /* the last annotation's size */
        size_t conflicts;  /* resources found advertised by another plugin (left to it) */
};
void xp_kube_inventory_stats(struct xp_kube_inventory *inventory,
                             struct xp_kube_inventory_stats *ret);
