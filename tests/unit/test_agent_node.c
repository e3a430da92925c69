/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "agent/agent_internal.h"
#include "xpool/codec.h"
#include "xpool/macro.h"

/* Two GPUs of one model (one unhealthy), an NPU, an unhealthy FPGA. */
static const char inventory_json[] =
    "{\"memoryBytes\": 68719476736, \"cpu\": {\"sockets\": 2, \"cores\": 16, \"threads\": 32},"
    " \"devices\": ["
    "  {\"id\": \"g0\", \"kind\": \"gpu\", \"vendor\": \"NVIDIA\", \"model\": \"NVIDIA H100 80GB HBM3\","
    "   \"resourceName\": \"nvidia.com/gpu\", \"memoryBytes\": 85899345920, \"health\": \"Healthy\"},"
    "  {\"id\": \"g1\", \"kind\": \"gpu\", \"vendor\": \"NVIDIA\", \"model\": \"NVIDIA H100 80GB HBM3\","
    "   \"resourceName\": \"nvidia.com/gpu\", \"memoryBytes\": 85899345920, \"health\": \"Unhealthy\"},"
    "  {\"id\": \"n0\", \"kind\": \"npu\", \"vendor\": \"Huawei\", \"model\": \"Ascend 910B\","
    "   \"resourceName\": \"huawei.com/Ascend910\"},"
    "  {\"id\": \"x0\", \"kind\": \"fpga\", \"vendor\": \"Xilinx\", \"model\": \"U250\","
    "   \"resourceName\": \"xilinx.com/fpga\", \"health\": \"Unhealthy\"}"
    "]}";

static struct xp_node_inventory *load_inventory(const char *text)
{
        json_auto_t *json = json_loads(text, 0, NULL);
        struct xp_node_inventory *inv = NULL;
        struct xp_error err = {0};

        assert_non_null(json);
        if (xp_node_inventory_from_json(json, NULL, 0, &inv, &err) < 0)
                fail_msg("inventory: %s", err.msg);
        return inv;
}

static const struct xp_agent_node_info info = {
    .name = "node-a",
    .hostname = "host-a",
    .address = "10.0.0.5",
    .arch = "amd64",
    .kernel_version = "6.1.0",
    .os_image = "Debian GNU/Linux 12",
    .machine_id = "abc",
    .boot_id = "def",
    .cpu_count = 4,
    .port = 10250,
    .now_s = 1764715200, /* 2025-12-02T22:40:00Z */
};

static const char *get_str(const json_t *root, const char *a, const char *b, const char *c)
{
        const json_t *v = json_object_get(json_object_get(root, a), b);

        if (c)
                v = json_object_get(v, c);
        return json_string_value(v);
}

static const json_t *find_by(const json_t *array, const char *key, const char *value)
{
        size_t i;
        json_t *item;

        json_array_foreach(array, i, item) if (strcmp(json_string_value(json_object_get(item, key)),
                                                      value) == 0) return item;
        return NULL;
}

static void resources_count_devices_and_leave_unhealthy_out(void **state)
{
        _cleanup_(xp_node_inventory_freep) struct xp_node_inventory *inv =
            load_inventory(inventory_json);
        json_auto_t *node = NULL;
        const json_t *status;

        (void)state;
        assert_int_equal(xp_agent_node_build(inv, &info, &node, NULL), 0);
        status = json_object_get(node, "status");
        assert_string_equal(get_str(status, "capacity", "cpu", NULL), "32");
        assert_string_equal(get_str(status, "capacity", "memory", NULL), "68719476736");
        assert_string_equal(get_str(status, "capacity", "pods", NULL), "110");
        assert_string_equal(get_str(status, "capacity", "nvidia.com/gpu", NULL), "2");
        assert_string_equal(get_str(status, "allocatable", "nvidia.com/gpu", NULL), "1");
        assert_string_equal(get_str(status, "capacity", "huawei.com/Ascend910", NULL), "1");
        assert_string_equal(get_str(status, "allocatable", "huawei.com/Ascend910", NULL), "1");
        assert_string_equal(get_str(status, "allocatable", "pods", NULL), "110");
        /* a resource all of whose devices are unhealthy stays, with none allocatable */
        assert_string_equal(get_str(status, "capacity", "xilinx.com/fpga", NULL), "1");
        assert_string_equal(get_str(status, "allocatable", "xilinx.com/fpga", NULL), "0");
        assert_int_equal(json_object_size(json_object_get(status, "capacity")), 6);
        assert_int_equal(
            json_array_size(json_object_get(json_object_get(status, "xpool"), "devices")), 4);
        assert_int_equal(json_object_get(json_object_get(json_object_get(status, "daemonEndpoints"),
                                                         "kubeletEndpoint"),
                                         "Port") == NULL,
                         0);
        assert_int_equal(
            json_integer_value(json_object_get(
                json_object_get(json_object_get(status, "daemonEndpoints"), "kubeletEndpoint"),
                "Port")),
            10250);
}

