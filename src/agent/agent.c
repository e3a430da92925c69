/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The agent's lifecycle: discover the devices, open the runtime, start the log endpoint,
 * register the Node, then run the lease, watch and reconcile threads and the status writers
 * until xp_agent_free(). Containers are the runtime's and outlive the agent.
 */
#include <errno.h>
#include <fcntl.h>
#include <gnutls/crypto.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "agent_internal.h"
#include "devhealth.h"
#include "ephemeral.h"
#include "logserver.h"
#include "metrics.h"
#include "metricsauth.h"
#include "network.h"
#include "pull.h"
#include "stream.h"
#include "xpool/codec.h"
#include "xpool/datadir.h"
#include "xpool/fileio.h"
#include "xpool/image.h"
#include "xpool/log.h"
#include "xpool/podnet.h"
#include "xpool/runtime.h"

#define STATUS_WRITERS 4
/* A short container's exit comes a few milliseconds after its start was written: waiting this
 * long makes them one write (docs/agent.md, "Status"), at that cost in create -> Running. */
#define STATUS_COALESCE_DEFAULT_NS (5 * 1000000LL)
/* how long a 401 at registration is taken for a token the server has not loaded yet */
#define UNAUTHORIZED_WAIT_MS 10000

const char *xp_agent_node_name(const struct xp_agent *agent)
{
        return agent->node_name;
}

static int copy_string(const char *from, char **to)
{
        if (!from) {
                *to = NULL;
                return 0;
        }
        *to = strdup(from);
        return *to ? 0 : -ENOMEM;
}

/* An absolute path: relative ones are taken from the working directory, as the user meant. */
static int absolute(const char *path, char **ret)
{
        _cleanup_free_ char *cwd = NULL;

        if (path[0] == '/')
                return (*ret = strdup(path)) ? 0 : -ENOMEM;
        cwd = getcwd(NULL, 0);
        if (!cwd)
                return -errno;
        return asprintf(ret, "%s/%s", cwd, path) < 0 ? -ENOMEM : 0;
}

/* What no container may see: the data and state directories and the caller's paths, made
 * absolute. */
static int copy_hide_paths(struct xp_agent *a,
                           const char *const *paths,
                           bool state_apart,
                           struct xp_error *err)
{
        size_t n = 0;
        int r;

        while (paths && paths[n])
                n++;
        a->hide_paths = calloc(n + 3, sizeof(*a->hide_paths));
        if (!a->hide_paths)
                return -ENOMEM;
        r = absolute(a->data_dir, &a->hide_paths[0]);
        if (r >= 0 && state_apart)
                r = absolute(a->state_dir, &a->hide_paths[n + 1]);
        for (size_t i = 0; r >= 0 && i < n; i++) {
                r = absolute(paths[i], &a->hide_paths[i + 1]);
                if (r >= 0 && strcmp(a->hide_paths[i + 1], "/") == 0)
                        return xp_errorf(err,
                                         -EINVAL,
                                         "hiding %s from containers: it is the root directory",
                                         paths[i]);
        }
        return r < 0 ? xp_errorf(err, r, "the paths hidden from containers: %s", strerror(-r)) : 0;
}

/* The node's paths shared with process containers (--share), made absolute. */
static int copy_share_paths(struct xp_agent *a, const char *const *paths, struct xp_error *err)
{
        size_t n = 0;
        int r = 0;

        while (paths && paths[n])
                n++;
        a->share_paths = calloc(n + 1, sizeof(*a->share_paths));
        if (!a->share_paths)
                return -ENOMEM;
        for (size_t i = 0; r >= 0 && i < n; i++)
                r = absolute(paths[i], &a->share_paths[i]);
        return r < 0 ? xp_errorf(err, r, "the paths shared with containers: %s", strerror(-r)) : 0;
}

/* HTTPS on the endpoint with an https:// server, which reaches agents only so (docs/agent.md). */
static int choose_tls(struct xp_agent *a, const struct xp_agent_options *o, struct xp_error *err)
{
        a->serve_tls = a->server.scheme && strcasecmp(a->server.scheme, "https") == 0;
        if (o->no_tls && a->serve_tls)
                return xp_errorf(
                    err,
                    -EINVAL,
                    "--no-tls: the server at %s reaches agents over HTTPS only (plain HTTP needs a server run with --no-tls, at an http:// URL)",
                    a->server_url);
        return 0;
}

