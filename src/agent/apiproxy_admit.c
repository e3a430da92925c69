/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The forwarder's allow-list (apiproxy_admit.h). "An address of this host's" is asked of the
 * kernel itself: a socket binds to an address only when it is local (without IP_FREEBIND), which
 * follows addresses as they come and go; a packet from outside that claims a local source is
 * dropped as a martian before it reaches a socket.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "apiproxy_admit.h"

static int parse_net(const char *text, struct xp_apiproxy_net *net)
{
        const char *slash = strchr(text, '/');
        char ip[INET6_ADDRSTRLEN], *end;
        unsigned long prefix;

        if (!slash || (size_t)(slash - text) >= sizeof(ip) || slash[1] < '0' || slash[1] > '9')
                return -EINVAL;
        memcpy(ip, text, (size_t)(slash - text));
        ip[slash - text] = '\0';
        net->family = strchr(ip, ':') ? AF_INET6 : AF_INET;
        if (inet_pton(net->family, ip, net->addr) != 1)
                return -EINVAL;
        errno = 0;
        prefix = strtoul(slash + 1, &end, 10);
        if (errno || *end || prefix > (net->family == AF_INET6 ? 128u : 32u))
                return -EINVAL;
        net->prefix = (unsigned)prefix;
        return 0;
}

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
                if (parse_net(cidrs[i], &admit->nets[admit->n]) < 0)
                        return xp_errorf(err,
                                         -EINVAL,
                                         "the pod network's subnet '%s' is not ADDRESS/PREFIX",
                                         cidrs[i]);
                admit->n++;
        }
        return 0;
}

static bool in_net(const struct xp_apiproxy_net *net, int family, const unsigned char *addr)
{
        unsigned whole = net->prefix / 8, rest = net->prefix % 8;

        if (net->family != family || memcmp(net->addr, addr, whole) != 0)
                return false;
        return rest == 0 || ((net->addr[whole] ^ addr[whole]) & (0xff00 >> rest) & 0xff) == 0;
}

static bool is_local(const struct sockaddr *addr)
{
        struct sockaddr_storage ss = {0};
        socklen_t len =
            addr->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
        int fd = socket(addr->sa_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        bool local;

        if (fd < 0)
                return false;
        memcpy(&ss, addr, len);
        if (ss.ss_family == AF_INET6)
                ((struct sockaddr_in6 *)&ss)->sin6_port = 0;
        else
                ((struct sockaddr_in *)&ss)->sin_port = 0;
        local = bind(fd, (struct sockaddr *)&ss, len) == 0;
        close(fd);
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
