/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * What the agent's files share: the Node it reports (node.c, pure), and the jobs that talk to
 * the server (registration and lease in lease.c, the pod watch in watch.c, the status writers in
 * status.c, the reconcile loop in reconcile.c), tied together by agent.c.
 */

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "xpool/error.h"
#include "xpool/object.h"

/* How well the node contains its pods: the runtime's xp_runtime_isolation() and
 * xp_runtime_warning(), and whether the agent runs degraded pods anyway. */
struct xp_agent_isolation {
        unsigned have;   /* enum xp_isolation bits */
        const char *why; /* the runtime's warning; NULL when nothing is missing */
        bool allow_degraded;
        /* the pod network (network.c): the NetworkUnavailable condition, left out when
         * network_reason is NULL */
        bool network_unavailable;    /* pods cannot get a network of their own */
        const char *network_reason;  /* CNIPluginNotFound, ...; PodNetworkReady, HostNetwork */
        const char *network_message; /* why not, or what pods get */
};

/* The facts of the host the Node carries beside the inventory; strings borrowed. */
struct xp_agent_node_info {
        const char *name;           /* the Node's name */
        const char *hostname;       /* the Hostname address and kubernetes.io/hostname: the name */
        const char *address;        /* the InternalIP; NULL: none */
        const char *arch;           /* GOARCH spelling: amd64, arm64, ... */
        const char *kernel_version; /* uname -r */
        const char *os_image;       /* PRETTY_NAME of os-release; NULL: "Linux" */
        const char *machine_id;     /* NULL: none */
        const char *boot_id;        /* NULL: none */
        int64_t cpu_count;          /* used when the inventory has no CPU topology */
        int64_t max_pods;           /* allocatable pods; 0: 110, the kubelet's default */
        uint16_t port;              /* the log endpoint: daemonEndpoints.kubeletEndpoint.Port */
        int64_t now_s;              /* heartbeat time, unix seconds */
        const struct xp_agent_isolation *isolation; /* NULL: complete */
};

/* Longest label value Kubernetes accepts. */
#define XP_AGENT_LABEL_VALUE_MAX 63

/*
 * The v1 Node of this agent: metadata (name, labels), status (capacity, allocatable, conditions,
 * addresses, nodeInfo, daemonEndpoints) and status.xpool, the inventory. Pure: no I/O. Caller
 * decrefs *ret. -ENOMEM, or the inventory's encoding error with err.
 */
int xp_agent_node_build(const struct xp_node_inventory *inventory,
                        const struct xp_agent_node_info *info,
                        json_t **ret,
                        struct xp_error *err);

/*
 * The Node to PUT when one exists already: desired with the labels and annotations of existing
 * that desired does not set (but the agent's device labels, xpool.io/<kind>.count, .product and
 * .memory, of a device kind the node no longer has), and existing's spec (taints, unschedulable:
 * the operator's) and resourceVersion. Caller decrefs. NULL on -ENOMEM.
 */
json_t *xp_agent_node_merge(const json_t *existing, const json_t *desired);
/*
 * The merge patch of a Node's status (existing: the Node as stored, or NULL): status, with the
 * resources and devices the node no longer has removed (a merge patch keeps what it does not
 * name: a GPU gone would stay in capacity, allocatable and status.xpool). NULL on -ENOMEM.
 */
json_t *xp_agent_node_status_patch(const json_t *existing, const json_t *status);

/* The GOARCH spelling of a uname machine ("x86_64" -> "amd64"); unknown ones as they are. */
const char *xp_agent_arch(const char *machine);

/*
 * A label value from free text (a device model): characters outside [A-Za-z0-9._-] become '-',
 * leading and trailing non-alphanumerics dropped, at most XP_AGENT_LABEL_VALUE_MAX characters.
 * buf has XP_AGENT_LABEL_VALUE_MAX + 1 bytes. Returns buf ("" when nothing is left).
 */
char *xp_agent_label_value(const char *text, char buf[static XP_AGENT_LABEL_VALUE_MAX + 1]);

