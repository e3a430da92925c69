/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Shared between the cgroup front end (cgroup.c) and its v1/v2 backends. */

#include <stdbool.h>
#include <stdint.h>

#include "xpool/cgroup.h"

/* Controllers xpool sets limits through; index into xp_cgroup_root.v1_mounts. */
enum cgroup_controller {
        CGROUP_CPU,
        CGROUP_CPUSET,
        CGROUP_MEMORY,
        CGROUP_PIDS,
        CGROUP_DEVICES,
        /* joined for accounting only: where it is mounted apart from cpu, a container's CPU time
         * is kept by its own group there (a process that exits keeps its share counted) */
        CGROUP_CPUACCT,
        CGROUP_CONTROLLER_MAX,
};

const char *cgroup_controller_name(enum cgroup_controller c);

struct xp_cgroup;

struct cgroup_backend {
        const char *name;
        int (*create)(struct xp_cgroup *cg, struct xp_error *err);
        int (*apply)(struct xp_cgroup *cg,
                     const struct xp_cgroup_limits *limits,
                     struct xp_error *err);
        int (*add_pid)(struct xp_cgroup *cg, pid_t pid, struct xp_error *err);
        int (*oom_kills)(struct xp_cgroup *cg, uint64_t *ret, struct xp_error *err);
        int (*remove)(struct xp_cgroup *cg, struct xp_error *err);
};

extern const struct cgroup_backend cgroup_v1_backend;

/* Whether v1 controller c shares its hierarchy with an earlier controller (cpu,cpuacct): the
 * group's directory there is made, joined and removed once, for the first. */
bool cgroup_v1_shared(const struct xp_cgroup_root *root, enum cgroup_controller c);
extern const struct cgroup_backend cgroup_v2_backend;

/* A v1 root whose hierarchies are known (mounts[c]: controller c's mount point relative to
 * path, NULL: not mounted), without reading /proc/self/mountinfo. -errno with err. */
int cgroup_root_open_v1(const char *path,
                        const char *const mounts[CGROUP_CONTROLLER_MAX],
                        struct xp_cgroup_root **ret,
                        struct xp_error *err);
/* Controller c's v1 mount point relative to the root; NULL when not mounted or not v1. */
const char *cgroup_v1_mount(const struct xp_cgroup_root *root, enum cgroup_controller c);
/* The v1 hierarchies xpool sets nothing in (freezer, name=systemd, a hybrid's unified one):
 * their count, each mount point relative to the root in (*ret)[i]. */
size_t cgroup_v1_others(const struct xp_cgroup_root *root, char *const **ret);
/* Adds such a hierarchy to a root cgroup_root_open_v1() made (mount_point relative to it), so
 * that a group's removal removes what an OCI runtime made there. -errno with err. */
int cgroup_root_add_v1_other(struct xp_cgroup_root *root,
                             const char *mount_point,
                             struct xp_error *err);

struct xp_cgroup_root {
        int fd; /* O_PATH directory fd of the root */
        enum xp_cgroup_mode mode;
        /* v1: each controller's mount point relative to the root, NULL when not mounted */
        char *v1_mounts[CGROUP_CONTROLLER_MAX];
        /* v1: the controllers (bit per enum) whose hierarchy is mounted whole (mountinfo's root
         * "/"), so that a path /proc/PID/cgroup gives is found below the mount point */
        unsigned v1_whole;
        /* v1: the other hierarchies (name=systemd, blkio, a hybrid's unified one, ...), where
         * an OCI runtime makes a container's groups too: removed with ours */
        char *v1_others[12];
        size_t n_v1_others;
        /* v2: the controllers cgroup.controllers lists (bit per enum cgroup_controller) */
        unsigned v2_controllers;
};

struct xp_cgroup {
        struct xp_cgroup_root *root; /* borrowed */
        const struct cgroup_backend *backend;
        char *path; /* relative to each hierarchy's mount point */
};

struct bpf_insn;

/*
 * cgroup v2 device isolation (cgroup_bpf.c). The program allowing exactly these devices (and
 * access), for tests (caller frees *ret); -EINVAL names a bad device.
 */
int cgroup_bpf_device_program(const struct xp_cgroup_device *devices,
                              size_t n,
                              struct bpf_insn **ret,
                              size_t *ret_n,
                              struct xp_error *err);
/* Attaches that program to the group open at group_fd (O_RDONLY directory). -EOPNOTSUPP when
 * BPF programs cannot be loaded here. */
