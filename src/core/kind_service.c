/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Service (core/v1), a document kind (xpool/doc.h): stored with kube-apiserver's defaults (type
 * ClusterIP, sessionAffinity None, each port's protocol TCP and targetPort its port, the traffic
 * policies Cluster, one IPv4 family), the basic checks of ValidateService (types, ports,
 * protocols, names, the cluster IP fixed once set) and kubectl's table. The cluster IP comes
 * from the server's range at create (src/server/api_service.c); nothing routes traffic to a
 * Service. docs/server.md, "Services".
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protobuf_internal.h"
#include "schema.h"
#include "table_internal.h"
#include "xpool/doc.h"
#include "xpool/strutil.h"

static int default_ports(json_t *ports)
{
        size_t i;
        json_t *p;

        json_array_foreach(ports, i, p)
        {
                const json_t *target = json_object_get(p, "targetPort");
                int r = 0;

                if (!json_is_object(p))
                        continue;
                if (!json_object_get(p, "protocol"))
                        r = json_object_set_new(p, "protocol", json_string("TCP"));
                if (r >= 0 && (!target || json_is_null(target) ||
                               (json_is_integer(target) && json_integer_value(target) == 0) ||
                               (json_is_string(target) && !*json_string_value(target))))
                        r = json_object_set_new(
                            p,
                            "targetPort",
                            json_integer(json_integer_value(json_object_get(p, "port"))));
                if (r < 0)
                        return -ENOMEM;
        }
        return 0;
}

static int set_default(json_t *body, const char *path, const char *value)
{
        if (xp_json_at(body, path))
                return 0;
        return xp_json_set_str_at(body, path, value);
}

static bool headless_selectorless(const json_t *body)
{
        return xp_streq0(xp_json_str_at(body, "spec.clusterIP", ""), "None") &&
               json_object_size(xp_json_object_at(body, "spec.selector")) == 0;
}

/*
 * kube-apiserver's initIPFamilyFields on a single-stack IPv4 cluster: the policy SingleStack, or
 * RequireDualStack for a headless Service without selector, which alone may have both families
 * (its Endpoints are the user's); the families IPv4, with the other family added for that
 * Service unless it is SingleStack. The server sets them first from its own ranges (one or two
 * families, src/server/api_service.c), so these are the defaults of a manifest read alone.
 */
static int default_families(json_t *body)
{
        bool open = headless_selectorless(body);
        const json_t *families = xp_json_at(body, "spec.ipFamilies");
        const char *first;
        int r;

        r = set_default(body, "spec.ipFamilyPolicy", open ? "RequireDualStack" : "SingleStack");
        if (r >= 0 && json_array_size(families) == 0)
                r = xp_json_set_at(body, "spec.ipFamilies", json_pack("[s]", "IPv4"));
        families = xp_json_at(body, "spec.ipFamilies");
        first = json_string_value(json_array_get(families, 0));
        if (r >= 0 && open && json_array_size(families) == 1 &&
            !xp_streq0(xp_json_str_at(body, "spec.ipFamilyPolicy", ""), "SingleStack") &&
            (xp_streq0(first, "IPv4") || xp_streq0(first, "IPv6")))
                r = json_array_append_new((json_t *)families,
                                          json_string(xp_streq0(first, "IPv4") ? "IPv6" : "IPv4"));
        return r < 0 ? -ENOMEM : 0;
}

static int service_defaults(struct xp_doc *doc)
{
        json_t *b = doc->body;
        const char *type;
        int r;

        r = set_default(b, "spec.type", "ClusterIP");
        type = xp_json_str_at(b, "spec.type", "");
        if (r >= 0)
                r = set_default(b, "spec.sessionAffinity", "None");
        if (r >= 0)
                r = default_ports((json_t *)xp_json_at(b, "spec.ports"));
        if (r >= 0 && !xp_streq0(type, "ExternalName")) {
                r = set_default(b, "spec.internalTrafficPolicy", "Cluster");
                if (r >= 0)
                        r = default_families(b);
        }
        if (r >= 0 && (xp_streq0(type, "NodePort") || xp_streq0(type, "LoadBalancer")))
                r = set_default(b, "spec.externalTrafficPolicy", "Cluster");
        if (r >= 0 && xp_streq0(type, "LoadBalancer") &&
            !xp_json_at(b, "spec.allocateLoadBalancerNodePorts"))
                r = xp_json_set_at(b, "spec.allocateLoadBalancerNodePorts", json_true());
        if (r >= 0 && !xp_json_at(b, "status.loadBalancer"))
                r = xp_json_set_at(b, "status.loadBalancer", json_object());
        return r;
}

