/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Control groups for the containers the node agent runs: cgroup v2 where the machine has it
 * (cgroup.controllers at /sys/fs/cgroup with controllers listed), cgroup v1 otherwise (one
 * hierarchy per controller, found in /proc/self/mountinfo), or none. Everything is read and
 * written below a settable root directory ("/" on a real machine) through a directory fd, so
 * tests point it at a fake tree.
 *
 * Lifecycle: xp_cgroup_root_open() once; xp_cgroup_create() per container, then
 * xp_cgroup_apply(), xp_cgroup_add_pid(), xp_cgroup_oom_kills(); xp_cgroup_remove() once the
 * processes are gone; xp_cgroup_free(). A struct xp_cgroup borrows its root, which must outlive
 * it.
 */

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "xpool/error.h"

enum xp_cgroup_mode {
        XP_CGROUP_NONE,
        XP_CGROUP_V1,
        XP_CGROUP_V2,
};

/* "none", "v1", "v2"; NULL for a value outside the enum. */
const char *xp_cgroup_mode_to_string(enum xp_cgroup_mode mode);

/* Longest group path accepted (relative to the hierarchy root). */
#define XP_CGROUP_PATH_MAX 256
/* Most device rules one group may carry. */
#define XP_CGROUP_DEVICES_MAX 256

/* One device node a container may use; v1 "devices.allow" line "TYPE MAJOR:MINOR ACCESS". */
/* A device's major or minor that matches any (the "*" of devices.allow). */
#define XP_CGROUP_DEVICE_ANY UINT_MAX

struct xp_cgroup_device {
        char type;      /* 'c' (character) or 'b' (block) */
        unsigned major; /* or XP_CGROUP_DEVICE_ANY */
        unsigned minor; /* or XP_CGROUP_DEVICE_ANY */
        char access[4]; /* a non-empty subset of "rwm", NUL-terminated */
};

/* Limits for one group; zero / NULL fields leave that setting alone. */
struct xp_cgroup_limits {
        uint64_t cpu_millis;    /* CPU quota in milli-CPUs (1000 = one CPU) */
        uint64_t cpu_period_us; /* CFS period; 0 means 100000 */
        uint64_t memory_bytes;
        uint64_t pids_max;
        const char *cpuset_cpus; /* kernel list syntax, e.g. "0-3,8" */
        const char *cpuset_mems;
        /* When true: deny every device, then allow only devices[0..n_devices). */
        bool restrict_devices;
        const struct xp_cgroup_device *devices; /* borrowed for the call */
        size_t n_devices;
};

struct xp_cgroup_root;
struct xp_cgroup;

/*
 * Opens root (a directory; "/" on a real machine) and detects the cgroup mode from
 * ROOT/sys/fs/cgroup and ROOT/proc/self/mountinfo. No cgroups at all is not an error: the mode
 * is XP_CGROUP_NONE and xp_cgroup_create() fails with -EOPNOTSUPP. Caller frees *ret with
 * xp_cgroup_root_free(). -ENOENT/-ENOTDIR when root cannot be opened; -ENOMEM; -EINVAL for an
 * unreadable mountinfo line.
 */
int xp_cgroup_root_open(const char *root, struct xp_cgroup_root **ret, struct xp_error *err);
void xp_cgroup_root_free(struct xp_cgroup_root *root);
XP_DEFINE_FREEP(struct xp_cgroup_root, xp_cgroup_root_free)

enum xp_cgroup_mode xp_cgroup_root_mode(const struct xp_cgroup_root *root);
/* Whether groups can filter device access here (v1: the devices controller; v2: loading a BPF
 * device program): 0, or -EOPNOTSUPP with the reason in err. */
int xp_cgroup_device_filter_check(const struct xp_cgroup_root *root, struct xp_error *err);

/*
 * The parent of the pods' groups before each runtime had its own (xpool/<pod_uid>/<container>):
 * what a spec without "cgroup_parent" means.
 */
#define XP_CGROUP_PARENT_LEGACY "xpool"

/*
 * The group path of a pod's container: "<parent>/<pod_uid>/<container>" in a new string the
 * caller frees; parent is the runtime's (xp_runtime_cgroup_parent(): "xpool/agent-<key>"), NULL
 * for XP_CGROUP_PARENT_LEGACY. -EINVAL when a name is empty, holds '/', is "." or "..", or the
 * path is longer than XP_CGROUP_PATH_MAX.
 */
int xp_cgroup_container_path(const char *parent,
                             const char *pod_uid,
                             const char *container,
                             char **ret,
                             struct xp_error *err);

/*
 * Removes the groups directly below parent (pods' groups) that keep(name, userdata) does not
 * claim, with their subgroups, in every hierarchy (v1: also those xpool sets nothing in, where
 * an OCI runtime made the groups too), killing (SIGKILL) what still runs in them first. keep is
 * asked once per name. Returns how many such groups were removed (a group that stays busy is
 * left for a later call), or -errno of listing parent (a missing parent is 0).
 */
int xp_cgroup_reclaim(struct xp_cgroup_root *root,
                      const char *parent,
                      bool (*keep)(const char *name, void *userdata),
                      void *userdata,
                      struct xp_error *err);

