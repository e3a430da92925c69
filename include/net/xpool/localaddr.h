/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * A single address (/32, /128) of the node on its loopback interface, through rtnetlink, as
 * kube-proxy's IPVS mode puts Service addresses on a dummy interface: the node then takes
 * packets to it from any interface (a pod's veth on the bridge) as its own, and a socket bound
 * to it receives them, while sockets bound to 127.0.0.1 do not (docs/networking.md, "The API
 * from pods"). Needs CAP_NET_ADMIN.
 */

#include <stdbool.h>

#include "xpool/error.h"

/* Adds ip (an IPv4 or IPv6 literal) to lo. *added: whether this call added it (false when it
 * was there already). -EINVAL for what is not an address, -EPERM, -errno with err. */
int xp_localaddr_add(const char *ip, bool *added, struct xp_error *err);
/* Removes ip from lo; one that is not there is fine. -errno with err. */
int xp_localaddr_del(const char *ip, struct xp_error *err);
/*
 * Whether a TCP socket of this network namespace listens on ip itself (any port; a wildcard
 * listener does not count), as another agent's forwarder does on an address it found on lo:
 * such an address is in use and is not removed. False when ip is not an address or the
 * kernel's tables cannot be read.
 */
bool xp_localaddr_listened(const char *ip);
