/* SPDX-License-Identifier: Apache-2.0 */
/*
 * xpool describe: one pod or node for a person, laid out as kubectl describe lays it out, plus
 * what xpool adds: the devices a pod asks for, and a node's device inventory.
 */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "client.h"
#include "xpool/apiresource.h"
#include "xpool/macro.h"
#include "xpool/quantity.h"
#include "xpool/strutil.h"
#include "xpool/table.h"

static const char usage[] =
    "Usage: xpool describe pod|node NAME... [-n NS]\n\n"
    "Shows objects in detail: for a pod its node, status, containers with their images,\n"
    "commands, limits, requests and state, the devices it asks for, conditions and events; for\n"
    "a node its capacity, its devices (model, id, memory, health), conditions, the pods on it\n"
    "and the resources they take.\n" XP_CLIENT_USAGE;

#define NONE         "<none>"
#define LAST_APPLIED "kubectl.kubernetes.io/last-applied-configuration"

static const char *str(const json_t *object, const char *key)
{
        return json_string_value(json_object_get(object, key));
}

static const char *str_or(const json_t *object, const char *key, const char *fallback)
{
        const char *s = str(object, key);

        return s && *s ? s : fallback;
}

/* "Key:" padded to the value column, as kubectl's tabwriter aligns each block. */
static void field(int indent, int width, const char *key, const char *fmt, ...) _printf_(4, 5);
static void field(int indent, int width, const char *key, const char *fmt, ...)
{
        va_list ap;
        int n = printf("%*s%s:", indent, "", key);

        printf("%*s", n < indent + width ? indent + width - n : 1, "");
        va_start(ap, fmt);
        vprintf(fmt, ap);
        va_end(ap);
        putchar('\n');
}

/* A map as `key=value` lines, the first beside the key, the rest under it. */
static void map_field(int width, const char *key, const json_t *map)
{
        const char *k;
        json_t *v;
        bool first = true;

        json_object_foreach((json_t *)map, k, v)
        {
                const char *s = json_is_string(v) ? json_string_value(v) : "";

                /* The manifest copy apply keeps is noise here, as kubectl describe finds. */
                if (strcmp(k, LAST_APPLIED) == 0)
                        continue;

                if (first)
                        field(0, width, key, "%s=%s", k, s);
                else
                        printf("%*s%s=%s\n", width, "", k, s);
                first = false;
        }
        if (first)
                field(0, width, key, NONE);
}

/* Resources as `name:  quantity` lines under a heading. */
static void resources_block(int indent, const char *heading, const json_t *list)
{
        size_t width = 0;
        const char *k;
        json_t *v;

        if (json_object_size(list) == 0)
                return;
        json_object_foreach((json_t *)list, k, v) if (strlen(k) > width) width = strlen(k);
        printf("%*s%s:\n", indent, "", heading);
        json_object_foreach((json_t *)list, k, v)
        {
                printf("%*s%s:%*s%s\n",
                       indent + 2,
                       "",
                       k,
                       (int)(width - strlen(k) + 2),
                       "",
                       json_is_string(v) ? json_string_value(v) : "?");
        }
}

/* ---- aligned columns (events, conditions, pods, devices) ---- */

#define MAX_COLUMNS 8

struct columns {
        size_t n_columns;
        size_t width[MAX_COLUMNS];
        json_t *rows; /* array of arrays of strings */
};

static int columns_add(struct columns *c, const char *const *cells)
{
        json_t *row = json_array();

        if (!row || json_array_append_new(c->rows, row) < 0)
                return -ENOMEM;
        for (size_t i = 0; i < c->n_columns; i++) {
                const char *cell = cells[i] ? cells[i] : "";

                if (strlen(cell) > c->width[i])
                        c->width[i] = strlen(cell);
                if (json_array_append_new(row, json_string(cell)) < 0)
                        return -ENOMEM;
        }
        return 0;
}

