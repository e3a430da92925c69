/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Gangs: all or nothing on one snapshot (include/sched/xpool/gang.h). Members are placed one
 * after the other by the ordinary placement, each assumed on the snapshot before the next so the
 * devices it took are taken; a member that fits nowhere rolls every assumed one back.
 *
 * Topology: the domains of each key (finest first) are tried smallest-that-could-fit first
 * (best fit keeps the large domains whole for the next large gang); only domains whose free
 * capacity could hold the whole gang by the first member's request are tried, so a gang that
 * fits no single domain costs one cheap estimate per node and not a failed placement per domain.
 * When no single domain of any key holds it, the members fill the coarsest key's domains one by
 * one, the one with most room first, then the nodes without the label.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched_internal.h"
#include "xpool/gang.h"
#include "xpool/strutil.h"
#include "xpool/why.h"

void xp_gang_options_default(struct xp_gang_options *options)
{
        struct xp_error err = {0};

        *options = (struct xp_gang_options){0};
        (void)xp_gang_options_set_keys(options, XP_GANG_TOPOLOGY_KEYS, &err);
}

int xp_gang_options_set_keys(struct xp_gang_options *options,
                             const char *list,
                             struct xp_error *err)
{
        struct xp_gang_options o = *options;
        const char *p = list;

        o.n_topology_keys = 0;
        while (p && *p) {
                size_t len = strcspn(p, ",");
                if (len == 0 || len >= sizeof(o.topology_keys[0]))
                        return xp_errorf(
                            err, -EINVAL, "topology keys '%s': an empty or too long key", list);
                if (o.n_topology_keys == XP_GANG_TOPOLOGY_KEYS_MAX)
                        return xp_errorf(err,
                                         -EINVAL,
                                         "topology keys '%s': more than %d keys",
                                         list,
                                         XP_GANG_TOPOLOGY_KEYS_MAX);
                memcpy(o.topology_keys[o.n_topology_keys], p, len);
                o.topology_keys[o.n_topology_keys][len] = '\0';
                o.n_topology_keys++;
                p += len;
                if (*p == ',')
                        p++;
        }
        *options = o;
        return 0;
}

void xp_gang_result_done(struct xp_gang_result *result)
{
        if (!result)
                return;
        for (size_t i = 0; i < result->n; i++)
                xp_placement_done(&result->placements[i]);
        free(result->placements);
        free(result->why);
        *result = (struct xp_gang_result){0};
}

/* ---- domains -------------------------------------------------------------------------------- */

struct domain {
        const char *value;    /* borrowed from a node's labels; NULL: the nodes without the label */
        struct snode **nodes; /* owned by the cache (struct grouping) */
        size_t n, cap;
        int64_t room; /* how many members its free capacity could hold, at most the gang */
};

struct domains {
        struct domain *items;
        size_t n;
};

/* The present nodes grouped by their value of one key (the unlabelled last), cached on the
 * snapshot until a node changes: thousands of nodes are grouped once, not per gang. */
struct grouping {
        char *key;
        struct domain *items;
        size_t n;
};

struct gang_topology {
        uint64_t gen;
        struct grouping keys[XP_GANG_TOPOLOGY_KEYS_MAX * 2];
        size_t n_keys;
};

static void grouping_done(struct grouping *g)
{
        for (size_t i = 0; i < g->n; i++)
                free(g->items[i].nodes);
        free(g->items);
        free(g->key);
        *g = (struct grouping){0};
}

void gang_topology_free(struct xp_sched *sched)
{
        struct gang_topology *t = sched->topology;

        if (!t)
                return;
        for (size_t i = 0; i < t->n_keys; i++)
                grouping_done(&t->keys[i]);
        free(t);
        sched->topology = NULL;
}

static void domains_done(struct domains *d)
{
        free(d->items);
        *d = (struct domains){0};
}

/* How many members like req node could take by its free resources (an upper bound: the
 * filters that are no arithmetic are left to the placement). */
static int64_t node_room(const struct snode *node, const struct podreq *req, int64_t cap)
{
        int64_t room = cap;

        if (!node->present || node->unschedulable || node->ready == 0)
                return 0;
        for (size_t i = 0; i < req->n && room > 0; i++) {
                const struct sreq *r = &req->items[i];
                const struct dgroup *g = node_group(node, r->res);
                int64_t fit;

                if (r->milli <= 0 || r->res == RES_ACCEL)
                        continue;
                if (g && r->milli >= 1000)
                        fit = g->free_whole / (r->milli / 1000);
                else
                        fit = (node_alloc(node, r->res) - node_used(node, r->res)) / r->milli;
                if (fit < room)
                        room = fit;
        }
        return room < 0 ? 0 : room;
}

