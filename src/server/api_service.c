/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Services' IP families and cluster IPs, as kube-apiserver's initIPFamilyFields and allocators
 * keep them on a cluster of one or two families (--service-cluster-ip-range, service_ips.c):
 *
 *   - a new Service (not ExternalName) gets the policy SingleStack unless it names one
 *     (RequireDualStack for a headless Service without selector), the families of the cluster
 *     IPs it asked for, else the cluster's primary one, and the other family too when it
 *     requires dual-stack, or prefers it on a dual-stack cluster;
 *   - what the cluster cannot give is refused in kube-apiserver's words (RequireDualStack on a
 *     single-stack cluster, a family it lacks, SingleStack with two families); a headless Service
 *     without selector allocates nothing and may have any families;
 *   - a non-headless one gets one cluster IP per family, the one it asked for when in the range
 *     and free, else a free one;
 *   - an update that leaves the cluster IPs, the policy or the families out keeps the stored
 *     ones (kube-apiserver's patchAllocatedValues and initIPFamilyFields on update).
 *
 * Nothing routes traffic to a cluster IP (docs/server.md, "Services").
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "xpool/doc.h"
#include "xpool/registry.h"
#include "xpool/strutil.h"

static bool headless_selectorless(const json_t *service)
{
        return xp_streq0(xp_json_str_at(service, "spec.clusterIP", ""), "None") &&
               json_object_size(xp_json_object_at(service, "spec.selector")) == 0;
}

static const char *family_of(const char *ip)
{
        unsigned char addr[16];

        if (ip && inet_pton(AF_INET, ip, addr) == 1)
                return "IPv4";
        if (ip && inet_pton(AF_INET6, ip, addr) == 1)
                return "IPv6";
        return NULL;
}

static bool configured(const struct service_ips *ips, const char *family)
{
        for (size_t i = 0; service_ips_family(ips, i); i++)
                if (xp_streq0(service_ips_family(ips, i), family))
                        return true;
        return false;
}

/* The cluster IPs asked for: spec.clusterIPs, else spec.clusterIP alone. Borrowed or NULL. */
static const json_t *wanted_ips(const json_t *service)
{
        const json_t *ips = xp_json_at(service, "spec.clusterIPs");

        return json_array_size(ips) > 0 ? ips : NULL;
}

static const char *wanted_ip(const json_t *service, size_t i)
{
        const json_t *ips = wanted_ips(service);
        const char *one = xp_json_str_at(service, "spec.clusterIP", NULL);

        if (ips)
                return json_string_value(json_array_get(ips, i));
        return i == 0 && one && *one ? one : NULL;
}

/* initIPFamilyFields' defaults: only what the Service left out is set. -ENOMEM. */
static int init_families(const struct service_ips *ips, json_t *service)
{
        bool open = headless_selectorless(service);
        json_t *families = (json_t *)xp_json_at(service, "spec.ipFamilies");
        const char *policy, *first, *ip;
        int r = 0;

        if (!xp_json_at(service, "spec.ipFamilyPolicy"))
                r = xp_json_set_str_at(
                    service, "spec.ipFamilyPolicy", open ? "RequireDualStack" : "SingleStack");
        if (r >= 0 && !json_is_array(families)) {
                r = xp_json_set_at(service, "spec.ipFamilies", json_array());
                families = (json_t *)xp_json_at(service, "spec.ipFamilies");
        }
        /* the families of the addresses asked for, then the cluster's primary one */
        for (size_t i = json_array_size(families); r >= 0 && (ip = wanted_ip(service, i)); i++)
                if (family_of(ip))
                        r = json_array_append_new(families, json_string(family_of(ip)));
        if (r >= 0 && json_array_size(families) == 0)
                r = json_array_append_new(families, json_string(service_ips_family(ips, 0)));
        policy = xp_json_str_at(service, "spec.ipFamilyPolicy", "");
        first = json_string_value(json_array_get(families, 0));
        if (r >= 0 && json_array_size(families) == 1 &&
            (xp_streq0(policy, "RequireDualStack") ||
             (xp_streq0(policy, "PreferDualStack") && (open || service_ips_family(ips, 1)))) &&
            (xp_streq0(first, "IPv4") || xp_streq0(first, "IPv6")))
                r = json_array_append_new(families,
                                          json_string(xp_streq0(first, "IPv4") ? "IPv6" : "IPv4"));
        return r < 0 ? -ENOMEM : 0;
}

/* A cluster IP asked for of another family than the one at its index. */
static bool family_mismatch(const json_t *service, char *problem, size_t size)
{
        const json_t *families = xp_json_at(service, "spec.ipFamilies");
        const char *ip, *family;

        for (size_t i = 0; (ip = wanted_ip(service, i)); i++) {
                family = json_string_value(json_array_get(families, i));
                if (!family || xp_streq0(ip, "None") || xp_streq0(family_of(ip), family))
                        continue;
                snprintf(
                    problem,
                    size,
                    "spec.clusterIPs[%zu]: Invalid value: \"%s\": expected an %s value as indicated by `ipFamilies[%zu]`",
                    i,
                    ip,
                    family,
                    i);
                return true;
        }
        return false;
}

int service_families_check(const struct service_ips *ips, const json_t *service, struct reply *ret)
{
        const json_t *families = xp_json_at(service, "spec.ipFamilies");
        const char *name = xp_json_str_at(service, "metadata.name", "");
        const char *policy = xp_json_str_at(service, "spec.ipFamilyPolicy", "");
        char problem[256] = "";

        if (xp_streq0(xp_json_str_at(service, "spec.type", ""), "ExternalName"))
                return 1;
        if (xp_streq0(policy, "SingleStack") && json_array_size(families) == 2)
                snprintf(problem,
                         sizeof(problem),
                         "spec.ipFamilyPolicy: Invalid value: \"SingleStack\": must be "
                         "'RequireDualStack' or 'PreferDualStack' when multiple IP families are "
                         "specified");
        else if (family_mismatch(service, problem, sizeof(problem)))
                ;
        else if (headless_selectorless(service))
                return 1; /* it allocates nothing: any families */
        else if (xp_streq0(policy, "RequireDualStack") && !service_ips_family(ips, 1))
                snprintf(problem,
                         sizeof(problem),
                         "spec.ipFamilyPolicy: Invalid value: \"RequireDualStack\": this cluster "
                         "is not configured for dual-stack services");
        for (size_t i = 0; !*problem && i < json_array_size(families); i++)
                if (!configured(ips, json_string_value(json_array_get(families, i))))
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

/* The cluster IPs asked for as Go's %#v prints a []string, for the allocation's message. */
static void wanted_list(const json_t *service, char *buf, size_t size)
{
        size_t len = 0;
        const char *ip;

        buf[0] = '\0';
        for (size_t i = 0; (ip = wanted_ip(service, i)) && len < size; i++) {
                int n = snprintf(buf + len, size - len, "%s\"%s\"", i ? ", " : "", ip);

                len += n > 0 ? (size_t)n : 0;
        }
}

/* One cluster IP per family, into spec.clusterIPs (and spec.clusterIP the first). */
static int allocate_all(const struct request *req, json_t *service, struct reply *ret)
{
        const json_t *families = xp_json_at(service, "spec.ipFamilies");
        json_t *allocated = json_array();
        struct xp_error err = {0};
        int r = allocated ? 0 : -ENOMEM;

        for (size_t i = 0; r >= 0 && i < json_array_size(families); i++) {
                const char *want = wanted_ip(service, i);
                char ip[INET6_ADDRSTRLEN];

                r = service_ips_allocate(req->api->service_ips,
                                         req->api->store,
                                         json_string_value(json_array_get(families, i)),
                                         want && *want ? want : NULL,
                                         ip,
                                         &err);
                if (r >= 0)
                        r = json_array_append_new(allocated, json_string(ip));
        }
        if (r == -EINVAL || r == -ENOSPC) {
                char problem[512], wanted[256];

                json_decref(allocated);
                wanted_list(service, wanted, sizeof(wanted));
                snprintf(problem,
                         sizeof(problem),
                         "spec.clusterIPs: Invalid value: []string{%s}: %s",
                         wanted,
                         xp_error_message(&err));
                return reply_invalid(
                    ret, &xp_kind_service, xp_json_str_at(service, "metadata.name", ""), problem);
        }
        if (r < 0) {
                json_decref(allocated);
                return r == -ENOMEM ? r : reply_store_error(ret, r, &xp_kind_service, NULL, &err);
        }
        r = xp_json_set_str_at(
            service, "spec.clusterIP", json_string_value(json_array_get(allocated, 0)));
        if (r >= 0)
                r = xp_json_set_at(service, "spec.clusterIPs", allocated);
        else
                json_decref(allocated);
        return r < 0 ? -ENOMEM : 1;
}

int service_admit(const struct request *req, json_t *service, struct reply *ret)
{
        const char *type = xp_json_str_at(service, "spec.type", "ClusterIP");
        int r;

        if (xp_streq0(type, "ExternalName"))
                return service_families_check(req->api->service_ips, service, ret);
        r = init_families(req->api->service_ips, service);
        if (r < 0)
                return r;
        r = service_families_check(req->api->service_ips, service, ret);
        if (r <= 0 || !req->api->service_ips)
                return r;
        if (xp_streq0(wanted_ip(service, 0), "None")) {
                r = xp_json_set_str_at(service, "spec.clusterIP", "None");
                if (r >= 0)
                        r = xp_json_set_at(service, "spec.clusterIPs", json_pack("[s]", "None"));
                return r < 0 ? r : 1;
        }
        return allocate_all(req, service, ret);
}

/* A member of spec copied from stored when update left it out. -ENOMEM. */
static int keep_member(json_t *update, const json_t *stored, const char *key)
{
        json_t *spec = json_object_get(update, "spec");
        json_t *was = json_object_get(json_object_get(stored, "spec"), key);

        if (!json_is_object(spec) || json_object_get(spec, key) || !was)
                return 0;
        return json_object_set_new(spec, key, json_deep_copy(was)) < 0 ? -ENOMEM : 0;
}

/*
 * A policy change that leaves the families and cluster IPs as stored (left out, or sent
 * unchanged), as kube-apiserver's initIPFamilyFields on update: SingleStack keeps the primary
 * family and its address only; RequireDualStack, or PreferDualStack on a dual-stack cluster, adds
 * the other family and an address of it. 1, 0 with ret filled (422), -ENOMEM.
 */
static int
change_stack(const struct request *req, const json_t *stored, json_t *update, struct reply *ret)
{
        const char *policy = xp_json_str_at(update, "spec.ipFamilyPolicy", "");
        json_t *families = (json_t *)xp_json_at(update, "spec.ipFamilies");
        json_t *ips = (json_t *)xp_json_at(update, "spec.clusterIPs");
        const char *first = json_string_value(json_array_get(families, 0));
        bool dual =
            xp_streq0(policy, "RequireDualStack") ||
            (xp_streq0(policy, "PreferDualStack") && service_ips_family(req->api->service_ips, 1));
        struct xp_error err = {0};
        char ip[INET6_ADDRSTRLEN];
        int r;

        if (xp_streq0(policy, xp_json_str_at(stored, "spec.ipFamilyPolicy", "")) ||
            !json_equal(families, xp_json_at(stored, "spec.ipFamilies")) ||
            !json_equal(ips, xp_json_at(stored, "spec.clusterIPs")) ||
            json_array_size(ips) != json_array_size(families) ||
            xp_streq0(json_string_value(json_array_get(ips, 0)), "None"))
                return 1;
        if (xp_streq0(policy, "SingleStack") && json_array_size(families) == 2)
                return json_array_remove(families, 1) < 0 || json_array_remove(ips, 1) < 0 ? -ENOMEM
                                                                                           : 1;
        if (!dual || json_array_size(families) != 1 || !first)
                return 1;
        r = json_array_append_new(families,
                                  json_string(xp_streq0(first, "IPv4") ? "IPv6" : "IPv4"));
        if (r < 0)
                return -ENOMEM;
        r = service_families_check(req->api->service_ips, update, ret);
        if (r <= 0)
                return r;
        r = service_ips_allocate(req->api->service_ips,
                                 req->api->store,
                                 json_string_value(json_array_get(families, 1)),
                                 NULL,
                                 ip,
                                 &err);
        if (r == -EINVAL || r == -ENOSPC)
                return reply_invalid(ret, &xp_kind_service, req->name, xp_error_message(&err));
        if (r < 0)
                return r == -ENOMEM ? r : reply_store_error(ret, r, &xp_kind_service, NULL, &err);
        return json_array_append_new(ips, json_string(ip)) < 0 ? -ENOMEM : 1;
}

int service_keep_allocated(const struct request *req,
                           const json_t *stored,
                           const json_t *candidate,
                           json_t **ret_update,
                           struct reply *ret)
{
        static const char *const kept[] = {
            "clusterIP", "clusterIPs", "ipFamilyPolicy", "ipFamilies"};
        json_t *update = json_deep_copy(candidate);
        int r = update ? 1 : -ENOMEM;

        /* an ExternalName Service (before or after) has none of them */
        if (update && !xp_streq0(xp_json_str_at(stored, "spec.type", ""), "ExternalName") &&
            !xp_streq0(xp_json_str_at(update, "spec.type", ""), "ExternalName")) {
                for (size_t i = 0; r >= 0 && i < sizeof(kept) / sizeof(kept[0]); i++)
                        r = keep_member(update, stored, kept[i]) < 0 ? -ENOMEM : 1;
                if (r > 0)
                        r = change_stack(req, stored, update, ret);
        }
        if (r <= 0) {
                json_decref(update);
                return r;
        }
        *ret_update = update;
        return 1;
}
