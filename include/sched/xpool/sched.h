/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The scheduler core: given a snapshot of the cluster (nodes with their allocatable resources,
 * devices, device topology, NUMA layout, labels and taints; the pods already placed) and a pod,
 * decide the node and the concrete devices (and CPUs) that serve it, or say why none can, as
 * kube-scheduler says it. Pure: no I/O, no clock, no global state; deterministic for a given
 * seed. The server's scheduling loop, the benchmarks, the trace simulator and the Kubernetes
 * scheduler extender all call this same core. docs/scheduler.md is the user's view.
 *
 * Lifecycle: xp_sched_new() makes an empty snapshot; nodes and placed pods are added, changed
 * and removed incrementally as the cluster changes (the server follows its watch); each
 * xp_sched_place() answers for one pod without changing the snapshot, and xp_sched_pod_add()
 * of the pod with its placement (what the server does once the binding is written) accounts it.
 * Not thread-safe: one snapshot per thread.
 */

#include <stdbool.h>
#include <stdint.h>

#include "xpool/error.h"
#include "xpool/macro.h"
#include "xpool/object.h"
#include "xpool/placement.h"

/* Vendor-neutral requests: resources.limits[xpool.io/accelerator] = N, constrained by these
 * pod annotations (all optional). docs/scheduler.md has the syntax. */
#define XP_ACCELERATOR_RESOURCE          "xpool.io/accelerator"
#define XP_ACCELERATOR_KINDS_ANNOTATION  "xpool.io/accelerator-kinds"      /* "gpu,npu" */
#define XP_ACCELERATOR_MEMORY_ANNOTATION "xpool.io/accelerator-min-memory" /* "40Gi" */
#define XP_ACCELERATOR_TFLOPS_ANNOTATION "xpool.io/accelerator-min-tflops" /* "100" (fp16) */
#define XP_ACCELERATOR_VENDORS_ANNOTATION                                                          \
        "xpool.io/accelerator-vendors" /* "nvidia,amd": preference order */
/* Shares by device memory: resources.limits["<device resource>-memory"] = bytes (e.g.
 * "nvidia.com/gpu-memory: 20Gi", or this one for a vendor-neutral request) is a share of one
 * device with at least that much memory, ceil(bytes * 1000 / device memory) milli of the device
 * chosen on each node. */
#define XP_ACCELERATOR_MEMORY_RESOURCE "xpool.io/accelerator-memory"
/* Per-pod opt-in to require that CPUs and devices share one NUMA node ("true"). */
#define XP_NUMA_ANNOTATION "xpool.io/single-numa-node"

enum xp_sched_profile {
        XP_SCHED_SPREAD = 0, /* least-allocated: spread load (kube-scheduler's default) */
        XP_SCHED_BINPACK,    /* most-allocated: fill nodes, keep whole nodes free */
        /* The GPU-sharing policies of the FGD paper (USENIX ATC'23), as its simulator scores
         * them (docs/simulator.md): each scores a node by its CPU and GPU left, and chooses the
         * GPU of a share itself; whole devices still go through device selection. */
        XP_SCHED_RANDOM,
        XP_SCHED_DOTPROD,
        XP_SCHED_GPU_CLUSTERING,
        XP_SCHED_GPU_PACKING,
        XP_SCHED_BESTFIT,
        XP_SCHED_FGD,
        /* xpool's own: FGD's score, then CPU pods where no GPU room is left, then used nodes */
        XP_SCHED_XPOOL,
        _XP_SCHED_PROFILE_MAX,
};

#define XP_SCHED_PROFILE_NAMES                                                                     \
        "spread, binpack, random, dotprod, gpuclustering, gpupacking, bestfit, fgd, xpool"
/* The server's scheduler's profile unless configured (docs/simulator.md says why). */
#define XP_SCHEDULER_DEFAULT_PROFILE XP_SCHED_XPOOL