static int domain_add(struct domain *d, struct snode *node)
{
        if (d->n == d->cap) {
                size_t cap = d->cap ? d->cap * 2 : 8;
                struct snode **m = realloc(d->nodes, cap * sizeof(*m));
                if (!m)
                        return -ENOMEM;
                d->nodes = m;
                d->cap = cap;
        }
        d->nodes[d->n++] = node;
        return 0;
}

/* Groups the present nodes by their value of key into g (the unlabelled last, when any). */
static int grouping_build(struct xp_sched *sched, const char *key, struct grouping *g)
{
        struct xp_map index = {0}; /* value -> 1 + its slot */
        struct domain rest = {0};
        size_t cap = 0;
        int r = 0;

        *g = (struct grouping){.key = strdup(key)};
        if (!g->key)
                return -ENOMEM;
        for (size_t i = 0; i < sched->n_nodes && r == 0; i++) {
                struct snode *node = sched->nodes[i];
                const char *value = node->present ? xp_strmap_get(&node->labels, key) : NULL;
                uintptr_t slot;

                if (!node->present)
                        continue;
                if (!value) {
                        r = domain_add(&rest, node);
                        continue;
                }
                slot = (uintptr_t)xp_map_get(&index, value);
                if (slot == 0) {
                        if (g->n == cap) {
                                size_t ncap = cap ? cap * 2 : 8;
                                struct domain *m = realloc(g->items, (ncap + 1) * sizeof(*m));
                                if (!m) {
                                        r = -ENOMEM;
                                        break;
                                }
                                g->items = m;
                                cap = ncap;
                        }
                        g->items[g->n++] = (struct domain){.value = value};
                        slot = g->n;
                        r = xp_map_put(&index, value, (void *)slot);
                }
                if (r == 0)
                        r = domain_add(&g->items[slot - 1], node);
        }
        xp_map_done(&index);
        if (r == 0 && rest.n > 0 && g->n > 0) {
                /* room for it was kept by the + 1 of every realloc */
                g->items[g->n++] = rest;
                rest = (struct domain){0};
        }
        free(rest.nodes);
        if (r < 0)
                grouping_done(g);
        return r;
}

/* The cached grouping by key, built when missing or stale. NULL on -ENOMEM. */
static const struct grouping *grouping_of(struct xp_sched *sched, const char *key)
{
        struct gang_topology *t = sched->topology;

        if (t && t->gen != sched->topology_gen) {
                gang_topology_free(sched);
                t = NULL;
        }
        if (!t) {
                t = calloc(1, sizeof(*t));
                if (!t)
                        return NULL;
                t->gen = sched->topology_gen;
                sched->topology = t;
        }
        for (size_t i = 0; i < t->n_keys; i++)
                if (strcmp(t->keys[i].key, key) == 0)
                        return &t->keys[i];
        if (t->n_keys == XP_ELEMENTSOF(t->keys)) {
                /* more keys than any options name: start over */
                for (size_t i = 0; i < t->n_keys; i++)
                        grouping_done(&t->keys[i]);
                t->n_keys = 0;
        }
        if (grouping_build(sched, key, &t->keys[t->n_keys]) < 0)
                return NULL;
        return &t->keys[t->n_keys++];
}

/* The domains of key, each with its room for the gang (the unlabelled nodes last when
 * with_rest). The node lists stay the cache's. */
static int domains_build(struct xp_sched *sched,
                         const char *key,
                         const struct podreq *req,
                         int64_t members,
                         bool with_rest,
                         struct domains *ret)
{
        const struct grouping *g = grouping_of(sched, key);
        struct domains d = {0};

        if (!g)
                return -ENOMEM;
        if (g->n == 0) {
                *ret = d;
                return 0;
        }
        d.items = malloc(g->n * sizeof(*d.items));
        if (!d.items)
                return -ENOMEM;
        for (size_t i = 0; i < g->n; i++) {
                struct domain dom = g->items[i];
                if (!dom.value && !with_rest)
                        continue;
                dom.room = 0;
                for (size_t k = 0; k < dom.n && dom.room < members; k++)
                        dom.room += node_room(dom.nodes[k], req, members - dom.room);
                d.items[d.n++] = dom;
        }
        *ret = d;
        return 0;
}

static int room_ascending(const void *a, const void *b)
{
        const struct domain *x = a, *y = b;

        if (x->room != y->room)
                return x->room < y->room ? -1 : 1;
        return strcmp(x->value ? x->value : "", y->value ? y->value : "");
}

