/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The scheduler core's private structures. The snapshot is compact on purpose: resource names
 * are interned to small ids when a node or pod enters, so the per-node checks of a placement
 * compare integers, never strings.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "devsel.h"
#include "xpool/map.h"
#include "xpool/sched.h"

/* Fixed ids: interned first by xp_sched_new(). */
#define RES_CPU    0u
#define RES_MEMORY 1u
#define RES_PODS   2u
#define RES_ACCEL  3u

/* How many of the best nodes by the cheap scores get device selection. */
#define SCHED_DEVSEL_CANDIDATES 4
/* Limits on what one pod may ask, against hostile objects. */
#define SCHED_POD_RESOURCES_MAX 32

/* ---- the snapshot -------------------------------------------------------------------------- */

/* The devices of one resource on one node. */
struct dgroup {
        /* what the fit filter reads, in the group's first cache line */
        uint32_t res;
        enum xp_device_kind kind;
        int free_whole;     /* healthy and unused */
        int64_t max_free;   /* the largest free share of a healthy device, milli */
        int64_t best_share; /* the largest free share of a healthy, partly used device; 0 none */
        size_t n;
        char **vendors;
        struct devsel_device *dev;
        uint16_t *affinity; /* n * n */
        char **ids;
        int64_t *index;
        double *fp16;
};

struct staint {
        char *key;
        char *value;
        enum xp_taint_effect effect;
};

struct snuma {
        int64_t id;
        uint16_t *cpus;
        size_t n_cpus;
};

struct spod;

/*
 * One resource of a node: what it has and what placed pods hold side by side (the fit check
 * reads both), and its devices, so no per-placement search for the group.
 */
struct sres {
        int64_t alloc; /* milli */
        int64_t used;
        struct dgroup *group; /* the node's devices of this resource, NULL when none */
};

/*
 * What the fit filter concludes about a node, in one cache line kept apart from the entry, in
 * blocks beside the entries' (fitsum.c). kube-scheduler's extender asks every node for every
 * pod, and most nodes fail on resources: read from these lines, in order, a node is judged
 * without fetching its entry. Refreshed whenever what it sums up changes. Two resources beyond
 * cpu, memory and pods fit in; a node with more is judged by the full filters.
 */
#define SFIT_RES 2

struct sfit_res {
        uint32_t res;
        int32_t free_whole; /* healthy unused devices, when a group */
        int64_t free;       /* a group's largest free share (milli), else allocatable - used */
};

struct sfit {
        _Alignas(64) int64_t free_cpu; /* allocatable - used, milli */
        int64_t free_memory;
        int32_t free_pods;
        uint32_t flags;           /* SFIT_* */
        int32_t accel_free_whole; /* over the groups with a kind; -1 when none */
        int32_t accel_max_free;
        struct sfit_res res[SFIT_RES];
};

#define SFIT_PRESENT 1u /* the node is present */
#define SFIT_JUDGES  2u /* the summary answers for plain pods (fitsum_judge) */
#define SFIT_GROUP   4u /* res[i] is a device group when flags & (SFIT_GROUP << i) */

/* Resources held inside the node entry (cpu, memory, pods, the accelerator and a few device
 * resources): one fetch for the node gives the filters all they read. */
#define SNODE_RES_INLINE 8

struct snode {
        /* what every filter reads first, together: entries start on a cache line (snapshot.c
         * allocates them so), and this head with the first resources inline fills three */
        _Alignas(64) bool present; /* false: removed (or never seen) but pods still name it */
        bool unschedulable;
        int ready; /* 1 True, 0 False, -1 Unknown or missing */
        size_t n_taints;
        struct staint *taints;
        size_t n_res;
        struct sres *res; /* by resource id (ids >= n_res: none); res_inline when it fits */
        /* xp_sched_evaluate(): the call that last saw the node named, and at which slot */
        uint64_t eval_generation;
        size_t eval_slot;
        struct sres res_inline[SNODE_RES_INLINE];
        struct xp_strmap labels;
        uint64_t hash;
        char *name;
        struct dgroup *groups;
        size_t n_groups;
        struct snuma *numa;
        size_t n_numa;
        uint8_t *cpu_used; /* by cpu id: pinned by a pod */
        size_t n_cpu_ids;
        struct spod **pods;
        size_t n_pods;
        size_t cap_pods;
        /* the lowest priority among pods (preemption skips a node with none below the
         * preemptor's); stale after an unlink of a pod at it, found again when next asked */
        int64_t lowest_priority;
        bool lowest_stale;
        void *gcache;     /* the GPU policies' cache of this node (gpufrag.c), NULL when none */
        struct sfit *fit; /* its summary, for as long as the entry lives */
};

