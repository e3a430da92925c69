/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "schema.h"
#include "schema_affinity.h"
#include "schema_status.h"
#include "xpool/array.h"
#include "xpool/strutil.h"

/* ---- xpool's device inventory (status.xpool) ----------------------------------------------- */

static const struct xp_enum_name device_kind_names[] = {
    {"gpu", XP_DEVICE_GPU},
    {"npu", XP_DEVICE_NPU},
    {"fpga", XP_DEVICE_FPGA},
    {"vpu", XP_DEVICE_VPU},
    {"accelerator", XP_DEVICE_ACCELERATOR},
    {NULL, 0},
};

static const struct xp_enum_name device_health_names[] = {
    {"Healthy", XP_DEVICE_HEALTHY},
    {"Unhealthy", XP_DEVICE_UNHEALTHY},
    {NULL, 0},
};

static const struct xp_enum_name link_level_names[] = {
    {"NVLink", XP_LINK_NVLINK},
    {"PIX", XP_LINK_PIX},
    {"PXB", XP_LINK_PXB},
    {"PHB", XP_LINK_PHB},
    {"NODE", XP_LINK_NODE},
    {"SYS", XP_LINK_SYS},
    {NULL, 0},
};

static int check_resource_name(struct xp_decode_ctx *ctx, const void *value)
{
        struct xp_error cause = {0};

        if (xp_resource_name_check(*(char *const *)value, &cause) < 0)
                return xp_decode_fail_error(ctx, &cause, NULL, false);
        return 0;
}

/* The agent hands these to workloads: absolute paths below /dev, no way out of it. */
static int check_device_nodes(struct xp_decode_ctx *ctx, const void *value)
{
        const struct xp_list_raw *list = value;
        char **nodes = list->items;

        for (size_t i = 0; i < list->n; i++) {
                const char *p = nodes[i];
                bool ok = strncmp(p, "/dev/", 5) == 0 && p[5] && strlen(p) < 4096;

                for (const char *c = p; ok && (c = strstr(c, "..")); c += 2)
                        if ((c == p || c[-1] == '/') && (c[2] == '/' || !c[2]))
                                ok = false;
                if (!ok) {
                        char q[XP_QUOTE_MAX];
                        int r;

                        xp_path_push_index(&ctx->path, i);
                        r = xp_decode_fail(
                            ctx,
                            -EINVAL,
                            NULL,
                            false,
                            "Invalid value: %s: a device node is an absolute path below /dev without '..', e.g. \"/dev/nvidia0\"",
                            xp_quote(p, q));
                        xp_path_pop(&ctx->path);
                        return r;
                }
        }
        return 0;
}

/* Temperature and power are left out when 0: no working device reports 0 °C or 0 W, so 0 is "not
 * known". */
static const struct xp_field device_metrics_fields[] = {
    XP_FIELD("utilizationPercent",
             XP_FT_DOUBLE,
             struct xp_device_metrics,
             utilization_percent,
             .flags = XP_FIELD_ALWAYS),
    XP_FIELD("memoryUsedBytes",
             XP_FT_INT64,
             struct xp_device_metrics,
             memory_used_bytes,
             .flags = XP_FIELD_ALWAYS),
    XP_FIELD("temperatureCelsius", XP_FT_DOUBLE, struct xp_device_metrics, temperature_celsius),
    XP_FIELD("powerWatts", XP_FT_DOUBLE, struct xp_device_metrics, power_watts),
};
static const struct xp_schema device_metrics_schema =
    XP_SCHEMA(struct xp_device_metrics, "DeviceMetrics", device_metrics_fields);

