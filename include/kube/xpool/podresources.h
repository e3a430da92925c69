/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * A client of the kubelet's pod-resources API: gRPC service v1.PodResourcesLister on a Unix
 * socket (/var/lib/kubelet/pod-resources/kubelet.sock), which tells which devices each running
 * container holds (List, Get) and which devices the kubelet may allocate at all
 * (GetAllocatableResources). The node inventory reads per-device allocation from it
 * (docs/kubernetes.md, "Device plugin").
 *
 * The answers are plain C structs (no protobuf type leaks out), owned by the caller and released
 * with the matching _done(). A client holds one gRPC channel; it is not thread-safe (one call at
 * a time per client), and each call has the client's deadline. A kubelet that is absent or
 * restarting is -ECONNREFUSED (socket missing: -ENOENT); a call past its deadline -ETIMEDOUT; a
 * reply that does not decode -EBADMSG; an RPC the kubelet does not serve (Get before 1.27 or
 * with its feature gate off) -EOPNOTSUPP; err says which socket and which RPC.
 */

#include <stdint.h>

#include "xpool/error.h"
#include "xpool/macro.h"
#include "xpool/object.h" /* XP_LIST */

#define XP_PODRES_SOCKET     "/var/lib/kubelet/pod-resources/kubelet.sock"
#define XP_PODRES_TIMEOUT_MS 10000
/* Replies larger than this are refused (-EMSGSIZE): the kubelet's own limit is 16 MiB. */
#define XP_PODRES_MESSAGE_MAX (16 << 20)

/* The devices of one resource a container holds (ContainerDevices). */
struct xp_podres_devices {
        char *resource_name; /* "nvidia.com/gpu" */
        XP_LIST(char *, ids);
        XP_LIST(int64_t, numa_nodes); /* TopologyInfo: empty when the plugin gave none */
};

struct xp_podres_container {
        char *name;
        XP_LIST(struct xp_podres_devices, devices);
        XP_LIST(int64_t, cpu_ids);    /* exclusive CPUs (static CPU manager policy) */
        XP_LIST(char *, cdi_devices); /* from dynamic resources (DRA), fully qualified */
};

struct xp_podres_pod {
        char *name;
        char *namespace;
        XP_LIST(struct xp_podres_container, containers);
};

struct xp_podres_list {
        XP_LIST(struct xp_podres_pod, pods);
};

struct xp_podres_allocatable {
        XP_LIST(struct xp_podres_devices, devices);
        XP_LIST(int64_t, cpu_ids);
};

void xp_podres_pod_done(struct xp_podres_pod *pod);
void xp_podres_list_done(struct xp_podres_list *list);
void xp_podres_allocatable_done(struct xp_podres_allocatable *alloc);

struct xp_podres_client;

/*
 * A client of the socket at path (NULL: XP_PODRES_SOCKET); timeout_ms bounds each call (0:
 * XP_PODRES_TIMEOUT_MS). Connecting is lazy: a kubelet that is not there yet is an error of the
 * first call, not of this one. -EINVAL for a path too long for a Unix socket, -ENOMEM.
 */
int xp_podres_client_new(const char *path,
                         int64_t timeout_ms,
                         struct xp_podres_client **ret,
                         struct xp_error *err);
void xp_podres_client_free(struct xp_podres_client *client);
XP_DEFINE_FREEP(struct xp_podres_client, xp_podres_client_free)

/* List: every pod the kubelet runs, with what each container holds. */
int xp_podres_list(struct xp_podres_client *client,
                   struct xp_podres_list *ret,
                   struct xp_error *err);

/* Get: one pod. -ENOENT when the kubelet does not run it. */
int xp_podres_get(struct xp_podres_client *client,
                  const char *namespace,
                  const char *name,
                  struct xp_podres_pod *ret,
                  struct xp_error *err);

/* GetAllocatableResources: the devices (and exclusive CPUs) the kubelet may hand out. */
int xp_podres_allocatable(struct xp_podres_client *client,
                          struct xp_podres_allocatable *ret,
                          struct xp_error *err);

/*
 * The pod holding device id of resource in list, or NULL when none does; borrowed from list. A
 * convenience for the per-device allocation of the inventory.
 */
const struct xp_podres_pod *
xp_podres_find_device(const struct xp_podres_list *list, const char *resource, const char *id);