struct sreq {
        uint32_t res;
        int64_t milli;
};

struct sdev {
        uint32_t res;
        char *id;
        int64_t milli;
};

/* A required pod anti-affinity term, copied from the pod (the pod object is the caller's). */
struct sexpr {
        char *key;
        enum xp_selector_op op;
        char **values;
        size_t n_values;
};

struct sterm {
        char *topology_key;
        char **namespaces; /* none: the namespace of the pod that has the term */
        size_t n_namespaces;
        bool selects; /* false: no labelSelector, which selects no pod */
        struct xp_strmap match_labels;
        struct sexpr *exprs;
        size_t n_exprs;
};

/* A hostPort a pod holds on its node (hostports.c). */
struct shostport {
        int32_t port;
        char protocol[8]; /* TCP (the default), UDP, SCTP */
        char *host_ip;    /* NULL: every address (unset or 0.0.0.0) */
};

struct spod {
        char *key; /* "namespace/name" */
        char *namespace;
        char *node_name;
        struct snode *node;
        struct xp_strmap labels;
        struct sreq *reqs;
        size_t n_reqs;
        struct sdev *devs;
        size_t n_devs;
        uint16_t *cpus;
        size_t n_cpus;
        struct sterm *anti; /* required anti-affinity terms */
        size_t n_anti;
        size_t anti_slot; /* in sched->anti_pods when n_anti > 0 */
        /* preemption (preempt.c) */
        int64_t priority;
        char *gang;              /* "namespace/group" when the pod is a gang member, else NULL */
        bool terminating;        /* deletionTimestamp set: already going */
        bool hold;               /* devices held for a nominated preemptor (preempt_hold.c) */
        struct shostport *ports; /* hostports.c */
        size_t n_ports;
        bool ports_released; /* taken out by preemption for the question asked */
};

/* An evaluation's arrays of one slot per name (evaluate.c). */
struct eval_scratch {
        struct snode **at;
        const struct sfit **fits;
        size_t *todo;
        size_t cap;
};

struct xp_sched {
        struct xp_sched_options options;
        char **res_names;
        size_t n_res;
        size_t cap_res;
        struct xp_map res_ids;
        struct snode **nodes; /* every entry, present or not, in order of first sight */
        size_t n_nodes;
        size_t cap_nodes;
        /* the entries themselves, allocated in blocks so a scan walks memory in order; entries
         * live as long as the scheduler */
        struct snode **slabs;
        size_t n_slabs;
        size_t slab_used;        /* entries taken from the last block */
        struct sfit **fit_slabs; /* the entries' summaries, block for block */
        size_t n_present;
        struct xp_map node_map;
        struct xp_map pod_map;
        size_t next_start;
        struct xp_sched_stats stats;
        size_t last_unresolvable; /* the last failed placement's nodes no eviction could cure */
        char last_failed[256];    /* that placement's pod, "namespace/name" ("": none) */
        struct spod **anti_pods;  /* placed pods with required anti-affinity terms */
        size_t n_anti_pods;
        size_t cap_anti_pods;
        struct xp_map label_index; /* "key=value" -> struct plist of placed pods, when on */
        bool label_index_on;
        struct cand *cands; /* xp_sched_place()'s scratch, kept between calls */
        size_t cap_cands;
        struct eval_scratch scratch;     /* xp_sched_evaluate()'s, kept between calls */
        uint64_t eval_generation;        /* counts xp_sched_evaluate() calls */
        struct sched_resolved *resolved; /* resolve.c: the entries of the last names asked */
        struct gworkload *workload;      /* xp_sched_set_workload(); NULL when none (gpufrag.c) */
        struct gworkload *live;          /* the live mix of placed pods, when no workload is set */
        size_t live_pods;                /* pod_map.n when live was built */
        /* the GPU policies' default device resource's id + 1 (0: not interned as of
         * gpu_res_checked, n_res then): asked per node of every placement, not hashed each time */
        uint32_t gpu_res;
        size_t gpu_res_checked;
        uint64_t workload_gen;
        /* a gang placed within one topology domain (gang.c): placements consider only these
         * nodes, in order; NULL: every node */
        struct snode **subset;
        size_t n_subset;
        /* gang.c's topology domains per label key, built once per topology_gen */
        struct gang_topology *topology;
        uint64_t topology_gen; /* counts node changes: a cached grouping is stale after one */
};

