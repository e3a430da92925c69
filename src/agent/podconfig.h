/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * A container's ConfigMaps and Secrets, as the kubelet uses them (podconfig.c: env and envFrom;
 * podconfig_volumes.c: configMap, secret and projected volumes written into the pod's
 * directory). The agent asks before each start (podconfig_gate.c): a missing object or key holds
 * the container with CreateContainerConfigError and the kubelet's message until it appears.
 */

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "xpool/error.h"
#include "xpool/object.h"

/* The waiting reason of a container whose ConfigMap or Secret is missing. */
#define XP_PODCONFIG_REASON "CreateContainerConfigError"

/*
 * Reads an object ("configmaps" or "secrets") of namespace ns: 0 with *ret (a new reference),
 * -ENOENT when there is none, another -errno with err when it could not be read.
 */
typedef int (*xp_podconfig_get_fn)(const char *resource,
                                   const char *ns,
                                   const char *name,
                                   json_t **ret,
                                   void *userdata,
                                   struct xp_error *err);

/*
 * A token of the pod's service account for audience (NULL: the API server's), living seconds,
 * bound to the pod (pod: its JSON, borrowed): 0 with *ret (caller frees), -errno with err.
 */
typedef int (*xp_podconfig_token_fn)(const json_t *pod,
                                     const char *audience,
                                     int64_t seconds,
                                     void *userdata,
                                     char **ret,
                                     struct xp_error *err);

/* The objects a start read, by "resource/name", so that each is read once. */
struct xp_podconfig_reader {
        xp_podconfig_get_fn get;
        void *userdata;
        /* projected serviceAccountToken sources (NULL: refused), and the pod they are for */
        xp_podconfig_token_fn token;
        void *token_userdata;
        const json_t *pod_json;
        const char *ns;
        json_t *seen; /* "resource/name" -> object, or null when missing */
        /* downwardAPI volumes and sources: the pod and its node (a missing limit is the node's
         * allocatable; NULL: none) */
        const struct xp_pod *pod;
        const struct xp_node *node;
};

/* The object (borrowed from r->seen), NULL when missing (-ENOENT), or -errno with err. */
int xp_podconfig_read(struct xp_podconfig_reader *r,
                      const char *resource,
                      const char *name,
                      const json_t **ret,
                      struct xp_error *err);

/* A value of a ConfigMap's data or binaryData, or a Secret's data decoded: *ret (caller frees,
 * NUL-terminated, *ret_len bytes); -ENOENT when the key is not there. */
int xp_podconfig_value(
    const char *resource, const json_t *object, const char *key, char **ret, size_t *ret_len);

/*
 * The pod (a deep copy in *ret_pod) whose container (an init container when init) has its
 * envFrom and valueFrom configMapKeyRef/secretKeyRef replaced by plain values (escaped from $(VAR)
 * expansion, which Kubernetes does not apply to them), in the kubelet's order: envFrom first,
 * env over it. 1 when ready; 0 when it must wait, with *ret_wait the kubelet's message
 * (`configmap "x" not found`, `couldn't find key k in ConfigMap ns/x`; caller frees); -errno with
 * err. *ret_invalid (caller frees; NULL when none): the InvalidEnvironmentVariableNames events'
 * messages, one a line, for envFrom keys that are no variable names (skipped).
 */
int xp_podconfig_env(const json_t *pod,
                     const char *container,
                     bool init,
                     struct xp_podconfig_reader *reader,
                     json_t **ret_pod,
                     char **ret_wait,
                     char **ret_invalid,
                     struct xp_error *err);

/* ---- podconfig_downward.c: the downward API -------------------------------------------------- */

/* The fieldPaths env valueFrom.fieldRef takes, for messages. */
#define XP_DOWNWARD_ENV_PATHS                                                                      \
        "metadata.name, metadata.namespace, metadata.uid, metadata.labels['KEY'], "                \
        "metadata.annotations['KEY'], spec.nodeName, spec.serviceAccountName, status.hostIP, "     \
        "status.hostIPs, status.podIP, status.podIPs"

/*
 * The value of fieldPath path of pod into *ret (caller frees): for env (volume false) the paths
 * of XP_DOWNWARD_ENV_PATHS; for a downwardAPI volume's file the metadata ones, with
 * metadata.labels and metadata.annotations whole (key="value" lines, sorted). -EINVAL for a path
 * not supported there, -ENOMEM.
 */
