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
#include "xpool/contain.h"
#include "xpool/error.h"
#include "xpool/image.h"
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

/* The runtime class every node knows: a process of the node, on its own file system. */
#define XP_RUNTIME_CLASS_PROCESS "process"

/* A runtime class (runtimeClassName) of this node: the process runtime, or an OCI runtime. */
struct xp_runtime_class {
        const char *name; /* a DNS label: "crun", "runc", "kata", "process" */
        const char *path; /* the OCI runtime's executable; NULL: the process runtime */
};

/* What this node allows and can do: the agent's flags and its runtime's isolation. */
struct xp_launch_policy {
        bool allow_privileged;         /* --allow-privileged */
        bool allow_degraded_isolation; /* --allow-degraded-isolation */
        unsigned isolation;            /* xp_runtime_isolation(): XP_ISOLATION_* bits */
        uid_t default_uid;             /* who a container runs as without runAsUser (the agent) */
        const char *node_name;         /* for messages */
        /* runtimeClassName's classes (--runtime-class) and the one of pods that name none
         * (--default-runtime); none: every pod runs as processes */
        const struct xp_runtime_class *runtime_classes;
        size_t n_runtime_classes;
        const char *default_runtime;
        /* hostPath volumes must be below one of these (--allow-host-path), NULL-terminated;
         * NULL: none is allowed */
        const char *const *allowed_host_paths;
        /* the agent's data directory: DATA/volumes/<uid>/<volume> holds a pod's configMap,
         * secret and projected volumes (podconfig_mount.c) */
        const char *data_dir;
        /* why pods cannot get a network of their own on this node (NULL: they can, or every
         * pod is on the node's network by the operator's choice) */
        const char *network_unavailable;
        /* the API server's host (an IPv6 address without brackets) and port as pods reach it:
         * the address the agent forwards (apiaddr.c), else the agent's own, from its URL split
         * once at start: every container's KUBERNETES_SERVICE_HOST and _PORT (launch_svcenv.c);
         * host NULL: none are set */
        const char *api_host;
        unsigned api_port;
};

/* What a container that runs from its image runs from (xp_launch_build_image()). */
struct xp_launch_image {
        const struct xp_runtime_class *runtime; /* an OCI runtime */
        const struct xp_image *image;           /* its config (include/xpool/image.h) */
        char *const *layers;                    /* its layers, bottom first, NULL-terminated */
};

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
        char *cpuset;              /* limits.cpuset_cpus */
        struct xp_contain contain; /* launch.contain */
        /* a container that runs from its image (launch.oci) */
        struct xp_container_oci oci;
        struct xp_container_mount *mounts; /* oci.mounts */
        char **cdi_devices;                /* oci.cdi_devices */
        gid_t *supplemental;               /* oci.user.supplemental */
        char *hostname;
        char *host_domain; /* oci.host_domain */
        char *image_id;    /* oci.image_id */
        char *image_ref;   /* oci.image_ref */
};

/*
 * The launch of one container of pod on node: argv (command+args, $(VAR) expansion as
 * Kubernetes), env (spec env + valueFrom fieldRef for metadata.name/namespace/uid, spec.nodeName,
 * status.hostIP, metadata.labels['x'], metadata.annotations['x'] and resourceFieldRef, +
 * xp_devenv_build() of the placement annotation, + XPOOL_POD_NAME/XPOOL_POD_NAMESPACE/
 * XPOOL_POD_UID/XPOOL_NODE_NAME, + PATH/HOME defaults, + the `kubernetes` Service's variables for
 * policy->api_host and api_port), working dir, user, and limits: cpu millis
 * from limits.cpu, memory from limits.memory, pids_max, cpuset from the placement's cpus,
 * restrict_devices with the default device set (null, zero, full, random, urandom, tty, console,
 * ptmx) + the device nodes of the allocated devices + the vendor's shared control nodes of those
 * devices (nvidiactl, nvidia-uvm, ...), major:minor from lookup. Only a container that requests
 * device resources gets the placement's devices; every container gets its cpus.
 *
 * The container is contained as its securityContext says (xp_launch_contain()); a privileged one
 * may open every device.
 *
 * node may be NULL (no devices then); policy NULL: nothing allowed beyond the defaults, the agent
 * root. Caller frees *ret with xp_launch_free(). -ENOENT when the pod has no such container;
 * -EINVAL with err naming the field for what cannot be run (no command, valueFrom of Secrets or
 * ConfigMaps, a missing or malformed placement annotation on a pod that asks for devices, a
 * device the node does not list); -EPERM with the kubelet's message for a securityContext the
 * node refuses (CreateContainerConfigError: runAsNonRoot as root, an unknown capability, ...);
 * the lookup's -errno; -ENOMEM.
 */
