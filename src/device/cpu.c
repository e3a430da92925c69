/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The cpu backend: sockets, cores, threads, NUMA nodes and memory from sysfs and procfs below the
 * discovery root (Documentation/ABI/testing/sysfs-devices-system-cpu, sysfs-devices-node).
 *
 * What it reads, all relative to the root:
 *   sys/devices/system/cpu/online                  the online CPUs (a cpulist)
 *   sys/devices/system/cpu/cpuN/topology/physical_package_id, die_id, core_id
 *   sys/devices/system/node/online                 the online NUMA nodes (a list)
 *   sys/devices/system/node/nodeN/cpulist          the node's CPUs
 *   sys/devices/system/node/nodeN/meminfo          "Node N MemTotal:  536870912 kB"
 *   proc/meminfo                                   "MemTotal:  1073741824 kB"
 *
 * sockets = distinct physical_package_id, cores = distinct (package, die, core_id) (die_id is 0
 * where the kernel has no such file), threads = online CPUs.
 *
 * Where files are absent (old kernels, containers, hand-written trees):
 *   - no cpu/online: every cpuN directory is a CPU, online unless its cpuN/online says 0;
 *   - no topology/physical_package_id: package 0; no topology/core_id: each CPU its own core;
 *   - no sys/devices/system/node: one NUMA node 0 with all online CPUs and proc/meminfo's memory;
 *     no node/online: every nodeN directory is a node;
 *   - no proc/meminfo: the node's memory is the sum of the NUMA nodes' (an error without those).
 * A file that is present but malformed is an error naming the file and what is wrong.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "xpool/strutil.h"

#define CPU_DIR  "sys/devices/system/cpu"
#define NODE_DIR "sys/devices/system/node"
#define MEMINFO  "proc/meminfo"

struct cpu_key {
        int64_t package;
        int64_t die;
        int64_t core;
};

struct numa_list {
        struct xp_numa_node *items;
        size_t n;
};

static void numa_list_done(struct numa_list *l)
{
        for (size_t i = 0; i < l->n; i++) {
                free(l->items[i].cpus);
                json_decref(l->items[i].extra);
        }
        free(l->items);
        l->items = NULL;
        l->n = 0;
}

/* The path as the user knows it: "/sys/..." on a live machine, "<root>/sys/..." on a tree. */
static const char *shown(struct xp_discovery *d, const char *path, char *buf, size_t size)
{
        const char *root = d->config->root ? d->config->root : "/";
        size_t len = strlen(root);

        while (len > 0 && root[len - 1] == '/')
                len--;
        snprintf(buf, size, "%.*s/%s", (int)len, root, path);
        return buf;
}

static int fail_read(struct xp_discovery *d, const char *path, int r, struct xp_error *err)
{
        char where[4096];

        if (r == -ENOMEM)
                return r;
        return xp_errorf(
            err, r, "%s: cannot read: %s", shown(d, path, where, sizeof(where)), strerror(-r));
}

static int fail_bad(struct xp_discovery *d,
                    const char *path,
                    const char *text,
                    const char *what,
                    struct xp_error *err)
{
        char where[4096], q[XP_QUOTE_MAX];

        return xp_errorf(err,
                         -EINVAL,
                         "%s: %s %s",
                         shown(d, path, where, sizeof(where)),
                         xp_quote(text, q),
                         what);
}

static int
read_cpulist(struct xp_discovery *d, const char *path, struct xp_cpuset *ret, struct xp_error *err)
{
        _cleanup_free_ char *text = NULL;
        int r = xp_root_read(d, path, &text);

        if (r < 0)
                return fail_read(d, path, r, err);
        if (xp_cpuset_parse(text, ret) < 0)
                return fail_bad(d, path, text, "is not a CPU list", err);
        return 0;
}

/* A topology id: -ENOENT when absent (the caller picks a default), else the value or an error. */
static int read_id(struct xp_discovery *d, const char *path, int64_t *ret, struct xp_error *err)
{
        _cleanup_free_ char *text = NULL;
        char *end;
        long long v;
        int r = xp_root_read(d, path, &text);

        if (r == -ENOENT)
                return r;
        if (r < 0)
                return fail_read(d, path, r, err);
        errno = 0;
        v = strtoll(text, &end, 10);
        /* -1 is what the kernel writes when it does not know */
        if (!text[0] || *end || errno || v < -1)
                return fail_bad(d, path, text, "is not a topology id", err);
        *ret = v;
        return 0;
}

