/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The server's assembly: the store, the registry, the scheduling loop and the node lifecycle
 * controller, the tokens, TLS, the admin kubeconfig and the listening socket, handed to the HTTP
 * layer (http.c); and their teardown in the reverse order.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agent_tls.h"
#include "auth.h"
#include "hpa_source.h"
#include "http.h"
#include "internal.h"
#include "metrics.h"
#include "satoken.h"
#include "servingcert.h"
#include "setup.h"
#include "usage.h"
#include "watch_shared.h"
#include "xpool/autoscaler.h"
#include "xpool/datadir.h"
#include "xpool/disruption.h"
#include "xpool/endpoints.h"
#include "xpool/history.h"
#include "xpool/history_feed.h"
#include "xpool/http_door.h"
#include "xpool/log.h"
#include "xpool/macro.h"
#include "xpool/nodegraph.h"
#include "xpool/nodelife.h"
#include "xpool/podgc.h"
#include "xpool/poolstats.h"
#include "xpool/quotastatus.h"
#include "xpool/scheduler.h"
#include "xpool/server.h"
#include "xpool/serviceaccounts.h"
#include "xpool/store.h"
#include "xpool/storekeys.h"
#include "xpool/timeutil.h"
#include "xpool/workloads.h"

#define ADDRESS_MAX (INET6_ADDRSTRLEN + 16)

struct xp_server {
        struct http *http;
        struct api api;
        struct auth *auth;
        struct xp_scheduler *scheduler; /* NULL with scheduler_off */
        struct xp_nodelife *nodelife;
        struct xp_quotastatus *quotastatus;   /* ResourceQuotas' status */
        struct xp_podgc *podgc;               /* terminated and orphaned pods deleted */
        struct xp_disruption *disruption;     /* PodDisruptionBudgets' status */
        struct xp_endpoints *endpoints;       /* Services' Endpoints and EndpointSlices */
        struct xp_workloads *workloads;       /* ReplicaSets, Deployments, DaemonSets, the GC */
        struct srv_hpa_source *hpa_source;    /* the autoscaler's figures */
        struct xp_autoscaler *autoscaler;     /* HorizontalPodAutoscalers */
        struct xp_poolstats *poolstats;       /* /metrics */
        struct xp_history_feed *history_feed; /* fills api.history */
        struct xp_serviceaccounts *serviceaccounts; /* `default` and kube-root-ca.crt */
        uint16_t port;
        char address[ADDRESS_MAX]; /* host:port, as clients reach it */
        char url[ADDRESS_MAX + 16];
        char *kubeconfig;
        char *tls_cert, *tls_key, *tls_ca; /* PEM; the HTTP layer reads the first two */
};

/* The store (read-only when its disk is full), the registry over it, and the controllers. */
static struct xp_nodelife_options nodelife_options_of(const struct xp_server_options *options)
{
        return (struct xp_nodelife_options){
            .grace_ms = options->node_monitor_grace_ms > 0 ? options->node_monitor_grace_ms
                                                           : XP_SERVER_NODE_MONITOR_GRACE_MS,
            .eviction_ms = options->pod_eviction_timeout_ms > 0 ? options->pod_eviction_timeout_ms
                                                                : XP_SERVER_POD_EVICTION_TIMEOUT_MS,
        };
}

/* The Secrets the key file cannot open (its key lost or replaced): how many, and the first's
 * reason, which names the key. */
struct unreadable {
        size_t n;
        char first[512];
};

static void count_unreadable(const char *ns, const char *name, const char *why, void *userdata)
{
        struct unreadable *u = userdata;

        (void)ns;
        (void)name;
        if (u->n++ == 0)
                snprintf(u->first, sizeof u->first, "%s", why);
}

/* A lost or replaced key file, said once at the start, before any request meets it: each such
 * Secret then answers 500 naming its key, and everything else is served (docs/security.md). */
