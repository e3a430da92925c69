/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The candidate victims of one node, as units that go together: a pod alone, or a gang with all
 * its members (those on other nodes too), eligible only when every member is.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "preempt_internal.h"
#include "xpool/macro.h"

void units_done(struct units *us)
{
        for (size_t i = 0; i < us->n; i++) {
                free(us->items[i].members);
                free(us->items[i].guards);
        }
        free(us->items);
        *us = (struct units){0};
}

static struct xp_sched_placed placed_of(const struct spod *p)
{
        const char *slash = strchr(p->key, '/');

        return (struct xp_sched_placed){
            .namespace = p->namespace,
            .name = slash ? slash + 1 : p->key,
            .node = p->node_name,
            .priority = p->priority,
            .labels = &p->labels,
        };
}

static bool eligible(const struct xp_pod *pod,
                     int64_t prio,
                     const struct xp_preempt_options *options,
                     const struct spod *p)
{
        struct xp_sched_placed placed = placed_of(p);

        if (p->hold || p->terminating)
                return false;
        if (options && options->eligible)
                return options->eligible(options->userdata, pod, &placed);
        return p->priority < prio;
}

static int unit_add(struct unit *u,
                    struct spod *p,
                    const struct snode *node,
                    const struct xp_preempt_options *options)
{
        struct spod **m = realloc(u->members, (u->n_members + 1) * sizeof(*m));

        if (!m)
                return -ENOMEM;
        u->members = m;
        if (options && options->budgets_of) {
                struct xp_sched_placed placed = placed_of(p);
                struct xp_sched_budget b[XP_SCHED_BUDGETS_PER_POD];
                size_t n =
                    options->budgets_of(options->budget_userdata, &placed, b, XP_ELEMENTSOF(b));
                struct guard *g = n ? realloc(u->guards, (u->n_guards + n) * sizeof(*g)) : NULL;

                if (n && !g)
                        return -ENOMEM;
                for (size_t i = 0; i < n; i++)
                        g[u->n_guards++] = (struct guard){.member = u->n_members, .budget = b[i]};
                if (n)
                        u->guards = g;
        }
        m[u->n_members++] = p;
        if (u->n_members == 1 || p->priority > u->priority)
                u->priority = p->priority;
        u->prio_sum += p->priority;
        if (p->node == node)
                for (size_t i = 0; i < p->n_devs; i++)
                        u->dev_milli += p->devs[i].milli;
        return 0;
}

/* Every member of p's gang (terminating ones are going anyway and left out). 1 the unit is
 * eligible, 0 a member is not, -ENOMEM. */
static int gang_unit(struct xp_sched *sched,
                     const struct xp_pod *pod,
                     int64_t prio,
                     const struct xp_preempt_options *options,
                     const struct spod *p,
                     const struct snode *node,
                     struct unit *u)
{
        for (size_t i = 0; i < sched->pod_map.cap; i++) {
                struct spod *m = sched->pod_map.keys[i] ? sched->pod_map.values[i] : NULL;
                int r;

                if (!m || !m->gang || m->terminating || strcmp(m->gang, p->gang) != 0)
                        continue;
                if (!eligible(pod, prio, options, m))
                        return 0;
                r = unit_add(u, m, node, options);
                if (r < 0)
                        return r;
        }
        return 1;
}

static bool gang_seen(const struct units *us, const char *gang)
{
        for (size_t i = 0; i < us->n; i++)
                if (us->items[i].members[0]->gang &&
                    strcmp(us->items[i].members[0]->gang, gang) == 0)
                        return true;
        return false;
}

static int unit_compare(const void *a, const void *b)
{
        const struct unit *x = a, *y = b;

        if (x->priority != y->priority)
                return x->priority < y->priority ? -1 : 1;
        if (x->n_members != y->n_members)
                return x->n_members < y->n_members ? -1 : 1;
        return strcmp(x->members[0]->key, y->members[0]->key);
}

int units_of_node(struct xp_sched *sched,
                  const struct xp_pod *pod,
                  int64_t prio,
                  const struct xp_preempt_options *options,
                  struct snode *node,
                  struct units *ret)
{
        struct units us = {.items = calloc(node->n_pods ? node->n_pods : 1, sizeof(struct unit))};
        int r = 0;

        if (!us.items)
                return -ENOMEM;
        for (size_t i = 0; i < node->n_pods && r >= 0; i++) {
                struct spod *p = node->pods[i];
                struct unit *u = &us.items[us.n];

                if (p->terminating || p->hold)
                        continue;
                if (p->gang) {
                        if (gang_seen(&us, p->gang))
                                continue;
                        r = gang_unit(sched, pod, prio, options, p, node, u);
                } else {
                        r = eligible(pod, prio, options, p) ? unit_add(u, p, node, options) : 0;
                        r = r < 0 ? r : eligible(pod, prio, options, p);
                }
                if (r > 0) {
                        us.n++;
                } else {
                        free(u->members);
                        free(u->guards);
                        *u = (struct unit){0};
                }
        }
        if (r < 0) {
                units_done(&us);
                return r;
        }
        if (us.n > 1) /* an empty array may be NULL, which qsort may not take */
                qsort(us.items, us.n, sizeof(*us.items), unit_compare);
        *ret = us;
        return 0;
}

void units_account(struct snode *node, const struct units *us, const bool *chosen, int sign)
{
        for (size_t i = 0; i < us->n; i++) {
                if (!chosen[i])
                        continue;
                for (size_t k = 0; k < us->items[i].n_members; k++)
                        if (us->items[i].members[k]->node == node)
                                sched_account(node, us->items[i].members[k], sign);
        }
}
