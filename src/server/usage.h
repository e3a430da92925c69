/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * What the nodes use, as the server keeps it (docs/monitoring.md): every interval the server
 * reads each Ready node's /metrics/resource from its agent (signed as the log requests are,
 * with the node's key) and keeps, per node, pod and device, the latest figures and a short
 * history. metrics.k8s.io (kubectl top), `xpool top` and the web dashboard read it through this
 * header: every reader gets copies, so nothing here is held while a caller works.
 *
 * CPU is a rate: the change of the cumulative CPU time between the last two readings over the
 * time between them (as metrics-server computes it), so a node or pod has figures from its
 * second reading on.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "xpool/error.h"

#define SRV_USAGE_HISTORY 120 /* points kept per node, pod and device (1 h at 30 s) */

struct xp_store;
struct auth;
struct srv_usage;

struct srv_usage_point {
        double time_s;       /* unix time of the reading */
        double cpu_cores;    /* nodes and pods; devices: utilisation (%) */
        double memory_bytes; /* working set; devices: memory in use */
};

struct srv_usage_node {
        char name[254];
        double time_s, window_s; /* the latest reading and the span its CPU rate covers */
        double cpu_cores, memory_bytes;
};

struct srv_usage_container {
        char name[64];
        double cpu_cores, memory_bytes;
};

#define SRV_USAGE_CONTAINERS_MAX 16

struct srv_usage_pod {
        char namespace[64], name[254], node[254];
        double time_s, window_s;
        double cpu_cores, memory_bytes;
        struct srv_usage_container containers[SRV_USAGE_CONTAINERS_MAX];
        size_t n_containers;
        /* The pod's own utilisation of its devices (%), the mean over the devices it holds
         * (the agent's xpool_pod_device_utilization_percent): the Pods metric
         * xpool_device_utilization an HPA targets. */
        bool has_device_utilization;
        double device_utilization_percent;
        unsigned n_devices; /* devices that mean covers */
};

struct srv_usage_device {
        char node[254], device[128], kind[16], model[128];
        double time_s;
        bool has_utilization, has_memory_used, has_memory_total;
        double utilization_percent, memory_used_bytes, memory_total_bytes;
};

struct agent_tls;

/*
 * Starts the reading thread over store and auth (borrowed until srv_usage_free()), every
 * interval_ms (0: 15 s, metrics-server's resolution); the agent of local_node (borrowed too;
 * NULL: none) at 127.0.0.1. -ENOMEM, pthread_create()'s error.
 */
int srv_usage_start(struct xp_store *store,
                    struct auth *auth,
                    const struct agent_tls *agent_tls, /* borrowed; NULL: plain HTTP */
                    int64_t interval_ms,
                    const char *local_node,
                    struct srv_usage **ret,
                    struct xp_error *err);
void srv_usage_free(struct srv_usage *usage);

/* Every device reading's utilisation also goes into history (borrowed; NULL: no more), for the
 * dashboard's hour (controller/history.h). */
struct xp_history;
void srv_usage_feed(struct srv_usage *usage, struct xp_history *history);

/* Copies of the latest figures (caller frees *ret; *ret_n may be 0). -ENOMEM. */
int srv_usage_nodes(struct srv_usage *usage, struct srv_usage_node **ret, size_t *ret_n);
/* namespace NULL: every pod's. */
int srv_usage_pods(struct srv_usage *usage,
                   const char *namespace,
                   struct srv_usage_pod **ret,
                   size_t *ret_n);
int srv_usage_devices(struct srv_usage *usage, struct srv_usage_device **ret, size_t *ret_n);

/*
 * The history of one node ("node", name), pod ("pod", "NAMESPACE/NAME") or device ("device",
 * "NODE/ID"), oldest first (caller frees *ret). -ENOENT when there is none.
 */
int srv_usage_history(struct srv_usage *usage,
                      const char *what,
                      const char *key,
                      struct srv_usage_point **ret,
                      size_t *ret_n);
