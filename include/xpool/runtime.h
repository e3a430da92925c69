/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The process runtime of the node agent. This file holds only the launch and record types the
 * pure pod state machine (src/agent/podsync.c) and launch builder (src/agent/launch.c) need; the
 * runtime itself is declared by its owner's version of this header.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "xpool/cgroup.h"

struct xp_container_launch {
        const char *pod_uid, *pod_namespace, *pod_name, *container;
        unsigned attempt;        /* restart count: the log file <attempt>.log */
        char *const *argv;       /* NULL-terminated; argv[0] searched in env's PATH when no '/' */
        char *const *env;        /* NULL-terminated NAME=value: exactly the container's env */
        const char *working_dir; /* NULL: "/" */
        bool set_user;           /* securityContext.runAsUser/runAsGroup */
        uid_t uid;
        gid_t gid;
        const struct xp_cgroup_limits *limits; /* NULL: no limits */
};

struct xp_container_record {
        char *pod_uid, *pod_namespace, *pod_name, *container;
        unsigned attempt;
        pid_t pid;          /* the container's main process; 0 when it never started */
        int64_t started_ns; /* CLOCK_REALTIME ns */
        bool exited;
        int exit_code;     /* exit status, or 128+signal when killed by a signal */
        int signal;        /* the signal that killed it, 0 if none */
        bool oom_killed;   /* the cgroup's OOM killer killed a process of it */
        bool start_failed; /* exec failed: exit_code 128, message says why */
        int64_t finished_ns;
        char *message; /* NULL, or e.g. `exec "pythn": No such file or directory` */
};
void xp_container_record_clear(struct xp_container_record *r);
void xp_container_records_free(struct xp_container_record *r, size_t n);
