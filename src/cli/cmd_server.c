/* SPDX-License-Identifier: Apache-2.0 */
/* xpool server: the API server over the durable store, until SIGINT or SIGTERM. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <malloc.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli.h"
#include "xpool/blockcache.h"
#include "xpool/duration.h"
#include "xpool/error.h"
#include "xpool/log.h"
#include "xpool/macro.h"
#include "xpool/sched.h"
#include "xpool/server.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define BLOCK_CACHE_OFF 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define BLOCK_CACHE_OFF 1
#endif
#endif

static const char usage[] =
    "Usage: xpool server [--listen HOST:PORT] [--data-dir DIR] [TLS options] [--kubeconfig FILE]\n\n"
    "Serves the Kubernetes-shaped API (v1 Pods, Nodes, Namespaces, Events; Leases) with its state\n"
    "in DIR/state.db (SQLite, every acknowledged write on disk). Every request needs a bearer\n"
    "token; the admin's is written into DIR/admin.kubeconfig (mode 0600) at every start, so\n"
    "  export KUBECONFIG=DIR/admin.kubeconfig\n"
    "makes kubectl and xpool talk to it. Stops on SIGINT or SIGTERM. See docs/server.md and\n"
    "docs/security.md.\n\n"
    "  -l, --listen HOST:PORT  the address to serve on (default 127.0.0.1:6443); HOST is an IPv4\n"
    "                          or a bracketed IPv6 address ([::1]:6443); port 0 picks a free one\n"
    "  -d, --data-dir DIR      where the state lives (default $XDG_STATE_HOME/xpool, else\n"
    "                          /var/lib/xpool as root, else ~/.local/state/xpool); created\n"
    "                          (mode 0700) when missing\n"
    "      --tls-cert FILE     serve with this certificate (PEM) ...\n"
    "      --tls-key FILE      ... and key, instead of the generated ones (DIR/pki)\n"
    "      --tls-san NAME      also make the generated certificate valid for NAME (a host name\n"
    "                          or address agents use); repeatable\n"
    "      --no-tls            plain HTTP (tokens then cross the network in the clear)\n"
    "      --kubeconfig FILE   write the admin kubeconfig there instead\n"
    "      --no-scheduler      do not place pods: they stay Pending until bound through\n"
    "                          pods/binding (another scheduler)\n"
    "      --node-monitor-grace-period DURATION\n"
    "                          a node whose agent has not renewed its Lease for this long is\n"
    "                          NotReady and tainted unreachable (default 40s)\n"
    "      --pod-eviction-timeout DURATION\n"
    "                          the pods of such a node are then marked Failed (NodeLost) after\n"
    "                          this long, unless they tolerate the taint otherwise (default 5m)\n"
    "      --event-history N   the writes kept for watches that resume and for paged lists'\n"
    "                          continue tokens (default 10000); older ones are 410 Gone\n"
    "      --metrics-resolution DURATION\n"
    "                          how often the agents' usage is read for kubectl top\n"
    "                          (metrics.k8s.io; default 15s; docs/monitoring.md)\n"
    "      --gang-timeout DURATION\n"
    "                          a gang not placed this long after its first member came says\n"
    "                          it timed out (default 5m; docs/scheduler.md)\n"
    "      --gang-topology-keys KEY[,KEY]\n"
    "                          node labels of topology domains a gang packs into, finest\n"
    "                          first (default nvidia.com/gpu.clique,topology.kubernetes.io/zone)\n"
    "      --service-cluster-ip-range CIDR[,CIDR]\n"
    "                          Services' cluster IPs (default 10.96.0.0/12; an IPv4 and an IPv6\n"
    "                          range make the cluster dual-stack, the first the primary family;\n"
    "                          its first address is the kubernetes Service's; docs/server.md)\n"
    "      --service-node-port-range FIRST-LAST\n"
    "                          NodePort Services' ports (default 30000-32767; docs/server.md)\n"
    "      --placement-profile NAME\n"
    "                          how the scheduler ranks the nodes that fit: spread, binpack,\n"
    "                          or a GPU-sharing policy (random, dotprod, gpuclustering,\n"
    "                          gpupacking, bestfit, fgd, xpool; docs/simulator.md); default\n"
    "                          xpool\n"
    "      --percentage-of-nodes-to-score N\n"
    "                          the share of the nodes a pod asking no device is ranked on\n"
    "                          (0-100; default 0: adaptive, as kube-scheduler; 100: every\n"
    "                          node; docs/scheduler.md)\n"
    "      --horizontal-pod-autoscaler-sync-period DURATION\n"
    "                          how often each HorizontalPodAutoscaler is synced (default 15s;\n"
    "                          docs/workloads.md)\n"
    "      --horizontal-pod-autoscaler-tolerance RATIO\n"
    "                          how far from 1.0 the usage ratio must be to scale (default 0.1)\n"
    "      --horizontal-pod-autoscaler-downscale-stabilization DURATION\n"
    "                          the highest recommendation of this long is what a scale-down\n"
    "                          goes to (default 5m)\n"
    "      --hpa-prometheus-url http://HOST:PORT[/PREFIX]\n"
    "                          a Prometheus-compatible query API for External and Object\n"
    "                          metrics (and Pods metrics xpool does not serve itself)\n"
    "      --hpa-scale-to-zero  HPAs may have minReplicas 0 when they scale on an Object or\n"
    "                          External metric (Kubernetes' HPAScaleToZero gate)\n"
    "      --watch-stall-timeout DURATION\n"
    "                          a watch whose client takes none of its bytes for this long\n"
    "                          is dropped (default 2m; for tests and operators)\n"
    "      --connection-idle-timeout DURATION\n"
    "                          an authenticated connection without a request for this long\n"
    "                          is closed (default 1m, 1s to 24h; libmicrohttpd's own\n"
    "                          timeout is twice it)\n"
    "      --terminated-pod-gc-threshold N\n"
    "                          terminated pods (Succeeded, Failed) kept: past N the oldest\n"
    "                          are deleted (default 12500; 0: none are; docs/server.md)\n";

struct server_args {
        struct xp_server_options *options;
        const char **sans;       /* room for XP_SERVER_SANS_MAX */
        char *listen, *data_dir; /* copies: --listen is split in place */
        bool no_tls;
};

