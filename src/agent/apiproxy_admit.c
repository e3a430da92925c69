/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The forwarder's allow-list (apiproxy_admit.h). "An address of this host's" is read from the
 * interfaces at each connection, so it follows addresses as they come and go; a packet from
 * outside that claims a local source is dropped as a martian before it reaches a socket.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "apiproxy_admit.h"

int xp_apiproxy_admit_init(struct xp_apiproxy_admit *admit,
                           const char *const *cidrs,
                           struct xp_error *err)
{
        admit->n = 0;
        for (size_t i = 0; cidrs && cidrs[i]; i++) {
                if (admit->n == XP_APIPROXY_NETS_MAX)
                        return xp_errorf(err,
                                         -E2BIG,
                                         "the pod network has more than %d subnets",
                                         XP_APIPROXY_NETS_MAX);
                /* host bits allowed: a CNI configuration may write its subnet so, as host-local
                 * takes it */
                if (xp_net_cidr_parse(
                        cidrs[i], XP_NET_CIDR_HOST_BITS, &admit->nets[admit->n], err) < 0)
                        return xp_error_prefix(
                            err,
                            -EINVAL,
                            "the pod network's subnet '%s' is not ADDRESS/PREFIX",
                            cidrs[i]);
                admit->n++;
        }
        return 0;
}

static bool in_net(const struct xp_net_cidr *net, int family, const unsigned char *addr)
{
        unsigned whole = net->prefix / 8, rest = net->prefix % 8;

        if (net->family != family || memcmp(net->addr, addr, whole) != 0)
                return false;
        return rest == 0 || ((net->addr[whole] ^ addr[whole]) & (0xff00 >> rest) & 0xff) == 0;
}

static bool same_address(const struct sockaddr *a, const struct sockaddr *b)
{
        if (!a || !b || a->sa_family != b->sa_family)
                return false;
        if (a->sa_family == AF_INET)
                return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
                       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
        return memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
                      &((const struct sockaddr_in6 *)b)->sin6_addr,
                      sizeof(struct in6_addr)) == 0;
}

/* The interfaces' addresses as they are now, not a bind test: with net.ipv4.ip_nonlocal_bind
 * set (HA setups do) a bind to any address succeeds, and every peer would count as local. */
static bool is_local(const struct sockaddr *addr)
{
        struct ifaddrs *list = NULL;
        bool local = false;

        if (addr->sa_family == AF_INET &&
            (ntohl(((const struct sockaddr_in *)addr)->sin_addr.s_addr) >> 24) == 127)
                return true;
        if (addr->sa_family == AF_INET6 &&
            IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)addr)->sin6_addr))
                return true;
        if (getifaddrs(&list) < 0)
                return false;
        for (struct ifaddrs *i = list; i && !local; i = i->ifa_next)
                local = same_address(i->ifa_addr, addr);
        freeifaddrs(list);
        return local;
}

bool xp_apiproxy_admit_peer(const struct xp_apiproxy_admit *admit, const struct sockaddr *addr)
{
        const unsigned char *bytes;

        if (addr->sa_family == AF_INET)
                bytes = (const unsigned char *)&((const struct sockaddr_in *)addr)->sin_addr;
        else if (addr->sa_family == AF_INET6)
                bytes = ((const struct sockaddr_in6 *)addr)->sin6_addr.s6_addr;
        else
                return false;
        for (size_t i = 0; i < admit->n; i++)
                if (in_net(&admit->nets[i], addr->sa_family, bytes))
                        return true;
        return is_local(addr);
}