static int room_descending(const void *a, const void *b)
{
        const struct domain *x = a, *y = b;

        /* the nodes without the label come last whatever their room */
        if (!x->value != !y->value)
                return !x->value ? 1 : -1;
        return -room_ascending(a, b);
}

/* ---- placing the members -------------------------------------------------------------------- */

struct gang {
        struct xp_sched *sched;
        const struct xp_pod *const *pods;
        size_t n;
        struct xp_placement *pl;
        size_t assumed; /* members accounted on the snapshot, pods[0..assumed) */
        size_t next_start;
        char *reason;
        size_t failed;
        bool explain;
        char *why;
};

/* Takes the assumed members out again: the snapshot is as it was before the gang. */
static void rollback(struct gang *g)
{
        for (size_t i = g->assumed; i-- > 0;) {
                const struct xp_pod *pod = g->pods[i];
                (void)xp_sched_pod_remove(g->sched,
                                          pod->metadata.namespace ? pod->metadata.namespace
                                                                  : "default",
                                          pod->metadata.name);
                xp_placement_done(&g->pl[i]);
        }
        g->assumed = 0;
        g->sched->next_start = g->next_start;
        g->sched->subset = NULL;
        g->sched->n_subset = 0;
}

static int member_failed(struct gang *g, size_t i, char **why, struct xp_error *err)
{
        if (g->explain) {
                char *text = NULL;
                int r = xp_sched_why(g->sched, g->pods[i], &text, err);
                if (r < 0)
                        return r;
                free(g->why);
                g->why = text;
        }
        free(g->reason);
        g->reason = *why;
        *why = NULL;
        g->failed = i;
        return 0;
}

/*
 * Places the members from pods[assumed] on: within doms[0..n_doms) filled in order when doms is
 * set, else on any node. 1 all placed and assumed; 0 one fit nowhere (g->reason set), the rest
 * rolled back; -errno, rolled back.
 */
static int place_members(
    struct gang *g, struct domain *doms, size_t n_doms, bool then_anywhere, struct xp_error *err)
{
        size_t d = 0;
        int r = 0;

        for (size_t i = g->assumed; i < g->n; i++) {
                _cleanup_free_ char *why = NULL;

                /* the domains in order (a full one is left for the next), then, with all
                 * full, once over every node: the reason counts the whole cluster */
                for (;; d++) {
                        bool anywhere = !doms || d >= n_doms;
                        g->sched->subset = anywhere ? NULL : doms[d].nodes;
                        g->sched->n_subset = anywhere ? 0 : doms[d].n;
                        free(why);
                        why = NULL;
                        r = xp_sched_place(g->sched, g->pods[i], &g->pl[i], &why, err);
                        if (r != 0 || anywhere || (d + 1 == n_doms && !then_anywhere))
                                break;
                }
                if (doms && d >= n_doms)
                        d = n_doms - 1;
                g->sched->subset = NULL;
                g->sched->n_subset = 0;
                if (r == 0 && (r = member_failed(g, i, &why, err)) == 0) {
                        rollback(g);
                        return 0;
                }
                if (r > 0)
                        r = sched_pod_account(g->sched, g->pods[i], g->pl[i].node, &g->pl[i], err);
                if (r < 0) {
                        xp_placement_done(&g->pl[i]);
                        rollback(g);
                        return r;
                }
                g->assumed = i + 1;
        }
        return 1;
}

static size_t domains_used(const struct gang *g, const char *key)
{
        struct xp_map seen = {0};
        size_t used = 0;
        bool unlabelled = false;

        for (size_t i = 0; i < g->n; i++) {
                const struct snode *node = xp_map_get(&g->sched->node_map, g->pl[i].node);
                const char *v = node ? xp_strmap_get(&node->labels, key) : NULL;

                if (!v) {
                        used += !unlabelled;
                        unlabelled = true;
                } else if (!xp_map_get(&seen, v)) {
                        /* out of memory: counted again later, an overcount at worst */
                        used += xp_map_put(&seen, v, (void *)v) >= 0;
                }
        }
        xp_map_done(&seen);
        return used;
}

/* The whole gang within one domain of key: 1 placed, 0 no domain holds it, -errno. */
static int try_one_domain(
    struct gang *g, const char *key, const struct podreq *req, bool *ret_any, struct xp_error *err)
{
        struct domains d;
        int r;

        r = domains_build(g->sched, key, req, (int64_t)g->n, false, &d);
        if (r < 0)
                return r;
        *ret_any = d.n > 0;
        if (d.n > 1)
                if (d.n > 1) /* an empty array may be NULL, which qsort may not take */
                        qsort(d.items, d.n, sizeof(*d.items), room_ascending);
        r = 0;
        for (size_t k = 0; k < d.n && r == 0; k++) {
                if (d.items[k].room < (int64_t)g->n)
                        continue;
                r = place_members(g, &d.items[k], 1, false, err);
        }
        domains_done(&d);
        return r;
}

