/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Which PodDisruptionBudgets select a placed pod (their selector picks it in their namespace),
 * with the disruptions each allows now (status.disruptionsAllowed, as the disruption controller
 * wrote it): the core counts one choice's victims against each allowance. Read once per choice,
 * and only when the search weighs a victim, so that a pod for which nothing can go costs no
 * store read.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "preempt_budget.h"
#include "xpool/doc.h"
#include "xpool/log.h"
#include "xpool/macro.h"
#include "xpool/selector.h"
#include "xpool/strutil.h"

static int add_budget(struct preempt_budgets *b, const json_t *pdb)
{
        _cleanup_free_ char *text = NULL;
        struct xp_label_selector *selector = NULL;
        struct read_budget *items;
        char *namespace;

        /* a budget without a valid selector guards nothing; nor, in kube-scheduler's preemption,
         * one whose selector is empty */
        if (xp_json_label_selector_string(xp_json_at(pdb, "spec.selector"), &text) < 0 || !text ||
            !*text || xp_label_selector_parse(text, &selector, NULL) < 0)
                return 0;
        namespace = strdup(xp_json_str_at(pdb, "metadata.namespace", ""));
        items = namespace ? realloc(b->items, (b->n + 1) * sizeof(*items)) : NULL;
        if (!items) {
                free(namespace);
                xp_label_selector_free(selector);
                return -ENOMEM;
        }
        b->items = items;
        b->items[b->n++] =
            (struct read_budget){.namespace = namespace,
                                 .selector = selector,
                                 .allowed = xp_json_int_at(pdb, "status.disruptionsAllowed", 0)};
        return 0;
}

static void read_budgets(struct preempt_budgets *b)
{
        struct xp_error err = {0};
        json_t *pdbs = NULL, *pdb;
        uint64_t version;
        size_t i;

        b->read = true;
        if (xp_store_list(b->store, "poddisruptionbudgets", NULL, &pdbs, &version, &err) < 0) {
                xp_log(LOG_WARNING,
                       "scheduler: preemption weighs no disruption budget: %s",
                       err.msg[0] ? err.msg : "the store's list failed");
                return;
        }
        json_array_foreach(pdbs, i, pdb)
        {
                if (add_budget(b, pdb) < 0)
                        break;
        }
        json_decref(pdbs);
}

static size_t budgets_of(void *userdata,
                         const struct xp_sched_placed *victim,
                         struct xp_sched_budget *ret,
                         size_t max)
{
        struct preempt_budgets *b = userdata;
        size_t n = 0;

        if (!b->read)
                read_budgets(b);
        for (size_t i = 0; i < b->n && n < max; i++)
                if (strcmp(b->items[i].namespace, victim->namespace) == 0 &&
                    xp_label_selector_matches_map(b->items[i].selector, victim->labels))
                        ret[n++] = (struct xp_sched_budget){(uint32_t)i, b->items[i].allowed};
        return n;
}

void preempt_budgets_use(struct preempt_budgets *budgets,
                         struct xp_store *store,
                         struct xp_preempt_options *options)
{
        *budgets = (struct preempt_budgets){.store = store};
        options->budgets_of = budgets_of;
        options->budget_userdata = budgets;
}

void preempt_budgets_done(struct preempt_budgets *budgets)
{
        for (size_t i = 0; i < budgets->n; i++) {
                free(budgets->items[i].namespace);
                xp_label_selector_free(budgets->items[i].selector);
        }
        free(budgets->items);
        *budgets = (struct preempt_budgets){0};
}