/*
 * The Ready condition (status True, reason AgentReady) and its siblings: heartbeat now_s, in
 * that status since since_s; and IsolationDegraded: True when iso misses a part (the reason
 * names the first: CgroupsUnavailable, DeviceFilterUnavailable, NamespacesUnavailable,
 * CapabilitiesUnavailable, SeccompUnavailable; the message is the runtime's warning and what
 * the agent does about it), False (IsolationComplete) otherwise or for iso NULL; and
 * NetworkUnavailable as iso's network fields say (none for iso NULL).
 * NULL: -ENOMEM.
 */
json_t *
xp_agent_node_conditions(int64_t now_s, int64_t since_s, const struct xp_agent_isolation *iso);

/* ---- the running agent ---------------------------------------------------------------------- */

#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <time.h>

#include "clientslots.h"
#include "launch.h"
#include "xpool/agent.h"
#include "xpool/client.h"
#include "xpool/url.h"

/* The most idle clients config_clients.c keeps for pods' starts. */
#define CONFIG_CLIENTS_KEPT 4

struct xp_agent_status;
struct xp_agent_events;
struct xp_runtime;
struct xp_logserver;
struct xp_agent_streams;
struct xp_agent_metrics;
struct xp_metrics_auth;
struct xp_reconcile;
struct xp_image_store;
struct xp_agent_pulls;

/*
 * The pods of this node as the watch last saw them, handed to the reconcile loop: pods maps uid
 * to the pod's JSON (JSON null once deleted), dirty holds the uids changed since the loop last
 * took them. Guarded by lock; wake_fd (an eventfd) is written when dirty gains a uid.
 */
struct xp_agent_pods {
        pthread_mutex_t lock;
        json_t *pods;
        json_t *dirty;
        json_t *done;       /* the uids whose cleanup is over (their pods are kept slim): the images
                               their containers named */
        bool listed;        /* the first list is in: uids absent from pods are gone */
        bool resync;        /* the server is back: every pod is to be compared with it again */
        atomic_bool relist; /* the watch is to list again at its next chance */
        int wake_fd;
};

/* How the agent runs containers (containers.c): its runtime classes, CDI, volumes. */
struct xp_agent_containers {
        struct xp_runtime_class *classes; /* names and paths owned */
        size_t n_classes;
        char *default_runtime;
        char **allowed_host_paths; /* NULL-terminated */
        char *cdi_dir;
        char *sim_dev_dir; /* the simulated devices' stand-in nodes; NULL: none simulated */
};

/* From the options (after discovery): the classes, the CDI directory, the allowed paths, into
 * a->containers and a->policy. -EINVAL with err for a bad --runtime-class or
 * --default-runtime, -ENOMEM. */
int xp_agent_containers_init(struct xp_agent *a,
                             const struct xp_agent_options *o,
                             struct xp_error *err);
/* The node's CDI specs (and the simulated devices' stand-in nodes), written once the runtime is
 * open; a failure is logged (containers then cannot be given devices), not fatal. */
void xp_agent_containers_publish(struct xp_agent *a);
void xp_agent_containers_done(struct xp_agent_containers *c);

/* What a container's launch is built from (on a starter thread). */
struct xp_agent_launch_in {
        const struct xp_pod *pod;
        const char *container;
        bool init;
        unsigned attempt;
        const struct xp_node *node;
        xp_launch_dev_lookup_fn lookup;
        uint64_t pids_max;
        const struct xp_launch_policy *policy;
        struct xp_image_store *images;
};

/* What a launch from an image borrows, kept until the start is over. */
struct xp_agent_launch_keep {
        struct xp_image *image;
        char **layers;
};

/*
 * The launch of one container as its pod's runtime class says: a process of the node
 * (xp_launch_build()), or a container from its image, taken from the store and held for the
 * container (xp_launch_build_image()). -EPERM for a runtime class the node lacks; the builders'
 * errors. keep is cleared with xp_agent_launch_keep_done() once the start is over.
 */
int xp_agent_container_launch(const struct xp_agent_launch_in *in,
                              struct xp_launch **ret,
                              struct xp_agent_launch_keep *keep,
                              struct xp_error *err);