/* "spread", "binpack", "random", "dotprod", "gpuclustering", "gpupacking", "bestfit", "fgd",
 * "xpool"; NULL for a value out of range. */
const char *xp_sched_profile_to_string(enum xp_sched_profile profile);
/* -EINVAL for an unknown name (case-insensitive). */
int xp_sched_profile_from_string(const char *name, enum xp_sched_profile *ret);

struct xp_sched_options {
        enum xp_sched_profile profile;
        uint64_t seed; /* ties between equal nodes are broken by it, reproducibly */
        /* Stop filtering once this many feasible nodes are found (kube-scheduler's
         * percentageOfNodesToScore, as a count); 0: every node is considered. */
        unsigned feasible_nodes_to_find;
        /* Pods that ask no device (no extended resource, no device share, no single NUMA node)
         * are filtered only until xp_sched_nodes_to_score() nodes fit, from where the previous
         * placement stopped, and ranked among those, as kube-scheduler samples; device pods are
         * still ranked on every node (their topology). Off: every pod sees every node. */
        bool sample_plain_pods;
        /* When sampling: kube-scheduler's percentageOfNodesToScore, 0 adaptive, 100 every node. */
        unsigned percentage_of_nodes_to_score;
};

/* kube-scheduler's count of feasible nodes to find among n_nodes: every node under 100 or at
 * percentage >= 100; else percentage of them (0: adaptive, 50 less one per 125 nodes, at least
 * 5), at least 100. */
size_t xp_sched_nodes_to_score(size_t n_nodes, unsigned percentage);

struct xp_sched;

int xp_sched_new(const struct xp_sched_options *options, struct xp_sched **ret);
void xp_sched_free(struct xp_sched *sched);
XP_DEFINE_FREEP(struct xp_sched, xp_sched_free)

/*
 * Adds a node, or replaces the one of that name (its pods stay accounted). The node's
 * status.allocatable gives cpu, memory, pods and extended resources; status.xpool the devices,
 * links and NUMA nodes; labels, taints, spec.unschedulable and the Ready condition the rest.
 * -EINVAL for a node without a name; -ENOMEM.
 */
int xp_sched_node_set(struct xp_sched *sched, const struct xp_node *node, struct xp_error *err);
/* Removes a node; its pods stay remembered and count again if it comes back. -ENOENT. */
int xp_sched_node_remove(struct xp_sched *sched, const char *name);

/*
 * Accounts a pod bound to a node (spec.nodeName set): its requests, and the devices of its
 * placement annotation (when present; otherwise devices are taken as the selector would choose).
 * Replaces an earlier version of the same pod. -EINVAL when unbound.
 */
int xp_sched_pod_add(struct xp_sched *sched, const struct xp_pod *pod, struct xp_error *err);
/*
 * Accounts a pod as placed by xp_sched_place() (on placement->node, its devices), before it is
 * bound: the pod need not say spec.nodeName nor carry the placement annotation, so that the
 * loop assumes what it decided without a copy of the pod. Replaces an earlier version.
 */
int xp_sched_pod_assume(struct xp_sched *sched,
                        const struct xp_pod *pod,
                        const struct xp_placement *placement,
                        struct xp_error *err);
/* Forgets a pod (deleted, or finished: Succeeded/Failed pods hold nothing). -ENOENT. */
int xp_sched_pod_remove(struct xp_sched *sched, const char *namespace, const char *name);

/*
 * Places a pod. 1 with *ret filled (caller frees with xp_placement_done()), or 0 when no node
 * fits, with *ret_reason (caller frees) in kube-scheduler's words:
 *   "0/3 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 2 Insufficient
 * nvidia.com/gpu." -EINVAL when the pod's request cannot be understood (err says what: a bad
 * constraint annotation), -ENOMEM. The snapshot does not change.
 */
int xp_sched_place(struct xp_sched *sched,
                   const struct xp_pod *pod,
                   struct xp_placement *ret,
                   char **ret_reason,
                   struct xp_error *err);

