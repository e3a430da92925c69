/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The nvml backend through the real dlopen() path: the fake libnvidia-ml.so.1 built by the test
 * suite (tests/fake/), configured per test by $FAKE_NVML_CONFIG (tests/data/nvml/ *.json).
 * Inventories are compared exactly with tests/data/expected/<config>-nvml.json, leaving out only
 * what the built-in catalog adds (computeUnits, fp16TFLOPS, fp32TFLOPS). XPOOL_UPDATE_EXPECTED=1
 * rewrites the expected files.
 */
#include <errno.h>
#include <libgen.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "xpool/codec.h"
#include "xpool/device.h"
#include "xpool/strutil.h"

#define NVML_DATA     XPOOL_TEST_DATA "/nvml/"
#define EXPECTED_DATA XPOOL_TEST_DATA "/expected/"
#define DGX_ROOT      XPOOL_TEST_DATA "/sysfs/dgx-8gpu"

static const char *const nvml_only[] = {"nvml", NULL};
static const char *const nvml_and_pci[] = {"nvml", "pci", NULL};

/* The fake built without the functions an older driver lacks, beside the full one. */
static char old_library[4096];

static int setup_group(void **state)
{
        char copy[4096];

        (void)state;
        snprintf(copy, sizeof(copy), "%s", XPOOL_FAKE_NVML);
        snprintf(old_library, sizeof(old_library), "%s/old/libnvidia-ml.so.1", dirname(copy));
        unsetenv("XPOOL_NVML_LIBRARY");
        return 0;
}

static struct xp_node_inventory *discover_with(const char *library,
                                               const char *config,
                                               const char *root,
                                               const char *const *backends)
{
        struct xp_discovery_config dc = {
            .root = root ? root : NVML_DATA, /* no sys/ there: nothing from the build machine */
            .nvml_library = library,
            .backends = backends,
        };
        struct xp_node_inventory *inv = NULL;
        struct xp_error err = {0};
        char path[4096];

        if (config) {
                snprintf(path, sizeof(path), NVML_DATA "%s.json", config);
                assert_int_equal(setenv("FAKE_NVML_CONFIG", path, 1), 0);
        } else {
                unsetenv("FAKE_NVML_CONFIG");
        }
        if (xp_device_discover(&dc, &inv, &err) < 0)
                fail_msg("discovery failed: %s", err.msg);
        assert_non_null(inv);
        return inv;
}

static struct xp_node_inventory *discover(const char *config)
{
        return discover_with(XPOOL_FAKE_NVML, config, NULL, nvml_only);
}

static const struct xp_device *device_at(const struct xp_node_inventory *inv, size_t i)
{
        assert_true(i < inv->devices.n);
        return &inv->devices.items[i];
}

/* The inventory as JSON without what the catalog (not this backend) fills in. */
static json_t *inventory_json(const struct xp_node_inventory *inv)
{
        json_t *json = NULL, *dev;
        size_t i;

        assert_int_equal(xp_node_inventory_to_json(inv, &json), 0);
        json_array_foreach(json_object_get(json, "devices"), i, dev)
        {
                json_object_del(dev, "computeUnits");
                json_object_del(dev, "fp16TFLOPS");
                json_object_del(dev, "fp32TFLOPS");
        }
        return json;
}

static void compare_expected(const struct xp_node_inventory *inv, const char *name)
{
        json_t *actual = inventory_json(inv), *expected;
        json_error_t error;
        char path[4096];

        snprintf(path, sizeof(path), EXPECTED_DATA "%s-nvml.json", name);
        if (getenv("XPOOL_UPDATE_EXPECTED")) {
                char *text = json_dumps(actual, JSON_INDENT(2) | JSON_SORT_KEYS);
                FILE *f = fopen(path, "we");

                assert_non_null(text);
                assert_non_null(f);
                fprintf(f, "%s\n", text);
                assert_int_equal(fclose(f), 0);
                free(text);
        }
        expected = json_load_file(path, 0, &error);
        if (!expected)
                fail_msg("%s:%d: %s", path, error.line, error.text);
        if (!json_equal(actual, expected)) {
                char *text = json_dumps(actual, JSON_INDENT(2) | JSON_SORT_KEYS);

                print_error("inventory differs from %s; it is:\n%s\n", path, text);
                free(text);
                fail();
        }
        json_decref(expected);
        json_decref(actual);
}

