/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The snapshot: nodes and placed pods, changed incrementally. Node entries live as long as the
 * scheduler does (a removed node keeps its entry, marked absent), so pods bound to a node that
 * goes away and comes back count again without a scan over all pods.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gpupolicy.h"
#include "sched_internal.h"
#include "xpool/cpuset.h"
#include "xpool/strutil.h"

#define CPU_ID_MAX 4096
/* Node entries per allocation block. */
#define SNODE_SLAB 256

int sched_res_id(struct xp_sched *sched, const char *name, bool add, uint32_t *ret)
{
        void *v = xp_map_get(&sched->res_ids, name);
        _cleanup_free_ char *copy = NULL;
        int r;

        if (v) {
                *ret = (uint32_t)((uintptr_t)v - 1);
                return 0;
        }
        if (!add)
                return -ENOENT;
        if (sched->n_res == sched->cap_res) {
                size_t cap = sched->cap_res ? sched->cap_res * 2 : 16;
                char **names = realloc(sched->res_names, cap * sizeof(*names));
                if (!names)
                        return -ENOMEM;
                sched->res_names = names;
                sched->cap_res = cap;
        }
        copy = strdup(name);
        if (!copy)
                return -ENOMEM;
        r = xp_map_put(&sched->res_ids, copy, (void *)(uintptr_t)(sched->n_res + 1));
        if (r < 0)
                return r;
        sched->res_names[sched->n_res] = TAKE_PTR(copy);
        *ret = (uint32_t)sched->n_res++;
        return 0;
}

int xp_sched_new(const struct xp_sched_options *options, struct xp_sched **ret)
{
        static const char *const fixed[] = {
            XP_RESOURCE_CPU, XP_RESOURCE_MEMORY, XP_RESOURCE_PODS, XP_ACCELERATOR_RESOURCE};
        struct xp_sched *sched = calloc(1, sizeof(*sched));

        if (!sched)
                return -ENOMEM;
        if (options)
                sched->options = *options;
        for (size_t i = 0; i < XP_ELEMENTSOF(fixed); i++) {
                uint32_t id;
                if (sched_res_id(sched, fixed[i], true, &id) < 0) {
                        xp_sched_free(sched);
                        return -ENOMEM;
                }
        }
        *ret = sched;
        return 0;
}

static void group_done(struct dgroup *g)
{
        for (size_t i = 0; i < g->n; i++) {
                free(g->ids[i]);
                free(g->vendors[i]);
        }
        free(g->dev);
        free(g->affinity);
        free(g->ids);
        free(g->vendors);
        free(g->index);
        free(g->fp16);
}

/* The node's own state (what xp_sched_node_set() replaces); the name and pods stay. */
struct node_state {
        struct xp_strmap labels;
        struct staint *taints;
        size_t n_taints;
        bool unschedulable;
        int ready;
        size_t n_res;
        struct sres *res;
        struct dgroup *groups;
        size_t n_groups;
        struct snuma *numa;
        size_t n_numa;
        uint8_t *cpu_used;
        size_t n_cpu_ids;
};

static void state_done(struct node_state *s)
{
        xp_strmap_done(&s->labels);
        for (size_t i = 0; i < s->n_taints; i++) {
                free(s->taints[i].key);
                free(s->taints[i].value);
        }
        free(s->taints);
        free(s->res);
        for (size_t i = 0; i < s->n_groups; i++)
                group_done(&s->groups[i]);
        free(s->groups);
        for (size_t i = 0; i < s->n_numa; i++)
                free(s->numa[i].cpus);
        free(s->numa);
        free(s->cpu_used);
        *s = (struct node_state){0};
}

static void state_get(struct snode *n, struct node_state *s)
{
        *s = (struct node_state){
            .labels = n->labels,
            .taints = n->taints,
            .n_taints = n->n_taints,
            .unschedulable = n->unschedulable,
            .ready = n->ready,
            .n_res = n->n_res,
            .res = n->res == n->res_inline ? NULL : n->res,
            .groups = n->groups,
            .n_groups = n->n_groups,
            .numa = n->numa,
            .n_numa = n->n_numa,
            .cpu_used = n->cpu_used,
            .n_cpu_ids = n->n_cpu_ids,
        };
}