void xp_agent_launch_keep_done(struct xp_agent_launch_keep *keep);
/* The name a container holds its image under ("<pod uid>_<container>"). */
int xp_agent_image_holder(const char *uid, const char *container, char buf[static 256]);
/* Whether pod runs under an OCI runtime class (its containers' images are pulled). */
bool xp_agent_runs_images(const struct xp_agent *a, const struct xp_pod *pod);

struct xp_agent_network;
struct xp_apiproxy;
struct xp_podnet;

struct xp_agent {
        char *server_url, *token, *ca_file, *node_name, *data_dir, *listen_host, *advertise_address;
        struct xp_url server; /* server_url split once, for every container's environment */
        char *state_dir;      /* the containers' runtime state (xp_agent_options.state_dir) */
        char *cgroup_root, *shim_exe, *node_description, *token_id, *ca_pem;
        char *cni_conf_dir, *cni_bin_dirs, *netns_dir, *pod_cidr, *ipc_dir;
        bool host_network_only; /* --pod-network host */
        /* the pods' API address (apiaddr.c): --api-service-address, its forwarder, and whether
         * the agent put the address on lo */
        struct {
                bool off;
                char ip[46];
                unsigned port;
                struct xp_apiproxy *proxy;
                bool added;
                bool unverified; /* the start's check did not reach the server: again later */
                /* the pod network's subnets, the sources it serves besides the node's own */
                char subnets[16][64];
                size_t n_subnets;
        } pod_api;
        size_t ca_pem_len;
        int64_t heartbeat_ms, node_status_ms, backoff_initial_ms, backoff_max_ms;
        int64_t max_pods; /* 0: 110 */
        uint64_t pids_max, log_max_bytes;
        unsigned log_max_files;
        struct xp_discovery_config discovery;
        struct xp_launch_policy policy;      /* the flags, and what the runtime can isolate with */
        struct xp_agent_isolation isolation; /* the same, for the IsolationDegraded condition */
        char **hide_paths;                   /* NULL-terminated: what no container may see */
        char **share_paths; /* NULL-terminated: the node's paths process containers may write */
        struct xp_agent_containers containers; /* runtime classes, CDI, hostPath allow-list */

        struct xp_apiclient_options api; /* strings borrowed from the fields above */
        struct xp_node_inventory *inventory;
        struct xp_node *node; /* the registered Node, decoded (launch specs read it) */
        json_t *node_json;
        int64_t ready_since_s; /* registration: when the conditions last changed */
        uint16_t port;
        uint8_t log_key[32]; /* signs the server's log requests (xpool/logsign.h) */

        struct xp_runtime *runtime;
        struct xp_image_store *images;    /* DATA/images */
        struct xp_agent_pulls *pulls;     /* the pull step of container starts (pull.c) */
        struct xp_podnet *podnet;         /* the pod network, until network takes it */
        struct xp_agent_network *network; /* the network step (network.h) */
        char *network_message;            /* the NetworkUnavailable condition's message */
        struct xp_logserver *logserver;
        struct xp_agent_streams *streams;     /* exec, attach, port-forward (stream.h) */
        struct xp_agent_metrics *metrics;     /* /metrics (metrics.h); before the log endpoint */
        struct xp_metrics_auth *metrics_auth; /* who may read it (metricsauth.h); NULL: anyone */
        bool metrics_anonymous;
        bool serve_tls; /* the endpoint over HTTPS (servingcert.h): an https:// server */
        struct xp_agent_devhealth *devhealth; /* pods on failed devices (devhealth.h) */
        int64_t metrics_interval_ms;
        int64_t status_coalesce_ns; /* status.c: the wait of a status that is not final */
        struct xp_agent_status *status;
        struct xp_agent_events *events;
        struct xp_agent_pods pods;
        struct xp_apiclient *watch_client; /* cancelled to stop the watch */
        struct xp_apiclient *lease_client; /* the lease thread's, cancelled the same way */
        /* projected serviceAccountToken sources' tokens, until 80 % of their lifetime
         * (podconfig_token.c): "uid/account/audience/seconds" -> {token, issued, expires} */
        json_t *sa_tokens;
        pthread_mutex_t sa_tokens_lock;
        /* idle kept-alive clients for the reads of pods' starts (config_clients.c), at most
         * CONFIG_CLIENTS_KEPT */
        struct xp_client_slots config_clients;
        pthread_mutex_t config_clients_lock;

