/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Local ephemeral storage (docs/agent.md, "Local ephemeral storage"): what each pod writes to
 * the node's disk, measured every housekeeping interval, and the kubelet's eviction of a pod
 * whose emptyDir volume passes its sizeLimit, or whose containers pass their ephemeral-storage
 * limits. The decisions (xp_agent_ephemeral_verdict) are pure; the walk (xp_agent_disk_usage)
 * reads the file system only; the housekeeping thread ties them to the agent's pods.
 */

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct xp_agent;

/* The directories a walk descends below its start. */
#define XP_DISK_WALK_MAX_DEPTH 64

/* What one walk may visit: the entries it stat()s in all, and the depth it descends. */
struct xp_disk_walk {
        size_t max_entries; /* 0: nothing is walked */
        size_t entries;     /* counted: those stat()ed so far */
        bool truncated;     /* an entry or a directory was left out for the bounds */
        bool too_deep;      /* a directory deeper than XP_DISK_WALK_MAX_DEPTH was left out */
        bool remove;        /* what is counted is removed too (path itself is kept) */
};

/*
 * The bytes the files below path occupy (st_blocks * 512, as du counts them), added to *bytes:
 * symbolic links are not followed and directories on another file system (mount points) not
 * entered. A missing path adds nothing. -errno of path's own open when it exists but cannot be
 * read.
 */
int xp_agent_disk_usage(const char *path, struct xp_disk_walk *walk, uint64_t *bytes);

/* A pod's measured use: each on-disk emptyDir volume's, each container's (writable layer and
 * logs). Names borrowed from the pod. */
struct xp_pod_disk_use {
        struct {
                const char *name;
                uint64_t bytes;
        } volumes[64], containers[64];
        size_t n_volumes, n_containers;
        /* the walk left something out (a pod hiding files below the bounds): with a limit the
         * pod is over it, and under pressure it ranks as over its request */
        bool truncated, too_deep;
        size_t max_entries; /* the walk's entry bound, for the message */
};

/* The entries one pod's walk may stat in a pass of pass_max entries over n_pods: a share each,
 * and at least floor, so one pod with many files does not starve the others. */
size_t xp_agent_pod_walk_budget(size_t pass_max, size_t floor, size_t n_pods);

/*
 * Whether the pod is to be evicted for its use, as the kubelet decides it in this order: an
 * emptyDir volume over its sizeLimit, the pod over the sum of its containers'
 * ephemeral-storage limits, one container over its own; then a pod with a limit whose walk was
 * truncated (use->truncated), as its use is more than the agent measures. 1 with *ret_message
 * (caller frees) in the kubelet's words, 0 when within its limits, -ENOMEM.
 */
int xp_agent_ephemeral_verdict(const json_t *pod,
                               const struct xp_pod_disk_use *use,
                               char **ret_message);

/* The priority from which a pod is critical (system-cluster-critical, system-node-critical). */
#define XP_SYSTEM_CRITICAL_PRIORITY 2000000000

/* Whether the agent may evict pod for its disk use, as the kubelet's evictPod refuses to evict
 * a critical pod (spec.priority >= XP_SYSTEM_CRITICAL_PRIORITY), for a limit or for pressure. */
bool xp_agent_pod_evictable(const json_t *pod);

/* The housekeeping thread: every --housekeeping-interval it measures the pods and evicts. */
void *xp_agent_housekeeping_thread(void *agent);

/* ---- node pressure: the node file system's free space ---------------------------------------- */

#include "xpool/error.h"

/* --eviction-hard's nodefs.available threshold: a share of the file system, or bytes. */
struct xp_disk_threshold {
        bool percent;
        double share;  /* percent: 0 < share < 100 */
        int64_t bytes; /* otherwise */
        char text[48]; /* as given after '<', for the message */
};

/*
 * The kubelet's --eviction-hard list ("nodefs.available<10%", "nodefs.available<2Gi", several
 * separated by ','): the nodefs.available signal into *ret. -EINVAL with err saying which part
 * is bad; another signal (memory.available, imagefs.*, ...) is refused by name, as the agent
 * does not watch it.
 */
int xp_agent_eviction_hard_parse(const char *text,
                                 struct xp_disk_threshold *ret,
                                 struct xp_error *err);

/* The threshold in bytes of a file system of total bytes. */
uint64_t xp_agent_threshold_bytes(const struct xp_disk_threshold *t, uint64_t total);

/* One pod as the node-pressure ranking sees it. */
struct xp_disk_candidate {
        const char *uid;
        int64_t priority; /* spec.priority, 0 when unset */
        uint64_t usage;   /* its local ephemeral storage use */
        uint64_t request; /* its containers' requests.ephemeral-storage summed */
};

/* Sorts pods in the kubelet's order of eviction under disk pressure (rankDiskPressureFunc): those
 * using more than they requested first, then lower priority first, then larger use beyond the
 * request first. */
void xp_agent_rank_disk_pressure(struct xp_disk_candidate *pods, size_t n);

/* The eviction message under disk pressure, as the kubelet words it. Caller frees; NULL: -ENOMEM.
 */
char *xp_agent_disk_pressure_message(uint64_t threshold_bytes, uint64_t available_bytes);

/*
 * Sets the DiskPressure condition of conditions (the Node's, xp_agent_node_conditions()) to the
 * kubelet's True (KubeletHasDiskPressure) when pressure, and its lastTransitionTime to since
 * (RFC 3339) unless NULL (the pressure never changed). -ENOMEM.
 */
int xp_agent_disk_pressure_condition(json_t *conditions, bool pressure, const char *since);

/* ---- the running agent (housekeeping.c, nodepressure.c) ---------------------------------------
 */

/* Evicts pod (its status Failed/Evicted with message, and the Event when first). */
void xp_agent_disk_evict(struct xp_agent *a, const json_t *pod, const char *message, bool first);

/* The node's pass: its file system against --eviction-hard, DiskPressure and its taint, and
 * under pressure, when evicted (the pods evicted here whose cleanup is not over yet) is empty, the
 * eviction of the first of pods (n, ranked here); its uid is added to evicted. pods is the pass's
 * list of pod JSON. */
void xp_agent_node_pressure(struct xp_agent *a,
                            const json_t *pods,
                            struct xp_disk_candidate *ranked,
                            size_t n,
                            json_t *evicted);

struct xp_agent_pressure;

/* From --eviction-hard (NULL: nodefs.available<10%). -EINVAL with err, -ENOMEM. */
int xp_agent_pressure_new(const char *eviction_hard,
                          struct xp_agent_pressure **ret,
                          struct xp_error *err);
void xp_agent_pressure_free(struct xp_agent_pressure *p);
/* Whether the Node's DiskPressure condition does not say the pressure there is now. */
bool xp_agent_pressure_changed(struct xp_agent *a);
/* For the Node status the lease thread writes: DiskPressure in conditions as it is now;
 * *ret_pressure what it says, for xp_agent_pressure_published() once the status landed.
 * -ENOMEM. */
int xp_agent_pressure_node(struct xp_agent *a, json_t *conditions, bool *ret_pressure);
/* capacity and allocatable ephemeral-storage of the Node's status, as the kubelet reports them:
 * the size of the data directory's file system, less the hard eviction threshold. -ENOMEM. */
int xp_agent_pressure_capacity(struct xp_agent *a, json_t *status);
void xp_agent_pressure_published(struct xp_agent *a, bool pressure);
