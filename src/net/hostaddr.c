/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The address of the default route's interface (xpool/hostaddr.h). The route tables are read as
 * text rather than through rtnetlink: two small files, and the parser is testable on samples.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <inttypes.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xpool/hostaddr.h"

#define ROUTE_UP 0x1 /* RTF_UP */

/* One line's interface, destination, prefix (IPv6) or mask (IPv4), flags and metric. */
static int parse_route(const char *line, int ipv6, char iface[IF_NAMESIZE], unsigned *metric)
{
        char dest[33], mask[33];
        unsigned flags = 0;
        int n;

        if (ipv6) {
                unsigned plen;
                n = sscanf(line,
                           "%32s %x %*s %*s %*s %x %*s %*s %x %15s",
                           dest,
                           &plen,
                           metric,
                           &flags,
                           iface);
                if (n != 5 || plen != 0 || strspn(dest, "0") != strlen(dest))
                        return 0;
        } else {
                n = sscanf(
                    line, "%15s %32s %*s %x %*s %*s %u %32s", iface, dest, &flags, metric, mask);
                if (n != 5 || strcmp(dest, "00000000") != 0 || strcmp(mask, "00000000") != 0)
                        return 0;
        }
        return (flags & ROUTE_UP) && strcmp(iface, "lo") != 0;
}

int xp_hostaddr_default_interface(const char *routes, int ipv6, char *iface, size_t size)
{
        unsigned best = 0;
        int found = 0;

        for (const char *line = routes; line && *line;) {
                const char *end = strchr(line, '\n');
                char buf[256], name[IF_NAMESIZE] = "";
                size_t len = end ? (size_t)(end - line) : strlen(line);
                unsigned metric = 0;

                if (len < sizeof(buf)) {
                        memcpy(buf, line, len);
                        buf[len] = '\0';
                        if (parse_route(buf, ipv6, name, &metric) && (!found || metric < best) &&
                            strlen(name) < size) {
                                snprintf(iface, size, "%s", name);
                                best = metric;
                                found = 1;
                        }
                }
                line = end ? end + 1 : NULL;
        }
        return found ? 0 : -ENOENT;
}

static char *slurp(const char *path)
{
        FILE *f = fopen(path, "re");
        char *text = NULL;
        size_t len = 0;

        if (!f)
                return NULL;
        /* a route table of a few thousand lines at most: bounded by the kernel's own */
        text = calloc(1, 1 << 20);
        if (text)
                len = fread(text, 1, (1 << 20) - 1, f);
        fclose(f);
        if (text)
                text[len] = '\0';
        return text;
}

/* The first usable address of iface in family: not link-local (IPv6). */
static int interface_address(const char *iface, int family, char **ret)
{
        struct ifaddrs *list, *i;
        char text[INET6_ADDRSTRLEN];
        int r = -ENOENT;

        if (getifaddrs(&list) < 0)
                return -errno;
        for (i = list; i && r == -ENOENT; i = i->ifa_next) {
                const void *bytes;
                if (!i->ifa_addr || i->ifa_addr->sa_family != family || strcmp(i->ifa_name, iface))
                        continue;
                if (family == AF_INET6) {
                        const struct in6_addr *a = &((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr;
                        if (IN6_IS_ADDR_LINKLOCAL(a))
                                continue;
                        bytes = a;
                } else {
                        bytes = &((struct sockaddr_in *)i->ifa_addr)->sin_addr;
                }
                if (inet_ntop(family, bytes, text, sizeof(text)))
                        r = (*ret = strdup(text)) ? 0 : -ENOMEM;
        }
        freeifaddrs(list);
        return r;
}

int xp_hostaddr_default(char **ret)
{
        static const char *const tables[] = {"/proc/net/route", "/proc/net/ipv6_route"};
        int r = -ENOENT;

        for (int ipv6 = 0; ipv6 < 2 && r == -ENOENT; ipv6++) {
                char *routes = slurp(tables[ipv6]), iface[IF_NAMESIZE];
                if (routes &&
                    xp_hostaddr_default_interface(routes, ipv6, iface, sizeof(iface)) == 0)
                        r = interface_address(iface, ipv6 ? AF_INET6 : AF_INET, ret);
                free(routes);
        }
        return r;
}
