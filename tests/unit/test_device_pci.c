/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The pci discovery backend and the topology matrix through xp_device_discover(): the captured
 * trees in tests/data/sysfs checked against tests/data/expected/<tree>-pci.{json,topo}, and small
 * trees built in a temporary directory for what the captured ones do not show.
 *
 * XPOOL_UPDATE_EXPECTED=1 writes the expected files from what discovery finds instead of checking
 * them: review every line of the diff by hand, they are the specification.
 */
#include <errno.h>
#include <ftw.h>
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "device/pci_ids.h"
#include "xpool/codec.h"
#include "xpool/device.h"
#include "xpool/error.h"
#include "xpool/macro.h"
#include "xpool/resource.h"

static const char *const cpu_and_pci[] = {"cpu", "pci", NULL};
static const char *const pci_only[] = {"pci", NULL};

static int discover(const char *root,
                    const char *const *backends,
                    struct xp_node_inventory **ret,
                    struct xp_error *err)
{
        struct xp_discovery_config config = {.root = root, .backends = backends};

        return xp_device_discover(&config, ret, err);
}

static char *read_text(const char *path)
{
        FILE *f = fopen(path, "re");
        char *text = NULL;
        size_t size = 0;
        FILE *out;
        int c;

        if (!f)
                return NULL;
        out = open_memstream(&text, &size);
        assert_non_null(out);
        while ((c = fgetc(f)) != EOF)
                fputc(c, out);
        fclose(f);
        fclose(out);
        return text;
}

static void write_text(const char *path, const char *text)
{
        FILE *f = fopen(path, "we");

        assert_non_null(f);
        fputs(text, f);
        assert_int_equal(fclose(f), 0);
}

static bool updating(void)
{
        const char *v = getenv("XPOOL_UPDATE_EXPECTED");

        return v && strcmp(v, "1") == 0;
}

/* Discovers a captured tree with the cpu and pci backends; checks the inventory and the matrix. */
static void check_tree(const char *tree)
{
        _cleanup_(xp_node_inventory_freep) struct xp_node_inventory *inv = NULL;
        _cleanup_free_ char *topo = NULL, *want_topo = NULL, *got_text = NULL;
        char root[4096], json_path[4096], topo_path[4096];
        struct xp_error err = {0};
        json_t *got = NULL, *want;
        json_error_t jerr;

        snprintf(root, sizeof(root), "%s/sysfs/%s", XPOOL_TEST_DATA, tree);
        snprintf(json_path, sizeof(json_path), "%s/expected/%s-pci.json", XPOOL_TEST_DATA, tree);
        snprintf(topo_path, sizeof(topo_path), "%s/expected/%s-pci.topo", XPOOL_TEST_DATA, tree);
        if (discover(root, cpu_and_pci, &inv, &err) < 0)
                fail_msg("discovering %s: %s", tree, err.msg);
        assert_int_equal(xp_node_inventory_to_json(inv, &got), 0);
        assert_int_equal(xp_device_topology_format(inv, &topo), 0);
        got_text = json_dumps(got, JSON_INDENT(2));
        assert_non_null(got_text);

        if (updating()) {
                FILE *f = fopen(json_path, "we");

                assert_non_null(f);
                fprintf(f, "%s\n", got_text);
                assert_int_equal(fclose(f), 0);
                write_text(topo_path, topo);
                json_decref(got);
                return;
        }

        want = json_load_file(json_path, 0, &jerr);
        if (!want)
                fail_msg("%s:%d: %s", json_path, jerr.line, jerr.text);
        if (!json_equal(got, want)) {
                char *want_text = json_dumps(want, JSON_INDENT(2));

                print_error("%s: expected\n%s\ngot\n%s\n", tree, want_text, got_text);
                free(want_text);
                json_decref(want);
                json_decref(got);
                fail_msg("%s: the inventory differs from %s", tree, json_path);
        }
        json_decref(want);
        json_decref(got);

        want_topo = read_text(topo_path);
        assert_non_null(want_topo);
        if (strcmp(topo, want_topo) != 0) {
                print_error("%s: expected\n%s\ngot\n%s\n", tree, want_topo, topo);
                fail_msg("%s: the matrix differs from %s", tree, topo_path);
        }
}

