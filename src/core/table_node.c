/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Node table: kubectl's columns (NAME STATUS ROLES AGE VERSION, wide: INTERNAL-IP EXTERNAL-IP
 * OS-IMAGE KERNEL-VERSION CONTAINER-RUNTIME) plus xpool's DEVICES, and in wide output CPU, MEMORY
 * and MODELS from the node's allocatable resources and its xpool device inventory.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "table_internal.h"

static const struct table_column node_columns[] = {
    {.name = "Name", .type = "string", .format = "name", .description = "Name of the node."},
    {.name = "Status",
     .type = "string",
     .description =
         "Ready, NotReady or Unknown (no Ready condition), with SchedulingDisabled when cordoned."},
    {.name = "Roles",
     .type = "string",
     .description = "Roles from the node-role.kubernetes.io/<role> labels."},
    {.name = "Age", .type = "string", .description = "Time since the node was registered."},
    {.name = "Version",
     .type = "string",
     .description = "The kubelet (or xpool agent) version the node reports."},
    {.name = "Devices",
     .type = "string",
     .description = "Allocatable extended resources (accelerators)."},
    {.name = "Internal-IP",
     .type = "string",
     .priority = 1,
     .description = "The node's first InternalIP address."},
    {.name = "External-IP",
     .type = "string",
     .priority = 1,
     .description = "The node's first ExternalIP address."},
    {.name = "CPU", .type = "string", .priority = 1, .description = "Allocatable CPUs."},
    {.name = "Memory",
     .type = "string",
     .priority = 1,
     .description = "Allocatable memory, in binary units."},
    {.name = "Models",
     .type = "string",
     .priority = 1,
     .description = "Devices in the node's xpool inventory, counted by model."},
    {.name = "OS-Image",
     .type = "string",
     .priority = 1,
     .description = "The operating system image the node reports."},
    {.name = "Kernel-Version",
     .type = "string",
     .priority = 1,
     .description = "The kernel version the node reports."},
    {.name = "Container-Runtime",
     .type = "string",
     .priority = 1,
     .description = "The container runtime and version the node reports."},
};

static int status_cell(const json_t *node, json_t *cells)
{
        const json_t *conditions = table_array(node, "status.conditions"), *c;
        const char *ready = NULL;
        size_t i;

        /* the last Ready condition wins, as it does in kubectl's map of conditions */
        json_array_foreach(conditions, i, c) if (strcmp(table_str0(c, "type"), "Ready") == 0)
            ready = strcmp(table_str0(c, "status"), "True") == 0 ? "Ready" : "NotReady";
        return table_cell_printf(cells,
                                 "%s%s",
                                 ready ? ready : "Unknown",
                                 table_bool(node, "spec.unschedulable") ? ",SchedulingDisabled"
                                                                        : "");
}

