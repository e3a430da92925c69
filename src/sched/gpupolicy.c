/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The GPU-sharing policies as one score op (sched_score_gpu_policy) and the share choice that
 * goes with each: the node scores of the FGD paper's simulator (learnt from it, not copied:
 * docs/simulator.md has each formula), with its integer scores kept where the published
 * figures depend on them, and xpool's own. Whole devices are chosen by device selection (the
 * lowest free indices on a node without links, as the paper's simulator takes them).
 */
#include <math.h>
#include <string.h>
#include <strings.h>

#include "gpupolicy.h"
#include "xpool/strmap.h"

static const char *const profile_names[_XP_SCHED_PROFILE_MAX] = {
    [XP_SCHED_SPREAD] = "spread",
    [XP_SCHED_BINPACK] = "binpack",
    [XP_SCHED_RANDOM] = "random",
    [XP_SCHED_DOTPROD] = "dotprod",
    [XP_SCHED_GPU_CLUSTERING] = "gpuclustering",
    [XP_SCHED_GPU_PACKING] = "gpupacking",
    [XP_SCHED_BESTFIT] = "bestfit",
    [XP_SCHED_FGD] = "fgd",
    [XP_SCHED_XPOOL] = "xpool",
};

const char *xp_sched_profile_to_string(enum xp_sched_profile profile)
{
        return (unsigned)profile < _XP_SCHED_PROFILE_MAX ? profile_names[profile] : NULL;
}

int xp_sched_profile_from_string(const char *name, enum xp_sched_profile *ret)
{
        for (size_t i = 0; name && i < _XP_SCHED_PROFILE_MAX; i++)
                if (strcasecmp(name, profile_names[i]) == 0) {
                        *ret = (enum xp_sched_profile)i;
                        return 0;
                }
        return -EINVAL;
}

bool gp_profile_is_gpu(enum xp_sched_profile profile)
{
        return profile >= XP_SCHED_RANDOM && profile < _XP_SCHED_PROFILE_MAX;
}

uint64_t gp_tie_salt(const struct pctx *ctx)
{
        enum xp_sched_profile prof = ctx->sched->options.profile;

        return gp_profile_is_gpu(prof) && prof != XP_SCHED_RANDOM ? 0 : ctx->req.hash;
}

int64_t gp_pod_milli(const struct spod *p, uint32_t res)
{
        int64_t sum = 0;

        if (!p->node || !p->node->present)
                return 0;
        for (size_t i = 0; i < p->n_devs; i++)
                if (p->devs[i].res == res)
                        sum += p->devs[i].milli;
        return sum;
}

void gp_pod(const struct pctx *ctx, struct gpod *ret)
{
        *ret = (struct gpod){.cpu = ctx->req.cpu, .res = UINT32_MAX};
        for (size_t i = 0; i < ctx->req.n; i++) {
                const struct sreq *r = &ctx->req.items[i];
                if (r->res <= RES_ACCEL || r->milli <= 0)
                        continue;
                ret->res = r->res;
                ret->count = r->milli >= 1000 ? r->milli / 1000 : 1;
                ret->milli = r->milli >= 1000 ? 1000 : r->milli;
                return;
        }
}

void gp_view(const struct xp_sched *sched,
             const struct snode *node,
             uint32_t res,
             const char *model_label,
             struct gview *ret)
{
        const struct dgroup *g = res != UINT32_MAX ? node_group(node, res) : NULL;

        (void)sched;
        ret->g = g;
        ret->cpu_left = node_alloc(node, RES_CPU) - node_used(node, RES_CPU);
        ret->n = g ? g->n : 0;
        ret->total = ret->idle = 0;
        for (size_t d = 0; d < ret->n; d++) {
                ret->left[d] = g->dev[d].healthy ? 1000 - g->dev[d].used_milli : 0;
                ret->total += ret->left[d];
                ret->idle += ret->left[d] == 1000;
        }
        ret->model = model_label ? xp_strmap_get(&node->labels, model_label) : NULL;
}

/* ---- the paper's node scores, 0..100 as its plugins return them ------------------------- */

/* Tetris' alignment as the paper's simulator scores it: per group of devices the pod could
 * take (each shared device with room, the idle ones together), 1 - the mean of the normalized
 * products; the best group wins and gives the device. */
int64_t gp_dotprod(const struct gview *v, const struct gpod *p, int *ret_dev)
{
        double best = -1, want = (double)(p->milli * p->count);

        *ret_dev = -1;
        for (size_t d = 0; d <= v->n; d++) {
                double left, s;
                if (d < v->n) {
                        if (want >= 1000 || v->left[d] >= 1000 || v->left[d] < want)
                                continue;
                        left = (double)v->left[d];
                } else {
                        if (want > (double)(v->idle * 1000))
                                continue;
                        left = (double)(v->idle * 1000);
                }
                s = 1 - ((double)v->cpu_left / GP_MAX_CPU * (double)p->cpu / GP_MAX_CPU +
                         left / GP_MAX_GPU * want / GP_MAX_GPU) /
                            2;
                if (s > best) {
                        best = s;
                        *ret_dev = d < v->n ? (int)d : -1;
                }
        }
        return best < 0 ? 0 : (int64_t)(100 * best);
}