static void dgx_8gpu(void **state)
{
        (void)state;
        check_tree("dgx-8gpu");
}

static void ascend_8npu(void **state)
{
        (void)state;
        check_tree("ascend-8npu");
}

static void mixed_box(void **state)
{
        (void)state;
        check_tree("mixed-box");
}

static void ci_machine(void **state)
{
        (void)state;
        check_tree("ci-machine");
}

/* Spot checks the expected files must agree with, so a careless regeneration shows. */
static const char *id_at(const struct xp_node_inventory *inv, const char *pci_address)
{
        for (size_t i = 0; i < inv->devices.n; i++)
                if (inv->devices.items[i].pci_address &&
                    strcmp(inv->devices.items[i].pci_address, pci_address) == 0)
                        return inv->devices.items[i].id;
        fail_msg("no device at %s", pci_address);
        return NULL;
}

static void dgx_levels(void **state)
{
        _cleanup_(xp_node_inventory_freep) struct xp_node_inventory *inv = NULL;
        char root[4096];
        struct xp_error err = {0};
        static const struct {
                const char *a, *b;
                enum xp_link_level level;
        } want[] = {
            {"0000:03:00.0", "0000:04:00.0", XP_LINK_PIX},
            {"0000:03:00.0", "0000:23:00.0", XP_LINK_NODE},
            {"0000:03:00.0", "0000:83:00.0", XP_LINK_SYS},
            {"0000:83:00.0", "0000:84:00.0", XP_LINK_PIX},
            {"0000:84:00.0", "0000:a3:00.0", XP_LINK_NODE},
            {"0000:24:00.0", "0000:a4:00.0", XP_LINK_SYS},
        };

        (void)state;
        snprintf(root, sizeof(root), "%s/sysfs/dgx-8gpu", XPOOL_TEST_DATA);
        if (discover(root, pci_only, &inv, &err) < 0)
                fail_msg("%s", err.msg);
        assert_int_equal(inv->devices.n, 8);
        assert_int_equal(inv->links.n, 28);
        for (size_t i = 0; i < inv->devices.n; i++) {
                const struct xp_device *d = &inv->devices.items[i];

                assert_int_equal(d->kind, XP_DEVICE_GPU);
                assert_string_equal(d->resource_name, "nvidia.com/gpu");
                assert_int_equal(d->index, (int64_t)i);
                assert_string_equal(d->pci_link, "32GT/s x16");
        }
        for (size_t i = 0; i < XP_ELEMENTSOF(want); i++) {
                /* the ids are the driver's GPU UUIDs; the table names the GPUs by address */
                const struct xp_device_link *l =
                    xp_device_link_find(inv, id_at(inv, want[i].a), id_at(inv, want[i].b));

                assert_non_null(l);
                assert_int_equal(l->level, want[i].level);
                assert_true(l->bandwidth_gbps == 63.02);
        }
}

static void table_sorted_and_valid(void **state)
{
        size_t n;
        const struct xp_pci_id *t = xp_pci_id_table(&n);

        (void)state;
        assert_true(n > 50);
        for (size_t i = 0; i < n; i++) {
                struct xp_error err = {0};

                if (i > 0)
                        assert_true(
                            t[i - 1].vendor < t[i].vendor ||
                            (t[i - 1].vendor == t[i].vendor && t[i - 1].device < t[i].device));
                if (xp_resource_name_check(t[i].resource_name, &err) < 0)
                        fail_msg("%04x:%04x: %s", t[i].vendor, t[i].device, err.msg);
                assert_ptr_equal(xp_pci_id_lookup(t[i].vendor, t[i].device), &t[i]);
        }
        assert_null(xp_pci_id_lookup(0x10de, 0x22a3)); /* NVSwitch */
        assert_null(xp_pci_id_lookup(0x1a03, 0x2000)); /* ASPEED VGA */
        assert_non_null(xp_pci_id_lookup(0x19e5, 0xd802));
}

/* ---- small trees in a temporary directory --------------------------------------------------- */

static char tmp_root[] = "/tmp/xpool-pci-XXXXXX";