/* ---- validation ----------------------------------------------------------------------------- */

static int check_port(struct xp_decode_ctx *ctx, const json_t *ports, size_t i)
{
        const json_t *p = json_array_get(ports, i);
        const char *name = json_string_value(json_object_get(p, "name"));
        const char *protocol = json_string_value(json_object_get(p, "protocol"));
        int64_t port = json_integer_value(json_object_get(p, "port"));
        char path[64];

        snprintf(path, sizeof(path), "spec.ports[%zu].name", i);
        if (json_array_size(ports) > 1 && (!name || !*name))
                return xp_fail_field(ctx, -EINVAL, path, "Required value");
        for (size_t j = 0; name && *name && j < i; j++)
                if (xp_streq0(name,
                              json_string_value(json_object_get(json_array_get(ports, j), "name"))))
                        return xp_fail_field(ctx, -EINVAL, path, "Duplicate value: \"%s\"", name);
        snprintf(path, sizeof(path), "spec.ports[%zu].port", i);
        if (port < 1 || port > 65535)
                return xp_fail_field(ctx,
                                     -EINVAL,
                                     path,
                                     "Invalid value: %lld: must be between 1 and 65535, inclusive",
                                     (long long)port);
        snprintf(path, sizeof(path), "spec.ports[%zu].protocol", i);
        if (protocol && !xp_streq0(protocol, "TCP") && !xp_streq0(protocol, "UDP") &&
            !xp_streq0(protocol, "SCTP"))
                return xp_fail_field(
                    ctx,
                    -EINVAL,
                    path,
                    "Unsupported value: \"%s\": supported values: \"SCTP\", \"TCP\", \"UDP\"",
                    protocol);
        return 0;
}

/* ValidateServiceClusterIPsRelatedFields' checks of the policy and the families. */
static int check_families(struct xp_decode_ctx *ctx, const json_t *body)
{
        const char *policy = xp_json_str_at(body, "spec.ipFamilyPolicy", NULL);
        const json_t *families = xp_json_at(body, "spec.ipFamilies");
        char path[64];

        if (policy && !xp_streq0(policy, "SingleStack") && !xp_streq0(policy, "PreferDualStack") &&
            !xp_streq0(policy, "RequireDualStack"))
                return xp_fail_field(
                    ctx,
                    -EINVAL,
                    "spec.ipFamilyPolicy",
                    "Unsupported value: \"%s\": supported values: \"PreferDualStack\", \"RequireDualStack\", \"SingleStack\"",
                    policy);
        for (size_t i = 0; i < json_array_size(families); i++) {
                const char *family = json_string_value(json_array_get(families, i));

                snprintf(path, sizeof(path), "spec.ipFamilies[%zu]", i);
                if (!xp_streq0(family, "IPv4") && !xp_streq0(family, "IPv6"))
                        return xp_fail_field(
                            ctx,
                            -EINVAL,
                            path,
                            "Unsupported value: \"%s\": supported values: \"IPv4\", \"IPv6\"",
                            family ? family : "");
                if (i > 0 && xp_streq0(family, json_string_value(json_array_get(families, 0))))
                        return xp_fail_field(ctx, -EINVAL, path, "Duplicate value: \"%s\"", family);
        }
        if (json_array_size(families) > 2)
                return xp_fail_field(ctx,
                                     -EINVAL,
                                     "spec.ipFamilies",
                                     "Too many: %zu: must have at most 2 items",
                                     json_array_size(families));
        return 0;
}

static int check_spec(struct xp_decode_ctx *ctx, const json_t *body)
{
        const char *type = xp_json_str_at(body, "spec.type", "ClusterIP");
        const json_t *ports = xp_json_at(body, "spec.ports");
        bool headless = xp_streq0(xp_json_str_at(body, "spec.clusterIP", ""), "None");
        int r = 0;

        if (!xp_streq0(type, "ClusterIP") && !xp_streq0(type, "NodePort") &&
            !xp_streq0(type, "LoadBalancer") && !xp_streq0(type, "ExternalName"))
                return xp_fail_field(
                    ctx,
                    -EINVAL,
                    "spec.type",
                    "Unsupported value: \"%s\": supported values: \"ClusterIP\", \"ExternalName\", \"LoadBalancer\", \"NodePort\"",
                    type);
        if (xp_streq0(type, "ExternalName")) {
                if (!*xp_json_str_at(body, "spec.externalName", ""))
                        return xp_fail_field(ctx, -EINVAL, "spec.externalName", "Required value");
                return 0;
        }
        if (json_array_size(ports) == 0 && !headless)
                return xp_fail_field(ctx, -EINVAL, "spec.ports", "Required value");
        r = check_families(ctx, body);
        for (size_t i = 0; r >= 0 && i < json_array_size(ports); i++)
                r = check_port(ctx, ports, i);
        return r;
}

