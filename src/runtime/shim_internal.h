/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Shared between the shim (shim.c) and the container process it forks (shim_child.c). */

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "attach_internal.h"
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
        bool stdin, stdin_once; /* the container's stdin is served on the attach socket */
        bool tty;               /* its stdio is a terminal the shim keeps the master of */
        uid_t user;
        gid_t group;
        gid_t *groups; /* supplementary groups (owned; NULL: none) */
        size_t n_groups;
        struct contain_plan plan;
        /* state */
        bool pidns; /* the shim is the init (pid 1) of the container's pid namespace */
        pid_t self; /* the shim's pid as the host sees it (getpid() is 1 in its namespace) */
        struct xp_cgroup_root *root;
        struct xp_cgroup *cg;
        bool have_oom;
        uint64_t oom_before;
        struct logwrite log;
        struct attach attach;
        json_t *oci;      /* the spec's "oci" object (borrowed): an OCI runtime runs it */
        pid_t child;      /* the container's main process, in the shim's pid namespace */
        pid_t child_host; /* the same as the host sees it (what the records hold) */
        int64_t started_ns;
};

/* Reads DIR/spec.json into s (its strings borrowed from s->spec) and prepares the containment
 * plan. -errno with err naming the file. The caller frees s->argv, s->env, s->spec and the plan. */
int shim_load_spec(struct shim *s, struct xp_error *err);

/*
 * The container's process after the fork: writes its host pid (a pid_t) to errfd, waits on
 * sync_fd until the shim has put it in its cgroup, contains itself (contain_child.c), takes the
 * user, working directory and stdio (in_fd -1: stdin is /dev/null), and execs. A failure is written
 * to errfd as one line
 * ("mount \"/proc\": Operation not permitted") and ends it with 127; errfd is close-on-exec, so
 * EOF after the pid means the exec happened. Async-signal-safe: system calls only.
 */
_Noreturn void
shim_child_main(const struct shim *s, int sync_fd, int errfd, int in_fd, int out_fd, int err_fd);

/* In a child about to unblock signals and exec: the handlers it shares with the shim back to
 * SIG_DFL, and SIGPIPE too (posix_spawn's reset). Async-signal-safe. */
void shim_child_default_signals(void);

/*
 * fn(arg) in a new process, a child of ours (SIGCHLD at its end): its pid, or -1 with errno. The
 * process shares our memory (CLONE_VM on a stack of stack_size bytes of its own, as posix_spawn()
 * does for its exec) instead of a fork's copy: on the paravirtual development VM a fork's
 * page-table copy and the copy-on-write faults after it cost ~2 ms of CPU. So either the child
 * execs or ends soon and runs system calls only, with what it reads left as it is meanwhile (the
 * container's process), or we end at once and it carries on alone (the detach). Sanitizer builds,
 * whose per-thread state the child would share, fork: fn's return is then the child's exit status.
 */
pid_t shim_clone(int (*fn)(void *), void *arg, size_t stack_size);
/* fn in a child that shares our memory and stops us until it exec'd or ended (vfork's contract,
 * for a child that only execs): its pid, or -1 with errno. */
pid_t shim_vfork(int (*fn)(void *), void *arg);

/* shim_child_main()'s arguments. */
struct shim_child_args {
        const struct shim *s;
        int sync_fd, errfd, in_fd, out_fd, err_fd;
};

/*
 * Starts shim_child_main() in a new process (shim_clone()); its pid, or -1 with errno. The child
 * reads a and what it points to (of s: plan, argv, env, user, working directory) while it runs
 * beside us, so the caller keeps a in its own frame and both unchanged until EOF on a->errfd or
 * the child's end.
 */
pid_t shim_child_start(const struct shim_child_args *a);

/* ---- shim.c, for the OCI path (oci_shim.c) -------------------------------------------------- */

/* Creates the container's group and applies the spec's limits (none without cgroups). */
int shim_setup_cgroup(struct shim *s, struct xp_error *err);
/* Opens the container's group for a runtime that makes it and applies the limits itself (a
 * one-call start): nothing is made or written here; the shim checks afterwards that the runtime
 * put the container there. */
int shim_open_cgroup(struct shim *s, struct xp_error *err);
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
/* Serves the attach socket (without one the container runs as well): stdin_fd (taken; -1: none)
 * is the container's stdin, or with a terminal (tty: its master, borrowed) a copy of that. */
void shim_attach_open(struct shim *s, int stdin_fd, int tty);
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
/* oci_shim_pin.c: config.json's mounts from below pod_dir (the pod's emptyDirs and files, which
 * the pod writes) or from one of volume_sources (the volumes' checked real paths) bound from the
 * very file the agent checked, opened here without following a link, through a mount point in
 * the bundle. -EPERM + err when a link appeared on such a path. */
int oci_shim_pin_volumes(const char *bundle,
                         const char *pod_dir,
                         const json_t *volume_sources,
                         json_t *config,
                         struct xp_error *err);

/*
 * A command run in the container (exec_helper.c), after the fork in its namespaces and cgroup:
 * a session of its own (with the terminal on fd 0 as its controlling one when tty), then the
 * container's containment, user and working directory, as shim_child_main() does them, and exec
 * of argv over the container's environment and PATH. stdio is fds 0-2 as they are. A failure is
 * one line on errfd (close-on-exec) and exit status 127. Async-signal-safe: system calls only.
 */
_Noreturn void shim_exec_child_main(const struct shim *s, char *const *argv, bool tty, int errfd);

/* ---- tty.c ---------------------------------------------------------------------------------- */

/* A copy of env (its strings borrowed) with TERM=xterm added when tty and env sets no TERM, as
 * containerd does for a terminal; NULL when out of memory. The caller frees the array. */
char **shim_env_for_tty(char *const *env, bool tty);

/* The strings of JSON array a, borrowed from it, NULL-terminated; NULL: not an array of strings
 * or out of memory. The caller frees the array only. */
char **shim_string_array(const json_t *a);

/* An OCI container's terminal (tty: true): the runtime connects to path (--console-socket) and
 * sends the master. -errno with err; shim_console_close() also after a failure. */
struct shim_console {
        int dir_fd, listen_fd;
        char path[108];
};
int shim_console_open(const struct shim *s, struct shim_console *c, struct xp_error *err);
/* The master the runtime sent during its create (non-blocking, close-on-exec). */
int shim_console_receive(struct shim_console *c, int *ret_master, struct xp_error *err);
void shim_console_close(struct shim_console *c);