/* Prints the header, an underline of dashes when `underline`, and the rows. */
static void columns_print(struct columns *c, int indent, bool underline)
{
        size_t i;
        json_t *row;

        json_array_foreach(c->rows, i, row)
        {
                for (int pass = 0; pass < (i == 0 && underline ? 2 : 1); pass++) {
                        printf("%*s", indent, "");
                        for (size_t col = 0; col < c->n_columns; col++) {
                                const char *cell = json_string_value(json_array_get(row, col));
                                size_t len = strlen(cell);
                                bool last = col + 1 == c->n_columns;

                                if (pass == 1)
                                        for (size_t d = 0; d < len; d++)
                                                putchar('-');
                                else
                                        fputs(cell, stdout);
                                if (!last)
                                        printf("%*s", (int)(c->width[col] - len + 2), "");
                        }
                        putchar('\n');
                }
        }
}

static int columns_init(struct columns *c, const char *const *headers, size_t n)
{
        *c = (struct columns){.n_columns = n, .rows = json_array()};
        return c->rows ? columns_add(c, headers) : -ENOMEM;
}

/* ---- events ---- */

/* When an event last happened: lastTimestamp, else (events.k8s.io's) eventTime. */
static const json_t *event_last(const json_t *event)
{
        const json_t *last = json_object_get(event, "lastTimestamp");

        return json_is_string(last) ? last : json_object_get(event, "eventTime");
}

/*
 * Oldest first, as kubectl describe lists them: the store keeps an event where it was created,
 * so one that recurred (its count and lastTimestamp raised) would otherwise sit among older ones.
 * RFC 3339 times in UTC compare as strings; an event without a time comes first.
 */
static int event_order(const void *a, const void *b)
{
        const char *ta = json_string_value(event_last(*(const json_t *const *)a));
        const char *tb = json_string_value(event_last(*(const json_t *const *)b));

        return strcmp(ta ? ta : "", tb ? tb : "");
}

static int print_events(struct xp_client *client,
                        const char *namespace,
                        const char *kind,
                        const char *name,
                        const char *uid)
{
        static const char *const headers[] = {"Type", "Reason", "Age", "From", "Message"};
        json_auto_t *list = NULL;
        struct xp_error err = {0};
        struct columns cols;
        char path[2048], selector[1024];
        const struct xp_api_resource *events = xp_api_resource_find("events", NULL);
        _cleanup_free_ const json_t **sorted = NULL;
        size_t i, n;
        json_t *item;
        int r;

        /* The uid too, as kubectl's: a pod deleted and created again under its name keeps its
         * old events until they expire, and they are not the new pod's. */
        snprintf(selector,
                 sizeof(selector),
                 "involvedObject.name=%s,involvedObject.kind=%s%s%s",
                 name,
                 kind,
                 uid ? ",involvedObject.uid=" : "",
                 uid ? uid : "");
        if (xp_api_resource_path(
                events, namespace ? namespace : "default", NULL, path, sizeof(path)) < 0 ||
            xp_client_add_query(path, sizeof(path), "fieldSelector", selector) < 0)
                return -ENAMETOOLONG;
        r = xp_client_json(client, "GET", path, NULL, NULL, NULL, &list, &err);
        /* A server without events yet answers 404: the description stands without them. */
        if (r == -ENOENT) {
                printf("Events:            <none>\n");
                return 0;
        }
        if (r < 0) {
                xp_client_report(&err);
                return r;
        }
        if (json_array_size(json_object_get(list, "items")) == 0) {
                printf("Events:            <none>\n");
                return 0;
        }
        n = json_array_size(json_object_get(list, "items"));
        sorted = calloc(n, sizeof(*sorted));
        if (!sorted || columns_init(&cols, headers, XP_ELEMENTSOF(headers)) < 0)
                return -ENOMEM;
        json_array_foreach(json_object_get(list, "items"), i, item)
        {
                sorted[i] = item;
        }
        qsort(sorted, n, sizeof(*sorted), event_order);
        for (i = 0; i < n; i++) {
                const json_t *event = sorted[i];
                const json_t *source = json_object_get(event, "source");
                json_int_t count = json_integer_value(json_object_get(event, "count"));
                char age[XP_DURATION_MAX], first[XP_DURATION_MAX], when[96];
                const char *cells[5];

                xp_table_age(event_last(event), time(NULL), age, sizeof(age));
                xp_table_age(
                    json_object_get(event, "firstTimestamp"), time(NULL), first, sizeof(first));
                if (count > 1)
                        snprintf(
                            when, sizeof(when), "%s (x%lld over %s)", age, (long long)count, first);
                else
                        snprintf(when, sizeof(when), "%s", age);
                cells[0] = str(event, "type");
                cells[1] = str(event, "reason");
                cells[2] = when;
                cells[3] = str_or(source, "component", str(event, "reportingComponent"));
                cells[4] = str(event, "message");
                if (columns_add(&cols, cells) < 0) {
                        json_decref(cols.rows);
                        return -ENOMEM;
                }
        }
        printf("Events:\n");
        columns_print(&cols, 2, true);
        json_decref(cols.rows);
        return 0;
}

