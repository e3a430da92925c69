/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The device plugin's parts (include/kube/xpool/kubeplugin.h): pure functions over the inventory
 * (plugin_devices.c, plugin_alloc.c) that the unit tests call directly, the gRPC methods
 * (plugin_rpc.c), registration with the kubelet (plugin_register.c) and the loop (plugin.c).
 */

#include <stdbool.h>
#include <sys/types.h>

#include "deviceplugin.pb-c.h"
#include "rpc_server.h"
#include "xpool/kubeplugin.h"

/* One resource name's devices, as indices into the inventory's devices. */
struct kube_resource {
        char *name;
        size_t *slots;
        size_t n;
        enum xp_device_health *sent; /* per slot: the health last streamed */
};

/*
 * Groups the inventory's devices with an id by resource name, sorted by name, keeping only the
 * names in `only` (NULL: all) and none in `skip`. 0 with *ret (free with kube_resources_free),
 * -ENOMEM.
 */
int kube_resources_build(const struct xp_node_inventory *inv,
                         const char *const *only,
                         const char *const *skip,
                         struct kube_resource **ret,
                         size_t *ret_n);
void kube_resources_free(struct kube_resource *res, size_t n);

/* The kubelet's word for a device's health: "Unhealthy", else "Healthy" (unknown counts as
 * healthy, as the kubelet has no third state and NVIDIA's plugin does the same). */
const char *kube_health_word(enum xp_device_health health);

/*
 * Whether the health of res's devices differs from what was last streamed; records the current
 * health as streamed when it does.
 */
bool kube_resource_health_changed(const struct xp_node_inventory *inv, struct kube_resource *res);

/* The ListAndWatch message of res: every device, its health and NUMA node. Free with
 * kube_list_free(). NULL on -ENOMEM. */
V1beta1__ListAndWatchResponse *kube_list_build(const struct xp_node_inventory *inv,
                                               const struct kube_resource *res);
void kube_list_free(V1beta1__ListAndWatchResponse *list);

/* The socket file for a resource's endpoint: "xpool-nvidia.com_gpu.sock", with ".N" before
 * ".sock" for later generations (each restart binds a new name, so an old server's cleanup can
 * never remove the new one's socket). Caller frees. */
int kube_socket_name(const char *resource, unsigned generation, char **ret);

struct kube_alloc_config {
        const struct xp_kube_mount *mounts;
        size_t n_mounts;
        bool cdi; /* name the devices' CDI devices */
};

/*
 * Allocate for one container: the chosen devices' environment (xp_devenv_build, the process
 * runtime's table), their device nodes, the resource's mounts and the CDI names. -EINVAL with
 * err for an id that is no device of res or one listed twice.
 */
int kube_allocate(const struct xp_node_inventory *inv,
                  const struct kube_resource *res,
                  const struct kube_alloc_config *config,
                  char *const *ids,
                  size_t n_ids,
                  V1beta1__ContainerAllocateResponse **ret,
                  struct xp_error *err);
void kube_allocate_free(V1beta1__ContainerAllocateResponse *resp);

/*
 * GetPreferredAllocation for one container: xp_sched_prefer_devices() over available with
 * must_include, size devices. When the core finds no set (too few healthy devices), the
 * must-include devices then the first available ones, as the kubelet would take them without a
 * preference. -EINVAL with err for a request that cannot be met at all.
 */
int kube_prefer(const struct xp_node_inventory *inv,
                const struct kube_resource *res,
                const V1beta1__ContainerPreferredAllocationRequest *req,
                V1beta1__ContainerPreferredAllocationResponse **ret,
                struct xp_error *err);
void kube_prefer_free(V1beta1__ContainerPreferredAllocationResponse *resp);

/* ---- the running plugin ---------------------------------------------------------------------- */

enum kube_reg_state {
        KUBE_REG_IDLE,    /* not registered: register when the kubelet is there */
        KUBE_REG_PENDING, /* a Register call is in flight */
        KUBE_REG_DONE,    /* the kubelet (of reg_kubelet_ino) accepted it */
};

/* One resource's endpoint. */
struct kube_endpoint {
        struct xp_kube_plugin *plugin;
        struct kube_resource *res; /* in plugin->resources */
        unsigned generation;
        char *socket_name; /* relative to the plugin directory: the Register endpoint */
        char *socket_path;
        struct kube_server *server;
        struct kube_call **watchers; /* open ListAndWatch streams */
        size_t n_watchers;
        /* registration */
        enum kube_reg_state reg;
        ino_t reg_kubelet_ino;
        int64_t reg_retry_at_ms;
        int64_t reg_backoff_ms;
        struct kube_reg_call *reg_call;
};

struct xp_kube_plugin {
        char *plugin_dir;
        char *kubelet_socket;
        char *cdi_dir; /* NULL: no CDI */
        struct kube_alloc_config alloc;
        struct xp_kube_mount *mounts;
        struct xp_node_inventory *inventory;
        struct xp_device_health_watch *watch;
        struct kube_resource *resources;
        size_t n_resources;
        const char **names;              /* the resource names, for xp_kube_plugin_resources() */
        struct kube_endpoint *endpoints; /* one per resource */
        struct kube_loop *loop;
        int inotify_fd;
        bool check_sockets;
        int64_t next_check_ms;
        unsigned reg_calls; /* Register calls in flight */
};

/* The DevicePlugin service's methods (plugin_rpc.c), for kube_server_start(). */
extern const struct kube_method kube_plugin_methods[];
extern const size_t kube_plugin_n_methods;
void kube_plugin_on_close(void *userdata, struct kube_call *call);
/* Streams the current list to every open ListAndWatch of ep. */
void kube_endpoint_broadcast(struct kube_endpoint *ep);

/* Starts a Register call for ep (plugin_register.c); its end updates ep->reg. */
void kube_register_start(struct kube_endpoint *ep, ino_t kubelet_ino, int64_t now_ms);
/* Cancels ep's Register call, if any (its completion still comes through the loop). */
void kube_register_cancel(struct kube_endpoint *ep);
/* A registration the kubelet refused (or that could not be sent) is due again: its back-off
 * has ended. The run loop then checks the sockets at once rather than at the next periodic
 * check. */
bool kube_register_due(const struct kube_endpoint *ep, int64_t now_ms);
