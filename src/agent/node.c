/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Node an agent reports: resources from the inventory (cpu, memory, pods, one integer count
 * per device resource, unhealthy devices kept out of allocatable), labels the scheduler and users
 * select on, conditions, addresses and the host's facts. Pure, so it is tested without a server.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "agent_internal.h"
#include "xpool/codec.h"
#include "xpool/kube_version.h"
#include "xpool/names.h"
#include "xpool/patch.h"
#include "xpool/timeutil.h"

#define MAX_PODS 110

const char *xp_agent_arch(const char *machine)
{
        static const struct {
                const char *machine, *arch;
        } table[] = {
            {"x86_64", "amd64"},
            {"aarch64", "arm64"},
            {"i686", "386"},
            {"i386", "386"},
            {"armv7l", "arm"},
            {"ppc64le", "ppc64le"},
            {"s390x", "s390x"},
            {"riscv64", "riscv64"},
        };

        for (size_t i = 0; i < XP_ELEMENTSOF(table); i++)
                if (strcmp(machine, table[i].machine) == 0)
                        return table[i].arch;
        return machine;
}

char *xp_agent_label_value(const char *text, char buf[static XP_AGENT_LABEL_VALUE_MAX + 1])
{
        return xp_label_value_from(text, buf);
}

/* The IsolationDegraded condition (docs/security.md, "Threat model"). */
static json_t *
isolation_condition(const struct xp_agent_isolation *iso, const char *now, const char *since)
{
        static const struct {
                unsigned bit;
                const char *reason;
        } parts[] = {
            {XP_ISOLATION_CGROUPS, "CgroupsUnavailable"},
            {XP_ISOLATION_DEVICES, "DeviceFilterUnavailable"},
            {XP_ISOLATION_NAMESPACES, "NamespacesUnavailable"},
            {XP_ISOLATION_CAPABILITIES, "CapabilitiesUnavailable"},
            {XP_ISOLATION_SECCOMP, "SeccompUnavailable"},
        };
        const char *reason = NULL;
        _cleanup_free_ char *msg = NULL;

        for (size_t i = 0; iso && i < XP_ELEMENTSOF(parts) && !reason; i++)
                if (!(iso->have & parts[i].bit))
                        reason = parts[i].reason;
        if (reason &&
            asprintf(&msg,
                     "%s; %s",
                     iso->why ? iso->why : reason,
                     iso->allow_degraded
                         ? "pods with limits or devices run anyway (--allow-degraded-isolation)"
                         : "pods with limits or devices are refused (--allow-degraded-isolation "
                           "runs them anyway)") < 0)
                return NULL;
        return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}",
                         "type",
                         "IsolationDegraded",
                         "status",
                         reason ? "True" : "False",
                         "reason",
                         reason ? reason : "IsolationComplete",
                         "message",
                         reason ? msg
                                : "pods get cgroups, a device filter, namespaces of their own, "
                                  "capability sets and a seccomp filter",
                         "lastHeartbeatTime",
                         now,
                         "lastTransitionTime",
                         since);
}

/* The NetworkUnavailable condition (docs/networking.md), NULL when not asked for. */
static json_t *
network_condition(const struct xp_agent_isolation *iso, const char *now, const char *since)
{
        return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}",
                         "type",
                         "NetworkUnavailable",
                         "status",
                         iso->network_unavailable ? "True" : "False",
                         "reason",
                         iso->network_reason,
                         "message",
                         iso->network_message ? iso->network_message : "",
                         "lastHeartbeatTime",
                         now,
                         "lastTransitionTime",
                         since);
}

json_t *
xp_agent_node_conditions(int64_t now_s, int64_t since_s, const struct xp_agent_isolation *iso)
{
        static const char *const pressures[][3] = {
            {"MemoryPressure",
             "KubeletHasSufficientMemory",
             "kubelet has sufficient memory available"},
            {"DiskPressure", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"},
            {"PIDPressure", "KubeletHasSufficientPID", "kubelet has sufficient PID available"},
        };
        char now[XP_RFC3339_MAX], since[XP_RFC3339_MAX];
        json_t *conditions = json_array();

        xp_time_format_rfc3339(now_s, now);
        xp_time_format_rfc3339(since_s, since);
        if (!conditions)
                return NULL;
        for (size_t i = 0; i < XP_ELEMENTSOF(pressures); i++)
                if (json_array_append_new(conditions,
                                          json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}",
                                                    "type",
                                                    pressures[i][0],
                                                    "status",
                                                    "False",
                                                    "reason",
                                                    pressures[i][1],
                                                    "message",
                                                    pressures[i][2],
                                                    "lastHeartbeatTime",
                                                    now,
                                                    "lastTransitionTime",
                                                    since)) < 0)
                        goto fail;
        if (json_array_append_new(conditions,
                                  json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}",
                                            "type",
                                            "Ready",
                                            "status",
                                            "True",
                                            "reason",
                                            "AgentReady",
                                            "message",
                                            "xpool agent is posting ready status",
                                            "lastHeartbeatTime",
                                            now,
                                            "lastTransitionTime",
                                            since)) < 0 ||
            json_array_append_new(conditions, isolation_condition(iso, now, since)) < 0 ||
            (iso && iso->network_reason &&
             json_array_append_new(conditions, network_condition(iso, now, since)) < 0))
                goto fail;
        return conditions;
