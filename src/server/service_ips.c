/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Services' cluster IP ranges (--service-cluster-ip-range: one CIDR, or an IPv4 and an IPv6
 * one in either order, the first the primary family, as kube-apiserver takes them), and the
 * allocation of a free address of one family: the one asked for when in the range and free,
 * else one at random. The primary range's first address is the `kubernetes` Service's.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "internal.h"
#include "xpool/doc.h"
#include "xpool/netcidr.h"
#include "xpool/store.h"
#include "xpool/strutil.h"

#define RANGES_MAX 2
#define RECENT_MAX 256 /* addresses handed out whose Service may not be stored yet */
#define RECENT_S   60

/*
 * One range. An IPv6 one is at most 2^20 addresses (/108, kube-apiserver's bitmap allocator's
 * limit), so that only an address's last 32 bits vary within a range of either family.
 */
struct ip_range {
        int family;             /* AF_INET, AF_INET6 */
        size_t len;             /* the address's bytes: 4, 16 */
        unsigned char base[16]; /* the network address */
        uint32_t size;          /* addresses in the range, network and last included */
        char text[INET6_ADDRSTRLEN + 5];
        struct {
                uint32_t off;
                time_t at;
        } recent[RECENT_MAX];
        size_t next_recent;
};

struct service_ips {
        pthread_mutex_t lock;
        struct ip_range ranges[RANGES_MAX]; /* the primary family first */
        size_t n;
};

static uint32_t low32(const unsigned char *addr, size_t len)
{
        return (uint32_t)addr[len - 4] << 24 | (uint32_t)addr[len - 3] << 16 |
               (uint32_t)addr[len - 2] << 8 | addr[len - 1];
}

static void set_low32(unsigned char *addr, size_t len, uint32_t value)
{
        for (size_t i = 0; i < 4; i++)
                addr[len - 1 - i] = (unsigned char)(value >> (8 * i));
}

static void format_ip(const struct ip_range *range, uint32_t off, char buf[static INET6_ADDRSTRLEN])
{
        unsigned char addr[16];

        memcpy(addr, range->base, range->len);
        set_low32(addr, range->len, low32(range->base, range->len) + off);
        inet_ntop(range->family, addr, buf, INET6_ADDRSTRLEN);
}

/* Host bits are allowed and cleared, as kube-apiserver takes 10.96.0.1/12 for 10.96.0.0/12. */
static int
parse_range(const char *all, const char *cidr, struct ip_range *range, struct xp_error *err)
{
        static const char expected[] = "expected an IPv4 one with a prefix between /8 and /30 "
                                       "(10.96.0.0/12) or an IPv6 one between /108 and /126 "
                                       "(fd00:10:96::/108)";
        struct xp_net_cidr net = {0};
        char text[INET6_ADDRSTRLEN];
        unsigned low, high;

        if (xp_net_cidr_parse(cidr, XP_NET_CIDR_HOST_BITS, &net, err) < 0)
                return xp_error_prefix(err,
                                       -EINVAL,
                                       "--service-cluster-ip-range '%s': '%s' is not a range: %s",
                                       all,
                                       cidr,
                                       expected);
        low = net.family == AF_INET6 ? 108 : 8;
        high = net.family == AF_INET6 ? 126 : 30;
        if (net.prefix < low || net.prefix > high)
                return xp_errorf(err,
                                 -EINVAL,
                                 "--service-cluster-ip-range '%s': '%s' is not a range: %s",
                                 all,
                                 cidr,
                                 expected);
        range->family = net.family;
        range->len = xp_net_cidr_len(&net);
        range->size = UINT32_C(1) << (8 * range->len - net.prefix);
        memcpy(range->base, net.addr, range->len);
        set_low32(range->base, range->len, low32(net.addr, range->len) & ~(range->size - 1));
        inet_ntop(range->family, range->base, text, sizeof(text));
        snprintf(range->text, sizeof(range->text), "%s/%u", text, net.prefix);
        return 0;
}

int service_ips_new(const char *ranges, struct service_ips **ret, struct xp_error *err)
{
        struct service_ips *ips = calloc(1, sizeof(*ips));
        char *copy, *cidr, *next;
        int r = 0;

        if (!ranges)
                ranges = "10.96.0.0/12";
        copy = strdup(ranges);
        if (!ips || !copy) {
                free(ips);
                free(copy);
                return -ENOMEM;
        }
        for (cidr = copy; r >= 0 && cidr; cidr = next) {
                next = strchr(cidr, ',');
                if (next)
                        *next++ = '\0';
                if (ips->n == RANGES_MAX)
                        r = xp_errorf(err,
                                      -EINVAL,
                                      "--service-cluster-ip-range '%s': at most two ranges, an "
                                      "IPv4 and an IPv6 one",
                                      ranges);
                else
                        r = parse_range(ranges, cidr, &ips->ranges[ips->n++], err);
        }
        if (r >= 0 && ips->n == 2 && ips->ranges[0].family == ips->ranges[1].family)
                r = xp_errorf(err,
                              -EINVAL,
                              "--service-cluster-ip-range '%s': two ranges must be of different "
                              "IP families (an IPv4 and an IPv6 one)",
                              ranges);
        free(copy);
        if (r < 0) {
                free(ips);
                return r;
        }
        pthread_mutex_init(&ips->lock, NULL);
        *ret = ips;
        return 0;
}