static int placement_profile_option(struct server_args *a, const char *arg)
{
        enum xp_sched_profile p;

        if (xp_sched_profile_from_string(arg, &p) < 0) {
                fprintf(stderr,
                        "xpool server: --placement-profile '%s': expected one of %s\n",
                        arg,
                        XP_SCHED_PROFILE_NAMES);
                return XP_EXIT_USAGE;
        }
        a->options->placement_profile = arg;
        return 0;
}

enum {
        OPT_HPA_SYNC = 0x100,
        OPT_HPA_TOLERANCE,
        OPT_HPA_DOWNSCALE,
        OPT_HPA_PROMETHEUS,
        OPT_HPA_SCALE_TO_ZERO,
        OPT_NODE_PORT_RANGE,
        OPT_WATCH_STALL,
        OPT_IDLE_TIMEOUT,
        OPT_NODES_TO_SCORE,
        OPT_TERMINATED_POD_GC
};

/* The connections' timeouts, for tests and operators (docs/server.md, "Watches"). */
static int timeout_option(int c, const char *arg, struct xp_server_options *o)
{
        int r;

        if (c == OPT_WATCH_STALL)
                return xp_cli_parse_duration("server",
                                             "watch-stall-timeout",
                                             arg,
                                             XP_DURATION_YEAR_MS,
                                             &o->watch_stall_timeout_ms);
        /* a day at most: the server counts it in an unsigned of milliseconds (49 days) */
        r = xp_cli_parse_duration("server",
                                  "connection-idle-timeout",
                                  arg,
                                  XP_DURATION_DAY_MS,
                                  &o->connection_idle_timeout_ms);
        /* libmicrohttpd counts whole seconds, and 0 is no timeout at all */
        if (r == 0 && o->connection_idle_timeout_ms < 1000) {
                fprintf(stderr,
                        "xpool server: --connection-idle-timeout '%s': expected at least 1s\n",
                        arg);
                return XP_EXIT_USAGE;
        }
        return r;
}