static void say_unreadable_secrets(struct xp_store *store, const char *keys_path, bool made)
{
        struct unreadable u = {0};
        struct xp_error err = {0};
        json_t *items = NULL;

        if (xp_store_list_readable(store,
                                   "secrets",
                                   NULL,
                                   &(struct xp_store_skip){.fn = count_unreadable, .userdata = &u},
                                   &items,
                                   NULL,
                                   &err) < 0)
                return; /* the reads that meet it say what it is */
        json_decref(items);
        if (u.n > 0)
                xp_log(LOG_WARNING,
                       "xpool server: %zu Secret%s cannot be decrypted with the keys in %s%s: "
                       "reads of %s are refused (500) until the key file they were written with is "
                       "back, everything else is served (docs/security.md, \"Secrets at rest\"); "
                       "the first: %s",
                       u.n,
                       u.n == 1 ? "" : "s",
                       keys_path,
                       made ? " (the file was missing: it was made anew, with a new key)" : "",
                       u.n == 1 ? "it" : "them",
                       u.first);
}

static int start_state(struct xp_server *server,
                       const struct xp_server_options *options,
                       const char *db,
                       struct xp_error *err)
{
        const struct xp_nodelife_options nodelife_options = nodelife_options_of(options);
        _cleanup_(xp_store_keys_freep) struct xp_store_keys *keys = NULL;
        _cleanup_free_ char *keys_path = xp_datadir_path(options->data_dir, XP_DATADIR_ENCRYPTION);
        char why[128];
        bool made;
        int r;

        /* Secrets are encrypted at rest: the key is made at the first start */
        if (!keys_path)
                return xp_errorf(err, -ENOMEM, "out of memory");
        made = access(keys_path, F_OK) < 0 && errno == ENOENT;
        r = xp_store_keys_load(keys_path, true, &keys, err);
        if (r < 0)
                return r;
        r = xp_store_open(&(struct xp_store_options){.path = db,
                                                     .event_history = options->event_history,
                                                     .keys = keys,
                                                     .encrypted_kinds = XP_STORE_ENCRYPTED_KINDS},
                          &server->api.store,
                          err);
        if (r < 0)
                return r;
        say_unreadable_secrets(server->api.store, keys_path, made);
        if (xp_store_readonly(server->api.store, why, sizeof(why)))
                xp_log(LOG_WARNING,
                       "xpool server: the store is read-only: %s; reads are served, writes are "
                       "refused until that changes",
                       why);
        r = xp_registry_new(server->api.store, &server->api.registry, err);
        if (r < 0)
                return r;
        /* the eviction timeout is what the default tolerations tolerate, as in Kubernetes; set
         * before the controllers start, whose pods get them too */
        server->api.pod_toleration_seconds = (nodelife_options.eviction_ms + 999) / 1000;
        xp_registry_pod_tolerations(server->api.registry, server->api.pod_toleration_seconds);
        if (!options->scheduler_off) {
                const struct xp_scheduler_options scheduler_options = {
                    .bind_workers = XP_SCHEDULER_BIND_WORKERS,
                    .gang_timeout_ms = options->gang_timeout_ms,
                    .gang_topology_keys = options->gang_topology_keys,
                    .placement_profile = options->placement_profile,
                    .percentage_of_nodes_to_score = options->percentage_of_nodes_to_score,
                };
                /* listed now, run once the server listens: see start_serving_loops() */
                r = xp_scheduler_new(
                    server->api.registry, &scheduler_options, &server->scheduler, err);
                if (r < 0)
                        return r;
        }
        r = xp_poolstats_start(server->api.registry, &server->poolstats, err);
        if (r >= 0)
                r = srv_metrics_new(
                    server->api.store, server->scheduler, server->poolstats, &server->api.metrics);
        if (r >= 0)
                r = xp_history_new(0, 0, &server->api.history);
        if (r >= 0)
                r = xp_history_feed_start(
                    server->api.store, server->api.history, &server->history_feed, err);
        if (r >= 0)
                r = xp_quotastatus_start(server->api.registry, &server->quotastatus, err);
        if (r >= 0)
                r = xp_disruption_start(server->api.registry, &server->disruption, err);
        if (r >= 0)
                r = xp_endpoints_start(server->api.registry, &server->endpoints, err);
        if (r >= 0)
                r = xp_workloads_start(server->api.registry, NULL, &server->workloads, err);
        if (r >= 0)
                r = xp_podgc_start(server->api.registry,
                                   &(struct xp_podgc_options){
                                       .threshold = options->terminated_pod_gc_threshold == 0
                                                        ? XP_PODGC_THRESHOLD_DEFAULT
                                                        : options->terminated_pod_gc_threshold},
                                   &server->podgc,
                                   err);
        return r < 0 ? r : 0;
}

