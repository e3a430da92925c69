/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Services' cluster IPs and the `kubernetes` Service, as kube-apiserver keeps them:
 *
 *   - a new Service (not ExternalName, not headless) gets spec.clusterIP and spec.clusterIPs
 *     from the server's range (--service-cluster-ip-range, default 10.96.0.0/12): the one it
 *     asked for when that is in the range and free, else a free one at random; the range's first
 *     address is the `kubernetes` Service's;
 *   - at start the server writes the `kubernetes` Service in `default` (port 443 "https" to its
 *     own port), its Endpoints and its EndpointSlice pointing at its own address, and sets them
 *     right when they differ (a new port after a restart), as kube-apiserver's
 *     EndpointReconciler does. `kubectl cluster-info` reads them;
 *   - the cluster is single-stack IPv4: a Service that requires dual-stack or asks for IPv6 is
 *     refused, at create and update, in the words of kube-apiserver's initIPFamilyFields (the
 *     headless Service without selector excepted: it allocates nothing), as is SingleStack
 *     with two families.
 *
 * Nothing routes traffic to a cluster IP (docs/server.md, "Services").
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
#include "xpool/registry.h"
#include "xpool/strutil.h"

#define RECENT_MAX 256 /* addresses handed out whose Service may not be stored yet */
#define RECENT_S   60

struct service_ips {
        pthread_mutex_t lock;
        uint32_t base; /* the network address, host order */
        uint32_t size; /* addresses in the range, network and broadcast included */
        char range[INET_ADDRSTRLEN + 4];
        struct {
                uint32_t ip;
                time_t at;
        } recent[RECENT_MAX];
        size_t next_recent;
};

static void format_ip(uint32_t ip, char buf[static INET_ADDRSTRLEN])
{
        struct in_addr addr = {.s_addr = htonl(ip)};

        inet_ntop(AF_INET, &addr, buf, INET_ADDRSTRLEN);
}

int service_ips_new(const char *range, struct service_ips **ret, struct xp_error *err)
{
        char text[INET_ADDRSTRLEN + 4], *slash;
        struct in_addr addr;
        struct service_ips *ips;
        long prefix;
        char *end;

        if (!range)
                range = "10.96.0.0/12";
        snprintf(text, sizeof(text), "%s", range);
        slash = strchr(text, '/');
        if (slash)
                *slash = '\0';
        prefix = slash ? strtol(slash + 1, &end, 10) : -1;
        if (!slash || *end || prefix < 8 || prefix > 30 || inet_pton(AF_INET, text, &addr) != 1)
                return xp_errorf(err,
                                 -EINVAL,
                                 "--service-cluster-ip-range '%s': expected an IPv4 range "
                                 "with a prefix between /8 and /30, e.g. 10.96.0.0/12",
                                 range);
        ips = calloc(1, sizeof(*ips));
        if (!ips)
                return -ENOMEM;
        pthread_mutex_init(&ips->lock, NULL);
        ips->size = UINT32_C(1) << (32 - prefix);
        ips->base = ntohl(addr.s_addr) & ~(ips->size - 1);
        addr.s_addr = htonl(ips->base);
        inet_ntop(AF_INET, &addr, text, sizeof(text));
        snprintf(ips->range, sizeof(ips->range), "%s/%ld", text, prefix);
        *ret = ips;
        return 0;
}

void service_ips_first(const struct service_ips *ips, char buf[static INET_ADDRSTRLEN])
{
        format_ip(ips->base + 1, buf);
}

void service_ips_free(struct service_ips *ips)
{
        if (!ips)
                return;
        pthread_mutex_destroy(&ips->lock);
        free(ips);
}

/* The range's offset of text, or 0 when it is no usable address of the range. */
static uint32_t offset_of(const struct service_ips *ips, const char *text)
{
        struct in_addr addr;
        uint32_t off;

        if (!text || inet_pton(AF_INET, text, &addr) != 1)
                return 0;
        off = ntohl(addr.s_addr) - ips->base;
        return off > 0 && off < ips->size - 1 ? off : 0;
}

/* The offsets in use: the stored Services' and the ones handed out lately. New bitmap. */
static uint8_t *
taken_offsets(struct service_ips *ips, struct xp_store *store, struct xp_error *err, int *r)
{
        uint8_t *taken = calloc(ips->size / 8 + 1, 1);
        json_t *services = NULL, *s;
        time_t now = time(NULL);
        uint64_t version;
        size_t i;

        *r = taken ? xp_store_list(store, "services", NULL, &services, &version, err) : -ENOMEM;
        json_array_foreach(services, i, s)
        {
                uint32_t off = offset_of(ips, xp_json_str_at(s, "spec.clusterIP", NULL));

                taken[off / 8] |= (uint8_t)(1u << (off % 8));
        }
        json_decref(services);
        for (i = 0; taken && i < RECENT_MAX; i++)
                if (ips->recent[i].ip && now - ips->recent[i].at < RECENT_S)
                        taken[ips->recent[i].ip / 8] |= (uint8_t)(1u << (ips->recent[i].ip % 8));
        if (*r < 0) {
                free(taken);
                return NULL;
        }
        return taken;
}

/*
 * A cluster IP for a new Service: want (NULL: any) when it is in the range and free. 0 with
 * buf, -EINVAL (err says why, in kube-apiserver's words), -ENOSPC, or the store's errors.
 */
