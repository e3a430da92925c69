/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The OCI runtime path beside the process runtime (docs/containers.md): the agent's side builds a
 * bundle (config.json from the launch, the pod's files, the CDI edits: oci_config.c, oci_pod.c,
 * oci_cdi.c, oci_start.c), and the container's shim mounts its overlay root file system in a mount
 * namespace of its own and drives the OCI runtime (create, start, delete) on it (oci_shim.c).
 *
 *   STATE/<pod uid>/<container>/bundle/config.json    the OCI runtime spec
 *   STATE/<pod uid>/<container>/bundle/rootfs          the overlay's mount point (in the shim's
 *                                                      mount namespace only: nothing to leak)
 *   STATE/<pod uid>/<container>/bundle/upper, work     the overlay's writable layer
 *   STATE/<pod uid>/<container>/bundle/runtime.log     the OCI runtime's own messages (JSON)
 *   STATE/.pods/<pod uid>/hosts, hostname, resolv.conf the files every container of the pod sees
 *   STATE/.pods/<pod uid>/volumes/<name>               its emptyDir volumes
 *   STATE/.oci/<runtime class>/                        the OCI runtime's state (--root)
 *   IPC_DIR/<pod uid>                                  the pod's IPC namespace, pinned by a bind
 *                                                      mount as CRI-O's pinns pins them (outside
 *                                                      the data directory: removing that is
 *                                                      never refused for a pod's mount)
 */

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "xpool/cgroup.h"
#include "xpool/error.h"
#include "xpool/runtime.h"

#define OCI_SPEC_KEY         "oci"    /* spec.json's object for a container run by an OCI runtime */
#define OCI_BUNDLE           "bundle" /* the bundle directory in the container's state directory */
#define OCI_PODS_DIR         ".pods"  /* below the state directory: the pods' own files */
#define OCI_RUNTIME_DIR      ".oci"   /* below the state directory: the runtimes' state, AppArmor */
#define OCI_APPARMOR_PROFILE "xpool-default"

/* ---- oci_seccomp.c -------------------------------------------------------------------------- */

/* The runtime/default seccomp profile for a container whose effective set is effective, as OCI
 * seccomp JSON (linux.seccomp), from the same rule table as the process runtime's filter. */
json_t *oci_seccomp_json(uint64_t effective);

/* ---- oci_config.c --------------------------------------------------------------------------- */

struct oci_config_in {
        const struct xp_container_launch *launch; /* argv, env, working_dir, oci */
        const struct xp_contain *contain;         /* as this machine applies it */
        const struct xp_cgroup_limits *limits;    /* with the CDI device nodes allowed; NULL */
        const char *cgroups_path;                 /* linux.cgroupsPath; NULL: none */
        const char *ipc_path;                     /* the pod's IPC namespace; NULL: a new one */
        const char *pod_dir;                      /* hosts, hostname, resolv.conf; NULL: none */
        char *const *mount_sources;               /* the node's path of each oci->mounts[i] */
        const json_t *cdi;                        /* merged CDI edits, device nodes filled */
        const char *apparmor;                     /* the profile; NULL: none */
        const char *const *hide;                  /* the node's secrets (NULL-terminated) */
        bool cgroup2;                             /* the node's cgroups are v2 */
        uint64_t node_caps;                       /* the node root's: every set is cut to these */
};

/*
 * The OCI runtime spec (config.json) of one container: process (args, env, cwd, a user of 0:0
 * that the shim resolves, capabilities, noNewPrivileges, AppArmor), root (rootfs, readonly),
 * hostname, mounts (the kernel file systems, the pod's files, volumes, CDI mounts), hooks (CDI),
 * linux (pid, mount, ipc, uts, cgroup namespaces and the network one by path, cgroupsPath and
 * resources from limits, CDI devices, masked and read-only paths, seccomp). Pure. -EINVAL with
 * err for a volume whose source is one of the node's secrets; -ENOMEM.
 */
int oci_config_build(const struct oci_config_in *in, json_t **ret, struct xp_error *err);

/* ---- oci_cdi.c ------------------------------------------------------------------------------ */

/*
 * The merged edits of names from the specs in dir (xp_cdi_resolve()), each device node's type,
 * major, minor and mode filled from its host path where the spec leaves them out. -errno + err
 * (a device no spec defines, a node missing on the host).
 */
int oci_cdi_edits(const char *dir, char *const *names, json_t **ret, struct xp_error *err);

/*
 * limits (copied into *ret, its devices in a new array *ret_devices the caller frees) with every
 * CDI device node of edits allowed as its spec's permissions say (none where limits do not
 * restrict devices: a privileged container). -ENOMEM, -E2BIG.
 */
int oci_cdi_allow(const struct xp_cgroup_limits *limits,
                  const json_t *edits,
                  struct xp_cgroup_limits *ret,
                  struct xp_cgroup_device **ret_devices,
                  struct xp_error *err);

/* ---- oci_pod.c ------------------------------------------------------------------------------ */

