/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fragmentation of a node against a workload (the FGD paper's measure): for each typical pod,
 * the free device milli it could not use there, weighted by its share of the workload. A pod the
 * node cannot host at all (model, CPU, too few devices with room) wastes all that is free; one it
 * can host wastes the devices too small for it. Every placement asks this of every node for each
 * device it could take, so per node the counts that do not depend on the CPU (per typical pod:
 * devices with room, milli on devices without) are kept until the node's devices change, and a
 * tentative placement only corrects them for the devices it touches.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gpupolicy.h"
#include "xpool/strutil.h"

enum {
        GMEMO_SLOTS = 64
};

struct gmemo {
        int64_t cpu, milli, count; /* the pod's shape; count 0 with milli 0: empty slot */
        int64_t score;
        int dev;
        bool used;
};

struct gcache {
        uint64_t gen;
        const struct gworkload *w;
        size_t n;
        int64_t left[DEVSEL_MAX];
        const char *model;
        int64_t *count; /* per type: devices with at least its milli left */
        int64_t *small; /* per type: milli left on the devices with less */
        bool *access;   /* per type: the model allows it */
        /* FGD's scores on this state by pod shape: every arrival scores every node, and only
         * the node it lands on changes, so most scores are asked again of an unchanged node */
        int64_t memo_cpu_left;
        struct gmemo memo[GMEMO_SLOTS];
};

static void types_free(struct gtype *t, size_t n)
{
        for (size_t i = 0; t && i < n; i++) {
                for (size_t k = 0; k < t[i].n_models; k++)
                        free(t[i].models[k]);
                free(t[i].models);
        }
        free(t);
}

void gworkload_free(struct gworkload *w)
{
        if (!w)
                return;
        types_free(w->types, w->n);
        gp_contest_free(w);
        free(w->model_label);
        free(w);
}

void gcache_drop(struct snode *node)
{
        struct gcache *c = node->gcache;

        if (!c)
                return;
        free(c->count);
        free(c->small);
        free(c->access);
        free(c);
        node->gcache = NULL;
}

static int split_models(const char *text, struct gtype *t)
{
        const char *p = text;

        while (p && *p) {
                const char *e = strchr(p, '|');
                size_t len = e ? (size_t)(e - p) : strlen(p);
                char **m;
                if (len > 0) {
                        m = realloc(t->models, (t->n_models + 1) * sizeof(*m));
                        if (!m)
                                return -ENOMEM;
                        t->models = m;
                        m[t->n_models] = strndup(p, len);
                        if (!m[t->n_models])
                                return -ENOMEM;
                        t->n_models++;
                }
                p = e ? e + 1 : NULL;
        }
        return 0;
}

int xp_sched_set_workload(struct xp_sched *sched,
                          const char *resource,
                          const char *model_label,
                          const struct xp_sched_typical_pod *pods,
                          size_t n,
                          struct xp_error *err)
{
        struct gworkload *w;
        double sum = 0, gpu_cpu = 0, gpu_milli = 0;
        int r;

        for (size_t i = 0; i < n; i++) {
                if (!(pods[i].weight > 0))
                        return xp_errorf(err, -EINVAL, "workload[%zu]: weight must be above 0", i);
                if (pods[i].gpu_count < 0 || pods[i].cpu_milli < 0 ||
                    (pods[i].gpu_count > 0 && (pods[i].gpu_milli < 1 || pods[i].gpu_milli > 1000)))
                        return xp_errorf(err,
                                         -EINVAL,
                                         "workload[%zu]: gpu_milli must be 1..1000 with a count",
                                         i);
                sum += pods[i].weight;
        }
        w = calloc(1, sizeof(*w));
        if (!w)
                return xp_errorf(err, -ENOMEM, "workload: out of memory");
        r = sched_res_id(sched, resource ? resource : "nvidia.com/gpu", true, &w->res);
        w->model_label = strdup(model_label ? model_label : "nvidia.com/gpu.product");
        w->types = n ? calloc(n, sizeof(*w->types)) : NULL;
        if (r < 0 || !w->model_label || (n && !w->types)) {
                gworkload_free(w);
                return xp_errorf(err, -ENOMEM, "workload: out of memory");
        }
        for (size_t i = 0; i < n; i++, w->n++) {
                struct gtype *t = &w->types[i];
                t->cpu = pods[i].cpu_milli;
                t->count = pods[i].gpu_count;
                t->milli = pods[i].gpu_count ? pods[i].gpu_milli : 0;
                t->weight = pods[i].weight / sum;
                if (split_models(pods[i].models, t) < 0) {
                        w->n++;
                        gworkload_free(w);
                        return xp_errorf(err, -ENOMEM, "workload: out of memory");
                }
                w->binds_models |= t->n_models > 0;
                if (t->count > 0) {
                        gpu_cpu += t->weight * (double)t->cpu;
                        gpu_milli += t->weight * (double)(t->milli * t->count);
                }
        }
        w->cpu_per_milli = gpu_milli > 0 ? gpu_cpu / gpu_milli : 0;
        w->gen = ++sched->workload_gen;
        gworkload_free(sched->workload);
        sched->workload = n ? w : NULL;
        if (!n)
                gworkload_free(w);
        return 0;
}

static bool type_access(const struct gtype *t, const char *model)
{
        if (t->n_models == 0)
                return true;
        for (size_t i = 0; model && i < t->n_models; i++)
                if (strcmp(t->models[i], model) == 0)
                        return true;
        return false;
}

static struct gcache *
cache_get(const struct gworkload *w, struct snode *node, const struct gview *v)
{
        struct gcache *c = node->gcache;

        if (c && c->gen == w->gen && c->w == w && c->n == v->n && c->model == v->model &&
            memcmp(c->left, v->left, v->n * sizeof(*v->left)) == 0)
                return c;
        if (!c || c->gen != w->gen || c->w != w) {
                gcache_drop(node);
                c = calloc(1, sizeof(*c));
                if (!c)
                        return NULL;
                c->count = calloc(w->n ? w->n : 1, sizeof(*c->count));
                c->small = calloc(w->n ? w->n : 1, sizeof(*c->small));
                c->access = calloc(w->n ? w->n : 1, sizeof(*c->access));
                node->gcache = c;
                if (!c->count || !c->small || !c->access) {
                        gcache_drop(node);
                        return NULL;
                }
                c->gen = w->gen;
                c->w = w;
        }
        c->n = v->n;
        c->model = v->model;
        memcpy(c->left, v->left, v->n * sizeof(*v->left));
        memset(c->memo, 0, sizeof(c->memo));
        for (size_t i = 0; i < w->n; i++) {
                const struct gtype *t = &w->types[i];
                c->access[i] = type_access(t, v->model);
                c->count[i] = c->small[i] = 0;
                for (size_t d = 0; d < v->n; d++) {
                        if (v->left[d] >= t->milli)
                                c->count[i]++;
                        else
                                c->small[i] += v->left[d];
                }
        }
        return c;
}

/* One device's change, from -> to milli left, times devices like it. */
struct gchange {
        int64_t from, to, times;
};

static double frag_with(const struct gworkload *w,
                        const struct gcache *c,
                        int64_t cpu_left,
                        int64_t total,
                        const struct gchange *ch)
{
        double sum = 0;

        for (size_t i = 0; i < w->n; i++) {
                const struct gtype *t = &w->types[i];
                int64_t count = c->count[i], small = c->small[i], frag = total;
                if (ch) {
                        count += ((ch->to >= t->milli) - (ch->from >= t->milli)) * ch->times;
                        small += ((ch->to < t->milli ? ch->to : 0) -
                                  (ch->from < t->milli ? ch->from : 0)) *
                                 ch->times;
                }
                if (t->count > 0 && c->access[i] && count >= t->count && cpu_left >= t->cpu)
                        frag = small;
                sum += t->weight * (double)frag;
        }
        return sum;
}

double gp_frag(const struct gworkload *w, struct snode *node, const struct gview *v)
{
        const struct gcache *c = cache_get(w, node, v);

        return c ? frag_with(w, c, v->cpu_left, v->total, NULL) : (double)v->total;
}

double gp_frag_after(const struct gworkload *w,
                     struct snode *node,
                     const struct gview *v,
                     const struct gpod *p,
                     int dev)
{
        const struct gcache *c = cache_get(w, node, v);
        struct gchange ch = {0};
        int64_t total = v->total;

        if (!c)
                return (double)v->total;
        if (p->count > 0 && dev >= 0) {
                ch = (struct gchange){
                    .from = v->left[dev], .to = v->left[dev] - p->milli, .times = 1};
                total -= p->milli;
        } else if (p->count > 0) {
                ch = (struct gchange){.from = 1000, .to = 0, .times = p->count};
                total -= 1000 * p->count;
        }
        return frag_with(w, c, v->cpu_left - p->cpu, total, p->count > 0 ? &ch : NULL);
}

static struct gmemo *memo_slot(const struct gworkload *w,
                               struct snode *node,
                               const struct gview *v,
                               const struct gpod *p)
{
        struct gcache *c = cache_get(w, node, v);
        uint64_t h;

        if (!c)
                return NULL;
        if (c->memo_cpu_left != v->cpu_left) {
                memset(c->memo, 0, sizeof(c->memo));
                c->memo_cpu_left = v->cpu_left;
        }
        h = xp_hash_mix((uint64_t)p->cpu * 0x9e3779b97f4a7c15ull ^ (uint64_t)p->milli << 20 ^
                        (uint64_t)p->count);
        return &c->memo[h % GMEMO_SLOTS];
}

bool gp_memo_get(const struct gworkload *w,
                 struct snode *node,
                 const struct gview *v,
                 const struct gpod *p,
                 int64_t *ret_score,
                 int *ret_dev)
{
        const struct gmemo *m = memo_slot(w, node, v, p);

        if (!m || !m->used || m->cpu != p->cpu || m->milli != p->milli || m->count != p->count)
                return false;
        *ret_score = m->score;
        *ret_dev = m->dev;
        return true;
}

void gp_memo_put(const struct gworkload *w,
                 struct snode *node,
                 const struct gview *v,
                 const struct gpod *p,
                 int64_t score,
                 int dev)
{
        struct gmemo *m = memo_slot(w, node, v, p);

        if (m)
                *m = (struct gmemo){.cpu = p->cpu,
                                    .milli = p->milli,
                                    .count = p->count,
                                    .score = score,
                                    .dev = dev,
                                    .used = true};
}

/* ---- the live mix --------------------------------------------------------------------------- */

static int live_mix(struct xp_sched *sched, uint32_t res, struct gworkload **ret)
{
        struct xp_sched_typical_pod *t = NULL;
        size_t n = 0;
        struct gworkload *saved = sched->workload;
        int r;

        t = calloc(sched->pod_map.n ? sched->pod_map.n : 1, sizeof(*t));
        if (!t)
                return -ENOMEM;
        for (size_t i = 0; i < sched->pod_map.cap; i++) {
                const struct spod *p = sched->pod_map.keys[i] ? sched->pod_map.values[i] : NULL;
                struct xp_sched_typical_pod *x;
                int64_t milli;
                size_t k;
                /* what a pod holds is on its devices (its requests of them are not accounted) */
                if (!p || !p->node || !p->node->present)
                        continue;
                milli = gp_pod_milli(p, res);
                x = &t[n];
                *x = (struct xp_sched_typical_pod){.weight = 1};
                for (size_t q = 0; q < p->n_reqs; q++)
                        if (p->reqs[q].res == RES_CPU)
                                x->cpu_milli = p->reqs[q].milli;
                if (milli > 0) {
                        x->gpu_count = milli >= 1000 ? milli / 1000 : 1;
                        x->gpu_milli = milli >= 1000 ? 1000 : milli;
                }
                for (k = 0; k < n; k++)
                        if (t[k].cpu_milli == x->cpu_milli && t[k].gpu_milli == x->gpu_milli &&
                            t[k].gpu_count == x->gpu_count)
                                break;
                if (k < n)
                        t[k].weight++;
                else
                        n++;
        }
        sched->workload = NULL;
        r = xp_sched_set_workload(sched, sched->res_names[res], NULL, t, n, NULL);
        free(t);
        *ret = sched->workload;
        sched->workload = saved;
        return r;
}

const struct gworkload *gp_workload(struct xp_sched *sched, uint32_t res)
{
        if (sched->workload)
                return sched->workload;
        /* the live mix is rebuilt only when the placed pods changed in number */
        if (sched->live && sched->live_pods == sched->pod_map.n && sched->live->res == res)
                return sched->live;
        gworkload_free(sched->live);
        sched->live = NULL;
        if (live_mix(sched, res, &sched->live) < 0)
                return NULL;
        sched->live_pods = sched->pod_map.n;
        return sched->live;
}

int xp_sched_fragmentation(struct xp_sched *sched, double *ret_frag, double *ret_free)
{
        const struct gworkload *w = sched->workload;
        double frag = 0, free_milli = 0;

        if (!w)
                return -ENODATA;
        for (size_t i = 0; i < sched->n_nodes; i++) {
                struct snode *node = sched->nodes[i];
                struct gview v;
                if (!node->present)
                        continue;
                gp_view(sched, node, w->res, w->model_label, &v);
                frag += gp_frag(w, node, &v);
                free_milli += (double)v.total;
        }
        *ret_frag = frag;
        *ret_free = free_milli;
        return 0;
}
