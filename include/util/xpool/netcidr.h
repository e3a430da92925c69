/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The one reading of a CIDR (ADDRESS/PREFIX, IPv4 or IPv6) that the agent, the pod network and
 * the API server share. Strict: an address inet_pton() reads, a prefix of decimal digits without
 * a sign, spaces or leading zeros, at most 32 (IPv4) or 128 (IPv6), and by default no host bits
 * set. Each caller then applies its own bounds on the prefix.
 */

#include <stdbool.h>

#include "xpool/error.h"

struct xp_net_cidr {
        int family;             /* AF_INET, AF_INET6 */
        unsigned char addr[16]; /* network byte order, as written; IPv4 uses the first 4 */
        unsigned prefix;        /* 0 to 32, or 0 to 128 */
};

enum {
        /* Accept an address with host bits set (an interface's address, 10.1.2.3/16), kept as
         * written; without it "10.1.2.3/16" is refused, naming the network it should have been. */
        XP_NET_CIDR_HOST_BITS = 1 << 0,
};

/*
 * Reads text into *ret. -EINVAL with err saying what is wrong (no '/', an address that is
 * neither IPv4 nor IPv6, a prefix that is not a number or is out of its family's range, host
 * bits set), the text quoted; then *ret is unchanged.
 */
int xp_net_cidr_parse(const char *text,
                      unsigned flags,
                      struct xp_net_cidr *ret,
                      struct xp_error *err);

/* The address's length in bytes: 4 or 16. */
unsigned xp_net_cidr_len(const struct xp_net_cidr *cidr);
