/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Who may connect to the pods' API address (apiproxy_admit.c). Linux takes a packet for any of
 * its local addresses on any interface, so a host on the node's segment with a route to the
 * service address via the node reaches the forwarder, and through it a server the operator bound
 * to the loopback: the forwarder serves only the pod network's subnets and the node itself.
 */

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

#include "xpool/error.h"
#include "xpool/netcidr.h"

#define XP_APIPROXY_NETS_MAX 16

struct xp_apiproxy_admit {
        struct xp_net_cidr nets[XP_APIPROXY_NETS_MAX];
        size_t n;
};

/* The allowed networks from cidrs (NULL-terminated "ADDR/PREFIX"; NULL: none). -EINVAL with err
 * naming the one that is not a network, or -E2BIG past XP_APIPROXY_NETS_MAX. */
int xp_apiproxy_admit_init(struct xp_apiproxy_admit *admit,
                           const char *const *cidrs,
                           struct xp_error *err);
/* Whether a peer at addr may connect: an address of this host's own (the node, its hostNetwork
 * pods, loopback, the service address) or one inside the allowed networks. */
bool xp_apiproxy_admit_peer(const struct xp_apiproxy_admit *admit, const struct sockaddr *addr);