static void print_conditions(const json_t *conditions, bool node)
{
        static const char *const pod_headers[] = {"Type", "Status"};
        static const char *const node_headers[] = {
            "Type", "Status", "LastHeartbeatTime", "LastTransitionTime", "Reason", "Message"};
        struct columns cols;
        size_t i;
        json_t *c;

        if (json_array_size(conditions) == 0) {
                printf("Conditions:        <none>\n");
                return;
        }
        if (columns_init(&cols, node ? node_headers : pod_headers, node ? 6 : 2) < 0)
                return;
        json_array_foreach(conditions, i, c)
        {
                const char *cells[] = {
                    str(c, "type"),
                    str(c, "status"),
                    str(c, "lastHeartbeatTime"),
                    str(c, "lastTransitionTime"),
                    str(c, "reason"),
                    str(c, "message"),
                };

                if (columns_add(&cols, cells) < 0)
                        break;
        }
        printf("Conditions:\n");
        columns_print(&cols, 2, true);
        json_decref(cols.rows);
}

/* ---- pods ---- */

/* What an xpool pod asks for beyond CPU and memory: the extended resources, summed. */
static bool is_device_resource(const char *name)
{
        return strchr(name, '/') != NULL && strncmp(name, "kubernetes.io/", 14) != 0 &&
               strncmp(name, "hugepages-", 10) != 0;
}

static int sum_into(json_t *sums, const char *name, const char *value)
{
        struct xp_quantity a = {0}, b, total;
        json_t *have = json_object_get(sums, name);
        char text[XP_QUANTITY_STRING_MAX];

        if (!value || xp_quantity_parse(value, &b, NULL) < 0)
                return 0;
        if (have && xp_quantity_parse(json_string_value(have), &a, NULL) < 0)
                return 0;
        if (!have)
                a = xp_quantity_from_int(0);
        if (xp_quantity_add(&a, &b, &total) < 0)
                return 0;
        return json_object_set_new(sums, name, json_string(xp_quantity_format(&total, text)));
}

static void print_container(const json_t *container, const json_t *statuses)
{
        const char *name = str(container, "name");
        const json_t *status = NULL, *state, *resources = json_object_get(container, "resources");
        const char *k;
        size_t i;
        json_t *v;

        json_array_foreach(statuses, i, v) if (xp_streq0(str(v, "name"), name)) status = v;
        printf("  %s:\n", name ? name : "<unnamed>");
        if (status && str(status, "containerID"))
                field(4, 16, "Container ID", "%s", str(status, "containerID"));
        field(4, 16, "Image", "%s", str_or(container, "image", NONE));
        for (int which = 0; which < 2; which++) {
                const char *key = which ? "args" : "command";
                const json_t *list = json_object_get(container, key);

                if (json_array_size(list) == 0)
                        continue;
                printf("    %s:\n", which ? "Args" : "Command");
                json_array_foreach(list, i, v) printf("      %s\n", json_string_value(v));
        }
        state = json_object_get(status, "state");
        if (json_object_size(state) == 0) {
                field(4, 16, "State", "Waiting");
                field(6, 14, "Reason", "%s", status ? "Unknown" : "not started on a node yet");
        }
        json_object_foreach((json_t *)state, k, v)
        {
                char cap[32];

                snprintf(cap, sizeof(cap), "%s", k);
                cap[0] = (char)(cap[0] >= 'a' && cap[0] <= 'z' ? cap[0] - 32 : cap[0]);
                field(4, 16, "State", "%s", cap);
                if (str(v, "reason"))
                        field(6, 14, "Reason", "%s", str(v, "reason"));
                if (json_is_integer(json_object_get(v, "exitCode")))
                        field(6,
                              14,
                              "Exit Code",
                              "%lld",
                              (long long)json_integer_value(json_object_get(v, "exitCode")));
                if (str(v, "startedAt"))
                        field(6, 14, "Started", "%s", str(v, "startedAt"));
                if (str(v, "finishedAt"))
                        field(6, 14, "Finished", "%s", str(v, "finishedAt"));
                if (str(v, "message"))
                        field(6, 14, "Message", "%s", str(v, "message"));
        }
        field(4,
              16,
              "Ready",
              "%s",
              json_is_true(json_object_get(status, "ready")) ? "True" : "False");
        field(4,
              16,
              "Restart Count",
              "%lld",
              (long long)json_integer_value(json_object_get(status, "restartCount")));
        resources_block(4, "Limits", json_object_get(resources, "limits"));
        resources_block(4, "Requests", json_object_get(resources, "requests"));
}