static const struct xp_field device_fields[] = {
    XP_FIELD("id", XP_FT_STRING, struct xp_device, id, .flags = XP_FIELD_REQUIRED),
    XP_FIELD("kind",
             XP_FT_ENUM,
             struct xp_device,
             kind,
             .flags = XP_FIELD_REQUIRED,
             .enum_names = device_kind_names),
    XP_FIELD("vendor", XP_FT_STRING, struct xp_device, vendor),
    XP_FIELD("model", XP_FT_STRING, struct xp_device, model),
    XP_FIELD("resourceName",
             XP_FT_STRING,
             struct xp_device,
             resource_name,
             .flags = XP_FIELD_REQUIRED,
             .check = check_resource_name),
    XP_FIELD("index",
             XP_FT_INT64,
             struct xp_device,
             index,
             .flags = XP_FIELD_ALWAYS,
             .check = xp_check_non_negative),
    XP_FIELD("deviceNodes",
             XP_FT_STRING_LIST,
             struct xp_device,
             device_nodes,
             .check = check_device_nodes),
    XP_FIELD(
        "memoryBytes", XP_FT_INT64, struct xp_device, memory_bytes, .check = xp_check_non_negative),
    XP_FIELD("computeUnits",
             XP_FT_INT64,
             struct xp_device,
             compute_units,
             .check = xp_check_non_negative),
    XP_FIELD("fp16TFLOPS", XP_FT_DOUBLE, struct xp_device, fp16_tflops),
    XP_FIELD("fp32TFLOPS", XP_FT_DOUBLE, struct xp_device, fp32_tflops),
    XP_FIELD("numaNode",
             XP_FT_OPT_INT32,
             struct xp_device,
             numa_node,
             .check = xp_check_opt_non_negative),
    XP_FIELD("localCPUs", XP_FT_STRING, struct xp_device, local_cpus),
    XP_FIELD("pciAddress", XP_FT_STRING, struct xp_device, pci_address),
    XP_FIELD("pciID", XP_FT_STRING, struct xp_device, pci_id),
    XP_FIELD("pciLink", XP_FT_STRING, struct xp_device, pci_link),
    XP_FIELD("computeCapability", XP_FT_STRING, struct xp_device, compute_capability),
    XP_FIELD("migEnabled", XP_FT_OPT_BOOL, struct xp_device, mig_enabled),
    XP_FIELD("health", XP_FT_ENUM, struct xp_device, health, .enum_names = device_health_names),
    XP_FIELD("healthReason", XP_FT_STRING, struct xp_device, health_reason),
    XP_FIELD(
        "metrics", XP_FT_STRUCT_PTR, struct xp_device, metrics, .schema = &device_metrics_schema),
    XP_FIELD("simulated", XP_FT_BOOL, struct xp_device, simulated),
};
static const struct xp_schema device_schema = XP_SCHEMA(struct xp_device, "Device", device_fields);

static const struct xp_field device_link_fields[] = {
    XP_FIELD("a", XP_FT_STRING, struct xp_device_link, a, .flags = XP_FIELD_REQUIRED),
    XP_FIELD("b", XP_FT_STRING, struct xp_device_link, b, .flags = XP_FIELD_REQUIRED),
    XP_FIELD("level",
             XP_FT_ENUM,
             struct xp_device_link,
             level,
             .flags = XP_FIELD_REQUIRED,
             .enum_names = link_level_names),
    XP_FIELD(
        "nvlinks", XP_FT_INT64, struct xp_device_link, nvlinks, .check = xp_check_non_negative),
    XP_FIELD("bandwidthGBps", XP_FT_DOUBLE, struct xp_device_link, bandwidth_gbps),
};
static const struct xp_schema device_link_schema =
    XP_SCHEMA(struct xp_device_link, "DeviceLink", device_link_fields);

static const struct xp_field numa_node_fields[] = {
    XP_FIELD("id",
             XP_FT_INT32,
             struct xp_numa_node,
             id,
             .flags = XP_FIELD_ALWAYS,
             .check = xp_check_non_negative),
    XP_FIELD("cpus", XP_FT_STRING, struct xp_numa_node, cpus),
    XP_FIELD("memoryBytes",
             XP_FT_INT64,
             struct xp_numa_node,
             memory_bytes,
             .check = xp_check_non_negative),
};
static const struct xp_schema numa_node_schema =
    XP_SCHEMA(struct xp_numa_node, "NUMANode", numa_node_fields);

static const struct xp_field cpu_topology_fields[] = {
    XP_FIELD(
        "sockets", XP_FT_INT64, struct xp_cpu_topology, sockets, .check = xp_check_non_negative),
    XP_FIELD("cores", XP_FT_INT64, struct xp_cpu_topology, cores, .check = xp_check_non_negative),
    XP_FIELD(
        "threads", XP_FT_INT64, struct xp_cpu_topology, threads, .check = xp_check_non_negative),
};
static const struct xp_schema cpu_topology_schema =
    XP_SCHEMA(struct xp_cpu_topology, "CPUTopology", cpu_topology_fields);

static int fail_link_end(struct xp_decode_ctx *ctx, size_t index, const char *end, const char *id)
{
        char q[XP_QUOTE_MAX];
        int r;

        xp_path_push_field(&ctx->path, "links");
        xp_path_push_index(&ctx->path, index);
        xp_path_push_field(&ctx->path, end);
        r = xp_decode_fail(ctx,
                           -EINVAL,
                           NULL,
                           false,
                           "unknown device %s: a link must join two devices listed in devices",
                           xp_quote(id, q));
        ctx->path.depth -= 3;
        return r;
}

struct numa_entry {
        int64_t id;
        size_t index;
};

static int compare_numa_entries(const void *x, const void *y)
{
        const struct numa_entry *a = x, *b = y;

        if (a->id != b->id)
                return a->id < b->id ? -1 : 1;
        return (a->index > b->index) - (a->index < b->index);
}

