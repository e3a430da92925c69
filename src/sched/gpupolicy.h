/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The GPU-sharing policies (profiles random .. xpool): a node seen as its CPU left and the milli
 * left on each device of one resource, the pod as its CPU and its device request, and the
 * fragmentation of a node against the workload's typical pods (gpufrag.c). docs/simulator.md
 * describes each policy's score.
 */

#include "sched_internal.h"

/* The normalizers of the FGD paper's simulator: the largest node it knew. */
#define GP_MAX_CPU 128000
#define GP_MAX_GPU 8000

struct gtype {
        int64_t cpu;
        int64_t milli; /* per device */
        int64_t count; /* 0: no device */
        char **models; /* NULL: any */
        size_t n_models;
        double weight; /* normalized: the weights sum to 1 */
};

struct gworkload {
        uint32_t res;
        char *model_label;
        struct gtype *types;
        size_t n;
        uint64_t gen;         /* changes with every set: node caches compare it */
        bool binds_models;    /* some typical pod may run on certain models only (gpu_spec) */
        double cpu_per_milli; /* the GPU pods' CPU per device milli they ask, 0 without them */
        /* gpucontest.c's memo: the cluster's GPUs per model and the bound pods' demand on them,
         * as of topology_gen models_gen */
        struct gmodel *models;
        size_t n_models;
        int64_t total_gpus;
        double demand; /* the typical pods' GPU milli per pod */
        uint64_t models_gen;
        bool models_built;
};

/* A node as the policies see it. */
struct gview {
        const struct dgroup *g; /* NULL: no devices of the resource */
        int64_t cpu_left;
        size_t n;
        int64_t left[DEVSEL_MAX]; /* milli left per device; 0 for an unhealthy one */
        int64_t total;            /* the sum of left */
        int64_t idle;             /* devices with all 1000 left */
        const char *model;        /* the model label's value, NULL when none */
};

/* The pod as the policies see it: a share (count 1, milli < 1000), whole devices (milli 1000)
 * or none (count 0). */
struct gpod {
        int64_t cpu;
        int64_t milli;
        int64_t count;
        uint32_t res;
};

bool gp_profile_is_gpu(enum xp_sched_profile profile);
/* What the pod adds to the tie hash (rank.c): the pod's own hash, so equal nodes are drawn anew
 * for every pod; 0 under the published policies but random and under xpool's, whose ties go to
 * one node order drawn from the seed for the whole run, as the paper's simulator breaks them
 * (the lexically smallest node name, names prefixed by a seeded permutation): a tie then packs
 * pods onto the same nodes instead of scattering them. */
uint64_t gp_tie_salt(const struct pctx *ctx);
/* The milli of resource res a pod holds on its devices (0 while its node is gone). */
int64_t gp_pod_milli(const struct spod *p, uint32_t res);
void gp_pod(const struct pctx *ctx, struct gpod *ret);
void gp_view(const struct xp_sched *sched,
             const struct snode *node,
             uint32_t res,
             const char *model_label,
             struct gview *ret);

/* The device a whole-device pod of count devices takes first: the lowest free indices (as the
 * paper's simulator does); the view changed as the pod would change it. */
void gp_take_whole(struct gview *v, int64_t count);

/* The paper's node scores (0..100, higher better); dotprod and the fragmentation score also
 * give the device of a share (-1: whole devices or none). */
int64_t gp_dotprod(const struct gview *v, const struct gpod *p, int *ret_dev);
int64_t gp_clustering(const struct snode *node, const struct gview *v, const struct gpod *p);
int64_t gp_packing(const struct gview *v, const struct gpod *p);
int64_t gp_best_fit(const struct gview *v, const struct gpod *p);
/* FGD: the integer sigmoid (0..100) of the fragmentation the pod removes (for a share on the
 * device that removes most, the lowest index on ties). */
int64_t gp_frag_score(const struct gworkload *w,
                      struct snode *node,
                      const struct gview *v,
                      const struct gpod *p,
                      int *ret_dev);

/* FGD's score of p on node's state v as last computed (the node's memo, dropped when its devices
 * or CPU change): true with *ret_score and *ret_dev, false when not known. */
bool gp_memo_get(const struct gworkload *w,
                 struct snode *node,
                 const struct gview *v,
                 const struct gpod *p,
                 int64_t *ret_score,
                 int *ret_dev);
void gp_memo_put(const struct gworkload *w,
                 struct snode *node,
                 const struct gview *v,
                 const struct gpod *p,
                 int64_t score,
                 int dev);

/* ---- the score op and the share choice (gpuscore.c) ------------------------------------ */

/* The device of g a share of milli takes on node under the profile: 1 with *ret, 0 when none
 * fits, 2 when the profile leaves it to device selection. */
int gp_choose_share(const struct pctx *ctx,
                    const struct snode *node,
                    const struct dgroup *g,
                    int64_t milli,
                    struct devsel_result *ret);

/* ---- how contested a model is (gpucontest.c) -------------------------------------------- */

/* The demand of the workload's pods bound to models that falls on model, as a share of the
 * workload's GPU demand, over model's share of the cluster's GPUs: 1 when the bound pods alone
 * would fill it. 0 without bound pods or model. */
double gp_model_contest(const struct xp_sched *sched, const struct gworkload *w, const char *model);
void gp_contest_free(struct gworkload *w);

/* ---- fragmentation (gpufrag.c) ----------------------------------------------------------- */

void gworkload_free(struct gworkload *w);
void gcache_drop(struct snode *node);
/* The workload in force: the one set, else the live mix of the placed pods (rebuilt when the
 * pods changed). NULL on -ENOMEM or when there is nothing to measure against. */
const struct gworkload *gp_workload(struct xp_sched *sched, uint32_t res);
/* The fragmentation of node v (its Q3 part left out) against w. */
double gp_frag(const struct gworkload *w, struct snode *node, const struct gview *v);
/* The fragmentation after the pod takes: cpu, and device `dev` (-1: count whole devices, the
 * lowest free). */
double gp_frag_after(const struct gworkload *w,
                     struct snode *node,
                     const struct gview *v,
                     const struct gpod *p,
                     int dev);