static int describe_pod(struct xp_client *client, const json_t *pod)
{
        const json_t *metadata = json_object_get(pod, "metadata"),
                     *spec = json_object_get(pod, "spec");
        const json_t *status = json_object_get(pod, "status");
        json_auto_t *devices = json_object();
        const char *node = str(spec, "nodeName"), *host_ip = str(status, "hostIP");
        size_t i;
        json_t *c;

        if (!devices)
                return -ENOMEM;
        field(0, 18, "Name", "%s", str_or(metadata, "name", ""));
        field(0, 18, "Namespace", "%s", str_or(metadata, "namespace", ""));
        field(0,
              18,
              "Priority",
              "%lld",
              (long long)json_integer_value(json_object_get(spec, "priority")));
        if (node)
                field(0, 18, "Node", "%s%s%s", node, host_ip ? "/" : "", host_ip ? host_ip : "");
        else
                field(0, 18, "Node", NONE);
        if (str(status, "startTime"))
                field(0, 18, "Start Time", "%s", str(status, "startTime"));
        map_field(18, "Labels", json_object_get(metadata, "labels"));
        map_field(18, "Annotations", json_object_get(metadata, "annotations"));
        field(0, 18, "Status", "%s", str_or(status, "phase", "Unknown"));
        if (str(status, "reason"))
                field(0, 18, "Reason", "%s", str(status, "reason"));
        if (str(status, "message"))
                field(0, 18, "Message", "%s", str(status, "message"));
        field(0, 18, "IP", "%s", str_or(status, "podIP", ""));
        for (int init = 1; init >= 0; init--) {
                const json_t *list = json_object_get(spec, init ? "initContainers" : "containers");
                const json_t *statuses =
                    json_object_get(status, init ? "initContainerStatuses" : "containerStatuses");

                if (json_array_size(list) == 0)
                        continue;
                printf("%s:\n", init ? "Init Containers" : "Containers");
                json_array_foreach(list, i, c) print_container(c, statuses);
        }
        /* The devices the scheduler must find: extended resources summed over containers. */
        json_array_foreach(json_object_get(spec, "containers"), i, c)
        {
                const char *k;
                json_t *v;

                json_object_foreach(
                    json_object_get(json_object_get(c, "resources"), "limits"), k, v)
                {
                        if (is_device_resource(k) && sum_into(devices, k, json_string_value(v)) < 0)
                                return -ENOMEM;
                }
        }
        if (json_object_size(devices) == 0)
                printf("Devices:           <none>\n");
        else
                resources_block(0, "Devices", devices);
        print_conditions(json_object_get(status, "conditions"), false);
        if (json_array_size(json_object_get(spec, "tolerations")) > 0) {
                printf("Tolerations:\n");
                json_array_foreach(json_object_get(spec, "tolerations"), i, c)
                {
                        printf("  %s%s%s%s%s\n",
                               str_or(c, "key", ""),
                               str(c, "value") ? "=" : "",
                               str_or(c, "value", ""),
                               str(c, "effect") ? ":" : "",
                               str_or(c, "effect", ""));
                }
        }
        return print_events(
            client, str(metadata, "namespace"), "Pod", str(metadata, "name"), str(metadata, "uid"));
}