/* The `nvidia-smi topo -m` matrix, compared with tests/data/expected/<name>-nvml.topo. */
static void compare_topology(const struct xp_node_inventory *inv, const char *name)
{
        char path[4096], *text = NULL, *expected = NULL;
        size_t size = 0;
        FILE *f;

        assert_int_equal(xp_device_topology_format(inv, &text), 0);
        snprintf(path, sizeof(path), EXPECTED_DATA "%s-nvml.topo", name);
        if (getenv("XPOOL_UPDATE_EXPECTED")) {
                f = fopen(path, "we");
                assert_non_null(f);
                fputs(text, f);
                assert_int_equal(fclose(f), 0);
        }
        f = fopen(path, "re");
        if (!f)
                fail_msg("cannot open %s", path);
        assert_true(getdelim(&expected, &size, '\0', f) >= 0);
        fclose(f);
        if (strcmp(text, expected) != 0) {
                print_error("topology differs from %s; it is:\n%s\n", path, text);
                fail();
        }
        free(expected);
        free(text);
}

static void assert_nvlink(
    const struct xp_node_inventory *inv, const char *a, const char *b, int64_t nvlinks, double gbps)
{
        const struct xp_device_link *l = xp_device_link_find(inv, a, b);

        if (!l)
                fail_msg("no link between %s and %s", a, b);
        assert_int_equal(l->level, XP_LINK_NVLINK);
        assert_int_equal(l->nvlinks, nvlinks);
        assert_float_equal(l->bandwidth_gbps, gbps, 1e-9);
}

/* ---- 8 x H100 SXM on NVSwitches ----------------------------------------------------------- */

static const char *const h100_pci[] = {
    "0000:03:00.0",
    "0000:04:00.0",
    "0000:23:00.0",
    "0000:24:00.0",
    "0000:83:00.0",
    "0000:84:00.0",
    "0000:a3:00.0",
    "0000:a4:00.0",
};

static void test_h100_devices(void **state)
{
        struct xp_node_inventory *inv = discover("h100-8x-nvswitch");

        (void)state;
        assert_int_equal(inv->devices.n, 8);
        for (size_t i = 0; i < 8; i++) {
                const struct xp_device *dev = device_at(inv, i);
                char id[64], node[32];

                snprintf(id, sizeof(id), "GPU-5f2a8c31-9d47-4e1b-b6a0-3c7e1d9f20%02zx", i);
                snprintf(node, sizeof(node), "/dev/nvidia%zu", i);
                assert_string_equal(dev->id, id);
                assert_int_equal(dev->kind, XP_DEVICE_GPU);
                assert_string_equal(dev->vendor, "NVIDIA");
                assert_string_equal(dev->model, "NVIDIA H100 80GB HBM3");
                assert_string_equal(dev->resource_name, "nvidia.com/gpu");
                assert_int_equal(dev->index, (int64_t)i);
                assert_int_equal(dev->device_nodes.n, 4);
                assert_string_equal(dev->device_nodes.items[0], node);
                assert_string_equal(dev->device_nodes.items[1], "/dev/nvidiactl");
                assert_string_equal(dev->device_nodes.items[2], "/dev/nvidia-uvm");
                assert_string_equal(dev->device_nodes.items[3], "/dev/nvidia-uvm-tools");
                assert_int_equal(dev->memory_bytes, INT64_C(85520809984));
                assert_string_equal(dev->pci_address, h100_pci[i]);
                assert_string_equal(dev->pci_id, "10de:2330");
                assert_string_equal(dev->compute_capability, "9.0");
                assert_true(dev->mig_enabled.set);
                assert_false(dev->mig_enabled.value);
                assert_int_equal(dev->health, XP_DEVICE_HEALTHY);
                assert_null(dev->health_reason);
                assert_false(dev->numa_node.set); /* no sysfs below this root */
                assert_non_null(dev->metrics);
                assert_float_equal(dev->metrics->utilization_percent, 10.0 * (double)i, 1e-9);
                assert_int_equal(dev->metrics->memory_used_bytes, (int64_t)(i + 1) << 30);
                assert_float_equal(dev->metrics->temperature_celsius, 30.0 + (double)i, 1e-9);
                assert_float_equal(dev->metrics->power_watts, 70.0 + 1.25 * (double)i, 1e-9);
                assert_false(dev->simulated);
        }
        compare_expected(inv, "h100-8x-nvswitch");
        xp_node_inventory_free(inv);
}