/* What the handlers read of the server: its address, the default tolerations' seconds,
 * Services' cluster IPs, and the kubernetes Service pointing at where it listens. */
static int start_api(struct xp_server *server,
                     const struct xp_server_options *options,
                     const char *host,
                     struct xp_error *err)
{
        struct xp_error why = {0};
        char first[INET6_ADDRSTRLEN];
        int r;

        server->api.server_address = server->address;
        server->api.local_node = options->local_node;
        r = service_ips_new(options->service_cluster_ip_range, &server->api.service_ips, err);
        if (r < 0)
                return r;
        service_ips_first(server->api.service_ips, first);
        r = node_ports_new(options->service_node_port_range, &server->api.node_ports, err);
        if (r >= 0)
                r = xp_node_graph_new(server->api.store, &server->api.node_graph);
        if (r < 0)
                return r;
        r = watch_batches_new(&server->api.watch_batches);
        if (r < 0)
                return r;
        /* a store that takes no writes (a full disk) still serves: the Service can wait */
        r = service_kubernetes_reconcile(&server->api, first, host, server->port, &why);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                xp_log(LOG_WARNING,
                       "xpool server: the kubernetes Service was not written: %s",
                       xp_error_message(&why));
        return 0;
}

/* The key service account tokens are signed with, and the controller that gives every namespace
 * its `default` ServiceAccount and the CA's kube-root-ca.crt. */
static int start_serviceaccounts(struct xp_server *server,
                                 const struct xp_server_options *options,
                                 struct xp_error *err)
{
        _cleanup_free_ char *path = xp_datadir_path(options->data_dir, SATOKEN_KEY_FILE);
        int r;

        if (!path)
                return -ENOMEM;
        r = satoken_key_open(path, &server->api.satoken, err);
        /* a full disk must not keep the server from serving reads (docs/store.md): without the
         * key, no service account token is made or accepted */
        if (r == -ENOSPC || r == -EDQUOT || r == -EROFS) {
                xp_log(LOG_WARNING,
                       "xpool server: %s: service account tokens are off until it can be written",
                       xp_error_message(err));
                xp_error_clear(err);
                r = 0;
        }
        if (r < 0)
                return r;
        xp_registry_serviceaccount_tokens(
            server->api.registry, server->api.satoken != NULL, server->tls_ca != NULL);
        return xp_serviceaccounts_start(
            server->api.registry, server->tls_ca, &server->serviceaccounts, err);
}

/* The agents' usage reader, and the HorizontalPodAutoscaler controller over it. */
static int start_autoscaler(struct xp_server *server,
                            const struct xp_server_options *options,
                            struct xp_error *err)
{
        int r = srv_usage_start(server->api.store,
                                server->auth,
                                server->api.agent_tls,
                                options->metrics_resolution_ms,
                                options->local_node,
                                &server->api.usage,
                                err);
        if (r < 0)
                return r;
        srv_usage_feed(server->api.usage, server->api.history); /* the dashboard's utilisation */
        xp_kind_hpa_allow_scale_to_zero(options->hpa_scale_to_zero);
        r = srv_hpa_source_new(
            server->api.usage, options->hpa_prometheus_url, &server->hpa_source, err);
        if (r < 0)
                return r;
        struct xp_autoscaler_options autoscaler = {
            .metrics = srv_hpa_source_metrics(server->hpa_source),
            .sync_ms = options->hpa_sync_ms,
            .tolerance = options->hpa_tolerance,
            .downscale_window_s =
                options->hpa_downscale_set ? options->hpa_downscale_ms / 1000 : -1,
        };
        return xp_autoscaler_start(server->api.registry, &autoscaler, &server->autoscaler, err);
}

/* The address clients reach us on, and the URL this machine's clients use (a wildcard listener
 * through loopback). */
static void set_addresses(struct xp_server *server, const char *host, bool ipv6, bool tls)
{
        const char *scheme = tls ? "https" : "http";

        snprintf(server->address,
                 sizeof server->address,
                 "%s%s%s:%u",
                 ipv6 ? "[" : "",
                 host,
                 ipv6 ? "]" : "",
                 server->port);
        if (strcmp(host, "0.0.0.0") == 0)
                snprintf(
                    server->url, sizeof server->url, "%s://127.0.0.1:%u", scheme, server->port);
        else if (strcmp(host, "::") == 0)
                snprintf(server->url, sizeof server->url, "%s://[::1]:%u", scheme, server->port);
        else
                snprintf(server->url, sizeof server->url, "%s://%s", scheme, server->address);
}

