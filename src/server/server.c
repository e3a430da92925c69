/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The server's assembly: the store, the namespaces, the scheduling loop and the node lifecycle
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

#include "auth.h"
#include "http.h"
#include "http/door.h"
#include "internal.h"
#include "server.h"
#include "setup.h"
#include "xpool/macro.h"

#define ADDRESS_MAX (INET6_ADDRSTRLEN + 16)

struct xp_server {
        struct http *http;
        struct api api;
        struct auth *auth;
        struct scheduler *scheduler; /* NULL with scheduler_off */
        struct nodelife *nodelife;
        uint16_t port;
        char address[ADDRESS_MAX]; /* host:port, as clients reach it */
        char url[ADDRESS_MAX + 16];
        char *kubeconfig;
        char *tls_cert, *tls_key, *tls_ca; /* PEM; the HTTP layer reads the first two */
};

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
        if (asprintf(&db, "%s/state.db", options->data_dir) < 0)
                return -ENOMEM;
        server = calloc(1, sizeof *server);
        if (!server)
                return -ENOMEM;

        struct xp_store_options store_options = {.path = db};
        r = xp_store_open(&store_options, &server->api.store, err);
        if (r < 0)
                goto fail;
        r = namespaces_init(&server->api, err);
        if (r < 0)
                goto fail;
        if (!options->scheduler_off) {
                r = scheduler_start(&server->api, &server->scheduler, err);
                if (r < 0)
                        goto fail;
        }
        r = nodelife_start(&server->api,
                           options->node_monitor_grace_ms > 0 ? options->node_monitor_grace_ms
                                                              : XP_SERVER_NODE_MONITOR_GRACE_MS,
                           options->pod_eviction_timeout_ms > 0 ? options->pod_eviction_timeout_ms
                                                                : XP_SERVER_POD_EVICTION_TIMEOUT_MS,
                           &server->nodelife,
                           err);
        if (r < 0)
                goto fail;
        r = auth_open(options->data_dir, &server->auth, &new_admin_token, err);
        if (r < 0)
                goto fail;
        if (tls) {
                r = setup_tls(
                    options, host, &server->tls_cert, &server->tls_key, &server->tls_ca, err);
                if (r < 0)
                        goto fail;
        }

        r = xp_http_listen(host, options->port, &ipv6, &server->port, err);
        if (r < 0)
                goto fail;
        fd = r;
        snprintf(server->address,
                 sizeof server->address,
                 "%s%s%s:%u",
                 ipv6 ? "[" : "",
                 host,
                 ipv6 ? "]" : "",
                 server->port);
        /* Clients on this machine reach a wildcard listener through loopback. */
        if (strcmp(host, "0.0.0.0") == 0)
                snprintf(server->url,
                         sizeof server->url,
                         "%s://127.0.0.1:%u",
                         tls ? "https" : "http",
                         server->port);
        else if (strcmp(host, "::") == 0)
                snprintf(server->url,
                         sizeof server->url,
                         "%s://[::1]:%u",
                         tls ? "https" : "http",
                         server->port);
        else
                snprintf(server->url,
                         sizeof server->url,
                         "%s://%s",
                         tls ? "https" : "http",
                         server->address);

        if (options->kubeconfig)
                server->kubeconfig = strdup(options->kubeconfig);
        else if (asprintf(&server->kubeconfig, "%s/admin.kubeconfig", options->data_dir) < 0)
                server->kubeconfig = NULL;
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

        server->api.server_address = server->address;
        server->api.auth = server->auth;
        r = http_start(&server->api,
                       server->auth,
                       &(struct http_options){.listen_fd = TAKE_FD(fd),
                                              .ipv6 = ipv6,
                                              .tls_cert = tls ? server->tls_cert : NULL,
                                              .tls_key = tls ? server->tls_key : NULL},
                       &server->http,
                       err);
        if (r < 0) {
                xp_error_prefix(err, r, "cannot start the HTTP server on %s", server->address);
                goto fail;
        }
        *ret = server;
        return 0;

fail:
        free(new_admin_token);
        xp_server_free(server);
        return r;
}

uint16_t xp_server_port(const struct xp_server *server)
{
        return server->port;
}

const char *xp_server_url(const struct xp_server *server)
{
        return server->url;
}

const char *xp_server_kubeconfig(const struct xp_server *server)
{
        return server->kubeconfig;
}

void xp_server_free(struct xp_server *server)
{
        if (!server)
                return;
        scheduler_stop(server->scheduler); /* they write to the store: first */
        nodelife_stop(server->nodelife);
        atomic_store(&server->api.stopping, true);
        http_stop(server->http);
        namespaces_done(&server->api);
        xp_store_close(server->api.store);
        auth_free(server->auth);
        free(server->kubeconfig);
        free(server->tls_cert);
        if (server->tls_key)
                explicit_bzero(server->tls_key, strlen(server->tls_key));
        free(server->tls_key);
        free(server->tls_ca);
        free(server);
}
