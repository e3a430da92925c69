/* SPDX-License-Identifier: Apache-2.0 */
/* cgroup v1: one hierarchy per controller, each mounted where /proc/self/mountinfo says. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cgroup_internal.h"

static const char *mount_of(struct xp_cgroup *cg, enum cgroup_controller c)
{
        return cg->root->v1_mounts[c];
}

/* Writes FILE in the group's directory of controller c. */
static int write_in(struct xp_cgroup *cg,
                    enum cgroup_controller c,
                    const char *file,
                    const char *value,
                    struct xp_error *err)
{
        char dir[PATH_MAX];
        int n = snprintf(dir, sizeof(dir), "%s/%s", mount_of(cg, c), cg->path);

        if (n < 0 || (size_t)n >= sizeof(dir))
                return xp_errorf(err, -ENAMETOOLONG, "cgroup %s: path too long", cg->path);
        return cgroup_write(cg->root, dir, file, value, err);
}

static bool blank(const char *s)
{
        return s[strspn(s, " \t\n")] == '\0';
}

/*
 * A new v1 cpuset group starts with empty cpus and mems and refuses tasks until both are set;
 * copy them down from the parent at every level that is still empty.
 */
static int cpuset_inherit(struct xp_cgroup *cg, struct xp_error *err)
{
        static const char *const files[] = {"cpuset.cpus", "cpuset.mems"};
        const char *base = mount_of(cg, CGROUP_CPUSET);
        char dir[PATH_MAX], parent[PATH_MAX];
        int n;

        n = snprintf(dir, sizeof(dir), "%s/%s", base, cg->path);
        if (n < 0 || (size_t)n >= sizeof(dir))
                return xp_errorf(err, -ENAMETOOLONG, "cgroup %s: path too long", cg->path);
        for (char *p = dir + strlen(base) + 1;; p++) {
                char saved;

                if (*p != '/' && *p != '\0')
                        continue;
                saved = *p;
                *p = '\0';
                memcpy(parent, dir, sizeof(parent));
                *strrchr(parent, '/') = '\0';
                for (size_t i = 0; i < XP_ELEMENTSOF(files); i++) {
                        _cleanup_free_ char *mine = NULL, *theirs = NULL;
                        int r;

                        r = cgroup_read(cg->root, dir, files[i], &mine, err);
                        if (r < 0)
                                return r;
                        if (!blank(mine))
                                continue;
                        r = cgroup_read(cg->root, parent, files[i], &theirs, err);
                        if (r < 0)
                                return r;
                        theirs[strcspn(theirs, "\n")] = '\0';
                        r = cgroup_write(cg->root, dir, files[i], theirs, err);
                        if (r < 0)
                                return r;
                }
                *p = saved;
                if (!saved)
                        return 0;
        }
}

/*
 * Whether the group gets a cpuset directory only when its limits pin CPUs or memory nodes: true
 * where another hierarchy holds the group's processes. A cpuset group costs each start two reads
 * and two writes up its levels, and the kernel rebuilds its scheduling domains as cpuset groups
 * come and go; an unpinned container runs in its parent's cpuset just the same.
 */
static bool cpuset_on_demand(struct xp_cgroup *cg)
{
        for (int c = 0; c < CGROUP_CONTROLLER_MAX; c++)
                if (c != CGROUP_CPUSET && mount_of(cg, c))
                        return true;
        return false;
}

static int cpuset_create(struct xp_cgroup *cg, struct xp_error *err)
{
        int r = cgroup_mkdir_p(cg->root, mount_of(cg, CGROUP_CPUSET), cg->path, err);

        return r < 0 ? r : cpuset_inherit(cg, err);
}

static int v1_create(struct xp_cgroup *cg, struct xp_error *err)
{
        int r;

        for (int c = 0; c < CGROUP_CONTROLLER_MAX; c++) {
                if (!mount_of(cg, c) || c == CGROUP_CPUSET || cgroup_v1_shared(cg->root, c))
                        continue;
                /* accounting alone never stops a start: without it the CPU time is left out */
                r = cgroup_mkdir_p(
                    cg->root, mount_of(cg, c), cg->path, c == CGROUP_CPUACCT ? NULL : err);
                if (r < 0 && c != CGROUP_CPUACCT)
                        return r;
        }
        if (mount_of(cg, CGROUP_CPUSET) && !cpuset_on_demand(cg))
                return cpuset_create(cg, err);
        return 0;
}