static int copy_options(struct xp_agent *a, const struct xp_agent_options *o, struct xp_error *err)
{
        char host[256];
        int r = 0;

        if (!o->server_url || !*o->server_url)
                return xp_errorf(err, -EINVAL, "the agent needs the server's URL");
        if (!o->token || !*o->token)
                return xp_errorf(err, -EINVAL, "the agent needs its node token");
        r = xp_url_split(o->server_url, &a->server, err);
        if (r == -EINVAL)
                return xp_error_prefix(
                    err,
                    r,
                    "the agent's server address \"%s\": not scheme://host[:port]",
                    o->server_url);
        if (r < 0)
                return r;
        r |= copy_string(o->server_url, &a->server_url);
        r |= copy_string(o->token, &a->token);
        r |= copy_string(o->ca_file, &a->ca_file);
        r |= copy_string(o->listen_host, &a->listen_host);
        if (o->ca_pem) {
                a->ca_pem = strndup(o->ca_pem, o->ca_pem_len);
                a->ca_pem_len = o->ca_pem_len;
                r |= a->ca_pem ? 0 : -ENOMEM;
        }
        r |= copy_string(o->advertise_address, &a->advertise_address);
        r |= copy_string(o->cgroup_root, &a->cgroup_root);
        r |= copy_string(o->shim_exe, &a->shim_exe);
        r |= copy_string(o->discovery.node_description, &a->node_description);
        r |= copy_string(o->cni_conf_dir, &a->cni_conf_dir);
        r |= copy_string(o->cni_bin_dirs, &a->cni_bin_dirs);
        r |= copy_string(o->netns_dir, &a->netns_dir);
        r |= copy_string(o->pod_cidr, &a->pod_cidr);
        r |= copy_string(o->ipc_dir, &a->ipc_dir);
        a->host_network_only = o->host_network_only;
        if (gethostname(host, sizeof(host)) < 0)
                return xp_errorf(err, -errno, "reading the host name: %s", strerror(errno));
        host[sizeof(host) - 1] = '\0';
        r |= copy_string(o->node_name ? o->node_name : host, &a->node_name);
        if (r < 0)
                return -ENOMEM;
        if (o->data_dir)
                r = copy_string(o->data_dir, &a->data_dir);
        else
                r = xp_datadir_agent_default(&a->data_dir, err);
        if (r < 0)
                return r;
        a->heartbeat_ms = o->heartbeat_ms > 0 ? o->heartbeat_ms : 10000;
        a->max_pods = o->max_pods;
        a->metrics_interval_ms = o->metrics_interval_ms;
        a->metrics_anonymous = o->metrics_anonymous;
        r = choose_tls(a, o, err);
        if (r < 0)
                return r;
        a->housekeeping_ms = o->housekeeping_interval_ms ? o->housekeeping_interval_ms : 10000;
        a->status_coalesce_ns = o->status_coalesce_ms < 0   ? 0
                                : o->status_coalesce_ms > 0 ? o->status_coalesce_ms * 1000000
                                                            : STATUS_COALESCE_DEFAULT_NS;
        a->node_status_ms = o->node_status_ms > 0 ? o->node_status_ms : 60000;
        a->backoff_initial_ms = o->backoff_initial_ms > 0 ? o->backoff_initial_ms : 10000;
        a->backoff_max_ms = o->backoff_max_ms > 0 ? o->backoff_max_ms : 300000;
        if (o->state_dir && !*o->state_dir)
                return xp_errorf(err, -EINVAL, "--state-dir: the directory's path is empty");
        a->state_dir = o->state_dir ? strdup(o->state_dir)
                                    : xp_datadir_path(a->data_dir, XP_DATADIR_CONTAINERS);
        if (!a->state_dir)
                return -ENOMEM;
        r = copy_hide_paths(a, o->hide_paths, o->state_dir != NULL, err);
        if (r >= 0)
                r = copy_share_paths(a, o->share_paths, err);
        if (r < 0)
                return r;
        a->policy =
            (struct xp_launch_policy){.allow_privileged = o->allow_privileged,
                                      .allow_degraded_isolation = o->allow_degraded_isolation,
                                      .default_uid = geteuid(),
                                      .node_name = a->node_name,
                                      .api_host = a->server.host,
                                      .api_port = a->server.port};
        a->isolation.allow_degraded = o->allow_degraded_isolation;
        a->pids_max = o->pids_max ? o->pids_max : 4096;
        a->log_max_bytes = o->log_max_bytes;
        a->log_max_files = o->log_max_files;
        a->discovery = o->discovery;
        a->discovery.node_description = a->node_description;
        a->api = (struct xp_apiclient_options){
            .server = a->server_url,
            .token = a->token,
            .ca_file = a->ca_file,
            .ca_pem = a->ca_pem,
            .ca_pem_len = a->ca_pem_len,
            .cred_where = "the agent's node token",
            .timeout_ms = 30000,
        };
        return 0;
}