static void test_h100_nvswitch_links(void **state)
{
        struct xp_node_inventory *inv = discover("h100-8x-nvswitch");

        (void)state;
        assert_int_equal(inv->links.n, 28);
        for (size_t i = 0; i < 8; i++)
                for (size_t j = i + 1; j < 8; j++)
                        assert_nvlink(inv,
                                      device_at(inv, i)->id,
                                      device_at(inv, j)->id,
                                      18,
                                      450.0); /* 18 x 25 GB/s (NVLink 4.0) each way */
        xp_node_inventory_free(inv);
}

/* ---- 4 x A100 PCIe in two bridged pairs ---------------------------------------------------- */

static void test_a100_pairs(void **state)
{
        struct xp_node_inventory *inv = discover("a100-4x-pcie-pairs");
        const struct xp_device *g[4];

        (void)state;
        assert_int_equal(inv->devices.n, 4);
        for (size_t i = 0; i < 4; i++) {
                g[i] = device_at(inv, i);
                assert_string_equal(g[i]->model, "NVIDIA A100 80GB PCIe");
                assert_string_equal(g[i]->pci_id, "10de:20b5");
                assert_string_equal(g[i]->compute_capability, "8.0");
                assert_int_equal(g[i]->memory_bytes, INT64_C(85899345920));
                assert_true(g[i]->mig_enabled.set);
                assert_int_equal(g[i]->mig_enabled.value, i == 3);
        }
        assert_string_equal(g[0]->pci_address, "0000:17:00.0");
        assert_string_equal(g[2]->pci_address, "0000:b1:00.0");
        assert_string_equal(g[3]->pci_address, "0000:ca:00.0");
        assert_float_equal(g[2]->metrics->utilization_percent, 87.0, 1e-9);
        assert_int_equal(g[2]->metrics->memory_used_bytes, INT64_C(42949672960));
        assert_float_equal(g[2]->metrics->power_watts, 250.5, 1e-9);

        assert_int_equal(inv->links.n, 2);
        assert_nvlink(inv, g[0]->id, g[1]->id, 12, 300.0);
        assert_nvlink(inv, g[3]->id, g[2]->id, 12, 300.0);
        assert_null(xp_device_link_find(inv, g[0]->id, g[2]->id));
        assert_null(xp_device_link_find(inv, g[1]->id, g[3]->id));
        compare_expected(inv, "a100-4x-pcie-pairs");
        xp_node_inventory_free(inv);
}

/* ---- health from Xid events ---------------------------------------------------------------- */

static void test_xid79_unhealthy(void **state)
{
        struct xp_node_inventory *inv = discover("xid79");
        const struct xp_device *g0, *g1;

        (void)state;
        assert_int_equal(inv->devices.n, 2);
        g0 = device_at(inv, 0);
        g1 = device_at(inv, 1);
        /* GPU 0 only saw Xid 31, an application's page fault */
        assert_int_equal(g0->health, XP_DEVICE_HEALTHY);
        assert_null(g0->health_reason);
        /* GPU 1: Xid 13 (application) is ignored, 79 is the first critical one */
        assert_int_equal(g1->health, XP_DEVICE_UNHEALTHY);
        assert_string_equal(g1->health_reason, "Xid 79: GPU has fallen off the bus");
        assert_int_equal(inv->links.n, 0);
        compare_expected(inv, "xid79");
        xp_node_inventory_free(inv);
}