/* The IPC namespace of pod uid (process and image pods alike), made once (a process cloned into
 * a new one binds /proc/self/ns/ipc to IPC_DIR/<uid>): *ret_ipc its pin (caller frees). Called
 * under the runtime's pods_lock. -errno + err. */
int oci_pod_ipc(const char *ipc_dir, const char *uid, char **ret_ipc, struct xp_error *err);
/*
 * The pod's own files for one of its containers (STATE/.pods/<uid>): its IPC namespace made
 * once (a process cloned into a new one binds /proc/self/ns/ipc to IPC_DIR/<uid>), hosts,
 * hostname and resolv.conf, its emptyDir volumes (a memory one a tmpfs). *ret_dir: the pod
 * directory, *ret_ipc: its IPC namespace (caller frees both). -errno + err.
 */
int oci_pod_prepare(const char *state_dir,
                    const char *ipc_dir,
                    const struct xp_container_launch *l,
                    char **ret_dir,
                    char **ret_ipc,
                    struct xp_error *err);
/* The pod directory STATE/.pods/<uid> (*ret_dir, caller frees) with the emptyDir volumes of
 * mounts made (a memory one a tmpfs), for a process pod: no IPC namespace, no hosts files (a
 * process container sees the node's). -errno + err. */
int oci_pod_volumes(const char *state_dir,
                    const char *uid,
                    const struct xp_container_mount *mounts,
                    size_t n_mounts,
                    char **ret_dir,
                    struct xp_error *err);
/* The node path of a mount (an emptyDir's directory, a hostPath resolved and checked), with its
 * subPath; made for the *OrCreate types. *ret caller frees. -errno + err. */
int oci_mount_source(const char *pod_dir,
                     const struct xp_container_mount *m,
                     char **ret,
                     struct xp_error *err);
/* oci_mount_source() of each of mounts, into *ret (n_mounts entries; oci_sources_free()). */
int oci_mount_sources(const char *pod_dir,
                      const struct xp_container_mount *mounts,
                      size_t n_mounts,
                      char ***ret,
                      struct xp_error *err);
void oci_sources_free(char **sources, size_t n);
/* Unmounts and removes the pin IPC_DIR/<uid> (and XP_RUNTIME_IPC_DIR/<uid>): the namespace, with
 * its message queues and shared memory, ends with its last process. Missing is fine. */
void oci_pod_ipc_release(const char *ipc_dir, const char *uid);
/* Unmounts and removes STATE/.pods/<uid> and IPC_DIR/<uid>. */
int oci_pod_remove(const char *state_dir,
                   const char *ipc_dir,
                   const char *uid,
                   struct xp_error *err);

/* ---- oci_apparmor.c ------------------------------------------------------------------------- */

/*
 * Loads xpool's default profile (OCI_APPARMOR_PROFILE) where AppArmor is enabled, writing it to
 * dir first: 1 when loaded, 0 when AppArmor is not enabled (*why says so), -errno with err when
 * it is and the profile cannot be loaded (no apparmor_parser, refused).
 */
int oci_apparmor_load(const char *dir, const char **why, struct xp_error *err);
/* The profile's text (static). */
const char *oci_apparmor_profile_text(void);

/* ---- oci_start.c: the agent's side of a start ----------------------------------------------- */

/* What the runtime knows that a start needs. */
struct oci_runtime_view {
        const char *state_dir, *cdi_dir, *ipc_dir;
        const char *const *hide;
        const char *const *detach; /* mount points no container keeps (the pods' networks) */
        bool cgroups, cgroup2;
        const char *cgroup_parent; /* of the pods' groups (xp_runtime_cgroup_parent()) */
        bool apparmor;             /* the default profile is loaded */
        bool overlay;              /* the kernel knows overlayfs */
        unsigned isolation;
        pthread_mutex_t *pods_lock; /* the pods' own files are made by one start at a time */
};

/*
 * Prepares the start of an OCI container in its state directory dir: the pod's files, a fresh
 * bundle (config.json), and *ret_oci: the spec's "oci" object for the shim; *limits_out: the
 * limits with the CDI device nodes (its devices array in *ret_devices, caller frees). -errno +
 * err; nothing is left behind on failure but an empty bundle.
 */
int oci_start_prepare(const struct oci_runtime_view *v,
                      const struct xp_container_launch *l,
                      const struct xp_contain *contain,
                      const char *dir,
                      json_t **ret_oci,
                      struct xp_cgroup_limits *limits_out,
                      struct xp_cgroup_device **ret_devices,
                      struct xp_error *err);

/*
 * What an OCI container leaves once its shim is gone: its runtime state (`RUNTIME delete
 * --force`, which also ends what is left of it) and its bundle. spec is the container's
 * spec.json. Best effort.
 */
void oci_cleanup(const char *dir, const json_t *spec);

/* Removes dir and everything below it (not crossing into mounts). -errno. */
int oci_rm_rf(const char *dir);