static int start_nodelife(struct xp_server *server,
                          const struct xp_server_options *options,
                          struct xp_error *err)
{
        const struct xp_nodelife_options nodelife_options = nodelife_options_of(options);

        return xp_nodelife_start(server->api.registry, &nodelife_options, &server->nodelife, err);
}

/* The loops that must not start before the server serves. The node lifecycle once agents can
 * reach us: it gives every node a full grace period from its start, which a slow start must not
 * eat into (docs/reliability.md). The scheduling loop last, as kube-scheduler is a client of a
 * running API server: the pending pods of a store it opened are bound while clients are served,
 * not before they can connect, and a bench times the binds apart from the start
 * (docs/scheduler.md, "In the server"). */
static int start_serving_loops(struct xp_server *server,
                               const struct xp_server_options *options,
                               struct xp_error *err)
{
        int r = start_nodelife(server, options, err);

        if (r >= 0 && server->scheduler)
                r = xp_scheduler_run(server->scheduler, err);
        return r;
}

/* The serving certificate, and the agents' (the signer of theirs, the check of them). */
static int start_tls(struct xp_server *server,
                     const struct xp_server_options *options,
                     const char *host,
                     struct xp_error *err)
{
        int r = setup_tls(options, host, &server->tls_cert, &server->tls_key, &server->tls_ca, err);

        return r < 0 ? r
                     : setup_agent_tls(
                           options, &server->api.serving_signer, &server->api.agent_tls, err);
}

int xp_server_new(const struct xp_server_options *options,
                  struct xp_server **ret,
                  struct xp_error *err)
{
        const char *host = options->host ? options->host : "127.0.0.1";
        _cleanup_free_ char *db = NULL;
        _cleanup_close_ int fd = -1;
        struct xp_server *server;
        char *new_admin_token = NULL;
        bool ipv6 = false, tls = options->tls != XP_SERVER_TLS_OFF;
        int r;

        if (!options->data_dir)
                return xp_errorf(err, -EINVAL, "no data directory given");
        db = xp_datadir_path(options->data_dir, XP_DATADIR_STORE);
        if (!db)
                return -ENOMEM;
        server = calloc(1, sizeof *server);
        if (!server)
                return -ENOMEM;

        r = start_state(server, options, db, err);
        if (r < 0)
                goto fail;
        r = auth_open(options->data_dir, &server->auth, &new_admin_token, err);
        if (r < 0)
                goto fail;
        r = tls ? start_tls(server, options, host, err) : 0;
        if (r < 0)
                goto fail;

        r = xp_http_listen(host, options->port, &ipv6, &server->port, err);
        if (r < 0)
                goto fail;
        fd = r;
        set_addresses(server, host, ipv6, tls);

        if (options->kubeconfig)
                server->kubeconfig = strdup(options->kubeconfig);
        else
                server->kubeconfig = xp_datadir_path(options->data_dir, XP_DATADIR_KUBECONFIG);
        if (!server->kubeconfig) {
                r = -ENOMEM;
                goto fail;
        }
        r = setup_kubeconfig(options->data_dir,
                             server->kubeconfig,
                             server->url,
                             server->tls_ca,
                             TAKE_PTR(new_admin_token),
                             err);
        if (r < 0)
                goto fail;
        /* Read the tokens again: the kubeconfig's may be new, and must work at once. */
        auth_free(server->auth);
        server->auth = NULL;
        r = auth_open(options->data_dir, &server->auth, &new_admin_token, err);
        if (r < 0)
                goto fail;

