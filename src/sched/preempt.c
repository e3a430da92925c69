/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The preemption search (include/sched/xpool/preempt.h has the order of preference). Per node:
 * the candidate units lowest priority first; for each priority level, whether evicting every
 * unit up to it makes room; at the first level that does, the smallest sets of units that do,
 * weighed exactly (up to PREEMPT_EXACT_MAX units) or by greedy reprieve. Every trial gives back
 * what the units hold on the node, asks the filters and device selection, and accounts it again,
 * so the snapshot ends as it began.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "preempt_internal.h"
#include "xpool/macro.h"
#include "xpool/strutil.h"

#include <jansson.h>

/* How good a choice is: compared field by field, lower first (topo: higher is better). */
struct key {
        size_t budget_breaks;
        int64_t max_prio;
        size_t members;
        int64_t prio_sum;
        int64_t waste;
        int64_t topo;
};

struct best {
        struct snode *node;
        struct units units;
        bool *chosen;
        struct key key;
};

static int key_compare(const struct key *a, const struct key *b)
{
        if (a->budget_breaks != b->budget_breaks)
                return a->budget_breaks < b->budget_breaks ? -1 : 1;
        if (a->max_prio != b->max_prio)
                return a->max_prio < b->max_prio ? -1 : 1;
        if (a->members != b->members)
                return a->members < b->members ? -1 : 1;
        if (a->prio_sum != b->prio_sum)
                return a->prio_sum < b->prio_sum ? -1 : 1;
        if (a->waste != b->waste)
                return a->waste < b->waste ? -1 : 1;
        if (a->topo != b->topo)
                return a->topo > b->topo ? -1 : 1;
        return 0;
}

/* Does the pod fit node as it is accounted now? *ret_taken: the device milli it would take,
 * *ret_topo: device selection's score, *rs: why the filters refused the node (none when they
 * passed it), so that the search does not filter each node twice. */
static bool fits(const struct pctx *ctx,
                 const struct snode *node,
                 int64_t *ret_taken,
                 int64_t *ret_topo,
                 struct reasons *rs)
{
        struct devsel_pick pick = {0};

        *ret_taken = *ret_topo = 0;
        if (!sched_filter_node(ctx, node, rs))
                return false;
        rs->n = 0;
        if (!rank_needs_devices(ctx, node))
                return true;
        if (sched_select_devices(
                ctx, node, ctx->req.single_numa ? SCHED_NUMA_REQUIRED : -1, &pick) <= 0)
                return false;
        for (size_t i = 0; i < pick.n; i++)
                for (size_t k = 0; k < pick.sel[i].result.n; k++)
                        *ret_taken += pick.sel[i].result.milli[k];
        *ret_topo = pick.score;
        return true;
}

/* A budget's allowance while one choice's victims are counted against it. */
struct allowance {
        uint32_t id;
        int64_t left;
};

/* How many of the chosen units' members take a budget below 0, counted one by one as
 * kube-scheduler's filterPodsWithPDBViolation counts its victims: with an allowance of 1, the
 * second victim a budget selects breaks it. A member counts once however many it breaks. */
static size_t budget_breaks(const struct units *us, const bool *chosen)
{
        struct allowance seen[64];
        size_t n_seen = 0, breaks = 0;

        for (size_t i = 0; i < us->n; i++) {
                const struct unit *u = &us->items[i];

                for (size_t g = 0; chosen[i] && g < u->n_guards;) {
                        size_t member = u->guards[g].member;
                        bool broke = false;

                        for (; g < u->n_guards && u->guards[g].member == member; g++) {
                                const struct xp_sched_budget *b = &u->guards[g].budget;
                                size_t j = 0;

                                while (j < n_seen && seen[j].id != b->id)
                                        j++;
                                if (j == XP_ELEMENTSOF(seen)) {
                                        /* more budgets than counted: this one as if alone */
                                        broke |= b->allowed < 1;
                                        continue;
                                }
                                if (j == n_seen)
                                        seen[n_seen++] = (struct allowance){b->id, b->allowed};
                                broke |= --seen[j].left < 0;
                        }
                        breaks += broke;
                }
        }
        return breaks;
}

