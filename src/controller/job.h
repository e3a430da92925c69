/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The Job controller's decisions, as Kubernetes' job controller makes them, with no I/O and no
 * clock of its own: the caller hands in the Job's spec, its status as stored, its pods and the
 * time; xp_job_sync() updates the status and returns a plan (pods to create, to delete, finished
 * pods now counted, when to look again). Everything it decides on is in the status or the pods,
 * so a restarted controller decides the same.
 *
 * job_indexes.c: sets of completion indexes in Kubernetes' compressed text ("1,3-5");
 * job_policy.c: podFailurePolicy rules against a failed pod;
 * job_count.c: counting finished pods into the status; job.c: the sync.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "xpool/error.h"

#define XP_JOB_BACKOFF_S     10  /* the first delay after a failed pod, doubling ... */
#define XP_JOB_BACKOFF_MAX_S 360 /* ... up to six minutes */
#define XP_JOB_INDEXES_MAX   100000
#define XP_JOB_RULES_MAX     20
#define XP_JOB_VALUES_MAX    255

/* The annotation (and label) of an Indexed Job's pod, and its environment variable. */
#define XP_JOB_INDEX_ANNOTATION    "batch.kubernetes.io/job-completion-index"
#define XP_JOB_INDEX_ENV           "JOB_COMPLETION_INDEX"
#define XP_JOB_FAILURES_ANNOTATION "batch.kubernetes.io/job-index-failure-count"
#define XP_JOB_TRACKING_FINALIZER  "batch.kubernetes.io/job-tracking"

/*
 * The conditions of a pod that failed because a device it held became unhealthy (decided here;
 * the agent sets them: src/agent/devhealth.c, docs/monitoring.md). DisruptionTarget (reason
 * DeviceUnhealthy) is what existing manifests match to treat infrastructure failures apart
 * (Ignore); xpool.io/DeviceUnhealthy singles device failures out (FailIndex, Ignore, or FailJob for
 * hardware that must not be retried).
 */
#define XP_JOB_DISRUPTION_CONDITION "DisruptionTarget"
#define XP_JOB_DEVICE_CONDITION     "xpool.io/DeviceUnhealthy"
#define XP_JOB_DEVICE_REASON        "DeviceUnhealthy"

/* ---- index sets (job_indexes.c) ------------------------------------------------------------ */

struct xp_job_indexes {
        uint8_t *set; /* set[i]: index i is in */
        int32_t n;    /* the Job's completions */
        int32_t count;
};

/* An empty set of n indexes. -ENOMEM, -EINVAL when n is outside [0, XP_JOB_INDEXES_MAX]. */
int xp_job_indexes_init(struct xp_job_indexes *ret, int32_t n);
void xp_job_indexes_done(struct xp_job_indexes *set);
/* Adds index i (ignored when out of range). */
void xp_job_indexes_add(struct xp_job_indexes *set, int32_t i);
bool xp_job_indexes_has(const struct xp_job_indexes *set, int32_t i);
/* Reads "1,3-5" into set (which must be initialised); -EINVAL with err on a malformed list or
 * an index out of range; set untouched on failure. */
int xp_job_indexes_parse(const char *text, struct xp_job_indexes *set, struct xp_error *err);
/* Writes the set as Kubernetes does ("1,3-5"; "" when empty). Caller frees; -ENOMEM. */
int xp_job_indexes_format(const struct xp_job_indexes *set, char **ret);

/* ---- the spec ------------------------------------------------------------------------------ */

enum xp_job_action {
        XP_JOB_ACTION_FAIL_JOB,
        XP_JOB_ACTION_FAIL_INDEX,
        XP_JOB_ACTION_IGNORE,
        XP_JOB_ACTION_COUNT,
};

struct xp_job_pod_condition {
        const char *type;
        bool status; /* True */
};

/* One podFailurePolicy rule: onExitCodes (has_exit_codes) or onPodConditions. */
struct xp_job_rule {
        enum xp_job_action action;
        bool has_exit_codes;
        const char *container; /* onExitCodes.containerName, NULL: any */
        bool not_in;           /* operator NotIn (else In) */
        int32_t values[XP_JOB_VALUES_MAX];
        size_t n_values;
        struct xp_job_pod_condition conditions[XP_JOB_RULES_MAX];
        size_t n_conditions;
};

struct xp_job_spec {
        const char *namespace; /* for messages */
        int32_t parallelism;
        int32_t completions; /* -1: unset (a work queue) */
        bool indexed;        /* completionMode Indexed */
        int32_t backoff_limit;
        int32_t backoff_limit_per_index; /* -1: unset */
        int32_t max_failed_indexes;      /* -1: unset */
        int64_t active_deadline_s;       /* -1: unset */
        bool suspend;
        int64_t ttl_after_finished_s; /* -1: unset */
        const struct xp_job_rule *rules;
        size_t n_rules;
        bool replace_failed_only; /* podReplacementPolicy Failed: a terminating pod still holds its
                                     place */
};

/* ---- the pods ------------------------------------------------------------------------------ */

enum xp_job_phase {
        XP_JOB_POD_PENDING,
        XP_JOB_POD_RUNNING,
        XP_JOB_POD_SUCCEEDED,
        XP_JOB_POD_FAILED,
};

struct xp_job_exit {
        const char *container;
        bool terminated;
        int32_t code;
};

struct xp_job_pod {
        const char *name;
        enum xp_job_phase phase;
        bool deleting; /* deletionTimestamp set */
        bool counted;  /* in the status already (its tracking finalizer is gone) */
        bool ready;
        int32_t index;    /* Indexed: its completion index, -1 when none or unreadable */
        int32_t failures; /* Indexed: its job-index-failure-count */
        int64_t created_s, finished_s;
        const struct xp_job_exit *exits; /* init and app containers */
        size_t n_exits;
        const struct xp_job_pod_condition *conditions;
        size_t n_conditions;
};