fail:
        json_decref(conditions);
        return NULL;
}

static int add_count(json_t *list, const char *name, int64_t n)
{
        json_t *old = json_object_get(list, name);
        char buf[32];

        if (old)
                n += strtoll(json_string_value(old), NULL, 10);
        snprintf(buf, sizeof(buf), "%" PRId64, n);
        return json_object_set_new(list, name, json_string(buf));
}

/* capacity and allocatable: cpu, memory, pods and one count per device resource. */
static int add_resources(const struct xp_node_inventory *inv,
                         const struct xp_agent_node_info *info,
                         json_t *status)
{
        json_t *capacity = json_object(), *allocatable = json_object();
        int64_t cpus = inv->cpu && inv->cpu->threads > 0 ? inv->cpu->threads : info->cpu_count;
        char buf[32];
        int r = 0;

        if (json_object_set_new(status, "capacity", capacity) < 0 ||
            json_object_set_new(status, "allocatable", allocatable) < 0)
                return -ENOMEM;
        for (int i = 0; i < 2; i++) {
                json_t *list = i == 0 ? capacity : allocatable;

                r |= add_count(list, "cpu", cpus > 0 ? cpus : 1);
                snprintf(
                    buf, sizeof(buf), "%" PRId64, inv->memory_bytes > 0 ? inv->memory_bytes : 0);
                r |= json_object_set_new(list, "memory", json_string(buf));
                r |= add_count(list, "pods", info->max_pods > 0 ? info->max_pods : MAX_PODS);
        }
        for (size_t i = 0; i < inv->devices.n; i++) {
                const struct xp_device *d = &inv->devices.items[i];

                if (!d->resource_name || !*d->resource_name)
                        continue;
                r |= add_count(capacity, d->resource_name, 1);
                r |= add_count(allocatable, d->resource_name, d->health != XP_DEVICE_UNHEALTHY);
        }
        return r < 0 ? -ENOMEM : 0;
}

/* xpool.io/<kind>.product, .memory (MiB of the first device) and .count per device kind. */
static int add_device_labels(const struct xp_node_inventory *inv, json_t *labels)
{
        char key[64], value[XP_AGENT_LABEL_VALUE_MAX + 1];
        int r = 0;

        for (size_t i = 0; i < inv->devices.n; i++) {
                const struct xp_device *d = &inv->devices.items[i];
                const char *kind = xp_device_kind_to_string(d->kind);
                json_t *count;

                if (!kind)
                        continue;
                snprintf(key, sizeof(key), "xpool.io/%s.count", kind);
                count = json_object_get(labels, key);
                if (count) {
                        snprintf(value,
                                 sizeof(value),
                                 "%lld",
                                 strtoll(json_string_value(count), NULL, 10) + 1);
                        r |= json_object_set_new(labels, key, json_string(value));
                        continue;
                }
                r |= json_object_set_new(labels, key, json_string("1"));
                /* the first device of a kind names the product, as NVIDIA's feature discovery */
                if (d->model && *xp_agent_label_value(d->model, value)) {
                        snprintf(key, sizeof(key), "xpool.io/%s.product", kind);
                        r |= json_object_set_new(labels, key, json_string(value));
                }
                if (d->memory_bytes > 0) {
                        snprintf(key, sizeof(key), "xpool.io/%s.memory", kind);
                        snprintf(value, sizeof(value), "%" PRId64, d->memory_bytes >> 20);
                        r |= json_object_set_new(labels, key, json_string(value));
                }
        }
        return r < 0 ? -ENOMEM : 0;
}

int xp_agent_node_build(const struct xp_node_inventory *inventory,
                        const struct xp_agent_node_info *info,
                        json_t **ret,
                        struct xp_error *err)
{
        json_auto_t *node = NULL;
        json_t *labels, *status, *addresses, *inv_json = NULL, *conditions;
        int r;