/* Parses a decimal CPU or node number that must fill the whole string. */
static bool parse_index(const char *s, unsigned *ret)
{
        unsigned long v;
        char *end;

        if (*s < '0' || *s > '9')
                return false;
        errno = 0;
        v = strtoul(s, &end, 10);
        if (errno || *end || v >= XP_CPU_MAX)
                return false;
        *ret = (unsigned)v;
        return true;
}

/* Fallback without cpu/online: the cpuN directories, less those whose online file says 0. */
static int list_cpus(struct xp_discovery *d, struct xp_cpuset *ret, struct xp_error *err)
{
        struct xp_cpuset set = {0};
        char **names = NULL;
        size_t n = 0;
        int r;

        r = xp_root_list(d, CPU_DIR, &names, &n);
        if (r < 0)
                return fail_read(d, CPU_DIR, r, err);
        for (size_t i = 0; i < n && r >= 0; i++) {
                _cleanup_free_ char *path = NULL, *text = NULL;
                unsigned cpu;

                if (strncmp(names[i], "cpu", 3) != 0 || !parse_index(names[i] + 3, &cpu))
                        continue;
                if (asprintf(&path, CPU_DIR "/%s/online", names[i]) < 0) {
                        path = NULL;
                        r = -ENOMEM;
                        break;
                }
                r = xp_root_read(d, path, &text);
                if (r == -ENOENT) {
                        /* cpu0 often cannot go offline and has no such file */
                        xp_cpuset_add(&set, cpu);
                        r = 0;
                } else if (r < 0) {
                        r = fail_read(d, path, r, err);
                } else if (strcmp(text, "1") == 0) {
                        xp_cpuset_add(&set, cpu);
                } else if (strcmp(text, "0") != 0) {
                        r = fail_bad(d, path, text, "is neither 0 nor 1", err);
                }
        }
        xp_strv_free(names, n);
        if (r < 0)
                return r;
        *ret = set;
        return 0;
}

static int compare_keys(const void *x, const void *y)
{
        const struct cpu_key *a = x, *b = y;

        if (a->package != b->package)
                return a->package < b->package ? -1 : 1;
        if (a->die != b->die)
                return a->die < b->die ? -1 : 1;
        if (a->core != b->core)
                return a->core < b->core ? -1 : 1;
        return 0;
}

static int read_topology(struct xp_discovery *d,
                         const struct xp_cpuset *online,
                         struct xp_cpu_topology *ret,
                         struct xp_error *err)
{
        size_t n_cpus = xp_cpuset_count(online), n = 0, sockets = 0, cores = 0;
        _cleanup_free_ struct cpu_key *keys = calloc(n_cpus ? n_cpus : 1, sizeof(*keys));

        if (!keys)
                return -ENOMEM;
        for (unsigned cpu = 0; cpu < XP_CPU_MAX; cpu++) {
                char path[128];
                struct cpu_key *k;
                int r;

                if (!xp_cpuset_has(online, cpu))
                        continue;
                k = &keys[n++];
                *k = (struct cpu_key){.package = 0, .die = 0, .core = cpu};
                snprintf(path, sizeof(path), CPU_DIR "/cpu%u/topology/physical_package_id", cpu);
                r = read_id(d, path, &k->package, err);
                if (r < 0 && r != -ENOENT)
                        return r;
                snprintf(path, sizeof(path), CPU_DIR "/cpu%u/topology/die_id", cpu);
                r = read_id(d, path, &k->die, err);
                if (r < 0 && r != -ENOENT)
                        return r;
                snprintf(path, sizeof(path), CPU_DIR "/cpu%u/topology/core_id", cpu);
                r = read_id(d, path, &k->core, err);
                if (r < 0 && r != -ENOENT)
                        return r;
        }
        if (n > 1)
                qsort(keys, n, sizeof(*keys), compare_keys);
        for (size_t i = 0; i < n; i++) {
                if (i == 0 || keys[i].package != keys[i - 1].package)
                        sockets++;
                if (i == 0 || compare_keys(&keys[i], &keys[i - 1]) != 0)
                        cores++;
        }
        *ret = (struct xp_cpu_topology){
            .sockets = (int64_t)sockets,
            .cores = (int64_t)cores,
            .threads = (int64_t)n,
        };
        return 0;
}