static void state_put(struct snode *n, const struct node_state *s)
{
        n->labels = s->labels;
        n->taints = s->taints;
        n->n_taints = s->n_taints;
        n->unschedulable = s->unschedulable;
        n->ready = s->ready;
        n->n_res = s->n_res;
        if (s->res && s->n_res <= SNODE_RES_INLINE) {
                /* the caller's state is consumed: its array becomes the node's own copy */
                memcpy(n->res_inline, s->res, s->n_res * sizeof(*s->res));
                free(s->res);
                n->res = n->res_inline;
        } else {
                n->res = s->res;
        }
        n->groups = s->groups;
        n->n_groups = s->n_groups;
        n->numa = s->numa;
        n->n_numa = s->n_numa;
        n->cpu_used = s->cpu_used;
        n->n_cpu_ids = s->n_cpu_ids;
}

static void node_free(struct snode *n)
{
        struct node_state s;

        if (!n)
                return;
        state_get(n, &s);
        state_done(&s);
        gcache_drop(n);
        free(n->pods);
        free(n->name);
}

static void pod_free(struct spod *p)
{
        if (!p)
                return;
        free(p->key);
        free(p->namespace);
        free(p->node_name);
        xp_strmap_done(&p->labels);
        free(p->reqs);
        for (size_t i = 0; i < p->n_devs; i++)
                free(p->devs[i].id);
        free(p->devs);
        free(p->cpus);
        sterms_free(p->anti, p->n_anti);
        hostports_free(p->ports, p->n_ports);
        free(p->gang);
        free(p);
}

void xp_sched_free(struct xp_sched *sched)
{
        if (!sched)
                return;
        for (size_t i = 0; i < sched->pod_map.cap; i++) {
                const char *k = sched->pod_map.keys[i];
                if (k && sched->pod_map.values[i])
                        pod_free(sched->pod_map.values[i]);
        }
        anti_free(sched);
        gang_topology_free(sched);
        sched_resolved_free(sched);
        sched_scratch_free(sched);
        xp_map_done(&sched->pod_map);
        for (size_t i = 0; i < sched->n_nodes; i++)
                node_free(sched->nodes[i]);
        free(sched->nodes);
        for (size_t i = 0; i < sched->n_slabs; i++)
                free(sched->slabs[i]);
        free(sched->slabs);
        for (size_t i = 0; i < sched->n_slabs; i++)
                free(sched->fit_slabs[i]);
        free(sched->fit_slabs);
        xp_map_done(&sched->node_map);
        for (size_t i = 0; i < sched->n_res; i++)
                free(sched->res_names[i]);
        free(sched->res_names);
        xp_map_done(&sched->res_ids);
        free(sched->cands);
        gworkload_free(sched->workload);
        gworkload_free(sched->live);
        free(sched);
}

static void group_refresh(struct dgroup *g)
{
        g->free_whole = 0;
        g->max_free = 0;
        g->best_share = 0;
        for (size_t i = 0; i < g->n; i++) {
                int64_t free_milli = 1000 - g->dev[i].used_milli;
                if (!g->dev[i].healthy)
                        continue;
                if (g->dev[i].used_milli == 0)
                        g->free_whole++;
                if (free_milli > g->max_free)
                        g->max_free = free_milli;
                if (g->dev[i].used_milli > 0 && free_milli > g->best_share)
                        g->best_share = free_milli;
        }
}

/* Parses a cpulist into sorted ids. -EINVAL on bad syntax or ids >= CPU_ID_MAX. */
static int cpulist_parse(const char *text, uint16_t **ret, size_t *ret_n)
{
        struct xp_cpuset set;
        uint16_t *cpus;
        size_t n = 0;

        if (xp_cpuset_parse(text, &set) < 0)
                return -EINVAL;
        for (size_t w = CPU_ID_MAX / 64; w < XP_ELEMENTSOF(set.bits); w++)
                if (set.bits[w])
                        return -EINVAL;
        cpus = malloc((xp_cpuset_count(&set) + 1) * sizeof(*cpus));
        if (!cpus)
                return -ENOMEM;
        for (size_t w = 0; w < CPU_ID_MAX / 64; w++)
                for (uint64_t bits = set.bits[w]; bits; bits &= bits - 1)
                        cpus[n++] = (uint16_t)(w * 64 + (size_t)__builtin_ctzll(bits));
        *ret = cpus;
        *ret_n = n;
        return 0;
}

