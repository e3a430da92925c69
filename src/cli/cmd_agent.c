/* SPDX-License-Identifier: Apache-2.0 */
/* xpool agent: the node agent, until SIGINT or SIGTERM (see docs/agent.md). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "runtime_flags.h"
#include "xpool/agent.h"
#include "xpool/datadir.h"
#include "xpool/duration.h"
#include "xpool/fileio.h"
#include "xpool/kubeconfig.h"
#include "xpool/log.h"
#include "xpool/macro.h"

static const char usage[] =
    "Usage: xpool agent --server URL (--token TOKEN | --token-file FILE) [OPTIONS]\n"
    "       xpool agent --kubeconfig FILE [OPTIONS]\n\n"
    "Registers this machine as a Node with its devices, runs the pods bound to it, reports their\n"
    "status and serves their logs, until SIGINT or SIGTERM. Containers keep running when the agent\n"
    "stops; the next agent re-adopts them. See docs/agent.md.\n\n"
    "  -s, --server URL         the API server (https://HOST:PORT, or http:// with --no-tls)\n"
    "      --token TOKEN        the node token (xpool token create --node NAME)\n"
    "      --token-file FILE    read the node token from FILE\n"
    "      --ca-file FILE       the CA that signed the server's certificate (DATA/pki/ca.crt)\n"
    "      --kubeconfig FILE    a node kubeconfig: server, CA and token (flags override it)\n"
    "      --node-name NAME     the Node's name (default: the host name)\n"
    "  -d, --data-dir DIR       containers and logs (default $XDG_STATE_HOME/xpool/agent, else\n"
    "                           /var/lib/xpool/agent as root, else ~/.local/state/xpool/agent)\n"
    "      --state-dir DIR      the containers' runtime state, writable layers and emptyDirs\n"
    "                           (default DATA/containers); a tmpfs saves disk work per start\n"
    "      --node-description FILE  simulated devices (YAML or JSON, as xpool devices reads)\n"
    "      --nvml-library PATH  NVIDIA's NVML (default $XPOOL_NVML_LIBRARY, else libnvidia-ml.so.1)\n"
    "      --cndev-library PATH Cambricon's CNDev (default $XPOOL_CNDEV_LIBRARY, else libcndev.so)\n"
    "      --dcmi-library PATH  Huawei Ascend's DCMI (default $XPOOL_DCMI_LIBRARY, else libdcmi.so)\n"
    "  -l, --listen [HOST]:PORT the log endpoint (default: the advertise address, a free port);\n"
    "                           HTTPS with a certificate the server signs (docs/agent.md)\n"
    "      --no-tls             a plain HTTP endpoint (only with an http:// server run --no-tls)\n"
    "      --advertise-address IP  the Node's InternalIP (default: the address that reaches the server)\n"
    "      --backoff DURATION   first restart back-off of a failing container (default 10s)\n"
    "      --heartbeat DURATION how often the Lease is renewed (default 10s)\n"
    "      --status-coalesce DURATION  how long a pod's status that is not final waits for the\n"
    "                           pod's next change, to be one write with it, while the node runs\n"
    "                           short pods; stretched to what they take, up to 5 times it or\n"
    "                           250ms, whichever is less (default 5ms, at most 1s; 0: none)\n"
    "      --max-pods N         the pods this node takes at once (default 110)\n"
    "      --cgroup-root PATH   the cgroup under which containers are placed (default /)\n"
    "      --hide PATH          a path no container may see (repeatable); the data directory,\n"
    "                           the token file, the kubeconfig and the server's default data\n"
    "                           directory are hidden always (docs/security.md)\n"
    "      --allow-privileged   run privileged containers (off: such pods are refused)\n"
    "      --allow-degraded-isolation  run pods with limits or devices even where cgroups or\n"
    "                           the device filter are missing, and pods on the node's network\n"
    "                           where it has no pod network (off: such pods are refused)\n"
    "      --registries FILE    registry settings for image pulls (default\n"
    "                           /etc/xpool/registries.yaml; docs/images.md)\n"
    "      --auth-file FILE     the node's registry credentials, Docker's config.json format\n"
    "                           (default /etc/xpool/auth.json)\n"
    "      --metrics-interval DURATION  how often devices, the node and containers are sampled\n"
    "                           for /metrics (default 10s; docs/monitoring.md)\n"
    "      --no-metrics         no /metrics and no sampling (kubectl top then has no figures\n"
    "                           for this node)\n"
    "      --metrics-anonymous  serve /metrics to anyone who reaches the port, as DCGM's\n"
    "                           exporter does (default: a bearer token the server accepts for\n"
    "                           get nodes/metrics, as the kubelet asks)\n" XP_CLI_RUNTIME_USAGE
        XP_CLI_PODNET_USAGE;

#define HIDE_MAX 64

struct agent_args {
        struct xp_agent_options *o;
        const char *token_file, *kubeconfig;
        char *listen;
        const char *hide[HIDE_MAX + 4]; /* --hide, then the token file, kubeconfig, server's */
        size_t n_hide;
        struct xp_cli_runtime_flags runtime;
};

