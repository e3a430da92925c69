/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What a Service's pods make (xpool/endpoints.h), by the rules of kube-controller-manager's
 * endpoints and endpointslice controllers:
 *
 *   - a pod counts when it has an IP, is not terminal for its restart policy (Never: not
 *     Succeeded or Failed; OnFailure: not Succeeded), and, for Endpoints, is not terminating
 *     (unless the Service publishes not-ready addresses);
 *   - each Service port resolves on the pod to a number: targetPort as a number, or the
 *     containerPort of the container port named so with the same protocol (no such port: the
 *     pod is not in that port);
 *   - pods are grouped by the ports they resolve (Endpoints' subsets, one EndpointSlice each);
 *   - slices are made for each address family of the Service (spec.ipFamilies; without them
 *     the cluster IP's, both for a headless Service), each with the pods' IPs of that family,
 *     as getAddressTypesForService; Endpoints carry the pods' IPs of the Service's first family;
 *   - a pod whose spec.hostname is set and whose spec.subdomain names the Service is published
 *     with its hostname (ShouldSetHostname), for the DNS name hostname.subdomain.ns.svc.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "endpoints_internal.h"
#include "xpool/doc.h"
#include "xpool/endpoints.h"
#include "xpool/strutil.h"

bool xp_endpoints_selects(const json_t *service, const json_t *pod)
{
        const json_t *selector = xp_json_object_at(service, "spec.selector");
        const json_t *labels = xp_json_object_at(pod, "metadata.labels");
        const char *key;
        json_t *value;

        if (json_object_size(selector) == 0)
                return false;
        json_object_foreach((json_t *)selector, key, value)
        {
                if (!json_is_string(value) || !json_equal(json_object_get(labels, key), value))
                        return false;
        }
        return true;
}

const char *endpoints_family_of(const char *ip)
{
        unsigned char buf[16];

        if (inet_pton(AF_INET, ip, buf) == 1)
                return "IPv4";
        if (inet_pton(AF_INET6, ip, buf) == 1)
                return "IPv6";
        return NULL;
}

/* The pod's IP of family (status.podIPs, else status.podIP), or NULL. */
static const char *pod_ip_of(const json_t *pod, const char *family)
{
        const char *ip = xp_json_str_at(pod, "status.podIP", "");
        size_t i;
        json_t *p;

        json_array_foreach(xp_json_at(pod, "status.podIPs"), i, p)
        {
                const char *each = xp_json_str_at(p, "ip", "");

                if (xp_streq0(endpoints_family_of(each), family))
                        return each;
        }
        return xp_streq0(endpoints_family_of(ip), family) ? ip : NULL;
}

/* The Service's address families, up to two: its ipFamilies, else its cluster IP's, else
 * (headless) both. *n is how many. */
static void service_families(const json_t *service, const char *out[static 2], size_t *n)
{
        const json_t *families = xp_json_at(service, "spec.ipFamilies");
        const char *ip = xp_json_str_at(service, "spec.clusterIP", "");
        size_t i;
        json_t *f;

        *n = 0;
        json_array_foreach(families, i, f)
        {
                const char *family = json_string_value(f);

                if (*n < 2 && (xp_streq0(family, "IPv4") || xp_streq0(family, "IPv6")) &&
                    !(*n == 1 && xp_streq0(out[0], family)))
                        out[(*n)++] = family;
        }
        if (*n == 0 && endpoints_family_of(ip))
                out[(*n)++] = endpoints_family_of(ip);
        if (*n == 0) {
                out[(*n)++] = "IPv4";
                out[(*n)++] = "IPv6";
        }
}

/* The pod's hostname for the Service: its spec.hostname when its spec.subdomain names it. */
static const char *published_hostname(const json_t *service, const json_t *pod)
{
        const char *hostname = xp_json_str_at(pod, "spec.hostname", "");

        if (*hostname && xp_streq0(xp_json_str_at(pod, "spec.subdomain", ""),
                                   xp_json_str_at(service, "metadata.name", "")))
                return hostname;
        return NULL;
}

static bool pod_ready(const json_t *pod)
{
        size_t i;
        json_t *c;

        json_array_foreach(xp_json_at(pod, "status.conditions"), i, c)
        {
                if (xp_streq0(xp_json_str_at(c, "type", ""), "Ready"))
                        return xp_streq0(xp_json_str_at(c, "status", ""), "True");
        }
        return false;
}

/* Kubernetes' ShouldPodBeInEndpoints. */
static bool pod_counts(const json_t *pod, bool include_terminating)
{
        const char *phase = xp_json_str_at(pod, "status.phase", "");
        const char *restart = xp_json_str_at(pod, "spec.restartPolicy", "Always");

        if (!*xp_json_str_at(pod, "status.podIP", ""))
                return false;
        if (!include_terminating && xp_json_at(pod, "metadata.deletionTimestamp"))
                return false;
        if (xp_streq0(restart, "Never"))
                return !xp_streq0(phase, "Failed") && !xp_streq0(phase, "Succeeded");
        if (xp_streq0(restart, "OnFailure"))
                return !xp_streq0(phase, "Succeeded");
        return true;
}

/* The number the Service port reaches on the pod (Kubernetes' FindPort); 0: none. */
static int64_t find_port(const json_t *pod, const json_t *service_port)
{
        const json_t *target = json_object_get(service_port, "targetPort");
        const char *protocol = xp_json_str_at(service_port, "protocol", "TCP");
        size_t i, j;
        json_t *c, *p;

        if (json_is_integer(target))
                return json_integer_value(target);
        if (!json_is_string(target) || !*json_string_value(target))
                return xp_json_int_at(service_port, "port", 0);
        json_array_foreach(xp_json_at(pod, "spec.containers"), i, c)
        {
                json_array_foreach(json_object_get(c, "ports"), j, p)
                {
                        if (xp_streq0(xp_json_str_at(p, "name", ""), json_string_value(target)) &&
                            xp_streq0(xp_json_str_at(p, "protocol", "TCP"), protocol))
                                return xp_json_int_at(p, "containerPort", 0);
                }
        }
        return 0;
}

/* The ports the Service's ports resolve to on the pod, [{name, port, protocol}] (new). For
 * slices, name is always there (possibly ""), as the endpointslice controller writes it. */
static json_t *pod_ports(const json_t *service, const json_t *pod, bool slice)
{
        json_t *ports = json_array(), *sp;
        size_t i;

        json_array_foreach(xp_json_at(service, "spec.ports"), i, sp)
        {
                int64_t number = find_port(pod, sp);
                const char *name = xp_json_str_at(sp, "name", "");
                json_t *port;

                if (number <= 0)
                        continue;
                port = json_pack("{s:I, s:s}",
                                 "port",
                                 (json_int_t)number,
                                 "protocol",
                                 xp_json_str_at(sp, "protocol", "TCP"));
                if (port && (slice || *name))
                        json_object_set_new(port, "name", json_string(name));
                if (port && json_object_get(sp, "appProtocol"))
                        json_object_set(port, "appProtocol", json_object_get(sp, "appProtocol"));
                if (!port || json_array_append_new(ports, port) < 0) {
                        json_decref(ports);
                        return NULL;
                }
        }
        return ports;
}

static json_t *target_ref(const json_t *pod)
{
        return json_pack("{s:s, s:s, s:s, s:s}",
                         "kind",
                         "Pod",
                         "namespace",
                         xp_json_str_at(pod, "metadata.namespace", ""),
                         "name",
                         xp_json_str_at(pod, "metadata.name", ""),
                         "uid",
                         xp_json_str_at(pod, "metadata.uid", ""));
}

/* The pod as an Endpoints address: {ip, hostname, nodeName, targetRef}. */
static json_t *address(const json_t *service, const json_t *pod, const char *ip)
{
        json_t *a = json_pack("{s:s, s:o}", "ip", ip, "targetRef", target_ref(pod));
        const char *node = xp_json_str_at(pod, "spec.nodeName", "");
        const char *hostname = published_hostname(service, pod);

        if (a && hostname)
                json_object_set_new(a, "hostname", json_string(hostname));
        if (a && *node)
                json_object_set_new(a, "nodeName", json_string(node));
        return a;
}

/* The pod as a slice's endpoint at ip, with its conditions. */
static json_t *slice_endpoint(const json_t *service, const json_t *pod, const char *ip)
{
        const char *hostname = published_hostname(service, pod);
        bool serving = pod_ready(pod);
        bool terminating = xp_json_at(pod, "metadata.deletionTimestamp") != NULL;
        bool ready = xp_json_bool_at(service, "spec.publishNotReadyAddresses", false) ||
                     (serving && !terminating);
        const char *node = xp_json_str_at(pod, "spec.nodeName", "");
        json_t *e = json_pack("{s:[s], s:{s:b, s:b, s:b}, s:o}",
                              "addresses",
                              ip,
                              "conditions",
                              "ready",
                              ready,
                              "serving",
                              serving,
                              "terminating",
                              terminating,
                              "targetRef",
                              target_ref(pod));

        if (e && hostname)
                json_object_set_new(e, "hostname", json_string(hostname));
        if (e && *node)
                json_object_set_new(e, "nodeName", json_string(node));
        return e;
}

/* ---- grouping by ports ---------------------------------------------------------------------- */

/* The group's key: its ports, after "IPv6 " for that family (IPv4's keep the names they had). */
static char *group_key(const json_t *ports, const char *family)
{
        char *dump = ports ? json_dumps(ports, JSON_COMPACT | JSON_SORT_KEYS) : NULL, *key = NULL;

        if (dump && xp_streq0(family, "IPv4"))
                return dump;
        if (dump && asprintf(&key, "%s %s", family, dump) < 0)
                key = NULL;
        free(dump);
        return key;
}

/* Appends item (taken) to groups[key(family, ports)][field], the group made with its family and
 * ports when new. */
static int
group_add(json_t *groups, const char *family, json_t *ports, const char *field, json_t *item)
{
        char *key = group_key(ports, family);
        json_t *group = key ? json_object_get(groups, key) : NULL;
        int r = key && item ? 0 : -ENOMEM;

        if (r >= 0 && !group) {
                group =
                    json_pack("{s:s, s:O, s:[], s:[]}", "family", family, "ports", ports, "a", "b");
                r = group && json_object_set_new(groups, key, group) >= 0 ? 0 : -ENOMEM;
        }
        if (r >= 0)
                r = json_array_append(json_object_get(group, field), item) < 0 ? -ENOMEM : 0;
        json_decref(item);
        free(key);
        return r;
}

/* The pod into groups: for slices an endpoint for each of the Service's families it has an IP
 * of, for Endpoints an address of its first family (ready ones to a, others to b). */
static int
group_pod(const json_t *service, const json_t *pod, json_t *ports, bool slices, json_t *groups)
{
        bool publish = xp_json_bool_at(service, "spec.publishNotReadyAddresses", false);
        const char *families[2], *ip;
        size_t n;
        int r = 0;

        service_families(service, families, &n);
        if (!slices && !xp_json_at(service, "spec.ipFamilies") &&
            !endpoints_family_of(xp_json_str_at(service, "spec.clusterIP", "")))
                families[0] = endpoints_family_of(xp_json_str_at(pod, "status.podIP", ""));
        for (size_t i = 0; r >= 0 && i < (slices ? n : 1); i++) {
                ip = families[i] ? pod_ip_of(pod, families[i]) : NULL;
                if (!ip)
                        continue;
                r = slices ? group_add(
                                 groups, families[i], ports, "a", slice_endpoint(service, pod, ip))
                           : group_add(groups,
                                       families[i],
                                       ports,
                                       publish || pod_ready(pod) ? "a" : "b",
                                       address(service, pod, ip));
        }
        return r;
}

/*
 * The Service's pods grouped by family and the ports they resolve: groups[key] = {family, ports,
 * a, b}. For slices every pod's endpoint goes to a; for Endpoints ready pods' addresses to a,
 * others to b. A pod whose ports resolve nowhere is left out, unless the Service has no ports
 * (headless, or any for slices).
 */
static int group_pods(const json_t *service, const json_t *pods, bool slices, json_t *groups)
{
        bool publish = xp_json_bool_at(service, "spec.publishNotReadyAddresses", false);
        bool portless =
            json_array_size(xp_json_at(service, "spec.ports")) == 0 &&
            (slices || xp_streq0(xp_json_str_at(service, "spec.clusterIP", ""), "None"));
        size_t i;
        json_t *pod;

        json_array_foreach(pods, i, pod)
        {
                json_t *ports;
                int r = 0;

                if (!xp_endpoints_selects(service, pod) || !pod_counts(pod, slices || publish))
                        continue;
                ports = pod_ports(service, pod, slices);
                if (!ports)
                        return -ENOMEM;
                if (json_array_size(ports) > 0 || portless)
                        r = group_pod(service, pod, ports, slices, groups);
                json_decref(ports);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Endpoints' order: by IP, then by the pod's uid (Kubernetes' addrsByIPAndUID). */
static int by_ip(const void *a, const void *b)
{
        const json_t *x = *(const json_t *const *)a, *y = *(const json_t *const *)b;
        int c = strcmp(xp_json_str_at(x, "ip", ""), xp_json_str_at(y, "ip", ""));

        return c ? c
                 : strcmp(xp_json_str_at(x, "targetRef.uid", ""),
                          xp_json_str_at(y, "targetRef.uid", ""));
}

static int by_slice_ip(const void *a, const void *b)
{
        const json_t *x = *(const json_t *const *)a, *y = *(const json_t *const *)b;
        const char *ix = json_string_value(json_array_get(json_object_get(x, "addresses"), 0));
        const char *iy = json_string_value(json_array_get(json_object_get(y, "addresses"), 0));
        int c = strcmp(ix ? ix : "", iy ? iy : "");

        return c ? c
                 : strcmp(xp_json_str_at(x, "targetRef.uid", ""),
                          xp_json_str_at(y, "targetRef.uid", ""));
}

/* A new array of array's items, sorted. */
static json_t *sorted(const json_t *array, int (*cmp)(const void *, const void *))
{
        size_t n = json_array_size(array), i;
        json_t **items = calloc(n ? n : 1, sizeof(*items)), *out = json_array();

        for (i = 0; items && i < n; i++)
                items[i] = json_array_get(array, i);
        if (items)
                qsort(items, n, sizeof(*items), cmp);
        for (i = 0; items && out && i < n; i++)
                if (json_array_append(out, items[i]) < 0)
                        break;
        if (!items || !out || i < n) {
                json_decref(out);
                out = NULL;
        }
        free(items);
        return out;
}

/* ---- Endpoints ------------------------------------------------------------------------------ */

/* The object's labels: the Service's, the headless label, then extra (key, value) pairs. */
static json_t *labels_of(const json_t *service, const char *key, const char *value)
{
        const json_t *own = xp_json_object_at(service, "metadata.labels");
        json_t *labels = own ? json_deep_copy(own) : json_object();

        if (labels && xp_streq0(xp_json_str_at(service, "spec.clusterIP", ""), "None"))
                json_object_set_new(labels, "service.kubernetes.io/headless", json_string(""));
        if (labels && key)
                json_object_set_new(labels, key, json_string(value));
        return labels;
}

static json_t *subsets_of(const json_t *groups)
{
        json_t *subsets = json_array(), *group;
        const char *key;

        json_object_foreach((json_t *)groups, key, group)
        {
                json_t *ready = sorted(json_object_get(group, "a"), by_ip);
                json_t *unready = sorted(json_object_get(group, "b"), by_ip);
                json_t *subset = json_object();

                if (subset && ready && json_array_size(ready))
                        json_object_set(subset, "addresses", ready);
                if (subset && unready && json_array_size(unready))
                        json_object_set(subset, "notReadyAddresses", unready);
                if (subset && json_array_size(json_object_get(group, "ports")))
                        json_object_set(subset, "ports", json_object_get(group, "ports"));
                if (!subsets || !subset || !ready || !unready ||
                    json_array_append_new(subsets, subset) < 0) {
                        json_decref(subsets);
                        subsets = NULL;
                }
                json_decref(ready);
                json_decref(unready);
                if (!subsets)
                        break;
        }
        return subsets;
}

json_t *xp_endpoints_compute(const json_t *service, const json_t *pods)
{
        json_t *groups = json_object(), *subsets = NULL, *out = NULL;
        int r = groups ? group_pods(service, pods, false, groups) : -ENOMEM;

        if (r >= 0)
                subsets = subsets_of(groups);
        if (subsets)
                out = json_pack(
                    "{s:s, s:s, s:{s:s, s:s, s:o}}",
                    "apiVersion",
                    "v1",
                    "kind",
                    "Endpoints",
                    "metadata",
                    "name",
                    xp_json_str_at(service, "metadata.name", ""),
                    "namespace",
                    xp_json_str_at(service, "metadata.namespace", ""),
                    "labels",
                    labels_of(service, XP_ENDPOINTS_MANAGED_BY_LABEL, XP_ENDPOINTS_MANAGED_BY));
        if (out && json_array_size(subsets) > 0)
                json_object_set(out, "subsets", subsets);
        json_decref(subsets);
        json_decref(groups);
        return out;
}

/* ---- EndpointSlices ------------------------------------------------------------------------- */

void endpoints_generated_name(
    const char *name, const char *uid, const char *key, char *buf, size_t size)
{
        static const char alphabet[] = "bcdfghjklmnpqrstvwxz2456789"; /* Kubernetes' */
        uint64_t h = UINT64_C(14695981039346656037);
        char suffix[6];

        for (const char *p = uid; *p; p++)
                h = (h ^ (uint8_t)*p) * UINT64_C(1099511628211);
        for (const char *p = key; *p; p++)
                h = (h ^ (uint8_t)*p) * UINT64_C(1099511628211);
        for (int i = 0; i < 5; i++) {
                suffix[i] = alphabet[h % (sizeof(alphabet) - 1)];
                h /= sizeof(alphabet) - 1;
        }
        suffix[5] = '\0';
        snprintf(buf, size, "%.56s-%s", name, suffix);
}

/* "SERVICE-" and five letters from the uid and the ports, as a generated name looks. */
static void slice_name(const json_t *service, const char *ports_key, char *buf, size_t size)
{
        endpoints_generated_name(xp_json_str_at(service, "metadata.name", ""),
                                 xp_json_str_at(service, "metadata.uid", ""),
                                 ports_key,
                                 buf,
                                 size);
}

json_t *endpoints_owner_ref(const json_t *owner, const char *kind)
{
        return json_pack("[{s:s, s:s, s:s, s:s, s:b, s:b}]",
                         "apiVersion",
                         "v1",
                         "kind",
                         kind,
                         "name",
                         xp_json_str_at(owner, "metadata.name", ""),
                         "uid",
                         xp_json_str_at(owner, "metadata.uid", ""),
                         "controller",
                         1,
                         "blockOwnerDeletion",
                         1);
}

/* One slice: the group's ports and endpoints (sorted), NULL ports for the empty one. */
static json_t *slice_of(const json_t *service, const char *key, const json_t *group)
{
        char name[80];
        json_t *endpoints = sorted(json_object_get(group, "a"), by_slice_ip), *slice;

        slice_name(service, key, name, sizeof(name));
        slice = json_pack("{s:s, s:s, s:{s:s, s:s, s:o, s:o}, s:s, s:o}",
                          "apiVersion",
                          "discovery.k8s.io/v1",
                          "kind",
                          "EndpointSlice",
                          "metadata",
                          "name",
                          name,
                          "namespace",
                          xp_json_str_at(service, "metadata.namespace", ""),
                          "labels",
                          labels_of(service,
                                    XP_ENDPOINTSLICE_SERVICE_LABEL,
                                    xp_json_str_at(service, "metadata.name", "")),
                          "ownerReferences",
                          endpoints_owner_ref(service, "Service"),
                          "addressType",
                          json_string_value(json_object_get(group, "family")),
                          "endpoints",
                          endpoints);
        if (slice &&
            json_object_set_new(json_object_get(json_object_get(slice, "metadata"), "labels"),
                                XP_ENDPOINTSLICE_MANAGED_LABEL,
                                json_string(XP_ENDPOINTSLICE_MANAGED_BY)) < 0) {
                json_decref(slice);
                return NULL;
        }
        if (slice && json_array_size(json_object_get(group, "ports")))
                json_object_set(slice, "ports", json_object_get(group, "ports"));
        return slice;
}

json_t *endpoints_slices_of_groups(json_t *groups,
                                   int r,
                                   json_t *(*slice_of_group)(const json_t *source,
                                                             const char *key,
                                                             const json_t *group),
                                   const json_t *source)
{
        json_t *slices = json_array(), *group;
        const char *key;

        if (!groups || !slices)
                r = -ENOMEM;
        json_object_foreach(groups, key, group)
        {
                json_t *slice = r >= 0 ? slice_of_group(source, key, group) : NULL;

                if (!slice || json_array_append_new(slices, slice) < 0)
                        r = -ENOMEM;
        }
        json_decref(groups);
        if (r < 0) {
                json_decref(slices);
                return NULL;
        }
        return slices;
}

json_t *xp_endpointslices_compute(const json_t *service, const json_t *pods)
{
        json_t *groups = json_object(), *group;
        const char *families[2], *key;
        size_t n;
        int r = groups ? group_pods(service, pods, true, groups) : -ENOMEM;

        service_families(service, families, &n);
        /* the placeholder slice of each family no pod has an endpoint of */
        for (size_t i = 0; r >= 0 && i < n; i++) {
                bool seen = false;

                json_object_foreach(groups, key, group)
                {
                        seen |= xp_streq0(json_string_value(json_object_get(group, "family")),
                                          families[i]);
                }
                if (!seen)
                        r = json_object_set_new(
                            groups,
                            xp_streq0(families[i], "IPv4") ? "" : families[i],
                            json_pack("{s:s, s:[], s:[]}", "family", families[i], "a", "b"));
        }
        return endpoints_slices_of_groups(groups, r, slice_of, service);
}