/* ---- the status ---------------------------------------------------------------------------- */

enum xp_job_condition_type {
        XP_JOB_SUSPENDED,
        XP_JOB_FAILURE_TARGET,
        XP_JOB_SUCCESS_CRITERIA_MET,
        XP_JOB_COMPLETE,
        XP_JOB_FAILED,
        XP_JOB_CONDITIONS,
};

/* "Suspended", "FailureTarget", "SuccessCriteriaMet", "Complete", "Failed" */
const char *xp_job_condition_to_string(enum xp_job_condition_type type);

struct xp_job_condition {
        bool set;
        bool status;
        char reason[48];
        char message[256];
        int64_t at_s; /* lastTransitionTime */
};

struct xp_job_status {
        int64_t start_s;                    /* startTime, 0 when unset */
        int64_t completion_s;               /* completionTime, 0 when unset */
        int32_t active, ready, terminating; /* as last seen */
        int32_t succeeded, failed;
        struct xp_job_indexes completed; /* Indexed: completedIndexes */
        struct xp_job_indexes failed_indexes;
        struct xp_job_condition conditions[XP_JOB_CONDITIONS];
        /* the pod failure backoff: failures since the last success, and the latest failure */
        int32_t failures_since_success;
        int64_t last_failure_s;
};

/* An empty status for a Job of spec (index sets sized to completions). -ENOMEM, -EINVAL. */
int xp_job_status_init(struct xp_job_status *status, const struct xp_job_spec *spec);
void xp_job_status_done(struct xp_job_status *status);

/* Whether the Job has finished (Complete or Failed True). */
bool xp_job_finished(const struct xp_job_status *status);

/* ---- the sync (job.c) ---------------------------------------------------------------------- */

struct xp_job_create {
        int32_t index;    /* Indexed: the completion index; -1 otherwise */
        int32_t failures; /* the new pod's job-index-failure-count */
};

struct xp_job_plan {
        struct xp_job_create *create;
        size_t n_create;
        size_t *delete; /* indexes into the pods passed in */
        size_t n_delete;
        size_t *counted; /* finished pods now in the status: their tracking finalizer goes */
        size_t n_counted;
        bool delete_job;          /* ttlSecondsAfterFinished has passed */
        int64_t requeue_s;        /* look again at this time even if nothing changes; 0: no need */
        const char *event_reason; /* the Job's Event this sync, NULL when none */
        char event_message[256];
        bool event_warning;
};

void xp_job_plan_done(struct xp_job_plan *plan);

/* The pod failure backoff after n failures since the last success: 10 s doubling, at most 6 min. */
int64_t xp_job_backoff_s(int32_t failures);

/*
 * One sync of a Job at now_s: counts finished pods, applies podFailurePolicy, the backoff
 * limits, activeDeadlineSeconds, suspend and ttlSecondsAfterFinished, and plans the pods.
 * -ENOMEM (status then partly updated: the caller drops it, as nothing was written).
 */
int xp_job_sync(const struct xp_job_spec *spec,
                const struct xp_job_pod *pods,
                size_t n_pods,
                int64_t now_s,
                struct xp_job_status *status,
                struct xp_job_plan *ret);

/* ---- podFailurePolicy (job_policy.c) ------------------------------------------------------ */

/*
 * The first rule of spec matching a failed pod: its index in *ret_rule, and the message
 * Kubernetes writes when the action is FailJob. -ENOENT when none matches.
 */
int xp_job_policy_match(const struct xp_job_spec *spec,
                        const struct xp_job_pod *pod,
                        size_t *ret_rule,
                        char *message,
                        size_t size);

/* ---- the API's JSON (job_json.c) ----------------------------------------------------------- */

/* What a Job's spec needs besides the struct: its rules (borrowed strings point into the JSON). */
struct xp_job_spec_store {
        struct xp_job_rule rules[XP_JOB_RULES_MAX];
};

/*
 * Reads a batch/v1 Job's spec (job borrowed; the spec's strings stay borrowed from it) with
 * Kubernetes' defaults for what is absent (parallelism 1; completions 1 when parallelism is
 * absent too; backoffLimit 6, or unlimited with backoffLimitPerIndex; podReplacementPolicy
 * Failed with a podFailurePolicy). -EINVAL with err for what validation would have refused.
 */
int xp_job_spec_from_json(const json_t *job,
                          struct xp_job_spec *ret,
                          struct xp_job_spec_store *store,
                          struct xp_error *err);

/* A pod's exits and conditions, kept beside its struct xp_job_pod. */
#define XP_JOB_POD_EXITS_MAX      16
#define XP_JOB_POD_CONDITIONS_MAX 16
struct xp_job_pod_store {
        struct xp_job_exit exits[XP_JOB_POD_EXITS_MAX];
        struct xp_job_pod_condition conditions[XP_JOB_POD_CONDITIONS_MAX];
};

/* Reads a pod (borrowed, as its strings then are): phase, deletion, readiness, its completion
 * index and failure count, times, containers' exit codes and conditions. */
void xp_job_pod_from_json(const json_t *pod,
                          struct xp_job_pod *ret,
                          struct xp_job_pod_store *store);

/* Reads a Job's status (startTime, completionTime, counts, indexes, conditions) into status,
 * initialised for the Job's spec. Unreadable parts are left at their start. */
void xp_job_status_from_json(const json_t *status_json, struct xp_job_status *status);

/* The status as the API writes it. NULL: -ENOMEM. */
json_t *xp_job_status_to_json(const struct xp_job_spec *spec, const struct xp_job_status *status);