static void cpu_count_falls_back_without_topology(void **state)
{
        _cleanup_(xp_node_inventory_freep) struct xp_node_inventory *inv =
            load_inventory("{\"memoryBytes\": 1024}");
        json_auto_t *node = NULL;

        (void)state;
        assert_int_equal(xp_agent_node_build(inv, &info, &node, NULL), 0);
        assert_string_equal(get_str(node, "status", "capacity", "cpu"), "4");
        assert_null(get_str(node, "status", "capacity", "nvidia.com/gpu"));
        assert_null(get_str(node, "metadata", "labels", "xpool.io/gpu.count"));
}

static void labels_name_products_and_counts(void **state)
{
        _cleanup_(xp_node_inventory_freep) struct xp_node_inventory *inv =
            load_inventory(inventory_json);
        json_auto_t *node = NULL;
        const json_t *labels;

        (void)state;
        assert_int_equal(xp_agent_node_build(inv, &info, &node, NULL), 0);
        labels = json_object_get(json_object_get(node, "metadata"), "labels");
        assert_string_equal(get_str(node, "metadata", "name", NULL), "node-a");
        assert_string_equal(json_string_value(json_object_get(labels, "kubernetes.io/hostname")),
                            "host-a");
        assert_string_equal(json_string_value(json_object_get(labels, "kubernetes.io/os")),
                            "linux");
        assert_string_equal(json_string_value(json_object_get(labels, "kubernetes.io/arch")),
                            "amd64");
        assert_string_equal(json_string_value(json_object_get(labels, "xpool.io/gpu.product")),
                            "NVIDIA-H100-80GB-HBM3");
        assert_string_equal(json_string_value(json_object_get(labels, "xpool.io/gpu.count")), "2");
        assert_string_equal(json_string_value(json_object_get(labels, "xpool.io/gpu.memory")),
                            "81920");
        assert_string_equal(json_string_value(json_object_get(labels, "xpool.io/npu.product")),
                            "Ascend-910B");
        assert_string_equal(json_string_value(json_object_get(labels, "xpool.io/npu.count")), "1");
        assert_null(json_object_get(labels, "xpool.io/npu.memory"));
        assert_string_equal(json_string_value(json_object_get(labels, "xpool.io/fpga.count")), "1");
}

static void conditions_addresses_and_node_info(void **state)
{
        _cleanup_(xp_node_inventory_freep) struct xp_node_inventory *inv =
            load_inventory(inventory_json);
        json_auto_t *node = NULL;
        const json_t *status, *ready, *c;

        (void)state;
        assert_int_equal(xp_agent_node_build(inv, &info, &node, NULL), 0);
        status = json_object_get(node, "status");
        ready = find_by(json_object_get(status, "conditions"), "type", "Ready");
        assert_non_null(ready);
        assert_string_equal(json_string_value(json_object_get(ready, "status")), "True");
        assert_string_equal(json_string_value(json_object_get(ready, "reason")), "AgentReady");
        assert_string_equal(json_string_value(json_object_get(ready, "lastHeartbeatTime")),
                            "2025-12-02T22:40:00Z");
        static const char *const reasons[] = {
            "KubeletHasSufficientMemory", "KubeletHasNoDiskPressure", "KubeletHasSufficientPID"};
        static const char *const messages[] = {"kubelet has sufficient memory available",
                                               "kubelet has no disk pressure",
                                               "kubelet has sufficient PID available"};

        for (int i = 0; i < 3; i++) {
                c = find_by(json_object_get(status, "conditions"),
                            "type",
                            (const char *[]){"MemoryPressure", "DiskPressure", "PIDPressure"}[i]);
                assert_non_null(c);
                assert_string_equal(json_string_value(json_object_get(c, "status")), "False");
                /* the kubelet's words, which clients and dashboards match on */
                assert_string_equal(json_string_value(json_object_get(c, "reason")), reasons[i]);
                assert_string_equal(json_string_value(json_object_get(c, "message")), messages[i]);
        }
        c = find_by(json_object_get(status, "addresses"), "type", "InternalIP");
        assert_string_equal(json_string_value(json_object_get(c, "address")), "10.0.0.5");
        c = find_by(json_object_get(status, "addresses"), "type", "Hostname");
        assert_string_equal(json_string_value(json_object_get(c, "address")), "host-a");
        assert_string_equal(get_str(status, "nodeInfo", "architecture", NULL), "amd64");
        assert_string_equal(get_str(status, "nodeInfo", "kernelVersion", NULL), "6.1.0");
        assert_string_equal(get_str(status, "nodeInfo", "osImage", NULL), "Debian GNU/Linux 12");
        assert_string_equal(get_str(status, "nodeInfo", "operatingSystem", NULL), "linux");
}