/* ---- nodes ---- */

static void print_devices(const json_t *devices)
{
        static const char *const headers[] = {"ID", "Model", "Kind", "Memory", "Health"};
        struct columns cols;
        size_t i;
        json_t *d;

        if (json_array_size(devices) == 0) {
                printf("Devices:           <none>\n");
                return;
        }
        if (columns_init(&cols, headers, XP_ELEMENTSOF(headers)) < 0)
                return;
        json_array_foreach(devices, i, d)
        {
                json_int_t bytes = json_integer_value(json_object_get(d, "memoryBytes"));
                char memory[XP_QUANTITY_STRING_MAX] = "";
                const char *cells[5];

                if (bytes > 0) {
                        /* Whole GiB where it is, as people quote accelerator memory. */
                        if (bytes % (1024LL * 1024 * 1024) == 0)
                                snprintf(
                                    memory, sizeof(memory), "%lldGi", (long long)(bytes >> 30));
                        else
                                snprintf(
                                    memory, sizeof(memory), "%lldMi", (long long)(bytes >> 20));
                }
                cells[0] = str(d, "id");
                cells[1] = str(d, "model");
                cells[2] = str(d, "kind");
                cells[3] = memory;
                cells[4] = str_or(d, "health", "Unknown");
                if (columns_add(&cols, cells) < 0)
                        break;
        }
        printf("Devices:\n");
        columns_print(&cols, 2, true);
        json_decref(cols.rows);
}

/* Adds the pod's container requests and limits to its own sums and the node's. */
static void sum_pod(
    const json_t *pod, json_t *pod_requests, json_t *pod_limits, json_t *requests, json_t *limits)
{
        size_t j;
        json_t *c;

        json_array_foreach(json_object_get(json_object_get(pod, "spec"), "containers"), j, c)
        {
                const json_t *res = json_object_get(c, "resources");
                const char *k;
                json_t *v;

                json_object_foreach(json_object_get(res, "limits"), k, v)
                {
                        sum_into(pod_limits, k, json_string_value(v));
                        sum_into(limits, k, json_string_value(v));
                        /* Kubernetes defaults requests to limits when only limits are set. */
                        if (!json_object_get(json_object_get(res, "requests"), k)) {
                                sum_into(pod_requests, k, json_string_value(v));
                                sum_into(requests, k, json_string_value(v));
                        }
                }
                json_object_foreach(json_object_get(res, "requests"), k, v)
                {
                        sum_into(pod_requests, k, json_string_value(v));
                        sum_into(requests, k, json_string_value(v));
                }
        }
}

/* The node's pods that still run, one row each, summing their requests and limits. */
static int print_pod_rows(const json_t *list, const char *node, json_t *requests, json_t *limits)
{
        static const char *const headers[] = {"Namespace", "Name", "Requests", "Limits", "Age"};
        struct columns cols;
        size_t i;
        json_t *pod;

        if (columns_init(&cols, headers, XP_ELEMENTSOF(headers)) < 0)
                return -ENOMEM;
        json_array_foreach(json_object_get(list, "items"), i, pod)
        {
                const json_t *metadata = json_object_get(pod, "metadata");
                const char *phase = str(json_object_get(pod, "status"), "phase");
                json_auto_t *pod_requests = json_object(), *pod_limits = json_object();
                char age[XP_DURATION_MAX];
                const char *cells[5];

                /* A server that ignores the selector answers every pod: keep this node's. */
                if (!xp_streq0(str(json_object_get(pod, "spec"), "nodeName"), node) ||
                    xp_streq0(phase, "Succeeded") || xp_streq0(phase, "Failed"))
                        continue;
                sum_pod(pod, pod_requests, pod_limits, requests, limits);
                _cleanup_free_ char *req_text = json_dumps(pod_requests, JSON_COMPACT);
                _cleanup_free_ char *lim_text = json_dumps(pod_limits, JSON_COMPACT);
                xp_table_age(
                    json_object_get(metadata, "creationTimestamp"), time(NULL), age, sizeof(age));
                cells[0] = str(metadata, "namespace");
                cells[1] = str(metadata, "name");
                cells[2] = json_object_size(pod_requests) ? req_text : NONE;
                cells[3] = json_object_size(pod_limits) ? lim_text : NONE;
                cells[4] = age;
                if (columns_add(&cols, cells) < 0)
                        break;
        }
        printf("Non-terminated Pods:  (%zu in total)\n", json_array_size(cols.rows) - 1);
        if (json_array_size(cols.rows) > 1)
                columns_print(&cols, 2, false);
        json_decref(cols.rows);
        return 0;
}

