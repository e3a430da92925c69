/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Why pending (include/sched/xpool/why.h): every node is filtered as a placement filters it, but
 * none is skipped and each keeps its reasons; nodes with the same reasons form a class. A node
 * that passes the filters but cannot give the devices (too few free on one NUMA node or one
 * island of the selection) is its own class, and one that fits is said to fit (the pod waits for
 * its next attempt). The hints then answer, per blocking cause, "what would it take".
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched_internal.h"
#include "xpool/why.h"

enum class_kind {
        CLASS_FILTERS, /* failed a filter: reasons say which */
        CLASS_DEVICES, /* passed, but the devices could not be chosen */
        CLASS_FITS,
};

struct nclass {
        enum class_kind kind;
        struct reasons rs;
        size_t count;
        const char *names[XP_WHY_NAMES_MAX];
};

struct classes {
        struct nclass *items;
        size_t n, cap;
};

static bool same_class(const struct nclass *c, enum class_kind kind, const struct reasons *rs)
{
        if (c->kind != kind || c->rs.n != rs->n)
                return false;
        for (size_t i = 0; i < rs->n; i++)
                if (c->rs.items[i].kind != rs->items[i].kind ||
                    c->rs.items[i].res != rs->items[i].res ||
                    c->rs.items[i].taint != rs->items[i].taint)
                        return false;
        return true;
}

/* A class names its alphabetically first nodes, sorted: the text is the same whatever the order
 * the nodes came in (users compare it, and tests read it word for word). */
static void names_keep_first(struct nclass *c, const char *name)
{
        size_t kept = c->count < XP_WHY_NAMES_MAX ? c->count : XP_WHY_NAMES_MAX, at = kept;

        while (at > 0 && strcmp(c->names[at - 1], name) > 0)
                at--;
        if (at == XP_WHY_NAMES_MAX)
                return;
        if (kept == XP_WHY_NAMES_MAX)
                kept--; /* the last one drops out */
        memmove(c->names + at + 1, c->names + at, (kept - at) * sizeof(*c->names));
        c->names[at] = name;
}

static int
class_add(struct classes *cs, enum class_kind kind, const struct reasons *rs, const char *name)
{
        struct nclass *c = NULL;

        for (size_t i = 0; i < cs->n && !c; i++)
                if (same_class(&cs->items[i], kind, rs))
                        c = &cs->items[i];
        if (!c) {
                if (cs->n == cs->cap) {
                        size_t cap = cs->cap ? cs->cap * 2 : 8;
                        struct nclass *m = realloc(cs->items, cap * sizeof(*m));
                        if (!m)
                                return -ENOMEM;
                        cs->items = m;
                        cs->cap = cap;
                }
                c = &cs->items[cs->n++];
                *c = (struct nclass){.kind = kind, .rs = *rs};
        }
        names_keep_first(c, name);
        c->count++;
        return 0;
}

static int by_count(const void *a, const void *b)
{
        const struct nclass *x = a, *y = b;

        if (x->count != y->count)
                return x->count > y->count ? -1 : 1;
        return strcmp(x->names[0], y->names[0]);
}

static void class_print(const struct xp_sched *sched, const struct nclass *c, FILE *f)
{
        fprintf(f, "%zu node%s (", c->count, c->count == 1 ? "" : "s");
        for (size_t i = 0; i < c->count && i < XP_WHY_NAMES_MAX; i++)
                fprintf(f, "%s%s", i ? ", " : "", c->names[i]);
        if (c->count > XP_WHY_NAMES_MAX)
                fprintf(f, " and %zu more", c->count - XP_WHY_NAMES_MAX);
        fputs("): ", f);
        if (c->kind == CLASS_FITS) {
                fputs("fit now; the pod waits for its next attempt\n", f);
                return;
        }
        if (c->kind == CLASS_DEVICES) {
                fputs("enough devices free, but not together as the pod needs them "
                      "(topology unsatisfiable)\n",
                      f);
                return;
        }
        for (size_t i = 0; i < c->rs.n; i++) {
                _cleanup_free_ char *text = NULL;
                if (reason_describe(sched, &c->rs.items[i], &text) < 0)
                        continue;
                fprintf(f, "%s%s", i ? ", " : "", text);
        }
        fputc('\n', f);
}

/* ---- hints ---------------------------------------------------------------------------------- */