/* The token id of xpn_<id>.<secret>, and the key the server signs log requests with. */
static int token_key(struct xp_agent *a, uint8_t key[32], struct xp_error *err)
{
        const char *dot = strchr(a->token, '.');

        if (strncmp(a->token, "xpn_", 4) != 0 || !dot)
                return xp_errorf(
                    err,
                    -EINVAL,
                    "the token is not a node token: it looks like xpn_<id>.<secret> (xpool token create --node NAME)");
        a->token_id = strndup(a->token + 4, (size_t)(dot - a->token - 4));
        if (!a->token_id)
                return -ENOMEM;
        if (gnutls_hash_fast(GNUTLS_DIG_SHA256, a->token, strlen(a->token), key) < 0)
                return xp_errorf(err, -EIO, "hashing the node token failed");
        return 0;
}

/* The value of KEY="value" or KEY=value in an os-release file (caller frees), NULL if none. */
static char *os_release_value(const char *text, const char *key)
{
        size_t klen = strlen(key);

        for (const char *line = text; line && *line;
             line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
                size_t len = strcspn(line, "\n");

                if (strncmp(line, key, klen) != 0 || line[klen] != '=')
                        continue;
                line += klen + 1;
                len -= klen + 1;
                if (len >= 2 && (line[0] == '"' || line[0] == '\'') && line[len - 1] == line[0]) {
                        line++;
                        len -= 2;
                }
                return strndup(line, len);
        }
        return NULL;
}

static char *read_trimmed(const char *path)
{
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        char *text = NULL;
        size_t len = 0;

        if (fd < 0 || xp_read_fd_all(fd, 1 << 16, &text, &len) < 0)
                return NULL;
        while (len > 0 && (text[len - 1] == '\n' || text[len - 1] == ' '))
                text[--len] = '\0';
        return text;
}

static int build_node(struct xp_agent *a, struct xp_error *err)
{
        _cleanup_free_ char *os_text = read_trimmed("/etc/os-release");
        _cleanup_free_ char *os_image = os_text ? os_release_value(os_text, "PRETTY_NAME") : NULL;
        _cleanup_free_ char *machine_id = read_trimmed("/etc/machine-id");
        _cleanup_free_ char *boot_id = read_trimmed("/proc/sys/kernel/random/boot_id");
        struct utsname u;
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        struct xp_agent_node_info info;
        int r;

        if (uname(&u) < 0)
                return xp_errorf(err, -errno, "uname: %s", strerror(errno));
        info = (struct xp_agent_node_info){
            .name = a->node_name,
            /* as the kubelet's --hostname-override: a node named otherwise than its machine is
             * still found by kubernetes.io/hostname=NODE (nodeSelector, topology keys) */
            .hostname = a->node_name,
            .address = a->advertise_address,
            .arch = xp_agent_arch(u.machine),
            .kernel_version = u.release,
            .os_image = os_image,
            .machine_id = machine_id,
            .boot_id = boot_id,
            .cpu_count = cpus > 0 ? cpus : 1,
            .max_pods = a->max_pods,
            .port = a->port,
            .now_s = xp_agent_now_ns() / 1000000000,
            .isolation = &a->isolation,
        };
        a->ready_since_s = info.now_s;
        r = xp_agent_node_build(a->inventory, &info, &a->node_json, err);
        if (r >= 0)
                r = xp_agent_pressure_capacity(a, json_object_get(a->node_json, "status"));
        if (r < 0)
                return r;
        /* the images this node has, as the kubelet reports them */
        json_t *images = xp_agent_node_images(a->images);

        if (images &&
            json_object_set_new(json_object_get(a->node_json, "status"), "images", images) < 0)
                return -ENOMEM;
        r = xp_node_from_json(a->node_json, NULL, 0, &a->node, err);
        if (r < 0)
                return xp_error_prefix(err, r, "the agent's own Node");
        return 0;
}

/* The InternalIP when none was given: the local address of a connection to the server. */
static int find_address(struct xp_agent *a, struct xp_apiclient *client, struct xp_error *err)
{
        json_auto_t *version = NULL;
        int r;

        if (a->advertise_address)
                return 0;
        r = xp_apiclient_json(client, "GET", "/version", NULL, NULL, NULL, &version, err);
        if (r < 0)
                return r;
        r = xp_apiclient_local_address(client, &a->advertise_address);
        if (r < 0)
                return xp_errorf(
                    err,
                    r,
                    "cannot tell the address used to reach the server: give --advertise-address");
        return 0;
}

