/* SPDX-License-Identifier: Apache-2.0 */
/*
 * xpool top [nodes|pods|devices] (docs/monitoring.md): what kubectl top shows, from the same
 * metrics.k8s.io answers, plus the devices: per node and device kind, and per device, what is
 * allocated (from the pods' placements) and what is used (the agents' latest figures).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "client.h"
#include "xpool/placement.h"
#include "xpool/quantity.h"
#include "xpool/strutil.h"

static const char usage[] =
    "Usage: xpool top [nodes|pods|devices] [-n NS | -A] [options]\n"
    "Shows what the nodes, pods and devices use, as the agents last reported it (every 15 s by\n"
    "default): nodes' and pods' CPU and memory as kubectl top shows them, and per node, device\n"
    "kind and device what is allocated and what is used. Without a word, all three.\n\n"
    "  -A, --all-namespaces pods of every namespace\n" XP_CLIENT_USAGE;

struct top {
        struct xp_client *client;
        bool all_namespaces;
        json_t *pods;    /* every namespace's, for the placements */
        json_t *devices; /* DeviceMetricsList items */
};

static int top_option(int c, const char *arg, void *userdata)
{
        struct top *t = userdata;

        (void)arg;
        if (c == 'A')
                t->all_namespaces = true;
        return 0;
}

/* In thousandths, rounded up: kubectl top's MilliValue(). */
static int64_t quantity(const char *text)
{
        struct xp_quantity q;
        int64_t milli = 0;

        if (!text || xp_quantity_parse(text, &q, NULL) < 0 || xp_quantity_to_milli(&q, &milli) < 0)
                return 0;
        return milli;
}

/* Truncated, as kubectl top's integer division: 916Mi of 23.5Gi is 3%, not 4%. */
static int64_t percent(int64_t used_milli, int64_t total_milli)
{
        return total_milli > 0 ? used_milli * 100 / total_milli : 0;
}

/* Whole MiB, truncated, as kubectl top's Value() / 2^20. */
static int64_t mebibytes(int64_t milli)
{
        return milli / 1000 / (1 << 20);
}

static const char *str(const json_t *o, const char *a, const char *b)
{
        return json_string_value(json_object_get(b ? json_object_get(o, a) : o, b ? b : a));
}

static int get(struct top *t, const char *path, json_t **ret)
{
        struct xp_error err = {0};
        int r = xp_client_json(t->client, "GET", path, NULL, NULL, NULL, ret, &err);

        if (r < 0)
                xp_client_report(&err);
        return r;
}

static int top_nodes(struct top *t)
{
        json_auto_t *metrics = NULL, *nodes = NULL;
        json_t *m, *n;
        size_t i, k;

        if (get(t, "/apis/metrics.k8s.io/v1beta1/nodes", &metrics) < 0 ||
            get(t, "/api/v1/nodes", &nodes) < 0)
                return -EIO;
        printf("%-20s %-11s %-6s %-14s %s\n",
               "NODE",
               "CPU(cores)",
               "CPU%",
               "MEMORY(bytes)",
               "MEMORY%");
        json_array_foreach(json_object_get(metrics, "items"), i, m)
        {
                const char *name = str(m, "metadata", "name");
                int64_t cpu = quantity(str(m, "usage", "cpu")),
                        memory = quantity(str(m, "usage", "memory"));
                int64_t cpu_total = 0, memory_total = 0;

                json_array_foreach(json_object_get(nodes, "items"),
                                   k,
                                   n) if (name && str(n, "metadata", "name") &&
                                          strcmp(name, str(n, "metadata", "name")) == 0)
                {
                        json_t *alloc =
                            json_object_get(json_object_get(n, "status"), "allocatable");

                        cpu_total = quantity(str(alloc, "cpu", NULL));
                        memory_total = quantity(str(alloc, "memory", NULL));
                }
                printf("%-20s %-11" PRId64 " %-6" PRId64 " %-14" PRId64 " %" PRId64 "\n",
                       name ? name : "",
                       cpu,
                       percent(cpu, cpu_total),
                       mebibytes(memory),
                       percent(memory, memory_total));
        }
        printf("(CPU in millicores, memory in MiB)\n");
        return 0;
}