/* Tries the chosen units out of node: true with *ret when the pod then fits. */
static bool trial(const struct pctx *ctx,
                  struct snode *node,
                  const struct units *us,
                  const bool *chosen,
                  struct key *ret)
{
        struct key k = {0};
        struct reasons rs;
        int64_t freed = 0, taken;
        bool ok;

        for (size_t i = 0; i < us->n; i++)
                if (chosen[i]) {
                        const struct unit *u = &us->items[i];
                        k.max_prio =
                            k.members == 0 || u->priority > k.max_prio ? u->priority : k.max_prio;
                        k.members += u->n_members;
                        k.prio_sum += u->prio_sum;
                        freed += u->dev_milli;
                }
        units_account(node, us, chosen, -1);
        ok = fits(ctx, node, &taken, &k.topo, &rs);
        units_account(node, us, chosen, +1);
        k.waste = freed > taken ? freed - taken : 0;
        k.budget_breaks = ok ? budget_breaks(us, chosen) : 0;
        if (ok)
                *ret = k;
        return ok;
}

/* Whether the pod asks for res as a device resource of its own (not the vendor-neutral one). */
static bool asks(const struct pctx *ctx, uint32_t res)
{
        for (size_t i = 0; i < ctx->req.n; i++)
                if (ctx->req.items[i].res == res && res > RES_ACCEL)
                        return true;
        return false;
}

/* The device capacity the pod asks for that node lacks now (0: none lacking, or none asked). */
static int64_t short_of(const struct pctx *ctx, const struct snode *node)
{
        int64_t need = 0;

        for (size_t i = 0; i < ctx->req.n; i++) {
                uint32_t res = ctx->req.items[i].res;
                int64_t free = node_alloc(node, res) - node_used(node, res);

                if (asks(ctx, res) && ctx->req.items[i].milli > free)
                        need += ctx->req.items[i].milli - (free > 0 ? free : 0);
        }
        return need;
}

/* What the unit's members free on node of the device resources the pod asks for. */
static int64_t unit_frees(const struct pctx *ctx, const struct snode *node, const struct unit *u)
{
        int64_t freed = 0;

        for (size_t k = 0; k < u->n_members; k++)
                for (size_t d = 0; u->members[k]->node == node && d < u->members[k]->n_devs; d++)
                        if (asks(ctx, u->members[k]->devs[d].res))
                                freed += u->members[k]->devs[d].milli;
        return freed;
}

/* A set that frees less device capacity than the node lacks cannot do: skipped untried. */
static bool enough(const int64_t *frees, size_t m, uint32_t mask, int64_t need)
{
        int64_t sum = 0;

        for (size_t i = 0; i < m && sum < need; i++)
                if (mask >> i & 1)
                        sum += frees[i];
        return sum >= need;
}

/* Exact: every set of k units among the first m (k growing), each with a unit of the top
 * level [level, m). true when some set fits, the best in chosen and *ret. */
static bool search_exact(const struct pctx *ctx,
                         struct snode *node,
                         const struct units *us,
                         size_t level,
                         size_t m,
                         bool *try,
                         bool *chosen,
                         struct key *ret)
{
        bool found = false;
        uint32_t top = ((1u << m) - 1) & ~((1u << level) - 1), best_mask = 0;
        struct key best = {0}, k;
        int64_t frees[PREEMPT_EXACT_MAX], need = short_of(ctx, node);

        for (size_t i = 0; i < m; i++)
                frees[i] = unit_frees(ctx, node, &us->items[i]);

        for (size_t n = 1; n <= m && (!found || n <= best.members || best.budget_breaks); n++) {
                /* Gosper's hack: the next set of n bits, in increasing order */
                for (uint32_t mask = (1u << n) - 1; mask < (1u << m);) {
                        uint32_t c = mask & -mask, r = mask + c;

                        if ((mask & top) && enough(frees, m, mask, need)) {
                                for (size_t i = 0; i < us->n; i++)
                                        try[i] = i < m && (mask >> i & 1);
                                if (trial(ctx, node, us, try, &k) &&
                                    (!found || key_compare(&k, &best) < 0)) {
                                        best = k;
                                        best_mask = mask;
                                        found = true;
                                }
                        }
                        if (c == 0 || r == 0)
                                break;
                        mask = (((r ^ mask) >> 2) / c) | r;
                }
        }
        for (size_t i = 0; i < us->n; i++)
                chosen[i] = i < m && (best_mask >> i & 1);
        *ret = best;
        return found;
}