/* Every member, filling the domains of key (most room first), or any node when key is NULL. */
static int spread(struct gang *g, const char *key, const struct podreq *req, struct xp_error *err)
{
        struct domains d = {0};
        int r;

        if (!key)
                return place_members(g, NULL, 0, false, err);
        r = domains_build(g->sched, key, req, (int64_t)g->n, true, &d);
        if (r < 0)
                return r;
        if (d.n > 1)
                if (d.n > 1) /* an empty array may be NULL, which qsort may not take */
                        qsort(d.items, d.n, sizeof(*d.items), room_descending);
        r = place_members(g, d.items, d.n, true, err);
        domains_done(&d);
        return r;
}

static int gang_run(struct gang *g,
                    const struct xp_gang_options *options,
                    const struct podreq *req,
                    struct xp_gang_result *ret,
                    struct xp_error *err)
{
        const char *coarsest = NULL;
        int r = 0;

        for (size_t k = 0; k < options->n_topology_keys && r == 0; k++) {
                bool any = false;
                r = try_one_domain(g, options->topology_keys[k], req, &any, err);
                if (any)
                        coarsest = options->topology_keys[k];
                if (r > 0)
                        ret->key = options->topology_keys[k];
        }
        if (r == 0) {
                free(g->reason);
                g->reason = NULL;
                free(g->why);
                g->why = NULL;
                r = spread(g, coarsest, req, err);
                ret->key = coarsest;
        }
        if (r > 0)
                ret->domains = ret->key ? domains_used(g, ret->key) : 0;
        return r;
}

static int check_members(const struct xp_sched *sched,
                         const struct xp_pod *const *pods,
                         size_t n,
                         struct xp_error *err)
{
        if (n == 0 || n > XP_GANG_MEMBERS_MAX)
                return xp_errorf(
                    err, -EINVAL, "a gang has 1 to %d members, not %zu", XP_GANG_MEMBERS_MAX, n);
        for (size_t i = 0; i < n; i++) {
                const struct xp_pod *pod = pods[i];
                char key[512];

                if (!pod->metadata.name)
                        return xp_errorf(
                            err, -EINVAL, "gang member %zu: metadata.name: required", i);
                snprintf(key,
                         sizeof(key),
                         "%s/%s",
                         pod->metadata.namespace ? pod->metadata.namespace : "default",
                         pod->metadata.name);
                if (xp_map_get(&sched->pod_map, key))
                        return xp_errorf(err, -EINVAL, "gang member %s: already placed", key);
        }
        return 0;
}

int xp_sched_gang_place(struct xp_sched *sched,
                        const struct xp_pod *const *pods,
                        size_t n,
                        const struct xp_gang_options *options,
                        struct xp_gang_result *ret,
                        char **ret_reason,
                        struct xp_error *err)
{
        struct xp_gang_options none = {0};
        struct xp_gang_result res = {0};
        struct podreq req;
        struct gang g = {.sched = sched,
                         .pods = pods,
                         .n = n,
                         .next_start = sched->next_start,
                         .explain = options && options->explain};
        int r;

        r = check_members(sched, pods, n, err);
        if (r < 0)
                return r;
        r = sched_pod_requests(sched, pods[0], &req, err);
        if (r < 0)
                return r;
        g.pl = calloc(n, sizeof(*g.pl));
        if (!g.pl) {
                podreq_done(&req);
                return xp_errorf(err, -ENOMEM, "placing a gang of %zu: out of memory", n);
        }
        r = gang_run(&g, options ? options : &none, &req, &res, err);
        podreq_done(&req);
        if (r > 0 && !(options && options->commit)) {
                size_t keep = g.assumed;
                /* the placements stay the caller's; only the snapshot forgets them */
                for (size_t i = 0; i < keep; i++) {
                        const struct xp_pod *pod = pods[i];
                        (void)xp_sched_pod_remove(sched,
                                                  pod->metadata.namespace ? pod->metadata.namespace
                                                                          : "default",
                                                  pod->metadata.name);
                }
                sched->next_start = g.next_start;
        }
        if (r > 0) {
                free(g.reason); /* of a domain tried before the one that held the gang */
                free(g.why);
                res.placements = g.pl;
                res.n = n;
                *ret = res;
                return 1;
        }
        free(g.pl);
        if (r == 0) {
                *ret = (struct xp_gang_result){.failed = g.failed, .why = g.why};
                *ret_reason = g.reason;
                return 0;
        }
        free(g.reason);
        free(g.why);
        return r;
}
