/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The machine's own address as the kubelet reports it when its hostname does not resolve: the
 * address of the interface the default route leaves by (IPv4 first, else IPv6), read from
 * /proc/net/route, /proc/net/ipv6_route and getifaddrs(). `xpool up` advertises it as the
 * Node's InternalIP rather than 127.0.0.1 (docs/networking.md, "The node's address").
 */

#include <stddef.h>

/*
 * The interface of the default route in the text of /proc/net/route (ipv6 false) or
 * /proc/net/ipv6_route (ipv6 true): up, not lo, the lowest metric. 0 with iface, -ENOENT when
 * there is none.
 */
int xp_hostaddr_default_interface(const char *routes, int ipv6, char *iface, size_t size);

/*
 * The address of the default route's interface, IPv4 when there is an IPv4 default route,
 * else a global IPv6 one: 0 with *ret (malloc'd), -ENOENT when the machine has none, -ENOMEM.
 */
int xp_hostaddr_default(char **ret);
