/* SPDX-License-Identifier: Apache-2.0 */
/*
 * An address of the node on lo (include/xpool/localaddr.h): one RTM_NEWADDR or RTM_DELADDR
 * request on a route netlink socket of its own, and its acknowledgement.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "xpool/localaddr.h"
#include "xpool/macro.h"

struct addr_request {
        struct nlmsghdr nh;
        struct ifaddrmsg ifa;
        char attrs[2 * RTA_SPACE(16)];
};

static void put_attr(struct addr_request *req, unsigned short type, const void *data, size_t len)
{
        struct rtattr *rta = (struct rtattr *)((char *)req + NLMSG_ALIGN(req->nh.nlmsg_len));

        rta->rta_type = type;
        rta->rta_len = (unsigned short)RTA_LENGTH(len);
        memcpy(RTA_DATA(rta), data, len);
        req->nh.nlmsg_len = NLMSG_ALIGN(req->nh.nlmsg_len) + RTA_SPACE(len);
}

/* Sends req and returns the kernel's answer: 0 or -errno. */
static int talk(struct addr_request *req)
{
        _cleanup_close_ int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
        struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
        char answer[512];
        ssize_t n;

        if (fd < 0)
                return -errno;
        if (sendto(fd, req, req->nh.nlmsg_len, 0, (struct sockaddr *)&kernel, sizeof(kernel)) < 0)
                return -errno;
        /* one acknowledgement: an NLMSG_ERROR whose error is 0 on success */
        do
                n = recv(fd, answer, sizeof(answer), 0);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return -errno;
        for (struct nlmsghdr *h = (struct nlmsghdr *)answer; NLMSG_OK(h, (size_t)n);
             h = NLMSG_NEXT(h, n))
                if (h->nlmsg_type == NLMSG_ERROR &&
                    h->nlmsg_len >= NLMSG_LENGTH(sizeof(struct nlmsgerr)))
                        return ((struct nlmsgerr *)NLMSG_DATA(h))->error;
        return -EPROTO;
}

struct address {
        int family;
        size_t len;
        unsigned char bytes[16];
};

static int parse(const char *ip, struct address *a, struct xp_error *err)
{
        a->family = strchr(ip, ':') ? AF_INET6 : AF_INET;
        a->len = a->family == AF_INET6 ? 16 : 4;
        if (inet_pton(a->family, ip, a->bytes) != 1)
                return xp_errorf(err, -EINVAL, "'%s' is not an IP address", ip);
        return 0;
}

/* The kernel's answer to the request for a on lo: 0 or -errno. */
static int request(const struct address *a, unsigned short type, unsigned short flags)
{
        struct addr_request req = {0};
        unsigned lo = if_nametoindex("lo");

        if (lo == 0)
                return -ENODEV;
        req.nh.nlmsg_len = NLMSG_LENGTH(sizeof(req.ifa));
        req.nh.nlmsg_type = type;
        req.nh.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | flags;
        req.ifa.ifa_family = (unsigned char)a->family;
        req.ifa.ifa_prefixlen = (unsigned char)(a->len * 8);
        req.ifa.ifa_scope = RT_SCOPE_UNIVERSE;
        req.ifa.ifa_index = lo;
        put_attr(&req, IFA_LOCAL, a->bytes, a->len);
        put_attr(&req, IFA_ADDRESS, a->bytes, a->len);
        return talk(&req);
}

int xp_localaddr_add(const char *ip, bool *added, struct xp_error *err)
{
        struct address a;
        int r;

        *added = false;
        r = parse(ip, &a, err);
        if (r < 0)
                return r;
        r = request(&a, RTM_NEWADDR, NLM_F_CREATE | NLM_F_EXCL);
        *added = r == 0;
        if (r == 0 || r == -EEXIST)
                return 0;
        return xp_errorf(err, r, "cannot add the address %s to lo: %s", ip, strerror(-r));
}

int xp_localaddr_del(const char *ip, struct xp_error *err)
{
        struct address a;
        int r = parse(ip, &a, err);

        if (r < 0)
                return r;
        r = request(&a, RTM_DELADDR, 0);
        /* EADDRNOTAVAIL: not there (any more) */
        if (r == 0 || r == -EADDRNOTAVAIL)
                return 0;
        return xp_errorf(err, r, "cannot remove the address %s from lo: %s", ip, strerror(-r));
}