/* What the pods hold of each allocatable resource. */
static int print_allocated(const json_t *allocatable, const json_t *requests, const json_t *limits)
{
        static const char *const headers[] = {"Resource", "Requests", "Limits", "Allocatable"};
        struct columns cols;
        const char *k;
        json_t *v;

        if (columns_init(&cols, headers, XP_ELEMENTSOF(headers)) < 0)
                return -ENOMEM;
        json_object_foreach((json_t *)allocatable, k, v)
        {
                const char *cells[] = {
                    k, str_or(requests, k, "0"), str_or(limits, k, "0"), json_string_value(v)};

                if (xp_streq0(k, "pods"))
                        continue;
                if (columns_add(&cols, cells) < 0)
                        break;
        }
        printf("Allocated resources:\n");
        columns_print(&cols, 2, true);
        json_decref(cols.rows);
        return 0;
}

static int print_node_pods(struct xp_client *client, const char *node, const json_t *allocatable)
{
        json_auto_t *list = NULL, *requests = json_object(), *limits = json_object();
        struct xp_error err = {0};
        char path[2048], selector[512];
        int r;

        snprintf(selector, sizeof(selector), "spec.nodeName=%s", node);
        if (!requests || !limits)
                return -ENOMEM;
        if (xp_api_resource_path(
                xp_api_resource_find("pods", NULL), NULL, NULL, path, sizeof(path)) < 0 ||
            xp_client_add_query(path, sizeof(path), "fieldSelector", selector) < 0)
                return -ENAMETOOLONG;
        r = xp_client_json(client, "GET", path, NULL, NULL, NULL, &list, &err);
        if (r < 0) {
                xp_client_report(&err);
                return r;
        }
        r = print_pod_rows(list, node, requests, limits);
        return r < 0 ? r : print_allocated(allocatable, requests, limits);
}