/* The node's group of resource res (its index in *ret_k), made with room for DEVSEL_MAX devices
 * when the node has none yet. -ENOMEM. */
static int group_of(struct node_state *s, uint32_t res, enum xp_device_kind kind, size_t *ret_k)
{
        struct dgroup *m, *g;

        for (size_t k = 0; k < s->n_groups; k++)
                if (s->groups[k].res == res) {
                        *ret_k = k;
                        return 0;
                }
        m = realloc(s->groups, (s->n_groups + 1) * sizeof(*m));
        if (!m)
                return -ENOMEM;
        s->groups = m;
        g = &s->groups[s->n_groups++];
        *g = (struct dgroup){.res = res, .kind = kind};
        g->dev = calloc(DEVSEL_MAX, sizeof(*g->dev));
        g->ids = calloc(DEVSEL_MAX, sizeof(*g->ids));
        g->vendors = calloc(DEVSEL_MAX, sizeof(*g->vendors));
        g->index = calloc(DEVSEL_MAX, sizeof(*g->index));
        g->fp16 = calloc(DEVSEL_MAX, sizeof(*g->fp16));
        if (!g->dev || !g->ids || !g->vendors || !g->index || !g->fp16)
                return -ENOMEM;
        *ret_k = s->n_groups - 1;
        return 0;
}

/* Adds device d to group g (which has room). -ENOMEM. */
static int group_add(struct dgroup *g, const struct xp_device *d)
{
        g->ids[g->n] = strdup(d->id);
        g->vendors[g->n] = xp_strdup0(d->vendor);
        if (!g->ids[g->n] || (d->vendor && !g->vendors[g->n])) {
                free(g->ids[g->n]);
                free(g->vendors[g->n]);
                g->ids[g->n] = g->vendors[g->n] = NULL;
                return -ENOMEM;
        }
        g->dev[g->n] = (struct devsel_device){
            .numa = d->numa_node.set ? (int)d->numa_node.value : -1,
            .memory_bytes = d->memory_bytes,
            .healthy = d->health != XP_DEVICE_UNHEALTHY,
        };
        g->index[g->n] = d->index;
        g->fp16[g->n] = d->fp16_tflops;
        g->n++;
        return 0;
}

/* The affinity of each link between two devices of one group (where: device id -> (group << 8 |
 * index) + 1). */
static void link_affinities(struct node_state *s,
                            const struct xp_node_inventory *inv,
                            const struct xp_map *where)
{
        for (size_t i = 0; i < inv->links.n; i++) {
                const struct xp_device_link *l = &inv->links.items[i];
                uintptr_t a, b;
                struct dgroup *g;
                size_t ia, ib;

                if (!l->a || !l->b)
                        continue;
                a = (uintptr_t)xp_map_get(where, l->a);
                b = (uintptr_t)xp_map_get(where, l->b);
                if (!a || !b || (a - 1) >> 8 != (b - 1) >> 8)
                        continue;
                g = &s->groups[(a - 1) >> 8];
                ia = (a - 1) & 0xff;
                ib = (b - 1) & 0xff;
                g->affinity[ia * g->n + ib] = g->affinity[ib * g->n + ia] =
                    devsel_link_affinity((int)l->level, l->nvlinks);
        }
}

static int build_groups(struct xp_sched *sched,
                        const struct xp_node_inventory *inv,
                        struct node_state *s,
                        struct xp_error *err)
{
        struct xp_map where = {0}; /* device id -> (group << 8 | index) + 1 */
        int r = 0;