/* The log endpoint's /metrics and /metrics/resource: the last rendering (metrics.h). */
static int serve_metrics(void *userdata,
                         bool resource,
                         const char *accept,
                         char **ret_text,
                         size_t *ret_len,
                         const char **ret_content_type)
{
        enum xp_expo_format format = resource ? XP_EXPO_TEXT : xp_expo_negotiate(accept);

        *ret_content_type = xp_expo_content_type(format);
        return xp_agent_metrics_scrape(userdata, resource, format, ret_text, ret_len);
}

static int authorize_metrics(void *userdata, const char *authorization, struct xp_error *err)
{
        return xp_metrics_auth_check(userdata, authorization, err);
}

/* The metrics threads, once the inventory is known (they outlive the log endpoint). */
static int start_metrics(struct xp_agent *a, struct xp_error *err)
{
        struct xp_agent_metrics_config c = {
            .discovery = &a->discovery,
            .inventory = a->inventory,
            .pods = &a->pods,
            .node_name = a->node_name,
            .hostname = a->node_name, /* as dcgm-exporter in a cluster: the node's name */
            .cgroup_root = a->cgroup_root,
            .cgroup_parent = xp_runtime_cgroup_parent(a->runtime),
            .interval_ms = a->metrics_interval_ms,
            .on_health = xp_agent_devhealth_update,
            .on_health_userdata = a,
        };

        if (a->metrics_interval_ms < 0)
                return 0; /* --no-metrics */
        return xp_agent_metrics_new(&c, &a->metrics, err);
}

/*
 * The log endpoint, on the address the Node advertises unless --listen names another: started
 * once that address is known, before the Node that carries its port is built.
 */
static int start_logserver(struct xp_agent *a, struct xp_apiclient *client, struct xp_error *err)
{
        _cleanup_free_ char *log_dir = xp_datadir_path(a->data_dir, XP_DATADIR_LOGS);
        _cleanup_free_ char *tls_cert = NULL, *tls_key = NULL;
        struct xp_logserver_streams streams;
        int r;

        if (!log_dir)
                return -ENOMEM;
        r = xp_agent_serving_tls(a, client, &tls_cert, &tls_key, err);
        if (r < 0)
                return r;
        /* exec, attach and port-forward share the endpoint (stream.h) */
        r = a->streams
                ? 0
                : xp_agent_streams_new(
                      &(struct xp_agent_streams_options){.runtime = a->runtime}, &a->streams, err);
        if (r < 0)
                return r;
        xp_agent_streams_hook(a->streams, &streams);
        struct xp_logserver_options lso = {
            .streams = &streams,
            .host = a->listen_host ? a->listen_host : a->advertise_address,
            .port = a->port, /* the one asked for, until the endpoint says which */
            .log_dir = log_dir,
            .token_id = a->token_id,
            .tls_cert = tls_cert,
            .tls_key = tls_key,
        };
        memcpy(lso.key, a->log_key, sizeof lso.key);
        lso.metrics = a->metrics ? serve_metrics : NULL;
        lso.metrics_userdata = a->metrics;
        /* a start tried again (its port refused) keeps what the first try made */
        if (a->metrics && !a->metrics_anonymous) {
                r = a->metrics_auth ? 0
                                    : xp_metrics_auth_new(
                                          &(struct xp_metrics_auth_options){
                                              .api = &a->api, .node_name = a->node_name},
                                          &a->metrics_auth);
                if (r < 0)
                        return xp_errorf(err, r, "metrics authentication: %s", strerror(-r));
                lso.metrics_authorize = authorize_metrics;
                lso.metrics_authorize_userdata = a->metrics_auth;
        }
        r = xp_logserver_new(&lso, &a->logserver, err);
        if (tls_key)
                explicit_bzero(tls_key, strlen(tls_key));
        if (r < 0)
                return xp_error_prefix(err, r, "starting the log endpoint");
        a->port = xp_logserver_port(a->logserver);
        return 0;
}

int xp_agent_logserver_restart(struct xp_agent *a,
                               struct xp_apiclient *client,
                               struct xp_error *err)
{
        xp_logserver_free(a->logserver);
        a->logserver = NULL;
        return start_logserver(a, client, err);
}

/*
 * Waits ms, or less when SIGINT or SIGTERM arrives while the caller blocks them (as `xpool agent`
 * does, to take them with sigwait() later): true then, the signal taken.
 */
static bool wait_or_stop_signal(int64_t ms)
{
        struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000};
        sigset_t stop, blocked;

        sigemptyset(&stop);
        sigaddset(&stop, SIGINT);
        sigaddset(&stop, SIGTERM);
        pthread_sigmask(SIG_BLOCK, NULL, &blocked);
        if (sigismember(&blocked, SIGINT) && sigismember(&blocked, SIGTERM))
                return sigtimedwait(&stop, NULL, &ts) > 0;
        /* not blocked: their default action ends the process */
        nanosleep(&ts, NULL);
        return false;
}