/* The entry of each name into at[i] (present or not) and its summary into fits[i], NULL when
 * none, and whether some entry is named twice (resolve.c). -ENOMEM. */
int sched_resolve_names(struct xp_sched *sched,
                        const char *const *names,
                        size_t n,
                        struct snode **at,
                        const struct sfit **fits,
                        bool *ret_repeats);
/* Frees resolve.c's entries of the last names asked. */
void sched_resolved_free(struct xp_sched *sched);
/* Frees xp_sched_evaluate()'s scratch arrays. */
void sched_scratch_free(struct xp_sched *sched);

/* Frees gang.c's cache of topology domains. */
void gang_topology_free(struct xp_sched *sched);

/*
 * Accounts pod on node_name with the devices and CPUs of given (an assumed gang member, not yet
 * bound), or as xp_sched_pod_add() when given is NULL. Replaces an earlier entry of the pod.
 */
int sched_pod_account(struct xp_sched *sched,
                      const struct xp_pod *pod,
                      const char *node_name,
                      const struct xp_placement *given,
                      struct xp_error *err);

/* The id of a resource name, interning it when add is true; -ENOENT (not added) or -ENOMEM. */
int sched_res_id(struct xp_sched *sched, const char *name, bool add, uint32_t *ret);
static inline int64_t node_alloc(const struct snode *n, uint32_t res)
{
        return res < n->n_res ? n->res[res].alloc : 0;
}
static inline int64_t node_used(const struct snode *n, uint32_t res)
{
        return res < n->n_res ? n->res[res].used : 0;
}
static inline struct dgroup *node_group(const struct snode *n, uint32_t res)
{
        return res < n->n_res ? n->res[res].group : NULL;
}

/* ---- a pod's request (request.c, accelerator.c) -------------------------------------------- */

struct accel_constraints {
        unsigned kinds; /* bit per enum xp_device_kind; 0: any */
        int64_t min_memory;
        double min_tflops;
        char **vendors; /* preference order */
        size_t n_vendors;
};

struct podreq {
        struct sreq items[SCHED_POD_RESOURCES_MAX]; /* sorted by res */
        size_t n;
        int64_t cpu;   /* milli */
        int64_t accel; /* milli of xpool.io/accelerator, 0 when none */
        struct accel_constraints ac;
        /* a share of one device by memory ("nvidia.com/gpu-memory: 20Gi"), 0 bytes when none:
         * the item of mem_res asks for it; mem_base is the device resource (RES_ACCEL for
         * xpool.io/accelerator-memory) */
        int64_t mem_bytes;
        uint32_t mem_res;
        uint32_t mem_base;
        bool single_numa;
        uint64_t hash;           /* of namespace/name, for ties */
        struct shostport *ports; /* the hostPorts the pod asks (hostports.c); NULL when none */
        size_t n_ports;
};

/* Computes the effective requests (max of each init container, sum of containers; limits
 * default requests), interning names. -EINVAL with err naming the field; -ENOMEM. */
int sched_pod_requests(struct xp_sched *sched,
                       const struct xp_pod *pod,
                       struct podreq *ret,
                       struct xp_error *err);
void podreq_done(struct podreq *req);
int accel_parse(const struct xp_pod *pod, struct accel_constraints *ret, struct xp_error *err);
void accel_done(struct accel_constraints *ac);
/* Does device i of g satisfy the constraints? */
bool accel_device_matches(const struct accel_constraints *ac, const struct dgroup *g, size_t i);
/* The vendor's preference rank among ac->vendors (0 best), n_vendors when not listed. */
size_t accel_vendor_rank(const struct accel_constraints *ac, const char *vendor);

/* ---- filters and scores --------------------------------------------------------------------- */

enum reason_kind {
        REASON_UNSCHEDULABLE,
        REASON_AFFINITY,
        REASON_TAINT,
        REASON_INSUFFICIENT,
        REASON_TOO_MANY_PODS,
        REASON_ANTI_AFFINITY,
        REASON_EXISTING_ANTI_AFFINITY,
        REASON_NUMA,
        REASON_HOST_PORTS,
};