static int hpa_option(int c, const char *arg, struct xp_server_options *o)
{
        char *end;

        switch (c) {
        case OPT_HPA_SYNC:
                return xp_cli_parse_duration("server",
                                             "horizontal-pod-autoscaler-sync-period",
                                             arg,
                                             XP_DURATION_YEAR_MS,
                                             &o->hpa_sync_ms);
        case OPT_HPA_TOLERANCE:
                errno = 0;
                o->hpa_tolerance = strtod(arg, &end);
                if (errno || end == arg || *end || !(o->hpa_tolerance > 0) ||
                    o->hpa_tolerance >= 1) {
                        fprintf(stderr,
                                "xpool server: --horizontal-pod-autoscaler-tolerance '%s': "
                                "expected a ratio above 0 and below 1, e.g. 0.1\n",
                                arg);
                        return XP_EXIT_USAGE;
                }
                return 0;
        case OPT_HPA_DOWNSCALE:
                o->hpa_downscale_set = true;
                if (strcmp(arg, "0") == 0 || strcmp(arg, "0s") == 0) { /* no window: a valid one */
                        o->hpa_downscale_ms = 0;
                        return 0;
                }
                return xp_cli_parse_duration("server",
                                             "horizontal-pod-autoscaler-downscale-stabilization",
                                             arg,
                                             XP_DURATION_YEAR_MS,
                                             &o->hpa_downscale_ms);
        case OPT_HPA_PROMETHEUS:
                o->hpa_prometheus_url = arg;
                return 0;
        case OPT_HPA_SCALE_TO_ZERO:
                o->hpa_scale_to_zero = true;
                return 0;
        }
        return 0;
}

static int event_history_option(struct xp_server_options *o, const char *arg)
{
        char *end;
        unsigned long long n;

        errno = 0;
        n = strtoull(arg, &end, 10);
        if (errno || *end || n == 0 || arg[0] == '-' || n > 100000000) {
                fprintf(stderr,
                        "xpool server: --event-history '%s': expected a number of writes "
                        "between 1 and 100000000\n",
                        arg);
                return XP_EXIT_USAGE;
        }
        o->event_history = (size_t)n;
        return 0;
}

static int nodes_to_score_option(struct xp_server_options *o, const char *arg)
{
        char *end;
        unsigned long n;

        errno = 0;
        n = strtoul(arg, &end, 10);
        if (errno || *end || !arg[0] || arg[0] == '-' || n > 100) {
                fprintf(stderr,
                        "xpool server: --percentage-of-nodes-to-score '%s': expected a number "
                        "between 0 (adaptive) and 100\n",
                        arg);
                return XP_EXIT_USAGE;
        }
        o->percentage_of_nodes_to_score = (unsigned)n;
        return 0;
}

