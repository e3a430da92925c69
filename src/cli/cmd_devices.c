/* SPDX-License-Identifier: Apache-2.0 */
/* xpool devices: the node's inventory as a table, JSON or YAML, and the topology matrix. */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli.h"
#include "xpool/codec.h"
#include "xpool/device.h"
#include "xpool/macro.h"
#include "xpool/resource.h"
#include "xpool/yaml.h"

#define BACKENDS_MAX  16
#define OVERRIDES_MAX 32

static const char usage[] =
    "Usage: xpool devices [--root DIR] [--node-description FILE] [--backends LIST]\n"
    "                     [--nvml-library PATH] [-o table|json|yaml] [--topology]\n\n"
    "Discovers this node's compute: CPUs, NUMA nodes and memory, and every accelerator (GPUs,\n"
    "NPUs, FPGAs, ...) with its Kubernetes resource name, NUMA locality and health, and how each\n"
    "pair of accelerators is connected. Simulated devices from a node description are marked SIM.\n\n"
    "  -r, --root DIR               read sys/, proc/ and dev/ below DIR instead of / (a captured tree)\n"
    "  -n, --node-description FILE  add simulated devices from a YAML or JSON node description\n"
    "                               (see docs/devices.md; '-' for standard input)\n"
    "  -b, --backends LIST          run only these backends, comma-separated: cpu,nvml,pci,sim\n"
    "      --nvml-library PATH      the NVML library to load (default: $XPOOL_NVML_LIBRARY, else\n"
    "                               libnvidia-ml.so.1)\n"
    "      --override MATCH:KEY=VALUE[,KEY=VALUE...]\n"
    "                               change what discovery reports for devices whose model contains\n"
    "                               MATCH (or whose PCI id is MATCH, e.g. 10de:2330); keys: resource\n"
    "                               (the Kubernetes resource name), fp16 and fp32 (nominal TFLOPS);\n"
    "                               repeatable, e.g. --override 'H100:resource=nvidia.com/h100'\n"
    "  -o, --output FORMAT          table (the default), json or yaml (the node's status.xpool)\n"
    "  -t, --topology               print the topology matrix (the default with 2+ accelerators)\n\n"
    "Exits 1 when discovery fails (an unreadable root, a broken node description), 2 on bad usage\n"
    "(an unknown option, output format or backend).\n";

struct devices_args {
        struct xp_discovery_config config;
        const char *backends[BACKENDS_MAX + 1];
        char *backends_text; /* owned: backends[] point into it */
        struct xp_device_override overrides[OVERRIDES_MAX];
        char *override_texts[OVERRIDES_MAX]; /* owned: overrides[] point into them */
        const char *output;
        bool topology;
};

/* ---- table output --------------------------------------------------------------------------- */

#define GIB (1024.0 * 1024.0 * 1024.0)

enum column {
        COL_INDEX,
        COL_KIND,
        COL_DEVICE,
        COL_RESOURCE,
        COL_MEMORY,
        COL_NUMA,
        COL_PCI,
        COL_SIM,
        COL_HEALTH,
        COL_COUNT,
};

static const char *const column_titles[COL_COUNT] = {
    [COL_INDEX] = "INDEX",
    [COL_KIND] = "KIND",
    [COL_DEVICE] = "DEVICE",
    [COL_RESOURCE] = "RESOURCE",
    [COL_MEMORY] = "MEMORY",
    [COL_NUMA] = "NUMA",
    [COL_PCI] = "PCI",
    [COL_SIM] = "SIM",
    [COL_HEALTH] = "HEALTH",
};

#define CELL_MAX 512

struct row {
        char cells[COL_COUNT][CELL_MAX];
};

/* "NVIDIA H100" names NVIDIA; "AMD Alveo U250" names "AMD Xilinx" (its first word). */
static bool model_names_vendor(const char *vendor, const char *model)
{
        size_t word = strcspn(vendor, " ");

        return strstr(model, vendor) ||
               (strncasecmp(model, vendor, word) == 0 && (model[word] == ' ' || !model[word]));
}