bool cgroup_v1_create_writes_cpuset(const struct xp_cgroup_root *root)
{
        if (root->mode != XP_CGROUP_V1 || !root->v1_mounts[CGROUP_CPUSET])
                return false;
        for (int c = 0; c < CGROUP_CONTROLLER_MAX; c++)
                if (c != CGROUP_CPUSET && root->v1_mounts[c])
                        return false;
        return true;
}

int cgroup_v1_make_cpuset(struct xp_cgroup *cg, struct xp_error *err)
{
        if (cg->root->mode != XP_CGROUP_V1 || !mount_of(cg, CGROUP_CPUSET) || !cpuset_on_demand(cg))
                return 0;
        return cgroup_mkdir_p(cg->root, mount_of(cg, CGROUP_CPUSET), cg->path, err);
}

/* The pinning, in a cpuset group made now when v1_create() left it for later. */
static int
apply_cpuset(struct xp_cgroup *cg, const struct xp_cgroup_limits *l, struct xp_error *err)
{
        int r = cpuset_on_demand(cg) ? cpuset_create(cg, err) : 0;

        /* mems before cpus matches what runc does; neither may be empty in v1 */
        if (r >= 0 && l->cpuset_mems)
                r = write_in(cg, CGROUP_CPUSET, "cpuset.mems", l->cpuset_mems, err);
        if (r >= 0 && l->cpuset_cpus)
                r = write_in(cg, CGROUP_CPUSET, "cpuset.cpus", l->cpuset_cpus, err);
        return r;
}

/* Fails with -EOPNOTSUPP naming the setting when its controller is not mounted. */
static int
need(struct xp_cgroup *cg, enum cgroup_controller c, const char *setting, struct xp_error *err)
{
        if (mount_of(cg, c))
                return 0;
        return xp_errorf(err,
                         -EOPNOTSUPP,
                         "cgroup %s: %s needs the v1 %s controller, which is not mounted",
                         cg->path,
                         setting,
                         cgroup_controller_name(c));
}