/*
 * Places a pod on the named node (a scheduler extender binding where kube-scheduler chose): the
 * devices and CPUs as xp_sched_place() would give them there. 1 with *ret, 0 with *ret_reason
 * (caller frees; the node's reasons as xp_sched_evaluate() words them) when the pod does not fit
 * there, -ENOENT when the snapshot has no such node, -EINVAL as xp_sched_place(). The snapshot
 * does not change.
 */
int xp_sched_place_on(struct xp_sched *sched,
                      const struct xp_pod *pod,
                      const char *node,
                      struct xp_placement *ret,
                      char **ret_reason,
                      struct xp_error *err);

/*
 * What the core says of one node for a pod: the answer a scheduler extender gives kube-scheduler
 * for each node it is asked about (src/kube/extender*.c).
 */
struct xp_sched_verdict {
        int fit; /* 1 the pod fits; 0 it does not; -ENOENT the snapshot has no such node */
        bool
            unresolvable; /* fit 0: evicting pods would not help (unschedulable, affinity, taint) */
        bool best;        /* scored: the node xp_sched_place() would choose among those asked */
        /* fit 0: kube-scheduler's words without a count, "Insufficient nvidia.com/gpu" (several
         * joined by ", "), borrowed from the set; else NULL */
        const char *reason;
        int64_t score; /* scored, fit 1: the profile's weighted score, >= 0; higher is better */
};

/* The verdicts of one evaluation: items[i] for names[i]. */
struct xp_sched_verdicts {
        struct xp_sched_verdict *items;
        size_t n;
        char **texts; /* the distinct reasons the items point to (most nodes share a few) */
        size_t n_texts;
};

/* xp_sched_evaluate() flags. */
#define XP_SCHED_EVALUATE_SCORE 1u /* score the nodes that fit, as xp_sched_place() ranks them */
/* judge every node with the full filters, not by its fit summary (the same answers, slower: for
 * tests that compare the two) */
#define XP_SCHED_EVALUATE_FULL 2u

/*
 * The verdict of the core's filters on each of n named nodes for pod (ret->items[i] for names[i];
 * names may repeat and need not all exist), and with XP_SCHED_EVALUATE_SCORE the scores of those
 * that fit, ranked among them as xp_sched_place() ranks its candidates: the cheap scores for
 * every one, device selection and its topology score for the best few, so the node it would
 * choose among them scores highest and has best set (a node whose devices the selection could
 * not give scores 0). Unlike xp_sched_place() every named node is checked
 * (feasible_nodes_to_find does not apply). Caller frees with xp_sched_verdicts_done(). 0;
 * -EINVAL when the pod's request cannot be understood (err says what), -ENOMEM. The snapshot
 * does not change; ret is untouched on failure.
 */
int xp_sched_evaluate(struct xp_sched *sched,
                      const struct xp_pod *pod,
                      const char *const *names,
                      size_t n,
                      unsigned flags,
                      struct xp_sched_verdicts *ret,
                      struct xp_error *err);
void xp_sched_verdicts_done(struct xp_sched_verdicts *verdicts);

/*
 * The workload the fragmentation profiles (fgd, xpool) measure a node against: its typical
 * pods, each with its share of the workload. Without one, they measure against the pods placed
 * so far (the live mix).
 */
struct xp_sched_typical_pod {
        int64_t cpu_milli;
        int64_t gpu_milli;  /* per device: below 1000 a share of one device, else 1000 */
        int64_t gpu_count;  /* 0: no device */
        const char *models; /* allowed values of the model label, "|"-separated; NULL: any */
        double weight;      /* > 0; the weights are normalized over the list */
};

/*
 * Sets (replaces) the workload: pods of `resource` ("nvidia.com/gpu"), whose device model is the
 * node label `model_label` ("nvidia.com/gpu.product"). n 0 clears it. -EINVAL with err for a
 * weight not above 0 or a gpu_milli outside 1..1000 with a count; -ENOMEM. Nothing changes on
 * failure.
 */