        r = xp_node_inventory_to_json(inventory, &inv_json);
        if (r < 0)
                return xp_error_prefix(err, r, "encoding the node's inventory");
        node = json_pack("{s:s, s:s, s:{s:s, s:{}}, s:{}, s:{s:o}}",
                         "apiVersion",
                         "v1",
                         "kind",
                         "Node",
                         "metadata",
                         "name",
                         info->name,
                         "labels",
                         "spec",
                         "status",
                         "xpool",
                         inv_json);
        if (!node)
                return -ENOMEM;
        labels = json_object_get(json_object_get(node, "metadata"), "labels");
        status = json_object_get(node, "status");
        r = json_object_set_new(labels, "kubernetes.io/hostname", json_string(info->hostname));
        r |= json_object_set_new(labels, "kubernetes.io/os", json_string("linux"));
        r |= json_object_set_new(labels, "kubernetes.io/arch", json_string(info->arch));
        r |= json_object_set_new(labels, "xpool.io/agent", json_string("true"));
        if (r < 0 || add_device_labels(inventory, labels) < 0 ||
            add_resources(inventory, info, status) < 0)
                return -ENOMEM;
        conditions = xp_agent_node_conditions(info->now_s, info->now_s, info->isolation);
        addresses = json_array();
        if (!conditions || !addresses ||
            json_object_set_new(status, "conditions", conditions) < 0 ||
            json_object_set_new(status, "addresses", addresses) < 0)
                return -ENOMEM;
        if (info->address &&
            json_array_append_new(
                addresses,
                json_pack("{s:s, s:s}", "type", "InternalIP", "address", info->address)) < 0)
                return -ENOMEM;
        if (json_array_append_new(
                addresses, json_pack("{s:s, s:s}", "type", "Hostname", "address", info->hostname)) <
            0)
                return -ENOMEM;
        if (json_object_set_new(
                status,
                "daemonEndpoints",
                json_pack("{s:{s:i}}", "kubeletEndpoint", "Port", (int)info->port)) < 0 ||
            json_object_set_new(status,
                                "nodeInfo",
                                json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s}",
                                          "machineID",
                                          info->machine_id ? info->machine_id : "",
                                          "systemUUID",
                                          info->machine_id ? info->machine_id : "",
                                          "bootID",
                                          info->boot_id ? info->boot_id : "",
                                          "kernelVersion",
                                          info->kernel_version ? info->kernel_version : "",
                                          "osImage",
                                          info->os_image ? info->os_image : "Linux",
                                          "containerRuntimeVersion",
                                          "xpool://" XPOOL_VERSION,
                                          "kubeletVersion",
                                          XP_KUBE_GIT_VERSION,
                                          "kubeProxyVersion",
                                          "",
                                          "operatingSystem",
                                          "linux",
                                          "architecture",
                                          info->arch)) < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(node);
        return 0;
}

/* Whether label is one the agent writes from the devices it has (add_device_labels()). */
static bool device_label(const char *label)
{
        static const char *const suffixes[] = {".count", ".product", ".memory"};
        size_t n = strlen(label);

        if (strncmp(label, "xpool.io/", 9) != 0)
                return false;
        for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++) {
                size_t k = strlen(suffixes[i]);

                if (n > 9 + k && strcmp(label + n - k, suffixes[i]) == 0)
                        return true;
        }
        return false;
}

/* Copies the keys of from that into lacks into into; with devices, none of the device labels of
 * a kind the node no longer has (a DaemonSet that selects on them must see that). */
static int keep_missing(json_t *into, const json_t *from, bool devices)
{
        const char *key;
        json_t *value;

        if (!json_is_object(from))
                return 0;
        json_object_foreach((json_t *)from, key, value)
        {
                if (devices && device_label(key))
                        continue;
                if (!json_object_get(into, key) && json_object_set(into, key, value) < 0)
                        return -ENOMEM;
        }
        return 0;
}

json_t *xp_agent_node_merge(const json_t *existing, const json_t *desired)
{
        json_auto_t *node = json_deep_copy(desired);
        const json_t *old_meta = json_object_get(existing, "metadata");
        json_t *meta = json_object_get(node, "metadata"), *spec;

        if (!node || !meta)
                return NULL;
        for (int i = 0; i < 2; i++) {
                const char *field = i == 0 ? "labels" : "annotations";
                json_t *mine = json_object_get(meta, field);

                if (!json_is_object(json_object_get(old_meta, field)))
                        continue;
                if (!mine) {
                        mine = json_object();
                        if (json_object_set_new(meta, field, mine) < 0)
                                return NULL;
                }
                if (keep_missing(mine, json_object_get(old_meta, field), i == 0) < 0)
                        return NULL;
        }
        if (json_object_get(old_meta, "resourceVersion") &&
            json_object_set(meta, "resourceVersion", json_object_get(old_meta, "resourceVersion")) <
                0)
                return NULL;
        spec = json_object_get(existing, "spec");
        if (json_is_object(spec) && json_object_set(node, "spec", spec) < 0)
                return NULL;
        return TAKE_PTR(node);
}

json_t *xp_agent_node_status_patch(const json_t *existing, const json_t *status)
{
        static const char *const owned[] = {"capacity", "allocatable", "xpool"};
        const json_t *before_status = json_object_get(existing, "status");
        json_auto_t *patch = json_copy((json_t *)status);

        if (!patch)
                return NULL;
        for (size_t i = 0; i < sizeof(owned) / sizeof(owned[0]); i++) {
                const json_t *before = json_object_get(before_status, owned[i]);
                const json_t *now = json_object_get(status, owned[i]);
                json_t *diff = NULL;

                if (!json_is_object(before))
                        continue;
                if (!now)
                        diff = json_null();
                else if (json_is_object(now) && xp_patch_merge_diff(before, now, &diff) < 0)
                        return NULL;
                if (diff && json_object_set_new(patch, owned[i], diff) < 0)
                        return NULL;
        }
        return TAKE_PTR(patch);
}
