/* SPDX-License-Identifier: Apache-2.0 */
/* cgroup v2: one unified hierarchy at /sys/fs/cgroup; controllers enabled per subtree. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cgroup_internal.h"

/* Controllers a v2 group gets; devices is no v2 controller (it is a BPF program there). */
static const enum cgroup_controller wanted[] = {
    CGROUP_CPU, CGROUP_CPUSET, CGROUP_MEMORY, CGROUP_PIDS};

static int group_dir(struct xp_cgroup *cg, char *buf, size_t size, struct xp_error *err)
{
        int n = snprintf(buf, size, CGROUP_V2_DIR "/%s", cg->path);

        if (n < 0 || (size_t)n >= size)
                return xp_errorf(err, -ENAMETOOLONG, "cgroup %s: path too long", cg->path);
        return 0;
}

/*
 * Children only get a controller's files when every ancestor lists it in cgroup.subtree_control,
 * so enable the wanted ones the root offers from the hierarchy root down to the group's parent.
 */
static int enable_controllers(struct xp_cgroup *cg, struct xp_error *err)
{
        char value[64] = "", dir[PATH_MAX];
        int r;

        for (size_t i = 0; i < XP_ELEMENTSOF(wanted); i++)
                if (cg->root->v2_controllers & (1u << wanted[i]))
                        snprintf(value + strlen(value),
                                 sizeof(value) - strlen(value),
                                 "%s+%s",
                                 *value ? " " : "",
                                 cgroup_controller_name(wanted[i]));
        if (!*value)
                return 0;
        r = group_dir(cg, dir, sizeof(dir), err);
        if (r < 0)
                return r;
        /* the group itself is a leaf: it holds processes, so it must not enable controllers */
        *strrchr(dir, '/') = '\0';
        for (char *p = dir + strlen(CGROUP_V2_DIR);; p++) {
                char saved;

                if (*p != '/' && *p != '\0')
                        continue;
                saved = *p;
                *p = '\0';
                r = cgroup_write(cg->root, dir, "cgroup.subtree_control", value, err);
                if (r < 0)
                        return r;
                *p = saved;
                if (!saved)
                        return 0;
        }
}

static int v2_create(struct xp_cgroup *cg, struct xp_error *err)
{
        int r = cgroup_mkdir_p(cg->root, CGROUP_V2_DIR, cg->path, err);

        if (r < 0)
                return r;
        return enable_controllers(cg, err);
}

static int
need(struct xp_cgroup *cg, enum cgroup_controller c, const char *setting, struct xp_error *err)
{
        if (cg->root->v2_controllers & (1u << c))
                return 0;
        return xp_errorf(err,
                         -EOPNOTSUPP,
                         "cgroup %s: %s needs the %s controller, which /" CGROUP_V2_DIR
                         "/cgroup.controllers does not list",
                         cg->path,
                         setting,
                         cgroup_controller_name(c));
}

static int v2_apply(struct xp_cgroup *cg, const struct xp_cgroup_limits *l, struct xp_error *err)
{
        char dir[PATH_MAX], value[64];
        int r;

        if ((l->cpu_millis && (r = need(cg, CGROUP_CPU, "cpu_millis", err)) < 0) ||
            (l->memory_bytes && (r = need(cg, CGROUP_MEMORY, "memory_bytes", err)) < 0) ||
            (l->pids_max && (r = need(cg, CGROUP_PIDS, "pids_max", err)) < 0) ||
            ((l->cpuset_cpus || l->cpuset_mems) &&
             (r = need(cg, CGROUP_CPUSET, "cpuset", err)) < 0))
                return r;
        r = group_dir(cg, dir, sizeof(dir), err);
        if (r < 0)
                return r;
        /* first: the program checks every device before it is attached, so a bad one changes
         * nothing */
        if (l->restrict_devices) {
                int fd = openat(cg->root->fd, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

                if (fd < 0)
                        return xp_errorf(err, -errno, "cgroup /%s: %s", dir, strerror(errno));
                r = cgroup_bpf_restrict_devices(fd, cg->path, l->devices, l->n_devices, err);
                close(fd);
                if (r < 0)
                        return r;
        }

        if (l->cpu_millis) {
                uint64_t period = l->cpu_period_us ? l->cpu_period_us : 100000;

                snprintf(value,
                         sizeof(value),
                         "%" PRIu64 " %" PRIu64,
                         cgroup_cpu_quota(l->cpu_millis, period),
                         period);
                r = cgroup_write(cg->root, dir, "cpu.max", value, err);
                if (r < 0)
                        return r;
        }
        if (l->memory_bytes) {
                snprintf(value, sizeof(value), "%" PRIu64, l->memory_bytes);
                r = cgroup_write(cg->root, dir, "memory.max", value, err);
                if (r < 0)
                        return r;
        }
        if (l->pids_max) {
                snprintf(value, sizeof(value), "%" PRIu64, l->pids_max);
                r = cgroup_write(cg->root, dir, "pids.max", value, err);
                if (r < 0)
                        return r;
        }
        if (l->cpuset_cpus) {
                r = cgroup_write(cg->root, dir, "cpuset.cpus", l->cpuset_cpus, err);
                if (r < 0)
                        return r;
        }
        if (l->cpuset_mems) {
                r = cgroup_write(cg->root, dir, "cpuset.mems", l->cpuset_mems, err);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int v2_add_pid(struct xp_cgroup *cg, pid_t pid, struct xp_error *err)
{
        char dir[PATH_MAX], value[32];
        int r = group_dir(cg, dir, sizeof(dir), err);

        if (r < 0)
                return r;
        snprintf(value, sizeof(value), "%d", (int)pid);
        return cgroup_write(cg->root, dir, "cgroup.procs", value, err);
}

static int v2_oom_kills(struct xp_cgroup *cg, uint64_t *ret, struct xp_error *err)
{
        _cleanup_free_ char *text = NULL;
        char dir[PATH_MAX];
        int r = group_dir(cg, dir, sizeof(dir), err);

        if (r < 0)
                return r;
        r = cgroup_read(cg->root, dir, "memory.events", &text, err);
        if (r < 0)
                return r;
        r = cgroup_keyed_u64(text, "oom_kill", ret);
        if (r == -ENODATA)
                return xp_errorf(err, r, "/%s/memory.events: no oom_kill line", dir);
        if (r < 0)
                return xp_errorf(err, r, "/%s/memory.events: oom_kill is not a number", dir);
        return 0;
}

static int v2_remove(struct xp_cgroup *cg, struct xp_error *err)
{
        return cgroup_rmdir(cg->root, CGROUP_V2_DIR, cg->path, err);
}

const struct cgroup_backend cgroup_v2_backend = {
    .name = "v2",
    .create = v2_create,
    .apply = v2_apply,
    .add_pid = v2_add_pid,
    .oom_kills = v2_oom_kills,
    .remove = v2_remove,
};