/*
 * Finds the line "<prefix>MemTotal: <n> kB" in a meminfo file and returns n in bytes. prefix is
 * "" for proc/meminfo and "Node 3 " for a node's.
 */
static int parse_memtotal(struct xp_discovery *d,
                          const char *path,
                          const char *text,
                          const char *prefix,
                          int64_t *ret,
                          struct xp_error *err)
{
        size_t plen = strlen(prefix);
        char where[4096];

        for (const char *line = text; line && *line;) {
                const char *eol = strchr(line, '\n');
                size_t len = eol ? (size_t)(eol - line) : strlen(line);
                const char *p = line + plen;
                unsigned long long kb;
                char *end;

                if (len > plen && strncmp(line, prefix, plen) == 0 &&
                    strncmp(p, "MemTotal:", 9) == 0) {
                        _cleanup_free_ char *copy = strndup(line, len);

                        if (!copy)
                                return -ENOMEM;
                        p = copy + plen + 9;
                        while (*p == ' ' || *p == '\t')
                                p++;
                        if (*p < '0' || *p > '9')
                                return fail_bad(d, path, copy, "is not a memory size in kB", err);
                        errno = 0;
                        kb = strtoull(p, &end, 10);
                        while (*end == ' ' || *end == '\t')
                                end++;
                        if (errno || end == p || strcmp(end, "kB") != 0)
                                return fail_bad(d, path, copy, "is not a memory size in kB", err);
                        if (kb > (unsigned long long)INT64_MAX / 1024)
                                return fail_bad(d, path, copy, "is too large a memory size", err);
                        *ret = (int64_t)kb * 1024;
                        return 0;
                }
                line = eol ? eol + 1 : NULL;
        }
        return xp_errorf(err,
                         -EINVAL,
                         "%s: no \"%sMemTotal:\" line",
                         shown(d, path, where, sizeof(where)),
                         prefix);
}

static int read_memtotal(struct xp_discovery *d,
                         const char *path,
                         const char *prefix,
                         int64_t *ret,
                         struct xp_error *err)
{
        _cleanup_free_ char *text = NULL;
        int r = xp_root_read(d, path, &text);

        if (r < 0)
                return r == -ENOENT ? r : fail_read(d, path, r, err);
        return parse_memtotal(d, path, text, prefix, ret, err);
}

/* Fallback without node/online: the nodeN directories. */
static int list_nodes(struct xp_discovery *d, struct xp_cpuset *ret, struct xp_error *err)
{
        struct xp_cpuset set = {0};
        char **names = NULL;
        size_t n = 0;
        int r;

        r = xp_root_list(d, NODE_DIR, &names, &n);
        if (r < 0)
                return fail_read(d, NODE_DIR, r, err);
        for (size_t i = 0; i < n; i++) {
                unsigned node;

                if (strncmp(names[i], "node", 4) == 0 && parse_index(names[i] + 4, &node))
                        xp_cpuset_add(&set, node);
        }
        xp_strv_free(names, n);
        *ret = set;
        return 0;
}

