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
        struct attach attach;
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

/*
 * A command run in the container (exec_helper.c), after the fork in its namespaces and cgroup:
 * a session of its own (with the terminal on fd 0 as its controlling one when tty), then the
 * container's containment, user and working directory, as shim_child_main() does them, and exec
 * of argv over the container's environment and PATH. stdio is fds 0-2 as they are. A failure is
 * one line on errfd (close-on-exec) and exit status 127. Async-signal-safe: system calls only.
 */
_Noreturn void shim_exec_child_main(const struct shim *s, char *const *argv, bool tty, int errfd);
