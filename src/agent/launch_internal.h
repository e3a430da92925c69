/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Shared by the launch builder's files: launch.c, launch_env.c, launch_oci.c. */

#include "launch.h"
#include "xpool/placement.h"

#define LAUNCH_DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

struct env_entry {
        char *name;
        char *value;
};

struct env_list {
        struct env_entry *items;
        size_t n;
};

void launch_env_done(struct env_list *l);
/* The value of the variable name[0..len), or NULL. */
const char *launch_env_get(const struct env_list *l, const char *name, size_t len);
/* Sets name (a later definition replaces an earlier one in place); takes value (NULL: -ENOMEM);
 * -E2BIG beyond XP_LAUNCH_ENV_MAX. */
int launch_env_set(struct env_list *l, const char *name, char *value);
/* Kubernetes' $(VAR) expansion of s over vars (caller frees); NULL when out of memory. */
char *launch_expand(const char *s, const struct env_list *vars);
/* "NAME=value" strings, NULL-terminated (xp_devenv_free()). */
int launch_env_array(const struct env_list *env, char ***ret);
/*
 * The container's environment: xpool's defaults (PATH and HOME unless it runs from an image),
 * the devices' variables of the placement devices (NULL: none), the `kubernetes` Service's
 * variables for the API server at api_host (NULL: none) and api_port, then the spec's env.
 */
int launch_env_build(const struct xp_pod *pod,
                     const struct xp_container *c,
                     const char *cpath,
                     const struct xp_node *node,
                     const struct xp_placement *devices,
                     const struct xp_launch *l,
                     bool image,
                     const char *api_host,
                     unsigned api_port,
                     struct env_list *env,
                     struct xp_error *err);

/* ---- launch_svcenv.c: the `kubernetes` Service's variables -------------------------------- */

/* KUBERNETES_SERVICE_HOST, _SERVICE_PORT, _SERVICE_PORT_HTTPS, KUBERNETES_PORT and
 * KUBERNETES_PORT_<port>_TCP(_PROTO, _PORT, _ADDR) for the API server at host (an IPv6 address
 * without brackets) and port. 0, -ENOMEM, -E2BIG. */
int launch_env_add_kubernetes(struct env_list *env, const char *host, unsigned port);

/* ---- launch_oci.c: a container that runs from its image ----------------------------------- */

/* argv, env, working directory, user, volumes and CDI devices of an OCI launch into l (its env
 * list is the pod's side: defaults, devices and the spec's; the image's goes under it). */
int launch_oci(const struct xp_pod *pod,
               const struct xp_container *c,
               const char *cpath,
               const struct xp_node *node,
               const struct xp_placement *devices,
               const struct xp_launch_policy *policy,
               const struct xp_launch_image *image,
               const struct env_list *env,
               struct xp_launch *l,
               struct xp_error *err);

/* launch_volumes.c: the container's volumeMounts of the pod's emptyDir and hostPath volumes
 * into l->mounts (l->oci.mounts). -EPERM with the message for what the node refuses. */
int launch_volumes(const struct xp_pod *pod,
                   const struct xp_container *c,
                   const char *cpath,
                   const struct xp_launch_policy *policy,
                   struct xp_launch *l,
                   struct xp_error *err);
/* A process container's volumeMounts, of every kind launch_volumes() takes, into l->mounts
 * (l->launch.mounts), which the process runtime binds in the container's mount namespace.
 * -EPERM with the message for a bad mount. */
int launch_process_volumes(const struct xp_pod *pod,
                           const struct xp_container *c,
                           const char *cpath,
                           const struct xp_launch_policy *policy,
                           struct xp_launch *l,
                           struct xp_error *err);
