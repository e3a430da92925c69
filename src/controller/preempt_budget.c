/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Which placed pods a PodDisruptionBudget guards now: those its selector picks in its namespace
 * while its status allows no disruption (disruptionsAllowed below 1, as the disruption
 * controller wrote it). Read once per choice, and only when the search weighs a victim, so that
 * a pod for which nothing can go costs no store read.
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

static int add_exhausted(struct preempt_budgets *b, const json_t *pdb)
{
        _cleanup_free_ char *text = NULL;
        struct xp_label_selector *selector = NULL;
        struct exhausted_budget *items;
        char *namespace;

        if (xp_json_int_at(pdb, "status.disruptionsAllowed", 0) > 0)
                return 0;
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
        b->items[b->n++] = (struct exhausted_budget){.namespace = namespace, .selector = selector};
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
                if (add_exhausted(b, pdb) < 0)
                        break;
        }
        json_decref(pdbs);
}

static bool breaks_budget(void *userdata, const struct xp_sched_placed *victim)
{
        struct preempt_budgets *b = userdata;

        if (!b->read)
                read_budgets(b);
        for (size_t i = 0; i < b->n; i++)
                if (strcmp(b->items[i].namespace, victim->namespace) == 0 &&
                    xp_label_selector_matches_map(b->items[i].selector, victim->labels))
                        return true;
        return false;
}

void preempt_budgets_use(struct preempt_budgets *budgets,
                         struct xp_store *store,
                         struct xp_preempt_options *options)
{
        *budgets = (struct preempt_budgets){.store = store};
        options->breaks_budget = breaks_budget;
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