        for (size_t i = 0; i < inv->devices.n && r >= 0; i++) {
                const struct xp_device *d = &inv->devices.items[i];
                struct dgroup *g;
                uint32_t res;
                size_t k;

                if (!d->resource_name || !d->id)
                        continue;
                r = sched_res_id(sched, d->resource_name, true, &res);
                if (r >= 0)
                        r = group_of(s, res, d->kind, &k);
                if (r < 0)
                        break;
                g = &s->groups[k];
                if (g->n == DEVSEL_MAX)
                        r = xp_errorf(err,
                                      -EINVAL,
                                      "status.xpool.devices[%zu]: more than %d devices of %s",
                                      i,
                                      DEVSEL_MAX,
                                      d->resource_name);
                else
                        r = group_add(g, d);
                if (r >= 0)
                        r = xp_map_put(&where,
                                       g->ids[g->n - 1],
                                       (void *)(uintptr_t)(((k << 8) | (g->n - 1)) + 1));
        }
        for (size_t k = 0; k < s->n_groups && r >= 0; k++) {
                struct dgroup *g = &s->groups[k];
                g->affinity = calloc(g->n * g->n + 1, sizeof(*g->affinity));
                if (!g->affinity)
                        r = -ENOMEM;
                else
                        group_refresh(g);
        }
        if (r >= 0)
                link_affinities(s, inv, &where);
        xp_map_done(&where);
        return r;
}

static int build_state(struct xp_sched *sched,
                       const struct xp_node *node,
                       struct node_state *s,
                       struct xp_error *err)
{
        const struct xp_node_inventory *inv = node->status.xpool;
        int r;

        r = xp_strmap_copy(&node->metadata.labels, &s->labels);
        if (r < 0)
                return r;
        if (node->spec.taints.n > 0) {
                s->taints = calloc(node->spec.taints.n, sizeof(*s->taints));
                if (!s->taints)
                        return -ENOMEM;
        }
        for (size_t i = 0; i < node->spec.taints.n; i++) {
                const struct xp_taint *t = &node->spec.taints.items[i];
                s->taints[i].key = xp_strdup0(t->key ? t->key : "");
                s->taints[i].value = xp_strdup0(t->value ? t->value : "");
                s->taints[i].effect = t->effect;
                s->n_taints++;
                if (!s->taints[i].key || !s->taints[i].value)
                        return -ENOMEM;
        }
        s->unschedulable = node->spec.unschedulable;
        s->ready = -1;
        for (size_t i = 0; i < node->status.conditions.n; i++) {
                const struct xp_condition *c = &node->status.conditions.items[i];
                if (xp_streq0(c->type, "Ready"))
                        s->ready = c->status == XP_CONDITION_TRUE    ? 1
                                   : c->status == XP_CONDITION_FALSE ? 0
                                                                     : -1;
        }
        if (inv) {
                r = build_groups(sched, inv, s, err);
                if (r < 0)
                        return r;
                if (inv->numa_nodes.n > 0) {
                        s->numa = calloc(inv->numa_nodes.n, sizeof(*s->numa));
                        if (!s->numa)
                                return -ENOMEM;
                }
                for (size_t i = 0; i < inv->numa_nodes.n; i++) {
                        const struct xp_numa_node *nn = &inv->numa_nodes.items[i];
                        struct snuma *sn = &s->numa[s->n_numa++];
                        sn->id = nn->id;
                        if (!nn->cpus)
                                continue;
                        r = cpulist_parse(nn->cpus, &sn->cpus, &sn->n_cpus);
                        if (r == -EINVAL)
                                return xp_errorf(err,
                                                 -EINVAL,
                                                 "status.xpool.numaNodes[%zu].cpus: bad cpulist",
                                                 i);
                        if (r < 0)
                                return r;
                        for (size_t c = 0; c < sn->n_cpus; c++)
                                if ((size_t)sn->cpus[c] + 1 > s->n_cpu_ids)
                                        s->n_cpu_ids = (size_t)sn->cpus[c] + 1;
                }
                if (s->n_cpu_ids > 0) {
                        s->cpu_used = calloc(s->n_cpu_ids, 1);
                        if (!s->cpu_used)
                                return -ENOMEM;
                }
        }
        /* allocatable last: every resource name of the node is interned by now */
        for (size_t i = 0; i < node->status.allocatable.n; i++) {
                uint32_t id;
                r = sched_res_id(sched, node->status.allocatable.items[i].name, true, &id);
                if (r < 0)
                        return r;
        }
        s->n_res = sched->n_res;
        s->res = calloc(s->n_res, sizeof(*s->res));
        if (!s->res)
                return -ENOMEM;
        /* every group's resource was interned before n_res was taken */
        for (size_t k = 0; k < s->n_groups; k++)
                s->res[s->groups[k].res].group = &s->groups[k];
        for (size_t i = 0; i < node->status.allocatable.n; i++) {
                const struct xp_resource *res = &node->status.allocatable.items[i];
                uint32_t id;
                int64_t milli;

                (void)sched_res_id(sched, res->name, false, &id);
                if (xp_quantity_to_milli(&res->quantity, &milli) < 0 || milli < 0)
                        return xp_errorf(err,
                                         -EINVAL,
                                         "node %s: status.allocatable[%s]: out of range",
                                         node->metadata.name,
                                         res->name);
                s->res[id].alloc = milli;
        }
        return 0;
}

