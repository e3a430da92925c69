/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sim discovery backend through xp_device_discover(): node descriptions in tests/data/nodes
 * and examples/nodes, their conveniences (count, numaNode lists, links among device lists), their
 * precise errors; and the built-in model catalog.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "device/catalog.h"
#include "xpool/device.h"
#include "xpool/error.h"
#include "xpool/macro.h"

#define NODES    XPOOL_TEST_DATA "/nodes/"
#define EXAMPLES XPOOL_TEST_DATA "/../../examples/nodes/"

static const char *const sim_only[] = {"sim", NULL};

static int discover(const char *description, struct xp_node_inventory **ret, struct xp_error *err)
{
        struct xp_discovery_config config = {
            .root = "/",
            .node_description = description,
            .backends = sim_only,
        };

        return xp_device_discover(&config, ret, err);
}

static const struct xp_device *find(const struct xp_node_inventory *inv, const char *id)
{
        for (size_t i = 0; i < inv->devices.n; i++)
                if (strcmp(inv->devices.items[i].id, id) == 0)
                        return &inv->devices.items[i];
        fail_msg("no device %s", id);
        return NULL;
}

static const struct xp_device_link *
link_of(const struct xp_node_inventory *inv, const char *a, const char *b)
{
        const struct xp_device_link *l = xp_device_link_find(inv, a, b);

        if (!l)
                fail_msg("no link between %s and %s", a, b);
        return l;
}

/* Writes text to a temporary file named like the description it stands for. */
static char *write_description(const char *text)
{
        char *path = strdup("/tmp/xpool-sim-XXXXXX.yaml");
        int fd;

        assert_non_null(path);
        fd = mkstemps(path, 5);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
        close(fd);
        return path;
}

static void the_seed_node_has_one_gpu_and_two_npus(void **state)
{
        _cleanup_(xp_node_inventory_freep) struct xp_node_inventory *inv = NULL;
        struct xp_error err = {0};
        const struct xp_device *gpu, *npu;

        (void)state;
        assert_int_equal(discover(EXAMPLES "seed-gpu-npu.yaml", &inv, &err), 0);
        assert_int_equal(inv->devices.n, 3);
        gpu = &inv->devices.items[0];
        assert_string_equal(gpu->id, "sim-gpu-0");
        assert_int_equal(gpu->kind, XP_DEVICE_GPU);
        assert_string_equal(gpu->resource_name, "nvidia.com/gpu");
        assert_true(gpu->simulated);
        assert_int_equal(gpu->health, XP_DEVICE_HEALTHY);
        assert_int_equal(gpu->device_nodes.n, 3);
        assert_string_equal(gpu->device_nodes.items[0], "/dev/nvidia0");
        /* the catalog fills what the description leaves out */
        assert_int_equal(gpu->compute_units, 132);
        assert_true(gpu->fp16_tflops == 989.5);
        for (size_t i = 1; i < 3; i++) {
                char id[32];

                npu = &inv->devices.items[i];
                snprintf(id, sizeof(id), "sim-npu-%zu", i - 1);
                assert_string_equal(npu->id, id);
                assert_int_equal(npu->kind, XP_DEVICE_NPU);
                assert_int_equal(npu->index, (int64_t)i - 1);
                assert_string_equal(npu->resource_name, "vendor.com/npu");
                assert_true(npu->simulated);
                assert_int_equal(npu->health, XP_DEVICE_HEALTHY);
                snprintf(id, sizeof(id), "/dev/npu%zu", i - 1);
                assert_int_equal(npu->device_nodes.n, 1);
                assert_string_equal(npu->device_nodes.items[0], id);
                assert_true(npu->numa_node.set);
                assert_int_equal(npu->numa_node.value, 0);
                assert_true(npu->fp16_tflops == 256);
                assert_int_equal(npu->memory_bytes, INT64_C(34359738368));
        }
        assert_int_equal(inv->links.n, 3);
        assert_int_equal(link_of(inv, "sim-npu-1", "sim-npu-0")->level, XP_LINK_NVLINK);
        assert_int_equal(link_of(inv, "sim-npu-0", "sim-npu-1")->nvlinks, 1);
        assert_int_equal(link_of(inv, "sim-gpu-0", "sim-npu-0")->level, XP_LINK_PIX);
        assert_int_equal(link_of(inv, "sim-gpu-0", "sim-npu-1")->level, XP_LINK_PHB);
}