struct reason {
        enum reason_kind kind;
        uint32_t res;               /* INSUFFICIENT */
        const struct staint *taint; /* TAINT */
};

#define REASONS_PER_NODE_MAX (SCHED_POD_RESOURCES_MAX + 2)

struct reasons {
        struct reason items[REASONS_PER_NODE_MAX];
        size_t n;
};

/* Adds a reason, unless r is full. */
void reasons_add(struct reasons *r, enum reason_kind kind, uint32_t res, const struct staint *t);

/* What a placement computes once and every filter reads. */
struct anti_value {
        const char *key;
        const char *value;
        bool own; /* the pod's own term; false: a placed pod's term selects the pod */
};

struct pctx {
        struct xp_sched *sched;
        const struct xp_pod *pod;
        struct podreq req;
        /* required anti-affinity, both ways: the (topologyKey, value) domains the pod must
         * stay out of */
        struct anti_value *anti;
        size_t n_anti;
        struct sterm *terms; /* the pod's own required anti-affinity terms */
        size_t n_terms;
};

/* ---- required pod anti-affinity (antiaffinity.c) -------------------------------------------- */

/* The pod's required anti-affinity terms with a topology key; *ret NULL when none. -ENOMEM. */
int sterms_from_pod(const struct xp_pod *pod, struct sterm **ret, size_t *ret_n);
void sterms_free(struct sterm *terms, size_t n);
/* Keep the index of placed pods in step; call after the pod is in the snapshot, before it
 * leaves. -ENOMEM (nothing indexed). */
int anti_pod_added(struct xp_sched *sched, struct spod *p);
void anti_pod_removed(struct xp_sched *sched, struct spod *p);
void anti_free(struct xp_sched *sched);
/* Fills ctx->anti with the domains the pod must stay out of. -ENOMEM. */
int anti_affinity_prepare(struct pctx *ctx);

/* An init container with restartPolicy Always: a sidecar, which runs beside the main containers
 * (its requests and ports count for the whole life of the pod). */
bool sched_container_is_sidecar(const struct xp_container *c);

/* ---- hostPorts (hostports.c) ----------------------------------------------------------------- */

/* The hostPorts of the pod's containers and sidecars; *ret NULL when none. -ENOMEM. */
int hostports_from_pod(const struct xp_pod *pod, struct shostport **ret, size_t *ret_n);
void hostports_free(struct shostport *ports, size_t n);
/* Same protocol and port, and the same hostIP or either one every address. */
bool hostports_conflict(const struct shostport *a, const struct shostport *b);

struct filter_ops {
        const char *name;
        /* true when the node passes; otherwise reasons are appended to r */
        bool (*filter)(const struct pctx *ctx, const struct snode *node, struct reasons *r);
};

extern const struct filter_ops *const sched_filters[];
extern const struct filter_ops hostports_ops;
extern const size_t sched_n_filters;

/* Runs the filters in order on node: true when it passes them all; otherwise r (reset first)
 * holds the reasons of the first that failed. */
bool sched_filter_node(const struct pctx *ctx, const struct snode *node, struct reasons *r);

/*
 * The fit filter's rule for a resource judged by counts (filters.c), which the copies of the
 * counts judge by too (headroom.c, fitsum.c), so that no copy of the rule drifts from it. What a
 * node has free of the resource: whole, a device group's unused healthy devices (-1 for a
 * resource that is no device group); part, the group's largest free share of one device, else
 * allocatable less used.
 */
struct res_free {
        int64_t whole;
        int64_t part;
};

static inline struct res_free node_res_free(const struct snode *n, uint32_t res)
{
        const struct dgroup *g = res > RES_ACCEL ? node_group(n, res) : NULL;

        if (g)
                return (struct res_free){.whole = g->free_whole, .part = g->max_free};
        return (struct res_free){.whole = -1, .part = node_alloc(n, res) - node_used(n, res)};
}

/* Whether milli fits in what f has free: a device group's whole devices for 1 or more (1500m
 * is one whole device, its share is not looked at), else a share of one device or a count. */
static inline bool res_free_covers(struct res_free f, int64_t milli)
{
        if (f.whole >= 0 && milli >= 1000)
                return f.whole >= milli / 1000;
        return f.part >= milli;
}