/*
 * Finds our address and registers the Node, waiting while the server cannot be reached or
 * fails (it may start after the nodes, as with the kubelet), and for a while on 401: the server
 * rereads its tokens about every second, so a token made just now may not be known yet.
 */
static int
register_when_reachable(struct xp_agent *a, struct xp_apiclient *client, struct xp_error *err)
{
        int64_t delay_ms = 500, unauthorized_ms = 0;
        int r;

        for (;;) {
                xp_error_clear(err);
                r = find_address(a, client, err);
                if (r >= 0 && !a->logserver)
                        r = start_logserver(a, client, err);
                if (r >= 0 && !a->node_json)
                        r = build_node(a, err);
                if (r >= 0)
                        r = xp_agent_register(a, client, err);
                if (r >= 0 || (r != -ECONNREFUSED && r != -ETIMEDOUT && r != -EIO && r != -EACCES))
                        return r;
                if (r == -EACCES && unauthorized_ms >= UNAUTHORIZED_WAIT_MS)
                        return r;
                xp_log(LOG_WARNING,
                       "agent: %s; trying again in %.1f s",
                       xp_error_message(err),
                       (double)delay_ms / 1000.0);
                if (wait_or_stop_signal(delay_ms))
                        return xp_errorf(err, -ECANCELED, "stopped before the Node was registered");
                if (r == -EACCES)
                        unauthorized_ms += delay_ms;
                delay_ms = delay_ms * 2 > 10000 ? 10000 : delay_ms * 2;
        }
}

/* The pod network's subnets, kept for the pods' API address (apiaddr.c), which serves them. */
static void pod_subnets(struct xp_agent *a)
{
        const char *subnets[XP_ELEMENTSOF(a->pod_api.subnets)];
        size_t n = xp_podnet_subnets(a->podnet, subnets, XP_ELEMENTSOF(subnets));

        for (size_t i = 0; i < n; i++)
                snprintf(a->pod_api.subnets[i], sizeof(a->pod_api.subnets[i]), "%s", subnets[i]);
        a->pod_api.n_subnets = n;
}

/*
 * The pod network: opened before the Node is registered (its NetworkUnavailable condition says
 * what pods get), said loudly when pods cannot get one. -errno for what the operator gave wrong
 * (a pod CIDR, the namespaces' directory).
 */
static int open_network(struct xp_agent *a, struct xp_error *err)
{
        _cleanup_free_ char *state_dir = xp_datadir_path(a->data_dir, XP_DATADIR_NETWORK);
        const char *why, *reason = NULL;
        int r;

        a->isolation.network_reason = "HostNetwork";
        a->isolation.network_message =
            "every pod runs on the node's network (the agent runs with --pod-network host)";
        if (a->host_network_only)
                return 0;
        if (!state_dir)
                return -ENOMEM;
        r = xp_podnet_open(&(struct xp_podnet_options){.state_dir = state_dir,
                                                       .conf_dir = a->cni_conf_dir,
                                                       .bin_dirs = a->cni_bin_dirs,
                                                       .netns_dir = a->netns_dir,
                                                       .pod_cidr = a->pod_cidr},
                           &a->podnet,
                           err);
        if (r < 0)
                return r;
        why = xp_podnet_unavailable(a->podnet, &reason);
        if (!why) {
                a->isolation.network_reason = "PodNetworkReady";
                if (asprintf(&a->network_message,
                             "each pod gets a network namespace of its own on %s",
                             xp_podnet_describe(a->podnet)) < 0)
                        return -ENOMEM;
                a->isolation.network_message = a->network_message;
                pod_subnets(a);
                return 0;
        }
        a->isolation.network_unavailable = true;
        a->isolation.network_reason = reason;
        if (asprintf(&a->network_message,
                     "%s; pods without hostNetwork %s",
                     why,
                     a->isolation.allow_degraded
                         ? "run on the node's network (--allow-degraded-isolation)"
                         : "are refused (--allow-degraded-isolation runs them on the node's "
                           "network)") < 0)
                return -ENOMEM;
        a->isolation.network_message = a->network_message;
        a->policy.network_unavailable = why;
        xp_log(
            LOG_WARNING,
            "agent: no pod network: %s (the node reports condition NetworkUnavailable; docs/networking.md)",
            a->network_message);
        return 0;
}

