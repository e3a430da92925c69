/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Inside the HorizontalPodAutoscaler controller (xpool/autoscaler.h): the loop (hpa_ctl.c), one
 * autoscaler's sync (hpa_sync.c), its metrics read into proposals and status (hpa_read.c) and the
 * status written (hpa_status.c).
 */

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "hpa.h"
#include "xpool/autoscaler.h"
#include "xpool/map.h"

struct hpa_usage;

struct xp_controller;
struct xp_informer;
struct xp_workqueue;

/* What the controller keeps per autoscaler, in memory as Kubernetes does. */
struct hpa_state {
        char *key; /* "namespace/name" */
        struct xp_hpa_history history;
        int64_t generation; /* the metadata.generation last synced */
};

struct xp_autoscaler {
        struct xp_registry *registry;
        const struct xp_clock *clock;
        const struct xp_autoscaler_metrics *metrics;
        int64_t sync_ms;
        double tolerance;
        int64_t downscale_window_s;
        struct xp_informer *informer;
        struct xp_workqueue *queue;
        struct xp_controller *loop;
        struct xp_map states; /* key -> struct hpa_state */
};

/* One autoscaler's sync (hpa_sync.c): 0, or -errno to retry with backoff. */
int hpa_sync(struct xp_autoscaler *c, const char *key);

/* The state of key, made when new (NULL: -ENOMEM); hpa_state_drop() forgets it. */
struct hpa_state *hpa_state_of(struct xp_autoscaler *c, const char *key);
void hpa_state_drop(struct xp_autoscaler *c, const char *key);

/* An Event about the autoscaler (source horizontal-pod-autoscaler); best effort. */
void hpa_event(struct xp_autoscaler *c,
               const json_t *hpa,
               const char *type,
               const char *reason,
               const char *fmt,
               ...) __attribute__((format(printf, 5, 6)));

/* ---- metrics (hpa_read.c) ----------------------------------------------------------------- */

/* What one sync knows while it reads the metrics. */
struct hpa_read {
        struct xp_autoscaler *c;
        const json_t *hpa;
        const char *ns;
        json_t *pods;            /* the target's pods (an array) */
        struct hpa_usage *usage; /* their samples, read at the first Resource metric */
        int32_t current;
        int64_t now_s;
};

/*
 * One metric: its proposal into *ret (name, ok, replicas or reason and error) and its status
 * entry (status.currentMetrics[i]; {"type": ""} when it failed, as Kubernetes leaves it) into
 * *ret_status. title and error are the caller's buffers (ret points into them). -ENOMEM.
 */
int hpa_read_metric(const struct hpa_read *rd,
                    const struct xp_hpa_metric_spec *m,
                    char *title,
                    size_t title_size,
                    char *error,
                    size_t error_size,
                    struct xp_hpa_metric_result *ret,
                    json_t **ret_status);

/* A quantity's text from milli-units, as resource.NewMilliQuantity prints it ("120m", "50"). */
void hpa_milli_text(int64_t milli, char *buf, size_t size);

/* ---- status (hpa_status.c) ---------------------------------------------------------------- */

struct hpa_outcome {
        int32_t current, desired;
        bool rescaled;   /* lastScaleTime = now */
        json_t *metrics; /* status.currentMetrics (borrowed; may be NULL) */
        struct xp_hpa_condition able, active, limited;
        int64_t generation;
};

/* Writes the autoscaler's status (conditions keep their lastTransitionTime when unchanged). */
int hpa_write_status(struct xp_autoscaler *c, const json_t *hpa, const struct hpa_outcome *o);