enum {
        OPT_HIDE = 0x200,
        OPT_ALLOW_PRIVILEGED,
        OPT_ALLOW_DEGRADED,
        OPT_REGISTRIES,
        OPT_AUTH_FILE,
        OPT_METRICS_INTERVAL,
        OPT_NO_METRICS,
        OPT_METRICS_ANONYMOUS,
        OPT_NO_TLS,
        OPT_MAX_PODS,
        OPT_STATE_DIR,
        OPT_STATUS_COALESCE,
        OPT_NVML_LIBRARY,
        OPT_CNDEV_LIBRARY,
        OPT_DCMI_LIBRARY,
};

/* The vendor libraries' flags: -1 when c is none of them, else 0 or the exit code. */
static int library_option(struct agent_args *a, int c, const char *arg)
{
        const char **path = c == OPT_NVML_LIBRARY    ? &a->o->discovery.nvml_library
                            : c == OPT_CNDEV_LIBRARY ? &a->o->discovery.cndev_library
                            : c == OPT_DCMI_LIBRARY  ? &a->o->discovery.dcmi_library
                                                     : NULL;

        if (!path)
                return -1;
        /* an empty path would silently mean the default one */
        if (!*arg) {
                fprintf(stderr,
                        "xpool agent: --%s-library: an empty path\n",
                        c == OPT_NVML_LIBRARY    ? "nvml"
                        : c == OPT_CNDEV_LIBRARY ? "cndev"
                                                 : "dcmi");
                return XP_EXIT_USAGE;
        }
        *path = arg;
        return 0;
}

/* --metrics-interval, --no-metrics, --metrics-anonymous; -1 for another option. */
static int metrics_option(struct agent_args *a, int c, const char *arg)
{
        switch (c) {
        case OPT_METRICS_INTERVAL:
                return xp_cli_parse_duration("agent",
                                             "metrics-interval",
                                             arg,
                                             XP_DURATION_DAY_MS,
                                             &a->o->metrics_interval_ms);
        case OPT_NO_METRICS:
                a->o->metrics_interval_ms = -1;
                return 0;
        case OPT_METRICS_ANONYMOUS:
                a->o->metrics_anonymous = true;
                return 0;
        case OPT_NO_TLS:
                a->o->no_tls = true;
                return 0;
        default:
                return -1;
        }
}

/* --status-coalesce: 0 is a value here (no wait), not "the default" as in the options. */
static int status_coalesce_option(struct agent_args *a, const char *arg)
{
        struct xp_error err = {0};
        int64_t ms;

        if (xp_duration_parse(arg, 0, 1000, &ms, &err) < 0) {
                fprintf(stderr, "xpool agent: --status-coalesce: %s\n", xp_error_message(&err));
                return XP_EXIT_USAGE;
        }
        a->o->status_coalesce_ms = ms > 0 ? ms : -1;
        return 0;
}

static int listen_option(struct agent_args *a, const char *arg)
{
        free(a->listen);
        a->listen = strdup(arg);
        if (!a->listen)
                return XP_EXIT_FAILURE;
        if (xp_cli_parse_listen(a->listen, true, &a->o->listen_host, &a->o->listen_port) < 0) {
                fprintf(
                    stderr,
                    "xpool agent: --listen '%s': expected [HOST]:PORT, e.g. :10250 or 0.0.0.0:10250\n",
                    arg);
                return XP_EXIT_USAGE;
        }
        return 0;
}

static int max_pods_option(struct agent_args *a, const char *arg)
{
        char *end;
        long long n = strtoll(arg, &end, 10);

        if (end == arg || *end || n < 1 || n > 100000) {
                fprintf(stderr,
                        "xpool agent: --max-pods '%s': expected a count from 1 to 100000\n",
                        arg);
                return XP_EXIT_USAGE;
        }
        a->o->max_pods = n;
        return 0;
}