int xp_downward_field(const struct xp_pod *pod,
                      const struct xp_node *node,
                      const char *path,
                      bool volume,
                      char **ret);

/*
 * A resourceFieldRef (ref: {containerName, resource, divisor}) of container self (or the one it
 * names) as the kubelet computes it: ceil(value / divisor); a missing limit is the node's
 * allocatable, a missing request the limit. -EINVAL with err (at where) for what is not one.
 */
int xp_downward_resource(const struct xp_pod *pod,
                         const struct xp_container *self,
                         const struct xp_node *node,
                         const json_t *ref,
                         const char *where,
                         char **ret,
                         struct xp_error *err);

/* ---- podconfig_gate.c: the agent's step before a start ------------------------------------- */

struct xp_agent;
struct xp_podsync_memory;
struct xp_agent_pull_pod;

/*
 * Before START of container (init: an init container) of pod: 1 to start, with *ret_pod the pod
 * to start from (its env resolved; NULL: the pod as it is, it names no ConfigMap or Secret);
 * 0 when it is held in m with CreateContainerConfigError and the kubelet's message (looked at
 * again a second later, xp_podsync_release_due()); -ENOMEM.
 */
int xp_agent_config_gate(struct xp_agent *agent,
                         const struct xp_agent_pull_pod *pod,
                         const char *container,
                         bool init,
                         struct xp_podsync_memory *m,
                         json_t **ret_pod);

/* Why a start is held, and the Warning Event that says so. */
struct xp_podconfig_hold {
        const char *reason;  /* the waiting reason */
        const char *message; /* the waiting message; NULL: none */
        const char *event;   /* the Event's reason (Failed, FailedMount) */
        const char *text;    /* the Event's message */
};

/* The Event, and the start held in m with h's reason, looked at again a second later (the
 * config and volume steps' shared end). -ENOMEM. */
int xp_agent_podconfig_hold(struct xp_agent *agent,
                            const struct xp_agent_pull_pod *pod,
                            const char *container,
                            bool init,
                            struct xp_podsync_memory *m,
                            const struct xp_podconfig_hold *h);

/* ---- podconfig_volumes.c: configMap, secret and projected volumes as files ------------------ */

/* One file of such a volume, as the kubelet writes it. */
struct xp_podconfig_file {
        char *path; /* relative to the volume, without "." or ".." components */
        char *data;
        size_t len;
        unsigned mode; /* permission bits */
};

/* The files of one volume (caller clears with xp_podconfig_files_clear). */
struct xp_podconfig_files {
        struct xp_podconfig_file *v;
        size_t n;
};

void xp_podconfig_files_clear(struct xp_podconfig_files *f);

/*
 * The files of volume vol (an entry of the pod's spec.volumes with configMap, secret or
 * projected (its configMap and secret sources)) into *ret, as the kubelet's volume plugins
 * choose them: every key, or only items (key -> path, mode), with defaultMode (0644) otherwise.
 * 1 when ready; 0 when the volume cannot be set up yet, with *ret_wait the kubelet's FailedMount
 * message (`MountVolume.SetUp failed for volume "v" : configmap "x" not found`; caller frees);
 * -errno with err (a path that leaves the volume, a kind this is not for).
 */
int xp_podconfig_volume_files(const json_t *vol,
                              struct xp_podconfig_reader *reader,
                              struct xp_podconfig_files *ret,
                              char **ret_wait,
                              struct xp_error *err);

/* ---- podconfig_token.c: projected serviceAccountToken sources -------------------------------- */

/* The kubelet's least expirationSeconds, and its default. */
#define XP_PODCONFIG_TOKEN_SECONDS_MIN     600
#define XP_PODCONFIG_TOKEN_SECONDS_DEFAULT 3600

/* Whether a token issued at issued (s) and expiring at expires is still to be used at now: before
 * 80 % of its lifetime and 24 hours, as the kubelet's token manager renews them. */
bool xp_podconfig_token_fresh(int64_t issued, int64_t expires, int64_t now);

