/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * PodDisruptionBudgets: the disruption controller, which keeps each budget's status as
 * kube-controller-manager's does (currentHealthy, desiredHealthy, expectedPods,
 * disruptionsAllowed, disruptedPods, observedGeneration, the DisruptionAllowed condition), and
 * the arithmetic and decisions it shares with the eviction subresource (src/server/
 * api_eviction.c), pure and tested on their own (tests/unit/test_disruption.c).
 *
 * The controller is level-triggered over the informer: a change of a budget, a pod, a
 * ReplicaSet or a Deployment queues its namespace, and the namespace's budgets are recomputed
 * from the store. Lifecycle as every controller's (docs/development.md): _new (listed, no
 * thread), _start (with its thread), _step (one round, for tests), _free.
 */

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "xpool/error.h"

/* How long an eviction's entry in status.disruptedPods keeps its pod out of the healthy count
 * when the pod is not deleted meanwhile (Kubernetes' DeletionTimeout). */
#define XP_DISRUPTION_DELETION_TIMEOUT_S 120
/* More entries than this in disruptedPods: evictions are refused (Kubernetes' MaxDisruptedPodSize).
 */
#define XP_DISRUPTION_MAX_DISRUPTED 2000

/* ---- arithmetic (disruption_calc.c) --------------------------------------------------------- */

/*
 * An IntOrString against total, as Kubernetes' GetScaledValueFromIntOrPercent: an integer as
 * it is, "N%" as N% of total, rounded up when round_up (else down). -EINVAL for anything else.
 */
int xp_disruption_scaled(const json_t *value, int64_t total, bool round_up, int64_t *ret);
/* Whether the budget needs its pods' controllers' scale: maxUnavailable, or a percentage. */
bool xp_disruption_needs_scale(const json_t *pdb);
/* A pod with the Ready condition True (Kubernetes' IsPodReady). */
bool xp_disruption_pod_ready(const json_t *pod);
/* Whether the budget selects the pod (policy/v1: an empty selector selects every pod of its
 * namespace). A malformed selector selects nothing. */
bool xp_disruption_selects(const json_t *pdb, const json_t *pod);

struct xp_disruption_counts {
        int64_t expected; /* expectedPods */
        int64_t desired;  /* desiredHealthy */
        int64_t healthy;  /* currentHealthy */
        int64_t allowed;  /* disruptionsAllowed */
};

/*
 * A budget's figures over pods (the JSON array of the pods it selects) as the disruption
 * controller computes them at now (seconds): scale is the sum of the scale of the pods'
 * controllers (read only when xp_disruption_needs_scale()). *ret_disrupted is the new
 * disruptedPods (the entries of pods not deleted yet whose timeout has not passed: caller
 * decrefs), *ret_recheck the earliest time one of them expires (0: none). 0 or -ENOMEM.
 */
int xp_disruption_count(const json_t *pdb,
                        const json_t *pods,
                        int64_t scale,
                        int64_t now,
                        json_t **ret_disrupted,
                        int64_t *ret_recheck,
                        struct xp_disruption_counts *ret);

/*
 * Sets the budget's status (pdb changed in place) to the figures, disrupted (borrowed) and
 * observedGeneration its generation, with the DisruptionAllowed condition (SufficientPods or
 * InsufficientPods; its lastTransitionTime kept while its status stays). 1 when the status
 * changed, 0 when it was so already, -ENOMEM.
 */
int xp_disruption_set_status(json_t *pdb,
                             const struct xp_disruption_counts *counts,
                             const json_t *disrupted,
                             int64_t now);
/* A failed sync (Kubernetes' failSafe): no disruption allowed, the condition False with
 * reason SyncFailed and message. 1 changed, 0 as it was, -ENOMEM. */
int xp_disruption_set_failed(json_t *pdb, const char *message, int64_t now);

/* ---- the eviction's decisions (disruption_calc.c) ------------------------------------------- */

/* A pod whose eviction needs no budget: Succeeded, Failed, Pending or being deleted already
 * (Kubernetes' canIgnorePDB). */
bool xp_eviction_ignores_budgets(const json_t *pod);
/* A pod that is not ready and may go without spending the budget: the budget's
 * unhealthyPodEvictionPolicy is AlwaysAllow, or it has its desired healthy pods (> 0). */
bool xp_eviction_unhealthy_allowed(const json_t *pdb, const json_t *pod);

/*
 * Kubernetes' checkAndDecrement on pdb (changed in place) for the eviction of pod_name at now:
 *   -EAGAIN: refused, 429 (err: the DisruptionBudget cause's message: "The disruption budget X
 *            needs 2 healthy pods and has 2 currently", or "... is still being processed by the
 *            server." when the controller has not seen the budget's generation yet);
 *   -EPERM:  refused, 403 (a negative disruptionsAllowed, or disruptedPods too big);
 *   1:       disruptionsAllowed one less, pod_name in disruptedPods at now (the condition
 *            turned False when it reaches 0). -ENOMEM.
 */
int xp_eviction_decrement(json_t *pdb, const char *pod_name, int64_t now, struct xp_error *err);

/* ---- the controller (disruption.c) ----------------------------------------------------------- */

struct xp_registry;
struct xp_disruption;

int xp_disruption_new(struct xp_registry *registry,
                      struct xp_disruption **ret,
                      struct xp_error *err);
int xp_disruption_start(struct xp_registry *registry,
                        struct xp_disruption **ret,
                        struct xp_error *err);
/* Informer sync and the queued namespaces; 0 or the store's errors. */
int xp_disruption_step(struct xp_disruption *c, struct xp_error *err);
/* NULL is fine. */
void xp_disruption_free(struct xp_disruption *c);
