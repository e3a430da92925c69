/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The kubelet device plugin (Kubernetes device plugin API v1beta1): one gRPC endpoint per
 * resource name found on the node (nvidia.com/gpu, huawei.com/Ascend910, amd.com/gpu, ...), each
 * a Unix socket in the kubelet's device-plugins directory, registered with the kubelet. It
 * streams every device with its health and NUMA node (ListAndWatch), answers preferred
 * allocations with the scheduling core's device selection, and allocates exactly the chosen
 * devices: the vendor's environment (the process runtime's table), device nodes, mounts and CDI
 * device names. When the kubelet restarts (and removes every socket) the plugins serve again and
 * re-register on their own. docs/kubernetes.md ("Device plugin") is the operator's view.
 *
 * One thread: xp_kube_plugin_run() drives gRPC, the health watch and the socket watch until
 * *stop is set. Not thread-safe.
 */

#include <signal.h>
#include <stdint.h>

#include "xpool/device.h"
#include "xpool/error.h"
#include "xpool/macro.h"

#define XP_KUBE_PLUGIN_DIR      "/var/lib/kubelet/device-plugins"
#define XP_KUBE_KUBELET_SOCKET  "kubelet.sock" /* in the plugin directory */
#define XP_KUBE_API_VERSION     "v1beta1"
#define XP_KUBE_HEALTH_INTERVAL 5000 /* ms between recovery checks of an Unhealthy GPU */

/* A host path a resource's containers get, for every allocation of that resource. */
struct xp_kube_mount {
        const char *resource; /* "huawei.com/Ascend910" */
        const char *host_path;
        const char *container_path;
        bool read_only;
};

struct xp_kube_plugin_options {
        const char *plugin_dir; /* NULL: XP_KUBE_PLUGIN_DIR */
        const char *cdi_dir;    /* NULL: XP_CDI_DIR; "": write no CDI specs, name no CDI devices */
        const struct xp_discovery_config *discovery;
        const char *const *resources;      /* NULL-terminated; NULL: every resource found */
        const char *const *skip_resources; /* NULL-terminated: never served (another plugin's) */
        const struct xp_kube_mount *mounts;
        size_t n_mounts;
        int64_t health_interval_ms; /* 0: XP_KUBE_HEALTH_INTERVAL */
};

struct xp_kube_plugin;

/*
 * Discovers the node's devices, writes their CDI specs, starts one endpoint per resource (a
 * stale socket of an earlier xpool plugin in the directory is removed) and starts registering.
 * -ENODEV with err when the node has no device resource to serve; -errno with err otherwise.
 */
int xp_kube_plugin_new(const struct xp_kube_plugin_options *options,
                       struct xp_kube_plugin **ret,
                       struct xp_error *err);

/* Serves until *stop becomes non-zero, then stops every endpoint cleanly. */
int xp_kube_plugin_run(struct xp_kube_plugin *plugin, const volatile sig_atomic_t *stop);

/* The resource names served, in order; borrowed. */
size_t xp_kube_plugin_resources(const struct xp_kube_plugin *plugin, const char *const **ret);

void xp_kube_plugin_free(struct xp_kube_plugin *plugin);
XP_DEFINE_FREEP(struct xp_kube_plugin, xp_kube_plugin_free)