static void count_and_device_lists_expand(void **state)
{
        _cleanup_(xp_node_inventory_freep) struct xp_node_inventory *inv = NULL;
        struct xp_error err = {0};

        (void)state;
        assert_int_equal(discover(NODES "full-nvlink.yaml", &inv, &err), 0);
        assert_int_equal(inv->devices.n, 8);
        for (size_t i = 0; i < 8; i++) {
                const struct xp_device *dev = &inv->devices.items[i];
                char id[16];

                snprintf(id, sizeof(id), "gpu-%zu", i);
                assert_string_equal(dev->id, id);
                assert_int_equal(dev->index, (int64_t)i);
                assert_int_equal(dev->numa_node.value, i < 4 ? 0 : 1);
                /* localCPUs from the NUMA node when the description leaves it out */
                assert_string_equal(dev->local_cpus, i < 4 ? "0-47,96-143" : "48-95,144-191");
                assert_true(dev->simulated);
        }
        assert_int_equal(inv->links.n, 28);
        for (size_t i = 0; i < inv->links.n; i++) {
                assert_int_equal(inv->links.items[i].level, XP_LINK_NVLINK);
                assert_int_equal(inv->links.items[i].nvlinks, 18);
                assert_true(inv->links.items[i].bandwidth_gbps == 450);
        }
        /* with only the sim backend the node part comes from the description */
        assert_non_null(inv->cpu);
        assert_int_equal(inv->cpu->threads, 192);
        assert_int_equal(inv->numa_nodes.n, 2);
        assert_int_equal(inv->memory_bytes, INT64_C(1) << 40);
}

static void json_descriptions_and_default_links(void **state)
{
        _cleanup_(xp_node_inventory_freep) struct xp_node_inventory *inv = NULL;
        struct xp_error err = {0};
        const struct xp_device *bad;

        (void)state;
        assert_int_equal(discover(NODES "pairs.json", &inv, &err), 0);
        assert_int_equal(inv->devices.n, 3);
        bad = find(inv, "a100-1");
        assert_int_equal(bad->health, XP_DEVICE_UNHEALTHY);
        assert_string_equal(bad->health_reason, "Xid 79: GPU has fallen off the bus");
        assert_true(find(inv, "a100-0")->fp16_tflops == 312);
        assert_true(find(inv, "a100-2")->fp16_tflops == 300); /* written: kept */
        assert_true(find(inv, "a100-2")->fp32_tflops == 19.5);
        assert_int_equal(link_of(inv, "a100-0", "a100-1")->nvlinks, 12);
        /* unlinked pairs: SYS across NUMA nodes */
        assert_int_equal(link_of(inv, "a100-0", "a100-2")->level, XP_LINK_SYS);
        assert_int_equal(link_of(inv, "a100-1", "a100-2")->level, XP_LINK_SYS);
        assert_null(inv->cpu);
}