static int describe_node(struct xp_client *client, const json_t *node)
{
        const json_t *metadata = json_object_get(node, "metadata"),
                     *spec = json_object_get(node, "spec");
        const json_t *status = json_object_get(node, "status"),
                     *info = json_object_get(status, "nodeInfo");
        const char *k;
        size_t i;
        json_t *v;
        bool any = false;
        int r;

        field(0, 18, "Name", "%s", str_or(metadata, "name", ""));
        printf("Roles:            ");
        json_object_foreach(json_object_get(metadata, "labels"), k, v)
        {
                if (strncmp(k, "node-role.kubernetes.io/", 24) == 0) {
                        printf("%s%s", any ? "," : "", k + 24);
                        any = true;
                }
        }
        printf("%s\n", any ? "" : NONE);
        map_field(18, "Labels", json_object_get(metadata, "labels"));
        map_field(18, "Annotations", json_object_get(metadata, "annotations"));
        field(0, 18, "CreationTimestamp", "%s", str_or(metadata, "creationTimestamp", NONE));
        if (json_array_size(json_object_get(spec, "taints")) == 0)
                field(0, 18, "Taints", NONE);
        json_array_foreach(json_object_get(spec, "taints"), i, v)
        {
                char taint[512];

                snprintf(taint,
                         sizeof(taint),
                         "%s%s%s:%s",
                         str_or(v, "key", ""),
                         str(v, "value") ? "=" : "",
                         str_or(v, "value", ""),
                         str_or(v, "effect", ""));
                if (i == 0)
                        field(0, 18, "Taints", "%s", taint);
                else
                        printf("%18s%s\n", "", taint);
        }
        field(0,
              18,
              "Unschedulable",
              "%s",
              json_is_true(json_object_get(spec, "unschedulable")) ? "true" : "false");
        print_conditions(json_object_get(status, "conditions"), true);
        printf("Addresses:\n");
        json_array_foreach(json_object_get(status, "addresses"), i, v)
            field(2, 14, str_or(v, "type", "?"), "%s", str_or(v, "address", ""));
        resources_block(0, "Capacity", json_object_get(status, "capacity"));
        resources_block(0, "Allocatable", json_object_get(status, "allocatable"));
        if (json_object_size(info) > 0) {
                printf("System Info:\n");
                field(2, 20, "Kernel Version", "%s", str_or(info, "kernelVersion", ""));
                field(2, 20, "OS Image", "%s", str_or(info, "osImage", ""));
                field(2, 20, "Operating System", "%s", str_or(info, "operatingSystem", ""));
                field(2, 20, "Architecture", "%s", str_or(info, "architecture", ""));
                field(2, 20, "Kubelet Version", "%s", str_or(info, "kubeletVersion", ""));
        }
        print_devices(json_object_get(json_object_get(status, "xpool"), "devices"));
        r = print_node_pods(
            client, str_or(metadata, "name", ""), json_object_get(status, "allocatable"));
        if (r < 0)
                return r;
        /* no uid: agents, as kubelets, name a node's events with the node's name as its uid */
        return print_events(client, "default", "Node", str(metadata, "name"), NULL);
}

int xp_cmd_describe(int argc, char **argv)
{
        static const struct option options[] = {
            {"help", no_argument, NULL, 'h'},
            XP_CLIENT_LONG_OPTIONS,
            {NULL, 0, NULL, 0},
        };
        _cleanup_(xp_client_freep) struct xp_client *client = NULL;
        struct xp_client_options copts = {0};
        struct xp_error err = {0};
        const struct xp_api_resource *resource;
        int status;

        status = xp_client_getopt(argc, argv, "n:h", options, usage, &copts, NULL, NULL);
        if (status != 0)
                return status < 0 ? 0 : status;
        if (optind + 1 >= argc) {
                fprintf(stderr, "xpool describe: say what to describe: pod NAME or node NAME\n");
                fputs(usage, stderr);
                return XP_EXIT_USAGE;
        }
        resource = xp_api_resource_find(argv[optind], &err);
        if (!resource) {
                fprintf(stderr, "error: %s\n", xp_error_message(&err));
                return XP_EXIT_FAILURE;
        }
        if (strcmp(resource->kind, "Pod") != 0 && strcmp(resource->kind, "Node") != 0) {
                fprintf(
                    stderr,
                    "xpool describe: describes pods and nodes; use 'xpool get %s -o yaml' for %s\n",
                    resource->plural,
                    resource->plural);
                return XP_EXIT_USAGE;
        }
        if (xp_client_new(&copts, &client, &err) < 0) {
                xp_client_report(&err);
                return XP_EXIT_FAILURE;
        }
        for (int i = optind + 1; i < argc; i++) {
                json_auto_t *object = NULL;
                char path[2048];
                int r;

                if (xp_api_resource_path(
                        resource, xp_client_namespace(client), argv[i], path, sizeof(path)) < 0) {
                        fprintf(stderr, "error: the name %s is too long\n", argv[i]);
                        status = XP_EXIT_FAILURE;
                        continue;
                }
                r = xp_client_json(client, "GET", path, NULL, NULL, NULL, &object, &err);
                if (r < 0) {
                        xp_client_report(&err);
                        if (r != -ENOENT)
                                return XP_EXIT_FAILURE;
                        status = XP_EXIT_FAILURE;
                        continue;
                }
                if (i > optind + 1)
                        printf("\n\n");
                r = strcmp(resource->kind, "Pod") == 0 ? describe_pod(client, object)
                                                       : describe_node(client, object);
                if (r < 0)
                        status = XP_EXIT_FAILURE;
        }
        fflush(stdout);
        return status;
}