        int stop_fd; /* eventfd: readable once the agent stops */
        atomic_bool stopping;
        pthread_t lease_thread, watch_thread, reconcile_thread;
        bool lease_started, watch_started, reconcile_started;
        /* local ephemeral storage (ephemeral.h): the pass interval, the evicted pods' uids */
        int64_t housekeeping_ms; /* < 0: no pass */
        json_t *disk_evicted;
        struct xp_agent_pressure *pressure;     /* the node's disk (nodepressure.c) */
        struct {                                /* image garbage collection (imagegc.c) */
                int high_percent, low_percent;  /* the kubelet's thresholds */
                int64_t min_age_s;              /* --minimum-image-ttl-duration */
                bool failed;                    /* the last collection fell short */
                int64_t told_free_s, told_gc_s; /* the last Events of each reason; 0: none */
        } image_gc;
        pthread_t housekeeping_thread;
        bool housekeeping_started;
};

/* CLOCK_REALTIME now in nanoseconds. */
static inline int64_t xp_agent_now_ns(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_REALTIME, &ts);
        return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Waits up to ms for the agent to stop: true when it is stopping. */
static inline bool xp_agent_sleep(struct xp_agent *agent, int64_t ms)
{
        struct pollfd p = {.fd = agent->stop_fd, .events = POLLIN};
        int64_t until = xp_agent_now_ns() + ms * 1000000;

        while (!atomic_load(&agent->stopping)) {
                int64_t left = (until - xp_agent_now_ns()) / 1000000;

                if (left <= 0)
                        return false;
                if (poll(&p, 1, left > 60000 ? 60000 : (int)left) > 0)
                        break;
        }
        return true;
}

/* lease.c: creates the Node (or updates it keeping the operator's labels, annotations, taints),
 * writes its status, and creates or takes the Lease. -errno with err. */
int xp_agent_register(struct xp_agent *agent, struct xp_apiclient *client, struct xp_error *err);

/* serving.c: the endpoint's certificate and key (PEM, caller frees both) when it serves HTTPS,
 * asked of the server through client when missing or near their end; both NULL otherwise. */
int xp_agent_serving_tls(struct xp_agent *a,
                         struct xp_apiclient *client,
                         char **ret_cert,
                         char **ret_key,
                         struct xp_error *err);
/*
 * serving.c: when the endpoint's certificate on disk is near its end (or the endpoint is down),
 * a new one, and the endpoint started again with it on its port (its open streams end, as at a
 * restart). 0 when nothing was due; -errno with err (the old endpoint then serves on).
 */
int xp_agent_serving_renew(struct xp_agent *a, struct xp_apiclient *client, struct xp_error *err);
/* agent.c: the endpoint stopped and started again on its port, with what is on disk now. */
int xp_agent_logserver_restart(struct xp_agent *a,
                               struct xp_apiclient *client,
                               struct xp_error *err);

/* A client for a pod start's reads (ConfigMaps, Secrets, TokenRequests): an idle kept-alive one,
 * else a new one; given back after, so that starts do not open a connection each
 * (config_clients.c). take: 0 or -errno with err. */
int xp_agent_config_client_take(struct xp_agent *agent,
                                struct xp_apiclient **ret,
                                struct xp_error *err);
/* Keeps client (may be NULL) for the next start, or frees it when enough are kept. */
void xp_agent_config_client_give(struct xp_agent *agent, struct xp_apiclient *client);
/* Frees the kept clients, when no start runs any more. */
void xp_agent_config_clients_free(struct xp_agent *agent);
/* lease.c: the thread renewing the Lease every heartbeat and the Ready condition. */
void *xp_agent_lease_thread(void *userdata);

