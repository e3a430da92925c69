/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * What the runtime needs to start one container of a pod: argv, env, working dir, user and
 * cgroup limits, built from the pod spec, its placement annotation and the node. Pure apart from
 * the device lookup callback: no I/O of its own, no globals.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "xpool/cgroup.h"
#include "xpool/error.h"
#include "xpool/object.h"
#include "xpool/runtime.h"

/* Most arguments and environment variables one container may have. */
#define XP_LAUNCH_ARGS_MAX 4096
#define XP_LAUNCH_ENV_MAX  4096

/*
 * Fills *ret with the device node at path ('c' or 'b', major, minor; access is set by the
 * caller). -ENOENT when there is no such node (it is then left out); any other -errno fails the
 * build.
 */
typedef int (*xp_launch_dev_lookup_fn)(const char *path,
                                       struct xp_cgroup_device *ret,
                                       void *userdata);

/* Owns everything `launch` points to; pod and node are not referenced after the build except
 * for launch.pod_uid/pod_namespace/pod_name/container/working_dir, borrowed from the pod (keep
 * it alive while the launch is used). */
struct xp_launch {
        struct xp_container_launch launch;
        struct xp_cgroup_limits limits;
        char **argv;                      /* NULL-terminated */
        char **env;                       /* NULL-terminated "NAME=value", one per name */
        struct xp_cgroup_device *devices; /* limits.devices */
        size_t n_devices;
        char *cpuset; /* limits.cpuset_cpus */
};

/*
 * The launch of one container of pod on node: argv (command+args, $(VAR) expansion as
 * Kubernetes), env (spec env + valueFrom fieldRef for metadata.name/namespace/uid, spec.nodeName,
 * status.hostIP, metadata.labels['x'], metadata.annotations['x'] and resourceFieldRef, +
 * xp_devenv_build() of the placement annotation, + XPOOL_POD_NAME/XPOOL_POD_NAMESPACE/
 * XPOOL_POD_UID/XPOOL_NODE_NAME, + PATH/HOME defaults), working dir, user, and limits: cpu millis
 * from limits.cpu, memory from limits.memory, pids_max, cpuset from the placement's cpus,
 * restrict_devices with the default device set (null, zero, full, random, urandom, tty, console,
 * ptmx) + the device nodes of the allocated devices + the vendor's shared control nodes of those
 * devices (nvidiactl, nvidia-uvm, ...), major:minor from lookup. Only a container that requests
 * device resources gets the placement's devices; every container gets its cpus.
 *
 * node may be NULL (no devices then). Caller frees *ret with xp_launch_free(). -ENOENT when the
 * pod has no such container; -EINVAL with err naming the field for what cannot be run (no
 * command, valueFrom of Secrets or ConfigMaps, a missing or malformed placement annotation on a
 * pod that asks for devices, a device the node does not list); the lookup's -errno; -ENOMEM.
 */
int xp_launch_build(const struct xp_pod *pod,
                    const char *container,
                    bool init,
                    unsigned attempt,
                    const struct xp_node *node,
                    xp_launch_dev_lookup_fn lookup,
                    void *userdata,
                    uint64_t pids_max,
                    struct xp_launch **ret,
                    struct xp_error *err);
void xp_launch_free(struct xp_launch *l);
XP_DEFINE_FREEP(struct xp_launch, xp_launch_free)
