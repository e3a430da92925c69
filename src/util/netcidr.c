/* SPDX-License-Identifier: Apache-2.0 */
/* ADDRESS/PREFIX into its family, address and prefix, strictly (xpool/netcidr.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include "xpool/netcidr.h"

#define CIDR_EXAMPLE "10.0.0.0/16 or fd00::/64"

unsigned xp_net_cidr_len(const struct xp_net_cidr *cidr)
{
        return cidr->family == AF_INET6 ? 16 : 4;
}

/* The prefix's digits: 1 to 3 of them, no leading zero but "0" itself; -1 when not so. */
static int prefix_of(const char *p)
{
        size_t n = strspn(p, "0123456789");
        int value = 0;

        if (n == 0 || n > 3 || p[n] != '\0' || (p[0] == '0' && n > 1))
                return -1;
        for (size_t i = 0; i < n; i++)
                value = value * 10 + (p[i] - '0');
        return value;
}

static bool host_bits_set(const unsigned char *addr, unsigned prefix, unsigned bits)
{
        for (unsigned bit = prefix; bit < bits; bit++)
                if (addr[bit / 8] & (0x80 >> (bit % 8)))
                        return true;
        return false;
}

static int refuse_host_bits(const char *text, const struct xp_net_cidr *cidr, struct xp_error *err)
{
        unsigned char network[16];
        char shown[INET6_ADDRSTRLEN];
        unsigned len = xp_net_cidr_len(cidr);

        memcpy(network, cidr->addr, len);
        for (unsigned bit = cidr->prefix; bit < 8 * len; bit++)
                network[bit / 8] &= (unsigned char)~(0x80 >> (bit % 8));
        inet_ntop(cidr->family, network, shown, sizeof(shown));
        return xp_errorf(err,
                         -EINVAL,
                         "'%s': host bits are set after the /%u prefix (the network is %s/%u)",
                         text,
                         cidr->prefix,
                         shown,
                         cidr->prefix);
}

int xp_net_cidr_parse(const char *text,
                      unsigned flags,
                      struct xp_net_cidr *ret,
                      struct xp_error *err)
{
        struct xp_net_cidr cidr = {0};
        char ip[INET6_ADDRSTRLEN];
        const char *slash = text ? strchr(text, '/') : NULL;
        unsigned bits;
        int prefix;

        if (!text || !*text)
                return xp_errorf(
                    err, -EINVAL, "an empty CIDR: expected ADDRESS/PREFIX (%s)", CIDR_EXAMPLE);
        if (!slash)
                return xp_errorf(err,
                                 -EINVAL,
                                 "'%s': no /PREFIX: expected ADDRESS/PREFIX (%s)",
                                 text,
                                 CIDR_EXAMPLE);
        if ((size_t)(slash - text) >= sizeof(ip))
                return xp_errorf(err, -EINVAL, "'%s': the address is too long", text);
        memcpy(ip, text, (size_t)(slash - text));
        ip[slash - text] = '\0';
        cidr.family = strchr(ip, ':') ? AF_INET6 : AF_INET;
        if (inet_pton(cidr.family, ip, cidr.addr) != 1)
                return xp_errorf(err,
                                 -EINVAL,
                                 "'%s': '%s' is not an %s address",
                                 text,
                                 ip,
                                 cidr.family == AF_INET6 ? "IPv6" : "IPv4");
        bits = 8 * xp_net_cidr_len(&cidr);
        prefix = prefix_of(slash + 1);
        if (prefix < 0)
                return xp_errorf(err,
                                 -EINVAL,
                                 "'%s': the prefix '%s' is not a number from 0 to %u",
                                 text,
                                 slash + 1,
                                 bits);
        if ((unsigned)prefix > bits)
                return xp_errorf(err,
                                 -EINVAL,
                                 "'%s': the prefix /%d is out of range for %s (0 to %u)",
                                 text,
                                 prefix,
                                 cidr.family == AF_INET6 ? "IPv6" : "IPv4",
                                 bits);
        cidr.prefix = (unsigned)prefix;
        if (!(flags & XP_NET_CIDR_HOST_BITS) && host_bits_set(cidr.addr, cidr.prefix, bits))
                return refuse_host_bits(text, &cidr, err);
        *ret = cidr;
        return 0;
}
