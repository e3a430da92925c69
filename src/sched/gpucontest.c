/* SPDX-License-Identifier: Apache-2.0 */
/*
 * How contested each GPU model is by the workload's pods bound to models (gpu_spec): the GPU
 * demand that may run only on some models, spread over them by their GPUs, against the model's
 * share of the cluster's GPUs. A model whose bound demand would take most of it is where an
 * unbound pod displaces a pod that has nowhere else to go (xpool's key, gpuscore.c). Kept per
 * workload until a node changes (topology_gen).
 */
#include <stdlib.h>
#include <string.h>

#include "gpupolicy.h"

struct gmodel {
        char *name;
        int64_t gpus;
        double bound; /* the bound pods' demand per pod of the workload, in milli */
};

static void models_free(struct gworkload *w)
{
        for (size_t i = 0; i < w->n_models; i++)
                free(w->models[i].name);
        free(w->models);
        w->models = NULL;
        w->n_models = 0;
}

void gp_contest_free(struct gworkload *w)
{
        models_free(w);
}

static struct gmodel *model_find(struct gworkload *w, const char *name, bool add)
{
        struct gmodel *m;

        for (size_t i = 0; i < w->n_models; i++)
                if (strcmp(w->models[i].name, name) == 0)
                        return &w->models[i];
        if (!add)
                return NULL;
        m = realloc(w->models, (w->n_models + 1) * sizeof(*m));
        if (!m)
                return NULL;
        w->models = m;
        m = &m[w->n_models];
        *m = (struct gmodel){.name = strdup(name)};
        if (!m->name)
                return NULL;
        w->n_models++;
        return m;
}

static bool type_allows(const struct gtype *t, const char *model)
{
        for (size_t k = 0; k < t->n_models; k++)
                if (strcmp(t->models[k], model) == 0)
                        return true;
        return false;
}

/* The cluster's GPUs per model; false on -ENOMEM. */
static bool count_gpus(const struct xp_sched *s, struct gworkload *w)
{
        w->total_gpus = 0;
        for (size_t i = 0; i < s->n_nodes; i++) {
                const struct snode *n = s->nodes[i];
                const struct dgroup *g = n->present ? node_group(n, w->res) : NULL;
                const char *model = g ? xp_strmap_get(&n->labels, w->model_label) : NULL;
                struct gmodel *m = model ? model_find(w, model, true) : NULL;
                if (model && !m)
                        return false;
                if (m) {
                        m->gpus += (int64_t)g->n;
                        w->total_gpus += (int64_t)g->n;
                }
        }
        return true;
}

/* Each bound typical pod's demand spread over the models it allows, by their GPUs. */
static void spread_bound(struct gworkload *w)
{
        w->demand = 0;
        for (size_t i = 0; i < w->n; i++) {
                const struct gtype *t = &w->types[i];
                double want = t->weight * (double)(t->milli * t->count);
                int64_t allowed = 0;
                w->demand += want;
                if (t->count == 0 || t->n_models == 0)
                        continue;
                for (size_t k = 0; k < w->n_models; k++)
                        if (type_allows(t, w->models[k].name))
                                allowed += w->models[k].gpus;
                for (size_t k = 0; allowed > 0 && k < w->n_models; k++)
                        if (type_allows(t, w->models[k].name))
                                w->models[k].bound +=
                                    want * (double)w->models[k].gpus / (double)allowed;
        }
}

double gp_model_contest(const struct xp_sched *sched, const struct gworkload *cw, const char *model)
{
        /* the counts are a memo of the cluster's nodes: filling it changes nothing seen */
        struct gworkload *w = (struct gworkload *)cw;
        const struct gmodel *m;

        if (!w->binds_models || !model)
                return 0;
        if (!w->models_built || w->models_gen != sched->topology_gen) {
                models_free(w);
                w->models_built = count_gpus(sched, w);
                w->models_gen = sched->topology_gen;
                if (!w->models_built) {
                        models_free(w);
                        return 0;
                }
                spread_bound(w);
        }
        m = model_find(w, model, false);
        if (!m || m->gpus == 0 || !(w->demand > 0))
                return 0;
        return (m->bound / w->demand) / ((double)m->gpus / (double)w->total_gpus);
}