static void every_device_is_simulated_and_healthy_by_default(void **state)
{
        _cleanup_(xp_node_inventory_freep) struct xp_node_inventory *inv = NULL;
        _cleanup_free_ char *path =
            write_description("devices:\n"
                              "- {kind: gpu, resourceName: nvidia.com/gpu, simulated: false}\n"
                              "- {kind: gpu, index: 1, resourceName: nvidia.com/gpu}\n"
                              "- {kind: fpga, resourceName: xilinx.com/fpga, health: Unhealthy}\n");
        struct xp_error err = {0};

        (void)state;
        assert_int_equal(discover(path, &inv, &err), 0);
        unlink(path);
        assert_int_equal(inv->devices.n, 3);
        assert_string_equal(inv->devices.items[0].id, "sim-gpu-0");
        assert_string_equal(inv->devices.items[1].id, "sim-gpu-1");
        assert_string_equal(inv->devices.items[2].id, "sim-fpga-0");
        for (size_t i = 0; i < 3; i++)
                assert_true(inv->devices.items[i].simulated);
        assert_int_equal(inv->devices.items[0].health, XP_DEVICE_HEALTHY);
        assert_int_equal(inv->devices.items[2].health, XP_DEVICE_UNHEALTHY);
        /* unknown NUMA nodes: NODE */
        assert_int_equal(link_of(inv, "sim-gpu-0", "sim-fpga-0")->level, XP_LINK_NODE);
}

static void without_a_description_sim_adds_nothing(void **state)
{
        _cleanup_(xp_node_inventory_freep) struct xp_node_inventory *inv = NULL;
        struct xp_error err = {0};

        (void)state;
        assert_int_equal(discover(NULL, &inv, &err), 0);
        assert_int_equal(inv->devices.n, 0);
        assert_int_equal(inv->links.n, 0);
}

static void bad_files_get_precise_errors(void **state)
{
        static const struct {
                const char *file;
                int code;
                const char *message; /* after the file name */
        } cases[] = {
            {"bad-kind.yaml",
             -EINVAL,
             ":7:9: devices[1].kind: unsupported value \"tpu\": supported values: \"gpu\", \"npu\", \"fpga\", \"vpu\", \"accelerator\""},
            {"bad-count.yaml",
             -EINVAL,
             ":3:10: devices[0].count: expected a whole number of devices from 1 to 1024"},
            {"bad-numa-list.yaml",
             -EINVAL,
             ":5:13: devices[0].numaNode: 3 NUMA nodes listed for count: 4: give one per device"},
            {"bad-link.yaml", -EINVAL, ":7:20: links[0].devices[1]: unknown device \"gpu-2\": "},
            {"bad-duplicate.yaml",
             -EINVAL,
             ":6:7: devices[1].id: duplicate device id \"gpu-1\" (devices[0] has it too)"},
            {"bad-field.yaml",
             -EINVAL,
             ":5:3: devices[0].memoryByte: unknown field \"memoryByte\" in Device"},
            {"bad-level.yaml", -EINVAL, ":5:23: links[0].level: unsupported value \"NVSwitch\""},
            {"bad-syntax.json", -EINVAL, ":4:1: "},
        };

        (void)state;
        for (size_t i = 0; i < XP_ELEMENTSOF(cases); i++) {
                struct xp_node_inventory *inv = NULL;
                struct xp_error err = {0};
                char path[256], want[512];

                snprintf(path, sizeof(path), NODES "%s", cases[i].file);
                snprintf(want, sizeof(want), "%s%s", path, cases[i].message);
                assert_int_equal(discover(path, &inv, &err), cases[i].code);
                assert_null(inv);
                if (strncmp(err.msg, want, strlen(want)) != 0)
                        fail_msg("%s:\n got: %s\nwant: %s...", cases[i].file, err.msg, want);
        }
}

