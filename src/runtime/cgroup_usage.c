/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What a group has used (xpool/cgroup.h, xp_cgroup_usage()): CPU time, memory, the working set
 * as the kubelet computes it (usage less inactive file pages) and OOM kills, from cgroup v1's
 * cpuacct and memory files or v2's cpu.stat, memory.current and memory.stat.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "cgroup_internal.h"
#include "xpool/macro.h"

static int read_u64(struct xp_cgroup_root *root, const char *dir, const char *file, uint64_t *ret)
{
        _cleanup_free_ char *text = NULL;
        char *end;
        int r = cgroup_read(root, dir, file, &text, NULL);

        if (r < 0)
                return r;
        *ret = strtoull(text, &end, 10);
        return end == text ? -EINVAL : 0;
}

static int read_keyed(
    struct xp_cgroup_root *root, const char *dir, const char *file, const char *key, uint64_t *ret)
{
        _cleanup_free_ char *text = NULL;
        int r = cgroup_read(root, dir, file, &text, NULL);

        return r < 0 ? r : cgroup_keyed_u64(text, key, ret);
}

static void working_set(struct xp_cgroup_usage *u, uint64_t inactive_file)
{
        u->working_set_bytes =
            u->memory_bytes > inactive_file ? u->memory_bytes - inactive_file : 0;
        u->has |= XP_CGROUP_USAGE_WORKING_SET;
}

static void usage_v1(struct xp_cgroup *cg, struct xp_cgroup_usage *u)
{
        const char *cpu = cg->root->v1_mounts[CGROUP_CPUACCT],
                   *mem = cg->root->v1_mounts[CGROUP_MEMORY];
        char dir[PATH_MAX];
        uint64_t v;

        if (cpu) {
                snprintf(dir, sizeof(dir), "%s/%s", cpu, cg->path);
                if (read_u64(cg->root, dir, "cpuacct.usage", &u->cpu_ns) >= 0)
                        u->has |= XP_CGROUP_USAGE_CPU;
        }
        if (mem) {
                snprintf(dir, sizeof(dir), "%s/%s", mem, cg->path);
                if (read_u64(cg->root, dir, "memory.usage_in_bytes", &u->memory_bytes) >= 0) {
                        u->has |= XP_CGROUP_USAGE_MEMORY;
                        if (read_keyed(cg->root, dir, "memory.stat", "total_inactive_file", &v) >=
                            0)
                                working_set(u, v);
                }
        }
}

static void usage_v2(struct xp_cgroup *cg, struct xp_cgroup_usage *u)
{
        char dir[PATH_MAX];
        uint64_t v;

        snprintf(dir, sizeof(dir), CGROUP_V2_DIR "/%s", cg->path);
        if (read_keyed(cg->root, dir, "cpu.stat", "usage_usec", &v) >= 0) {
                u->cpu_ns = v * 1000;
                u->has |= XP_CGROUP_USAGE_CPU;
        }
        if (read_u64(cg->root, dir, "memory.current", &u->memory_bytes) >= 0) {
                u->has |= XP_CGROUP_USAGE_MEMORY;
                if (read_keyed(cg->root, dir, "memory.stat", "inactive_file", &v) >= 0)
                        working_set(u, v);
        }
}

int xp_cgroup_usage(struct xp_cgroup *cg, struct xp_cgroup_usage *ret)
{
        struct xp_cgroup_usage u = {0};

        if (cg->root->mode == XP_CGROUP_V1)
                usage_v1(cg, &u);
        else if (cg->root->mode == XP_CGROUP_V2)
                usage_v2(cg, &u);
        if (xp_cgroup_oom_kills(cg, &u.oom_kills, NULL) >= 0)
                u.has |= XP_CGROUP_USAGE_OOM;
        *ret = u;
        return u.has ? 0 : -ENOENT;
}