static int top_pods(struct top *t)
{
        json_auto_t *metrics = NULL;
        char path[512];
        json_t *m;
        size_t i;

        if (t->all_namespaces)
                snprintf(path, sizeof(path), "/apis/metrics.k8s.io/v1beta1/pods");
        else
                snprintf(path,
                         sizeof(path),
                         "/apis/metrics.k8s.io/v1beta1/namespaces/%s/pods",
                         xp_client_namespace(t->client));
        if (get(t, path, &metrics) < 0)
                return -EIO;
        printf("%-15s %-30s %-11s %s\n", "NAMESPACE", "POD", "CPU(cores)", "MEMORY(bytes)");
        json_array_foreach(json_object_get(metrics, "items"), i, m)
        {
                int64_t cpu = 0, memory = 0;
                json_t *c;
                size_t k;

                json_array_foreach(json_object_get(m, "containers"), k, c)
                {
                        cpu += quantity(str(c, "usage", "cpu"));
                        memory += quantity(str(c, "usage", "memory"));
                }
                printf("%-15s %-30s %-11" PRId64 " %" PRId64 "\n",
                       str(m, "metadata", "namespace"),
                       str(m, "metadata", "name"),
                       cpu,
                       mebibytes(memory));
        }
        printf("(CPU in millicores, memory in MiB)\n");
        return 0;
}

/* What pods on node hold of device id: the sum of their milli, and the first pod's name. */
static int64_t
allocated(const struct top *t, const char *node, const char *id, const char **ret_pod)
{
        json_t *pod;
        int64_t milli = 0;
        size_t i;

        *ret_pod = NULL;
        json_array_foreach(json_object_get(t->pods, "items"), i, pod)
        {
                const char *placed =
                    str(json_object_get(pod, "metadata"), "annotations", XP_PLACEMENT_ANNOTATION);
                const char *phase = str(pod, "status", "phase");
                struct xp_placement p = {0};

                if (!placed || !xp_streq0(str(pod, "spec", "nodeName"), node) ||
                    xp_streq0(phase, "Succeeded") || xp_streq0(phase, "Failed") ||
                    xp_placement_from_json(placed, &p, NULL) < 0)
                        continue;
                for (size_t d = 0; d < p.devices.n; d++)
                        if (xp_streq0(p.devices.items[d].id, id)) {
                                milli += p.devices.items[d].milli;
                                if (!*ret_pod)
                                        *ret_pod = str(pod, "metadata", "name");
                        }
                xp_placement_done(&p);
        }
        return milli;
}

static const json_t *usage_of(const struct top *t, const char *node, const char *id)
{
        json_t *d;
        size_t i;

        json_array_foreach(
            json_object_get(t->devices, "items"),
            i,
            d) if (xp_streq0(str(d, "node", NULL), node) &&
                   xp_streq0(str(d, "device", NULL), id)) return json_object_get(d, "usage");
        return NULL;
}

struct kind_sum {
        char node[254], kind[16];
        int devices, used_n;
        int64_t milli;
        double util;
};

static void print_device(
    const struct top *t, const char *node, const json_t *dev, struct kind_sum *sums, size_t *n_sums)
{
        const char *id = str(dev, "id", NULL), *kind = str(dev, "kind", NULL), *pod = NULL;
        const json_t *u = usage_of(t, node, id);
        json_t *util = json_object_get(u, "utilizationPercent"),
               *mem = json_object_get(u, "memoryUsedBytes");
        int64_t milli = allocated(t, node, id, &pod);
        char used[32] = "-", memory[32] = "-";
        size_t k;

        if (util)
                snprintf(used, sizeof(used), "%.0f%%", json_number_value(util));
        if (mem)
                snprintf(memory, sizeof(memory), "%.0fMi", json_number_value(mem) / (1 << 20));
        printf("%-12s %-40s %-6s %-10.3g %-24s %-6s %s\n",
               node,
               id ? id : "",
               kind ? kind : "",
               (double)milli / 1000,
               pod ? pod : "-",
               used,
               memory);
        for (k = 0; k < *n_sums; k++)
                if (strcmp(sums[k].node, node) == 0 && xp_streq0(kind, sums[k].kind))
                        break;
        if (k == *n_sums && k < 256) {
                snprintf(sums[k].node, sizeof(sums[k].node), "%s", node);
                snprintf(sums[k].kind, sizeof(sums[k].kind), "%s", kind ? kind : "");
                (*n_sums)++;
        }
        if (k < 256) {
                sums[k].devices++;
                sums[k].milli += milli;
                if (util) {
                        sums[k].util += json_number_value(util);
                        sums[k].used_n++;
                }
        }
}