/* The class a pod's device request falls in, as the paper's simulator tags pods: every share
 * is one class (whatever its milli), whole devices one class per count; 0 for none. */
static int64_t tag_of(int64_t milli)
{
        return milli <= 0 ? 0 : milli < 1000 ? 1 : milli;
}

/* Pods of one kind of device request together (a share, or a count of whole devices): a node
 * holding only the pod's kind first, then one holding it among others, an idle one, one holding
 * other kinds; fuller first within. */
int64_t gp_clustering(const struct snode *node, const struct gview *v, const struct gpod *p)
{
        int64_t tag = tag_of(p->milli * p->count), fill = 25 * (GP_MAX_GPU - v->total) / GP_MAX_GPU;
        bool same = false, other = false;

        if (tag == 0)
                return 0;
        for (size_t i = 0; i < node->n_pods; i++) {
                int64_t t = tag_of(gp_pod_milli(node->pods[i], p->res));
                if (t == tag)
                        same = true;
                else if (t > 0)
                        other = true;
        }
        if (same)
                return fill + (other ? 50 : 75);
        return fill + (other ? 0 : 25);
}

/* Shared devices first (the fuller the better), then free devices of a used node (the fewer
 * the better), then an idle node (the fewer devices the better). */
int64_t gp_packing(const struct gview *v, const struct gpod *p)
{
        int64_t need = p->count, fresh = 0, room = 0;
        int64_t order[DEVSEL_MAX];
        size_t n = 0;

        if (p->count == 0)
                return 0;
        if (v->idle == (int64_t)v->n)
                return 100 / 3 - v->idle > v->idle ? 100 / 3 - v->idle : v->idle;
        for (size_t d = 0; d < v->n; d++) {
                size_t at = n++;
                while (at > 0 && v->left[order[at - 1]] > v->left[d]) {
                        order[at] = order[at - 1];
                        at--;
                }
                order[at] = (int64_t)d;
        }
        for (size_t i = 0; i < n && need > 0; i++) {
                int64_t left = v->left[order[i]];
                if (left < p->milli)
                        continue;
                need--;
                fresh += left == 1000;
                room += left * 100 / 1000;
        }
        if (fresh > 0)
                return 100 / 2 - fresh > 100 / 3 ? 100 / 2 - fresh : 100 / 3;
        return 100 - room / 10 > 100 / 2 ? 100 - room / 10 : 100 / 2;
}

/* The least CPU and device left after the pod, half each, normalized to the largest node. */
int64_t gp_best_fit(const struct gview *v, const struct gpod *p)
{
        double s = (double)(v->cpu_left - p->cpu) / GP_MAX_CPU * 0.5 +
                   (double)(v->total - p->milli * p->count) / GP_MAX_GPU * 0.5;

        return (int64_t)((1.0 - s) * 100);
}

static double sigmoid(double x)
{
        return 1.0 / (1.0 + exp(-x));
}

/*
 * FGD: how much a placement grows the node's fragmentation (for a share, on the device that
 * grows it least; ties to the lowest index), as the paper's integer sigmoid of the change.
 */
static int64_t frag_score(const struct gworkload *w,
                          struct snode *node,
                          const struct gview *v,
                          const struct gpod *p,
                          int *ret_dev)
{
        double before = gp_frag(w, node, v), best = 0;
        bool found = false;

        *ret_dev = -1;
        if (p->count != 1 || p->milli >= 1000)
                return (int64_t)(sigmoid((before - gp_frag_after(w, node, v, p, -1)) / 1000) * 100);
        for (size_t g = 0; g < v->n; g++) {
                double s;
                if (v->left[g] < p->milli)
                        continue;
                s = floor(sigmoid((before - gp_frag_after(w, node, v, p, (int)g)) / 1000) * 100);
                if (!found || s > best) {
                        best = s;
                        *ret_dev = (int)g;
                        found = true;
                }
        }
        return (int64_t)best;
}

int64_t gp_frag_score(const struct gworkload *w,
                      struct snode *node,
                      const struct gview *v,
                      const struct gpod *p,
                      int *ret_dev)
{
        int64_t score;

        if (gp_memo_get(w, node, v, p, &score, ret_dev))
                return score;
        score = frag_score(w, node, v, p, ret_dev);
        gp_memo_put(w, node, v, p, score, *ret_dev);
        return score;
}