/*
 * Creates the group at path (relative, '/'-separated, no "." or ".." components) in every
 * hierarchy the mode uses; existing directories are reused, so creating again after a restart
 * is fine. v1: new cpuset directories inherit their parent's cpus and mems (the kernel leaves
 * them empty, which would refuse every task). v2: the cpu, cpuset, memory and pids controllers
 * the root offers are enabled in each ancestor's cgroup.subtree_control. Caller frees *ret with
 * xp_cgroup_free(); root is borrowed and must outlive it. -EOPNOTSUPP in XP_CGROUP_NONE mode;
 * -EINVAL for a bad path; the -errno of a failed mkdir or write.
 */
int xp_cgroup_create(struct xp_cgroup_root *root,
                     const char *path,
                     struct xp_cgroup **ret,
                     struct xp_error *err);
/*
 * A handle on the group at path without creating anything (to signal, list or remove a group
 * that may be gone: those treat a missing group as empty). Same errors as xp_cgroup_create()
 * before any mkdir.
 */
int xp_cgroup_open(struct xp_cgroup_root *root,
                   const char *path,
                   struct xp_cgroup **ret,
                   struct xp_error *err);
void xp_cgroup_free(struct xp_cgroup *cg);
XP_DEFINE_FREEP(struct xp_cgroup, xp_cgroup_free)

/* The path the group was created with (borrowed from cg). */
const char *xp_cgroup_path(const struct xp_cgroup *cg);

/*
 * Writes limits into the group. Every value is checked before the first write (-EINVAL names
 * the field), so a bad value changes nothing; a write the kernel refuses stops there and its
 * -errno is returned with the file and value in err (earlier writes stay). Device filtering is
 * the v1 devices controller, or on v2 a BPF device program attached to the group (applied
 * first; -EOPNOTSUPP before any write where BPF programs cannot be loaded).
 */
int xp_cgroup_apply(struct xp_cgroup *cg,
                    const struct xp_cgroup_limits *limits,
                    struct xp_error *err);

/* Moves pid into the group (cgroup.procs of every hierarchy). -EINVAL for pid <= 0. */
int xp_cgroup_add_pid(struct xp_cgroup *cg, pid_t pid, struct xp_error *err);

/*
 * Moves the calling thread into the group it is in already (v1: the first hierarchy mounted whole,
 * its "tasks"), a move that changes nothing but takes the kernel's lock of task moves for writing:
 * when no move took it recently the call waits an RCU grace period (milliseconds), and the moves
 * of the next grace period or so after it find it warm and take microseconds
 * (src/runtime/cgroup_warm.c). -EOPNOTSUPP when not v1 or no hierarchy is mounted whole; the
 * -errno of reading proc/thread-self/cgroup or of the write.
 */
int xp_cgroup_warm_moves(struct xp_cgroup_root *root, struct xp_error *err);

/*
 * How many processes the kernel's OOM killer killed in the group: "oom_kill" of memory.events
 * (v2) or memory.oom_control (v1). -ENODATA when the file has no oom_kill line (v1 kernels
 * before 4.13); the -errno of the read.
 */
int xp_cgroup_oom_kills(struct xp_cgroup *cg, uint64_t *ret, struct xp_error *err);

/* What a group has used (xp_cgroup_usage()); has says which figures were readable. */
enum {
        XP_CGROUP_USAGE_CPU = 1u << 0,
        XP_CGROUP_USAGE_MEMORY = 1u << 1,
        XP_CGROUP_USAGE_WORKING_SET = 1u << 2,
        XP_CGROUP_USAGE_OOM = 1u << 3,
};

struct xp_cgroup_usage {
        unsigned has;
        uint64_t cpu_ns;            /* CPU time since the group was made */
        uint64_t memory_bytes;      /* memory in use, page cache included */
        uint64_t working_set_bytes; /* less the inactive file pages, as the kubelet reports */
        uint64_t oom_kills;
};

/* Reads what the group has used: 0, or -ENOENT when nothing could be read (no such group). */
int xp_cgroup_usage(struct xp_cgroup *cg, struct xp_cgroup_usage *ret);

/*
 * The processes in the group (cgroup.procs of one hierarchy: every hierarchy holds the same
 * ones), in a new array the caller frees. An empty or missing group gives *ret_n 0 (and *ret
 * NULL).
 */
int xp_cgroup_pids(struct xp_cgroup *cg, pid_t **ret, size_t *ret_n, struct xp_error *err);

/*
 * Sends sig to every process in the group, reading cgroup.procs again until a pass finds no
 * process it has not signalled yet (so children forked meanwhile get it too). Returns how many
 * processes were signalled (0 when the group is empty), or -errno.
 */
int xp_cgroup_kill(struct xp_cgroup *cg, int sig, struct xp_error *err);

/*
 * Removes the group's directory in every hierarchy (the kernel refuses while processes remain:
 * -EBUSY). A directory already gone counts as removed. Ancestors are left in place.
 */
int xp_cgroup_remove(struct xp_cgroup *cg, struct xp_error *err);

/*
 * Whether path has a group in the first hierarchy xp_cgroup_remove() visits (v2's tree, or the
 * first v1 controller mounted apart): one lookup that spares a caller the rmdir in each hierarchy
 * for a group that was never made there. false on a machine without cgroups.
 */
bool xp_cgroup_exists(struct xp_cgroup_root *root, const char *path);
