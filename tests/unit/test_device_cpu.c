/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The cpu discovery backend through xp_device_discover(): the captured trees in tests/data/sysfs,
 * the live machine, and small broken trees built in a temporary directory.
 */
#include <errno.h>
#include <ftw.h>
#include <inttypes.h>
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

#include "xpool/device.h"
#include "xpool/error.h"
#include "xpool/macro.h"

#define GiB (INT64_C(1) << 30)
#define KiB INT64_C(1024)

static const char *const cpu_only[] = {"cpu", NULL};

static int discover(const char *root, struct xp_node_inventory **ret, struct xp_error *err)
{
        struct xp_discovery_config config = {.root = root, .backends = cpu_only};

        return xp_device_discover(&config, ret, err);
}

static struct xp_node_inventory *discover_tree(const char *tree)
{
        char root[4096];
        struct xp_node_inventory *inv = NULL;
        struct xp_error err = {0};
        int r;

        snprintf(root, sizeof(root), "%s/sysfs/%s", XPOOL_TEST_DATA, tree);
        r = discover(root, &inv, &err);
        if (r < 0)
                fail_msg("discovering %s: %s", tree, xp_error_message(&err));
        assert_non_null(inv);
        return inv;
}

static void
assert_cpu(const struct xp_node_inventory *inv, int64_t sockets, int64_t cores, int64_t threads)
{
        assert_non_null(inv->cpu);
        assert_int_equal(inv->cpu->sockets, sockets);
        assert_int_equal(inv->cpu->cores, cores);
        assert_int_equal(inv->cpu->threads, threads);
}

static void assert_node(
    const struct xp_node_inventory *inv, size_t i, int64_t id, const char *cpus, int64_t mem)
{
        assert_true(i < inv->numa_nodes.n);
        assert_int_equal(inv->numa_nodes.items[i].id, id);
        assert_string_equal(inv->numa_nodes.items[i].cpus, cpus);
        assert_int_equal(inv->numa_nodes.items[i].memory_bytes, mem);
}

/* ---- captured trees --------------------------------------------------------------------- */

static void dgx_8gpu(void **state)
{
        struct xp_node_inventory *inv = discover_tree("dgx-8gpu");

        (void)state;
        assert_cpu(inv, 2, 96, 192);
        assert_int_equal(inv->numa_nodes.n, 2);
        assert_node(inv, 0, 0, "0-47,96-143", 512 * GiB);
        assert_node(inv, 1, 1, "48-95,144-191", 512 * GiB);
        assert_int_equal(inv->memory_bytes, 1024 * GiB);
        assert_int_equal(inv->devices.n, 0); /* the cpu backend adds no devices */
        xp_node_inventory_free(inv);
}

static void ascend_8npu(void **state)
{
        struct xp_node_inventory *inv = discover_tree("ascend-8npu");

        (void)state;
        assert_cpu(inv, 2, 192, 192);
        assert_int_equal(inv->numa_nodes.n, 4);
        assert_node(inv, 0, 0, "0-47", 256 * GiB);
        assert_node(inv, 1, 1, "48-95", 256 * GiB);
        assert_node(inv, 2, 2, "96-143", 256 * GiB);
        assert_node(inv, 3, 3, "144-191", 256 * GiB);
        assert_int_equal(inv->memory_bytes, 1024 * GiB);
        xp_node_inventory_free(inv);
}

static void mixed_box(void **state)
{
        struct xp_node_inventory *inv = discover_tree("mixed-box");

        (void)state;
        assert_cpu(inv, 1, 16, 32);
        assert_int_equal(inv->numa_nodes.n, 1);
        assert_node(inv, 0, 0, "0-31", 128 * GiB);
        assert_int_equal(inv->memory_bytes, 128 * GiB);
        xp_node_inventory_free(inv);
}