/* One more block of entries and their summaries. -ENOMEM (nothing added). */
static int slab_add(struct xp_sched *sched)
{
        struct snode **m = realloc(sched->slabs, (sched->n_slabs + 1) * sizeof(*m));
        struct sfit **f;

        if (!m)
                return -ENOMEM;
        sched->slabs = m;
        f = realloc(sched->fit_slabs, (sched->n_slabs + 1) * sizeof(*f));
        if (!f)
                return -ENOMEM;
        sched->fit_slabs = f;
        /* on cache lines, as struct snode asks: a filter reads three lines an entry */
        m[sched->n_slabs] = aligned_alloc(_Alignof(struct snode), SNODE_SLAB * sizeof(**m));
        f[sched->n_slabs] = aligned_alloc(_Alignof(struct sfit), SNODE_SLAB * sizeof(**f));
        if (!m[sched->n_slabs] || !f[sched->n_slabs]) {
                free(m[sched->n_slabs]);
                free(f[sched->n_slabs]);
                return -ENOMEM;
        }
        memset(m[sched->n_slabs], 0, SNODE_SLAB * sizeof(**m));
        memset(f[sched->n_slabs], 0, SNODE_SLAB * sizeof(**f));
        sched->n_slabs++;
        sched->slab_used = 0;
        return 0;
}

/* The entry of that name, made (absent) when missing. NULL on -ENOMEM. */
static struct snode *sched_node_entry(struct xp_sched *sched, const char *name)
{
        struct snode *n = xp_map_get(&sched->node_map, name);

        if (n)
                return n;
        if (sched->n_nodes == sched->cap_nodes) {
                size_t cap = sched->cap_nodes ? sched->cap_nodes * 2 : 64;
                struct snode **m = realloc(sched->nodes, cap * sizeof(*m));
                if (!m)
                        return NULL;
                sched->nodes = m;
                sched->cap_nodes = cap;
        }
        if ((sched->n_slabs == 0 || sched->slab_used == SNODE_SLAB) && slab_add(sched) < 0)
                return NULL;
        n = &sched->slabs[sched->n_slabs - 1][sched->slab_used];
        n->fit = &sched->fit_slabs[sched->n_slabs - 1][sched->slab_used];
        n->name = strdup(name);
        if (!n->name || xp_map_put(&sched->node_map, n->name, n) < 0) {
                free(n->name);
                n->name = NULL;
                return NULL;
        }
        sched->slab_used++;
        n->hash = xp_hash_string(name);
        n->ready = -1;
        sched->nodes[sched->n_nodes++] = n;
        return n;
}

static void account(struct snode *n, struct spod *p, int sign)
{
        if (!n->present)
                return;
        for (size_t i = 0; i < p->n_reqs; i++)
                if (p->reqs[i].res < n->n_res)
                        n->res[p->reqs[i].res].used += sign * p->reqs[i].milli;
        for (size_t i = 0; i < p->n_devs; i++) {
                struct dgroup *g = node_group(n, p->devs[i].res);
                if (p->devs[i].res < n->n_res)
                        n->res[p->devs[i].res].used += sign * p->devs[i].milli;
                if (!g)
                        continue;
                for (size_t d = 0; d < g->n; d++)
                        if (strcmp(g->ids[d], p->devs[i].id) == 0) {
                                g->dev[d].used_milli += sign * p->devs[i].milli;
                                break;
                        }
                group_refresh(g);
        }
        for (size_t i = 0; i < p->n_cpus; i++)
                if (p->cpus[i] < n->n_cpu_ids)
                        n->cpu_used[p->cpus[i]] = sign > 0;
        fitsum_refresh(n);
}

void sched_account(struct snode *n, struct spod *p, int sign)
{
        account(n, p, sign);
        p->ports_released = sign < 0;
}

