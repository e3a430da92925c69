/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The HorizontalPodAutoscaler controller (docs/workloads.md): every sync period each autoscaler
 * reads its target's scale, the target's pods and their metrics, decides as Kubernetes'
 * horizontal controller does (src/controller/hpa.h) and writes the target's spec.replicas, its own
 * status and the Events kubectl describe shows (SuccessfulRescale, FailedGetResourceMetric, ...).
 *
 * Where the figures come from is the caller's (the server: the agents' usage it keeps for
 * metrics.k8s.io, and a Prometheus-compatible query endpoint), through struct
 * xp_autoscaler_metrics, so that the controller holds no HTTP client and tests hand in figures.
 *
 * Lifecycle as every controller's (docs/development.md): _new (listed, no thread), _start (with
 * its thread), _step (one round, for tests), _free (stops the thread first).
 */

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "xpool/error.h"

struct xp_clock;
struct xp_registry;
struct xp_autoscaler;

#define XP_AUTOSCALER_CONTAINERS_MAX 16

/* A pod's usage as metrics.k8s.io serves it. */
struct xp_autoscaler_pod_usage {
        int64_t time_s, window_s;        /* the sample's time (wall s) and the window */
        int64_t cpu_milli, memory_milli; /* millicores; bytes x 1000 */
        struct {
                char name[64];
                int64_t cpu_milli, memory_milli;
        } containers[XP_AUTOSCALER_CONTAINERS_MAX];
        size_t n_containers;
};

/* A device's latest figures (the agents' xpool_device_* series). */
struct xp_autoscaler_device_usage {
        int64_t time_s;
        bool has_utilization, has_memory_used;
        double utilization_percent, memory_used_bytes;
};

/* A pod's usage under its name. */
struct xp_autoscaler_pod_sample {
        char name[254];
        struct xp_autoscaler_pod_usage usage;
};

struct xp_autoscaler_metrics {
        /* The usage of every pod of ns that has a sample, in one call (the controller asks once
         * per sync and indexes them by name, so a sync stays O(pods)): 0 with *ret (caller
         * frees; NULL when n is 0) and *ret_n, or -errno (as no samples). */
        int (*pods)(void *userdata,
                    const char *ns,
                    struct xp_autoscaler_pod_sample **ret,
                    size_t *ret_n);
        /* The device id of node: 0, -ENOENT when there is no reading of it. */
        int (*device)(void *userdata,
                      const char *node,
                      const char *id,
                      struct xp_autoscaler_device_usage *ret);
        /* An instant PromQL query (GET /api/v1/query): 0 with the answer's body (Prometheus'
         * JSON; caller frees), -ENOTCONN when no endpoint is configured, else -errno with err.
         * May be NULL: as -ENOTCONN. */
        int (*query)(void *userdata,
                     const char *promql,
                     char **ret_body,
                     size_t *ret_len,
                     struct xp_error *err);
        void *userdata;
};

struct xp_autoscaler_options {
        const struct xp_clock *clock;                /* NULL: the system's */
        const struct xp_autoscaler_metrics *metrics; /* borrowed until _free */
        int64_t sync_ms;                             /* 0: 15 s */
        double tolerance;                            /* 0: 0.1 */
        int64_t downscale_window_s;                  /* < 0: 300 s (0 is a valid window) */
};

/* The pods metrics xpool serves itself (from the agents' device figures). */
#define XP_AUTOSCALER_DEVICE_UTILIZATION "xpool_device_utilization"
#define XP_AUTOSCALER_DEVICE_MEMORY      "xpool_device_memory_used_bytes"

int xp_autoscaler_new(struct xp_registry *registry,
                      const struct xp_autoscaler_options *options,
                      struct xp_autoscaler **ret,
                      struct xp_error *err);
int xp_autoscaler_start(struct xp_registry *registry,
                        const struct xp_autoscaler_options *options,
                        struct xp_autoscaler **ret,
                        struct xp_error *err);
/* Informer sync and the autoscalers due; 0 or the store's errors. */
int xp_autoscaler_step(struct xp_autoscaler *c, struct xp_error *err);
/* NULL is fine. */
void xp_autoscaler_free(struct xp_autoscaler *c);
