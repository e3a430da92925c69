/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The filters, cheapest first, as an ops table. A node that fails one filter is not checked
 * further (kube-scheduler stops at the first failing plugin too), so its reasons come from
 * that filter alone.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sched_internal.h"
#include "xpool/strutil.h"

void reasons_add(struct reasons *r, enum reason_kind kind, uint32_t res, const struct staint *t)
{
        if (r->n < REASONS_PER_NODE_MAX)
                r->items[r->n++] = (struct reason){.kind = kind, .res = res, .taint = t};
}

bool node_tolerates(const struct xp_pod *pod,
                    const char *key,
                    const char *value,
                    enum xp_taint_effect effect)
{
        for (size_t i = 0; i < pod->spec.tolerations.n; i++) {
                const struct xp_toleration *t = &pod->spec.tolerations.items[i];
                const char *tkey = t->key ? t->key : "";

                if (t->effect != XP_TAINT_EFFECT_UNSET && t->effect != effect)
                        continue;
                if (t->op == XP_TOLERATION_OP_EXISTS) {
                        if (tkey[0] == '\0' || strcmp(tkey, key) == 0)
                                return true;
                        continue;
                }
                if (strcmp(tkey, key) == 0 && strcmp(t->value ? t->value : "", value) == 0)
                        return true;
        }
        return false;
}

static bool
unschedulable_filter(const struct pctx *ctx, const struct snode *node, struct reasons *r)
{
        if (!node->unschedulable ||
            node_tolerates(
                ctx->pod, "node.kubernetes.io/unschedulable", "", XP_TAINT_EFFECT_NO_SCHEDULE))
                return true;
        reasons_add(r, REASON_UNSCHEDULABLE, 0, NULL);
        return false;
}

/* The node lifecycle controller taints nodes that are not Ready; we read the condition directly
 * and report it as that taint, so the message is the one kube-scheduler would give. */
static const struct staint not_ready_taint = {.key = (char *)"node.kubernetes.io/not-ready",
                                              .value = (char *)"",
                                              .effect = XP_TAINT_EFFECT_NO_SCHEDULE};
static const struct staint unreachable_taint = {.key = (char *)"node.kubernetes.io/unreachable",
                                                .value = (char *)"",
                                                .effect = XP_TAINT_EFFECT_NO_SCHEDULE};

static bool ready_filter(const struct pctx *ctx, const struct snode *node, struct reasons *r)
{
        const struct staint *t = node->ready == 0 ? &not_ready_taint : &unreachable_taint;

        if (node->ready == 1 || node_tolerates(ctx->pod, t->key, t->value, t->effect))
                return true;
        reasons_add(r, REASON_TAINT, 0, t);
        return false;
}

static bool values_contain(const struct xp_selector_requirement *req, const char *v)
{
        for (size_t i = 0; i < req->values.n; i++)
                if (xp_streq0(req->values.items[i], v))
                        return true;
        return false;
}

static bool parse_i64(const char *s, int64_t *ret)
{
        char *end;
        long long v;

        if (!s || !*s)
                return false;
        errno = 0;
        v = strtoll(s, &end, 10);
        if (*end || errno)
                return false;
        *ret = v;
        return true;
}

static bool requirement_matches(const struct xp_selector_requirement *req, const char *value)
{
        int64_t a, b;

        switch (req->op) {
        case XP_SELECTOR_OP_IN:
                return value && values_contain(req, value);
        case XP_SELECTOR_OP_NOT_IN:
                return !value || !values_contain(req, value);
        case XP_SELECTOR_OP_EXISTS:
                return value != NULL;
        case XP_SELECTOR_OP_DOES_NOT_EXIST:
                return value == NULL;
        case XP_SELECTOR_OP_GT:
        case XP_SELECTOR_OP_LT:
                if (req->values.n != 1 || !parse_i64(value, &a) ||
                    !parse_i64(req->values.items[0], &b))
                        return false;
                return req->op == XP_SELECTOR_OP_GT ? a > b : a < b;
        default:
                return false;
        }
}

bool node_selector_term_matches(const struct xp_node_selector_term *term, const struct snode *node)
{
        /* an empty term selects no node, as in Kubernetes */
        if (term->match_expressions.n == 0 && term->match_fields.n == 0)
                return false;
        for (size_t i = 0; i < term->match_expressions.n; i++) {
                const struct xp_selector_requirement *req = &term->match_expressions.items[i];
                if (!requirement_matches(req,
                                         xp_strmap_get(&node->labels, req->key ? req->key : "")))
                        return false;
        }
        for (size_t i = 0; i < term->match_fields.n; i++) {
                const struct xp_selector_requirement *req = &term->match_fields.items[i];
                if (!xp_streq0(req->key, "metadata.name") || !requirement_matches(req, node->name))
                        return false;
        }
        return true;
}

