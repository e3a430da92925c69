/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Prometheus HTTP service discovery (docs/monitoring.md): every agent's metrics address, for
 * http_sd_configs, which Debian's Prometheus has (its build lacks Kubernetes discovery). One
 * target group per Node that has an address and an agent port: the target is its InternalIP (or,
 * without one, its Hostname address) and daemonEndpoints.kubeletEndpoint.Port, with the labels
 * __meta_xpool_node_name, __meta_xpool_node_ready and __meta_xpool_node_label_<name> (each
 * Node label, its name made a Prometheus label name) for relabelling, and node.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "xpool/macro.h"
#include "xpool/store.h"
#include "xpool/strutil.h"

/* The address Prometheus reaches the node's agent at, "" when it has none. */
static void node_address(json_t *status, char *out, size_t size)
{
        const char *hostname = NULL;
        json_t *x;
        size_t i;

        out[0] = '\0';
        json_array_foreach(json_object_get(status, "addresses"), i, x)
        {
                const char *type = json_string_value(json_object_get(x, "type"));
                const char *a = json_string_value(json_object_get(x, "address"));

                if (!a)
                        continue;
                if (xp_streq0(type, "InternalIP")) {
                        snprintf(out, size, "%s", a);
                        return;
                }
                if (xp_streq0(type, "Hostname") && !hostname)
                        hostname = a;
        }
        if (hostname)
                snprintf(out, size, "%s", hostname);
}

static bool node_ready(json_t *status)
{
        json_t *x;
        size_t i;

        json_array_foreach(json_object_get(status, "conditions"), i, x)
        {
                if (xp_streq0(json_string_value(json_object_get(x, "type")), "Ready"))
                        return xp_streq0(json_string_value(json_object_get(x, "status")), "True");
        }
        return false;
}

/* __meta_xpool_node_label_<name>: what Prometheus allows in a label name, the rest as '_'. */
static int add_node_labels(json_t *labels, json_t *node_labels)
{
        const char *key;
        json_t *value;

        json_object_foreach(node_labels, key, value)
        {
                char name[320];
                size_t n = (size_t)snprintf(name, sizeof(name), "__meta_xpool_node_label_");

                for (const char *c = key; *c && n + 1 < sizeof(name); c++)
                        name[n++] = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
                                            (*c >= '0' && *c <= '9')
                                        ? *c
                                        : '_';
                name[n] = '\0';
                if (json_is_string(value) && json_object_set(labels, name, value) < 0)
                        return -ENOMEM;
        }
        return 0;
}

/* The node's target group, NULL when it has no agent address (or out of memory); the agent of
 * local_node (xpool up's own) listens on 127.0.0.1 only. */
static json_t *target_group(json_t *node, const char *local_node)
{
        json_t *meta = json_object_get(node, "metadata"), *status = json_object_get(node, "status");
        const char *name = json_string_value(json_object_get(meta, "name"));
        json_int_t port = json_integer_value(json_object_get(
            json_object_get(json_object_get(status, "daemonEndpoints"), "kubeletEndpoint"),
            "Port"));
        char host[256], target[300];
        json_t *group;

        node_address(status, host, sizeof(host));
        if (host[0] && local_node && xp_streq0(name, local_node))
                snprintf(host, sizeof(host), "127.0.0.1");
        if (!name || !host[0] || port <= 0 || port > 65535)
                return NULL;
        snprintf(target,
                 sizeof(target),
                 strchr(host, ':') ? "[%s]:%lld" : "%s:%lld",
                 host,
                 (long long)port);
        group = json_pack("{s:[s], s:{s:s, s:s, s:s}}",
                          "targets",
                          target,
                          "labels",
                          "__meta_xpool_node_name",
                          name,
                          "__meta_xpool_node_ready",
                          node_ready(status) ? "true" : "false",
                          "node",
                          name);
        if (group && add_node_labels(json_object_get(group, "labels"),
                                     json_object_get(meta, "labels")) < 0) {
                json_decref(group);
                return NULL;
        }
        return group;
}

int handle_prometheus_sd(const struct request *req, const struct route *route, struct reply *ret)
{
        json_t *nodes = NULL, *node, *groups;
        uint64_t version;
        size_t i;
        int r;

        (void)route;
        r = xp_store_list(req->api->store, "nodes", "", &nodes, &version, NULL);
        if (r < 0)
                return r;
        groups = json_array();
        json_array_foreach(groups ? nodes : NULL, i, node)
        {
                json_t *group = target_group(node, req->api->local_node);

                if (group && json_array_append_new(groups, group) < 0) {
                        json_decref(groups);
                        groups = NULL;
                        break;
                }
        }
        json_decref(nodes);
        return groups ? reply_json(ret, 200, groups) : -ENOMEM;
}