int xp_sched_node_set(struct xp_sched *sched, const struct xp_node *node, struct xp_error *err)
{
        struct node_state s = {0}, old;
        struct snode *n;
        int r;

        if (!node->metadata.name || !node->metadata.name[0])
                return xp_errorf(err, -EINVAL, "node: metadata.name: required");
        r = build_state(sched, node, &s, err);
        if (r < 0) {
                state_done(&s);
                return r == -ENOMEM
                           ? xp_errorf(err, r, "node %s: out of memory", node->metadata.name)
                           : r;
        }
        n = sched_node_entry(sched, node->metadata.name);
        if (!n) {
                state_done(&s);
                return xp_errorf(err, -ENOMEM, "node %s: out of memory", node->metadata.name);
        }
        state_get(n, &old);
        gcache_drop(n);
        state_put(n, &s);
        state_done(&old);
        if (!n->present)
                sched->n_present++;
        n->present = true;
        sched->topology_gen++;
        for (size_t i = 0; i < n->n_pods; i++)
                account(n, n->pods[i], +1);
        fitsum_refresh(n);
        return 0;
}

int xp_sched_node_remove(struct xp_sched *sched, const char *name)
{
        struct snode *n = xp_map_get(&sched->node_map, name);
        struct node_state old;

        if (!n || !n->present)
                return -ENOENT;
        state_get(n, &old);
        state_done(&old);
        state_put(n, &old);
        n->present = false;
        fitsum_refresh(n);
        sched->n_present--;
        sched->topology_gen++;
        return 0;
}

bool sched_node_has_below(struct snode *n, int64_t prio)
{
        if (n->lowest_stale) {
                for (size_t i = 0; i < n->n_pods; i++)
                        if (i == 0 || n->pods[i]->priority < n->lowest_priority)
                                n->lowest_priority = n->pods[i]->priority;
                n->lowest_stale = false;
        }
        return n->n_pods > 0 && n->lowest_priority < prio;
}

static void node_unlink_pod(struct snode *n, struct spod *p)
{
        for (size_t i = 0; i < n->n_pods; i++)
                if (n->pods[i] == p) {
                        n->pods[i] = n->pods[--n->n_pods];
                        n->lowest_stale = n->lowest_stale || p->priority <= n->lowest_priority;
                        return;
                }
}

static void pod_forget(struct xp_sched *sched, struct spod *p)
{
        account(p->node, p, -1);
        anti_pod_removed(sched, p);
        node_unlink_pod(p->node, p);
        xp_map_del(&sched->pod_map, p->key);
        sched->stats.pods--;
        pod_free(p);
}

int xp_sched_pod_remove(struct xp_sched *sched, const char *namespace, const char *name)
{
        _cleanup_free_ char *key = NULL;
        struct spod *p;

        if (asprintf(&key, "%s/%s", namespace ? namespace : "", name) < 0)
                return -ENOMEM;
        p = xp_map_get(&sched->pod_map, key);
        if (!p)
                return -ENOENT;
        pod_forget(sched, p);
        return 0;
}

static int add_devs(struct spod *p, const struct dgroup *g, const struct devsel_result *res)
{
        struct sdev *m = realloc(p->devs, (p->n_devs + res->n) * sizeof(*m));

        if (!m)
                return -ENOMEM;
        p->devs = m;
        for (size_t k = 0; k < res->n; k++) {
                char *id = strdup(g->ids[res->index[k]]);
                if (!id)
                        return -ENOMEM;
                p->devs[p->n_devs++] =
                    (struct sdev){.res = g->res, .id = id, .milli = res->milli[k]};
        }
        return 0;
}

/* Devices for a pod bound without a placement annotation: as the selector would choose now. */
static int
choose_devices(struct xp_sched *sched, struct snode *n, const struct podreq *req, struct spod *p)
{
        struct dgroup *g;
        int r;

        /* a share by memory of a device resource; one of xpool.io/accelerator needs the
         * annotation, as whole accelerators do */
        g = req->mem_bytes > 0 && req->mem_base != RES_ACCEL ? node_group(n, req->mem_base) : NULL;
        if (g) {
                struct devsel_result res;
                if (memshare_choose(g, req->mem_bytes, NULL, -1, &res) > 0) {
                        r = add_devs(p, g, &res);
                        if (r < 0)
                                return r;
                }
        }
        for (size_t i = 0; i < p->n_reqs; i++) {
                struct devsel_node dn;
                struct devsel_request dr = {.milli = p->reqs[i].milli, .numa = -1};
                struct devsel_result res;

                g = node_group(n, p->reqs[i].res);
                if (!g)
                        continue;
                dn = (struct devsel_node){.n = g->n, .devices = g->dev, .affinity = g->affinity};
                if (devsel_choose(&dn, &dr, &res) <= 0)
                        continue; /* over-committed: counted, no devices */
                r = add_devs(p, g, &res);
                if (r < 0)
                        return r;
                p->reqs[i].milli = 0; /* the devices account it */
        }
        (void)sched;
        return 0;
}