static int compare_strings(const void *a, const void *b)
{
        return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int roles_cell(const json_t *node, json_t *cells)
{
        static const char prefix[] = "node-role.kubernetes.io/";
        const json_t *labels = table_get(node, "metadata.labels"), *value;
        _cleanup_free_ const char **roles = NULL;
        _cleanup_free_ char *text = NULL;
        size_t n = 0, len = 0;
        const char *key;
        FILE *f;

        if (!json_is_object(labels) || json_object_size(labels) == 0)
                return table_cell_str(cells, "<none>");
        roles = calloc(json_object_size(labels), sizeof(char *));
        if (!roles)
                return -ENOMEM;
        json_object_foreach((json_t *)labels, key, value)
        {
                const char *role = NULL;

                if (strncmp(key, prefix, strlen(prefix)) == 0 && key[strlen(prefix)] != '\0')
                        role = key + strlen(prefix);
                else if (strcmp(key, "kubernetes.io/role") == 0 && json_string_length(value) > 0)
                        role = json_string_value(value);
                if (role)
                        roles[n++] = role;
        }
        if (n == 0)
                return table_cell_str(cells, "<none>");
        qsort(roles, n, sizeof(char *), compare_strings);

        f = open_memstream(&text, &len);
        if (!f)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                if (i == 0 || strcmp(roles[i], roles[i - 1]) != 0)
                        fprintf(f, "%s%s", i ? "," : "", roles[i]);
        if (fclose(f) != 0)
                return -ENOMEM;
        return table_cell_str(cells, text);
}

static int address_cell(const json_t *node, const char *type, json_t *cells)
{
        const json_t *addresses = table_array(node, "status.addresses"), *a;
        size_t i;

        json_array_foreach(
            addresses, i, a) if (strcmp(table_str0(a, "type"), type) ==
                                 0) return table_cell_or_none(cells, table_str(a, "address"));
        return table_cell_str(cells, "<none>");
}

static int devices_cell(const json_t *node, json_t *cells)
{
        struct xp_resource_list devices = {0};
        int r;

        r = table_extended_resources(table_get(node, "status.allocatable"), &devices);
        if (r == -ENOMEM)
                return r;
        /* zeros stay: "nvidia.com/gpu=0" says the node's GPUs are all unhealthy */
        r = r < 0 ? table_cell_str(cells, "<unknown>")
                  : table_cell_resources(cells, &devices, false);
        xp_resource_list_done(&devices);
        return r;
}

/* A standard allocatable resource (cpu, memory) as a quantity; false when missing or malformed. */
static bool allocatable(const json_t *node, const char *name, struct xp_quantity *ret)
{
        return table_quantity(json_object_get(table_get(node, "status.allocatable"), name), ret) >=
               0;
}

static int cpu_cell(const json_t *node, json_t *cells)
{
        struct xp_quantity q;
        char text[32];
        int64_t milli;
        int n;

        if (!allocatable(node, "cpu", &q) || xp_quantity_to_milli(&q, &milli) < 0 || milli < 0)
                return table_cell_str(cells, "<unknown>");
        /* whole cores as kubectl users know them ("96"), else up to three decimals ("95.5") */
        n = snprintf(text, sizeof(text), "%" PRId64 ".%03" PRId64, milli / 1000, milli % 1000);
        while (n > 0 && text[n - 1] == '0')
                text[--n] = '\0';
        if (n > 0 && text[n - 1] == '.')
                text[--n] = '\0';
        return table_cell_str(cells, text);
}

static int memory_cell(const json_t *node, json_t *cells)
{
        static const char *const units[] = {"Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
        struct xp_quantity q;
        int64_t bytes;
        size_t u;

        if (!allocatable(node, "memory", &q) || xp_quantity_to_int_ceil(&q, &bytes) < 0 ||
            bytes < 0)
                return table_cell_str(cells, "<unknown>");
        if (bytes < 1024)
                return table_cell_printf(cells, "%" PRId64, bytes);
        for (u = 0; u + 1 < XP_ELEMENTSOF(units) && bytes >> (10 * (u + 2)) > 0; u++)
                ;
        /* rounded down, so a node never looks bigger than it is: 503.5Gi is "503Gi" */
        if ((bytes >> (10 * (u + 1))) >= 10)
                return table_cell_printf(cells, "%" PRId64 "%s", bytes >> (10 * (u + 1)), units[u]);
        {
                __int128 tenths = (__int128)bytes * 10 >> (10 * (u + 1));

                if (tenths % 10 == 0)
                        return table_cell_printf(cells, "%d%s", (int)(tenths / 10), units[u]);
                return table_cell_printf(
                    cells, "%d.%d%s", (int)(tenths / 10), (int)(tenths % 10), units[u]);
        }
}

struct model_count {
        const char *model;
        size_t count;
};

static int models_cell(const json_t *node, json_t *cells)
{
        const json_t *devices = table_array(node, "status.xpool.devices"), *d;
        _cleanup_free_ struct model_count *models = NULL;
        _cleanup_free_ char *text = NULL;
        size_t n = 0, len = 0, i, j;
        FILE *f;

        if (json_array_size(devices) == 0)
                return table_cell_str(cells, "<none>");
        models = calloc(json_array_size(devices), sizeof(*models));
        if (!models)
                return -ENOMEM;
        /* in inventory order: the agent lists devices by index */
        json_array_foreach(devices, i, d)
        {
                const char *model = table_str(d, "model");

                if (!model || !model[0])
                        model = "<unknown>";
                for (j = 0; j < n && strcmp(models[j].model, model) != 0; j++)
                        ;
                if (j == n)
                        models[n++].model = model;
                models[j].count++;
        }

        f = open_memstream(&text, &len);
        if (!f)
                return -ENOMEM;
        for (j = 0; j < n; j++)
                fprintf(f, "%s%zux %s", j ? "," : "", models[j].count, models[j].model);
        if (fclose(f) != 0)
                return -ENOMEM;
        return table_cell_str(cells, text);
}

static int node_info_cell(const json_t *node, const char *field, json_t *cells)
{
        const char *s =
            json_string_value(json_object_get(table_get(node, "status.nodeInfo"), field));

        return table_cell_str(cells, s && s[0] ? s : "<unknown>");
}

static int node_row(const json_t *node, time_t now, json_t *cells, json_t *row)
{
        int r;

        (void)row;
        r = table_cell_str(cells, table_str0(node, "metadata.name"));
        if (r >= 0)
                r = status_cell(node, cells);
        if (r >= 0)
                r = roles_cell(node, cells);
        if (r >= 0)
                r = table_cell_age(cells, node, "metadata.creationTimestamp", now);
        if (r >= 0)
                r = table_cell_str(cells, table_str0(node, "status.nodeInfo.kubeletVersion"));
        if (r >= 0)
                r = devices_cell(node, cells);
        if (r >= 0)
                r = address_cell(node, "InternalIP", cells);
        if (r >= 0)
                r = address_cell(node, "ExternalIP", cells);
        if (r >= 0)
                r = cpu_cell(node, cells);
        if (r >= 0)
                r = memory_cell(node, cells);
        if (r >= 0)
                r = models_cell(node, cells);
        if (r >= 0)
                r = node_info_cell(node, "osImage", cells);
        if (r >= 0)
                r = node_info_cell(node, "kernelVersion", cells);
        if (r >= 0)
                r = node_info_cell(node, "containerRuntimeVersion", cells);
        return r;
}

const struct xp_table_kind xp_table_node = {
    .kind = "Node",
    .columns = node_columns,
    .n_columns = XP_ELEMENTSOF(node_columns),
    .row = node_row,
};