static bool affinity_filter(const struct pctx *ctx, const struct snode *node, struct reasons *r)
{
        const struct xp_pod_spec *spec = &ctx->pod->spec;
        const struct xp_node_selector *req = spec->affinity && spec->affinity->node_affinity
                                                 ? spec->affinity->node_affinity->required
                                                 : NULL;

        for (size_t i = 0; i < spec->node_selector.n; i++)
                if (!xp_streq0(xp_strmap_get(&node->labels, spec->node_selector.items[i].key),
                               spec->node_selector.items[i].value))
                        goto fail;
        if (req) {
                for (size_t i = 0; i < req->terms.n; i++)
                        if (node_selector_term_matches(&req->terms.items[i], node))
                                return true;
                goto fail;
        }
        return true;
fail:
        reasons_add(r, REASON_AFFINITY, 0, NULL);
        return false;
}

static bool taint_filter(const struct pctx *ctx, const struct snode *node, struct reasons *r)
{
        for (size_t i = 0; i < node->n_taints; i++) {
                const struct staint *t = &node->taints[i];
                if (t->effect != XP_TAINT_EFFECT_NO_SCHEDULE &&
                    t->effect != XP_TAINT_EFFECT_NO_EXECUTE)
                        continue;
                if (!node_tolerates(ctx->pod, t->key, t->value, t->effect)) {
                        reasons_add(r, REASON_TAINT, 0, t);
                        return false;
                }
        }
        return true;
}

static bool fit_filter(const struct pctx *ctx, const struct snode *node, struct reasons *r)
{
        const struct podreq *req = &ctx->req;
        bool ok = true;

        for (size_t i = 0; i < req->n; i++) {
                uint32_t res = req->items[i].res;
                const struct dgroup *g;
                bool fits;

                if (podreq_counted(req, res)) {
                        fits = res_free_covers(node_res_free(node, res), req->items[i].milli);
                } else if (res == RES_ACCEL) {
                        fits = accel_pick_group(ctx, node, NULL) != NULL;
                } else {
                        g = memshare_group(ctx, node);
                        fits = g && (req->mem_base == RES_ACCEL ||
                                     memshare_group_fits(g, req->mem_bytes, NULL, false));
                }
                if (!fits) {
                        reasons_add(r,
                                    res == RES_PODS ? REASON_TOO_MANY_PODS : REASON_INSUFFICIENT,
                                    res,
                                    NULL);
                        ok = false;
                }
        }
        return ok;
}

static bool
anti_affinity_filter(const struct pctx *ctx, const struct snode *node, struct reasons *r)
{
        for (size_t i = 0; i < ctx->n_anti; i++)
                if (xp_streq0(xp_strmap_get(&node->labels, ctx->anti[i].key), ctx->anti[i].value)) {
                        reasons_add(r,
                                    ctx->anti[i].own ? REASON_ANTI_AFFINITY
                                                     : REASON_EXISTING_ANTI_AFFINITY,
                                    0,
                                    NULL);
                        return false;
                }
        return true;
}

static bool numa_filter(const struct pctx *ctx, const struct snode *node, struct reasons *r)
{
        struct devsel_pick pick;

        if (!ctx->req.single_numa ||
            sched_select_devices(ctx, node, SCHED_NUMA_REQUIRED, &pick) > 0)
                return true;
        reasons_add(r, REASON_NUMA, 0, NULL);
        return false;
}

static const struct filter_ops unschedulable_ops = {.name = "NodeUnschedulable",
                                                    .filter = unschedulable_filter};
static const struct filter_ops ready_ops = {.name = "NodeReady", .filter = ready_filter};
static const struct filter_ops affinity_ops = {.name = "NodeAffinity", .filter = affinity_filter};
static const struct filter_ops taint_ops = {.name = "TaintToleration", .filter = taint_filter};
static const struct filter_ops fit_ops = {.name = "NodeResourcesFit", .filter = fit_filter};
static const struct filter_ops anti_ops = {.name = "InterPodAntiAffinity",
                                           .filter = anti_affinity_filter};
static const struct filter_ops numa_ops = {.name = "SingleNUMANode", .filter = numa_filter};

/* fitsum.c judges plain pods for exactly these (FILTERS_SUMMED): a filter added here turns the
 * summaries off until fitsum_pod_plain() knows when it passes */
const struct filter_ops *const sched_filters[] = {
    &unschedulable_ops,
    &ready_ops,
    &affinity_ops,
    &taint_ops,
    &hostports_ops, /* hostports.c; before the fit filter, as kube-scheduler orders them */
    &fit_ops,
    &anti_ops,
    &numa_ops,
};
const size_t sched_n_filters = XP_ELEMENTSOF(sched_filters);

bool sched_filter_node(const struct pctx *ctx, const struct snode *node, struct reasons *r)
{
        r->n = 0;
        for (size_t f = 0; f < sched_n_filters; f++)
                if (!sched_filters[f]->filter(ctx, node, r))
                        return false;
        return true;
}