/* The largest set of free healthy devices of g joined by NVLink (directly or through others). */
static size_t largest_island(const struct dgroup *g)
{
        const uint16_t nvlink = devsel_link_affinity(XP_LINK_NVLINK, 1);
        int comp[DEVSEL_MAX];
        size_t best = 0;

        if (!g->affinity)
                return g->free_whole > 0 ? 1 : 0;
        for (size_t i = 0; i < g->n; i++)
                comp[i] = -1;
        for (size_t i = 0; i < g->n; i++) {
                size_t stack[DEVSEL_MAX], top = 0, size = 0;
                if (comp[i] >= 0 || !g->dev[i].healthy || g->dev[i].used_milli != 0)
                        continue;
                comp[i] = (int)i;
                stack[top++] = i;
                while (top > 0) {
                        size_t a = stack[--top];
                        size++;
                        for (size_t b = 0; b < g->n; b++)
                                if (comp[b] < 0 && g->dev[b].healthy && g->dev[b].used_milli == 0 &&
                                    g->affinity[a * g->n + b] >= nvlink) {
                                        comp[b] = (int)i;
                                        stack[top++] = b;
                                }
                }
                if (size > best)
                        best = size;
        }
        return best;
}

/* Whether any link of g is NVLink (an island is worth naming only then). */
static bool has_nvlink(const struct dgroup *g)
{
        const uint16_t nvlink = devsel_link_affinity(XP_LINK_NVLINK, 1);

        for (size_t i = 0; g->affinity && i < g->n * g->n; i++)
                if (g->affinity[i] >= nvlink)
                        return true;
        return false;
}

/* "needs N <res> on one node; the most free on one node is M, on K nodes" (+ the island). */
static void
hint_insufficient(const struct xp_sched *sched, const struct pctx *ctx, uint32_t res, FILE *f)
{
        int64_t need = 0, most = 0;
        size_t at_most = 0, island = 0;
        bool nvlink = false, devices = false;

        for (size_t i = 0; i < ctx->req.n; i++)
                if (ctx->req.items[i].res == res)
                        need = ctx->req.items[i].milli;
        for (size_t i = 0; i < sched->n_nodes; i++) {
                const struct snode *n = sched->nodes[i];
                const struct dgroup *g;
                int64_t free_milli;

                if (!n->present)
                        continue;
                g = node_group(n, res);
                if (g) {
                        size_t is = largest_island(g);
                        devices = true;
                        free_milli = need >= 1000 ? (int64_t)g->free_whole * 1000 : g->max_free;
                        nvlink = nvlink || has_nvlink(g);
                        if (is > island)
                                island = is;
                } else {
                        free_milli = node_alloc(n, res) - node_used(n, res);
                }
                if (free_milli > most) {
                        most = free_milli;
                        at_most = 0;
                }
                at_most += free_milli == most;
        }
        fprintf(f, "to unblock: needs ");
        if (devices && need < 1000)
                fprintf(f,
                        "%lld milli of one %s device; the largest free share is %lld milli",
                        (long long)need,
                        sched->res_names[res],
                        (long long)most);
        else if (res == RES_CPU || devices)
                fprintf(f,
                        "%g %s on one node; the most free on one node is %g",
                        (double)need / 1000,
                        sched->res_names[res],
                        (double)most / 1000);
        else
                fprintf(f,
                        "%lld %s on one node (milli); the most free on one node is %lld",
                        (long long)need,
                        sched->res_names[res],
                        (long long)most);
        if (!(devices && need < 1000))
                fprintf(f, ", on %zu node%s", at_most, at_most == 1 ? "" : "s");
        if (nvlink && need >= 2000)
                fprintf(f, "; the largest free NVLink island is %zu", island);
        fputc('\n', f);
}

static void hint_one(const struct xp_sched *sched,
                     const struct pctx *ctx,
                     const struct nclass *c,
                     const struct reason *r,
                     FILE *f)
{
        switch (r->kind) {
        case REASON_INSUFFICIENT:
                hint_insufficient(sched, ctx, r->res, f);
                break;
        case REASON_TAINT:
                fprintf(f,
                        "to unblock: a toleration of {%s: %s}, or the taint off %zu node%s\n",
                        r->taint->key,
                        r->taint->value,
                        c->count,
                        c->count == 1 ? "" : "s");
                break;
        case REASON_AFFINITY:
                fputs("to unblock: a node that matches the pod's nodeSelector and node affinity\n",
                      f);
                break;
        case REASON_UNSCHEDULABLE:
                fprintf(f,
                        "to unblock: uncordon (%zu node%s cordoned)\n",
                        c->count,
                        c->count == 1 ? "" : "s");
                break;
        case REASON_TOO_MANY_PODS:
                fputs("to unblock: fewer pods on the node (its pods capacity is used)\n", f);
                break;
        default:
                break;
        }
}