/* The network step (network.c): after the events, which report its failed setups. */
static int start_network(struct xp_agent *a, struct xp_error *err)
{
        int r = xp_agent_network_new(
            TAKE_PTR(a->podnet),
            &(struct xp_agent_network_config){.backoff_initial_ms = a->backoff_initial_ms,
                                              .backoff_max_ms = a->backoff_max_ms,
                                              .degrade_to_host = a->isolation.allow_degraded,
                                              .events = a->events},
            &a->network,
            err);

        return r < 0 ? xp_error_prefix(err, r, "the pod network") : 0;
}

/* What the runtime can isolate pods with here; said loudly when something is missing. */
static void note_isolation(struct xp_agent *a)
{
        a->isolation.have = xp_runtime_isolation(a->runtime);
        a->isolation.why = xp_runtime_warning(a->runtime);
        a->policy.isolation = a->isolation.have;
        if (a->isolation.have == XP_ISOLATION_ALL)
                return;
        xp_log(LOG_WARNING,
               "agent: isolation is degraded: %s",
               a->isolation.why ? a->isolation.why : "(no reason given)");
        xp_log(
            LOG_WARNING,
            "agent: %s (the node reports condition IsolationDegraded; docs/security.md)",
            a->isolation.allow_degraded
                ? "pods with limits or devices run anyway, as --allow-degraded-isolation asks"
                : "pods with limits or devices are refused; --allow-degraded-isolation runs them "
                  "anyway");
}

static int start_thread(struct xp_agent *a,
                        pthread_t *thread,
                        bool *started,
                        void *(*fn)(void *),
                        const char *what,
                        struct xp_error *err)
{
        int r = -pthread_create(thread, NULL, fn, a);

        if (r < 0)
                return xp_errorf(err, r, "starting the %s thread: %s", what, strerror(-r));
        *started = true;
        return 0;
}

/* The image store, DATA/images: a registries or credentials file that does not read stops the
 * agent here, saying where. */
static int open_images(struct xp_agent *a, const struct xp_agent_options *o, struct xp_error *err)
{
        _cleanup_free_ char *dir = xp_datadir_path(a->data_dir, XP_DATADIR_IMAGES);
        int r;

        if (!dir)
                return -ENOMEM;
        r = xp_image_store_open(
            dir,
            &(struct xp_image_store_config){.registries_file = o->registries_file,
                                            .auth_file = o->auth_file},
            &a->images,
            err);
        return r < 0 ? xp_error_prefix(err, r, "opening the image store") : 0;
}

/* The runtime in DATA/containers and DATA/logs, with what it can contain and the node's CDI
 * specs written for its OCI containers. */
static int open_runtime(struct xp_agent *a, struct xp_error *err)
{
        _cleanup_free_ char *log_dir = NULL;
        const char *detach[2] = {a->netns_dir, NULL};
        int r;

        log_dir = xp_datadir_path(a->data_dir, XP_DATADIR_LOGS);
        if (!log_dir)
                return -ENOMEM;
        r = xp_runtime_open(
            &(struct xp_runtime_options){.state_dir = a->state_dir,
                                         .log_dir = log_dir,
                                         .shim_exe = a->shim_exe,
                                         .cgroup_root = a->cgroup_root,
                                         .log_max_bytes = a->log_max_bytes,
                                         .log_max_files = a->log_max_files,
                                         .hide_paths = (const char *const *)a->hide_paths,
                                         .share_paths = (const char *const *)a->share_paths,
                                         .cdi_dir = a->containers.cdi_dir,
                                         .ipc_dir = a->ipc_dir,
                                         .detach_paths = a->host_network_only ? NULL : detach},
            &a->runtime,
            err);
        if (r < 0)
                return xp_error_prefix(err, r, "opening the runtime in %s", a->data_dir);
        note_isolation(a);
        if (xp_runtime_isolation(a->runtime) & XP_ISOLATION_CGROUPS)
                xp_log(LOG_INFO,
                       "agent: pods' cgroups below /%s",
                       xp_runtime_cgroup_parent(a->runtime));
        xp_agent_containers_publish(a);
        return 0;
}

/*
 * The pods' namespace pins' directories the operator did not give: RUN_DIR/agent-<key>/netns and
 * .../ipc, keyed like the runtime's cgroup parent (by the containers' state directory), so that
 * the agents of one machine never share them and a reclaim of one never sees another's pins.
 */