static void a_heartbeat_keeps_the_transition_time(void **state)
{
        json_auto_t *conditions = xp_agent_node_conditions(200, 100, NULL);
        const json_t *ready;

        (void)state;
        assert_non_null(conditions);
        assert_int_equal(json_array_size(conditions), 5);
        ready = find_by(conditions, "type", "Ready");
        assert_string_equal(json_string_value(json_object_get(ready, "lastHeartbeatTime")),
                            "1970-01-01T00:03:20Z");
        assert_string_equal(json_string_value(json_object_get(ready, "lastTransitionTime")),
                            "1970-01-01T00:01:40Z");
}

static void a_degraded_node_says_so(void **state)
{
        struct xp_agent_isolation full = {.have = XP_ISOLATION_ALL};
        struct xp_agent_isolation nocg = {.have = XP_ISOLATION_ALL &
                                                  ~(XP_ISOLATION_CGROUPS | XP_ISOLATION_DEVICES),
                                          .why = "no cgroups (x): containers run without limits"};
        json_auto_t *ok = xp_agent_node_conditions(200, 100, &full);
        json_auto_t *bad = xp_agent_node_conditions(200, 100, &nocg);
        json_auto_t *anyway = NULL;
        const json_t *c;

        (void)state;
        c = find_by(ok, "type", "IsolationDegraded");
        assert_string_equal(json_string_value(json_object_get(c, "status")), "False");
        assert_string_equal(json_string_value(json_object_get(c, "reason")), "IsolationComplete");
        c = find_by(bad, "type", "IsolationDegraded");
        assert_string_equal(json_string_value(json_object_get(c, "status")), "True");
        assert_string_equal(json_string_value(json_object_get(c, "reason")), "CgroupsUnavailable");
        assert_string_equal(
            json_string_value(json_object_get(c, "message")),
            "no cgroups (x): containers run without limits; pods with limits or devices are refused (--allow-degraded-isolation runs them anyway)");
        nocg.allow_degraded = true;
        nocg.have |= XP_ISOLATION_CGROUPS;
        anyway = xp_agent_node_conditions(200, 100, &nocg);
        c = find_by(anyway, "type", "IsolationDegraded");
        assert_string_equal(json_string_value(json_object_get(c, "reason")),
                            "DeviceFilterUnavailable");
        assert_non_null(strstr(json_string_value(json_object_get(c, "message")), "run anyway"));
}