/* Greedy reprieve, kube-scheduler's: the first m out, then each back, highest first, while the
 * pod still fits without it; those a disruption budget selects are put back first. */
static void search_greedy(const struct pctx *ctx,
                          struct snode *node,
                          const struct units *us,
                          size_t m,
                          bool *chosen,
                          struct key *ret)
{
        for (size_t i = 0; i < us->n; i++)
                chosen[i] = i < m;
        for (int breaking = 1; breaking >= 0; breaking--)
                for (size_t i = m; i-- > 0;) {
                        struct key k;
                        if ((us->items[i].n_guards > 0) != breaking)
                                continue;
                        chosen[i] = false;
                        if (!trial(ctx, node, us, chosen, &k))
                                chosen[i] = true;
                }
        (void)trial(ctx, node, us, chosen, ret);
}

/* The best choice on node, into best when it beats what best holds: 1 when the node has a
 * choice at all, 0 when not, -ENOMEM. */
static int search_node(const struct pctx *ctx,
                       int64_t prio,
                       const struct xp_preempt_options *options,
                       struct snode *node,
                       struct best *best)
{
        struct units us = {0};
        bool *chosen = NULL, *all = NULL, *scratch = NULL;
        struct key k;
        int r;

        ctx->sched->stats.preempt_nodes_searched++;
        r = units_of_node(ctx->sched, ctx->pod, prio, options, node, &us);
        if (r < 0 || us.n == 0)
                goto out;
        chosen = calloc(us.n, sizeof(*chosen));
        all = calloc(us.n, sizeof(*all));
        scratch = calloc(us.n, sizeof(*scratch));
        if (!chosen || !all || !scratch) {
                r = -ENOMEM;
                goto out;
        }
        for (size_t level = 0, m; level < us.n; level = m) {
                bool found;

                for (m = level; m < us.n && us.items[m].priority == us.items[level].priority; m++)
                        all[m] = true;
                if (best->node && best->key.budget_breaks == 0 &&
                    us.items[level].priority > best->key.max_prio)
                        break;
                if (!trial(ctx, node, &us, all, &k))
                        continue;
                if (m <= PREEMPT_EXACT_MAX) {
                        found = search_exact(ctx, node, &us, level, m, scratch, chosen, &k);
                } else {
                        search_greedy(ctx, node, &us, m, chosen, &k);
                        found = true;
                }
                if (found && (!best->node || key_compare(&k, &best->key) < 0 ||
                              (key_compare(&k, &best->key) == 0 &&
                               strcmp(node->name, best->node->name) < 0))) {
                        units_done(&best->units);
                        free(best->chosen);
                        *best = (struct best){
                            .node = node, .units = us, .chosen = TAKE_PTR(chosen), .key = k};
                        us = (struct units){0};
                }
                r = found;
                break;
        }
out:
        units_done(&us);
        free(chosen);
        free(all);
        free(scratch);
        return r;
}

/* Evicting pods cannot cure these: the node itself refuses the pod. */
static bool unresolvable(const struct reasons *rs)
{
        for (size_t i = 0; i < rs->n; i++)
                if (reason_unresolvable(&rs->items[i]))
                        return true;
        return false;
}

bool preempt_never(const struct xp_pod *pod)
{
        const char *policy =
            json_string_value(json_object_get(pod->spec.extra, "preemptionPolicy"));

        return policy && strcmp(policy, "Never") == 0;
}

/* Kubernetes' rule (no eligibility of the caller's): only pods of lower priority may go. */
static bool priority_decides(const struct xp_preempt_options *options)
{
        return !options || !options->eligible;
}

/* Whether some present node holds a pod of priority below prio: with none (a full node of
 * equals, the common case of a cluster at its cap), the search would weigh every node's pods to
 * find no victim, on every pass that tries the pod. */
static bool any_below(struct xp_sched *sched, int64_t prio)
{
        for (size_t i = 0; i < sched->n_nodes; i++)
                if (sched->nodes[i]->present && sched_node_has_below(sched->nodes[i], prio))
                        return true;
        return false;
}

