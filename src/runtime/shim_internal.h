/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Shared between the shim (shim.c) and the container process it forks (shim_child.c). */

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "contain_internal.h"
#include "runtime_internal.h"
#include "xpool/cgroup.h"

struct shim {
        const char *dir;
        json_t *spec;
        int notify;
        int lock; /* the start lock, held until the start is recorded (runtime_internal.h) */
        /* from the spec, borrowed from it */
        const char *uid, *container, *events_dir, *working_dir;
        unsigned attempt;
        char **argv, **env;
        const char *path; /* PATH of env, or DEFAULT_PATH */
        bool set_user;
        uid_t user;
        gid_t group;
        struct contain_plan plan;
        /* state */
        bool pidns; /* the shim is the init (pid 1) of the container's pid namespace */
        pid_t self; /* the shim's pid as the host sees it (getpid() is 1 in its namespace) */
        struct xp_cgroup_root *root;
        struct xp_cgroup *cg;
        bool have_oom;
        uint64_t oom_before;
        struct logwrite log;
        json_t *oci;      /* the spec's "oci" object (borrowed): an OCI runtime runs it */
        pid_t child;      /* the container's main process, in the shim's pid namespace */
        pid_t child_host; /* the same as the host sees it (what the records hold) */
        int64_t started_ns;
};

/*
 * The container's process after the fork: writes its host pid (a pid_t) to errfd, waits on
 * sync_fd until the shim has put it in its cgroup, contains itself (contain_child.c), takes the
 * user, working directory and stdio, and execs. A failure is written to errfd as one line
 * ("mount \"/proc\": Operation not permitted") and ends it with 127; errfd is close-on-exec, so
 * EOF after the pid means the exec happened. Async-signal-safe: system calls only.
 */
_Noreturn void
shim_child_main(const struct shim *s, int sync_fd, int errfd, int out_fd, int err_fd);

/* ---- shim.c, for the OCI path (oci_shim.c) -------------------------------------------------- */

/* Creates the container's group and applies the spec's limits (none without cgroups). */
int shim_setup_cgroup(struct shim *s, struct xp_error *err);
/* Reaps every child that has exited. */
void shim_reap_all(void);
/* Kills what is left of the container (its pid namespace, its group, the shim's children). */
void shim_kill_rest(struct shim *s);
/* Removes the group once it is empty. */
void shim_remove_cgroup(struct shim *s);
/* The start is recorded: drops the start lock and reports "ok" (or announces it). */
void shim_start_done(struct shim *s);
/* exit.json, written atomically, and the exit announced. */
int shim_write_exit(struct shim *s,
                    int exit_code,
                    int sig,
                    bool oom,
                    bool start_failed,
                    const char *message,
                    struct xp_error *err);
/* running.json (pids and start times of the container and the shim). */
int shim_write_running(struct shim *s, struct xp_error *err);
/* Writes the container's output as CRI lines until it ended; returns its wait status. */
int shim_supervise(struct shim *s, int sigfd, int out_fd, int err_fd);
/* The release marker: from here the container may run. */
int shim_release_marker(struct shim *s, struct xp_error *err);

/* ---- oci_shim.c ----------------------------------------------------------------------------- */

/* The whole life of an OCI container: root file system, group, create, release, start, supervise,
 * delete, exit. As run() for the process runtime. */
int oci_shim_run(struct shim *s, struct xp_error *err);
/* oci_user.c: the container's user resolved in its root file system (config.json's process.user
 * and HOME). -errno + err ("unable to find user app: no matching entries in passwd file"). */
int oci_shim_user(struct shim *s, const char *rootfs, json_t *config, struct xp_error *err);