static int agent_option(int c, const char *arg, void *userdata)
{
        struct agent_args *a = userdata;
        int r = xp_cli_runtime_option(c, arg, "xpool agent", &a->runtime);

        if (r != 0)
                return r < 0 ? -r : 0;
        r = library_option(a, c, arg);
        if (r < 0)
                r = metrics_option(a, c, arg);
        if (r >= 0)
                return r;

        switch (c) {
        case 's':
                a->o->server_url = arg;
                break;
        case 'T':
                a->o->token = arg;
                break;
        case 'F':
                a->token_file = arg;
                break;
        case 'C':
                a->o->ca_file = arg;
                break;
        case 'K':
                a->kubeconfig = arg;
                break;
        case 'n':
                a->o->node_name = arg;
                break;
        case 'd':
                a->o->data_dir = arg;
                break;
        case OPT_STATE_DIR:
                a->o->state_dir = arg;
                break;
        case 'D':
                a->o->discovery.node_description = arg;
                break;
        case 'l':
                return listen_option(a, arg);
        case 'A':
                a->o->advertise_address = arg;
                break;
        case 'B':
                return xp_cli_parse_duration(
                    "agent", "backoff", arg, XP_DURATION_DAY_MS, &a->o->backoff_initial_ms);
        case 'H':
                return xp_cli_parse_duration(
                    "agent", "heartbeat", arg, XP_DURATION_DAY_MS, &a->o->heartbeat_ms);
        case 'G':
                a->o->cgroup_root = arg;
                break;
        case OPT_HIDE:
                if (a->n_hide >= HIDE_MAX || !*arg) {
                        fprintf(stderr,
                                "xpool agent: --hide '%s': %s\n",
                                arg,
                                *arg ? "at most 64 paths" : "an empty path");
                        return XP_EXIT_USAGE;
                }
                a->hide[a->n_hide++] = arg;
                break;
        case OPT_ALLOW_PRIVILEGED:
                a->o->allow_privileged = true;
                break;
        case OPT_ALLOW_DEGRADED:
                a->o->allow_degraded_isolation = true;
                break;
        case OPT_REGISTRIES:
                a->o->registries_file = arg;
                break;
        case OPT_AUTH_FILE:
                a->o->auth_file = arg;
                break;
        case OPT_STATUS_COALESCE:
                return status_coalesce_option(a, arg);
        case OPT_MAX_PODS:
                return max_pods_option(a, arg);
        case XP_CLI_OPT_POD_NETWORK:
        case XP_CLI_OPT_CNI_CONF_DIR:
        case XP_CLI_OPT_CNI_BIN_DIR:
        case XP_CLI_OPT_NETNS_DIR:
        case XP_CLI_OPT_POD_CIDR:
        case XP_CLI_OPT_IPC_DIR:
        case XP_CLI_OPT_API_SERVICE_ADDRESS:
                return xp_cli_podnet_option("xpool agent", c, arg, a->o);
        }
        return 0;
}

/* The token in path: its first line, trimmed. Caller frees. */
static int read_token(const char *path, char **ret)
{
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        char *text = NULL;
        size_t len = 0;
        int r;

        if (fd < 0)
                return -errno;
        r = xp_read_fd_all(fd, 4096, &text, &len);
        if (r < 0)
                return r;
        len = strcspn(text, "\r\n");
        while (len > 0 && (text[len - 1] == ' ' || text[len - 1] == '\t'))
                len--;
        text[len] = '\0';
        if (len == 0) {
                free(text);
                return -ENODATA;
        }
        *ret = text;
        return 0;
}

static const struct option agent_options[] = {
    {"server", required_argument, NULL, 's'},
    {"token", required_argument, NULL, 'T'},
    {"token-file", required_argument, NULL, 'F'},
    {"ca-file", required_argument, NULL, 'C'},
    {"kubeconfig", required_argument, NULL, 'K'},
    {"node-name", required_argument, NULL, 'n'},
    {"data-dir", required_argument, NULL, 'd'},
    {"state-dir", required_argument, NULL, OPT_STATE_DIR},
    {"node-description", required_argument, NULL, 'D'},
    {"nvml-library", required_argument, NULL, OPT_NVML_LIBRARY},
    {"cndev-library", required_argument, NULL, OPT_CNDEV_LIBRARY},
    {"dcmi-library", required_argument, NULL, OPT_DCMI_LIBRARY},
    {"listen", required_argument, NULL, 'l'},
    {"advertise-address", required_argument, NULL, 'A'},
    {"backoff", required_argument, NULL, 'B'},
    {"heartbeat", required_argument, NULL, 'H'},
    {"status-coalesce", required_argument, NULL, OPT_STATUS_COALESCE},
    {"cgroup-root", required_argument, NULL, 'G'},
    {"hide", required_argument, NULL, OPT_HIDE},
    {"allow-privileged", no_argument, NULL, OPT_ALLOW_PRIVILEGED},
    {"allow-degraded-isolation", no_argument, NULL, OPT_ALLOW_DEGRADED},
    {"registries", required_argument, NULL, OPT_REGISTRIES},
    {"auth-file", required_argument, NULL, OPT_AUTH_FILE},
    {"metrics-interval", required_argument, NULL, OPT_METRICS_INTERVAL},
    {"no-metrics", no_argument, NULL, OPT_NO_METRICS},
    {"metrics-anonymous", no_argument, NULL, OPT_METRICS_ANONYMOUS},
    {"no-tls", no_argument, NULL, OPT_NO_TLS},
    {"max-pods", required_argument, NULL, OPT_MAX_PODS},
    XP_CLI_RUNTIME_OPTIONS,
    XP_CLI_PODNET_LONG_OPTIONS,
    {"help", no_argument, NULL, 'h'},
    {},
};

