/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The API server: a Kubernetes-shaped REST API (v1 Pods and Nodes, discovery documents) over the
 * durable store, served over HTTP by libmicrohttpd. docs/server.md describes the endpoints.
 *
 * Lifecycle: xp_server_new() opens the store and starts serving on its own threads at once;
 * xp_server_free() stops accepting, waits for the requests in flight, and closes the store.
 * The caller handles signals (block SIGINT/SIGTERM before xp_server_new() so that the server's
 * threads inherit the mask, then sigwait()).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "xpool/error.h"

#define XP_SERVER_DEFAULT_PORT 6443
#define XP_SERVER_BODY_MAX     (3 * 1024 * 1024) /* request bodies: larger ones are 413 */

struct xp_server;

enum xp_server_tls {
        XP_SERVER_TLS_GENERATE = 0, /* a CA and serving certificate made and kept in DATA_DIR/pki */
        XP_SERVER_TLS_FILES,        /* the certificate and key in tls_cert and tls_key */
        XP_SERVER_TLS_OFF,          /* plain HTTP */
};

#define XP_SERVER_SANS_MAX 16

/*
 * Security is on by default: every request but GET /version and the health checks needs a
 * bearer token (DATA_DIR/tokens; docs/security.md), and the server speaks TLS with a generated
 * CA. The server writes a kubeconfig for its admin token (kubeconfig, default
 * DATA_DIR/admin.kubeconfig, mode 0600) at every start, with the URL it serves on.
 */
struct xp_server_options {
        const char *host;     /* an IPv4 or IPv6 literal; NULL means 127.0.0.1 */
        uint16_t port;        /* 0 picks a free port: xp_server_url() tells which */
        const char *data_dir; /* must exist; the store is DATA_DIR/state.db */
        enum xp_server_tls tls;
        const char *tls_cert; /* XP_SERVER_TLS_FILES: PEM files */
        const char *tls_key;
        /* Further names and addresses the generated certificate is valid for (a node's address
         * that agents use): up to XP_SERVER_SANS_MAX. */
        const char *const *tls_sans;
        size_t n_tls_sans;
        const char *kubeconfig; /* NULL: DATA_DIR/admin.kubeconfig */
        /* No scheduling loop: pods stay Pending until something binds them (pods/binding). */
        bool scheduler_off;
        /* A node whose agent has not renewed its Lease for this long is lost (Ready Unknown,
         * tainted unreachable); 0: XP_SERVER_NODE_MONITOR_GRACE_MS. */
        int64_t node_monitor_grace_ms;
        /* The pods of a lost node are marked Failed (NodeLost) after this long, unless they
         * tolerate the taint otherwise; 0: XP_SERVER_POD_EVICTION_TIMEOUT_MS. */
        int64_t pod_eviction_timeout_ms;
        /* Writes the store's event log keeps: how far back a watch resumes and a paged list's
         * continue token stays valid (etcd's compaction, in kube-apiserver); 0: 10000. */
        size_t event_history;
        /* How often the agents' usage is read (metrics.k8s.io); 0: 15 s. */
        int64_t metrics_resolution_ms;
        /* The scheduler's gang timeout (0: 5 min) and topology keys (NULL: the default; see
         * include/controller/xpool/scheduler.h). */
        int64_t gang_timeout_ms;
        const char *gang_topology_keys;
        /* Services' cluster IPs, an IPv4 CIDR (NULL: 10.96.0.0/12); its first address is the
         * `kubernetes` Service's. */
        const char *service_cluster_ip_range;
        /* Services' node ports, "FIRST-LAST" (NULL: 30000-32767). */
        const char *service_node_port_range;
        /* The scheduler's placement profile by name (NULL: its default; docs/scheduler.md). */
        const char *placement_profile;
        /* Of the nodes, the share the scheduler ranks a pod without devices on (0: adaptive, as
         * kube-scheduler; 100: every node; docs/scheduler.md, "Sampling"). */
        unsigned percentage_of_nodes_to_score;
        /* The HorizontalPodAutoscaler controller (docs/workloads.md): its sync period (0: 15 s),
         * tolerance (0: 0.1), scale-down stabilization window (hpa_downscale_set false: 5 min)
         * and the Prometheus-compatible endpoint of External/Object metrics (NULL: none). */
        int64_t hpa_sync_ms;
        double hpa_tolerance;
        int64_t hpa_downscale_ms;
        bool hpa_downscale_set;
        const char *hpa_prometheus_url;
        bool hpa_scale_to_zero; /* minReplicas 0 accepted (Kubernetes' HPAScaleToZero gate) */
        /* A watch whose client takes nothing of what is due for this long is dropped (0: 120 s),
         * and an authenticated connection without a request for this long is closed (0: 60 s;
         * libmicrohttpd's own timeout is twice it, in whole seconds). For tests and operators. */
        int64_t watch_stall_timeout_ms;
        int64_t connection_idle_timeout_ms;
        /* Terminated pods (Succeeded, Failed) kept before the oldest are deleted
         * (--terminated-pod-gc-threshold); 0: 12500, negative: no such collection. */
        int64_t terminated_pod_gc_threshold;
        /* The Node whose agent runs in this process (xpool up; borrowed until xp_server_free()):
         * its log endpoint listens on 127.0.0.1 only, so the server reaches it there, whatever
         * InternalIP the Node reports. NULL: every node at its InternalIP. */
        const char *local_node;
};

#define XP_SERVER_NODE_MONITOR_GRACE_MS   40000
#define XP_SERVER_POD_EVICTION_TIMEOUT_MS 300000

/*
 * Opens the store and starts listening. -errno with err saying what failed: the store's errors
 * (xp_store_open()), -EINVAL for a bad host, -EADDRINUSE (or another) when it cannot listen.
 * Caller frees with xp_server_free().
 */
int xp_server_new(const struct xp_server_options *options,
                  struct xp_server **ret,
                  struct xp_error *err);

/* The URL clients use: https://127.0.0.1:6443 (a wildcard host is given as loopback). */
const char *xp_server_url(const struct xp_server *server);
/* The admin kubeconfig written at start. */
const char *xp_server_kubeconfig(const struct xp_server *server);

/* Stops serving (requests in flight finish) and closes the store. NULL is fine. */
void xp_server_free(struct xp_server *server);