/* NetworkUnavailable (docs/networking.md): as the agent's network fields say, none without. */
static void the_pod_network_is_a_condition(void **state)
{
        struct xp_agent_isolation ready = {.have = XP_ISOLATION_ALL,
                                           .network_reason = "PodNetworkReady",
                                           .network_message = "each pod gets a network"};
        struct xp_agent_isolation none = {.have = XP_ISOLATION_ALL,
                                          .network_unavailable = true,
                                          .network_reason = "CNIPluginNotFound",
                                          .network_message = "no CNI plugin \"bridge\""};
        struct xp_agent_isolation unset = {.have = XP_ISOLATION_ALL};
        json_auto_t *ok = xp_agent_node_conditions(200, 100, &ready);
        json_auto_t *bad = xp_agent_node_conditions(200, 100, &none);
        json_auto_t *without = xp_agent_node_conditions(200, 100, &unset);
        const json_t *c;

        (void)state;
        c = find_by(ok, "type", "NetworkUnavailable");
        assert_non_null(c);
        assert_string_equal(json_string_value(json_object_get(c, "status")), "False");
        assert_string_equal(json_string_value(json_object_get(c, "reason")), "PodNetworkReady");
        assert_string_equal(json_string_value(json_object_get(c, "message")),
                            "each pod gets a network");
        assert_string_equal(json_string_value(json_object_get(c, "lastTransitionTime")),
                            "1970-01-01T00:01:40Z");
        c = find_by(bad, "type", "NetworkUnavailable");
        assert_string_equal(json_string_value(json_object_get(c, "status")), "True");
        assert_string_equal(json_string_value(json_object_get(c, "reason")), "CNIPluginNotFound");
        assert_int_equal(json_array_size(without), 5);
        assert_null(find_by(without, "type", "NetworkUnavailable"));
}

static void the_node_decodes_as_a_valid_node(void **state)
{
        _cleanup_(xp_node_inventory_freep) struct xp_node_inventory *inv =
            load_inventory(inventory_json);
        _cleanup_(xp_node_freep) struct xp_node *decoded = NULL;
        json_auto_t *node = NULL;
        struct xp_error err = {0};

        (void)state;
        assert_int_equal(xp_agent_node_build(inv, &info, &node, NULL), 0);
        if (xp_node_from_json(node, NULL, 0, &decoded, &err) < 0 ||
            xp_node_validate(decoded, &err) < 0)
                fail_msg("the agent's Node is refused: %s", err.msg);
        assert_non_null(decoded->status.xpool);
        assert_int_equal(decoded->status.xpool->devices.n, 4);
}

static void merge_keeps_the_operators_labels_and_taints(void **state)
{
        json_auto_t *existing = json_loads(
            "{\"metadata\": {\"name\": \"node-a\", \"resourceVersion\": \"42\","
            " \"labels\": {\"team\": \"ml\", \"kubernetes.io/arch\": \"old\"},"
            " \"annotations\": {\"note\": \"x\"}},"
            " \"spec\": {\"unschedulable\": true, \"taints\": [{\"key\": \"k\", \"effect\": \"NoSchedule\"}]}}",
            0,
            NULL);
        json_auto_t *desired = json_loads("{\"metadata\": {\"name\": \"node-a\", \"labels\":"
                                          " {\"kubernetes.io/arch\": \"amd64\"}}, \"spec\": {}}",
                                          0,
                                          NULL);
        json_auto_t *merged = xp_agent_node_merge(existing, desired);
        const json_t *labels;

        (void)state;
        assert_non_null(merged);
        labels = json_object_get(json_object_get(merged, "metadata"), "labels");
        assert_string_equal(json_string_value(json_object_get(labels, "team")), "ml");
        assert_string_equal(json_string_value(json_object_get(labels, "kubernetes.io/arch")),
                            "amd64");
        assert_string_equal(get_str(merged, "metadata", "annotations", "note"), "x");
        assert_string_equal(get_str(merged, "metadata", "resourceVersion", NULL), "42");
        assert_true(
            json_is_true(json_object_get(json_object_get(merged, "spec"), "unschedulable")));
        assert_int_equal(
            json_array_size(json_object_get(json_object_get(merged, "spec"), "taints")), 1);
}

/* A device kind the node no longer has loses its labels; one it still has, and the operator's
 * own xpool.io labels, keep theirs. */