/* watch.c: the thread listing and watching the node's pods into agent->pods. */
void *xp_agent_watch_thread(void *userdata);
/* watch.c: records one watch event line (ADDED, MODIFIED, DELETED, BOOKMARK, ERROR) into pods;
 * *ret_rv gets the event's resourceVersion (caller frees). -ESTALE for an ERROR 410, -EBADMSG. */
int xp_agent_pods_apply_event(struct xp_agent_pods *pods,
                              const char *line,
                              char **ret_rv,
                              struct xp_error *err);
/* watch.c: replaces pods by a v1 PodList: every pod present marked dirty, absent ones deleted. */
int xp_agent_pods_apply_list(struct xp_agent_pods *pods, const json_t *list, struct xp_error *err);
/* watch.c: the server is reachable again (the lease renews after failing): the watch lists again
 * at its next event, and the reconcile loop compares every pod with what the server holds. */
void xp_agent_pods_resync(struct xp_agent_pods *pods);
/*
 * A done pod's entry (pods_done.c): metadata's uid, name, namespace, resourceVersion and
 * deletionTimestamp and status.phase, all the agent needs of a pod whose cleanup is over until it
 * is deleted. NULL on -ENOMEM.
 */
json_t *xp_agent_pod_slim(const json_t *pod);
/* The reconcile loop is done with uid: its entry is slimmed now and at every later event until
 * it is deleted. *ret_slim (NULL: not wanted; caller decrefs) is the slim entry, to share, or
 * NULL when uid is absent or deleted. -ENOMEM (the entry then stays whole). */
int xp_agent_pods_mark_done(struct xp_agent_pods *pods, const char *uid, json_t **ret_slim);
/* The images of the done pods' containers, one array (NULL: out of memory). */
json_t *xp_agent_pods_done_images(struct xp_agent_pods *pods);
int xp_agent_pods_init(struct xp_agent_pods *pods);
void xp_agent_pods_done(struct xp_agent_pods *pods);

/* reconcile.c: the loop that runs the pods (podsync + runtime). */
void *xp_agent_reconcile_thread(void *userdata);

/* status.c: the pool of writers that PATCH pod statuses and DELETE finished pods; the newest
 * status of a pod replaces one not yet written, and a write is tried again until it lands (or
 * the pod is gone). */
int xp_agent_status_new(const struct xp_apiclient_options *api,
                        unsigned n_threads,
                        int64_t coalesce_ns,
                        struct xp_agent_status **ret,
                        struct xp_error *err);
/* Stops the writers; what is not written yet is dropped (the next agent writes it again). */
void xp_agent_status_free(struct xp_agent_status *s);
/* Takes ownership of status (a v1 PodStatus). -ENOMEM (status is released then). A status
 * that is not final (phase neither Succeeded nor Failed) waits up to the writers' coalesce_ns
 * for the pod's next one, which then replaces it, while the node runs short pods
 * (statushold.h): a short container's start and exit are one write. A final status goes at
 * once, with what waited. */
int xp_agent_status_put(struct xp_agent_status *s,
                        const char *pod_namespace,
                        const char *pod_name,
                        const char *pod_uid,
                        json_t *status);
/* DELETE the pod with grace 0 and its uid as precondition (after its last status). */
int xp_agent_status_delete(struct xp_agent_status *s,
                           const char *pod_namespace,
                           const char *pod_name,
                           const char *pod_uid);
/* The pod is gone from the server: what waits to be written for it is dropped. */
void xp_agent_status_forget(struct xp_agent_status *s, const char *pod_uid);
/* The pod is being deleted: its end, the agent's kill, tells nothing of how long pods run. */
void xp_agent_status_deleting(struct xp_agent_status *s, const char *pod_uid);

/* imagegc.c: a housekeeping pass's image garbage collection (the kubelet's thresholds). */
/* The thresholds from the options, checked as the kubelet checks them. */
int xp_agent_image_gc_setup(struct xp_agent *a,
                            const struct xp_agent_options *o,
                            struct xp_error *err);
void xp_agent_image_gc(struct xp_agent *a, const json_t *pods);
/* Under disk pressure, before a pod is evicted: every image no container uses goes (pods: the
 * node's, whose images stay), the bytes given back in freed. -EAGAIN: the store was busy (a
 * pull), nothing collected: no pod may be evicted before the next pass tries again. */