static int default_namespace_dirs(struct xp_agent *a, struct xp_error *err)
{
        _cleanup_free_ char *key = NULL;
        int r;

        if (a->netns_dir && a->ipc_dir)
                return 0;
        r = xp_mkdir_p(a->state_dir, 0755, err);
        if (r >= 0)
                r = xp_runtime_agent_key(a->state_dir, &key, err);
        if (r < 0)
                return xp_error_prefix(err, r, "the pods' namespaces' directory");
        if ((!a->netns_dir && asprintf(&a->netns_dir, XP_RUNTIME_RUN_DIR "/%s/netns", key) < 0) ||
            (!a->ipc_dir && asprintf(&a->ipc_dir, XP_RUNTIME_RUN_DIR "/%s/ipc", key) < 0))
                return xp_errorf(err, -ENOMEM, "out of memory");
        xp_log(LOG_INFO,
               "agent: pods' namespaces in %s (network) and %s (IPC)",
               a->host_network_only ? "none" : a->netns_dir,
               a->ipc_dir);
        return 0;
}

/* The kubelet's Events of its start, after the node's registration (Ready): Starting and
 * NodeReady. NodeNotReady is the node lifecycle controller's (src/controller/nodelife.c). */
static void record_start(struct xp_agent *a)
{
        char message[512];

        (void)xp_agent_event_node(a->events, "Normal", "Starting", "Starting kubelet.");
        snprintf(message, sizeof(message), "Node %s status is now: NodeReady", a->node_name);
        (void)xp_agent_event_node(a->events, "Normal", "NodeReady", message);
}

/* The lease, watch and reconcile threads. */
static int start_threads(struct xp_agent *a, struct xp_error *err)
{
        int r;

        r = start_thread(
            a, &a->lease_thread, &a->lease_started, xp_agent_lease_thread, "lease", err);
        if (r >= 0)
                r = start_thread(
                    a, &a->watch_thread, &a->watch_started, xp_agent_watch_thread, "watch", err);
        if (r >= 0)
                r = start_thread(a,
                                 &a->reconcile_thread,
                                 &a->reconcile_started,
                                 xp_agent_reconcile_thread,
                                 "reconcile",
                                 err);
        if (r >= 0 && a->housekeeping_ms > 0)
                r = start_thread(a,
                                 &a->housekeeping_thread,
                                 &a->housekeeping_started,
                                 xp_agent_housekeeping_thread,
                                 "housekeeping",
                                 err);
        return r;
}

int xp_agent_new(const struct xp_agent_options *options,
                 struct xp_agent **ret,
                 struct xp_error *err)
{
        _cleanup_(xp_agent_freep) struct xp_agent *a = NULL;
        _cleanup_(xp_apiclient_freep) struct xp_apiclient *client = NULL;
        int r;

        a = calloc(1, sizeof(*a));
        if (!a)
                return -ENOMEM;
        a->stop_fd = -1;
        pthread_mutex_init(&a->sa_tokens_lock, NULL);
        pthread_mutex_init(&a->config_clients_lock, NULL);
        xp_client_slots_init(&a->config_clients, CONFIG_CLIENTS_KEPT);
        r = xp_agent_pods_init(&a->pods);
        if (r < 0)
                return r;
        a->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        a->pods.wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (a->stop_fd < 0 || a->pods.wake_fd < 0)
                return xp_errorf(err, -errno, "eventfd: %s", strerror(errno));
        r = copy_options(a, options, err);
        if (r >= 0)
                r = xp_agent_pod_api_parse(a, options->api_service_address, err);
        if (r >= 0)
                r = xp_agent_pressure_new(options->eviction_hard, &a->pressure, err);
        if (r >= 0)
                r = xp_agent_image_gc_setup(a, options, err);
        if (r < 0)
                return r;
        r = token_key(a, a->log_key, err);
        if (r < 0)
                return r;
        r = xp_device_discover(&a->discovery, &a->inventory, err);
        if (r < 0)
                return xp_error_prefix(err, r, "discovering the node's devices");
        r = xp_agent_devhealth_new(a->inventory, &a->devhealth);
        if (r < 0)
                return xp_errorf(err, r, "out of memory");
        r = xp_datadir_make(a->data_dir, err);
        if (r >= 0)
                r = xp_agent_containers_init(a, options, err);
        if (r >= 0)
                r = default_namespace_dirs(a, err);
        if (r < 0)
                return r;
        r = open_network(a, err);
        if (r >= 0)
                r = open_runtime(a, err);
        /* after the runtime: the containers' groups are below its parent */
        if (r >= 0)
                r = start_metrics(a, err);
        if (r < 0)
                return r;
        r = open_images(a, options, err);
        if (r < 0)
                return r;
        a->port = options->listen_port;
        r = xp_apiclient_new(&a->api, &client, err);
        if (r < 0)
                return r;
        r = register_when_reachable(a, client, err);
        if (r < 0)
                return r;
        r = xp_agent_status_new(&a->api, STATUS_WRITERS, a->status_coalesce_ns, &a->status, err);
        if (r < 0)
                return r;
        r = xp_agent_events_new(&a->api, a->node_name, &a->events, err);
        if (r < 0)
                return r;
        record_start(a);
        xp_agent_devhealth_enable(a->devhealth, true);
        r = xp_agent_pulls_new(
            &(struct xp_agent_pulls_config){.store = a->images,
                                            .api = &a->api,
                                            .events = a->events,
                                            .backoff_initial_ms = a->backoff_initial_ms,
                                            .backoff_max_ms = a->backoff_max_ms},
            &a->pulls,
            err);
        if (r < 0)
                return r;
        r = start_network(a, err);
        if (r < 0)
                return r;
        xp_agent_pod_api_start(a);
        r = xp_apiclient_new(&a->api, &a->watch_client, err);
        if (r < 0)
                return r;
        r = xp_apiclient_new(&a->api, &a->lease_client, err);
        if (r < 0)
                return r;
        r = start_threads(a, err);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(a);
        return 0;
}

