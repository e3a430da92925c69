/* SPDX-License-Identifier: Apache-2.0 */
/*
 * EndpointSlices mirrored from Endpoints that users write for a Service without a selector, as
 * kube-controller-manager's endpointslicemirroring controller makes them (xpool/endpoints.h):
 * one slice per set of ports and address family, the subsets with the same ports merged; every
 * address an endpoint (ready for `addresses`, not for `notReadyAddresses`) with its hostname,
 * nodeName and targetRef; labels the Endpoints' with the service name and the mirroring
 * controller's managed-by; owned by the Endpoints. An address that is neither IPv4 nor IPv6 is
 * left out, as Kubernetes leaves it.
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

/* The slice's ports from the subset's: the same fields (name, port, protocol, appProtocol). */
static json_t *ports_of(const json_t *subset)
{
        static const char *const fields[] = {"name", "port", "protocol", "appProtocol"};
        json_t *ports = json_array(), *p;
        size_t i;

        json_array_foreach(json_object_get(subset, "ports"), i, p)
        {
                json_t *port = json_object();

                for (size_t f = 0; port && f < sizeof(fields) / sizeof(fields[0]); f++)
                        if (json_object_get(p, fields[f]))
                                json_object_set(port, fields[f], json_object_get(p, fields[f]));
                if (!port || json_array_append_new(ports, port) < 0) {
                        json_decref(ports);
                        return NULL;
                }
        }
        return ports;
}

/* The address as a slice's endpoint. */
static json_t *endpoint_of(const json_t *address, bool ready)
{
        static const char *const copied[] = {"hostname", "nodeName", "targetRef"};
        json_t *e = json_pack("{s:[s], s:{s:b}}",
                              "addresses",
                              xp_json_str_at(address, "ip", ""),
                              "conditions",
                              "ready",
                              ready);

        for (size_t i = 0; e && i < sizeof(copied) / sizeof(copied[0]); i++)
                if (json_object_get(address, copied[i]))
                        json_object_set(e, copied[i], json_object_get(address, copied[i]));
        return e;
}

/* groups["FAMILY ports"] = {family, ports, endpoints}: the subset's addresses added. */
static int add_subset(json_t *groups, const json_t *subset)
{
        static const char *const lists[] = {"addresses", "notReadyAddresses"};
        json_t *ports = ports_of(subset);
        char *ports_key = ports ? json_dumps(ports, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
        int r = ports_key ? 0 : -ENOMEM;

        for (size_t l = 0; r >= 0 && l < 2; l++) {
                const json_t *a;
                size_t i;

                json_array_foreach(json_object_get(subset, lists[l]), i, a)
                {
                        const char *family = endpoints_family_of(xp_json_str_at(a, "ip", ""));
                        char key[4096];
                        json_t *group;

                        if (!family)
                                continue;
                        snprintf(key, sizeof(key), "%s %s", family, ports_key);
                        group = json_object_get(groups, key);
                        if (!group && (!(group = json_pack("{s:s, s:O, s:[]}",
                                                           "family",
                                                           family,
                                                           "ports",
                                                           ports,
                                                           "endpoints")) ||
                                       json_object_set_new(groups, key, group) < 0)) {
                                r = -ENOMEM;
                                break;
                        }
                        if (json_array_append_new(json_object_get(group, "endpoints"),
                                                  endpoint_of(a, l == 0)) < 0) {
                                r = -ENOMEM;
                                break;
                        }
                }
        }
        free(ports_key);
        json_decref(ports);
        return r;
}

static json_t *mirror_labels(const json_t *endpoints)
{
        const json_t *own = xp_json_object_at(endpoints, "metadata.labels");
        json_t *labels = own ? json_deep_copy(own) : json_object();

        if (labels &&
            (json_object_set_new(labels,
                                 XP_ENDPOINTSLICE_SERVICE_LABEL,
                                 json_string(xp_json_str_at(endpoints, "metadata.name", ""))) < 0 ||
             json_object_set_new(labels,
                                 XP_ENDPOINTSLICE_MANAGED_LABEL,
                                 json_string(XP_ENDPOINTSLICE_MIRRORED_BY)) < 0)) {
                json_decref(labels);
                return NULL;
        }
        return labels;
}

static json_t *mirror_slice(const json_t *endpoints, const char *key, const json_t *group)
{
        char name[80];

        /* from the Endpoints' name, uid and the group's key: the same at every sync */
        endpoints_generated_name(xp_json_str_at(endpoints, "metadata.name", ""),
                                 xp_json_str_at(endpoints, "metadata.uid", ""),
                                 key,
                                 name,
                                 sizeof(name));
        return json_pack("{s:s, s:s, s:{s:s, s:s, s:o, s:o}, s:O, s:O, s:O}",
                         "apiVersion",
                         "discovery.k8s.io/v1",
                         "kind",
                         "EndpointSlice",
                         "metadata",
                         "name",
                         name,
                         "namespace",
                         xp_json_str_at(endpoints, "metadata.namespace", ""),
                         "labels",
                         mirror_labels(endpoints),
                         "ownerReferences",
                         endpoints_owner_ref(endpoints, "Endpoints"),
                         "addressType",
                         json_object_get(group, "family"),
                         "ports",
                         json_object_get(group, "ports"),
                         "endpoints",
                         json_object_get(group, "endpoints"));
}

json_t *xp_endpointslices_mirror(const json_t *endpoints)
{
        json_t *groups = json_object();
        const json_t *subset;
        int r = groups ? 0 : -ENOMEM;
        size_t i;

        json_array_foreach(xp_json_at(endpoints, "subsets"), i, subset)
        {
                if (r >= 0)
                        r = add_subset(groups, subset);
        }
        return endpoints_slices_of_groups(groups, r, mirror_slice, endpoints);
}

bool xp_endpoints_mirrored(const json_t *endpoints)
{
        const char *skip = json_string_value(json_object_get(
            xp_json_object_at(endpoints, "metadata.labels"), XP_ENDPOINTSLICE_SKIP_MIRROR_LABEL));

        return !xp_streq0(skip, "true") &&
               !xp_streq0(json_string_value(
                              json_object_get(xp_json_object_at(endpoints, "metadata.labels"),
                                              XP_ENDPOINTS_MANAGED_BY_LABEL)),
                          XP_ENDPOINTS_MANAGED_BY);
}