static void format_device(const struct xp_device *dev, struct row *row)
{
        const char *health = xp_device_health_to_string(dev->health);

        snprintf(row->cells[COL_INDEX], CELL_MAX, "%lld", (long long)dev->index);
        snprintf(row->cells[COL_KIND], CELL_MAX, "%s", xp_device_kind_to_string(dev->kind));
        if (dev->model && (!dev->vendor || model_names_vendor(dev->vendor, dev->model)))
                snprintf(row->cells[COL_DEVICE], CELL_MAX, "%s", dev->model);
        else if (dev->model)
                snprintf(row->cells[COL_DEVICE], CELL_MAX, "%s %s", dev->vendor, dev->model);
        else
                snprintf(row->cells[COL_DEVICE], CELL_MAX, "%s", dev->vendor ? dev->vendor : "-");
        snprintf(row->cells[COL_RESOURCE], CELL_MAX, "%s", dev->resource_name);
        if (dev->memory_bytes > 0)
                snprintf(
                    row->cells[COL_MEMORY], CELL_MAX, "%.1f GiB", (double)dev->memory_bytes / GIB);
        else
                snprintf(row->cells[COL_MEMORY], CELL_MAX, "-");
        if (dev->numa_node.set)
                snprintf(row->cells[COL_NUMA], CELL_MAX, "%lld", (long long)dev->numa_node.value);
        else
                snprintf(row->cells[COL_NUMA], CELL_MAX, "-");
        snprintf(row->cells[COL_PCI], CELL_MAX, "%s", dev->pci_address ? dev->pci_address : "-");
        snprintf(row->cells[COL_SIM], CELL_MAX, "%s", dev->simulated ? "SIM" : "-");
        snprintf(row->cells[COL_HEALTH],
                 CELL_MAX,
                 "%s%s%s%s",
                 health ? health : "Unknown",
                 dev->health_reason && *dev->health_reason ? " (" : "",
                 dev->health_reason && *dev->health_reason ? dev->health_reason : "",
                 dev->health_reason && *dev->health_reason ? ")" : "");
}

static void print_row(const char *const cells[COL_COUNT], const size_t widths[COL_COUNT])
{
        for (size_t c = 0; c < COL_COUNT; c++) {
                if (c == COL_COUNT - 1)
                        printf("%s\n", cells[c]);
                else
                        printf("%-*s  ", (int)widths[c], cells[c]);
        }
}

static int print_devices(const struct xp_node_inventory *inv)
{
        _cleanup_free_ struct row *rows = NULL;
        size_t widths[COL_COUNT];

        if (inv->devices.n == 0) {
                printf("No accelerators found.\n");
                return 0;
        }
        rows = calloc(inv->devices.n, sizeof(*rows));
        if (!rows)
                return -ENOMEM;
        for (size_t c = 0; c < COL_COUNT; c++)
                widths[c] = strlen(column_titles[c]);
        for (size_t i = 0; i < inv->devices.n; i++) {
                format_device(&inv->devices.items[i], &rows[i]);
                for (size_t c = 0; c < COL_COUNT; c++)
                        if (strlen(rows[i].cells[c]) > widths[c])
                                widths[c] = strlen(rows[i].cells[c]);
        }
        print_row(column_titles, widths);
        for (size_t i = 0; i < inv->devices.n; i++) {
                const char *cells[COL_COUNT];

                for (size_t c = 0; c < COL_COUNT; c++)
                        cells[c] = rows[i].cells[c];
                print_row(cells, widths);
        }
        return 0;
}

static const char *plural(int64_t n, const char *one, const char *many)
{
        return n == 1 ? one : many;
}

/* One line for the node: sockets, cores, threads, NUMA nodes with CPUs and memory, total. */
static void print_node(const struct xp_node_inventory *inv)
{
        printf("Node:");
        if (inv->cpu)
                printf(" %lld %s, %lld %s, %lld %s;",
                       (long long)inv->cpu->sockets,
                       plural(inv->cpu->sockets, "socket", "sockets"),
                       (long long)inv->cpu->cores,
                       plural(inv->cpu->cores, "core", "cores"),
                       (long long)inv->cpu->threads,
                       plural(inv->cpu->threads, "thread", "threads"));
        else
                printf(" CPUs unknown (the cpu backend did not run);");
        for (size_t i = 0; i < inv->numa_nodes.n; i++) {
                const struct xp_numa_node *n = &inv->numa_nodes.items[i];

                printf(" NUMA node %lld: CPUs %s",
                       (long long)n->id,
                       n->cpus && *n->cpus ? n->cpus : "none");
                if (n->memory_bytes > 0)
                        printf(", %.1f GiB", (double)n->memory_bytes / GIB);
                printf(";");
        }
        if (inv->memory_bytes > 0)
                printf(" memory %.1f GiB\n", (double)inv->memory_bytes / GIB);
        else
                printf(" memory unknown\n");
}

static int print_table(const struct xp_node_inventory *inv, bool topology)
{
        int r = print_devices(inv);

        if (r < 0)
                return r;
        print_node(inv);
        if (topology || inv->devices.n >= 2) {
                _cleanup_free_ char *text = NULL;

                r = xp_device_topology_format(inv, &text);
                if (r < 0)
                        return r;
                printf("\n%s", text);
                if (*text && text[strlen(text) - 1] != '\n')
                        putchar('\n');
        }
        return 0;
}