/* The volume kube-apiserver's ServiceAccount admission adds to every pod, and its mount. */
#define XP_PODCONFIG_SA_VOLUME_PREFIX "kube-api-access-"
#define XP_PODCONFIG_SA_MOUNT_PATH    "/var/run/secrets/kubernetes.io/serviceaccount"
/*
 * Whether volume (mounted by volume_mount) is left out on a node whose isolation bits (enum
 * xp_isolation) have no mount namespaces: that admission's projected volume at its path, which
 * the node could not bind into a process container (and, not root, not put on a tmpfs), so that
 * such a node runs its pods without the token, as it did before the admission added it. A
 * volume the pod asked for by itself is not left out.
 */
bool xp_podconfig_sa_volume_skipped(unsigned isolation,
                                    const json_t *volume,
                                    const json_t *volume_mount);

struct xp_agent;
struct xp_apiclient;
/* The token source's userdata: the agent (its cache) and a client to ask the server with. */
struct xp_agent_token_source {
        struct xp_agent *agent;
        struct xp_apiclient *client;
};
/* xp_podconfig_token_fn for the agent (userdata: a struct xp_agent_token_source): the cached
 * token while fresh, else a TokenRequest bound to the pod, with the node's token. */
int xp_agent_token_get(const json_t *pod,
                       const char *audience,
                       int64_t seconds,
                       void *userdata,
                       char **ret,
                       struct xp_error *err);
/* Drops the cached tokens of the pod of uid, whose volumes are torn down: a node that runs
 * thousands of short pods would otherwise keep each one's token until it expires. */
void xp_agent_tokens_forget(struct xp_agent *agent, const char *uid);

/* ---- podconfig_write.c: the kubelet's atomic layout ------------------------------------------ */

/*
 * Writes files into dir (made when missing) as the kubelet's atomic writer does: a new
 * timestamped directory "..<time>" holds them, the symbolic link "..data" is swapped to it by a
 * rename, each top-level name is a symbolic link "name -> ..data/name", and what the previous
 * version had and this one has not (its directory, stale top-level links) is removed. A reader
 * sees the old set or the new one, never a mix. Files the same as the current version's leave
 * it as it is. -errno with err.
 */
int xp_podconfig_write_atomic(const char *dir,
                              const struct xp_podconfig_files *files,
                              struct xp_error *err);

/* A tmpfs mounted on dir (made when missing) unless dir is on one already (its own, or the data
 * directory's): a secret or projected volume's files, as the kubelet keeps them, never reach the
 * node's disk. -errno with err. */
int xp_podconfig_tmpfs(const char *dir, struct xp_error *err);

/* Removes DATA/volumes/<uid>, what a gone pod's volumes left (their tmpfs unmounted first). */
int xp_podconfig_volumes_remove(const char *data_dir, const char *uid);

/* ---- podconfig_mount.c: the agent's volume step before a start ------------------------------ */

/* The waiting reason of a container whose configMap, secret or projected volume is not ready. */
#define XP_PODCONFIG_MOUNT_REASON "ContainerCreating"

/* podconfig_gate.c's reader of the server's objects (userdata: a struct xp_apiclient). */
int xp_agent_config_get(const char *resource,
                        const char *ns,
                        const char *name,
                        json_t **ret,
                        void *userdata,
                        struct xp_error *err);

/*
 * Before START of container (init: an init container) of pod: its configMap, secret and
 * projected volumes written into DATA/volumes/<uid>/<volume> (xp_podconfig_write_atomic); 1 to
 * start; 0 when it is held in m, ContainerCreating, with the kubelet's FailedMount Event
 * (`MountVolume.SetUp failed for volume "v" : configmap "x" not found`), looked at again a second
 * later; -ENOMEM.
 */
int xp_agent_volume_gate(struct xp_agent *agent,
                         const struct xp_agent_pull_pod *pod,
                         const char *container,
                         bool init,
                         struct xp_podsync_memory *m);

/*
 * Writes again the configMap, secret and projected volumes of pod that a start has written
 * (xp_agent_volume_gate) from their objects as they are now, the kubelet's periodic update: a
 * version that changed replaces the old one by the "..data" swap; an object that is gone or
 * unreadable leaves the files as they are.
 */
void xp_agent_volume_refresh(struct xp_agent *agent, const struct xp_agent_pull_pod *pod);
