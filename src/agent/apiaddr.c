/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The pods' address of the API server (docs/networking.md, "The API from pods"). The server of
 * `xpool up` listens on the node's loopback, which a pod in a network namespace of its own
 * cannot reach (nor should: the node's other loopback services stay out of its reach). As
 * kube-proxy makes the `kubernetes` Service's ClusterIP lead to the apiserver, the agent puts
 * that address (10.96.0.1, the first of the server's default --service-cluster-ip-range) on the
 * node's lo and forwards its port, and only that, to the server: pods reach it through their
 * default route, and the server's certificate carries it, so the service account's ca.crt
 * verifies it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent_internal.h"
#include "apiproxy.h"
#include "xpool/atomic_file.h"
#include "xpool/client.h"
#include "xpool/datadir.h"
#include "xpool/fileio.h"
#include "xpool/localaddr.h"
#include "xpool/log.h"
#include "xpool/macro.h"

/*
 * The address the agent put on lo, recorded in its data directory before it is added: an agent
 * killed before it could remove it leaves the record, and the next agent of the same data
 * directory removes that address at its start. Only the agent that added an address records it
 * (one found on lo is another's, or the operator's), and an address another process still
 * listens on (another agent's forwarder, which found it there) is left on lo with its record,
 * to be removed once nobody serves on it.
 */
#define OWNED_FILE "pod-api-address"
/* One request's time at start and at each check after: the agent's start waits for it */
#define CHECK_TIMEOUT_MS 3000

/* The address recorded in path, into ip: false when there is none (or no readable one). */
static bool owned_read(const char *path, char ip[static 46])
{
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        _cleanup_free_ char *text = NULL;
        size_t size;

        if (fd < 0 || xp_read_fd_all(fd, 64, &text, &size) < 0 || size == 0 || size >= 46 ||
            memchr(text, '\0', size))
                return false;
        memcpy(ip, text, size);
        ip[size] = '\0';
        return true;
}

/* Removes ip from lo and its record, unless a process still listens on it: 0, or -EBUSY. */
static int release(const char *ip, const char *path)
{
        struct xp_error err = {0};

        if (xp_localaddr_listened(ip)) {
                xp_log(LOG_WARNING,
                       "agent: the pods' API address %s this agent's data directory put on lo "
                       "is left there: another process (another agent's forwarder) listens on "
                       "it; removed when one of this data directory's agents finds it unused",
                       ip);
                return -EBUSY;
        }
        if (xp_localaddr_del(ip, &err) < 0) {
                xp_log(LOG_WARNING, "agent: %s", xp_error_message(&err));
                return err.code;
        }
        if (unlink(path) < 0 && errno != ENOENT)
                xp_log(LOG_WARNING, "agent: cannot remove %s: %m", path);
        return 0;
}

static void disown(struct xp_agent *a, const char *path)
{
        release(a->pod_api.ip, path);
        a->pod_api.added = false;
}

/* What a previous agent of this data directory left: its address comes off lo before this
 * agent adds its own (the same one, or another when --api-service-address changed). */
static void release_stale(const char *path)
{
        char stale[46];

        if (owned_read(path, stale) && release(stale, path) == 0)
                xp_log(LOG_INFO,
                       "agent: removed the pods' API address %s a previous agent of this data "
                       "directory left on lo",
                       stale);
}

/* Adds the address, recorded first so that no kill leaves it unrecorded. */
static int take_address(struct xp_agent *a, const char *path, struct xp_error *err)
{
        char recorded[46];
        bool kept = owned_read(path, recorded);
        int r =
            kept ? 0 : xp_write_file_atomic(path, a->pod_api.ip, strlen(a->pod_api.ip), 0600, err);

        if (r >= 0)
                r = xp_localaddr_add(a->pod_api.ip, &a->pod_api.added, err);
        if (!kept && !a->pod_api.added && unlink(path) < 0 && errno != ENOENT)
                xp_log(LOG_WARNING, "agent: cannot remove %s: %m", path);
        /* the stale address is in use and keeps the record: this one is found there or added */
        if (kept && a->pod_api.added && strcmp(recorded, a->pod_api.ip) != 0)
                xp_log(LOG_WARNING,
                       "agent: the stale pods' API address %s stays on lo unrecorded: another "
                       "process listens on it",
                       recorded);
        if (kept && a->pod_api.added)
                r = xp_write_file_atomic(path, a->pod_api.ip, strlen(a->pod_api.ip), 0600, err);
        return r;
}

int xp_agent_pod_api_parse(struct xp_agent *a, const char *text, struct xp_error *err)
{
        if (text && strcmp(text, "none") == 0) {
                a->pod_api.off = true;
                return 0;
        }
        return xp_apiproxy_parse(
            text ? text : XP_APIPROXY_DEFAULT, a->pod_api.ip, &a->pod_api.port, err);
}

/* One request through the forwarder, as a pod makes it: the address on lo, the forwarder, and a
 * server whose certificate names the address (one older than this agent's may not): -EPROTO
 * when the server was reached and its certificate is not for the address. */
static int check(struct xp_agent *a, struct xp_error *err)
{
        struct xp_apiclient_options options = a->api;
        struct xp_apiclient *client = NULL;
        bool v6 = strchr(a->pod_api.ip, ':') != NULL;
        char url[96];
        int r;

        snprintf(url,
                 sizeof(url),
                 "%s://%s%s%s:%u",
                 a->server.scheme,
                 v6 ? "[" : "",
                 a->pod_api.ip,
                 v6 ? "]" : "",
                 a->pod_api.port);
        options.server = url;
        options.timeout_ms = CHECK_TIMEOUT_MS;
        r = xp_apiclient_new(&options, &client, err);
        if (r >= 0)
                r = xp_apiclient_json(client, "GET", "/version", NULL, NULL, NULL, NULL, err);
        xp_apiclient_free(client);
        return r < 0 ? xp_error_prefix(err, r, "a request through it") : 0;
}

static int start(struct xp_agent *a, const char *path, struct xp_error *err)
{
        const char *allow[XP_ELEMENTSOF(a->pod_api.subnets) + 1] = {0};
        int r;

        for (size_t i = 0; i < a->pod_api.n_subnets; i++)
                allow[i] = a->pod_api.subnets[i];
        r = take_address(a, path, err);
        if (r >= 0)
                r = xp_apiproxy_start(a->pod_api.ip,
                                      a->pod_api.port,
                                      a->server.host,
                                      a->server.port,
                                      allow,
                                      &a->pod_api.proxy,
                                      err);
        /* only a server that answered with a certificate not for the address is a reason to go
         * without: one down or slow now is checked again once the agent reaches it */
        if (r >= 0 && (r = check(a, err)) < 0 && r != -EPROTO) {
                xp_log(LOG_WARNING,
                       "agent: the pods' API address is not verified yet (%s); checked again "
                       "when the agent reaches the server",
                       xp_error_message(err));
                a->pod_api.unverified = true;
                r = 0;
        }
        if (r < 0 && a->pod_api.proxy) {
                xp_apiproxy_stop(a->pod_api.proxy);
                a->pod_api.proxy = NULL;
        }
        if (r < 0 && a->pod_api.added)
                disown(a, path);
        return r;
}

void xp_agent_pod_api_start(struct xp_agent *a)
{
        struct xp_error err = {.msg = "out of memory"};
        bool v6 = strchr(a->pod_api.ip, ':') != NULL;
        _cleanup_free_ char *path = xp_datadir_path(a->data_dir, OWNED_FILE);

        /* before anything else: also when this agent puts no address there */
        if (path)
                release_stale(path);
        /* pods on the node's network reach the server where the agent does */
        if (a->pod_api.off || a->host_network_only || a->isolation.network_unavailable)
                return;
        if (a->pod_api.n_subnets == 0)
                xp_log(LOG_WARNING,
                       "agent: the pod network's configuration names no subnet (ipam \"subnet\" "
                       "or \"ranges\"): the pods' API address serves only the node's own "
                       "addresses, so pods with a network of their own are refused there "
                       "(docs/networking.md)");

        if (!path || start(a, path, &err) < 0) {
                xp_log(LOG_WARNING,
                       "agent: pods get no API address of their own (--api-service-address): %s; "
                       "their KUBERNETES_SERVICE_HOST is the agent's %s, which pods with a network "
                       "of their own reach only when it is not on loopback (docs/networking.md)",
                       xp_error_message(&err),
                       a->server.host);
                return;
        }
        a->policy.api_host = a->pod_api.ip;
        a->policy.api_port = a->pod_api.port;
        xp_log(LOG_INFO,
               "agent: pods reach the API server at %s%s%s:%u, forwarded to %s",
               v6 ? "[" : "",
               a->pod_api.ip,
               v6 ? "]" : "",
               a->pod_api.port,
               a->server_url);
}

void xp_agent_pod_api_recheck(struct xp_agent *a)
{
        struct xp_error err = {0};
        int r;

        if (!a->pod_api.unverified || !a->pod_api.proxy)
                return;
        r = check(a, &err);
        if (r == 0)
                xp_log(LOG_INFO,
                       "agent: the pods' API address %s:%u is verified: a request through it "
                       "reached the server",
                       a->pod_api.ip,
                       a->pod_api.port);
        else if (r == -EPROTO)
                /* pods started since hold the address in their environment: said, not undone */
                xp_log(LOG_ERR,
                       "agent: the pods' API address: %s; pods' clients fail to verify the "
                       "server there: give the server --tls-san %s, or the agent "
                       "--api-service-address none (docs/networking.md)",
                       xp_error_message(&err),
                       a->pod_api.ip);
        a->pod_api.unverified = r != 0 && r != -EPROTO;
}

void xp_agent_pod_api_stop(struct xp_agent *a)
{
        _cleanup_free_ char *path = NULL;

        if (!a->pod_api.proxy)
                return;
        xp_apiproxy_stop(a->pod_api.proxy);
        a->pod_api.proxy = NULL;
        /* an address the agent found there (another agent's, the operator's) stays */
        if (a->pod_api.added && (path = xp_datadir_path(a->data_dir, OWNED_FILE)))
                disown(a, path);
}