int xp_launch_build(const struct xp_pod *pod,
                    const char *container,
                    bool init,
                    unsigned attempt,
                    const struct xp_node *node,
                    xp_launch_dev_lookup_fn lookup,
                    void *userdata,
                    uint64_t pids_max,
                    const struct xp_launch_policy *policy,
                    struct xp_launch **ret,
                    struct xp_error *err);
/*
 * As xp_launch_build() for a container that runs from its image under an OCI runtime
 * (launch.oci): argv from the image's Entrypoint and Cmd with the container's command and args
 * as Kubernetes combines them (command replaces Entrypoint and drops Cmd; args replace Cmd);
 * env the image's, then xpool's and the devices' and the container's over it; working directory
 * the container's, else the image's; the user runAsUser/runAsGroup, else the image's User; the
 * devices of the placement as CDI names (the runtime injects them from the node's CDI specs);
 * the pod's emptyDir and hostPath volumes as volumeMounts mount them. -EINVAL for what cannot
 * run (no command at all: the image has neither Entrypoint nor Cmd); -EPERM with the message
 * for what the node refuses (a hostPath outside --allow-host-path, a volume kind xpool does not
 * serve, runAsNonRoot with an image whose user is root or a name).
 */
int xp_launch_build_image(const struct xp_pod *pod,
                          const char *container,
                          bool init,
                          unsigned attempt,
                          const struct xp_node *node,
                          uint64_t pids_max,
                          const struct xp_launch_policy *policy,
                          const struct xp_launch_image *image,
                          struct xp_launch **ret,
                          struct xp_error *err);
void xp_launch_free(struct xp_launch *l);
XP_DEFINE_FREEP(struct xp_launch, xp_launch_free)

/*
 * The runtime class pod runs under: its runtimeClassName, else policy's default_runtime; the
 * process runtime when policy has no classes. -ENOENT with err naming the class and the node's
 * classes when the node has no such class.
 */
int xp_launch_runtime_class(const struct xp_pod *pod,
                            const struct xp_launch_policy *policy,
                            const struct xp_runtime_class **ret,
                            struct xp_error *err);
/* Whether the class is an OCI runtime's (its containers run from their images). */
bool xp_launch_runs_images(const struct xp_runtime_class *cls);

/* Whether the pod's containers run pinned to CPUs (its placement names some): their groups then
 * have a cpuset directory. False when the annotation is missing or malformed (the start says
 * what is wrong with it). */
bool xp_launch_pinned(const struct xp_pod *pod);

/* Whether c asks for a device resource (an extended resource); *which names the first. */
bool xp_launch_requests_devices(const struct xp_container *c, const char **which);

/* ---- launch_contain.c: the securityContext, as the kubelet and containerd read it ------------ */

/*
 * The user a container runs as: runAsUser/runAsGroup of the container, else of the pod. -EINVAL
 * for runAsGroup without runAsUser (there is no image to take the user from) or ids out of
 * range; -EPERM with the kubelet's message when runAsNonRoot is true and it would run as root.
 */
int xp_launch_user(const struct xp_pod *pod,
                   const struct xp_container *c,
                   const char *cpath,
                   const struct xp_launch_policy *policy,
                   struct xp_launch *l,
                   struct xp_error *err);

/*
 * l->contain from c's securityContext, the pod's as defaults (seccompProfile): capabilities
 * (xp_caps_compute()), no_new_privs unless allowPrivilegeEscalation is true or the container is
 * privileged (stricter than Kubernetes, where it is set only when allowPrivilegeEscalation is
 * false: docs/security.md says why), readOnlyRootFilesystem, the seccomp filter unless
 * Unconfined or privileged. -EPERM with the message for what the node refuses: a privileged
 * container where policy does not allow it, Localhost seccomp profiles, an unknown capability,
 * allowPrivilegeEscalation false beside privileged or CAP_SYS_ADMIN (as the API server would).
 */
int xp_launch_contain(const struct xp_pod *pod,
                      const struct xp_container *c,
                      const char *cpath,
                      const struct xp_launch_policy *policy,
                      struct xp_launch *l,
                      struct xp_error *err);

/*
 * Whether this node runs the pod at all, as the kubelet admits pods: 0, or -EPERM with
 * *ret_reason (the pod status reason: PrivilegedNotAllowed, IsolationDegraded,
 * NetworkUnavailable) and err holding the message. A privileged container needs
 * policy->allow_privileged; resource limits need cgroups and device resources a device filter
 * too, and a pod without hostNetwork a pod network, unless policy->allow_degraded_isolation.
 */
int xp_launch_admit(const struct xp_pod *pod,
                    const struct xp_launch_policy *policy,
                    const char **ret_reason,
                    struct xp_error *err);
