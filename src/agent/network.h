/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The agent's network step (network.c): each pod's network (include/xpool/podnet.h) set up
 * before its first container starts and torn down once the pod is over, as the kubelet's pod
 * sandbox, on worker threads of its own so that the reconcile loop never waits for a CNI plugin.
 * Pods with hostNetwork, and every pod of a node without a pod network (--pod-network host, or
 * none available and --allow-degraded-isolation), use the node's network: their podIP is the
 * node's. docs/networking.md has the user's view.
 *
 * Re-adoption: at start the records of the pod networks are read; a ready one is the pod's
 * network as it was (no second ADD) and is CHECKed in the background; one whose ADD never
 * finished or whose namespace is gone is torn down (DEL), and its pod gets a new one when a
 * container starts. Those of pods the agent does not know are torn down once the first list is
 * in (xp_agent_network_release_unknown()).
 */

#include <jansson.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "xpool/cni.h"
#include "xpool/object.h"
#include "xpool/podnet.h"

struct xp_agent_events;
struct xp_agent_network;

enum xp_agent_net_state {
        XP_AGENT_NET_NONE,    /* not set up (peek only: want() asks for it) */
        XP_AGENT_NET_PENDING, /* being set up: the pod is given back by take() when it is done */
        XP_AGENT_NET_READY,
        XP_AGENT_NET_FAILED, /* the setup failed: tried again from retry_at_ns */
};

/* What a pod's containers get. */
struct xp_agent_netview {
        enum xp_agent_net_state state;
        bool host;                      /* the node's network: netns empty, ips the node's */
        char netns[XP_PODNET_PATH_MAX]; /* READY, not host: the namespace to join */
        char ips[XP_CNI_IPS_MAX][INET6_ADDRSTRLEN]; /* READY: podIPs, IPv4 first */
        size_t n_ips;
        char message[512]; /* FAILED: why */
        int64_t retry_at_ns;
};

struct xp_agent_network_config {
        int64_t backoff_initial_ms, backoff_max_ms; /* retries of failed setups and teardowns */
        bool degrade_to_host; /* pods run on the node's network when pn has none to give */
        struct xp_agent_events *events; /* FailedCreatePodSandBox; NULL: none */
        unsigned workers;               /* 0: 4 */
};

/*
 * Takes pn (NULL: every pod on the node's network, --pod-network host), reads its records and
 * starts the workers. -errno with err.
 */
int xp_agent_network_new(struct xp_podnet *pn,
                         const struct xp_agent_network_config *config,
                         struct xp_agent_network **ret,
                         struct xp_error *err);
/* Stops the workers after the jobs they are running; queued ones are left to the next agent
 * (the records say what is set up). NULL is fine. */
void xp_agent_network_free(struct xp_agent_network *net);

/* Readable (POLLIN) when a setup ended; xp_agent_network_take() drains it. -1 without pn. */
int xp_agent_network_fd(const struct xp_agent_network *net);
/* The uids of the pods whose setup ended since the last call (caller frees each and the
 * array): they are to be synced again. */
int xp_agent_network_take(struct xp_agent_network *net, char ***ret, size_t *ret_n);

/* The pod's network as it stands, without asking for anything. host_ip: the node's address. */
void xp_agent_network_peek(struct xp_agent_network *net,
                           const struct xp_pod *pod,
                           const char *host_ip,
                           struct xp_agent_netview *ret);
/* The same, and a setup queued when there is none (or a failed one is due again). */
void xp_agent_network_want(struct xp_agent_network *net,
                           const struct xp_pod *pod,
                           const char *host_ip,
                           int64_t now_ns,
                           struct xp_agent_netview *ret);
/* The pod is over (or gone): its network is torn down, after a setup in flight if any. */
void xp_agent_network_release(struct xp_agent_network *net, const char *uid);
/* Whether the table has the pod's network (set up, adopted, or being torn down). */
bool xp_agent_network_has(struct xp_agent_network *net, const char *uid);
/* Tears down the networks of every pod known(uid) says false for (leftovers of pods deleted
 * while no agent ran). */
void xp_agent_network_release_unknown(struct xp_agent_network *net,
                                      bool (*known)(const char *uid, void *userdata),
                                      void *userdata);

/* ---- pure: what a pod asks for -------------------------------------------------------------- */

/* spec.hostNetwork. */
bool xp_agent_pod_host_network(const struct xp_pod *pod);

/*
 * The runtimeConfig of the pod for its network's plugins: {"portMappings": [{"hostPort",
 * "containerPort", "protocol" ("tcp", "udp", "sctp"), "hostIP"}]} of every container port that
 * has a hostPort, as the kubelet hands them to CNI; *ret NULL when there is none. Ports out of
 * 1..65535 and unknown protocols are left out (the API server checks them). -ENOMEM.
 */
int xp_agent_port_mappings(const struct xp_pod *pod, json_t **ret);