static int allocate(struct service_ips *ips,
                    struct xp_store *store,
                    const char *want,
                    char buf[static INET_ADDRSTRLEN],
                    struct xp_error *err)
{
        uint32_t off = 0, span = ips->size - 3; /* the kubernetes Service's first, no broadcast */
        uint8_t *taken;
        int r;

        if (want && !offset_of(ips, want))
                return xp_errorf(
                    err,
                    -EINVAL,
                    "failed to allocate IP %s: provided IP (%s) is not in the valid range. The range of valid IPs is %s",
                    want,
                    want,
                    ips->range);
        pthread_mutex_lock(&ips->lock);
        taken = taken_offsets(ips, store, err, &r);
        if (taken && want) {
                off = offset_of(ips, want);
                if (taken[off / 8] & (1u << (off % 8)))
                        r = xp_errorf(err,
                                      -EINVAL,
                                      "failed to allocate IP %s: provided IP is already allocated",
                                      want);
        } else if (taken) {
                uint32_t start = 0;

                /* anywhere in the range, as Kubernetes' allocator: no order to guess */
                if (getrandom(&start, sizeof(start), GRND_NONBLOCK) != sizeof(start))
                        start = (uint32_t)time(NULL);
                start %= span;

                r = xp_errorf(err, -ENOSPC, "range is full");
                for (uint32_t i = 0; i < span; i++) {
                        off = 2 + (start + i) % span;
                        if (!(taken[off / 8] & (1u << (off % 8)))) {
                                r = 0;
                                break;
                        }
                }
        }
        if (r >= 0) {
                ips->recent[ips->next_recent].ip = off;
                ips->recent[ips->next_recent].at = time(NULL);
                ips->next_recent = (ips->next_recent + 1) % RECENT_MAX;
                format_ip(ips->base + off, buf);
        }
        pthread_mutex_unlock(&ips->lock);
        free(taken);
        return r;
}

int service_families_check(const json_t *service, struct reply *ret)
{
        const json_t *families = xp_json_at(service, "spec.ipFamilies");
        const char *name = xp_json_str_at(service, "metadata.name", "");
        char problem[256] = "";

        if (xp_streq0(xp_json_str_at(service, "spec.type", ""), "ExternalName"))
                return 1;
        if (xp_streq0(xp_json_str_at(service, "spec.ipFamilyPolicy", ""), "SingleStack") &&
            json_array_size(families) == 2)
                snprintf(problem,
                         sizeof(problem),
                         "spec.ipFamilyPolicy: Invalid value: \"SingleStack\": must be "
                         "'RequireDualStack' or 'PreferDualStack' when multiple IP families are "
                         "specified");
        else if (xp_streq0(xp_json_str_at(service, "spec.clusterIP", ""), "None") &&
                 json_object_size(xp_json_object_at(service, "spec.selector")) == 0)
                return 1; /* it allocates nothing: any families */
        else if (xp_streq0(xp_json_str_at(service, "spec.ipFamilyPolicy", ""), "RequireDualStack"))
                snprintf(
                    problem,
                    sizeof(problem),
                    "spec.ipFamilyPolicy: Invalid value: \"RequireDualStack\": this cluster is "
                    "not configured for dual-stack services");
        for (size_t i = 0; !*problem && i < json_array_size(families); i++)
                if (!xp_streq0(json_string_value(json_array_get(families, i)), "IPv4"))
                        snprintf(problem,
                                 sizeof(problem),
                                 "spec.ipFamilies[%zu]: Invalid value: \"%s\": not configured on "
                                 "this cluster",
                                 i,
                                 json_string_value(json_array_get(families, i)));
        if (!*problem)
                return 1;
        return reply_invalid(ret, &xp_kind_service, name, problem);
}

int service_admit(const struct request *req, json_t *service, struct reply *ret)
{
        const char *type = xp_json_str_at(service, "spec.type", "ClusterIP");
        const char *want = xp_json_str_at(service, "spec.clusterIP", NULL);
        struct xp_error err = {0};
        char ip[INET_ADDRSTRLEN];
        int r;

        if (!want || !*want)
                want = json_string_value(json_array_get(xp_json_at(service, "spec.clusterIPs"), 0));
        r = service_families_check(service, ret);
        if (r <= 0)
                return r;
        if (xp_streq0(type, "ExternalName") || !req->api->service_ips)
                return 1;
        if (xp_streq0(want, "None")) {
                r = xp_json_set_str_at(service, "spec.clusterIP", "None");
                if (r >= 0)
                        r = xp_json_set_at(service, "spec.clusterIPs", json_pack("[s]", "None"));
                return r < 0 ? r : 1;
        }
        r = allocate(req->api->service_ips, req->api->store, want && *want ? want : NULL, ip, &err);
        if (r == -EINVAL || r == -ENOSPC) {
                char problem[512];

                snprintf(problem,
                         sizeof(problem),
                         "spec.clusterIPs: Invalid value: []string{\"%s\"}: %s",
                         want ? want : "",
                         xp_error_message(&err));
                return reply_invalid(
                    ret, &xp_kind_service, xp_json_str_at(service, "metadata.name", ""), problem);
        }
        if (r < 0)
                return r == -ENOMEM ? r : reply_store_error(ret, r, &xp_kind_service, NULL, &err);
        r = xp_json_set_str_at(service, "spec.clusterIP", ip);
        if (r >= 0)
                r = xp_json_set_at(service, "spec.clusterIPs", json_pack("[s]", ip));
        return r < 0 ? r : 1;
}