/* ---- json and yaml ----------------------------------------------------------------------------
 */

static int print_json(const struct xp_node_inventory *inv, bool topology)
{
        json_t *json = NULL;
        int r = xp_node_inventory_to_json(inv, &json);

        (void)topology;
        if (r < 0)
                return r;
        r = json_dumpf(json, stdout, JSON_INDENT(2)) < 0 || putchar('\n') == EOF ? -EIO : 0;
        json_decref(json);
        return r;
}

static int print_yaml(const struct xp_node_inventory *inv, bool topology)
{
        _cleanup_free_ char *text = NULL;
        json_t *json = NULL;
        size_t len = 0;
        int r = xp_node_inventory_to_json(inv, &json);

        (void)topology;
        if (r < 0)
                return r;
        r = xp_yaml_dump(json, &text, &len);
        json_decref(json);
        if (r < 0)
                return r;
        return fwrite(text, 1, len, stdout) == len ? 0 : -EIO;
}

static const struct output_format {
        const char *name;
        int (*print)(const struct xp_node_inventory *inv, bool topology);
} output_formats[] = {
    {.name = "table", .print = print_table},
    {.name = "json", .print = print_json},
    {.name = "yaml", .print = print_yaml},
};

static const struct output_format *find_format(const char *name)
{
        for (size_t i = 0; i < XP_ELEMENTSOF(output_formats); i++)
                if (strcmp(output_formats[i].name, name) == 0)
                        return &output_formats[i];
        return NULL;
}

/* ---- arguments ------------------------------------------------------------------------------ */

static bool known_backend(const char *name)
{
        for (const char *const *b = xp_device_backend_names(); *b; b++)
                if (strcmp(*b, name) == 0)
                        return true;
        return false;
}

/* Splits "cpu,pci" into args->backends. XP_EXIT_USAGE after printing why. */
static int parse_backends(const char *text, struct devices_args *args)
{
        size_t n = 0;
        char *save = NULL;

        free(args->backends_text);
        args->backends_text = strdup(text);
        if (!args->backends_text)
                return XP_EXIT_FAILURE;
        for (char *name = strtok_r(args->backends_text, ",", &save); name;
             name = strtok_r(NULL, ",", &save)) {
                if (!known_backend(name)) {
                        fprintf(
                            stderr,
                            "xpool devices: unknown backend '%s' in --backends: choose from cpu, nvml, pci and sim (comma-separated)\n",
                            name);
                        return XP_EXIT_USAGE;
                }
                if (n == BACKENDS_MAX) {
                        fprintf(stderr, "xpool devices: too many names in --backends\n");
                        return XP_EXIT_USAGE;
                }
                args->backends[n++] = name;
        }
        if (n == 0) {
                fprintf(stderr,
                        "xpool devices: --backends needs at least one of cpu, nvml, pci and sim\n");
                return XP_EXIT_USAGE;
        }
        args->backends[n] = NULL;
        args->config.backends = args->backends;
        return 0;
}