/* NUMA node ids are unique; reports the first repeat in document order, in O(n log n). */
static int check_unique_numa_ids(struct xp_decode_ctx *ctx, const struct xp_node_inventory *inv)
{
        size_t n = inv->numa_nodes.n, first = SIZE_MAX;
        _cleanup_free_ struct numa_entry *entries = calloc(n ? n : 1, sizeof(*entries));
        int r;

        if (!entries)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                entries[i] = (struct numa_entry){inv->numa_nodes.items[i].id, i};
        qsort(entries, n, sizeof(*entries), compare_numa_entries);
        for (size_t i = 1; i < n; i++)
                if (entries[i].id == entries[i - 1].id && entries[i].index < first)
                        first = entries[i].index;
        if (first == SIZE_MAX)
                return 0;
        xp_path_push_field(&ctx->path, "numaNodes");
        xp_path_push_index(&ctx->path, first);
        xp_path_push_field(&ctx->path, "id");
        r = xp_decode_fail(ctx,
                           -EINVAL,
                           NULL,
                           false,
                           "Duplicate value: %lld: NUMA node ids must be unique within a node",
                           (long long)inv->numa_nodes.items[first].id);
        ctx->path.depth -= 3;
        return r;
}

/* Device ids are unique and links join listed devices; O(n log n) against large inventories. */
static int validate_inventory(struct xp_decode_ctx *ctx, const void *object)
{
        const struct xp_node_inventory *inv = object;
        _cleanup_free_ const char **ids = calloc(inv->devices.n ? inv->devices.n : 1, sizeof(*ids));
        _cleanup_free_ const char **sorted = NULL;
        size_t dup;
        int r;

        if (!ids)
                return -ENOMEM;
        for (size_t i = 0; i < inv->devices.n; i++)
                ids[i] = inv->devices.items[i].id;
        r = xp_first_duplicate(ids, inv->devices.n, &dup);
        if (r != 0)
                return r < 0 ? r
                             : xp_fail_duplicate(ctx,
                                                 "devices",
                                                 dup,
                                                 "id",
                                                 ids[dup],
                                                 "device ids must be unique within a node");
        r = check_unique_numa_ids(ctx, inv);
        if (r < 0)
                return r;
        sorted = xp_sorted_copy(ids, inv->devices.n);
        if (!sorted)
                return -ENOMEM;
        for (size_t i = 0; i < inv->links.n; i++) {
                if (!xp_sorted_contains(sorted, inv->devices.n, inv->links.items[i].a))
                        return fail_link_end(ctx, i, "a", inv->links.items[i].a);
                if (!xp_sorted_contains(sorted, inv->devices.n, inv->links.items[i].b))
                        return fail_link_end(ctx, i, "b", inv->links.items[i].b);
        }
        return 0;
}

static const struct xp_field inventory_fields[] = {
    XP_FIELD("memoryBytes",
             XP_FT_INT64,
             struct xp_node_inventory,
             memory_bytes,
             .check = xp_check_non_negative),
    XP_FIELD(
        "cpu", XP_FT_STRUCT_PTR, struct xp_node_inventory, cpu, .schema = &cpu_topology_schema),
    XP_FIELD("numaNodes",
             XP_FT_STRUCT_LIST,
             struct xp_node_inventory,
             numa_nodes,
             .schema = &numa_node_schema),
    XP_FIELD(
        "devices", XP_FT_STRUCT_LIST, struct xp_node_inventory, devices, .schema = &device_schema),
    XP_FIELD(
        "links", XP_FT_STRUCT_LIST, struct xp_node_inventory, links, .schema = &device_link_schema),
};
const struct xp_schema xp_node_inventory_schema = XP_SCHEMA(
    struct xp_node_inventory, "NodeInventory", inventory_fields, .validate = validate_inventory);

/* ---- node ---------------------------------------------------------------------------------- */

static int check_node_resources(struct xp_decode_ctx *ctx, const void *value)
{
        const struct xp_resource_list *list = value;

        for (size_t i = 0; i < list->n; i++) {
                struct xp_error cause = {0};
                char text[XP_QUANTITY_STRING_MAX];
                struct xp_ge_msg m;

                if (xp_resource_name_check(list->items[i].name, &cause) < 0)
                        return xp_decode_fail_error(ctx, &cause, list->items[i].name, true);
                if (xp_quantity_sign(&list->items[i].quantity) < 0)
                        return xp_decode_fail(
                            ctx,
                            -EINVAL,
                            list->items[i].name,
                            false,
                            "%s",
                            xp_ge_msg_quoted(
                                &m, xp_quantity_format(&list->items[i].quantity, text), 0));
        }
        return 0;
}