static int server_option(int c, const char *arg, void *userdata)
{
        struct server_args *a = userdata;

        switch (c) {
        case 'l':
                free(a->listen);
                a->listen = strdup(arg);
                if (!a->listen)
                        return XP_EXIT_FAILURE;
                if (xp_cli_parse_listen(a->listen, false, &a->options->host, &a->options->port) <
                    0) {
                        fprintf(
                            stderr,
                            "xpool server: --listen '%s': expected HOST:PORT, e.g. 127.0.0.1:6443\n",
                            arg);
                        return XP_EXIT_USAGE;
                }
                break;
        case 'd':
                free(a->data_dir);
                a->data_dir = strdup(arg);
                if (!a->data_dir)
                        return XP_EXIT_FAILURE;
                break;
        case 'C':
                a->options->tls_cert = arg;
                break;
        case 'K':
                a->options->tls_key = arg;
                break;
        case 'S':
                if (a->options->n_tls_sans == XP_SERVER_SANS_MAX) {
                        fprintf(stderr,
                                "xpool server: --tls-san: at most %d names\n",
                                XP_SERVER_SANS_MAX);
                        return XP_EXIT_USAGE;
                }
                a->sans[a->options->n_tls_sans++] = arg;
                break;
        case 'N':
                a->no_tls = true;
                break;
        case 'k':
                a->options->kubeconfig = arg;
                break;
        case 'P':
                a->options->scheduler_off = true;
                break;
        case 'H':
                return event_history_option(a->options, arg);
        case 'G':
                return xp_cli_parse_duration("server",
                                             "node-monitor-grace-period",
                                             arg,
                                             XP_DURATION_YEAR_MS,
                                             &a->options->node_monitor_grace_ms);
        case 'E':
                return xp_cli_parse_duration("server",
                                             "pod-eviction-timeout",
                                             arg,
                                             XP_DURATION_YEAR_MS,
                                             &a->options->pod_eviction_timeout_ms);
        case 'R':
                return xp_cli_parse_duration("server",
                                             "metrics-resolution",
                                             arg,
                                             XP_DURATION_YEAR_MS,
                                             &a->options->metrics_resolution_ms);
        case 'g':
                return xp_cli_parse_duration("server",
                                             "gang-timeout",
                                             arg,
                                             XP_DURATION_YEAR_MS,
                                             &a->options->gang_timeout_ms);
        case 'T':
                a->options->gang_topology_keys = arg;
                break;
        case 'I':
                a->options->service_cluster_ip_range = arg;
                break;
        case OPT_NODE_PORT_RANGE:
                a->options->service_node_port_range = arg;
                break;
        case 'L':
                return placement_profile_option(a, arg);
        case OPT_WATCH_STALL:
        case OPT_IDLE_TIMEOUT:
                return timeout_option(c, arg, a->options);
        case OPT_NODES_TO_SCORE:
                return nodes_to_score_option(a->options, arg);
        case OPT_TERMINATED_POD_GC:
                return xp_cli_parse_pod_gc_threshold(
                    "xpool server", arg, &a->options->terminated_pod_gc_threshold);
        default:
                return hpa_option(c, arg, a->options);
        }
        return 0;
}

static const struct option server_options_table[] = {
    {"listen", required_argument, NULL, 'l'},
    {"data-dir", required_argument, NULL, 'd'},
    {"tls-cert", required_argument, NULL, 'C'},
    {"tls-key", required_argument, NULL, 'K'},
    {"tls-san", required_argument, NULL, 'S'},
    {"no-tls", no_argument, NULL, 'N'},
    {"kubeconfig", required_argument, NULL, 'k'},
    {"no-scheduler", no_argument, NULL, 'P'},
    {"node-monitor-grace-period", required_argument, NULL, 'G'},
    {"pod-eviction-timeout", required_argument, NULL, 'E'},
    {"event-history", required_argument, NULL, 'H'},
    {"metrics-resolution", required_argument, NULL, 'R'},
    {"gang-timeout", required_argument, NULL, 'g'},
    {"gang-topology-keys", required_argument, NULL, 'T'},
    {"horizontal-pod-autoscaler-sync-period", required_argument, NULL, OPT_HPA_SYNC},
    {"horizontal-pod-autoscaler-tolerance", required_argument, NULL, OPT_HPA_TOLERANCE},
    {"horizontal-pod-autoscaler-downscale-stabilization",
     required_argument,
     NULL,
     OPT_HPA_DOWNSCALE},
    {"hpa-prometheus-url", required_argument, NULL, OPT_HPA_PROMETHEUS},
    {"hpa-scale-to-zero", no_argument, NULL, OPT_HPA_SCALE_TO_ZERO},
    {"service-cluster-ip-range", required_argument, NULL, 'I'},
    {"service-node-port-range", required_argument, NULL, OPT_NODE_PORT_RANGE},
    {"placement-profile", required_argument, NULL, 'L'},
    {"watch-stall-timeout", required_argument, NULL, OPT_WATCH_STALL},
    {"connection-idle-timeout", required_argument, NULL, OPT_IDLE_TIMEOUT},
    {"percentage-of-nodes-to-score", required_argument, NULL, OPT_NODES_TO_SCORE},
    {"terminated-pod-gc-threshold", required_argument, NULL, OPT_TERMINATED_POD_GC},
    {"help", no_argument, NULL, 'h'},
    {},
};