/* Whether the fit filter judges res of req by the counts above; if not, by the devices'
 * constraints: xpool.io/accelerator (its kinds) and a share of a device by memory. */
static inline bool podreq_counted(const struct podreq *req, uint32_t res)
{
        return res != RES_ACCEL && !(req->mem_bytes > 0 && res == req->mem_res);
}

/* Sums up node into node->fit again: after any change to what the fit filter reads. */
void fitsum_refresh(struct snode *node);
/* Can the summaries judge this pod? No selectors, affinity, NUMA or memory shares, and no
 * constraints on its xpool.io/accelerator devices. */
bool fitsum_pod_plain(const struct pctx *ctx);
/* For a plain pod on a present node: 1 fits, 0 does not (r says why, as the filters would), -1
 * the summary cannot tell (sched_filter_node() must). */
int fitsum_judge(const struct pctx *ctx, const struct sfit *f, struct reasons *r);

/* A feasible node during scoring. */
struct cand {
        struct snode *node;
        int64_t raw[8]; /* per score op of the profile, before normalizing */
        int64_t cheap;  /* the weighted scores that need no device selection */
        int64_t score;  /* weighted, 0..100 per op times weight */
        uint64_t tie;
        struct dgroup *accel_group; /* the group chosen for xpool.io/accelerator */
        int pick;    /* index into the placement's device picks, -1 none, RANK_NO_DEVICES */
        size_t slot; /* the caller's own index (evaluate.c: the verdict's) */
};

struct score_ops {
        const char *name;
        int64_t (*score)(const struct pctx *ctx, struct cand *c); /* raw */
        /* normalize raw values over the candidates to 0..100; NULL: raw is already 0..100 */
        void (*normalize)(struct cand *cands, size_t n, size_t op);
        bool after_devsel; /* needs the devices chosen: scored for the best few nodes only */
};

extern const struct score_ops sched_score_least_allocated;
extern const struct score_ops sched_score_most_allocated;
extern const struct score_ops sched_score_balanced;
extern const struct score_ops sched_score_node_affinity;
extern const struct score_ops sched_score_taints;
extern const struct score_ops sched_score_fraction;
extern const struct score_ops sched_score_vendor;
extern const struct score_ops sched_score_topology;
extern const struct score_ops sched_score_gpu_policy;

struct profile_weight {
        const struct score_ops *ops;
        int64_t weight;
};

/* The score ops and weights for a profile, NULL-terminated by ops. */
const struct profile_weight *sched_profile(enum xp_sched_profile profile);

/* The devices a node gives a pod: one selection per device resource requested. */
#define SCHED_DEVICE_REQUESTS_MAX 4

struct devsel_pick {
        size_t n;
        struct {
                const struct dgroup *group;
                struct devsel_result result;
        } sel[SCHED_DEVICE_REQUESTS_MAX];
        int64_t score; /* the sum of devsel scores */
        int numa;      /* the NUMA node everything chosen shares, -1 when none or mixed */
};

/*
 * Chooses the devices for the pod on node. numa: -1 any; SCHED_NUMA_REQUIRED: devices and whole
 * CPUs on one NUMA node (the best of them). 1 with *ret, 0 when the node cannot serve the pod.
 */
#define SCHED_NUMA_REQUIRED (-2)
int sched_select_devices(const struct pctx *ctx,
                         const struct snode *node,
                         int numa,
                         struct devsel_pick *ret);
/* ---- ranking the nodes that fit (rank.c) ----------------------------------------------------- */

/* How many of the best by the cheap scores are kept for device selection to choose from. */
#define RANK_BEST (SCHED_DEVSEL_CANDIDATES * 2)
/* cand.pick of a candidate whose device selection found nothing (fragmented). */
#define RANK_NO_DEVICES (-2)

