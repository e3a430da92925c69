/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The ReplicaSet controller's decisions, as pure functions over the objects' JSON (no store, no
 * clock: time comes in as arguments), so that tests replay recorded event sequences. What they
 * decide is Kubernetes' (pkg/controller/replicaset): how many pods to create or delete, which to
 * delete first, which pods to adopt or release, and the expectations that keep a burst of watch
 * events from creating more pods than asked for. Deployments and DaemonSets share the selector
 * and ownership helpers.
 */

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "xpool/error.h"
#include "xpool/map.h"

/* Kubernetes' burstReplicas: a ReplicaSet creates or deletes at most this many pods per sync. */
#define XP_RS_BURST 500
/* Kubernetes' ExpectationsTimeout: expectations not met in 5 minutes are given up. */
#define XP_RS_EXPECTATIONS_TTL_MS (5 * 60 * 1000)

/* ---- selectors and ownership (replicaset_select.c) --------------------------------------- */

/*
 * Whether labels (a JSON object of strings, or NULL) satisfy a metav1.LabelSelector (matchLabels,
 * matchExpressions with In, NotIn, Exists, DoesNotExist). An empty or NULL selector selects
 * nothing, as a workload's selector must (Kubernetes' LabelSelectorAsSelector gives "nothing" for
 * nil and workloads refuse an empty one).
 */
bool xp_selector_json_matches(const json_t *selector, const json_t *labels);

/*
 * One requirement as a node selector term or label selector expression has: key, operator (In,
 * NotIn, Exists, DoesNotExist, Gt, Lt) and values (a JSON array of strings). Unknown operators
 * match nothing.
 */
bool xp_selector_requirement_matches(const char *key,
                                     const char *op,
                                     const json_t *values,
                                     const json_t *labels);

/* The ownerReference with controller: true of object, or NULL. Borrowed from object. */
const json_t *xp_owner_controller_ref(const json_t *object);
/* Whether object has an ownerReference to uid. */
bool xp_owner_refers_to(const json_t *object, const char *uid);

/* What a controller does with a pod it sees (Kubernetes' ControllerRefManager.ClaimPods). */
enum xp_claim {
        XP_CLAIM_IGNORE,  /* owned by another controller, or not ours and not matching */
        XP_CLAIM_KEEP,    /* ours and matching */
        XP_CLAIM_ADOPT,   /* an orphan that matches: take it (unless we are being deleted) */
        XP_CLAIM_RELEASE, /* ours but its labels no longer match: let it go */
};

/*
 * The claim of the owner (uid, its selector, whether it is being deleted) on object. A
 * terminating object is never adopted.
 */
enum xp_claim xp_claim_decide(const char *owner_uid,
                              const json_t *selector,
                              bool owner_deleting,
                              const json_t *object);

/*
 * A new controller ownerReference (controller: true, blockOwnerDeletion: true) to owner, whose
 * apiVersion and kind are given. NULL on -ENOMEM.
 */
json_t *xp_owner_ref_new(const char *api_version, const char *kind, const json_t *owner);

/* ---- pods: states and the deletion ranking (replicaset_rank.c) --------------------------- */

enum xp_rs_phase {
        XP_RS_PHASE_PENDING,
        XP_RS_PHASE_UNKNOWN,
        XP_RS_PHASE_RUNNING,
        XP_RS_PHASE_SUCCEEDED,
        XP_RS_PHASE_FAILED,
};

/* What the ranking and the counting need of a pod, read once from its JSON. */
struct xp_rs_pod {
        const json_t *object; /* borrowed */
        const char *name;
        bool assigned; /* spec.nodeName set */
        enum xp_rs_phase phase;
        bool terminating; /* metadata.deletionTimestamp set */
        bool ready;
        int64_t ready_since_s; /* the Ready condition's lastTransitionTime; 0: unknown */
        int32_t restarts;      /* the most of any container */
        int64_t created_s;     /* 0: unknown */
};