void service_ips_first(const struct service_ips *ips, char buf[static INET6_ADDRSTRLEN])
{
        format_ip(&ips->ranges[0], 1, buf);
}

void service_ips_free(struct service_ips *ips)
{
        if (!ips)
                return;
        pthread_mutex_destroy(&ips->lock);
        free(ips);
}

const char *service_ips_family(const struct service_ips *ips, size_t i)
{
        if (!ips)
                return i == 0 ? "IPv4" : NULL; /* no ranges: single-stack IPv4 */
        if (i >= ips->n)
                return NULL;
        return ips->ranges[i].family == AF_INET6 ? "IPv6" : "IPv4";
}

/* The range's offset of text, or 0 when it is no usable address of the range. */
static uint32_t offset_of(const struct ip_range *range, const char *text)
{
        unsigned char addr[16];
        uint32_t off;

        if (!text || inet_pton(range->family, text, addr) != 1 ||
            memcmp(addr, range->base, range->len - 4) != 0)
                return 0;
        off = low32(addr, range->len) - low32(range->base, range->len);
        return off > 0 && off < range->size - 1 ? off : 0;
}

static void mark(uint8_t *taken, uint32_t off)
{
        taken[off / 8] |= (uint8_t)(1u << (off % 8));
}

/* The offsets in use: the stored Services' (every cluster IP) and the ones handed out lately. */
static uint8_t *
taken_offsets(struct ip_range *range, struct xp_store *store, struct xp_error *err, int *r)
{
        uint8_t *taken = calloc(range->size / 8 + 1, 1);
        json_t *services = NULL, *s, *ip;
        time_t now = time(NULL);
        uint64_t version;
        size_t i, k;

        *r = taken ? xp_store_list(store, "services", NULL, &services, &version, err) : -ENOMEM;
        json_array_foreach(services, i, s)
        {
                mark(taken, offset_of(range, xp_json_str_at(s, "spec.clusterIP", NULL)));
                json_array_foreach(xp_json_at(s, "spec.clusterIPs"), k, ip)
                    mark(taken, offset_of(range, json_string_value(ip)));
        }
        json_decref(services);
        for (i = 0; taken && i < RECENT_MAX; i++)
                if (range->recent[i].off && now - range->recent[i].at < RECENT_S)
                        mark(taken, range->recent[i].off);
        if (*r < 0) {
                free(taken);
                return NULL;
        }
        return taken;
}

/* A free offset of range, or want's; 0 with *ret_off, else -EINVAL, -ENOSPC with err. */
static int pick(struct ip_range *range,
                const uint8_t *taken,
                const char *want,
                uint32_t *ret_off,
                struct xp_error *err)
{
        uint32_t off, start = 0, span = range->size - 3; /* the first, the network, the last */

        if (want) {
                off = offset_of(range, want);
                if (taken[off / 8] & (1u << (off % 8)))
                        return xp_errorf(
                            err,
                            -EINVAL,
                            "failed to allocate IP %s: provided IP is already allocated",
                            want);
                *ret_off = off;
                return 0;
        }
        /* anywhere in the range, as Kubernetes' allocator: no order to guess */
        if (getrandom(&start, sizeof(start), GRND_NONBLOCK) != sizeof(start))
                start = (uint32_t)time(NULL);
        start %= span;
        for (uint32_t i = 0; i < span; i++) {
                off = 2 + (start + i) % span;
                if (!(taken[off / 8] & (1u << (off % 8)))) {
                        *ret_off = off;
                        return 0;
                }
        }
        return xp_errorf(err, -ENOSPC, "range is full");
}

int service_ips_allocate(struct service_ips *ips,
                         struct xp_store *store,
                         const char *family,
                         const char *want,
                         char buf[static INET6_ADDRSTRLEN],
                         struct xp_error *err)
{
        struct ip_range *range = NULL;
        uint8_t *taken;
        uint32_t off = 0;
        int r;

        for (size_t i = 0; i < ips->n; i++)
                if (xp_streq0(service_ips_family(ips, i), family))
                        range = &ips->ranges[i];
        if (!range)
                return xp_errorf(err, -EINVAL, "%s is not configured on this cluster", family);
        if (want && !offset_of(range, want))
                return xp_errorf(
                    err,
                    -EINVAL,
                    "failed to allocate IP %s: provided IP (%s) is not in the valid range. The range of valid IPs is %s",
                    want,
                    want,
                    range->text);
        pthread_mutex_lock(&ips->lock);
        taken = taken_offsets(range, store, err, &r);
        if (taken)
                r = pick(range, taken, want, &off, err);
        if (r >= 0) {
                range->recent[range->next_recent].off = off;
                range->recent[range->next_recent].at = time(NULL);
                range->next_recent = (range->next_recent + 1) % RECENT_MAX;
                format_ip(range, off, buf);
        }
        pthread_mutex_unlock(&ips->lock);
        free(taken);
        return r;
}
