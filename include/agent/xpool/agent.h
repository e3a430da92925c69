/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The node agent: registers this machine as a Node with its device inventory, keeps its Lease
 * and Ready condition fresh, watches the pods bound to it and runs them through the process
 * runtime, reporting their status; serves their logs to the API server's proxy. Containers
 * outlive the agent: a new agent re-adopts them.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "xpool/device.h"
#include "xpool/error.h"
#include "xpool/macro.h"

struct xp_agent_options {
        const char *server_url; /* https://host:port or http:// */
        const char *token;      /* the node token (xpn_...) */
        const char *ca_file;    /* PEM CA that signed the server's certificate; NULL: none (http) */
        const char *node_name;  /* NULL: the host name */
        const char *data_dir;   /* agent state (containers/, logs/); created */
        struct xp_discovery_config
            discovery;           /* what devices to report (node_description for simulated ones) */
        const char *listen_host; /* log endpoint; NULL: the advertise address */
        uint16_t listen_port;    /* 0: a free port (reported in the Node) */
        const char *advertise_address; /* the Node's InternalIP; NULL: the address used to reach the
                                          server */
        int64_t heartbeat_ms;          /* lease renewal; 0: 10000 */
        int64_t max_pods;              /* the pods the Node takes (allocatable); 0: 110 */
        int64_t node_status_ms;        /* node status refresh; 0: 60000 */
        int64_t backoff_initial_ms;    /* restart back-off; 0: 10000 */
        int64_t backoff_max_ms;        /* 0: 300000 */
        uint64_t pids_max;             /* per container; 0: 4096 */
        uint64_t log_max_bytes;        /* 0: 10 MiB */
        unsigned log_max_files;        /* 0: 1 */
        const char *cgroup_root;       /* NULL: "/" */
        const char *shim_exe;          /* NULL: the runtime's default (runtime.h) */
        /* added beside the pinned fields: */
        const char *
            ca_pem; /* the CA as PEM text (a kubeconfig's certificate-authority-data); NULL: none */
        size_t ca_pem_len;
        /* containment (docs/security.md, "Threat model"): */
        bool allow_privileged;         /* run privileged containers (each with a Warning Event) */
        bool allow_degraded_isolation; /* run pods with limits or devices this node cannot
                                          enforce (no cgroups, no device filter) */
        const char *const *hide_paths; /* NULL-terminated: paths no container may see besides
                                          the data directory (the token and kubeconfig files,
                                          the server's data directory) */
        /* NULL-terminated: the node's paths process containers see and may write (--share); the
         * rest of the node is read-only to them, their /tmp their own */
        const char *const *share_paths;
        /* images (docs/images.md): the image store is DATA/images */
        const char *registries_file; /* NULL: XP_IMAGE_REGISTRIES_DEFAULT when it exists */
        const char *auth_file;       /* NULL: XP_IMAGE_AUTH_DEFAULT when it exists */
        /* containers (docs/containers.md) */
        const char *default_runtime; /* the runtime class of pods that name none; NULL: "crun" */
        const char *const *runtime_classes; /* "NAME=PATH" each, NULL-terminated: OCI runtimes
                                               beside the built-in process, crun and runc */
        const char *cdi_dir; /* the node's CDI specs; NULL: /var/run/cdi, or DATA/cdi on a node
                                with simulated devices */
        const char *const *allowed_host_paths; /* hostPath volumes must be below one of these
                                                  (NULL-terminated); NULL: none is allowed */
        /* the pod network (docs/networking.md): */
        bool host_network_only;   /* every pod on the node's network (--pod-network host) */
        const char *cni_conf_dir; /* NULL: /etc/cni/net.d */
        const char *cni_bin_dirs; /* ':'-separated; NULL: /usr/lib/cni:/opt/cni/bin */
        const char *netns_dir;    /* the pods' namespaces; NULL: /run/xpool/agent-<key>/netns */
        /* the pods' address of the API server, forwarded by the agent (docs/networking.md, "The
         * API from pods"): IPv4:PORT or [IPv6]:PORT; NULL: 10.96.0.1:443; "none": the agent's
         * own address of the server */
        const char *api_service_address;
        /* the containers' runtime state (spec, exit status, sockets); NULL: DATA/containers.
         * On a tmpfs a container's start creates no ext4 inode there (docs/agent.md) */
        const char *state_dir;
        const char *pod_cidr;        /* the built-in network's subnet; NULL: 10.87.0.0/16 */
        const char *ipc_dir;         /* NULL: /run/xpool/agent-<key>/ipc */
        int64_t metrics_interval_ms; /* device, node and container sampling; 0: 10000; < 0: off */
        /* /metrics for anyone who reaches the port, as DCGM's exporter; false: a bearer token the
         * server accepts for get nodes/metrics on this node (docs/monitoring.md) */
        bool metrics_anonymous;
        /* the endpoint in plain HTTP; only with an http:// server (run --no-tls), which is
         * also what an http:// server gets without it. false: HTTPS with a serving certificate
         * the server signs (docs/agent.md, "HTTPS") */
        bool no_tls;
        int64_t status_coalesce_ms; /* how long a pod's status that is not final waits for the
                                       pod's next change, to be one write with it; 0: 5; < 0: no
                                       wait */
        /* local ephemeral storage (docs/agent.md): how often pods' disk use is measured and
         * checked against their limits; 0: 10000; < 0: never */
        int64_t housekeeping_interval_ms;
        /* the kubelet's --eviction-hard: "nodefs.available<10%" or "<SIZE"; NULL: 10% */
        const char *eviction_hard;
        /* image garbage collection (docs/images.md), the kubelet's --image-gc-high-threshold and
         * --image-gc-low-threshold: percent of the image file system used; 0: 85 and 80; a high
         * of 100 turns it off */
        int image_gc_high_threshold;
        int image_gc_low_threshold;
        /* the kubelet's --minimum-image-ttl-duration: an image pulled less than this ago is not
         * collected; 0: 2m; < 0: none */
        int64_t minimum_image_ttl_ms;
};

struct xp_agent;

/* Discovers devices, opens the runtime (re-adopting containers), registers the Node, then runs
 * on its own threads. Strings of options are copied. -errno with err saying what failed.
 * While the server cannot be reached or fails (connection refused, timeout, 5xx) it waits and
 * tries again (0.5 s doubling to 10 s, logged), on 401 for 10 s (a token made just now);
 * -ECANCELED when SIGINT or SIGTERM, blocked by the caller, arrives meanwhile. */
int xp_agent_new(const struct xp_agent_options *options,
                 struct xp_agent **ret,
                 struct xp_error *err);
/* Stops the agent's threads; containers keep running (a new agent re-adopts them). */
void xp_agent_free(struct xp_agent *agent);
XP_DEFINE_FREEP(struct xp_agent, xp_agent_free)
const char *xp_agent_node_name(const struct xp_agent *agent);