static void inline_mistakes_say_what_to_do(void **state)
{
        static const struct {
                const char *text;
                const char *message;
        } cases[] = {
            {"devices:\n- {kind: gpu, count: 2, resourceName: nvidia.com/gpu, pciAddress: "
             "\"0000:01:00.0\"}\n",
             ":2:67: devices[0].pciAddress: a PCI address names one device"},
            {"devices:\n- {kind: gpu, resourceName: nvidia.com/gpu, numaNode: [0, 1]}\n",
             ":2:55: devices[0].numaNode: a list of NUMA nodes needs count: N"},
            {"devices:\n- {kind: gpu, count: 2, resourceName: nvidia.com/gpu, numaNode: [0, -1]}\n",
             ":2:69: devices[0].numaNode[1]: expected a NUMA node number"},
            {"devices:\n- {kind: gpu, resourceName: nvidia.com/gpu}\n- {kind: gpu, resourceName: "
             "nvidia.com/gpu}\n",
             ":3:3: devices[1]: duplicate device id \"sim-gpu-0\""},
            {"devices:\n- {kind: gpu, count: 2, resourceName: nvidia.com/gpu}\nlinks:\n- {devices: "
             "[sim-gpu-0, sim-gpu-1], a: sim-gpu-0, level: PIX}\n",
             ":4:13: links[0].devices: give either devices (every pair among them) or a and b"},
            {"devices:\n- {kind: gpu, count: 2, resourceName: nvidia.com/gpu}\nlinks:\n- {devices: "
             "[sim-gpu-0], level: PIX}\n",
             ":4:13: links[0].devices: expected a list of at least two device ids"},
            {"devices:\n- {kind: gpu, count: 2, resourceName: nvidia.com/gpu}\nlinks:\n- {a: "
             "sim-gpu-0, b: gpu-1, level: PIX}\n",
             ":4:21: links[0].b: unknown device \"gpu-1\""},
            {"devices:\n- {kind: gpu, count: 2}\n", ":2:3: devices[0].resourceName: "},
            {"- {kind: gpu}\n", ":1:1: a node description is a mapping"},
            {"devices: []\n---\ndevices: []\n", ": more than one document"},
            {"# nothing\n", ": empty: a node description is one YAML or JSON document"},
        };

        (void)state;
        for (size_t i = 0; i < XP_ELEMENTSOF(cases); i++) {
                _cleanup_free_ char *path = write_description(cases[i].text);
                struct xp_node_inventory *inv = NULL;
                struct xp_error err = {0};
                char want[512];

                snprintf(want, sizeof(want), "%s%s", path, cases[i].message);
                assert_int_equal(discover(path, &inv, &err), -EINVAL);
                unlink(path);
                assert_null(inv);
                if (strncmp(err.msg, want, strlen(want)) != 0)
                        fail_msg("case %zu:\n got: %s\nwant: %s...", i, err.msg, want);
        }
}

static void a_missing_file_is_named(void **state)
{
        struct xp_node_inventory *inv = NULL;
        struct xp_error err = {0};

        (void)state;
        assert_int_equal(discover(NODES "nope.yaml", &inv, &err), -ENOENT);
        assert_null(inv);
        assert_string_equal(err.msg,
                            "cannot open the node description " NODES
                            "nope.yaml: No such file or directory");
        assert_int_equal(discover(NODES, &inv, &err), -EISDIR);
}

static void every_example_loads(void **state)
{
        static const char *const files[] = {
            "seed-gpu-npu.yaml",
            "dgx-h100.yaml",
            "ascend-8npu.yaml",
            "mixed-box.yaml",
        };

        (void)state;
        for (size_t i = 0; i < XP_ELEMENTSOF(files); i++) {
                _cleanup_(xp_node_inventory_freep) struct xp_node_inventory *inv = NULL;
                struct xp_error err = {0};
                char path[256];

                snprintf(path, sizeof(path), EXAMPLES "%s", files[i]);
                if (discover(path, &inv, &err) != 0)
                        fail_msg("%s: %s", files[i], err.msg);
                assert_true(inv->devices.n > 0);
        }
}

/* ---- the catalog ----------------------------------------------------------------------------- */