/* The search over every node: 1 with best filled, 0 when the pod fits as it is or nothing helps. */
static int search_nodes(const struct pctx *ctx,
                        int64_t prio,
                        const struct xp_preempt_options *options,
                        struct best *best)
{
        struct xp_sched *sched = ctx->sched;
        size_t candidates = 0, enough = sched->n_present / 10;

        if (enough < PREEMPT_CANDIDATES_MIN)
                enough = PREEMPT_CANDIDATES_MIN;
        for (size_t i = 0; i < sched->n_nodes && candidates < enough; i++) {
                struct snode *node = sched->nodes[i];
                struct reasons rs;
                int64_t taken, topo;
                int r;

                if (!node->present)
                        continue;
                if (fits(ctx, node, &taken, &topo, &rs))
                        return 0; /* no eviction needed */
                if (priority_decides(options) && !sched_node_has_below(node, prio))
                        continue;
                if (unresolvable(&rs))
                        continue;
                r = search_node(ctx, prio, options, node, best);
                if (r < 0)
                        return r;
                candidates += r;
        }
        return best->node ? 1 : 0;
}

static int victims_fill(const struct best *best, struct xp_preemption *ret)
{
        size_t n = 0;

        for (size_t i = 0; i < best->units.n; i++)
                n += best->chosen[i] ? best->units.items[i].n_members : 0;
        ret->victims = calloc(n ? n : 1, sizeof(*ret->victims));
        if (!ret->victims)
                return -ENOMEM;
        for (size_t i = 0; i < best->units.n; i++)
                for (size_t k = 0; best->chosen[i] && k < best->units.items[i].n_members; k++) {
                        const struct spod *p = best->units.items[i].members[k];
                        const char *slash = strchr(p->key, '/');
                        struct xp_sched_victim *v = &ret->victims[ret->n_victims++];

                        v->namespace = strdup(p->namespace);
                        v->name = strdup(slash ? slash + 1 : p->key);
                        v->node = strdup(p->node_name);
                        v->gang = p->gang ? strdup(p->gang) : NULL;
                        v->priority = p->priority;
                        if (!v->namespace || !v->name || !v->node || (p->gang && !v->gang))
                                return -ENOMEM;
                }
        return 0;
}

int xp_sched_preempt(struct xp_sched *sched,
                     const struct xp_pod *pod,
                     const struct xp_preempt_options *options,
                     struct xp_preemption *ret,
                     struct xp_error *err)
{
        _cleanup_free_ char *reason = NULL;
        struct pctx ctx = {.sched = sched, .pod = pod};
        struct xp_preemption out = {0};
        struct best best = {0};
        int64_t prio = pod->spec.priority.set ? pod->spec.priority.value : 0;
        int r;

        if (preempt_never(pod) || (priority_decides(options) && !any_below(sched, prio)))
                return 0;
        r = sched_pod_requests(sched, pod, &ctx.req, err);
        if (r < 0)
                return r;
        r = anti_affinity_prepare(&ctx);
        if (r >= 0)
                r = search_nodes(&ctx, prio, options, &best);
        if (r > 0) {
                /* the placement the pod gets once the chosen victims are gone */
                units_account(best.node, &best.units, best.chosen, -1);
                r = xp_sched_place_on(sched, pod, best.node->name, &out.placement, &reason, err);
                units_account(best.node, &best.units, best.chosen, +1);
                if (r == 0)
                        r = -EIO; /* the search said it fits: a bug, not the user's */
        }
        if (r > 0) {
                int k = victims_fill(&best, &out);
                r = k < 0 ? k : 1;
        }
        if (r > 0 && !(out.node = strdup(best.node->name)))
                r = -ENOMEM;
        free(ctx.anti);
        sterms_free(ctx.terms, ctx.n_terms);
        podreq_done(&ctx.req);
        units_done(&best.units);
        free(best.chosen);
        if (r <= 0) {
                xp_preemption_done(&out);
                return r == -ENOMEM
                           ? xp_errorf(
                                 err, r, "preemption for pod %s: out of memory", pod->metadata.name)
                           : r;
        }
        *ret = out;
        return 1;
}