static int v1_apply(struct xp_cgroup *cg, const struct xp_cgroup_limits *l, struct xp_error *err)
{
        char value[64];
        int r;

        /* every controller first, so a missing one changes nothing */
        if ((l->cpu_millis && (r = need(cg, CGROUP_CPU, "cpu_millis", err)) < 0) ||
            (l->memory_bytes && (r = need(cg, CGROUP_MEMORY, "memory_bytes", err)) < 0) ||
            (l->pids_max && (r = need(cg, CGROUP_PIDS, "pids_max", err)) < 0) ||
            ((l->cpuset_cpus || l->cpuset_mems) &&
             (r = need(cg, CGROUP_CPUSET, "cpuset", err)) < 0) ||
            (l->restrict_devices && (r = need(cg, CGROUP_DEVICES, "devices", err)) < 0))
                return r;

        if (l->cpu_millis) {
                uint64_t period = l->cpu_period_us ? l->cpu_period_us : 100000;

                snprintf(value, sizeof(value), "%" PRIu64, period);
                r = write_in(cg, CGROUP_CPU, "cpu.cfs_period_us", value, err);
                if (r < 0)
                        return r;
                snprintf(value, sizeof(value), "%" PRIu64, cgroup_cpu_quota(l->cpu_millis, period));
                r = write_in(cg, CGROUP_CPU, "cpu.cfs_quota_us", value, err);
                if (r < 0)
                        return r;
        }
        if (l->memory_bytes) {
                snprintf(value, sizeof(value), "%" PRIu64, l->memory_bytes);
                r = write_in(cg, CGROUP_MEMORY, "memory.limit_in_bytes", value, err);
                if (r < 0)
                        return r;
        }
        if (l->pids_max) {
                snprintf(value, sizeof(value), "%" PRIu64, l->pids_max);
                r = write_in(cg, CGROUP_PIDS, "pids.max", value, err);
                if (r < 0)
                        return r;
        }
        if (l->cpuset_cpus || l->cpuset_mems) {
                r = apply_cpuset(cg, l, err);
                if (r < 0)
                        return r;
        }
        if (l->restrict_devices) {
                r = write_in(cg, CGROUP_DEVICES, "devices.deny", "a", err);
                if (r < 0)
                        return r;
                for (size_t i = 0; i < l->n_devices; i++) {
                        const struct xp_cgroup_device *d = &l->devices[i];
                        char major[16] = "*", minor[16] = "*";

                        if (d->major != XP_CGROUP_DEVICE_ANY)
                                snprintf(major, sizeof(major), "%u", d->major);
                        if (d->minor != XP_CGROUP_DEVICE_ANY)
                                snprintf(minor, sizeof(minor), "%u", d->minor);
                        snprintf(
                            value, sizeof(value), "%c %s:%s %s", d->type, major, minor, d->access);
                        r = write_in(cg, CGROUP_DEVICES, "devices.allow", value, err);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

static int v1_add_pid(struct xp_cgroup *cg, pid_t pid, struct xp_error *err)
{
        char value[32];

        snprintf(value, sizeof(value), "%d", (int)pid);
        for (int c = 0; c < CGROUP_CONTROLLER_MAX; c++) {
                char dir[PATH_MAX];
                int r;

                if (!mount_of(cg, c) || cgroup_v1_shared(cg->root, c))
                        continue;
                /* a group that pins nothing has no cpuset directory (cpuset_on_demand()) */
                snprintf(dir, sizeof(dir), "%s/%s", mount_of(cg, c), cg->path);
                if (c == CGROUP_CPUSET && cpuset_on_demand(cg) &&
                    faccessat(cg->root->fd, dir, F_OK, 0) < 0 && errno == ENOENT)
                        continue;
                r = write_in(cg, c, "cgroup.procs", value, c == CGROUP_CPUACCT ? NULL : err);
                if (r < 0 && c != CGROUP_CPUACCT)
                        return r;
        }
        return 0;
}

static int v1_oom_kills(struct xp_cgroup *cg, uint64_t *ret, struct xp_error *err)
{
        _cleanup_free_ char *text = NULL;
        char dir[PATH_MAX];
        int r;

        r = need(cg, CGROUP_MEMORY, "oom_kills", err);
        if (r < 0)
                return r;
        snprintf(dir, sizeof(dir), "%s/%s", mount_of(cg, CGROUP_MEMORY), cg->path);
        r = cgroup_read(cg->root, dir, "memory.oom_control", &text, err);
        if (r < 0)
                return r;
        r = cgroup_keyed_u64(text, "oom_kill", ret);
        if (r == -ENODATA)
                return xp_errorf(
                    err, r, "/%s/memory.oom_control: no oom_kill line (kernel before 4.13)", dir);
        if (r < 0)
                return xp_errorf(err, r, "/%s/memory.oom_control: oom_kill is not a number", dir);
        return 0;
}

static int v1_remove(struct xp_cgroup *cg, struct xp_error *err)
{
        int first = 0;

        /* every hierarchy, even after one fails, so a retry has less left to do */
        for (int c = 0; c < CGROUP_CONTROLLER_MAX; c++) {
                int r;

                if (!mount_of(cg, c) || cgroup_v1_shared(cg->root, c))
                        continue;
                r = cgroup_rmdir(cg->root, mount_of(cg, c), cg->path, first < 0 ? NULL : err);
                if (r < 0 && first == 0)
                        first = r;
        }
        /* what an OCI runtime made there: nothing of ours depends on it, so no error counts */
        for (size_t i = 0; i < cg->root->n_v1_others; i++)
                (void)cgroup_rmdir(cg->root, cg->root->v1_others[i], cg->path, NULL);
        return first;
}

const struct cgroup_backend cgroup_v1_backend = {
    .name = "v1",
    .create = v1_create,
    .apply = v1_apply,
    .add_pid = v1_add_pid,
    .oom_kills = v1_oom_kills,
    .remove = v1_remove,
};