void xp_agent_free(struct xp_agent *a)
{
        uint64_t one = 1;
        ssize_t n = 0;

        if (!a)
                return;
        atomic_store(&a->stopping, true);
        if (a->stop_fd >= 0)
                n = write(a->stop_fd, &one, sizeof(one));
        (void)n;
        if (a->watch_client)
                xp_apiclient_cancel(a->watch_client);
        if (a->lease_client)
                xp_apiclient_cancel(a->lease_client);
        if (a->lease_started)
                pthread_join(a->lease_thread, NULL);
        if (a->watch_started)
                pthread_join(a->watch_thread, NULL);
        if (a->reconcile_started)
                pthread_join(a->reconcile_thread, NULL);
        if (a->housekeeping_started) /* before the status and event writers it uses */
                pthread_join(a->housekeeping_thread, NULL);
        /* no container starts any more: none is told the pods' API address */
        xp_agent_pod_api_stop(a);
        /* the reconcile thread is joined: nothing asks the network step any more */
        xp_agent_network_free(a->network);
        xp_podnet_free(a->podnet);
        /* after the reconcile loop, which asks it; its pulls are cancelled */
        xp_agent_pulls_free(a->pulls);
        xp_image_store_free(a->images);
        xp_agent_devhealth_enable(a->devhealth, false); /* before the writers go */
        xp_agent_status_free(a->status);
        xp_agent_events_free(a->events);
        xp_apiclient_free(a->watch_client);
        xp_apiclient_free(a->lease_client);
        /* the streams hold connections of the endpoint, and the runtime */
        xp_agent_streams_stop(a->streams);
        xp_logserver_free(a->logserver);
        xp_metrics_auth_free(a->metrics_auth); /* after the endpoint that asks it */
        xp_agent_streams_free(a->streams);
        xp_agent_metrics_free(a->metrics);     /* reads the pods and the inventory */
        xp_agent_devhealth_free(a->devhealth); /* after the metrics threads that call it */
        xp_agent_pressure_free(a->pressure);   /* after the lease and housekeeping threads */
        xp_runtime_free(a->runtime);
        if (a->pods.wake_fd >= 0)
                close(a->pods.wake_fd);
        xp_agent_pods_done(&a->pods);
        if (a->stop_fd >= 0)
                close(a->stop_fd);
        json_decref(a->node_json);
        json_decref(a->sa_tokens);
        pthread_mutex_destroy(&a->sa_tokens_lock);
        xp_agent_config_clients_free(a);
        pthread_mutex_destroy(&a->config_clients_lock);
        xp_node_free(a->node);
        xp_node_inventory_free(a->inventory);
        free(a->server_url);
        xp_url_done(&a->server);
        free(a->token);
        free(a->ca_file);
        free(a->ca_pem);
        free(a->node_name);
        free(a->data_dir);
        free(a->state_dir);
        free(a->listen_host);
        free(a->advertise_address);
        free(a->cgroup_root);
        free(a->shim_exe);
        free(a->node_description);
        free(a->token_id);
        free(a->cni_conf_dir);
        free(a->cni_bin_dirs);
        free(a->netns_dir);
        free(a->ipc_dir);
        free(a->pod_cidr);
        free(a->network_message);
        for (size_t i = 0; a->hide_paths && a->hide_paths[i]; i++)
                free(a->hide_paths[i]);
        free(a->hide_paths);
        for (size_t i = 0; a->share_paths && a->share_paths[i]; i++)
                free(a->share_paths[i]);
        free(a->share_paths);
        xp_agent_containers_done(&a->containers);
        free(a);
}