/* MATCH:resource=NAME,fp16=N,fp32=N into the next override. 0 or XP_EXIT_USAGE (printed). */
static int parse_override(const char *text, struct devices_args *args)
{
        size_t n = args->config.n_overrides;
        struct xp_device_override *o = &args->overrides[n];
        char *copy, *colon, *save = NULL;

        if (n >= OVERRIDES_MAX) {
                fprintf(stderr, "xpool devices: at most %d --override options\n", OVERRIDES_MAX);
                return XP_EXIT_USAGE;
        }
        copy = args->override_texts[n] = strdup(text);
        if (!copy)
                return XP_EXIT_FAILURE;
        /* MATCH ends at the last ':' before the first '=' (a PCI id "10de:2330" has its own) */
        colon = NULL;
        for (char *p = copy; *p && *p != '='; p++)
                if (*p == ':')
                        colon = p;
        if (!colon || colon == copy || !colon[1]) {
                fprintf(
                    stderr,
                    "xpool devices: --override '%s': expected MATCH:KEY=VALUE, e.g. 'H100:resource=nvidia.com/h100'\n",
                    text);
                return XP_EXIT_USAGE;
        }
        *colon = '\0';
        o->match = copy;
        for (char *kv = strtok_r(colon + 1, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
                char *eq = strchr(kv, '='), *end;
                struct xp_error err = {0};
                double v;

                if (!eq) {
                        fprintf(stderr,
                                "xpool devices: --override '%s': '%s' is not KEY=VALUE\n",
                                text,
                                kv);
                        return XP_EXIT_USAGE;
                }
                *eq = '\0';
                if (strcmp(kv, "resource") == 0) {
                        if (xp_resource_name_check(eq + 1, &err) < 0) {
                                fprintf(stderr,
                                        "xpool devices: --override '%s': %s\n",
                                        text,
                                        xp_error_message(&err));
                                return XP_EXIT_USAGE;
                        }
                        o->resource_name = eq + 1;
                        continue;
                }
                v = strtod(eq + 1, &end);
                if (!eq[1] || *end || !(v > 0) || !isfinite(v) ||
                    (strcmp(kv, "fp16") != 0 && strcmp(kv, "fp32") != 0)) {
                        fprintf(
                            stderr,
                            "xpool devices: --override '%s': unknown key or bad value '%s=%s' (keys: resource=NAME, fp16=TFLOPS, fp32=TFLOPS)\n",
                            text,
                            kv,
                            eq + 1);
                        return XP_EXIT_USAGE;
                }
                if (strcmp(kv, "fp16") == 0)
                        o->fp16_tflops = v;
                else
                        o->fp32_tflops = v;
        }
        args->config.overrides = args->overrides;
        args->config.n_overrides = n + 1;
        return 0;
}

/* getopt codes of the long options without a short one */
enum {
        OPT_NVML = 0x100,
        OPT_OVERRIDE,
};

static int devices_option(int c, const char *arg, void *userdata)
{
        struct devices_args *args = userdata;
        int r;

        switch (c) {
        case 'r':
                args->config.root = arg;
                break;
        case 'n':
                args->config.node_description = arg;
                break;
        case 'b':
                r = parse_backends(arg, args);
                if (r != 0)
                        return r;
                break;
        case OPT_NVML:
                args->config.nvml_library = arg;
                break;
        case OPT_OVERRIDE:
                r = parse_override(arg, args);
                if (r != 0)
                        return r;
                break;
        case 'o':
                args->output = arg;
                break;
        case 't':
                args->topology = true;
                break;
        }
        return 0;
}

/* 0 to go on, -1 after --help, XP_EXIT_USAGE or XP_EXIT_FAILURE (printed). */
static int parse_args(int argc, char **argv, struct devices_args *args)
{
        static const struct option options[] = {
            {"root", required_argument, NULL, 'r'},
            {"node-description", required_argument, NULL, 'n'},
            {"backends", required_argument, NULL, 'b'},
            {"nvml-library", required_argument, NULL, OPT_NVML},
            {"override", required_argument, NULL, OPT_OVERRIDE},
            {"output", required_argument, NULL, 'o'},
            {"topology", no_argument, NULL, 't'},
            {"help", no_argument, NULL, 'h'},
            {NULL, 0, NULL, 0},
        };
        int r = xp_cli_getopt(argc, argv, "r:n:b:o:th", options, usage, devices_option, args);

        if (r != 0)
                return r;
        if (optind < argc) {
                fprintf(
                    stderr,
                    "xpool devices: unexpected argument '%s' (a node description is given with --node-description FILE)\n",
                    argv[optind]);
                return XP_EXIT_USAGE;
        }
        return 0;
}

int xp_cmd_devices(int argc, char **argv)
{
        _cleanup_(xp_node_inventory_freep) struct xp_node_inventory *inv = NULL;
        struct devices_args args = {0};
        const struct output_format *format = &output_formats[0];
        struct xp_error err = {0};
        int r = parse_args(argc, argv, &args);

        if (r != 0)
                goto out;
        if (args.output && !(format = find_format(args.output))) {
                fprintf(
                    stderr,
                    "xpool devices: unsupported output format '%s' (supported: table, json, yaml)\n",
                    args.output);
                r = XP_EXIT_USAGE;
                goto out;
        }
        r = xp_device_discover(&args.config, &inv, &err);
        if (r < 0) {
                fprintf(stderr, "error: %s\n", xp_error_message(&err));
                if (r == -ENOENT && args.config.root && strstr(err.msg, "discovery root"))
                        fprintf(
                            stderr,
                            "hint: --root names a directory with sys/ and proc/ below it, such as tests/data/sysfs/ci-machine\n");
                r = XP_EXIT_FAILURE;
                goto out;
        }
        r = format->print(inv, args.topology);
        if (r < 0) {
                fprintf(stderr,
                        "xpool devices: cannot print the inventory as %s: %s\n",
                        format->name,
                        strerror(-r));
                r = XP_EXIT_FAILURE;
        }
out:
        free(args.backends_text);
        for (size_t i = 0; i < OVERRIDES_MAX; i++)
                free(args.override_texts[i]);
        return r < 0 ? 0 : r;
}