static int
service_validate(struct xp_decode_ctx *ctx, const struct xp_doc *doc, const struct xp_doc *old)
{
        const char *ip = xp_json_str_at(doc->body, "spec.clusterIP", "");
        const char *was = old ? xp_json_str_at(old->body, "spec.clusterIP", "") : "";

        if (old && *was && !xp_streq0(ip, was) &&
            !xp_streq0(xp_json_str_at(doc->body, "spec.type", ""), "ExternalName"))
                return xp_fail_field(ctx,
                                     -EINVAL,
                                     "spec.clusterIPs[0]",
                                     "Invalid value: []string{\"%s\"}: may not change once set",
                                     ip);
        return check_spec(ctx, doc->body);
}

/* ---- kubectl get svc: NAME TYPE CLUSTER-IP EXTERNAL-IP PORT(S) AGE (wide: SELECTOR) --------- */

static const struct table_column service_columns[] = {
    TABLE_NAME_COLUMN,
    {.name = "Type", .type = "string", .description = "How the service is exposed."},
    {.name = "Cluster-IP", .type = "string", .description = "The IP address of the service."},
    {.name = "External-IP",
     .type = "string",
     .description = "The addresses the service is reached at from outside the cluster."},
    {.name = "Port(s)", .type = "string", .description = "The ports the service exposes."},
    TABLE_AGE_COLUMN,
    {.name = "Selector",
     .type = "string",
     .description = "The labels of the pods the service routes to.",
     .priority = 1},
};

/* Appends to buf (size n) the items of an array of strings at path, joined by ",". */
static void join_strings(char *buf, size_t n, const json_t *object, const char *path)
{
        size_t i;
        json_t *v;

        json_array_foreach(table_array(object, path), i, v)
        {
                if (*buf)
                        strncat(buf, ",", n - strlen(buf) - 1);
                strncat(buf, json_string_value(v) ?: "", n - strlen(buf) - 1);
        }
}

/* kubectl's getServiceExternalIP. */
static int external_ip_cell(json_t *cells, const json_t *object)
{
        const char *type = table_str0(object, "spec.type");
        char buf[512] = "";
        size_t i;
        json_t *ing;

        if (xp_streq0(type, "ExternalName"))
                return table_cell_str(cells, table_str0(object, "spec.externalName"));
        if (xp_streq0(type, "LoadBalancer")) {
                json_array_foreach(table_array(object, "status.loadBalancer.ingress"), i, ing)
                {
                        const char *ip = table_str(ing, "ip") ?: table_str0(ing, "hostname");

                        if (*buf)
                                strncat(buf, ",", sizeof(buf) - strlen(buf) - 1);
                        strncat(buf, ip, sizeof(buf) - strlen(buf) - 1);
                }
                join_strings(buf, sizeof(buf), object, "spec.externalIPs");
                return table_cell_str(cells, *buf ? buf : "<pending>");
        }
        join_strings(buf, sizeof(buf), object, "spec.externalIPs");
        return table_cell_or_none(cells, buf);
}

/* "443/TCP", "80:30080/TCP", joined by ",". */
static int ports_cell(json_t *cells, const json_t *object)
{
        char buf[512] = "", one[64];
        size_t i;
        json_t *p;

        json_array_foreach(table_array(object, "spec.ports"), i, p)
        {
                if (table_int(p, "nodePort") > 0)
                        snprintf(one,
                                 sizeof(one),
                                 "%s%lld:%lld/%s",
                                 i ? "," : "",
                                 (long long)table_int(p, "port"),
                                 (long long)table_int(p, "nodePort"),
                                 table_str0(p, "protocol"));
                else
                        snprintf(one,
                                 sizeof(one),
                                 "%s%lld/%s",
                                 i ? "," : "",
                                 (long long)table_int(p, "port"),
                                 table_str0(p, "protocol"));
                strncat(buf, one, sizeof(buf) - strlen(buf) - 1);
        }
        return table_cell_or_none(cells, buf);
}