/* One hint per distinct cause (a taint or a resource named once, however many classes). */
static void
hints(const struct xp_sched *sched, const struct pctx *ctx, const struct classes *cs, FILE *f)
{
        for (size_t i = 0; i < cs->n; i++) {
                const struct nclass *c = &cs->items[i];
                if (c->kind == CLASS_DEVICES) {
                        fputs(
                            "to unblock: the pod's devices free together on one node (on one NUMA node "
                            "when it asks for one), or fewer of them per pod\n",
                            f);
                        continue;
                }
                for (size_t k = 0; k < c->rs.n; k++) {
                        bool seen = false;
                        for (size_t j = 0; j < i && !seen; j++)
                                for (size_t m = 0; m < cs->items[j].rs.n && !seen; m++)
                                        seen =
                                            cs->items[j].rs.items[m].kind == c->rs.items[k].kind &&
                                            cs->items[j].rs.items[m].res == c->rs.items[k].res &&
                                            cs->items[j].rs.items[m].taint == c->rs.items[k].taint;
                        for (size_t m = 0; m < k && !seen; m++)
                                seen = c->rs.items[m].kind == c->rs.items[k].kind &&
                                       c->rs.items[m].res == c->rs.items[k].res;
                        if (!seen)
                                hint_one(sched, ctx, c, &c->rs.items[k], f);
                }
        }
}

static int classify(struct xp_sched *sched, const struct pctx *ctx, struct classes *cs)
{
        for (size_t i = 0; i < sched->n_nodes; i++) {
                struct snode *node = sched->nodes[i];
                struct reasons rs = {0};
                enum class_kind kind = CLASS_FITS;
                int r;

                if (!node->present)
                        continue;
                if (!sched_filter_node(ctx, node, &rs)) {
                        kind = CLASS_FILTERS;
                } else if (rank_needs_devices(ctx, node)) {
                        struct devsel_pick pick;
                        r = sched_select_devices(
                            ctx, node, ctx->req.single_numa ? SCHED_NUMA_REQUIRED : -1, &pick);
                        if (r < 0)
                                return r;
                        if (r == 0)
                                kind = CLASS_DEVICES;
                        rs.n = 0;
                }
                r = class_add(cs, kind, &rs, node->name);
                if (r < 0)
                        return r;
        }
        if (cs->n > 1)
                if (cs->n > 1) /* an empty array may be NULL, which qsort may not take */
                        qsort(cs->items, cs->n, sizeof(*cs->items), by_count);
        return 0;
}

int xp_sched_why(struct xp_sched *sched, const struct xp_pod *pod, char **ret, struct xp_error *err)
{
        struct pctx ctx = {.sched = sched, .pod = pod};
        struct classes cs = {0};
        char *buf = NULL;
        size_t len = 0;
        FILE *f;
        int r;

        r = sched_pod_requests(sched, pod, &ctx.req, err);
        if (r < 0)
                return r;
        r = anti_affinity_prepare(&ctx);
        if (r >= 0)
                r = classify(sched, &ctx, &cs);
        if (r >= 0 && !(f = open_memstream(&buf, &len)))
                r = -ENOMEM;
        if (r >= 0) {
                if (sched->n_present == 0)
                        fputs("no nodes: the cluster has none to schedule pods on\n", f);
                for (size_t i = 0; i < cs.n; i++)
                        class_print(sched, &cs.items[i], f);
                hints(sched, &ctx, &cs, f);
                if (fclose(f) != 0) {
                        free(buf);
                        r = -ENOMEM;
                }
        }
        free(cs.items);
        free(ctx.anti);
        sterms_free(ctx.terms, ctx.n_terms);
        podreq_done(&ctx.req);
        if (r == -ENOMEM)
                return xp_errorf(err, r, "explaining pod %s: out of memory", pod->metadata.name);
        if (r < 0)
                return r;
        *ret = buf;
        return 0;
}
