/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The Deployment controller's decisions, pure (time comes in as arguments): the pod template's
 * hash, revisions and their clean-up, the rolling update's and Recreate's arithmetic over the
 * ReplicaSets, proportional scaling, and the status with its conditions. What they decide is
 * Kubernetes' (pkg/controller/deployment); the names of its functions are in the comments so a
 * reader can compare.
 */

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "xpool/error.h"

#define XP_DEPLOY_HASH_LABEL "pod-template-hash"
#define XP_DEPLOY_REVISION   "deployment.kubernetes.io/revision"
#define XP_DEPLOY_DESIRED    "deployment.kubernetes.io/desired-replicas"
#define XP_DEPLOY_MAX        "deployment.kubernetes.io/max-replicas"
#define XP_DEPLOY_HASH_MAX   16 /* a hash's characters, with the NUL */

/* ---- template hash and revisions (deployment_hash.c) ------------------------------------- */

/*
 * The pod-template-hash of template (a PodTemplateSpec; its own pod-template-hash label is left
 * out) with the Deployment's collisionCount: FNV-1a (32 bits) of the template's canonical JSON and
 * the count, written as Kubernetes writes it (the decimal digits through its safe alphabet, with
 * no vowels). Stable across restarts and processes. -ENOMEM.
 */
int xp_deploy_template_hash(const json_t *template,
                            int32_t collision_count,
                            char ret[static XP_DEPLOY_HASH_MAX]);

/* Whether two pod templates are the same but for the pod-template-hash label (EqualIgnoreHash). */
bool xp_deploy_template_equal(const json_t *a, const json_t *b);

/* A ReplicaSet's revision annotation, 0 when absent or not a number. */
int64_t xp_deploy_revision(const json_t *replicaset);

/* ---- the ReplicaSets as the arithmetic sees them ----------------------------------------- */

struct xp_deploy_rs {
        const char *name;
        int32_t replicas;        /* spec.replicas: what the plans change */
        int32_t status_replicas; /* status.replicas: its pods that exist */
        int32_t ready;           /* status.readyReplicas */
        int32_t available;       /* status.availableReplicas */
        int64_t created_s;
        int64_t revision;
        int32_t desired; /* the desired-replicas annotation; -1: none */
        int32_t max;     /* the max-replicas annotation; -1: none */
        bool deleting;
};

/* What the Deployment asks for, with the fenceposts resolved. */
struct xp_deploy_spec {
        int32_t replicas;
        int32_t max_surge;
        int32_t max_unavailable;
        bool recreate;
        int32_t status_replicas; /* the Deployment's status.replicas (getReplicaSetFraction's
                                    fallback) */
};

/* Reads a ReplicaSet's fields and annotations into rs (borrowing the name). */
void xp_deploy_rs_read(const json_t *replicaset, struct xp_deploy_rs *rs);

/* ---- rolling update, Recreate, proportional scaling (deployment_rolling.c) -------------- */

/*
 * An IntOrString (an integer, or a string "N%") against total: a percentage rounds up when
 * round_up, down otherwise. -EINVAL with the field's name and Kubernetes' wording.
 */
int xp_intstr_resolve(const json_t *value,
                      int32_t total,
                      bool round_up,
                      const char *field,
                      int32_t *ret,
                      struct xp_error *err);

/*
 * maxSurge (rounded up) and maxUnavailable (rounded down) of replicas (ResolveFenceposts); when
 * both come to 0, maxUnavailable is 1 so that a rollout can move. NULL values are Kubernetes'
 * defaults (25%). -EINVAL as xp_intstr_resolve().
 */
int xp_deploy_fenceposts(const json_t *max_surge,
                         const json_t *max_unavailable,
                         int32_t replicas,
                         int32_t *ret_surge,
                         int32_t *ret_unavailable,
                         struct xp_error *err);

/*
 * The new ReplicaSet's replicas in this step of a rolling update (NewRSNewReplicas): up to the
 * Deployment's replicas without the whole exceeding replicas + maxSurge. all holds every
 * ReplicaSet (the new one too); new_rs points into it.
 */
int32_t xp_deploy_rolling_new(const struct xp_deploy_spec *spec,
                              const struct xp_deploy_rs *all,
                              size_t n,
                              const struct xp_deploy_rs *new_rs);

/*
 * Scales the old ReplicaSets down as far as the availability allows (reconcileOldReplicaSets:
 * the unhealthy replicas first, then the oldest ReplicaSets first, never below replicas -
 * maxUnavailable available), changing their replicas in old (sorted here, oldest first). new_rs
 * may be NULL. Returns how many replicas were taken away.
 */