static void put(const char *rel, const char *text)
{
        char path[4096];

        snprintf(path, sizeof(path), "%s/%s", tmp_root, rel);
        for (char *p = path + strlen(tmp_root) + 1; (p = strchr(p, '/')); p++) {
                *p = '\0';
                if (mkdir(path, 0755) < 0 && errno != EEXIST)
                        fail_msg("mkdir %s: %s", path, strerror(errno));
                *p = '/';
        }
        write_text(path, text);
}

/* A function directly below host bridge pci0000:00 and its sys/bus/pci/devices link. */
static void function(const char *address, const char *vendor, const char *device, const char *cls)
{
        char rel[512], target[512], link[4096];

        snprintf(rel, sizeof(rel), "sys/devices/pci0000:00/%s/vendor", address);
        put(rel, vendor);
        snprintf(rel, sizeof(rel), "sys/devices/pci0000:00/%s/device", address);
        put(rel, device);
        snprintf(rel, sizeof(rel), "sys/devices/pci0000:00/%s/class", address);
        put(rel, cls);
        snprintf(rel, sizeof(rel), "sys/bus/pci/devices/%s", address);
        put("sys/bus/pci/devices/.keep", "");
        snprintf(target, sizeof(target), "../../../devices/pci0000:00/%s", address);
        snprintf(link, sizeof(link), "%s/%s", tmp_root, rel);
        assert_int_equal(symlink(target, link), 0);
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
        (void)st;
        (void)flag;
        (void)ftw;
        return remove(path);
}

static int setup_tmp(void **state)
{
        (void)state;
        strcpy(tmp_root, "/tmp/xpool-pci-XXXXXX");
        return mkdtemp(tmp_root) ? 0 : -1;
}