/* ---- an older driver ------------------------------------------------------------------------ */

static void check_old_driver(struct xp_node_inventory *inv)
{
        assert_int_equal(inv->devices.n, 2);
        for (size_t i = 0; i < 2; i++) {
                const struct xp_device *dev = device_at(inv, i);

                assert_string_equal(dev->model, "Tesla V100-SXM2-32GB");
                assert_null(dev->compute_capability);
                assert_false(dev->mig_enabled.set);
                assert_int_equal(dev->health, XP_DEVICE_HEALTH_UNKNOWN);
                assert_int_equal(dev->memory_bytes, INT64_C(34359738368));
        }
        /* the GPU peer is found by its PCI address; the link to a CPU is left out */
        assert_int_equal(inv->links.n, 1);
        assert_nvlink(inv, device_at(inv, 0)->id, device_at(inv, 1)->id, 2, 50.0);
        compare_expected(inv, "old-driver");
}

/* The functions are there but answer NVML_ERROR_FUNCTION_NOT_FOUND. */
static void test_old_driver_function_not_found(void **state)
{
        struct xp_node_inventory *inv = discover("old-driver");

        (void)state;
        check_old_driver(inv);
        xp_node_inventory_free(inv);
}

/* The functions are not in the library at all: dlsym() fails for them. */
static void test_old_driver_missing_symbols(void **state)
{
        struct xp_node_inventory *inv = discover_with(old_library, "old-driver", NULL, nvml_only);

        (void)state;
        check_old_driver(inv);
        xp_node_inventory_free(inv);
}

/* ---- no NVML: backend unavailable, never an error ---------------------------------------- */

static void test_missing_library(void **state)
{
        struct xp_node_inventory *inv =
            discover_with("/nonexistent/libnvidia-ml.so.1", "h100-8x-nvswitch", NULL, nvml_only);

        (void)state;
        assert_int_equal(inv->devices.n, 0);
        assert_int_equal(inv->links.n, 0);
        xp_node_inventory_free(inv);
}

static void test_driver_not_loaded(void **state)
{
        struct xp_node_inventory *inv = discover("driver-not-loaded");

        (void)state;
        assert_int_equal(inv->devices.n, 0);
        xp_node_inventory_free(inv);

        /* the fake without a configuration is a node without the driver, too */
        inv = discover(NULL);
        assert_int_equal(inv->devices.n, 0);
        xp_node_inventory_free(inv);
}

/* Without config->nvml_library, $XPOOL_NVML_LIBRARY names the library. */
static void test_library_from_environment(void **state)
{
        struct xp_node_inventory *inv;

        (void)state;
        assert_int_equal(setenv("XPOOL_NVML_LIBRARY", XPOOL_FAKE_NVML, 1), 0);
        inv = discover_with(NULL, "xid79", NULL, nvml_only);
        unsetenv("XPOOL_NVML_LIBRARY");
        assert_int_equal(inv->devices.n, 2);
        xp_node_inventory_free(inv);
}

/* ---- nvml and pci together on the captured DGX tree -------------------------------------- */