/* The devices and CPUs of a placement, as the pod's. */
static int pod_take_placement(struct xp_sched *sched,
                              const struct xp_placement *pl,
                              struct spod *p,
                              struct xp_error *err)
{
        int r;

        if (pl->devices.n) {
                p->devs = calloc(pl->devices.n, sizeof(*p->devs));
                if (!p->devs)
                        return -ENOMEM;
        }
        for (size_t i = 0; i < pl->devices.n; i++) {
                uint32_t res;
                char *id;
                r = sched_res_id(sched, pl->devices.items[i].resource, true, &res);
                if (r < 0)
                        return r;
                id = strdup(pl->devices.items[i].id);
                if (!id)
                        return -ENOMEM;
                p->devs[i] =
                    (struct sdev){.res = res, .id = id, .milli = pl->devices.items[i].milli};
                p->n_devs++;
                /* the devices account their resource */
                for (size_t k = 0; k < p->n_reqs; k++)
                        if (p->reqs[k].res == res)
                                p->reqs[k].milli = 0;
        }
        if (pl->cpus) {
                r = cpulist_parse(pl->cpus, &p->cpus, &p->n_cpus);
                if (r == -EINVAL)
                        return xp_errorf(err,
                                         -EINVAL,
                                         "metadata.annotations[%s]: cpus: bad cpulist",
                                         XP_PLACEMENT_ANNOTATION);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* given: the placement to account (an assumed gang member), NULL: the pod's annotation, or the
 * devices as the selector would choose them now */
static int pod_build(struct xp_sched *sched,
                     const struct xp_pod *pod,
                     const struct snode *n,
                     const struct xp_placement *given,
                     struct spod *p,
                     struct xp_error *err)
{
        const char *ann = xp_strmap_get(&pod->metadata.annotations, XP_PLACEMENT_ANNOTATION);
        struct podreq req;
        int r;

        r = sched_pod_requests(sched, pod, &req, err);
        if (r < 0)
                return r;
        p->ports = req.ports;
        p->n_ports = req.n_ports;
        req.ports = NULL;
        req.n_ports = 0;
        podreq_done(&req);
        p->reqs = calloc(req.n, sizeof(*p->reqs));
        if (req.n && !p->reqs)
                return -ENOMEM;
        /* the devices account a share by memory (the node has no such resource to count) */
        for (size_t i = 0; i < req.n; i++)
                if (req.items[i].res != RES_ACCEL &&
                    !(req.mem_bytes > 0 && req.items[i].res == req.mem_res))
                        p->reqs[p->n_reqs++] = req.items[i];
        r = sterms_from_pod(pod, &p->anti, &p->n_anti);
        if (r < 0)
                return r;
        if (given)
                return pod_take_placement(sched, given, p, err);
        if (ann) {
                _cleanup_(xp_placement_done) struct xp_placement pl = {0};
                r = xp_placement_from_json(ann, &pl, err);
                if (r < 0)
                        return r;
                if (!xp_streq0(pl.node, pod->spec.node_name))
                        return xp_errorf(
                            err,
                            -EINVAL,
                            "metadata.annotations[%s]: node %s differs from spec.nodeName %s",
                            XP_PLACEMENT_ANNOTATION,
                            pl.node,
                            pod->spec.node_name);
                r = pod_take_placement(sched, &pl, p, err);
                if (r < 0)
                        return r;
        } else if (n && n->present) {
                r = choose_devices(sched, (struct snode *)n, &req, p);
                if (r < 0)
                        return r;
        }
        return 0;
}

int xp_sched_pod_add(struct xp_sched *sched, const struct xp_pod *pod, struct xp_error *err)
{
        if (!pod->metadata.name)
                return xp_errorf(err, -EINVAL, "pod: metadata.name: required");
        if (!pod->spec.node_name)
                return xp_errorf(err,
                                 -EINVAL,
                                 "pod %s/%s: spec.nodeName: not bound",
                                 pod->metadata.namespace ? pod->metadata.namespace : "default",
                                 pod->metadata.name);
        return sched_pod_account(sched, pod, pod->spec.node_name, NULL, err);
}

int xp_sched_pod_assume(struct xp_sched *sched,
                        const struct xp_pod *pod,
                        const struct xp_placement *placement,
                        struct xp_error *err)
{
        if (!pod->metadata.name || !placement->node)
                return xp_errorf(err, -EINVAL, "pod: metadata.name and a node: required");
        return sched_pod_account(sched, pod, placement->node, placement, err);
}

int sched_pod_account(struct xp_sched *sched,
                      const struct xp_pod *pod,
                      const char *node_name,
                      const struct xp_placement *given,
                      struct xp_error *err)
{
        const char *ns = pod->metadata.namespace ? pod->metadata.namespace : "default";
        struct spod *p = NULL, *old;
        struct snode *n;
        int r;

        p = calloc(1, sizeof(*p));
        if (!p)
                return -ENOMEM;
        if (asprintf(&p->key, "%s/%s", ns, pod->metadata.name) < 0) {
                p->key = NULL;
                pod_free(p);
                return -ENOMEM;
        }
        old = xp_map_get(&sched->pod_map, p->key);
        if (pod->status.phase == XP_POD_SUCCEEDED || pod->status.phase == XP_POD_FAILED) {
                pod_free(p);
                if (old)
                        pod_forget(sched, old);
                return 0;
        }
        n = sched_node_entry(sched, node_name);
        r = n ? 0 : -ENOMEM;
        if (r == 0) {
                /* a replaced pod gives back what it held before the new one is chosen */
                if (old)
                        account(old->node, old, -1);
                r = pod_build(sched, pod, n, given, p, err);
                if (r < 0 && old)
                        account(old->node, old, +1);
        }
        if (r == 0) {
                p->namespace = strdup(ns);
                p->node_name = strdup(node_name);
                if (!p->namespace || !p->node_name ||
                    xp_strmap_copy(&pod->metadata.labels, &p->labels) < 0 ||
                    preempt_pod_facts(pod, p) < 0)
                        r = -ENOMEM;
                if (r == 0 && n->n_pods == n->cap_pods) {
                        size_t cap = n->cap_pods ? n->cap_pods * 2 : 8;
                        struct spod **m = realloc(n->pods, cap * sizeof(*m));
                        if (m) {
                                n->pods = m;
                                n->cap_pods = cap;
                        } else {
                                r = -ENOMEM;
                        }
                }
                if (r < 0 && old)
                        account(old->node, old, +1);
        }
        if (r < 0) {
                pod_free(p);
                return r == -ENOMEM
                           ? xp_errorf(err, r, "pod %s/%s: out of memory", ns, pod->metadata.name)
                           : r;
        }
        p->node = n;
        r = anti_pod_added(sched, p);
        /* replacing the old version's entry: the key is the same, so nothing else changed yet */
        if (r == 0) {
                r = xp_map_put(&sched->pod_map, p->key, p);
                if (r < 0)
                        anti_pod_removed(sched, p);
        }
        if (r < 0) {
                if (old)
                        account(old->node, old, +1);
                pod_free(p);
                return xp_errorf(err, r, "pod %s/%s: out of memory", ns, pod->metadata.name);
        }
        if (old) {
                anti_pod_removed(sched, old);
                node_unlink_pod(old->node, old);
                sched->stats.pods--;
                pod_free(old);
        }
        p->node = n;
        if (!n->lowest_stale && (n->n_pods == 0 || p->priority < n->lowest_priority))
                n->lowest_priority = p->priority;
        n->pods[n->n_pods++] = p;
        account(n, p, +1);
        sched->stats.pods++;
        return 0;
}

void xp_sched_stats(const struct xp_sched *sched, struct xp_sched_stats *ret)
{
        *ret = sched->stats;
        ret->nodes = sched->n_present;
}