static void catalog_matches_the_most_specific_model(void **state)
{
        static const struct {
                const char *model;
                double fp16, fp32;
                int64_t units;
        } cases[] = {
            {"NVIDIA H100 80GB HBM3", 989.5, 66.9, 132},
            {"NVIDIA H100 PCIe", 756.5, 51.2, 114},
            {"NVIDIA H100 NVL", 835.5, 60.0, 132},
            {"NVIDIA H200", 989.5, 66.9, 132},
            {"NVIDIA A100-SXM4-80GB", 312, 19.5, 108},
            {"NVIDIA A100-PCIE-40GB", 312, 19.5, 108},
            {"NVIDIA A10", 125, 31.2, 72},
            {"NVIDIA A30", 165, 10.3, 56},
            {"NVIDIA L4", 121, 30.3, 58},
            {"NVIDIA L40S", 362.05, 91.6, 142},
            {"Tesla V100-PCIE-16GB", 112, 14, 80},
            {"Tesla V100-SXM2-32GB", 125, 15.7, 80},
            {"Tesla T4", 65, 8.1, 40},
            {"NVIDIA RTX 6000 Ada Generation", 364.25, 91.1, 142},
            {"NVIDIA GeForce RTX 4090", 330.3, 82.6, 128},
            {"AMD Instinct MI300X", 1307.4, 163.4, 304},
            {"AMD Instinct MI250X", 191.5, 23.95, 110}, /* per GCD */
            {"AMD Instinct MI250", 181.05, 22.65, 104},
            {"AMD Instinct MI210", 181, 22.6, 104},
            {"Intel Data Center GPU Max 1550", 832, 52, 128},
            {"Intel Data Center GPU Flex 170", 128, 16, 32},
            {"Ascend910B", 313, 0, 0},
            {"Huawei Ascend 910", 256, 0, 32},
            {"Ascend910B3", 313, 0, 0},
            {"Ascend 310P3", 70, 0, 8},
            {"Cambricon MLU370-X8", 96, 24, 0},
            {"Cambricon MLU370-S4", 72, 18, 0},
            {"Habana Gaudi2", 432, 0, 24},
            {"Some Unknown Accelerator", 0, 0, 0},
        };

        (void)state;
        for (size_t i = 0; i < XP_ELEMENTSOF(cases); i++) {
                struct xp_device dev = {.model = (char *)cases[i].model};

                xp_device_catalog_fill(&dev);
                if (dev.fp16_tflops != cases[i].fp16 || dev.fp32_tflops != cases[i].fp32 ||
                    dev.compute_units != cases[i].units)
                        fail_msg("%s: got %g/%g/%lld",
                                 cases[i].model,
                                 dev.fp16_tflops,
                                 dev.fp32_tflops,
                                 (long long)dev.compute_units);
        }
}

static void catalog_fills_only_what_is_unknown(void **state)
{
        struct xp_device dev = {.model = (char *)"nvidia h100 80gb hbm3", .fp32_tflops = 60};
        struct xp_device nameless = {0};

        (void)state;
        xp_device_catalog_fill(&dev);
        assert_true(dev.fp16_tflops == 989.5);
        assert_true(dev.fp32_tflops == 60);
        assert_int_equal(dev.compute_units, 132);
        xp_device_catalog_fill(&nameless);
        assert_true(nameless.fp16_tflops == 0);
        xp_device_catalog_fill(NULL);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(the_seed_node_has_one_gpu_and_two_npus),
            cmocka_unit_test(count_and_device_lists_expand),
            cmocka_unit_test(json_descriptions_and_default_links),
            cmocka_unit_test(every_device_is_simulated_and_healthy_by_default),
            cmocka_unit_test(without_a_description_sim_adds_nothing),
            cmocka_unit_test(bad_files_get_precise_errors),
            cmocka_unit_test(inline_mistakes_say_what_to_do),
            cmocka_unit_test(a_missing_file_is_named),
            cmocka_unit_test(every_example_loads),
            cmocka_unit_test(catalog_matches_the_most_specific_model),
            cmocka_unit_test(catalog_fills_only_what_is_unknown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