/*
 * This CI machine as captured: 2 CPUs, each its own core in one package, one NUMA node. Its
 * node0/meminfo says less memory than /proc/meminfo (a VM with memory added outside the node's
 * count); each is reported as its file says.
 */
static void ci_machine(void **state)
{
        struct xp_node_inventory *inv = discover_tree("ci-machine");

        (void)state;
        assert_cpu(inv, 1, 2, 2);
        assert_int_equal(inv->numa_nodes.n, 1);
        assert_node(inv, 0, 0, "0-1", 7563000 * KiB);
        assert_int_equal(inv->memory_bytes, 24683548 * KiB);
        assert_int_equal(inv->devices.n, 0);
        xp_node_inventory_free(inv);
}

/* ---- the live machine ------------------------------------------------------------------- */

static int64_t live_memtotal(void)
{
        FILE *f = fopen("/proc/meminfo", "re");
        char line[256];
        long long kb = -1;

        if (!f)
                return -1;
        while (fgets(line, sizeof(line), f))
                if (sscanf(line, "MemTotal: %lld kB", &kb) == 1)
                        break;
        fclose(f);
        return kb < 0 ? -1 : kb * 1024;
}

static void live_machine(void **state)
{
        struct xp_node_inventory *inv = NULL;
        struct xp_error err = {0};
        int64_t cpus_in_nodes = 0;

        (void)state;
        if (access("/sys/devices/system/cpu", F_OK) != 0)
                skip();
        if (discover(NULL, &inv, &err) < 0)
                fail_msg("discovering the live machine: %s", xp_error_message(&err));
        assert_non_null(inv->cpu);
        assert_int_equal(inv->cpu->threads, sysconf(_SC_NPROCESSORS_ONLN));
        assert_true(inv->cpu->sockets >= 1);
        assert_true(inv->cpu->cores >= inv->cpu->sockets);
        assert_true(inv->cpu->cores <= inv->cpu->threads);
        assert_int_equal(inv->memory_bytes, live_memtotal());
        assert_true(inv->numa_nodes.n >= 1);
        for (size_t i = 0; i < inv->numa_nodes.n; i++) {
                assert_non_null(inv->numa_nodes.items[i].cpus);
                assert_true(inv->numa_nodes.items[i].memory_bytes >= 0);
                if (inv->numa_nodes.items[i].cpus[0])
                        cpus_in_nodes++;
        }
        assert_true(cpus_in_nodes >= 1);
        xp_node_inventory_free(inv);

        /* "/" is the same as NULL */
        assert_int_equal(discover("/", &inv, &err), 0);
        assert_int_equal(inv->cpu->threads, sysconf(_SC_NPROCESSORS_ONLN));
        xp_node_inventory_free(inv);
}

/* ---- small trees in a temporary directory ------------------------------------------------ */

struct tree {
        char root[256];
};

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
        (void)st;
        (void)flag;
        (void)ftw;
        return remove(path);
}

static int tree_setup(void **state)
{
        struct tree *t = calloc(1, sizeof(*t));
        const char *tmp = getenv("TMPDIR");

        if (!t)
                return -1;
        snprintf(t->root, sizeof(t->root), "%s/xpool-cpu-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(t->root)) {
                free(t);
                return -1;
        }
        *state = t;
        return 0;
}