static void test_dgx_nvml_and_pci(void **state)
{
        struct xp_node_inventory *inv;
        size_t gpus = 0;

        (void)state;
        inv = discover_with(XPOOL_FAKE_NVML, "h100-8x-nvswitch", DGX_ROOT, nvml_and_pci);
        for (size_t i = 0; i < inv->devices.n; i++) {
                const struct xp_device *dev = device_at(inv, i);
                size_t k;

                if (!dev->pci_id || strcmp(dev->pci_id, "10de:2330") != 0)
                        continue;
                gpus++;
                for (k = 0; k < 8 && strcmp(h100_pci[k], dev->pci_address) != 0; k++)
                        ;
                assert_true(k < 8);
                assert_int_equal(strncmp(dev->id, "GPU-", 4), 0);
                assert_int_equal(dev->kind, XP_DEVICE_GPU);
                assert_true(dev->numa_node.set);
                assert_int_equal(dev->numa_node.value, k < 4 ? 0 : 1);
                assert_string_equal(dev->local_cpus, k < 4 ? "0-47,96-143" : "48-95,144-191");
        }
        assert_int_equal(gpus, 8);
        for (size_t i = 0; i < inv->devices.n; i++)
                for (size_t j = i + 1; j < inv->devices.n; j++) {
                        const struct xp_device *a = device_at(inv, i), *b = device_at(inv, j);

                        if (xp_streq0(a->pci_id, "10de:2330") && xp_streq0(b->pci_id, "10de:2330"))
                                assert_nvlink(inv, a->id, b->id, 18, 450.0);
                }
        compare_topology(inv, "dgx-8gpu");
        xp_node_inventory_free(inv);
}

/* NVML that cannot tell where its GPUs sit: pci still matches them, through the driver's UUID,
 * so each GPU is listed once, never once per backend. */
static void test_nvml_without_pci_info(void **state)
{
        struct xp_node_inventory *inv;

        (void)state;
        inv = discover_with(XPOOL_FAKE_NVML, "h100-no-pci-info", DGX_ROOT, nvml_and_pci);
        assert_int_equal(inv->devices.n, 8);
        for (size_t i = 0; i < inv->devices.n; i++) {
                const struct xp_device *dev = device_at(inv, i);

                assert_int_equal(strncmp(dev->id, "GPU-5f2a8c31-9d47-4e1b-b6a0-3c7e1d9f200", 39),
                                 0);
                assert_non_null(dev->pci_address); /* filled in by pci */
                assert_string_equal(dev->pci_address, h100_pci[dev->id[39] - '0']);
                assert_int_equal(dev->memory_bytes, 85520809984LL); /* from NVML */
        }
        xp_node_inventory_free(inv);
}

/* A GPU the driver lists in sysfs but NVML does not report is there, and Unhealthy. */
static void test_gpu_nvml_cannot_see(void **state)
{
        struct xp_node_inventory *inv;
        size_t unhealthy = 0;

        (void)state;
        inv = discover_with(XPOOL_FAKE_NVML, "h100-7-of-8", DGX_ROOT, nvml_and_pci);
        assert_int_equal(inv->devices.n, 8);
        for (size_t i = 0; i < inv->devices.n; i++) {
                const struct xp_device *dev = device_at(inv, i);

                if (dev->health != XP_DEVICE_UNHEALTHY)
                        continue;
                unhealthy++;
                assert_string_equal(dev->pci_address, "0000:03:00.0");
                assert_string_equal(dev->id, "GPU-5f2a8c31-9d47-4e1b-b6a0-3c7e1d9f2000");
                assert_non_null(strstr(dev->health_reason, "NVML does not report this GPU"));
        }
        assert_int_equal(unhealthy, 1);
        xp_node_inventory_free(inv);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_h100_devices),
            cmocka_unit_test(test_h100_nvswitch_links),
            cmocka_unit_test(test_a100_pairs),
            cmocka_unit_test(test_xid79_unhealthy),
            cmocka_unit_test(test_old_driver_function_not_found),
            cmocka_unit_test(test_old_driver_missing_symbols),
            cmocka_unit_test(test_missing_library),
            cmocka_unit_test(test_driver_not_loaded),
            cmocka_unit_test(test_library_from_environment),
            cmocka_unit_test(test_dgx_nvml_and_pci),
            cmocka_unit_test(test_nvml_without_pci_info),
            cmocka_unit_test(test_gpu_nvml_cannot_see),
        };

        return cmocka_run_group_tests(tests, setup_group, NULL);
}