static int by_key(const void *a, const void *b)
{
        return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* labels.FormatLabels: "k=v,k2=v2" sorted by key, "<none>" when empty. */
static int selector_cell(json_t *cells, const json_t *object)
{
        const json_t *selector = table_get(object, "spec.selector");
        const char *keys[64];
        char buf[1024] = "";
        size_t n = 0;
        const char *key;
        json_t *value;

        json_object_foreach((json_t *)selector, key, value)
        {
                if (n < XP_ELEMENTSOF(keys))
                        keys[n++] = key;
        }
        if (n > 1)
                qsort(keys, n, sizeof(*keys), by_key);
        for (size_t i = 0; i < n; i++) {
                if (i)
                        strncat(buf, ",", sizeof(buf) - strlen(buf) - 1);
                strncat(buf, keys[i], sizeof(buf) - strlen(buf) - 1);
                strncat(buf, "=", sizeof(buf) - strlen(buf) - 1);
                strncat(buf,
                        json_string_value(json_object_get(selector, keys[i])) ?: "",
                        sizeof(buf) - strlen(buf) - 1);
        }
        return table_cell_or_none(cells, buf);
}

static int service_row(const json_t *object, time_t now, json_t *cells, json_t *row)
{
        const char *ip =
            json_string_value(json_array_get(table_array(object, "spec.clusterIPs"), 0));
        int r;

        (void)row;
        r = table_cell_str(cells, table_str0(object, "metadata.name"));
        if (r >= 0)
                r = table_cell_str(cells, table_str0(object, "spec.type"));
        if (r >= 0)
                r = table_cell_or_none(cells, ip);
        if (r >= 0)
                r = external_ip_cell(cells, object);
        if (r >= 0)
                r = ports_cell(cells, object);
        if (r >= 0)
                r = table_cell_age(cells, object, "metadata.creationTimestamp", now);
        if (r >= 0)
                r = selector_cell(cells, object);
        return r;
}

static const struct xp_table_kind service_table = {
    .kind = "Service",
    .columns = service_columns,
    .n_columns = XP_ELEMENTSOF(service_columns),
    .row = service_row,
};

/* core/v1's generated.proto; kubectl create service and expose send metadata and spec. */
MESSAGE(service_port_pb,
        "core/v1 ServicePort",
        STR(1, "name"),
        STR(2, "protocol"),
        I32(3, "port"),
        INTSTR(4, "targetPort"),
        I32(5, "nodePort"),
        STR_P(6, "appProtocol"));

MESSAGE(client_ip_pb, "core/v1 ClientIPConfig", I32_P(1, "timeoutSeconds"));
MESSAGE(affinity_config_pb, "core/v1 SessionAffinityConfig", MSG(1, "clientIP", client_ip_pb));

MESSAGE(service_spec_pb,
        "core/v1 ServiceSpec",
        MSGS(1, "ports", service_port_pb),
        SMAP(2, "selector"),
        STR(3, "clusterIP"),
        STR(4, "type"),
        STRS(5, "externalIPs"),
        STR(7, "sessionAffinity"),
        STR(8, "loadBalancerIP"),
        STRS(9, "loadBalancerSourceRanges"),
        STR(10, "externalName"),
        STR(11, "externalTrafficPolicy"),
        I32(12, "healthCheckNodePort"),
        BOOL(13, "publishNotReadyAddresses"),
        MSG(14, "sessionAffinityConfig", affinity_config_pb),
        STR_P(17, "ipFamilyPolicy"),
        STRS(18, "clusterIPs"),
        STRS(19, "ipFamilies"),
        BOOL_P(20, "allocateLoadBalancerNodePorts"),
        STR_P(21, "loadBalancerClass"),
        STR_P(22, "internalTrafficPolicy"),
        STR_P(23, "trafficDistribution"));

/* the status a client sends is dropped: an empty load balancer only */
MESSAGE(load_balancer_pb, "core/v1 LoadBalancerStatus", );
MESSAGE(service_status_pb, "core/v1 ServiceStatus", MSG(1, "loadBalancer", load_balancer_pb));

MESSAGE(service_pb,
        "core/v1 Service",
        MSG(1, "metadata", xp_pb_object_meta),
        MSG(2, "spec", service_spec_pb),
        MSG(3, "status", service_status_pb));

static const char *const service_short_names[] = {"svc", NULL};
static const char *const service_categories[] = {"all", NULL};

XP_DOC_KIND_DECODER(xp_kind_service)

const struct xp_kind xp_kind_service = {
    .kind = "Service",
    .list_kind = "ServiceList",
    .group = "",
    .version = "v1",
    .api_version = "v1",
    .plural = "services",
    .singular = "service",
    .short_names = service_short_names,
    .categories = service_categories,
    .namespaced = true,
    XP_DOC_KIND_OPS(xp_kind_service),
    .doc_defaults = service_defaults,
    .doc_validate = service_validate,
    .table = &service_table,
    .status_subresource = true,
    .protobuf = &service_pb,
};