static int tree_teardown(void **state)
{
        struct tree *t = *state;

        nftw(t->root, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
        free(t);
        return 0;
}

/* Writes content to root/path, creating the directories on the way. */
static void put(struct tree *t, const char *path, const char *content)
{
        char full[1024];
        FILE *f;

        snprintf(full, sizeof(full), "%s/%s", t->root, path);
        for (char *slash = strchr(full + strlen(t->root) + 1, '/'); slash;
             slash = strchr(slash + 1, '/')) {
                *slash = '\0';
                if (mkdir(full, 0755) < 0 && errno != EEXIST)
                        fail_msg("mkdir %s: %s", full, strerror(errno));
                *slash = '/';
        }
        f = fopen(full, "we");
        if (!f)
                fail_msg("creating %s: %s", full, strerror(errno));
        fputs(content, f);
        fclose(f);
}

static void unput(struct tree *t, const char *path)
{
        char full[1024];

        snprintf(full, sizeof(full), "%s/%s", t->root, path);
        assert_int_equal(unlink(full), 0);
}

static void put_cpu(struct tree *t, unsigned cpu, const char *package, const char *core)
{
        char path[256];

        snprintf(
            path, sizeof(path), "sys/devices/system/cpu/cpu%u/topology/physical_package_id", cpu);
        put(t, path, package);
        snprintf(path, sizeof(path), "sys/devices/system/cpu/cpu%u/topology/core_id", cpu);
        put(t, path, core);
}

/*
 * A good small machine: 4 CPUs, 2 cores with 2 threads each (siblings 0/2, 1/3), one package,
 * NUMA node 0 = CPUs 0-1 with 1 GiB, node 1 = CPUs 2-3 with 2 GiB, 4 GiB in proc/meminfo.
 */
static void put_small(struct tree *t)
{
        put(t, "sys/devices/system/cpu/online", "0-3\n");
        put_cpu(t, 0, "0\n", "0\n");
        put_cpu(t, 1, "0\n", "1\n");
        put_cpu(t, 2, "0\n", "0\n");
        put_cpu(t, 3, "0\n", "1\n");
        put(t, "sys/devices/system/node/online", "0-1\n");
        put(t, "sys/devices/system/node/node0/cpulist", "0-1\n");
        put(t,
            "sys/devices/system/node/node0/meminfo",
            "Node 0 MemTotal:        1048576 kB\nNode 0 MemFree:          524288 kB\n");
        put(t, "sys/devices/system/node/node1/cpulist", "2-3\n");
        put(t,
            "sys/devices/system/node/node1/meminfo",
            "Node 1 MemFree:          524288 kB\nNode 1 MemTotal:        2097152 kB\n");
        put(t, "proc/meminfo", "MemTotal:        4194304 kB\nMemFree:         2097152 kB\n");
}

static struct xp_node_inventory *discover_ok(struct tree *t)
{
        struct xp_node_inventory *inv = NULL;
        struct xp_error err = {0};

        if (discover(t->root, &inv, &err) < 0)
                fail_msg("discovering %s: %s", t->root, xp_error_message(&err));
        return inv;
}

/* Discovery fails with code, an error message containing want, and no inventory. */
static void discover_fails(struct tree *t, int code, const char *want)
{
        struct xp_node_inventory *inv = (struct xp_node_inventory *)&inv; /* sentinel */
        struct xp_error err = {0};

        assert_int_equal(discover(t->root, &inv, &err), code);
        assert_ptr_equal(inv, (struct xp_node_inventory *)&inv); /* untouched */
        /* the file is named as the user knows it: below the root */
        if (strncmp(err.msg, t->root, strlen(t->root)) != 0)
                fail_msg("error \"%s\" does not start with the root %s", err.msg, t->root);
        if (!strstr(err.msg, want))
                fail_msg("error \"%s\" does not contain \"%s\"", err.msg, want);
}

static void small_tree(void **state)
{
        struct tree *t = *state;
        struct xp_node_inventory *inv;

        put_small(t);
        inv = discover_ok(t);
        assert_cpu(inv, 1, 2, 4);
        assert_int_equal(inv->numa_nodes.n, 2);
        assert_node(inv, 0, 0, "0-1", 1 * GiB);
        assert_node(inv, 1, 1, "2-3", 2 * GiB);
        assert_int_equal(inv->memory_bytes, 4 * GiB);
        xp_node_inventory_free(inv);
}

/* Without sys/devices/system/cpu the backend is unavailable: skipped, nothing reported. */
static void no_cpu_dir_skips(void **state)
{
        struct tree *t = *state;
        struct xp_node_inventory *inv;

        put(t, "proc/meminfo", "MemTotal:        4194304 kB\n");
        inv = discover_ok(t);
        assert_null(inv->cpu);
        assert_int_equal(inv->numa_nodes.n, 0);
        assert_int_equal(inv->memory_bytes, 0);
        xp_node_inventory_free(inv);
}

/* Without sys/devices/system/node: one node 0 with every online CPU and proc/meminfo's memory. */
static void no_node_dir(void **state)
{
        struct tree *t = *state;
        struct xp_node_inventory *inv;

        put(t, "sys/devices/system/cpu/online", "0-2,5\n");
        put_cpu(t, 0, "0", "0");
        put_cpu(t, 1, "0", "1");
        put_cpu(t, 2, "1", "0");
        put_cpu(t, 5, "1", "1");
        put(t, "proc/meminfo", "MemTotal:        4194304 kB\n");
        inv = discover_ok(t);
        assert_cpu(inv, 2, 4, 4);
        assert_int_equal(inv->numa_nodes.n, 1);
        assert_node(inv, 0, 0, "0-2,5", 4 * GiB);
        assert_int_equal(inv->memory_bytes, 4 * GiB);
        xp_node_inventory_free(inv);
}

/*
 * Without cpu/online every cpuN directory is a CPU, online unless its cpuN/online says 0 (cpu0
 * usually has no online file); other entries (cpufreq, cpuidle) are not CPUs.
 */
static void no_online_file_lists_cpus(void **state)
{
        struct tree *t = *state;
        struct xp_node_inventory *inv;

        put_small(t);
        unput(t, "sys/devices/system/cpu/online");
        put(t, "sys/devices/system/cpu/cpu1/online", "1\n");
        put(t, "sys/devices/system/cpu/cpu2/online", "1\n");
        put(t, "sys/devices/system/cpu/cpu3/online", "0\n");
        put(t, "sys/devices/system/cpu/cpufreq/policy0/scaling_driver", "acpi-cpufreq\n");
        put(t, "sys/devices/system/cpu/cpuidle/current_driver", "intel_idle\n");
        inv = discover_ok(t);
        assert_cpu(inv, 1, 2, 3);
        xp_node_inventory_free(inv);

        put(t, "sys/devices/system/cpu/cpu3/online", "maybe\n");
        discover_fails(
            t, -EINVAL, "sys/devices/system/cpu/cpu3/online: \"maybe\" is neither 0 nor 1");
}

/* Without topology files each CPU is its own core in package 0. */
static void no_topology_files(void **state)
{
        struct tree *t = *state;
        struct xp_node_inventory *inv;

        put(t, "sys/devices/system/cpu/online", "0-7\n");
        put(t, "proc/meminfo", "MemTotal: 1024 kB\n");
        inv = discover_ok(t);
        assert_cpu(inv, 1, 8, 8);
        assert_node(inv, 0, 0, "0-7", 1024 * KiB);
        xp_node_inventory_free(inv);
}

/* core_id repeats across packages (and dies): cores are distinct (package, die, core). */
static void cores_are_per_package_and_die(void **state)
{
        struct tree *t = *state;
        struct xp_node_inventory *inv;

        put_small(t);
        put_cpu(t, 2, "1", "0");
        put_cpu(t, 3, "1", "1");
        inv = discover_ok(t);
        assert_cpu(inv, 2, 4, 4);
        xp_node_inventory_free(inv);

        put_cpu(t, 2, "0", "0");
        put_cpu(t, 3, "0", "1");
        put(t, "sys/devices/system/cpu/cpu2/topology/die_id", "1");
        put(t, "sys/devices/system/cpu/cpu3/topology/die_id", "1");
        inv = discover_ok(t);
        assert_cpu(inv, 1, 4, 4);
        xp_node_inventory_free(inv);
}

/* Without proc/meminfo the total is the sum of the NUMA nodes; without either, an error. */
static void no_proc_meminfo(void **state)
{
        struct tree *t = *state;
        struct xp_node_inventory *inv;

        put_small(t);
        unput(t, "proc/meminfo");
        inv = discover_ok(t);
        assert_int_equal(inv->memory_bytes, 3 * GiB);
        xp_node_inventory_free(inv);

        put(t, "sys/devices/system/node/node0/meminfo", "");
        discover_fails(t, -EINVAL, "node0/meminfo: no \"Node 0 MemTotal:\" line");

        {
                struct tree *t2 = NULL;

                assert_int_equal(tree_setup((void **)&t2), 0);
                put(t2, "sys/devices/system/cpu/online", "0\n");
                discover_fails(
                    t2, -ENOENT, "/proc/meminfo: cannot read: No such file or directory");
                tree_teardown((void **)&t2);
        }
}

static void bad_cpulists(void **state)
{
        struct tree *t = *state;

        put_small(t);
        put(t, "sys/devices/system/node/node1/cpulist", "0-x\n");
        discover_fails(
            t, -EINVAL, "sys/devices/system/node/node1/cpulist: \"0-x\" is not a CPU list");

        put_small(t);
        put(t, "sys/devices/system/cpu/online", "3-1\n");
        discover_fails(t, -EINVAL, "sys/devices/system/cpu/online: \"3-1\" is not a CPU list");

        /* more CPUs than XP_CPU_MAX (8192) */
        put(t, "sys/devices/system/cpu/online", "0-8192\n");
        discover_fails(t, -EINVAL, "sys/devices/system/cpu/online: \"0-8192\" is not a CPU list");

        /* binary junk is quoted, not printed raw */
        put(t, "sys/devices/system/cpu/online", "\x01\xff");
        discover_fails(
            t, -EINVAL, "sys/devices/system/cpu/online: \"\\x01\\xff\" is not a CPU list");

        put(t, "sys/devices/system/cpu/online", "\n");
        discover_fails(t, -EINVAL, "sys/devices/system/cpu/online: no online CPUs");

        put_small(t);
        put(t, "sys/devices/system/node/online", "zero\n");
        discover_fails(t, -EINVAL, "sys/devices/system/node/online: \"zero\" is not a node list");

        put(t, "sys/devices/system/node/online", "");
        discover_fails(t, -EINVAL, "sys/devices/system/node/online: no online NUMA nodes");

        /* a node listed online without its files */
        put(t, "sys/devices/system/node/online", "0-2\n");
        discover_fails(
            t,
            -ENOENT,
            "sys/devices/system/node/node2/cpulist: cannot read: No such file or directory");
}

static void bad_topology(void **state)
{
        struct tree *t = *state;

        put_small(t);
        put(t, "sys/devices/system/cpu/cpu2/topology/core_id", "two\n");
        discover_fails(
            t,
            -EINVAL,
            "sys/devices/system/cpu/cpu2/topology/core_id: \"two\" is not a topology id");

        put_small(t);
        put(t, "sys/devices/system/cpu/cpu1/topology/physical_package_id", "");
        discover_fails(t,
                       -EINVAL,
                       "sys/devices/system/cpu/cpu1/topology/physical_package_id: \"\" is not a "
                       "topology id");

        put(t, "sys/devices/system/cpu/cpu1/topology/physical_package_id", "-2");
        discover_fails(t, -EINVAL, "\"-2\" is not a topology id");

        /* -1: the kernel does not know; still one package */
        put(t, "sys/devices/system/cpu/cpu1/topology/physical_package_id", "-1");
        {
                struct xp_node_inventory *inv = discover_ok(t);

                assert_cpu(inv, 2, 3, 4);
                xp_node_inventory_free(inv);
        }
}

static void bad_meminfo(void **state)
{
        struct tree *t = *state;

        put_small(t);
        put(t, "proc/meminfo", "MemTotal:        lots kB\n");
        discover_fails(
            t, -EINVAL, "proc/meminfo: \"MemTotal:        lots kB\" is not a memory size in kB");

        put(t, "proc/meminfo", "MemTotal:        4194304 MB\n");
        discover_fails(t, -EINVAL, "is not a memory size in kB");

        put(t, "proc/meminfo", "MemTotal:        -4194304 kB\n");
        discover_fails(t, -EINVAL, "is not a memory size in kB");

        put(t, "proc/meminfo", "MemTotal:        99999999999999999999 kB\n");
        discover_fails(t, -EINVAL, "is not a memory size in kB");

        put(t, "proc/meminfo", "MemTotal:        18014398509481984 kB\n"); /* 2^54 kB */
        discover_fails(t, -EINVAL, "is too large a memory size");

        put(t, "proc/meminfo", "MemFree:         2097152 kB\n");
        discover_fails(t, -EINVAL, "proc/meminfo: no \"MemTotal:\" line");

        put_small(t);
        put(t,
            "sys/devices/system/node/node1/meminfo",
            "Node 0 MemTotal:        2097152 kB\n"); /* another node's line */
        discover_fails(
            t, -EINVAL, "sys/devices/system/node/node1/meminfo: no \"Node 1 MemTotal:\" line");

        put(t, "sys/devices/system/node/node1/meminfo", "Node 1 MemTotal: 12x kB\n");
        discover_fails(
            t,
            -EINVAL,
            "sys/devices/system/node/node1/meminfo: \"Node 1 MemTotal: 12x kB\" is not a "
            "memory size in kB");

        unput(t, "sys/devices/system/node/node1/meminfo");
        discover_fails(
            t,
            -ENOENT,
            "sys/devices/system/node/node1/meminfo: cannot read: No such file or directory");
}

/* A memory-only NUMA node (CXL, HBM) has an empty cpulist. */
static void memory_only_node(void **state)
{
        struct tree *t = *state;
        struct xp_node_inventory *inv;

        put_small(t);
        put(t, "sys/devices/system/node/online", "0-1,3\n");
        put(t, "sys/devices/system/node/node3/cpulist", "\n");
        put(t, "sys/devices/system/node/node3/meminfo", "Node 3 MemTotal:        8388608 kB\n");
        inv = discover_ok(t);
        assert_int_equal(inv->numa_nodes.n, 3);
        assert_node(inv, 2, 3, "", 8 * GiB);
        xp_node_inventory_free(inv);
}

/* Without node/online every nodeN directory is a node. */
static void no_node_online_lists_nodes(void **state)
{
        struct tree *t = *state;
        struct xp_node_inventory *inv;

        put_small(t);
        unput(t, "sys/devices/system/node/online");
        put(t, "sys/devices/system/node/possible", "0-1\n");
        inv = discover_ok(t);
        assert_int_equal(inv->numa_nodes.n, 2);
        assert_node(inv, 0, 0, "0-1", 1 * GiB);
        assert_node(inv, 1, 1, "2-3", 2 * GiB);
        xp_node_inventory_free(inv);
}

#define TREE_TEST(f) cmocka_unit_test_setup_teardown(f, tree_setup, tree_teardown)

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(dgx_8gpu),
            cmocka_unit_test(ascend_8npu),
            cmocka_unit_test(mixed_box),
            cmocka_unit_test(ci_machine),
            cmocka_unit_test(live_machine),
            TREE_TEST(small_tree),
            TREE_TEST(no_cpu_dir_skips),
            TREE_TEST(no_node_dir),
            TREE_TEST(no_online_file_lists_cpus),
            TREE_TEST(no_topology_files),
            TREE_TEST(cores_are_per_package_and_die),
            TREE_TEST(no_proc_meminfo),
            TREE_TEST(bad_cpulists),
            TREE_TEST(bad_topology),
            TREE_TEST(bad_meminfo),
            TREE_TEST(memory_only_node),
            TREE_TEST(no_node_online_lists_nodes),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