int cgroup_bpf_restrict_devices(int group_fd,
                                const char *group,
                                const struct xp_cgroup_device *devices,
                                size_t n,
                                struct xp_error *err);
/* Whether a device program can be loaded here: 0, or -EOPNOTSUPP with the reason. */
int cgroup_bpf_probe(struct xp_error *err);

/* The v2 unified hierarchy, relative to the root. */
#define CGROUP_V2_DIR   "sys/fs/cgroup"
#define CGROUP_FILE_MAX (64 * 1024)

/*
 * Writes value to DIR/FILE below the root (no O_CREAT: cgroupfs files exist or the controller is
 * missing). Errors name the file and the value.
 */
int cgroup_write(struct xp_cgroup_root *root,
                 const char *dir,
                 const char *file,
                 const char *value,
                 struct xp_error *err);
/* Reads DIR/FILE below the root into a new NUL-terminated string (caller frees). */
int cgroup_read(struct xp_cgroup_root *root,
                const char *dir,
                const char *file,
                char **ret,
                struct xp_error *err);
/* mkdir -p of base/path below the root; existing directories are fine. */
int cgroup_mkdir_p(struct xp_cgroup_root *root,
                   const char *base,
                   const char *path,
                   struct xp_error *err);
/* rmdir of base/path below the root; -ENOENT counts as success. */
int cgroup_rmdir(struct xp_cgroup_root *root,
                 const char *base,
                 const char *path,
                 struct xp_error *err);
/* The value of the "KEY N" line in text (memory.events, memory.oom_control). -ENODATA if none. */
int cgroup_keyed_u64(const char *text, const char *key, uint64_t *ret);
/*
 * Records in root->v1_mounts the mount point of each controller the cgroup (v1) lines of a
 * /proc/self/mountinfo text carry, and sets the mode to v1 when any does. Modifies text. -EINVAL
 * naming the line for a malformed one; -ENOMEM. On failure root may hold some mounts: callers
 * free it.
 */
int cgroup_parse_mountinfo(struct xp_cgroup_root *root, char *text, struct xp_error *err);
/* Checks limits common to both versions; -EINVAL naming the field. */
int cgroup_check_limits(const struct xp_cgroup_limits *limits, struct xp_error *err);
/* CFS quota in microseconds for cpu_millis over period_us (rounded up, at least 1000). */
uint64_t cgroup_cpu_quota(uint64_t cpu_millis, uint64_t period_us);

/*
 * The group path ("/" and below) of the hierarchy that carries controller in text, a
 * /proc/PID/cgroup ("ID:CONTROLLERS:PATH" lines), in buf. -ENOENT when no line carries it,
 * -EINVAL when its path is not absolute or does not fit.
 */
int cgroup_own_path(const char *text, const char *controller, char *buf, size_t size);

/* The thread that runs xp_cgroup_warm_moves() when asked (cgroup_warm.c); root is borrowed and
 * must outlive it. -errno of pthread_create(). */
struct cgroup_warmer;
int cgroup_warmer_start(struct xp_cgroup_root *root, struct cgroup_warmer **ret);
/* Asks for a move, and for more moves while the start asked for is under way (up to
 * cgroup_warmer_done(), 200 ms at most); asks while one runs make one more after it. group (NULL:
 * none), the start's container group, is made (xp_cgroup_create(), and its cpuset directory when
 * pinned: cgroup_v1_make_cpuset()) before the move. */
void cgroup_warmer_want(struct cgroup_warmer *w, const char *group, bool pinned);
/* cgroup_v1.c: the group's cpuset directories, only made (mkdir), where the group gets one only
 * when pinned; nothing otherwise. No cpuset file is read or written: the shim's own create fills
 * in the blank levels and its apply writes the pinning, and a check-then-write here, in another
 * process, could write the parent's CPUs over that pinning (review31 M2). -errno with err. */
int cgroup_v1_make_cpuset(struct xp_cgroup *cg, struct xp_error *err);
/* cgroup_v1.c: whether xp_cgroup_create() itself fills in a new group's cpuset files (v1 with
 * cpuset the only hierarchy mounted, so every group gets its cpuset at once): the warmer then makes
 * no group, for the same reason as above. */
bool cgroup_v1_create_writes_cpuset(const struct xp_cgroup_root *root);
/* A start that was asked for has reported back (its shim's moves are made). */
void cgroup_warmer_done(struct cgroup_warmer *w);
/* Ends and frees the thread (NULL: nothing), after the move it runs. */
void cgroup_warmer_stop(struct cgroup_warmer *w);