static int read_numa_nodes(struct xp_discovery *d, struct numa_list *ret, struct xp_error *err)
{
        struct numa_list list = {0};
        struct xp_cpuset online;
        int r;

        if (xp_root_exists(d, NODE_DIR "/online")) {
                _cleanup_free_ char *text = NULL;

                r = xp_root_read(d, NODE_DIR "/online", &text);
                if (r < 0)
                        return fail_read(d, NODE_DIR "/online", r, err);
                if (xp_cpuset_parse(text, &online) < 0)
                        return fail_bad(d, NODE_DIR "/online", text, "is not a node list", err);
        } else {
                r = list_nodes(d, &online, err);
                if (r < 0)
                        return r;
        }
        if (xp_cpuset_count(&online) == 0) {
                char where[4096];

                return xp_errorf(err,
                                 -EINVAL,
                                 "%s: no online NUMA nodes",
                                 shown(d, NODE_DIR "/online", where, sizeof(where)));
        }

        list.items = calloc(xp_cpuset_count(&online) + 1, sizeof(*list.items));
        if (!list.items)
                return -ENOMEM;
        for (unsigned node = 0; node < XP_CPU_MAX; node++) {
                struct xp_numa_node *nn = &list.items[list.n];
                char path[128], prefix[32];
                struct xp_cpuset cpus;

                if (!xp_cpuset_has(&online, node))
                        continue;
                *nn = (struct xp_numa_node){.id = node};
                list.n++;
                snprintf(path, sizeof(path), NODE_DIR "/node%u/cpulist", node);
                r = read_cpulist(d, path, &cpus, err);
                if (r >= 0)
                        r = xp_cpuset_format(&cpus, &nn->cpus);
                if (r < 0)
                        goto fail;
                snprintf(path, sizeof(path), NODE_DIR "/node%u/meminfo", node);
                snprintf(prefix, sizeof(prefix), "Node %u ", node);
                r = read_memtotal(d, path, prefix, &nn->memory_bytes, err);
                if (r == -ENOENT)
                        r = fail_read(d, path, r, err);
                if (r < 0)
                        goto fail;
        }
        *ret = list;
        return 0;
fail:
        numa_list_done(&list);
        return r;
}

static int cpu_probe(struct xp_discovery *d)
{
        return xp_root_exists(d, CPU_DIR) ? 0 : -ENODEV;
}

static int cpu_discover(struct xp_discovery *d, struct xp_error *err)
{
        struct xp_node_inventory *inv = d->inventory;
        _cleanup_free_ struct xp_cpu_topology *topology = calloc(1, sizeof(*topology));
        struct numa_list nodes = {0};
        struct xp_cpuset online;
        int64_t memory = 0;
        int r;

        if (!topology)
                return -ENOMEM;
        if (xp_root_exists(d, CPU_DIR "/online"))
                r = read_cpulist(d, CPU_DIR "/online", &online, err);
        else
                r = list_cpus(d, &online, err);
        if (r < 0)
                return r;
        if (xp_cpuset_count(&online) == 0) {
                char where[4096];

                return xp_errorf(err,
                                 -EINVAL,
                                 "%s: no online CPUs",
                                 shown(d, CPU_DIR "/online", where, sizeof(where)));
        }
        r = read_topology(d, &online, topology, err);
        if (r < 0)
                return r;

        r = read_memtotal(d, MEMINFO, "", &memory, err);
        if (r < 0 && r != -ENOENT)
                return r;
        if (xp_root_exists(d, NODE_DIR)) {
                bool have_total = r >= 0;

                r = read_numa_nodes(d, &nodes, err);
                if (r < 0)
                        return r;
                for (size_t i = 0; !have_total && i < nodes.n; i++)
                        memory += nodes.items[i].memory_bytes;
        } else {
                if (r == -ENOENT)
                        return fail_read(d, MEMINFO, r, err);
                nodes.items = calloc(1, sizeof(*nodes.items));
                if (!nodes.items)
                        return -ENOMEM;
                nodes.n = 1;
                nodes.items[0].memory_bytes = memory;
                r = xp_cpuset_format(&online, &nodes.items[0].cpus);
                if (r < 0) {
                        numa_list_done(&nodes);
                        return r;
                }
        }

        /* success: replace what the inventory had */
        if (inv->cpu) {
                json_decref(inv->cpu->extra);
                free(inv->cpu);
        }
        inv->cpu = TAKE_PTR(topology);
        {
                struct numa_list old = {inv->numa_nodes.items, inv->numa_nodes.n};

                numa_list_done(&old);
        }
        inv->numa_nodes.items = nodes.items;
        inv->numa_nodes.n = nodes.n;
        inv->memory_bytes = memory;
        return 0;
}

const struct xp_device_backend xp_cpu_backend = {
    .name = "cpu",
    .probe = cpu_probe,
    .discover = cpu_discover,
};