        r = start_api(server, options, host, err);
        if (r >= 0)
                r = start_serviceaccounts(server, options, err);
        if (r < 0)
                goto fail;
        server->api.auth = server->auth;
        r = start_autoscaler(server, options, err);
        if (r < 0)
                goto fail;
        r = http_start(
            &server->api,
            server->auth,
            &(struct http_options){.listen_fd = TAKE_FD(fd),
                                   .ipv6 = ipv6,
                                   .tls_cert = tls ? server->tls_cert : NULL,
                                   .tls_key = tls ? server->tls_key : NULL,
                                   .watch_stall_ms = options->watch_stall_timeout_ms,
                                   .idle_timeout_ms = options->connection_idle_timeout_ms},
            &server->http,
            err);
        if (r < 0) {
                xp_error_prefix(err, r, "cannot start the HTTP server on %s", server->address);
                goto fail;
        }
        r = start_serving_loops(server, options, err);
        if (r < 0)
                goto fail;
        *ret = server;
        return 0;

fail:
        free(new_admin_token);
        xp_server_free(server);
        return r;
}

const char *xp_server_url(const struct xp_server *server)
{
        return server->url;
}

const char *xp_server_kubeconfig(const struct xp_server *server)
{
        return server->kubeconfig;
}

/* Runs one step of the stop; XPOOL_DEBUG=stop logs how long it took (which step a slow stop
 * waits in). */
#define stop_step(call)                                                                            \
        do {                                                                                       \
                int64_t step_start_ = xp_monotonic_ms();                                           \
                call;                                                                              \
                xp_debug("stop",                                                                   \
                         "stop: %s took %lld ms",                                                  \
                         #call,                                                                    \
                         (long long)(xp_monotonic_ms() - step_start_));                            \
        } while (0)

void xp_server_free(struct xp_server *server)
{
        if (!server)
                return;
        /* HTTP first: new connections are refused, watches and streams end at their next wake,
         * and the requests in flight finish (a create's 201 only after its commit). Then nothing
         * reads the controllers' state, and no write comes but theirs. Stopping the controllers
         * first, as before, kept every watch and client served meanwhile: under load the
         * informers never caught up, and a stop took tens of seconds (docs/reliability.md).
         * But the node lifecycle judges no node from before HTTP stops: once the door closes no
         * agent's heartbeat gets in, and a stop longer than the grace period would mark every
         * node lost (NotReady, its pods' Ready false, Events) for a stop, not for anything the
         * nodes did. Quiesced, not stopped there: its stop waits for its informer to read what
         * the store has new, which the scheduler's writes of a busy start keep growing. */
        atomic_store(&server->api.stopping, true);
        stop_step(xp_nodelife_quiesce(server->nodelife));
        stop_step(http_stop(server->http));
        stop_step(srv_metrics_forget_sources(server->api.metrics));
        stop_step(xp_autoscaler_free(server->autoscaler)); /* it reads the usage: first */
        stop_step(srv_hpa_source_free(server->hpa_source));
        stop_step(srv_usage_free(server->api.usage));
        server->api.usage = NULL;
        /* they write to the store: before it closes */
        stop_step(xp_scheduler_free(server->scheduler));
        stop_step(xp_nodelife_free(server->nodelife));
        stop_step(xp_quotastatus_free(server->quotastatus));
        stop_step(xp_podgc_free(server->podgc));
        stop_step(xp_disruption_free(server->disruption));
        stop_step(xp_endpoints_free(server->endpoints));
        stop_step(xp_workloads_free(server->workloads));
        stop_step(xp_poolstats_free(server->poolstats));
        stop_step(xp_serviceaccounts_free(server->serviceaccounts));
        stop_step(xp_history_feed_free(server->history_feed));
        stop_step(srv_metrics_free(server->api.metrics));
        /* HTTP handlers and the feed use it: after them */
        stop_step(xp_history_free(server->api.history));
        stop_step(xp_registry_free(server->api.registry));
        stop_step(service_ips_free(server->api.service_ips));
        stop_step(node_ports_free(server->api.node_ports));
        /* after HTTP: the watches hold them */
        stop_step(watch_batches_free(server->api.watch_batches));
        stop_step(xp_node_graph_free(server->api.node_graph));
        stop_step(xp_store_close(server->api.store));
        auth_free(server->auth);
        satoken_key_free(server->api.satoken);
        free(server->kubeconfig);
        free(server->tls_cert);
        if (server->tls_key)
                explicit_bzero(server->tls_key, strlen(server->tls_key));
        free(server->tls_key);
        free(server->tls_ca);
        servingcert_signer_free(server->api.serving_signer);
        agent_tls_free(server->api.agent_tls);
        free(server);
}
