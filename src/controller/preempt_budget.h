/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Disruption budgets in the choice of preemption victims: as kube-scheduler's candidate choice,
 * the fewest victims whose eviction breaks a PodDisruptionBudget win before priority. A budget
 * never forbids a preemption; it steers it to pods it does not guard.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "xpool/preempt.h"
#include "xpool/store.h"

struct xp_label_selector;

struct preempt_budgets {
        struct xp_store *store;
        bool read; /* the budgets are read once, when a first victim is weighed */
        size_t n;
        struct read_budget {
                char *namespace;
                struct xp_label_selector *selector;
                int64_t allowed; /* status.disruptionsAllowed */
        } * items;
};

/* Sets options' budgets_of to read the budgets of store (kept in budgets) when asked. */
void preempt_budgets_use(struct preempt_budgets *budgets,
                         struct xp_store *store,
                         struct xp_preempt_options *options);
void preempt_budgets_done(struct preempt_budgets *budgets);
