/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The HorizontalPodAutoscaler's arithmetic, as Kubernetes' horizontal controller does it, with no
 * I/O and no clock of its own: the caller hands in the pods with their samples, the time, and the
 * history it keeps per autoscaler (struct xp_hpa_history), and writes what comes back.
 *
 * Values are in milli-units (a Quantity's MilliValue) and are summed and divided as integers
 * where Kubernetes does, so that the same inputs give the same replica counts.
 *
 * hpa_metric.c: one metric's proposal (Resource, Pods, Object, External);
 * hpa_rate.c: stabilisation and the behavior policies; hpa.c: the whole decision.
 */

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "xpool/error.h"

#define XP_HPA_TOLERANCE          0.1
#define XP_HPA_SYNC_S             15
#define XP_HPA_DOWNSCALE_WINDOW_S 300
#define XP_HPA_CPU_INIT_PERIOD_S  300 /* --horizontal-pod-autoscaler-cpu-initialization-period */
#define XP_HPA_READINESS_DELAY_S  30  /* --horizontal-pod-autoscaler-initial-readiness-delay */
#define XP_HPA_POLICIES_MAX       10
#define XP_HPA_REASON_MAX         160
#define XP_HPA_MESSAGE_MAX        256

enum xp_hpa_phase {
        XP_HPA_PHASE_PENDING,
        XP_HPA_PHASE_RUNNING,
        XP_HPA_PHASE_SUCCEEDED,
        XP_HPA_PHASE_FAILED,
};

/* A pod the target's selector picks, with its sample of the metric. */
struct xp_hpa_pod {
        const char *name;
        enum xp_hpa_phase phase;
        bool deleting;          /* deletionTimestamp set */
        bool ready;             /* its Ready condition is True */
        int64_t start_s;        /* status.startTime (wall s) */
        int64_t ready_change_s; /* the Ready condition's lastTransitionTime (wall s) */
        bool has_sample;        /* the metrics source has a sample of it */
        int64_t value;          /* the sample, milli-units */
        int64_t sample_s;       /* the sample's timestamp (wall s) */
        int64_t window_s;       /* the sample's window */
        bool has_request;       /* for utilization: every container requests the resource */
        int64_t request;        /* the pod's request of the resource, milli-units */
};

/* How a per-pod metric is measured against its target. */
enum xp_hpa_pod_target {
        XP_HPA_UTILIZATION,   /* Resource, averageUtilization: percent of the request */
        XP_HPA_AVERAGE_VALUE, /* Resource or Pods, averageValue */
};

struct xp_hpa_pods_args {
        const struct xp_hpa_pod *pods;
        size_t n_pods;
        int32_t current; /* the target's spec.replicas */
        enum xp_hpa_pod_target target_type;
        int64_t target;   /* percent (utilization) or milli-units (average value) */
        bool cpu;         /* the cpu resource: pods starting up are set aside */
        int64_t now_s;    /* wall time */
        double tolerance; /* XP_HPA_TOLERANCE unless configured */
};

/* What one metric proposes. */
struct xp_hpa_proposal {
        int32_t replicas;
        int64_t current; /* the status value: utilization percent, or average/total milli-units */
        int64_t average; /* utilization targets: the raw average, milli-units */
};

/*
 * The replica count a per-pod metric (Resource or Pods) proposes, with Kubernetes' handling of
 * pods without samples (counted at the target on a scale-down, at zero on a scale-up) and of
 * pods not ready (zero on a scale-up). -EINVAL with Kubernetes' message when no pod has a sample
 * or one lacks a request a utilization target needs.
 */
int xp_hpa_pods_replicas(const struct xp_hpa_pods_args *args,
                         struct xp_hpa_proposal *ret,
                         struct xp_error *err);

/*
 * An Object or External metric. value is the object's metric (External: the sum of the series),
 * the target a value (average false) or an average value per pod (average true); ready is the
 * count of ready pods of the target (used for value targets). Kubernetes' arithmetic: a value
 * target scales the ready count by value/target; an average one proposes ceil(value/target).
 */
void xp_hpa_object_replicas(int64_t value,
                            int64_t target,
                            bool average,
                            int32_t current,
                            int32_t ready,
                            double tolerance,
                            struct xp_hpa_proposal *ret);

/* ---- behavior (hpa_rate.c) ----------------------------------------------------------------- */

enum xp_hpa_select {
        XP_HPA_SELECT_MAX,
        XP_HPA_SELECT_MIN,
        XP_HPA_SELECT_DISABLED,
};

enum xp_hpa_policy_type {
        XP_HPA_POLICY_PODS,
        XP_HPA_POLICY_PERCENT,
};

struct xp_hpa_policy {
        enum xp_hpa_policy_type type;
        int32_t value;
        int32_t period_s;
};

struct xp_hpa_rules {
        int32_t window_s; /* stabilizationWindowSeconds; -1: unset (scale-down: the server's) */
        enum xp_hpa_select select;
        struct xp_hpa_policy policies[XP_HPA_POLICIES_MAX];
        size_t n_policies;
};

/* spec.behavior; set false when the HPA has none (then the older rule of max(2x, 4) applies). */
struct xp_hpa_behavior {
        bool set;
        struct xp_hpa_rules up, down;
};

/* Kubernetes' defaults for what behavior leaves out (SetDefaults_HorizontalPodAutoscalerBehavior).
 */
void xp_hpa_rules_default_up(struct xp_hpa_rules *rules);
void xp_hpa_rules_default_down(struct xp_hpa_rules *rules);

struct xp_hpa_sample {
        int64_t at_ms;
        int32_t value; /* a recommendation, or a scale event's change */
};

/* What the controller keeps per autoscaler between syncs (in memory, as Kubernetes does). */
struct xp_hpa_history {
        struct xp_hpa_sample *recommendations;
        size_t n_recommendations, cap_recommendations;
        struct xp_hpa_sample *ups, *downs; /* scale events */
        size_t n_ups, cap_ups, n_downs, cap_downs;
};

void xp_hpa_history_done(struct xp_hpa_history *history);

/* A condition as written into status.conditions. */
struct xp_hpa_condition {
        bool set;
        bool status;
        char reason[64];
        char message[XP_HPA_MESSAGE_MAX];
};

struct xp_hpa_limits {
        int32_t min, max;
        int32_t current;       /* the target's spec.replicas */
        int64_t down_window_s; /* the server's default scale-down window */
        int64_t now_ms;
};

/*
 * Stabilises a recommendation and limits it by min/max and the scaling rate, recording it in
 * history. Fills the AbleToScale and ScalingLimited conditions. -ENOMEM.
 */
int xp_hpa_normalize(const struct xp_hpa_behavior *behavior,
                     const struct xp_hpa_limits *limits,
                     int32_t recommendation,
                     struct xp_hpa_history *history,
                     int32_t *ret_desired,
                     struct xp_hpa_condition *ret_able,
                     struct xp_hpa_condition *ret_limited);

/* Records a rescale from prev to now (only with a behavior, as Kubernetes does). -ENOMEM. */
int xp_hpa_record_scale(const struct xp_hpa_behavior *behavior,
                        int64_t now_ms,
                        int32_t prev,
                        int32_t now,
                        struct xp_hpa_history *history);

/* ---- the decision (hpa.c) ------------------------------------------------------------------ */

/* One metric's outcome, computed by the caller with the functions above. */
struct xp_hpa_metric_result {
        const char *name; /* "cpu resource utilization (percentage of request)" */
        bool ok;
        int32_t replicas;   /* when ok */
        const char *reason; /* when not: "FailedGetResourceMetric" */
        const char *error;  /* when not: the error's text */
};

struct xp_hpa_decision {
        int32_t desired;
        bool rescale;
        char reason[XP_HPA_REASON_MAX]; /* for SuccessfulRescale: "cpu resource ... above target" */
        bool failed;                    /* the metrics gave no usable count: nothing to change */
        struct xp_hpa_condition able, active, limited;
};

/*
 * One sync of an autoscaler, Kubernetes' reconcileAutoscaler: out-of-range targets are brought
 * into range, otherwise the largest proposal of the metrics is normalized. A target at zero
 * replicas with minReplicas above zero is left alone (ScalingDisabled). -ENOMEM.
 */
int xp_hpa_decide(const struct xp_hpa_behavior *behavior,
                  const struct xp_hpa_limits *limits,
                  const struct xp_hpa_metric_result *metrics,
                  size_t n_metrics,
                  struct xp_hpa_history *history,
                  struct xp_hpa_decision *ret);

/* ---- External and Object metrics from a Prometheus-compatible endpoint (hpa_prom.c) ------- */

struct xp_hpa_label {
        const char *name, *value;
};

/*
 * The PromQL of a metric: name{label="value",...} with the labels in the order given, values
 * escaped as PromQL strings. An External metric passes its selector's matchLabels; an Object
 * metric its namespace and the described object ("namespace", "deployment" = its name).
 * -EINVAL when name or a label name is not a Prometheus name, -ENAMETOOLONG past size.
 */
int xp_hpa_prom_query(const char *name,
                      const struct xp_hpa_label *labels,
                      size_t n_labels,
                      char *buf,
                      size_t size,
                      struct xp_error *err);

/*
 * The value of an instant query's answer (/api/v1/query): the sum of the vector's series (or
 * the scalar), as Kubernetes sums an External metric's series. -EINVAL with err for an answer
 * that is not a successful vector or scalar ("prometheus: bad_data: ..."), -ENODATA when the
 * vector is empty, a value that is not a finite number.
 */
int xp_hpa_prom_value(const char *body, size_t len, double *ret, struct xp_error *err);

/* ---- the API's JSON (hpa_json.c) ----------------------------------------------------------- */

#define XP_HPA_METRICS_MAX 16

enum xp_hpa_source {
        XP_HPA_RESOURCE,
        XP_HPA_CONTAINER_RESOURCE,
        XP_HPA_PODS,
        XP_HPA_OBJECT,
        XP_HPA_EXTERNAL,
};

enum xp_hpa_target_type {
        XP_HPA_TARGET_UTILIZATION,
        XP_HPA_TARGET_VALUE,
        XP_HPA_TARGET_AVERAGE_VALUE,
};

/* One entry of spec.metrics; strings borrowed from the HPA's JSON. */
struct xp_hpa_metric_spec {
        enum xp_hpa_source source;
        const char *name;       /* the resource (cpu, memory) or the metric's name */
        const char *container;  /* ContainerResource */
        const json_t *selector; /* the metric's selector (Pods, Object, External), may be NULL */
        const char *object_kind, *object_name, *object_api_version; /* Object: describedObject */
        enum xp_hpa_target_type target_type;
        int64_t target; /* percent, or milli-units */
};

struct xp_hpa_spec {
        const char *target_kind, *target_name, *target_api_version; /* scaleTargetRef */
        int32_t min, max;
        struct xp_hpa_metric_spec metrics[XP_HPA_METRICS_MAX];
        size_t n_metrics;
        struct xp_hpa_behavior behavior;
};

/*
 * Reads an autoscaling/v2 HorizontalPodAutoscaler (borrowed, as the spec's strings then are)
 * with Kubernetes' defaults: minReplicas 1, a cpu target of 80% when there are no metrics,
 * behavior's missing rules and fields filled (scale-down window left to the server's flag).
 * -EINVAL with err for what validation refuses.
 */
int xp_hpa_spec_from_json(const json_t *hpa, struct xp_hpa_spec *ret, struct xp_error *err);

/* How Kubernetes names a metric in conditions and events:
 * "cpu resource utilization (percentage of request)", "pods metric NAME", ... */
void xp_hpa_metric_title(const struct xp_hpa_metric_spec *metric, char *buf, size_t size);