int xp_agent_images_reclaim(struct xp_agent *a, const json_t *pods, uint64_t *freed);

/* events.c: a few threads that POST core/v1 Events about the node's pods, best effort, each
 * Event's writes (its create, its counts) in order; a pod's Events may land in any order (their
 * names, by time, keep a list's order). */
int xp_agent_events_new(const struct xp_apiclient_options *api,
                        const char *node_name,
                        struct xp_agent_events **ret,
                        struct xp_error *err);
/* Stops the threads; events not written yet are dropped. NULL is fine. */
void xp_agent_events_free(struct xp_agent_events *events);
/* Queues an Event (type Warning or Normal) about the pod; events may be NULL (then nothing).
 * The same event again within 10 minutes counts on the first (count, lastTimestamp); beyond the
 * pod's budget (25, then one per 5 minutes) it is dropped. -ENOMEM; -ENOBUFS when too many wait
 * (the event is dropped). */
int xp_agent_event(struct xp_agent_events *events,
                   const char *pod_namespace,
                   const char *pod_name,
                   const char *pod_uid,
                   const char *type,
                   const char *reason,
                   const char *message);
/* The same; once: an event already written within 10 minutes is not counted again. */
int xp_agent_event_once(struct xp_agent_events *events,
                        const char *pod_namespace,
                        const char *pod_name,
                        const char *pod_uid,
                        const char *type,
                        const char *reason,
                        const char *message,
                        bool once);

/* An Event about the node (involvedObject kind Node, uid its name, source kubelet), queued
 * as is: for what happens once in a while (the agent's start), not on every heartbeat. */
int xp_agent_event_node(struct xp_agent_events *events,
                        const char *type,
                        const char *reason,
                        const char *message);

/* events_pod.c: the kubelet's container lifecycle Events, from what the reconcile loop sees. */
struct xp_launch;
/* A container started: Created and Started, and at its first attempt its devices. */
void xp_agent_events_started(struct xp_agent_events *events,
                             const char *ns,
                             const char *pod,
                             const char *uid,
                             const char *container,
                             unsigned attempt,
                             const struct xp_launch *launch);
/* A container that did not start: Created when the runtime made it (created: its exec or the OCI
 * runtime failed), then a Warning Failed "Error: message", as the kubelet's; never Started. */
void xp_agent_events_start_failed(struct xp_agent_events *events,
                                  const char *ns,
                                  const char *pod,
                                  const char *uid,
                                  const char *container,
                                  bool created,
                                  const char *message);
/* The container is being stopped (signal SIGTERM or SIGKILL): Killing, once. */
void xp_agent_events_killing(struct xp_agent_events *events,
                             const char *ns,
                             const char *pod,
                             const char *uid,
                             const char *container);
/* A pod status about to be written: BackOff for each container waiting in CrashLoopBackOff,
 * OOMKilled (once per exit) for each container whose last exit was the OOM killer's. */
void xp_agent_events_status(struct xp_agent_events *events,
                            const char *ns,
                            const char *pod,
                            const char *uid,
                            const json_t *status);

/*
 * The pods' address of the API server (apiaddr.c, docs/networking.md "The API from pods"):
 * text is --api-service-address (NULL: XP_APIPROXY_DEFAULT, "none": off), checked at start.
 */
int xp_agent_pod_api_parse(struct xp_agent *a, const char *text, struct xp_error *err);
/* On a node whose pods get networks of their own: the address put on lo and its forwarder to
 * the API server started, and every container's KUBERNETES_SERVICE_HOST and _PORT made it; a
 * failure is logged and pods get the agent's own address of the server, as without it. */
void xp_agent_pod_api_start(struct xp_agent *a);
/* From the lease loop once the server answered: the check the start could not make (the server
 * down or slow then) made again, and its outcome logged. */
void xp_agent_pod_api_recheck(struct xp_agent *a);
/* The forwarder stopped, and the address removed from lo when it was the agent's. */
void xp_agent_pod_api_stop(struct xp_agent *a);