/* Higher score first, then the tie hash: a total order for qsort(). */
int sched_cand_compare(const void *a, const void *b);
/* sched->cands holds at least n. -ENOMEM. */
int sched_cands_reserve(struct xp_sched *sched, size_t n);
/* How many feasible nodes a placement of req looks for before it ranks them (sample.c). */
size_t sched_feasible_to_find(const struct xp_sched *sched, const struct podreq *req);
/* Whether device selection decides among the candidates (the pod asks node for devices). */
bool rank_needs_devices(const struct pctx *ctx, const struct snode *node);
/* The profile's cheap scores of every candidate, normalized over them and weighted into score. */
void rank_cheap(const struct pctx *ctx, struct cand *cands, size_t n);
/* Moves the best RANK_BEST (in order) to the front; returns how many that is. */
size_t rank_keep_best(struct cand *cands, size_t n);
/*
 * Device selection for the candidates in order until SCHED_DEVSEL_CANDIDATES could give the
 * devices: those go to top (with picks[top[i].pick]) with the topology score added, best first;
 * a candidate that could not gets pick RANK_NO_DEVICES. *ret_n_top may be 0. -errno with err.
 */
int rank_devices(const struct pctx *ctx,
                 struct cand *cands,
                 size_t n,
                 struct devsel_pick picks[static SCHED_DEVSEL_CANDIDATES],
                 struct cand top[static SCHED_DEVSEL_CANDIDATES],
                 size_t *ret_n_top,
                 struct xp_error *err);

bool node_tolerates(const struct xp_pod *pod,
                    const char *key,
                    const char *value,
                    enum xp_taint_effect effect);
bool node_selector_term_matches(const struct xp_node_selector_term *term, const struct snode *node);
struct dgroup *
accel_pick_group(const struct pctx *ctx, const struct snode *node, int64_t *ret_rank);

/* ---- shares by device memory (memshare.c) --------------------------------------------------- */

#define MEMSHARE_SUFFIX "-memory"

/* The length of the device resource's name when name is "<domain>/<device>-memory", else 0. */
size_t memshare_base_len(const char *name);
/* The group whose devices serve the pod's memory share on node (NULL when the pod has none or
 * the node lacks the resource); for xpool.io/accelerator-memory the group accel_pick_group()
 * chooses. */
struct dgroup *memshare_group(const struct pctx *ctx, const struct snode *node);
/* Does device i of g (healthy, matching the pod's accelerator constraints when ac is not NULL)
 * have room for bytes? shared_only: only a device already partly used counts. */
bool memshare_device_fits(const struct dgroup *g,
                          size_t i,
                          int64_t bytes,
                          const struct accel_constraints *ac,
                          bool shared_only);
/* Some device of g fits (see memshare_device_fits()). */
bool memshare_group_fits(const struct dgroup *g,
                         int64_t bytes,
                         const struct accel_constraints *ac,
                         bool shared_only);
/*
 * Chooses the device of g for a share of bytes: devsel's share choice among the devices of each
 * memory size, with that size's milli; the best score wins. numa as devsel_request.numa; ac NULL
 * or the constraints that hide devices. 1 with *ret, 0 when no device fits, -EINVAL from devsel.
 */
int memshare_choose(const struct dgroup *g,
                    int64_t bytes,
                    const struct accel_constraints *ac,
                    int numa,
                    struct devsel_result *ret);

/* ---- reasons ------------------------------------------------------------------------------- */

struct reason_hist {
        struct reason reason;
        size_t count;
};

/* One reason in kube-scheduler's words, without a count ("Insufficient nvidia.com/gpu"). Caller
 * frees. -ENOMEM. */
int reason_describe(const struct xp_sched *sched, const struct reason *r, char **ret);
/* Whether evicting pods cannot cure the reason: the node itself refuses the pod (cordoned, a
 * taint, node affinity), kube-scheduler's UnschedulableAndUnresolvable. */
bool reason_unresolvable(const struct reason *r);
/* A node's reasons in kube-scheduler's words, joined by ", ". Caller frees. -ENOMEM. */
int reasons_join(const struct xp_sched *sched, const struct reasons *rs, char **ret);
int reasons_format(const struct xp_sched *sched,
                   size_t n_nodes,
                   const struct reason_hist *hist,
                   size_t n_hist,
                   char **ret);

/* ---- preemption (preempt*.c) --------------------------------------------------------------- */

/* Accounts (sign +1) or gives back (-1) what p holds on n (snapshot.c). */
void sched_account(struct snode *n, struct spod *p, int sign);
/* Whether a pod of priority below prio is placed on n (snapshot.c). */
bool sched_node_has_below(struct snode *n, int64_t prio);
/* The pod's preemption facts into p: priority, gang, terminating. -ENOMEM. */
int preempt_pod_facts(const struct xp_pod *pod, struct spod *p);