int xp_cmd_server(int argc, char **argv)
{
        struct xp_server_options server_options = {.port = XP_SERVER_DEFAULT_PORT};
        const char *sans[XP_SERVER_SANS_MAX];
        struct server_args a = {.options = &server_options, .sans = sans};
        _cleanup_free_ char *listen = NULL, *data_dir = NULL;
        struct xp_server *server = NULL;
        struct xp_error err = {0};
        sigset_t mask;
        bool no_tls, given;
        int r, sig;

        r = xp_cli_getopt(argc, argv, "l:d:h", server_options_table, usage, server_option, &a);
        /* the copies are ours whatever the outcome: --listen's host points into its own */
        listen = a.listen;
        data_dir = a.data_dir;
        no_tls = a.no_tls;
        if (r != 0)
                return r < 0 ? 0 : r;
        if (optind < argc) {
                fprintf(
                    stderr, "xpool server: unexpected argument '%s'\n\n%s", argv[optind], usage);
                return XP_EXIT_USAGE;
        }
        if (!!server_options.tls_cert != !!server_options.tls_key) {
                fprintf(
                    stderr,
                    "xpool server: --tls-cert and --tls-key go together: give both, or neither to use a generated certificate\n");
                return XP_EXIT_USAGE;
        }
        if (no_tls && server_options.tls_cert) {
                fprintf(stderr, "xpool server: --no-tls contradicts --tls-cert and --tls-key\n");
                return XP_EXIT_USAGE;
        }
        server_options.tls = no_tls                    ? XP_SERVER_TLS_OFF
                             : server_options.tls_cert ? XP_SERVER_TLS_FILES
                                                       : XP_SERVER_TLS_GENERATE;
        server_options.tls_sans = sans;
        given = data_dir != NULL;
        if (!given) {
                data_dir = xp_cli_data_dir("xpool server", NULL);
                if (!data_dir)
                        return XP_EXIT_FAILURE;
        }
        r = xp_cli_prepare_data_dir("xpool server", data_dir, given);
        if (r != 0)
                return r;
        server_options.data_dir = data_dir;

        /* Block the stop signals before any thread starts, so that all inherit the mask and
         * sigwait() below is the one place they arrive. */
        sigemptyset(&mask);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGTERM);
        pthread_sigmask(SIG_BLOCK, &mask, NULL);
        signal(SIGPIPE, SIG_IGN);
        /* Every request builds and frees JSON trees of hundreds of small blocks; glibc's fast
         * bins defer their merging to the next large allocation (malloc_consolidate(), 8% of a
         * create's CPU in a profile): freed at once they cost less (docs/performance.md). */
        mallopt(M_MXFAST, 0);
        /* Past glibc's 7 cached blocks of a size, every free of those trees merged its
         * neighbours and every malloc split them again: jansson's blocks go through a deeper
         * per-thread cache (xpool/blockcache.h; docs/store.md "What a create costs"). Not under
         * a sanitizer, whose own free() finds a use of a freed node. */
#ifndef BLOCK_CACHE_OFF
        json_set_alloc_funcs(xp_block_cache_malloc, xp_block_cache_free);
#endif

        r = xp_server_new(&server_options, &server, &err);
        if (r < 0)
                return xp_cli_start_failed("xpool server", data_dir, r, &err);
        xp_log(
            LOG_INFO, "xpool server listening on %s, state in %s", xp_server_url(server), data_dir);
        xp_log(LOG_INFO,
               "to use it: export KUBECONFIG=%s; kubectl get nodes",
               xp_server_kubeconfig(server));
        if (no_tls && server_options.host && strcmp(server_options.host, "127.0.0.1") != 0 &&
            strcmp(server_options.host, "::1") != 0)
                xp_log(LOG_WARNING,
                       "xpool server: --no-tls on %s: bearer tokens cross the network in the clear",
                       server_options.host);
        do
                r = sigwait(&mask, &sig);
        while (r == EINTR);
        xp_log(LOG_INFO, "xpool server: %s, stopping", strsignal(sig));
        /* glibc's fast bins back (its default limit): the stop frees millions of small blocks
         * (the controllers' caches of every pod), and without them each free() merged its
         * neighbours: 5 s of a stop with 100,000 pods (docs/reliability.md) */
        mallopt(M_MXFAST, 64 * sizeof(size_t) / 4);
        xp_server_free(server);
        return 0;
}