/* Fills pod from object (borrowed; pod points into it). */
void xp_rs_pod_read(const json_t *object, struct xp_rs_pod *pod);
/* Kubernetes' IsPodActive: not Succeeded or Failed, and not terminating. */
bool xp_rs_pod_active(const struct xp_rs_pod *pod);
/* Ready for at least min_ready_s at now_s (Kubernetes' IsPodAvailable). */
bool xp_rs_pod_available(const struct xp_rs_pod *pod, int32_t min_ready_s, int64_t now_s);
/*
 * Kubernetes' deletion order (ActivePodsWithRanks): negative when a should be deleted before b.
 * Unassigned before assigned, Pending before Unknown before Running, not ready before ready, the
 * more recently ready first, more restarts first, newer first; the name breaks ties.
 */
int xp_rs_pod_delete_order(const struct xp_rs_pod *a, const struct xp_rs_pod *b);
/* Sorts pods so that the first are the ones to delete first. */
void xp_rs_pods_sort_for_deletion(struct xp_rs_pod *pods, size_t n);

/* ---- the plan of one sync (replicaset_plan.c) -------------------------------------------- */

struct xp_rs_counts {
        int32_t replicas;         /* active pods */
        int32_t fully_labeled;    /* of those, with every label of the template */
        int32_t ready;            /* of those, Ready */
        int32_t available;        /* of those, Ready for minReadySeconds */
        int64_t next_available_s; /* when a ready pod becomes available; 0: none pending */
};

/*
 * The pods to create (> 0) or delete (< 0) to go from active to desired, at most XP_RS_BURST
 * either way (Kubernetes' manageReplicas).
 */
int32_t xp_rs_diff(int32_t desired, int32_t active);

/*
 * Counts the pods (status.replicas, fullyLabeledReplicas, readyReplicas, availableReplicas) of
 * the active ones among pods against the template's labels and minReadySeconds at now_s.
 */
void xp_rs_count(const struct xp_rs_pod *pods,
                 size_t n,
                 const json_t *template_labels,
                 int32_t min_ready_s,
                 int64_t now_s,
                 struct xp_rs_counts *ret);

/* ---- expectations (replicaset_expect.c) -------------------------------------------------- */

/*
 * Kubernetes' (UID-tracking) controller expectations: after a controller creates n pods it
 * expects n creations, and after it deletes some pods it expects those deletions; until the watch
 * brought them (or XP_RS_EXPECTATIONS_TTL_MS passed) it does not count pods again, so a burst of
 * events that has not caught up with its own writes never makes it create or delete twice.
 */
struct xp_expectations {
        struct xp_map map; /* controller key -> struct expectation */
};

void xp_expectations_init(struct xp_expectations *e);
void xp_expectations_done(struct xp_expectations *e);
/* Expects n creations for key from now_ms (replacing what was expected). -ENOMEM. */
int xp_expectations_expect_creations(struct xp_expectations *e,
                                     const char *key,
                                     int32_t n,
                                     int64_t now_ms);
/* Expects the deletion of each pod name for key from now_ms. -ENOMEM. */
int xp_expectations_expect_deletions(
    struct xp_expectations *e, const char *key, const char *const *pods, size_t n, int64_t now_ms);
/* A creation the controller expected failed, or a creation came from the watch: one less. */
void xp_expectations_creation_observed(struct xp_expectations *e, const char *key);
/* The deletion of pod was seen (terminating or gone); counted once per pod. */
void xp_expectations_deletion_observed(struct xp_expectations *e, const char *key, const char *pod);
/* Whether the controller of key may count its pods again at now_ms. */
bool xp_expectations_satisfied(const struct xp_expectations *e, const char *key, int64_t now_ms);
/* The controller is gone: forget its expectations. */
void xp_expectations_delete(struct xp_expectations *e, const char *key);