static void merge_drops_the_device_labels_of_a_kind_gone(void **state)
{
        json_auto_t *existing = json_loads(
            "{\"metadata\": {\"name\": \"node-a\", \"labels\": {\"xpool.io/gpu.count\": \"2\","
            " \"xpool.io/gpu.product\": \"H100\", \"xpool.io/gpu.memory\": \"81559\","
            " \"xpool.io/npu.count\": \"1\", \"xpool.io/pool\": \"a\", \"count\": \"3\"}},"
            " \"spec\": {}}",
            0,
            NULL);
        json_auto_t *desired = json_loads("{\"metadata\": {\"name\": \"node-a\", \"labels\":"
                                          " {\"xpool.io/npu.count\": \"2\"}}, \"spec\": {}}",
                                          0,
                                          NULL);
        json_auto_t *merged = xp_agent_node_merge(existing, desired);
        const json_t *labels;

        (void)state;
        assert_non_null(merged);
        labels = json_object_get(json_object_get(merged, "metadata"), "labels");
        assert_null(json_object_get(labels, "xpool.io/gpu.count"));
        assert_null(json_object_get(labels, "xpool.io/gpu.product"));
        assert_null(json_object_get(labels, "xpool.io/gpu.memory"));
        assert_string_equal(json_string_value(json_object_get(labels, "xpool.io/npu.count")), "2");
        assert_string_equal(json_string_value(json_object_get(labels, "xpool.io/pool")), "a");
        assert_string_equal(json_string_value(json_object_get(labels, "count")), "3");
}

/* The status patch of a node that lost its GPUs removes them from capacity, allocatable and the
 * inventory; what it still has, and the members the patch does not own, are as sent. */
static void status_patch_removes_what_is_gone(void **state)
{
        json_auto_t *existing = json_loads(
            "{\"status\": {\"capacity\": {\"cpu\": \"4\", \"nvidia.com/gpu\": \"2\"},"
            " \"allocatable\": {\"cpu\": \"4\", \"nvidia.com/gpu\": \"2\"},"
            " \"xpool\": {\"devices\": [{\"id\": \"g0\"}], \"links\": [{\"a\": \"g0\"}]}}}",
            0,
            NULL);
        json_auto_t *status =
            json_loads("{\"capacity\": {\"cpu\": \"4\"}, \"allocatable\": {\"cpu\": \"3\"},"
                       " \"xpool\": {\"devices\": [{\"id\": \"n0\"}]}, \"conditions\": []}",
                       0,
                       NULL);
        json_auto_t *patch = xp_agent_node_status_patch(existing, status);
        json_auto_t *alone = xp_agent_node_status_patch(NULL, status);
        char *text;

        (void)state;
        assert_non_null(patch);
        text = json_dumps(patch, JSON_COMPACT | JSON_SORT_KEYS);
        assert_string_equal(text,
                            "{\"allocatable\":{\"cpu\":\"3\",\"nvidia.com/gpu\":null},"
                            "\"capacity\":{\"nvidia.com/gpu\":null},\"conditions\":[],"
                            "\"xpool\":{\"devices\":[{\"id\":\"n0\"}],\"links\":null}}");
        free(text);
        assert_true(json_equal(alone, status));
}

static void label_values_and_arch(void **state)
{
        char buf[XP_AGENT_LABEL_VALUE_MAX + 1];
        char long_text[200];

        (void)state;
        assert_string_equal(xp_agent_label_value("  Tesla V100 (SXM2) ", buf), "Tesla-V100--SXM2");
        assert_string_equal(xp_agent_label_value("---", buf), "");
        memset(long_text, 'a', sizeof(long_text) - 1);
        long_text[sizeof(long_text) - 1] = '\0';
        assert_int_equal(strlen(xp_agent_label_value(long_text, buf)), XP_AGENT_LABEL_VALUE_MAX);
        assert_string_equal(xp_agent_arch("x86_64"), "amd64");
        assert_string_equal(xp_agent_arch("aarch64"), "arm64");
        assert_string_equal(xp_agent_arch("mips"), "mips");
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(resources_count_devices_and_leave_unhealthy_out),
            cmocka_unit_test(cpu_count_falls_back_without_topology),
            cmocka_unit_test(labels_name_products_and_counts),
            cmocka_unit_test(conditions_addresses_and_node_info),
            cmocka_unit_test(a_heartbeat_keeps_the_transition_time),
            cmocka_unit_test(a_degraded_node_says_so),
            cmocka_unit_test(the_pod_network_is_a_condition),
            cmocka_unit_test(the_node_decodes_as_a_valid_node),
            cmocka_unit_test(merge_keeps_the_operators_labels_and_taints),
            cmocka_unit_test(merge_drops_the_device_labels_of_a_kind_gone),
            cmocka_unit_test(status_patch_removes_what_is_gone),
            cmocka_unit_test(label_values_and_arch),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
