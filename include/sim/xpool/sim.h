/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The trace-driven simulator (`xpool sim`, docs/simulator.md): a cluster and a workload read
 * from the Alibaba GPU trace's CSV files (cluster-trace-gpu-v2023), replayed through the same
 * scheduler core the server runs (xp_sched_place(), xp_sched_pod_add()) under one profile and
 * one seed. Pure: files are read by xp_sim_trace_read_*(), the run itself does no I/O.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "xpool/error.h"
#include "xpool/sched.h"

/* The node label the trace's GPU model goes to (as NVIDIA's GPU feature discovery names it). */
#define XP_SIM_MODEL_LABEL  "nvidia.com/gpu.product"
#define XP_SIM_GPU_RESOURCE "nvidia.com/gpu"
#define XP_SIM_PERCENT_MAX  200

struct xp_sim_node {
        char *name;
        int64_t cpu_milli;
        int64_t memory_mib;
        int64_t gpus;
        char *model;
        char *manifest; /* the Node as JSON when read from a manifest; NULL: built from the row */
        size_t line;    /* the row's line in its file; 0: from a manifest */
};

struct xp_sim_pod {
        char *name;
        int64_t cpu_milli;
        int64_t memory_mib;
        int64_t num_gpu;
        int64_t gpu_milli; /* per GPU when num_gpu is 1; the pod asks num_gpu whole GPUs above */
        char *gpu_spec;    /* allowed models, "|"-separated; NULL: any */
        int64_t creation;  /* seconds; -1 when the file has no such column */
        int64_t deletion;
        char *manifest; /* the Pod as JSON when read from a manifest; NULL: built from the row */
};

struct xp_sim_trace {
        struct xp_sim_node *nodes;
        size_t n_nodes;
        struct xp_sim_pod *pods;
        size_t n_pods;
};

/* Appends the rows of a node list (sn,cpu_milli,memory_mib,gpu,model) or a pod list
 * (name,cpu_milli,memory_mib,num_gpu,gpu_milli[,gpu_spec,qos,pod_phase,creation_time,
 * deletion_time,scheduled_time]). -EINVAL with err "FILE:LINE: what" for a bad row or header,
 * -errno for a file that cannot be read; nothing is appended on failure. */
int xp_sim_read_nodes(const char *path, struct xp_sim_trace *trace, struct xp_error *err);
int xp_sim_read_pods(const char *path, struct xp_sim_trace *trace, struct xp_error *err);
void xp_sim_trace_done(struct xp_sim_trace *trace);

/* Appends the Nodes and Pods of a manifest file (YAML or JSON, one or many documents, Lists) or
 * of every *.yaml, *.yml and *.json file of a directory, in name order. Each object is kept
 * whole for the core; the simulator reads cpu, memory and nvidia.com/gpu (a node's allocatable,
 * the sum of a pod's container requests, else limits), the node label nvidia.com/gpu.product and
 * a pod's required node affinity `In` on it. -EINVAL with err "FILE:LINE: what" (another kind,
 * a GPU request that is neither a share nor whole devices, a manifest the codec refuses), -errno
 * for a path that cannot be read; nothing is appended on failure. */
int xp_sim_read_manifests(const char *path, struct xp_sim_trace *trace, struct xp_error *err);

/* A pod's GPU demand in milli (num_gpu * 1000, or gpu_milli for one). */
int64_t xp_sim_pod_demand(const struct xp_sim_pod *pod);

struct xp_sim_options {
        enum xp_sched_profile profile;
        uint64_t seed;
        /* no departures: pods arrive (shuffled by seed, re-sampled) until their GPU demand is
         * this many percent of the cluster's GPUs (130 in the paper) */
        unsigned percent;
        /* pods arrive at creation and leave at deletion, in the trace's order */
        bool departures;
        /* fgd and xpool measure fragmentation against the pods placed so far (as the server,
         * which knows no workload, does) instead of the trace's typical pods */
        bool live_mix;
};

/* One arrival: the trace pod and where it went. */
struct xp_sim_placement {
        size_t pod;   /* index into trace->pods */
        int64_t node; /* index into trace->nodes; -1: dropped (fit nowhere) */
        size_t n_dev;
        int64_t dev[8]; /* device indices on the node */
        int64_t milli[8];
};

struct xp_sim_result {
        /* ratio[k]: allocated GPU milli / all GPU milli when arrived demand passed k percent
         * (-1 when it never did) */
        double ratio[XP_SIM_PERCENT_MAX + 1];
        double frag_rate; /* at the end: fragmented free GPU / free GPU (0..1) */
        double time_avg;  /* departures: allocation averaged over time (0..1) */
        size_t arrived, placed;
        double seconds;                      /* placing and binding, wall clock */
        struct xp_sim_placement *placements; /* arrived of them, in arrival order */
};

/* Runs one replay. 0 with *ret (caller frees with xp_sim_result_done()); -EINVAL with err (an
 * empty cluster, a trace the core refuses), -ENOMEM. */
int xp_sim_run(const struct xp_sim_trace *trace,
               const struct xp_sim_options *options,
               struct xp_sim_result *ret,
               struct xp_error *err);
void xp_sim_result_done(struct xp_sim_result *result);

/* The workload's typical pods as the paper takes them: pod shapes (CPU, GPU share, count,
 * models) by frequency, the most frequent until 95 % of pods. *ret (caller frees; the models
 * point into the trace). -ENOMEM. */
int xp_sim_typical_pods(const struct xp_sim_trace *trace,
                        struct xp_sched_typical_pod **ret,
                        size_t *ret_n);

/* Writes one replay into dir: nodes.json (a List of the Nodes), pods.json (a List of the Pods
 * in arrival order, named p0, p1, ... in namespace sim) and placements.csv (pod,node,devices as
 * index:milli;...; node empty for a pod that fit nowhere). -errno with err. */
int xp_sim_export(const struct xp_sim_trace *trace,
                  const struct xp_sim_result *result,
                  const char *dir,
                  struct xp_error *err);

/* One policy's replays over several seeds, summarized. */
struct xp_sim_summary {
        const char *trace; /* the pod file's name, borrowed */
        enum xp_sched_profile profile;
        size_t runs;
        unsigned percent;
        double mean[XP_SIM_PERCENT_MAX + 1]; /* ratio at each percent, mean over runs; -1 none */
        double sd100, sd_end;    /* spread (standard deviation) at 100 % and at the end */
        double frag_rate;        /* mean */
        double time_avg;         /* mean (departures) */
        double placements_per_s; /* arrivals placed or dropped per second of placing */
};

/* Adds one run's result to s (zeroed first, with trace, profile and percent set). */
void xp_sim_summary_add(struct xp_sim_summary *s, const struct xp_sim_result *r);
/* After the last add: the means and spreads. */
void xp_sim_summary_finish(struct xp_sim_summary *s);

/* The allocation curves (ratio against arrived demand, one line per summary) as an SVG picture;
 * title names it. -errno from the stream. */
int xp_sim_plot_svg(FILE *f, const char *title, const struct xp_sim_summary *s, size_t n);
/* The same picture as a PNG, drawn with cairo, which is loaded (dlopen) on the first call:
 * -ELIBACC with err saying so when libcairo.so.2 cannot be loaded, -EIO when writing fails. */
int xp_sim_plot_png(
    FILE *f, const char *title, const struct xp_sim_summary *s, size_t n, struct xp_error *err);
/* Loads cairo now, so that a run asked for a PNG stops before its replays when it is missing:
 * 0, or -ELIBACC with err saying what is missing. */
int xp_sim_plot_png_ready(struct xp_error *err);