static int teardown_tmp(void **state)
{
        (void)state;
        return nftw(tmp_root, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static void class_alone_is_no_accelerator(void **state)
{
        _cleanup_(xp_node_inventory_freep) struct xp_node_inventory *inv = NULL;
        struct xp_error err = {0};

        (void)state;
        /* a VGA controller, a 3D controller and a processing accelerator nobody lists */
        function("0000:00:01.0", "0x1a03", "0x2000", "0x030000");
        function("0000:00:02.0", "0x10de", "0x22a3", "0x068000");
        function("0000:00:03.0", "0x1234", "0x5678", "0x120000");
        function("0000:00:04.0", "0x10de", "0xffff", "0x030200");
        /* and one that is known: found, with no locality files at all */
        function("0000:00:05.0", "0x1da3", "0x1020", "0x120000");
        if (discover(tmp_root, pci_only, &inv, &err) < 0)
                fail_msg("%s", err.msg);
        assert_int_equal(inv->devices.n, 1);
        assert_string_equal(inv->devices.items[0].id, "0000:00:05.0");
        assert_string_equal(inv->devices.items[0].resource_name, "habana.ai/gaudi");
        assert_string_equal(inv->devices.items[0].pci_id, "1da3:1020");
        assert_false(inv->devices.items[0].numa_node.set);
        assert_null(inv->devices.items[0].pci_link);
        assert_null(inv->devices.items[0].local_cpus);
        assert_int_equal(inv->devices.items[0].device_nodes.n, 2);
        assert_string_equal(inv->devices.items[0].device_nodes.items[0], "/dev/accel/accel0");
        assert_int_equal(inv->links.n, 0);
}

/* A function below host bridge `bridge` with its vendor/device ids and NUMA node. */
static void function_on(const char *bridge,
                        const char *address,
                        const char *vendor,
                        const char *device,
                        const char *numa)
{
        char rel[512], target[512], link[4096];

        snprintf(rel, sizeof(rel), "sys/devices/%s/%s/vendor", bridge, address);
        put(rel, vendor);
        snprintf(rel, sizeof(rel), "sys/devices/%s/%s/device", bridge, address);
        put(rel, device);
        snprintf(rel, sizeof(rel), "sys/devices/%s/%s/numa_node", bridge, address);
        put(rel, numa);
        put("sys/bus/pci/devices/.keep", "");
        snprintf(target, sizeof(target), "../../../devices/%s/%s", bridge, address);
        snprintf(link, sizeof(link), "%s/sys/bus/pci/devices/%s", tmp_root, address);
        assert_int_equal(symlink(target, link), 0);
}

/* One NUMA node: two devices on different host bridges cannot be across sockets, whatever
 * numa_node says (-1 is common on single-socket machines). */
static void single_numa_node_is_never_sys(void **state)
{
        static const char *const cpu_and_pci_only[] = {"cpu", "pci", NULL};
        _cleanup_(xp_node_inventory_freep) struct xp_node_inventory *inv = NULL;
        struct xp_error err = {0};
        const struct xp_device_link *l;

        (void)state;
        put("sys/devices/system/cpu/online", "0-1");
        put("sys/devices/system/cpu/cpu0/topology/physical_package_id", "0");
        put("sys/devices/system/cpu/cpu0/topology/core_id", "0");
        put("sys/devices/system/cpu/cpu1/topology/physical_package_id", "0");
        put("sys/devices/system/cpu/cpu1/topology/core_id", "1");
        put("sys/devices/system/node/online", "0");
        put("sys/devices/system/node/node0/cpulist", "0-1");
        put("sys/devices/system/node/node0/meminfo", "Node 0 MemTotal:       1048576 kB");
        put("proc/meminfo", "MemTotal:        1048576 kB");
        function_on("pci0000:00", "0000:00:01.0", "0x1da3", "0x1020", "-1");
        function_on("pci0000:40", "0000:40:01.0", "0x1da3", "0x1020", "0");
        if (discover(tmp_root, cpu_and_pci_only, &inv, &err) < 0)
                fail_msg("%s", err.msg);
        assert_int_equal(inv->devices.n, 2);
        l = xp_device_link_find(inv, "0000:00:01.0", "0000:40:01.0");
        assert_non_null(l);
        assert_int_equal(l->level, XP_LINK_NODE);
}

/* A function whose files vanish (hot unplug) is skipped; a FIFO in the tree is refused, not read.
 */
static void odd_files_do_not_stop_discovery(void **state)
{
        _cleanup_(xp_node_inventory_freep) struct xp_node_inventory *inv = NULL;
        struct xp_error err = {0};
        char path[4096];
        int r;

        (void)state;
        function("0000:00:01.0", "0x8086", "0x1234", "0x060400");
        function("0000:00:05.0", "0x1da3", "0x1020", "0x120000");
        snprintf(path, sizeof(path), "%s/sys/devices/pci0000:00/0000:00:01.0/vendor", tmp_root);
        assert_int_equal(unlink(path), 0);
        if (discover(tmp_root, pci_only, &inv, &err) < 0)
                fail_msg("%s", err.msg);
        assert_int_equal(inv->devices.n, 1);
        xp_node_inventory_free(TAKE_PTR(inv));

        snprintf(path, sizeof(path), "%s/sys/devices/pci0000:00/0000:00:05.0/numa_node", tmp_root);
        assert_int_equal(mkfifo(path, 0600), 0);
        /* returns at once although nobody writes the FIFO: an unreadable optional file is absent */
        r = discover(tmp_root, pci_only, &inv, &err);
        assert_int_equal(r, 0);
        assert_int_equal(inv->devices.n, 1);
        assert_false(inv->devices.items[0].numa_node.set);
}

static void malformed_vendor(void **state)
{
        _cleanup_(xp_node_inventory_freep) struct xp_node_inventory *inv = NULL;
        struct xp_error err = {0};

        (void)state;
        function("0000:00:01.0", "0x10de", "0x2330", "0x030200");
        function("0000:00:02.0", "nvidia", "0x2330", "0x030200");
        assert_int_equal(discover(tmp_root, pci_only, &inv, &err), -EINVAL);
        assert_null(inv);
        assert_non_null(strstr(err.msg, "sys/bus/pci/devices/0000:00:02.0/vendor"));
}

static void malformed_numa_node(void **state)
{
        _cleanup_(xp_node_inventory_freep) struct xp_node_inventory *inv = NULL;
        struct xp_error err = {0};

        (void)state;
        function("0000:00:01.0", "0x10de", "0x2330", "0x030200");
        put("sys/devices/pci0000:00/0000:00:01.0/numa_node", "zero");
        assert_int_equal(discover(tmp_root, pci_only, &inv, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "sys/bus/pci/devices/0000:00:01.0/numa_node"));
}

/* The NVIDIA driver's minor numbers name the devices, whatever the PCI order. */
static void nvidia_minor_from_driver(void **state)
{
        _cleanup_(xp_node_inventory_freep) struct xp_node_inventory *inv = NULL;
        struct xp_error err = {0};

        (void)state;
        function("0000:00:01.0", "0x10de", "0x2331", "0x030200");
        function("0000:00:02.0", "0x10de", "0x2331", "0x030200");
        put("proc/driver/nvidia/gpus/0000:00:01.0/information",
            "Model: \t\t NVIDIA H100 PCIe\nDevice Minor: \t 1\nGPU Excluded:\t No");
        put("proc/driver/nvidia/gpus/0000:00:02.0/information",
            "Model: \t\t NVIDIA H100 PCIe\nDevice Minor: \t 0\nGPU Excluded:\t No");
        if (discover(tmp_root, pci_only, &inv, &err) < 0)
                fail_msg("%s", err.msg);
        assert_int_equal(inv->devices.n, 2);
        /* sorted by index */
        assert_string_equal(inv->devices.items[0].id, "0000:00:02.0");
        assert_int_equal(inv->devices.items[0].index, 0);
        assert_string_equal(inv->devices.items[0].device_nodes.items[0], "/dev/nvidia0");
        assert_string_equal(inv->devices.items[1].id, "0000:00:01.0");
        assert_string_equal(inv->devices.items[1].device_nodes.items[0], "/dev/nvidia1");
        /* both on the root bus of one host bridge */
        assert_int_equal(xp_device_link_find(inv, "0000:00:01.0", "0000:00:02.0")->level,
                         XP_LINK_PHB);
}

/* The matrix of an inventory built in code: NVLink counts, a missing link, no affinity. */
static void matrix_nvlink(void **state)
{
        struct xp_device devices[3] = {
            {.id = (char *)"GPU-a",
             .kind = XP_DEVICE_GPU,
             .local_cpus = (char *)"0-7",
             .numa_node = {.set = true, .value = 0}},
            {.id = (char *)"GPU-b",
             .kind = XP_DEVICE_GPU,
             .local_cpus = (char *)"0-7",
             .numa_node = {.set = true, .value = 0}},
            {.id = (char *)"fpga", .kind = XP_DEVICE_FPGA},
        };
        struct xp_device_link links[1] = {
            {.a = (char *)"GPU-b", .b = (char *)"GPU-a", .level = XP_LINK_NVLINK, .nvlinks = 12},
        };
        struct xp_node_inventory inv = {0};
        _cleanup_free_ char *text = NULL;

        (void)state;
        inv.devices.items = devices;
        inv.devices.n = 3;
        inv.links.items = links;
        inv.links.n = 1;
        assert_int_equal(xp_device_topology_format(&inv, &text), 0);
        assert_non_null(strstr(text,
                               "\tGPU0\tGPU1\tFPGA0\tCPU Affinity\tNUMA Affinity\n"
                               "GPU0\t X \tNV12\tN/A\t0-7\t0\n"
                               "GPU1\tNV12\t X \tN/A\t0-7\t0\n"
                               "FPGA0\tN/A\tN/A\t X \tN/A\tN/A\n"
                               "\nLegend:\n"));
        assert_non_null(strstr(
            text,
            "NV#  = Connection traversing a bonded set of # direct device links (NVLink, Infinity Fabric, HCCS)\n"));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(dgx_8gpu),
            cmocka_unit_test(ascend_8npu),
            cmocka_unit_test(mixed_box),
            cmocka_unit_test(ci_machine),
            cmocka_unit_test(dgx_levels),
            cmocka_unit_test(table_sorted_and_valid),
            cmocka_unit_test_setup_teardown(class_alone_is_no_accelerator, setup_tmp, teardown_tmp),
            cmocka_unit_test_setup_teardown(single_numa_node_is_never_sys, setup_tmp, teardown_tmp),
            cmocka_unit_test_setup_teardown(
                odd_files_do_not_stop_discovery, setup_tmp, teardown_tmp),
            cmocka_unit_test_setup_teardown(malformed_vendor, setup_tmp, teardown_tmp),
            cmocka_unit_test_setup_teardown(malformed_numa_node, setup_tmp, teardown_tmp),
            cmocka_unit_test_setup_teardown(nvidia_minor_from_driver, setup_tmp, teardown_tmp),
            cmocka_unit_test(matrix_nvlink),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