static const struct xp_field node_spec_fields[] = {
    XP_FIELD("podCIDR", XP_FT_STRING, struct xp_node_spec, pod_cidr),
    XP_FIELD("providerID", XP_FT_STRING, struct xp_node_spec, provider_id),
    XP_FIELD("unschedulable", XP_FT_BOOL, struct xp_node_spec, unschedulable),
    XP_FIELD("taints", XP_FT_STRUCT_LIST, struct xp_node_spec, taints, .schema = &xp_taint_schema),
};
static const struct xp_schema node_spec_schema =
    XP_SCHEMA(struct xp_node_spec, "NodeSpec", node_spec_fields);

static const struct xp_field node_address_fields[] = {
    XP_FIELD("type", XP_FT_STRING, struct xp_node_address, type, .flags = XP_FIELD_REQUIRED),
    XP_FIELD("address", XP_FT_STRING, struct xp_node_address, address, .flags = XP_FIELD_REQUIRED),
};
static const struct xp_schema node_address_schema =
    XP_SCHEMA(struct xp_node_address, "NodeAddress", node_address_fields);

#define INFO_FIELD(json_name, member)                                                              \
        XP_FIELD(json_name, XP_FT_STRING, struct xp_node_system_info, member)

static const struct xp_field node_info_fields[] = {
    INFO_FIELD("machineID", machine_id),
    INFO_FIELD("systemUUID", system_uuid),
    INFO_FIELD("bootID", boot_id),
    INFO_FIELD("kernelVersion", kernel_version),
    INFO_FIELD("osImage", os_image),
    INFO_FIELD("containerRuntimeVersion", container_runtime_version),
    INFO_FIELD("kubeletVersion", kubelet_version),
    INFO_FIELD("kubeProxyVersion", kube_proxy_version),
    INFO_FIELD("operatingSystem", operating_system),
    INFO_FIELD("architecture", architecture),
};
static const struct xp_schema node_info_schema =
    XP_SCHEMA(struct xp_node_system_info, "NodeSystemInfo", node_info_fields);

static const struct xp_field node_status_fields[] = {
    XP_FIELD("capacity",
             XP_FT_RESOURCES,
             struct xp_node_status,
             capacity,
             .check = check_node_resources),
    XP_FIELD("allocatable",
             XP_FT_RESOURCES,
             struct xp_node_status,
             allocatable,
             .check = check_node_resources),
    XP_FIELD("conditions",
             XP_FT_STRUCT_LIST,
             struct xp_node_status,
             conditions,
             .schema = &xp_node_condition_schema),
    XP_FIELD("addresses",
             XP_FT_STRUCT_LIST,
             struct xp_node_status,
             addresses,
             .schema = &node_address_schema),
    XP_FIELD(
        "nodeInfo", XP_FT_STRUCT, struct xp_node_status, node_info, .schema = &node_info_schema),
    XP_FIELD("xpool",
             XP_FT_STRUCT_PTR,
             struct xp_node_status,
             xpool,
             .schema = &xp_node_inventory_schema),
};
static const struct xp_schema node_status_schema =
    XP_SCHEMA(struct xp_node_status, "NodeStatus", node_status_fields);

static int validate_node(struct xp_decode_ctx *ctx, const void *object)
{
        const struct xp_node *node = object;
        int r = 0;

        if (!node->metadata.name) {
                xp_path_push_field(&ctx->path, "metadata");
                xp_path_push_field(&ctx->path, "name");
                r = xp_decode_fail(
                    ctx, -EINVAL, NULL, false, "Required value: a node needs a name");
                ctx->path.depth -= 2;
        }
        return r;
}

static const struct xp_field node_fields[] = {
    XP_FIELD("metadata",
             XP_FT_STRUCT,
             struct xp_node,
             metadata,
             .flags = XP_FIELD_REQUIRED | XP_FIELD_ALWAYS,
             .schema = &xp_object_meta_schema),
    XP_FIELD("spec", XP_FT_STRUCT, struct xp_node, spec, .schema = &node_spec_schema),
    XP_FIELD("status", XP_FT_STRUCT, struct xp_node, status, .schema = &node_status_schema),
};
const struct xp_schema xp_node_schema =
    XP_SCHEMA(struct xp_node, "Node", node_fields, .validate = validate_node);

const char *xp_device_kind_to_string(enum xp_device_kind kind)
{
        return xp_enum_to_string(device_kind_names, (int)kind);
}

int xp_device_kind_from_string(const char *s)
{
        return xp_enum_from_string(device_kind_names, s);
}

const char *xp_link_level_to_string(enum xp_link_level level)
{
        return xp_enum_to_string(link_level_names, (int)level);
}

int xp_link_level_from_string(const char *s)
{
        return xp_enum_from_string(link_level_names, s);
}

const char *xp_device_health_to_string(enum xp_device_health health)
{
        return xp_enum_to_string(device_health_names, (int)health);
}

int xp_device_health_from_string(const char *s)
{
        return xp_enum_from_string(device_health_names, s);
}