/* The token (from --token-file) and what --kubeconfig gives that the flags do not. */
static int credentials(struct agent_args *a, char **token, struct xp_kubeconfig *config)
{
        struct xp_agent_options *o = a->o;
        struct xp_error err = {0};
        int r;

        if (a->token_file) {
                r = read_token(a->token_file, token);
                if (r < 0) {
                        fprintf(stderr,
                                "xpool agent: --token-file %s: %s\n",
                                a->token_file,
                                r == -ENODATA ? "the file is empty" : strerror(-r));
                        return XP_EXIT_FAILURE;
                }
                o->token = *token;
        }
        if (!a->kubeconfig)
                return 0;
        r = xp_kubeconfig_load(a->kubeconfig, NULL, config, &err);
        if (r < 0) {
                fprintf(stderr, "xpool agent: %s\n", xp_error_message(&err));
                return XP_EXIT_FAILURE;
        }
        if (!o->server_url)
                o->server_url = config->server;
        if (!o->token)
                o->token = config->token;
        if (!o->ca_file && config->ca_file)
                o->ca_file = config->ca_file;
        else if (!o->ca_file && config->ca_data) {
                o->ca_pem = config->ca_data;
                o->ca_pem_len = config->ca_len;
        }
        return 0;
}

/* What no container may see beyond --hide: the node's secrets, which give this agent (or a
 * server of this machine) its power. server_data is freed by the caller. */
static void hide_secrets(struct agent_args *a, char **server_data)
{
        if (xp_datadir_default(server_data, NULL) < 0)
                *server_data = NULL;
        if (a->token_file)
                a->hide[a->n_hide++] = a->token_file;
        if (a->kubeconfig)
                a->hide[a->n_hide++] = a->kubeconfig;
        if (*server_data)
                a->hide[a->n_hide++] = *server_data;
        a->o->hide_paths = a->hide;
}

int xp_cmd_agent(int argc, char **argv)
{
        struct xp_agent_options o = {0};
        struct agent_args a = {.o = &o, .runtime = {.o = &o}};
        struct xp_kubeconfig config = {0};
        _cleanup_free_ char *token = NULL, *listen = NULL, *server_data = NULL;
        struct xp_agent *agent = NULL;
        struct xp_error err = {0};
        sigset_t mask;
        int r, sig;

        r = xp_cli_getopt(argc, argv, "s:d:l:h", agent_options, usage, agent_option, &a);
        listen = a.listen;
        if (r != 0)
                return r < 0 ? 0 : r;
        if (optind < argc) {
                fprintf(stderr, "xpool agent: unexpected argument '%s'\n\n%s", argv[optind], usage);
                return XP_EXIT_USAGE;
        }
        if (o.token && a.token_file) {
                fprintf(stderr, "xpool agent: give --token or --token-file, not both\n");
                return XP_EXIT_USAGE;
        }
        r = credentials(&a, &token, &config);
        if (r != 0)
                return r;
        if (!o.server_url || !o.token) {
                fprintf(
                    stderr,
                    "xpool agent: %s is missing: give --server URL with --token or --token-file, or --kubeconfig FILE\n\n%s",
                    !o.server_url ? "the server" : "the node token",
                    usage);
                xp_kubeconfig_done(&config);
                return XP_EXIT_USAGE;
        }

        hide_secrets(&a, &server_data);
        r = xp_cli_runtime_env("xpool agent", &a.runtime);
        if (r != 0) {
                xp_kubeconfig_done(&config);
                return r;
        }

        /* Block the stop signals before any thread starts, so that all inherit the mask and
         * sigwait() below is the one place they arrive. */
        sigemptyset(&mask);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGTERM);
        pthread_sigmask(SIG_BLOCK, &mask, NULL);
        signal(SIGPIPE, SIG_IGN);

        r = xp_agent_new(&o, &agent, &err);
        if (r < 0) {
                fprintf(stderr, "xpool agent: %s\n", xp_error_message(&err));
                xp_kubeconfig_done(&config);
                /* asked to stop while it waited for the server: no failure */
                return r == -ECANCELED ? 0 : XP_EXIT_FAILURE;
        }
        xp_log(LOG_INFO,
               "xpool agent: node %s registered with %s",
               xp_agent_node_name(agent),
               o.server_url);
        xp_kubeconfig_done(&config);
        do
                r = sigwait(&mask, &sig);
        while (r == EINTR);
        xp_log(LOG_INFO, "xpool agent: %s, stopping (containers keep running)", strsignal(sig));
        xp_agent_free(agent);
        return 0;
}
