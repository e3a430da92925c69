/* SPDX-License-Identifier: Apache-2.0 */
/* The listening socket of an HTTP endpoint (door.h): the API server's and the agent's logs'. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "xpool/http_door.h"
#include "xpool/macro.h"

/* Connections wait here while the door accepts a burst of them, rather than in SYN retries. */
#define LISTEN_BACKLOG 512

int xp_http_listen(
    const char *host, uint16_t port, bool *ret_ipv6, uint16_t *ret_port, struct xp_error *err)
{
        struct sockaddr_storage ss = {0};
        socklen_t sslen;
        bool ipv6 = false;
        int one = 1;
        _cleanup_close_ int fd = -1;

        if (inet_pton(AF_INET, host, &((struct sockaddr_in *)&ss)->sin_addr) == 1) {
                struct sockaddr_in *sin = (struct sockaddr_in *)&ss;

                sin->sin_family = AF_INET;
                sin->sin_port = htons(port);
                sslen = sizeof *sin;
        } else if (inet_pton(AF_INET6, host, &((struct sockaddr_in6 *)&ss)->sin6_addr) == 1) {
                struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;

                sin6->sin6_family = AF_INET6;
                sin6->sin6_port = htons(port);
                sslen = sizeof *sin6;
                ipv6 = true;
        } else {
                return xp_errorf(
                    err,
                    -EINVAL,
                    "'%s' is not an IPv4 or IPv6 address (host names are not resolved)",
                    host);
        }

        fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return xp_errorf(err, -errno, "cannot create a socket: %m");
        if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0)
                return xp_errorf(err, -errno, "cannot set SO_REUSEADDR: %m");
        if (bind(fd, (struct sockaddr *)&ss, sslen) < 0)
                return xp_errorf(err,
                                 -errno,
                                 "cannot listen on %s%s%s:%u: %m",
                                 ipv6 ? "[" : "",
                                 host,
                                 ipv6 ? "]" : "",
                                 port);
        if (listen(fd, LISTEN_BACKLOG) < 0)
                return xp_errorf(err, -errno, "cannot listen on %s:%u: %m", host, port);
        sslen = sizeof ss;
        if (getsockname(fd, (struct sockaddr *)&ss, &sslen) < 0)
                return xp_errorf(err, -errno, "cannot read the bound address: %m");
        *ret_port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                                   : ((struct sockaddr_in *)&ss)->sin_port);
        *ret_ipv6 = ipv6;
        return TAKE_FD(fd);
}