static int top_devices(struct top *t)
{
        json_auto_t *nodes = NULL;
        static struct kind_sum sums[256];
        size_t n_sums = 0, i, k;
        json_t *n, *d;

        if (get(t, "/api/v1/nodes", &nodes) < 0 || get(t, "/api/v1/pods", &t->pods) < 0 ||
            get(t, "/apis/metrics.xpool.io/v1alpha1/devices", &t->devices) < 0)
                return -EIO;
        printf("%-12s %-40s %-6s %-10s %-24s %-6s %s\n",
               "NODE",
               "DEVICE",
               "KIND",
               "ALLOCATED",
               "POD",
               "UTIL",
               "MEMORY");
        json_array_foreach(json_object_get(nodes, "items"), i, n)
        {
                const char *node = str(n, "metadata", "name");

                json_array_foreach(
                    json_object_get(json_object_get(json_object_get(n, "status"), "xpool"),
                                    "devices"),
                    k,
                    d) print_device(t, node ? node : "", d, sums, &n_sums);
        }
        printf("\n%-12s %-6s %-8s %-10s %s\n", "NODE", "KIND", "DEVICES", "ALLOCATED", "UTIL(avg)");
        for (k = 0; k < n_sums; k++) {
                char util[32] = "-";

                if (sums[k].used_n)
                        snprintf(util, sizeof(util), "%.0f%%", sums[k].util / sums[k].used_n);
                printf("%-12s %-6s %-8d %-10.3g %s\n",
                       sums[k].node,
                       sums[k].kind,
                       sums[k].devices,
                       (double)sums[k].milli / 1000,
                       util);
        }
        return 0;
}

int xp_cmd_top(int argc, char **argv)
{
        static const struct option options[] = {
            {"all-namespaces", no_argument, NULL, 'A'},
            {"help", no_argument, NULL, 'h'},
            XP_CLIENT_LONG_OPTIONS,
            {NULL, 0, NULL, 0},
        };
        struct xp_client_options copts = {0};
        struct xp_error err = {0};
        struct top t = {0};
        const char *what;
        int status, r = 0;

        status = xp_client_getopt(argc, argv, "An:h", options, usage, &copts, top_option, &t);
        if (status != 0)
                return status < 0 ? 0 : status;
        what = optind < argc ? argv[optind] : "all";
        if (strcmp(what, "all") != 0 && strcmp(what, "nodes") != 0 && strcmp(what, "pods") != 0 &&
            strcmp(what, "devices") != 0) {
                fprintf(stderr, "xpool top: '%s': say nodes, pods or devices\n", what);
                return XP_EXIT_USAGE;
        }
        if (xp_client_new(&copts, &t.client, &err) < 0) {
                xp_client_report(&err);
                return XP_EXIT_FAILURE;
        }
        if (strcmp(what, "all") == 0 || strcmp(what, "nodes") == 0)
                r = top_nodes(&t);
        if (r >= 0 && strcmp(what, "all") == 0)
                printf("\n");
        if (r >= 0 && (strcmp(what, "all") == 0 || strcmp(what, "pods") == 0))
                r = top_pods(&t);
        if (r >= 0 && strcmp(what, "all") == 0)
                printf("\n");
        if (r >= 0 && (strcmp(what, "all") == 0 || strcmp(what, "devices") == 0))
                r = top_devices(&t);
        json_decref(t.pods);
        json_decref(t.devices);
        xp_client_free(t.client);
        return r < 0 ? XP_EXIT_FAILURE : 0;
}
