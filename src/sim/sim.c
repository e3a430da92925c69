/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One replay, the paper's way: the trace's pods shuffled by the seed, then drawn again at random
 * until their GPU demand reaches the percent asked of the cluster's GPUs; each placed by the
 * core and bound as the server binds (the placement annotation, then xp_sched_pod_add()), or
 * dropped when no node fits. The allocation is counted from the placements themselves.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sim_internal.h"
#include "xpool/strmap.h"

struct run {
        const struct xp_sim_trace *t;
        struct xp_sched *sched;
        struct xp_pod **pods;
        struct xp_sim_result *res;
        int64_t capacity;  /* GPU milli */
        int64_t allocated; /* GPU milli, from the placements */
        size_t *node_order;
};

static double now_s(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_node(const void *a, const void *b, void *arg)
{
        const struct xp_sim_trace *t = arg;

        return strcmp(t->nodes[*(const size_t *)a].name, t->nodes[*(const size_t *)b].name);
}

static int64_t node_index(const struct run *r, const char *name)
{
        size_t lo = 0, hi = r->t->n_nodes;

        while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                int c = strcmp(r->t->nodes[r->node_order[mid]].name, name);
                if (c == 0)
                        return (int64_t)r->node_order[mid];
                if (c < 0)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return -1;
}

/* Places trace pod i as arrival number seq; records it. */
static int arrive(struct run *r, size_t i, size_t seq, struct xp_error *err)
{
        struct xp_pod *pod;
        struct xp_sim_placement *out = &r->res->placements[r->res->arrived];
        _cleanup_(xp_placement_done) struct xp_placement pl = {0};
        _cleanup_free_ char *reason = NULL, *ann = NULL;
        char name[64], *saved;
        int k = sim_pod_get(r->t, r->pods, i, &pod, err);

        if (k < 0)
                return k;
        r->res->arrived++;
        saved = pod->metadata.name;
        *out = (struct xp_sim_placement){.pod = i, .node = -1};
        snprintf(name, sizeof(name), "p%zu", seq);
        pod->metadata.name = name;
        k = xp_sched_place(r->sched, pod, &pl, &reason, err);
        if (k == 1) {
                k = xp_placement_to_json(&pl, &ann);
                if (k >= 0)
                        k = xp_strmap_set(&pod->metadata.annotations, XP_PLACEMENT_ANNOTATION, ann);
                pod->spec.node_name = pl.node;
                if (k >= 0)
                        k = xp_sched_pod_add(r->sched, pod, err);
                pod->spec.node_name = NULL;
                xp_strmap_remove(&pod->metadata.annotations, XP_PLACEMENT_ANNOTATION);
                if (k >= 0)
                        k = 1;
        }
        pod->metadata.name = saved;
        if (k < 0)
                return k == -ENOMEM ? xp_errorf(err, k, "out of memory") : k;
        if (k == 0)
                return 0;
        out->node = node_index(r, pl.node);
        for (size_t d = 0; d < pl.devices.n && d < 8; d++) {
                out->dev[out->n_dev] = pl.devices.items[d].index;
                out->milli[out->n_dev++] = pl.devices.items[d].milli;
                r->allocated += pl.devices.items[d].milli;
        }
        r->res->placed++;
        return 1;
}

/* The arrival order: the trace shuffled, then drawn again until the demand reaches percent. */
static int
arrivals(const struct xp_sim_trace *t, uint64_t seed, int64_t target, size_t **ret, size_t *ret_n)
{
        size_t n = t->n_pods, cap = n * 2 + 16, *order = malloc(cap * sizeof(*order));
        uint64_t state = seed;
        int64_t demand = 0;

        if (!order)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                order[i] = i;
        for (size_t i = n; i > 1; i--) {
                size_t j = sim_rand(&state) % i, x = order[i - 1];
                order[i - 1] = order[j];
                order[j] = x;
        }
        for (size_t i = 0; i < n; i++)
                demand += xp_sim_pod_demand(&t->pods[order[i]]);
        while (demand < target) {
                size_t j = sim_rand(&state) % t->n_pods;
                if (n == cap) {
                        size_t *m = realloc(order, (cap *= 2) * sizeof(*m));
                        if (!m) {
                                free(order);
                                return -ENOMEM;
                        }
                        order = m;
                }
                order[n++] = j;
                demand += xp_sim_pod_demand(&t->pods[j]);
        }
        *ret = order;
        *ret_n = n;
        return 0;
}

static void record(struct run *r, int64_t arrived_demand, unsigned *next)
{
        while (*next <= XP_SIM_PERCENT_MAX &&
               arrived_demand * 100 >= (int64_t)*next * r->capacity) {
                r->res->ratio[*next] = (double)r->allocated / (double)r->capacity;
                (*next)++;
        }
}

static int replay(struct run *r, const struct xp_sim_options *o, struct xp_error *err)
{
        _cleanup_free_ size_t *order = NULL;
        int64_t target = r->capacity * (int64_t)o->percent / 100, demand = 0;
        unsigned next = 0;
        size_t n = 0;
        double t0;
        int k;

        if (arrivals(r->t, o->seed, target, &order, &n) < 0)
                return xp_errorf(err, -ENOMEM, "out of memory");
        r->res->placements = calloc(n ? n : 1, sizeof(*r->res->placements));
        if (!r->res->placements)
                return xp_errorf(err, -ENOMEM, "out of memory");
        t0 = now_s();
        for (size_t i = 0; i < n && demand < target; i++) {
                k = arrive(r, order[i], i, err);
                if (k < 0)
                        return k;
                demand += xp_sim_pod_demand(&r->t->pods[order[i]]);
                record(r, demand, &next);
        }
        r->res->seconds = now_s() - t0;
        return 0;
}

/* ---- departures: the trace's own times ------------------------------------------------- */

struct dep {
        int64_t at;
        size_t seq;
};

/* A binary min-heap of departures by time. */
static void heap_push(struct dep *h, size_t *n, struct dep d)
{
        size_t i = (*n)++;

        while (i > 0 && h[(i - 1) / 2].at > d.at) {
                h[i] = h[(i - 1) / 2];
                i = (i - 1) / 2;
        }
        h[i] = d;
}

static struct dep heap_pop(struct dep *h, size_t *n)
{
        struct dep top = h[0], last = h[--(*n)];
        size_t i = 0;

        for (;;) {
                size_t c = 2 * i + 1;
                if (c >= *n)
                        break;
                if (c + 1 < *n && h[c + 1].at < h[c].at)
                        c++;
                if (h[c].at >= last.at)
                        break;
                h[i] = h[c];
                i = c;
        }
        if (*n)
                h[i] = last;
        return top;
}

static int cmp_creation(const void *a, const void *b, void *arg)
{
        const struct xp_sim_trace *t = arg;
        int64_t x = t->pods[*(const size_t *)a].creation, y = t->pods[*(const size_t *)b].creation;

        if (x != y)
                return x < y ? -1 : 1;
        return *(const size_t *)a < *(const size_t *)b ? -1 : 1;
}

static void leave(struct run *r, size_t seq)
{
        const struct xp_sim_placement *p = &r->res->placements[seq];
        char name[64];

        snprintf(name, sizeof(name), "p%zu", seq);
        xp_sched_pod_remove(r->sched, "sim", name);
        for (size_t d = 0; d < p->n_dev; d++)
                r->allocated -= p->milli[d];
}

static int departures(struct run *r, struct xp_error *err)
{
        _cleanup_free_ size_t *order = malloc(r->t->n_pods * sizeof(*order));
        _cleanup_free_ struct dep *heap = malloc(r->t->n_pods * sizeof(*heap));
        size_t n = 0, n_heap = 0;
        double area = 0, t0 = now_s();
        int64_t first = -1, last = 0;

        r->res->placements = calloc(r->t->n_pods, sizeof(*r->res->placements));
        if (!order || !heap || !r->res->placements)
                return xp_errorf(err, -ENOMEM, "out of memory");
        for (size_t i = 0; i < r->t->n_pods; i++)
                if (r->t->pods[i].creation >= 0)
                        order[n++] = i;
        if (n == 0)
                return xp_errorf(err, -EINVAL, "departures: the pod list has no creation_time");
        qsort_r(order, n, sizeof(*order), cmp_creation, (void *)r->t);
        for (size_t i = 0; i < n; i++) {
                const struct xp_sim_pod *p = &r->t->pods[order[i]];
                int k;
                while (n_heap && heap[0].at <= p->creation) {
                        struct dep d = heap_pop(heap, &n_heap);
                        area += (double)r->allocated * (double)(d.at - last);
                        last = d.at;
                        leave(r, d.seq);
                }
                if (first < 0)
                        first = last = p->creation;
                area += (double)r->allocated * (double)(p->creation - last);
                last = p->creation;
                k = arrive(r, order[i], i, err);
                if (k < 0)
                        return k;
                if (k == 1 && p->deletion >= p->creation)
                        heap_push(heap, &n_heap, (struct dep){.at = p->deletion, .seq = i});
        }
        r->res->time_avg = last > first ? area / ((double)r->capacity * (double)(last - first)) : 0;
        r->res->seconds = now_s() - t0;
        return 0;
}

static int set_workload(struct run *r, struct xp_error *err)
{
        _cleanup_free_ struct xp_sched_typical_pod *tp = NULL;
        size_t n = 0;

        if (xp_sim_typical_pods(r->t, &tp, &n) < 0)
                return xp_errorf(err, -ENOMEM, "out of memory");
        return xp_sched_set_workload(r->sched, XP_SIM_GPU_RESOURCE, XP_SIM_MODEL_LABEL, tp, n, err);
}

static void run_done(struct run *r)
{
        sim_pods_free(r->pods, r->t->n_pods);
        free(r->node_order);
        xp_sched_free(r->sched);
}

int xp_sim_run(const struct xp_sim_trace *trace,
               const struct xp_sim_options *options,
               struct xp_sim_result *ret,
               struct xp_error *err)
{
        struct xp_sched_options so = {.profile = options->profile, .seed = options->seed};
        struct xp_sim_result res = {0};
        struct run r = {.t = trace, .res = &res};
        double frag = 0, free_milli = 0;
        int64_t demand = 0;
        int k;

        for (size_t i = 0; i < trace->n_nodes; i++)
                r.capacity += trace->nodes[i].gpus * 1000;
        for (size_t i = 0; i < trace->n_pods; i++)
                demand += xp_sim_pod_demand(&trace->pods[i]);
        if (r.capacity == 0)
                return xp_errorf(err, -EINVAL, "the cluster has no GPUs");
        if (trace->n_pods == 0)
                return xp_errorf(err, -EINVAL, "the workload has no pods");
        /* without GPU demand the arrivals would be drawn for ever */
        if (demand == 0 && !options->departures)
                return xp_errorf(err, -EINVAL, "the workload has no pods asking GPUs");
        for (size_t i = 0; i <= XP_SIM_PERCENT_MAX; i++)
                res.ratio[i] = -1;
        r.node_order = malloc(trace->n_nodes * sizeof(*r.node_order));
        if (!r.node_order)
                return xp_errorf(err, -ENOMEM, "out of memory");
        for (size_t i = 0; i < trace->n_nodes; i++)
                r.node_order[i] = i;
        qsort_r(r.node_order, trace->n_nodes, sizeof(*r.node_order), cmp_node, (void *)trace);
        k = xp_sched_new(&so, &r.sched);
        if (k >= 0)
                k = sim_nodes_add(r.sched, trace, err);
        if (k >= 0)
                k = sim_pods_build(trace, &r.pods, err);
        /* live mix: measured against the pods placed so far, as the server measures */
        if (k >= 0 && !options->live_mix)
                k = set_workload(&r, err);
        if (k >= 0)
                k = options->departures ? departures(&r, err) : replay(&r, options, err);
        if (k >= 0 && options->live_mix)
                k = set_workload(&r, err); /* the FRAG column: against the trace's pods */
        if (k >= 0 && xp_sched_fragmentation(r.sched, &frag, &free_milli) >= 0 && free_milli > 0)
                res.frag_rate = frag / free_milli;
        run_done(&r);
        if (k < 0) {
                xp_sim_result_done(&res);
                return k;
        }
        *ret = res;
        return 0;
}

void xp_sim_result_done(struct xp_sim_result *result)
{
        free(result->placements);
        result->placements = NULL;
}