int32_t xp_deploy_rolling_old(const struct xp_deploy_spec *spec,
                              struct xp_deploy_rs *old,
                              size_t n_old,
                              const struct xp_deploy_rs *new_rs);

/*
 * Whether this sync is a scaling event (isScalingEvent): an active ReplicaSet's desired-replicas
 * annotation differs from the Deployment's replicas.
 */
bool xp_deploy_is_scaling_event(const struct xp_deploy_spec *spec,
                                const struct xp_deploy_rs *all,
                                size_t n);

/*
 * Scales the ReplicaSets proportionally to a new replica count (scale()): the only active one
 * takes it all; a saturated new one takes it all and the old go to 0; otherwise each active one
 * gets its share of replicas + maxSurge by its max-replicas annotation, and what rounding leaves
 * goes to the largest. Changes replicas in all (which it reorders). new_index: the new
 * ReplicaSet's position in all, or -1.
 */
void xp_deploy_scale(const struct xp_deploy_spec *spec,
                     struct xp_deploy_rs *all,
                     size_t n,
                     ssize_t new_index);

/* What a Recreate rollout does next. */
enum xp_recreate_step {
        XP_RECREATE_SCALE_DOWN_OLD, /* old ReplicaSets still ask for pods: set them to 0 */
        XP_RECREATE_WAIT,           /* old pods still exist: wait for them to go */
        XP_RECREATE_SCALE_UP_NEW,   /* the new ReplicaSet takes the Deployment's replicas */
        XP_RECREATE_DONE,
};

/*
 * The next Recreate step given the old ReplicaSets and whether any of their pods is still active
 * (counted from the pods, not their status, as Kubernetes does).
 */
enum xp_recreate_step xp_deploy_recreate_step(const struct xp_deploy_spec *spec,
                                              const struct xp_deploy_rs *old,
                                              size_t n_old,
                                              bool old_pods_active,
                                              const struct xp_deploy_rs *new_rs);

/* ---- history and status (deployment_status.c) -------------------------------------------- */

/*
 * Which old ReplicaSets to delete to keep limit of them (cleanupDeployment): those with no
 * replicas asked for and none left, oldest revision first. Writes their indexes into ret (room
 * for n_old) and returns how many.
 */
size_t
xp_deploy_history_cleanup(const struct xp_deploy_rs *old, size_t n_old, int32_t limit, size_t *ret);

/* The next revision: one more than the highest of old's. */
int64_t xp_deploy_next_revision(const struct xp_deploy_rs *old, size_t n_old);

/* The status's counts, summed over the ReplicaSets (calculateStatus). */
struct xp_deploy_counts {
        int32_t replicas, updated, ready, available, unavailable;
};

void xp_deploy_count(int32_t replicas,
                     const struct xp_deploy_rs *all,
                     size_t n,
                     const struct xp_deploy_rs *new_rs,
                     struct xp_deploy_counts *ret);

/* What the Progressing condition must say after this sync. */
struct xp_deploy_progress {
        int32_t replicas;
        int32_t max_unavailable;
        int32_t progress_deadline_s; /* < 0: none */
        bool paused, was_paused;     /* now, and as the conditions last said */
        bool new_rs_created;         /* this sync created the new ReplicaSet */
        bool observed;               /* observedGeneration >= generation */
        const char *new_rs;          /* the new ReplicaSet's name, NULL when there is none */
        struct xp_deploy_counts before, now;
};

/*
 * Rewrites the Available and Progressing conditions in status (its "conditions" array, made when
 * absent) as Kubernetes' syncRolloutStatus and calculateStatus do, with its reasons and messages:
 * Available MinimumReplicasAvailable/MinimumReplicasUnavailable; Progressing NewReplicaSetCreated,
 * FoundNewReplicaSet, ReplicaSetUpdated, NewReplicaSetAvailable, ProgressDeadlineExceeded,
 * DeploymentPaused, DeploymentResumed. now_s stamps lastUpdateTime (and lastTransitionTime when
 * the status changes). Returns 1 when the deadline has not passed yet but will (the caller checks
 * again at *ret_recheck_s), 0 otherwise, -ENOMEM.
 */
int xp_deploy_conditions(const struct xp_deploy_progress *p,
                         int64_t now_s,
                         json_t *status,
                         int64_t *ret_recheck_s);

/*
 * Sets the condition of type in status's conditions: lastTransitionTime moves only when status
 * changes, lastUpdateTime always. -ENOMEM.
 */
int xp_condition_set(json_t *status,
                     const char *type,
                     const char *value,
                     const char *reason,
                     const char *message,
                     int64_t now_s);