int xp_sched_set_workload(struct xp_sched *sched,
                          const char *resource,
                          const char *model_label,
                          const struct xp_sched_typical_pod *pods,
                          size_t n,
                          struct xp_error *err);

/*
 * The fragmentation of the cluster against the workload, in device milli: per node, the free
 * device capacity that the workload's typical pods cannot use, weighted by their share (the FGD
 * paper's measure, its Q3 part left out). *ret_free is all free device milli. 0; -ENODATA
 * without a workload.
 */
int xp_sched_fragmentation(struct xp_sched *sched, double *ret_frag, double *ret_free);

/* Counters for tests and benchmarks. */
struct xp_sched_stats {
        size_t nodes;
        size_t pods;
        uint64_t placements;
        uint64_t unschedulable;
        uint64_t nodes_filtered;         /* node checks done, over all placements */
        uint64_t nodes_summed;           /* of those, judged by the node's fit summary alone */
        uint64_t preempt_nodes_searched; /* nodes whose pods preemption weighed as victims */
};
void xp_sched_stats(const struct xp_sched *sched, struct xp_sched_stats *ret);

/*
 * What the present nodes that take pods (not cordoned) have of resource in all, in milli-units:
 * their allocatable summed, whatever their pods take; 0 for a resource no node has.
 */
int64_t xp_sched_capacity_total(struct xp_sched *sched, const char *resource);

/*
 * Headroom: what each present node has free now (allocatable less what its pods hold; a device
 * resource's unused whole devices), copied so that a caller may take from it pod by pod without
 * changing the snapshot. The scheduling loop asks it which waiting pods what was freed could
 * admit (docs/scheduler.md, "Backoff").
 */
struct xp_sched_headroom;
int xp_sched_headroom_new(struct xp_sched *sched, struct xp_sched_headroom **ret);
void xp_sched_headroom_free(struct xp_sched_headroom *headroom);
/*
 * 1 when some node's headroom covers every resource pod requests (cpu, memory, a pod's place,
 * each extended resource, whole devices as whole), taking the request from the first such node;
 * or, with preemptor_priority given, when some node holds a pod of lower priority (evicting it
 * may make room; nothing taken). 0 when neither. A necessary condition of the fit filter's: a
 * pod refused cannot fit, one let through may still fail on what counts do not show (selectors,
 * taints, NUMA, xpool.io/accelerator's kinds, shares of a device). -EINVAL with err as
 * xp_sched_place() for a request it cannot understand; -ENOMEM.
 */
int xp_sched_headroom_take(struct xp_sched_headroom *headroom,
                           const struct xp_pod *pod,
                           const int64_t *preemptor_priority,
                           struct xp_error *err);

/*
 * One node's preferred devices for a request of whole devices, chosen by the same device
 * selection as xp_sched_place() (NVLink islands, PCIe switches, NUMA; docs/scheduler.md, "Device
 * selection"): the kubelet's GetPreferredAllocation. Of inventory's devices of `resource`, the
 * `available` ones are free, every other one counts as held; the choice keeps must_include and
 * has `size` devices.
 */
struct xp_device_preference {
        const char *resource;
        const char *const *available; /* device ids */
        size_t n_available;
        const char *const *must_include; /* a subset of available */
        size_t n_must_include;
        size_t size;
};

/*
 * 1 with ret_devices[0..size) the chosen devices as indices into inventory->devices (ascending),
 * 0 when no set of that size fits (too few healthy available devices), -EINVAL with err saying
 * what for an id that is no device of resource, a must-include device that is not available, a
 * size of 0 or above the resource's devices, more must-include devices than size, or a resource
 * with more devices than device selection takes (64).
 */
int xp_sched_prefer_devices(const struct xp_node_inventory *inventory,
                            const struct xp_device_preference *request,
                            size_t *ret_devices,
                            struct xp_error *err);
