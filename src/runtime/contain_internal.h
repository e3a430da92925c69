/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The shim's side of the containment model (include/runtime/xpool/contain.h): a plan prepared
 * before the shim forks (contain_plan.c: reading the spec, resolving paths, compiling the seccomp
 * filter), applied by the forked child before it execs (contain_child.c: system calls only, so it
 * stays async-signal-safe).
 */

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "xpool/contain.h"
#include "xpool/error.h"

/* The spec's "contain" object (written by process.c, read by the shim). */
#define CONTAIN_SPEC_KEY "contain"

/* A directory (or file) of the node bound read-only into the container's mount namespace. */
struct contain_bind {
        char *source;      /* resolved before the fork */
        char *destination; /* absolute; its parent must exist, it is made when missing */
        bool dir;          /* source is a directory (else a file) */
        bool read_only;    /* readOnly, and always for the agent's files */
        bool shared;   /* a node path shared with every pod (--share): bound with its submounts */
        int src_fd;    /* the child's: the source opened, before /tmp is replaced */
        int tree_fd;   /* the child's: the bound mount, until the node turns read-only */
        dev_t src_dev; /* the child's: the source's, to tell what lies below it */
        ino_t src_ino;
};

#define CONTAIN_OWN_DIRS_MAX 4

struct contain_plan {
        bool namespaces; /* own mount and cgroup namespaces (the pid one is the shim's) */
        bool privileged;
        bool read_only_root;
        bool no_new_privs;
        bool set_caps; /* false where the shim has no capability to give (not root) */
        bool cgroup2;  /* mount the cgroup2 file system read-only (v2: the pod's own group) */
        struct xp_caps caps;
        int last_cap; /* the kernel's /proc/sys/kernel/cap_last_cap */
        void *filter; /* struct sock_filter[filter_len]; NULL: no seccomp */
        size_t filter_len;
        char **hide;    /* the node's secrets, resolved, ordered for mounting */
        bool *hide_dir; /* hide[i] is a directory (else a file, covered by /dev/null) */
        size_t n_hide;
        size_t n_hide_all; /* entries of hide to free (the first n_hide are used) */
        int netns_fd;      /* the network namespace to join (opened before the fork); -1: none */
        char *netns;       /* its path, for messages */
        int ipc_fd;        /* the pod's IPC namespace to join, like netns_fd; -1: none (fd 0 is a
                            * namespace where the shim's stdin was closed) */
        char **detach;     /* NULL-terminated: mount points the container's namespace drops */
        bool sysfs;        /* a sysfs of the joined network namespace (its interfaces) on /sys */
        struct contain_bind *binds; /* the pod's volumes (contain_binds_json()) */
        size_t n_binds;
        /* the mount options of its own /tmp and /var/tmp: the size of each is half the
         * container's memory limit ("tmp_size" in the spec), else half the node's memory
         * (CONTAIN_TMP_DEFAULT) */
        char tmp_options[64];
        /* a volume's mount point is missing directly in the node's / (contain_root.c) */
        bool own_root;
        /* directories below /run the node has, a component below which a volume's mount point
         * needs is missing: a tmpfs of the container's own each, shallower first (contain_root.c)
         */
        char *own_dirs[CONTAIN_OWN_DIRS_MAX];
        size_t n_own_dirs;
        /* the node's read-only mounts at or below a share, read-only again (contain_share.c) */
        char **share_ro;
        size_t n_share_ro;
};
/* A plan that holds nothing (no namespace fd: fd 0 is a valid one), for contain_plan_done(). */
#define CONTAIN_PLAN_NONE ((struct contain_plan){.netns_fd = -1, .ipc_fd = -1})

/* The size of a container's own /tmp and /var/tmp without a memory limit: tmpfs' own default,
 * named so that the bound is the runtime's choice, not the kernel's. */
#define CONTAIN_TMP_DEFAULT "50%"

/* The fd on which the runtime hands the shim the compiled seccomp filter (contain_filter_memfd()),
 * beside RUNTIME_NOTIFY_FD and RUNTIME_LOCK_FD (runtime_internal.h). */
#define CONTAIN_FILTER_FD 5

/* The JSON the runtime writes for one container: c plus its own settings; filter_fd: the
 * compiled seccomp filter comes on CONTAIN_FILTER_FD (else the shim compiles it). NULL: -ENOMEM. */
json_t *contain_spec_json(const struct xp_contain *c,
                          bool namespaces,
                          bool cgroup2,
                          const char *const *hide,
                          const char *const *detach,
                          bool filter_fd);
/* The spec's "binds" array of n mounts: source (sources[i], resolved with its subPath; without
 * sources m's source + sub_path), destination, read_only, host (a hostPath). NULL: -ENOMEM. */
struct xp_container_mount;
json_t *contain_binds_json(const struct xp_container_mount *m, char *const *sources, size_t n);
/* A JSON array of the strings of v (NULL-terminated; NULL: empty), for the spec. NULL: -ENOMEM. */
json_t *contain_strings_json(const char *const *v);
/*
 * The default filter for effective (cut to contain_known_caps()), compiled into a sealed memfd
 * (caller closes): the runtime compiles it once per set, not each shim, and hands it to each on
 * CONTAIN_FILTER_FD rather than in the spec, which the runtime reads again at every list (as hex
 * text the filter was four fifths of the spec, and of the time to parse it). -errno + err.
 */
int contain_filter_memfd(uint64_t effective, int *ret_fd, struct xp_error *err);

