/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Required pod anti-affinity, both ways, as kube-scheduler's InterPodAffinity filter does it:
 * the incoming pod's terms keep it out of the topology domains of the placed pods they select,
 * and the terms of placed pods keep out of their domains an incoming pod they select.
 *
 * Neither direction scans every placed pod. Placed pods with required anti-affinity terms are
 * kept in a list of their own (with the terms copied: the pod object is the caller's). The
 * placed pods a term may select are found through an index of placed pods by label ("key=value"
 * -> pods), built the first time a pod with terms is placed and kept up to date from then on, so
 * a cluster without anti-affinity pays nothing for it. A selector with no equality (only NotIn,
 * Exists, DoesNotExist, or empty) cannot use the index and falls back to the scan.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sched_internal.h"
#include "xpool/strutil.h"

/* Pods bearing one label, for the index. */
struct plist {
        char *key; /* "key=value", the map's key */
        struct spod **pods;
        size_t n;
        size_t cap;
};

static void strv_free(char **v, size_t n)
{
        for (size_t i = 0; i < n; i++)
                free(v[i]);
        free(v);
}

static void term_done(struct sterm *t)
{
        free(t->topology_key);
        strv_free(t->namespaces, t->n_namespaces);
        xp_strmap_done(&t->match_labels);
        for (size_t i = 0; i < t->n_exprs; i++) {
                free(t->exprs[i].key);
                strv_free(t->exprs[i].values, t->exprs[i].n_values);
        }
        free(t->exprs);
        *t = (struct sterm){0};
}

void sterms_free(struct sterm *terms, size_t n)
{
        for (size_t i = 0; i < n; i++)
                term_done(&terms[i]);
        free(terms);
}

static int strv_copy(char *const *src, size_t n, char ***ret)
{
        char **v;

        *ret = NULL;
        if (n == 0)
                return 0;
        v = calloc(n, sizeof(*v));
        if (!v)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                if (!(v[i] = strdup(src[i] ? src[i] : ""))) {
                        strv_free(v, i);
                        return -ENOMEM;
                }
        *ret = v;
        return 0;
}

static int term_copy(const struct xp_pod_affinity_term *src, struct sterm *ret)
{
        struct sterm t = {.selects = src->label_selector != NULL};
        const struct xp_label_selector *sel = src->label_selector;

        t.topology_key = strdup(src->topology_key);
        if (!t.topology_key ||
            strv_copy(src->namespaces.items, src->namespaces.n, &t.namespaces) < 0)
                goto nomem;
        t.n_namespaces = src->namespaces.n;
        if (sel && xp_strmap_copy(&sel->match_labels, &t.match_labels) < 0)
                goto nomem;
        if (sel && sel->match_expressions.n) {
                t.exprs = calloc(sel->match_expressions.n, sizeof(*t.exprs));
                if (!t.exprs)
                        goto nomem;
        }
        for (size_t i = 0; sel && i < sel->match_expressions.n; i++) {
                const struct xp_selector_requirement *req = &sel->match_expressions.items[i];
                struct sexpr *e = &t.exprs[t.n_exprs++];
                e->op = req->op;
                e->key = strdup(req->key ? req->key : "");
                if (!e->key || strv_copy(req->values.items, req->values.n, &e->values) < 0)
                        goto nomem;
                e->n_values = req->values.n;
        }
        *ret = t;
        return 0;
nomem:
        term_done(&t);
        return -ENOMEM;
}

/* Copies the pod's required anti-affinity terms that have a topology key. */
int sterms_from_pod(const struct xp_pod *pod, struct sterm **ret, size_t *ret_n)
{
        const struct xp_affinity *aff = pod->spec.affinity;
        const struct xp_pod_affinity *anti = aff ? aff->pod_anti_affinity : NULL;
        struct sterm *terms;
        size_t n = 0;

        *ret = NULL;
        *ret_n = 0;
        if (!anti || anti->required.n == 0)
                return 0;
        terms = calloc(anti->required.n, sizeof(*terms));
        if (!terms)
                return -ENOMEM;
        for (size_t i = 0; i < anti->required.n; i++) {
                if (!anti->required.items[i].topology_key)
                        continue;
                if (term_copy(&anti->required.items[i], &terms[n]) < 0) {
                        sterms_free(terms, n);
                        return -ENOMEM;
                }
                n++;
        }
        if (n == 0) {
                free(terms);
                return 0;
        }
        *ret = terms;
        *ret_n = n;
        return 0;
}

static bool strv_contains(char *const *v, size_t n, const char *s)
{
        for (size_t i = 0; i < n; i++)
                if (strcmp(v[i], s) == 0)
                        return true;
        return false;
}

/* Does the term of a pod in owner_ns select a pod in ns with labels? */
static bool term_selects(const struct sterm *t,
                         const char *owner_ns,
                         const char *ns,
                         const struct xp_strmap *labels)
{
        if (!t->selects)
                return false;
        if (t->n_namespaces ? !strv_contains(t->namespaces, t->n_namespaces, ns)
                            : strcmp(owner_ns, ns) != 0)
                return false;
        for (size_t i = 0; i < t->match_labels.n; i++)
                if (!xp_streq0(xp_strmap_get(labels, t->match_labels.items[i].key),
                               t->match_labels.items[i].value))
                        return false;
        for (size_t i = 0; i < t->n_exprs; i++) {
                const struct sexpr *e = &t->exprs[i];
                const char *v = xp_strmap_get(labels, e->key);
                bool in = v && strv_contains(e->values, e->n_values, v);
                bool ok;

                switch (e->op) {
                case XP_SELECTOR_OP_IN:
                        ok = in;
                        break;
                case XP_SELECTOR_OP_NOT_IN:
                        ok = !in;
                        break;
                case XP_SELECTOR_OP_EXISTS:
                        ok = v != NULL;
                        break;
                case XP_SELECTOR_OP_DOES_NOT_EXIST:
                        ok = v == NULL;
                        break;
                default:
                        ok = false; /* Gt, Lt: not for pods */
                        break;
                }
                if (!ok)
                        return false;
        }
        return true;
}

/* ---- the index of placed pods by label ---------------------------------------------------- */

static char *label_key(const char *key, const char *value)
{
        char *s;

        return asprintf(&s, "%s=%s", key, value) < 0 ? NULL : s;
}

static int index_add(struct xp_sched *sched, struct spod *p)
{
        for (size_t i = 0; i < p->labels.n; i++) {
                _cleanup_free_ char *k =
                    label_key(p->labels.items[i].key, p->labels.items[i].value);
                struct plist *l;

                if (!k)
                        return -ENOMEM;
                l = xp_map_get(&sched->label_index, k);
                if (!l) {
                        l = calloc(1, sizeof(*l));
                        if (!l)
                                return -ENOMEM;
                        l->key = TAKE_PTR(k);
                        if (xp_map_put(&sched->label_index, l->key, l) < 0) {
                                free(l->key);
                                free(l);
                                return -ENOMEM;
                        }
                }
                if (l->n == l->cap) {
                        size_t cap = l->cap ? l->cap * 2 : 4;
                        struct spod **m = realloc(l->pods, cap * sizeof(*m));
                        if (!m)
                                return -ENOMEM;
                        l->pods = m;
                        l->cap = cap;
                }
                l->pods[l->n++] = p;
        }
        return 0;
}

static void index_del(struct xp_sched *sched, const struct spod *p)
{
        for (size_t i = 0; i < p->labels.n; i++) {
                _cleanup_free_ char *k =
                    label_key(p->labels.items[i].key, p->labels.items[i].value);
                struct plist *l = k ? xp_map_get(&sched->label_index, k) : NULL;

                for (size_t j = 0; l && j < l->n; j++)
                        if (l->pods[j] == p) {
                                l->pods[j] = l->pods[--l->n];
                                break;
                        }
        }
}

static void index_free(struct xp_sched *sched)
{
        struct xp_map *m = &sched->label_index;

        for (size_t i = 0; i < m->cap; i++) {
                struct plist *l = m->values[i];
                if (!m->keys[i] || !l)
                        continue;
                free(l->key);
                free(l->pods);
                free(l);
        }
        xp_map_done(m);
        sched->label_index_on = false;
}

/* Builds the index from every placed pod, once. */
static int index_enable(struct xp_sched *sched)
{
        const struct xp_map *pods = &sched->pod_map;

        if (sched->label_index_on)
                return 0;
        for (size_t i = 0; i < pods->cap; i++) {
                struct spod *p = pods->values[i];
                if (p && index_add(sched, p) < 0) {
                        index_free(sched);
                        return -ENOMEM;
                }
        }
        sched->label_index_on = true;
        return 0;
}

int anti_pod_added(struct xp_sched *sched, struct spod *p)
{
        int r;

        if (p->n_anti > 0) {
                r = index_enable(sched);
                if (r < 0)
                        return r;
                if (sched->n_anti_pods == sched->cap_anti_pods) {
                        size_t cap = sched->cap_anti_pods ? sched->cap_anti_pods * 2 : 16;
                        struct spod **m = realloc(sched->anti_pods, cap * sizeof(*m));
                        if (!m)
                                return -ENOMEM;
                        sched->anti_pods = m;
                        sched->cap_anti_pods = cap;
                }
        }
        if (sched->label_index_on) {
                r = index_add(sched, p);
                if (r < 0) {
                        index_del(sched, p);
                        return r;
                }
        }
        if (p->n_anti > 0) {
                p->anti_slot = sched->n_anti_pods;
                sched->anti_pods[sched->n_anti_pods++] = p;
        }
        return 0;
}

void anti_pod_removed(struct xp_sched *sched, struct spod *p)
{
        if (sched->label_index_on)
                index_del(sched, p);
        if (p->n_anti > 0 && p->anti_slot < sched->n_anti_pods &&
            sched->anti_pods[p->anti_slot] == p) {
                struct spod *last = sched->anti_pods[--sched->n_anti_pods];
                last->anti_slot = p->anti_slot;
                sched->anti_pods[p->anti_slot] = last;
        }
}

void anti_free(struct xp_sched *sched)
{
        index_free(sched);
        free(sched->anti_pods);
        sched->anti_pods = NULL;
        sched->n_anti_pods = sched->cap_anti_pods = 0;
}

/* ---- what a placement computes once --------------------------------------------------------- */

static int add_domain(struct pctx *ctx, size_t *cap, const char *key, const char *value, bool own)
{
        for (size_t i = 0; i < ctx->n_anti; i++)
                if (ctx->anti[i].own == own && strcmp(ctx->anti[i].key, key) == 0 &&
                    strcmp(ctx->anti[i].value, value) == 0)
                        return 0;
        if (ctx->n_anti == *cap) {
                size_t ncap = *cap ? *cap * 2 : 16;
                struct anti_value *m = realloc(ctx->anti, ncap * sizeof(*m));
                if (!m)
                        return -ENOMEM;
                ctx->anti = m;
                *cap = ncap;
        }
        ctx->anti[ctx->n_anti++] = (struct anti_value){.key = key, .value = value, .own = own};
        return 0;
}

/* The smallest list of placed pods that holds every pod the term can select (an empty one when
 * it selects none); NULL when the term has no equality to look up. */
static const struct plist *term_candidates(const struct xp_sched *sched, const struct sterm *t)
{
        static const struct plist empty = {0};
        const struct plist *best = NULL;

        for (size_t i = 0; i < t->match_labels.n; i++) {
                _cleanup_free_ char *k =
                    label_key(t->match_labels.items[i].key, t->match_labels.items[i].value);
                const struct plist *l = k ? xp_map_get(&sched->label_index, k) : NULL;
                if (!k)
                        return NULL; /* out of memory: the scan still gives the right answer */
                if (!l)
                        return &empty;
                if (!best || l->n < best->n)
                        best = l;
        }
        /* a single-value In is an equality too */
        for (size_t i = 0; i < t->n_exprs; i++) {
                const struct sexpr *e = &t->exprs[i];
                _cleanup_free_ char *k = NULL;
                const struct plist *l;
                if (e->op != XP_SELECTOR_OP_IN || e->n_values != 1)
                        continue;
                k = label_key(e->key, e->values[0]);
                if (!k)
                        return NULL;
                l = xp_map_get(&sched->label_index, k);
                if (!l)
                        return &empty;
                if (!best || l->n < best->n)
                        best = l;
        }
        return best;
}

static int own_term_domains(struct pctx *ctx, const struct sterm *t, const char *ns, size_t *cap)
{
        const struct xp_sched *sched = ctx->sched;
        const struct plist *l = sched->label_index_on ? term_candidates(sched, t) : NULL;
        size_t n = l ? l->n : sched->pod_map.cap;

        for (size_t i = 0; i < n; i++) {
                const struct spod *p = l ? l->pods[i] : sched->pod_map.values[i];
                const char *value;
                int r;

                if (!p || !p->node->present || !term_selects(t, ns, p->namespace, &p->labels))
                        continue;
                value = xp_strmap_get(&p->node->labels, t->topology_key);
                if (!value)
                        continue;
                r = add_domain(ctx, cap, t->topology_key, value, true);
                if (r < 0)
                        return r;
        }
        return 0;
}

int anti_affinity_prepare(struct pctx *ctx)
{
        struct xp_sched *sched = ctx->sched;
        const struct xp_pod *pod = ctx->pod;
        const char *ns = pod->metadata.namespace ? pod->metadata.namespace : "default";
        size_t cap = 0;
        int r;

        /* the pod's own terms: the domains of the placed pods they select (the terms stay in
         * ctx: the domains borrow their keys) */
        r = sterms_from_pod(pod, &ctx->terms, &ctx->n_terms);
        if (r < 0)
                return r;
        if (ctx->n_terms > 0)
                (void)index_enable(sched); /* on failure the scan answers */
        for (size_t i = 0; i < ctx->n_terms; i++) {
                r = own_term_domains(ctx, &ctx->terms[i], ns, &cap);
                if (r < 0)
                        return r;
        }
        /* the placed pods' terms that select this pod: their own domains */
        for (size_t i = 0; i < sched->n_anti_pods; i++) {
                const struct spod *p = sched->anti_pods[i];
                if (!p->node->present)
                        continue;
                for (size_t k = 0; k < p->n_anti; k++) {
                        const struct sterm *t = &p->anti[k];
                        const char *value;
                        if (!term_selects(t, p->namespace, ns, &pod->metadata.labels))
                                continue;
                        value = xp_strmap_get(&p->node->labels, t->topology_key);
                        if (!value)
                                continue;
                        r = add_domain(ctx, &cap, t->topology_key, value, false);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}
