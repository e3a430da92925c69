/* SPDX-License-Identifier: Apache-2.0 */
/*
 * /metrics, and metrics.k8s.io/v1beta1 as metrics-server serves it (NodeMetrics, PodMetrics and
 * their discovery) from the agents' usage (usage.h), so `kubectl top nodes|pods` works.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "metrics.h"
#include "usage.h"
#include "xpool/expo.h"
#include "xpool/macro.h"
#include "xpool/timeutil.h"

#define METRICS_GROUP   "metrics.k8s.io"
#define METRICS_VERSION "v1beta1"
#define METRICS_GV      METRICS_GROUP "/" METRICS_VERSION

int handle_metrics(const struct request *req, const struct route *route, struct reply *ret)
{
        enum xp_expo_format format = xp_expo_negotiate(request_header(req, "Accept"));
        size_t len;
        int r;

        (void)route;
        if (!req->api->metrics)
                return reply_status(ret, 404, "NotFound", NULL, NULL, "metrics are off");
        r = srv_metrics_render(req->api->metrics, format, &ret->text, &len);
        if (r < 0)
                return r;
        ret->code = 200;
        ret->content_type = xp_expo_content_type(format);
        return 0;
}

json_t *metrics_api_group_json(void)
{
        return json_pack("{s:s, s:[{s:s, s:s}], s:{s:s, s:s}}",
                         "name",
                         METRICS_GROUP,
                         "versions",
                         "groupVersion",
                         METRICS_GV,
                         "version",
                         METRICS_VERSION,
                         "preferredVersion",
                         "groupVersion",
                         METRICS_GV,
                         "version",
                         METRICS_VERSION);
}

int handle_metrics_group(const struct request *req, const struct route *route, struct reply *ret)
{
        json_t *group = metrics_api_group_json();

        (void)req;
        (void)route;
        if (!group)
                return -ENOMEM;
        json_object_set_new(group, "kind", json_string("APIGroup"));
        json_object_set_new(group, "apiVersion", json_string("v1"));
        return reply_json(ret, 200, group);
}

int handle_metrics_resources(const struct request *req,
                             const struct route *route,
                             struct reply *ret)
{
        (void)req;
        (void)route;
        return reply_json(
            ret,
            200,
            json_pack(
                "{s:s, s:s, s:s, s:[{s:s, s:s, s:b, s:s, s:[s, s]}, {s:s, s:s, s:b, s:s, s:[s, s]}]}",
                "kind",
                "APIResourceList",
                "apiVersion",
                "v1",
                "groupVersion",
                METRICS_GV,
                "resources",
                "name",
                "nodes",
                "singularName",
                "",
                "namespaced",
                0,
                "kind",
                "NodeMetrics",
                "verbs",
                "get",
                "list",
                "name",
                "pods",
                "singularName",
                "",
                "namespaced",
                1,
                "kind",
                "PodMetrics",
                "verbs",
                "get",
                "list"));
}

static json_t *usage_json(double cpu_cores, double memory_bytes)
{
        char cpu[32], memory[32];

        snprintf(cpu, sizeof(cpu), "%" PRId64 "n", (int64_t)(cpu_cores * 1e9));
        snprintf(memory, sizeof(memory), "%" PRId64 "Ki", (int64_t)(memory_bytes / 1024));
        return json_pack("{s:s, s:s}", "cpu", cpu, "memory", memory);
}

static json_t *metrics_item(const char *name, const char *namespace, double time_s, double window_s)
{
        char ts[XP_RFC3339_MAX], window[32];
        json_t *meta = json_pack("{s:s}", "name", name);

        xp_time_format_rfc3339((int64_t)time_s, ts);
        snprintf(window, sizeof(window), "%.0fs", window_s);
        if (meta && namespace)
                json_object_set_new(meta, "namespace", json_string(namespace));
        if (meta)
                json_object_set_new(meta, "creationTimestamp", json_string(ts));
        return json_pack("{s:o, s:s, s:s}", "metadata", meta, "timestamp", ts, "window", window);
}

static json_t *node_item(const struct srv_usage_node *n)
{
        json_t *item = metrics_item(n->name, NULL, n->time_s, n->window_s);

        if (item)
                json_object_set_new(item, "usage", usage_json(n->cpu_cores, n->memory_bytes));
        return item;
}

static json_t *pod_item(const struct srv_usage_pod *p)
{
        json_t *item = metrics_item(p->name, p->namespace, p->time_s, p->window_s),
               *containers = json_array();

        for (size_t c = 0; item && containers && c < p->n_containers; c++)
                json_array_append_new(containers,
                                      json_pack("{s:s, s:o}",
                                                "name",
                                                p->containers[c].name,
                                                "usage",
                                                usage_json(p->containers[c].cpu_cores,
                                                           p->containers[c].memory_bytes)));
        if (!item || !containers) {
                json_decref(item);
                json_decref(containers);
                return NULL;
        }
        json_object_set_new(item, "containers", containers);
        return item;
}

static int
reply_list_of(struct reply *ret, const char *kind, const char *api_version, json_t *items)
{
        return reply_json(ret,
                          200,
                          json_pack("{s:s, s:s, s:{}, s:o}",
                                    "kind",
                                    kind,
                                    "apiVersion",
                                    api_version,
                                    "metadata",
                                    "items",
                                    items));
}

static int reply_list(struct reply *ret, const char *kind, json_t *items)
{
        return reply_list_of(ret, kind, METRICS_GV, items);
}

static int reply_not_found(struct reply *ret, const char *resource, const char *name)
{
        return reply_status(ret,
                            404,
                            "NotFound",
                            name,
                            resource,
                            "%s.metrics.k8s.io \"%s\" not found",
                            resource,
                            name);
}

int handle_node_metrics(const struct request *req, const struct route *route, struct reply *ret)
{
        _cleanup_free_ struct srv_usage_node *nodes = NULL;
        json_t *items;
        size_t n = 0;
        int r;

        (void)route;
        r = req->api->usage ? srv_usage_nodes(req->api->usage, &nodes, &n) : 0;
        if (r < 0)
                return r;
        for (size_t i = 0; req->name && i < n; i++)
                if (strcmp(nodes[i].name, req->name) == 0)
                        return reply_json(ret, 200, node_item(&nodes[i]));
        if (req->name)
                return reply_not_found(ret, "nodes", req->name);
        items = json_array();
        for (size_t i = 0; items && i < n; i++)
                json_array_append_new(items, node_item(&nodes[i]));
        return items ? reply_list(ret, "NodeMetricsList", items) : -ENOMEM;
}

int handle_pod_metrics(const struct request *req, const struct route *route, struct reply *ret)
{
        _cleanup_free_ struct srv_usage_pod *pods = NULL;
        json_t *items;
        size_t n = 0;
        int r;

        (void)route;
        r = req->api->usage ? srv_usage_pods(req->api->usage, req->namespace, &pods, &n) : 0;
        if (r < 0)
                return r;
        for (size_t i = 0; req->name && i < n; i++)
                if (strcmp(pods[i].name, req->name) == 0)
                        return reply_json(ret, 200, pod_item(&pods[i]));
        if (req->name)
                return reply_not_found(ret, "pods", req->name);
        items = json_array();
        for (size_t i = 0; items && i < n; i++)
                json_array_append_new(items, pod_item(&pods[i]));
        return items ? reply_list(ret, "PodMetricsList", items) : -ENOMEM;
}

static json_t *device_item(const struct srv_usage_device *d)
{
        char ts[XP_RFC3339_MAX], name[400];
        json_t *usage = json_object();

        xp_time_format_rfc3339((int64_t)d->time_s, ts);
        snprintf(name, sizeof(name), "%s.%s", d->node, d->device);
        if (usage && d->has_utilization)
                json_object_set_new(usage, "utilizationPercent", json_real(d->utilization_percent));
        if (usage && d->has_memory_used)
                json_object_set_new(
                    usage, "memoryUsedBytes", json_integer((json_int_t)d->memory_used_bytes));
        if (usage && d->has_memory_total)
                json_object_set_new(
                    usage, "memoryTotalBytes", json_integer((json_int_t)d->memory_total_bytes));
        return json_pack("{s:{s:s}, s:s, s:s, s:s, s:s, s:s, s:o*}",
                         "metadata",
                         "name",
                         name,
                         "node",
                         d->node,
                         "device",
                         d->device,
                         "kind",
                         d->kind,
                         "model",
                         d->model,
                         "timestamp",
                         ts,
                         "usage",
                         usage);
}

/* xpool's own: each device's latest figures as the agents reported them (xpool top). */
int handle_device_metrics(const struct request *req, const struct route *route, struct reply *ret)
{
        _cleanup_free_ struct srv_usage_device *devices = NULL;
        json_t *items;
        size_t n = 0;
        int r;

        (void)route;
        r = req->api->usage ? srv_usage_devices(req->api->usage, &devices, &n) : 0;
        if (r < 0)
                return r;
        items = json_array();
        for (size_t i = 0; items && i < n; i++)
                json_array_append_new(items, device_item(&devices[i]));
        return items ? reply_list_of(ret, "DeviceMetricsList", "metrics.xpool.io/v1alpha1", items)
                     : -ENOMEM;
}
