/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The pods' way to the API server (apiproxy.c), as kube-proxy makes the `kubernetes` Service's
 * ClusterIP lead to the apiserver: a TCP forwarder listening on the service address (which the
 * agent puts on the node's lo: include/xpool/localaddr.h) that relays each connection, bytes as
 * they are, TLS included, to the one address the agent itself reaches the API server at, and
 * nowhere else. docs/networking.md, "The API from pods".
 */

#include <stdbool.h>

#include "xpool/error.h"

#define XP_APIPROXY_DEFAULT "10.96.0.1:443" /* kubeadm's: 10.96.0.0/12's first address */
/* connections at once: in all, and from one address (a pod), so that one pod's leak or flood
 * leaves the others their way to the server */
#define XP_APIPROXY_CONNS_MAX        1024
#define XP_APIPROXY_SOURCE_CONNS_MAX 64

struct xp_apiproxy;

/* An address as --api-service-address takes it: IPv4:PORT or [IPv6]:PORT, an IP literal and a
 * port from 1 to 65535. ip gets the address without brackets. -EINVAL with err. */
int xp_apiproxy_parse(const char *text, char ip[static 46], unsigned *port, struct xp_error *err);

/*
 * Listens on listen_ip:listen_port and relays each connection to target_host:target_port (a
 * name or literal, resolved now), at most XP_APIPROXY_CONNS_MAX at once and
 * XP_APIPROXY_SOURCE_CONNS_MAX from one address, each on a thread of its own. Only peers inside
 * allow (NULL-terminated "ADDRESS/PREFIX" networks: the pod network's; NULL: none) or at an
 * address of this host's own are served; others are closed at once and logged (apiproxy_admit.h).
 * -errno with err (the address taken, not the node's; an allow entry that is not a network).
 */
int xp_apiproxy_start(const char *listen_ip,
                      unsigned listen_port,
                      const char *target_host,
                      unsigned target_port,
                      const char *const *allow,
                      struct xp_apiproxy **ret,
                      struct xp_error *err);
/* The port it listens on (listen_port, or the one the kernel picked for 0). */
unsigned xp_apiproxy_port(const struct xp_apiproxy *proxy);
/* Stops listening, ends every relayed connection and waits for their threads. NULL is fine. */
void xp_apiproxy_stop(struct xp_apiproxy *proxy);