/* Reads the spec's "contain" object and prepares everything the child needs. -errno + err. */
int contain_plan_prepare(struct contain_plan *p, const json_t *spec, struct xp_error *err);
/* Whether the spec's shim gets its seccomp filter on CONTAIN_FILTER_FD, and for which effective
 * set (what a process joining the container must be handed too). */
bool contain_spec_filter_fd(const json_t *spec, uint64_t *ret_effective);
void contain_plan_done(struct contain_plan *p);

/*
 * In the child, between fork and exec. On failure each returns -errno and sets *what (a static
 * description of the step) and *arg (a path or name, borrowed from the plan or static).
 *
 * mounts: the pod's network namespace, its own mount namespace, private propagation, the
 * detached mount points gone, a read-only root when asked, /proc of its pid namespace, a
 * read-only /sys with an empty /sys/fs/cgroup, the masked and read-only paths, the pod's file
 * volumes bound read-only, the node's secrets hidden. Nothing of it depends on the child's
 * groups, so it runs while the shim moves the child into them.
 */
int contain_child_mounts(const struct contain_plan *p, const char **what, const char **arg);
/* Once the child joined its groups, after contain_child_mounts(): its own cgroup namespace (its
 * root the container's group) and, on v2 unless privileged, that group read-only on
 * /sys/fs/cgroup. */
int contain_child_cgroup_namespace(const struct contain_plan *p,
                                   const char **what,
                                   const char **arg);
/* After contain_child_mounts(), unless privileged: a devpts of the container's own on /dev/pts
 * (with /dev/ptmx its ptmx), since the node's holds every terminal of the node (an admin's ssh
 * session), which a process on the node's /dev could open, read and write; on /dev/console the
 * container's terminal (tty_fd, opened on the node's devpts before the fork; -1: none), else
 * /dev/null. */
int contain_child_own_terminals(const struct contain_plan *p,
                                int tty_fd,
                                const char **what,
                                const char **arg);

/* contain_bind.c: the spec's "binds" (and "share", the node's paths shared with every pod) resolved
 * into p (before the fork; they need the container's own mount namespace), freed by
 * contain_binds_free; applied in the child. */
int contain_plan_binds(struct contain_plan *p,
                       const json_t *list,
                       const json_t *shares,
                       struct xp_error *err);
void contain_binds_free(struct contain_plan *p);
int contain_child_binds(const struct contain_plan *p,
                        const int *tmp,
                        size_t n_tmp,
                        const char **what,
                        const char **arg);
/* In the child: each bind's source opened (b->src_fd) while the node's /tmp is still in view. */
int contain_child_bind_sources(const struct contain_plan *p, const char **what, const char **arg);
/* In the child, once the node is read-only: the writable binds made writable again, every
 * bind's fd closed. */
int contain_child_binds_writable(const struct contain_plan *p,
                                 bool node_read_only,
                                 const char **what,
                                 const char **arg);
/* contain_mountpoint.c: path's mount point opened O_PATH, made where missing (only below the
 * container's own /tmp and /var/tmp, tmp[n_tmp] (-1: none), p's shares, in its own root
 * (p->own_root), in its own directories below /run (p->own_dirs) or on the token path, else
 * -EROFS), with no symbolic link followed that anyone but the node's root could have planted
 * (-ELOOP): fd or -errno. */
int contain_mount_point(
    const struct contain_plan *p, const char *path, bool dir, const int *tmp, size_t n_tmp);
/* contain_mountpoint.c: whether path is the service account token's directory, the one mount
 * point made on the node where it is missing. */
bool contain_is_token_path(const char *path);
/* contain_share.c: the node's read-only mounts at or below a share (p->share_ro), before the
 * fork; in the child, once each share was made writable again with its submounts, those made
 * read-only again; freed by contain_share_read_only_free(). -errno (+ err). */
int contain_plan_share_read_only(struct contain_plan *p, struct xp_error *err);
int contain_child_share_read_only(const struct contain_plan *p,
                                  const char **what,
                                  const char **arg);
void contain_share_read_only_free(struct contain_plan *p);
/* contain_root.c: whether a volume of p needs a mount point directly in / that the node lacks
 * (before the fork), and in the child then a root of the container's own holding the node's
 * entries, where it is made (before the binds' sources are opened). */
bool contain_needs_own_root(const struct contain_plan *p);
/* Whether a root of its own is refused, given mount_setattr's errno: without it (ENOSYS, before
 * Linux 5.12) the node's entries bound into that root would stay writable. */
bool contain_own_root_refused(int mount_setattr_errno);
int contain_child_own_root(const struct contain_plan *p, const char **what, const char **arg);
/* contain_root.c: before the fork, p->own_dirs (-ENOMEM), freed by contain_own_dirs_free(); in the
 * child, after the own root, each made a tmpfs holding the node's entries of it, so the missing
 * mount points below are made there and the node's /run gains nothing. */
int contain_plan_own_dirs(struct contain_plan *p);
void contain_own_dirs_free(struct contain_plan *p);
int contain_child_own_dirs(const struct contain_plan *p, const char **what, const char **arg);
/* Before the user changes: the bounding set, ambient cleared, and the seccomp filter when it
 * needs CAP_SYS_ADMIN to be loaded (no no_new_privs). */
int contain_child_before_user(const struct contain_plan *p, const char **what, const char **arg);
/* After the user changed: effective, permitted, inheritable and ambient sets, no_new_privs. */
int contain_child_after_user(const struct contain_plan *p, const char **what, const char **arg);
/* Last, right before exec when no_new_privs is set: the seccomp filter. */
int contain_child_seccomp_last(const struct contain_plan *p, const char **what, const char **arg);
