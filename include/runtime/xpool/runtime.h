/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The process runtime of the node agent: each container runs under its own shim process
 * (`xpool __shim`), the init of the container's pid namespace, which puts it in a cgroup with its
 * limits, contains it (include/runtime/xpool/contain.h: namespaces, the node's secrets hidden,
 * capabilities, no_new_privs, seccomp), writes its stdout/stderr to CRI log files, waits for it,
 * and records how it ended. Shims outlive the agent, so an agent that
 * restarts finds its containers again with xp_runtime_list(). Everything is kept in files:
 *
 *   STATE/<pod uid>/<container>/spec.json     the launch (written by xp_runtime_start)
 *   STATE/<pod uid>/<container>/running.json  pids and start times (written by the shim)
 *   STATE/<pod uid>/<container>/exit.json     how it ended (written once, atomically)
 *   STATE/.events/                            the shim creates a file here when a container ends
 *   LOGS/<ns>_<pod>_<uid>/<container>/<attempt>.log[.N]  (the live log 0440 once complete)
 *
 * Lifecycle: xp_runtime_open(), then any of the calls below from one thread at a time or from
 * several (the runtime serializes them), then xp_runtime_free(), which leaves containers running.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "xpool/cgroup.h"
#include "xpool/contain.h"
#include "xpool/error.h"

struct xp_runtime;

/* Where the agents of one machine keep their pods' namespace pins: RUN_DIR/<agent key>/ipc etc. */
#define XP_RUNTIME_RUN_DIR "/run/xpool"
/* The IPC pins' directory when no ipc_dir is given, shared by every runtime that uses it (the
 * agent's default before it had one per agent: a pod's pin found there is still its own). */
#define XP_RUNTIME_IPC_DIR XP_RUNTIME_RUN_DIR "/ipc"

struct xp_runtime_options {
        const char *state_dir;   /* DATA/containers: created when missing */
        const char *log_dir;     /* DATA/logs: created when missing */
        const char *shim_exe;    /* executable started as the shim (argv: shim_exe "__shim" ...);
                                    NULL: xpool-shim beside /proc/self/exe, else /proc/self/exe.
                                    Both call xp_shim_main(). */
        const char *cgroup_root; /* NULL: "/" (see cgroup.h) */
        uint64_t log_max_bytes;  /* rotate at this size; 0: 10 MiB */
        unsigned log_max_files;  /* rotated files kept per attempt; 0: 1 */
        /* Paths no container may see (the node's secrets: the agent's data directory, token and
         * kubeconfig files, the server's data directory), NULL-terminated, absolute; copied.
         * Resolved at each start, so a path made later is hidden too; state_dir and log_dir are
         * always hidden. */
        const char *const *hide_paths;
        /* Where OCI containers' CDI devices are looked up (xp_cdi_resolve()); NULL: XP_CDI_DIR. */
        const char *cdi_dir;
        /* Where pods' IPC namespaces are pinned (a bind mount per pod, as CRI-O's pinns); NULL:
         * XP_RUNTIME_IPC_DIR. */
        const char *ipc_dir;
        /* Mount points no container's mount namespace keeps a copy of (detached from it), NULL-
         * terminated, absolute; copied: the directory of the pods' network namespaces, whose
         * mounts would otherwise keep every pod's namespace alive while a container lives. */
        const char *const *detach_paths;
        /* The node's paths every process container sees as the node has them and may write
         * (the agent's --share), NULL-terminated, absolute; copied. The rest of the node is
         * read-only to an unprivileged process container, its /tmp and /var/tmp its own. */
        const char *const *share_paths;
};

/*
 * Creates the directories when missing, detects cgroups (a machine without writable cgroups is
 * not an error: see xp_runtime_warning()). Caller frees *ret with xp_runtime_free(). -errno with
 * err naming the directory on failure.
 */
int xp_runtime_open(const struct xp_runtime_options *options,
                    struct xp_runtime **ret,
                    struct xp_error *err);
/* Containers keep running. NULL is fine. */
void xp_runtime_free(struct xp_runtime *rt);
XP_DEFINE_FREEP(struct xp_runtime, xp_runtime_free)

/* The cgroup mode containers run under: XP_CGROUP_NONE when cgroups are missing or not writable. */
enum xp_cgroup_mode xp_runtime_cgroup_mode(const struct xp_runtime *rt);

/* What containers can be isolated with on this machine (xp_runtime_isolation()). */
enum xp_isolation {
        XP_ISOLATION_CGROUPS = 1 << 0,      /* limits; killing by cgroup */
        XP_ISOLATION_DEVICES = 1 << 1,      /* the device filter (v1 devices, v2 BPF) */
        XP_ISOLATION_NAMESPACES = 1 << 2,   /* pid, mount and cgroup namespaces: the node's
                                               secrets hidden, the whole process tree killed */
        XP_ISOLATION_CAPABILITIES = 1 << 3, /* capability sets (the agent is root) */
        XP_ISOLATION_SECCOMP = 1 << 4,      /* the seccomp filter */
};
#define XP_ISOLATION_ALL                                                                           \
        (XP_ISOLATION_CGROUPS | XP_ISOLATION_DEVICES | XP_ISOLATION_NAMESPACES |                   \
         XP_ISOLATION_CAPABILITIES | XP_ISOLATION_SECCOMP)
/* The enum xp_isolation bits this runtime has (XP_ISOLATION_ALL: nothing is degraded). */
unsigned xp_runtime_isolation(const struct xp_runtime *rt);
/* Why isolation is degraded, one sentence per missing part ("no cgroups (...): containers run
 * without limits; ..."), NULL if it is not. Borrowed from rt. */
const char *xp_runtime_warning(const struct xp_runtime *rt);

/* ---- OCI containers (src/runtime/oci*.c, docs/containers.md) ------------------------------- */

/* What a volume of an OCI container is on the node. */
enum xp_volume_kind {
        XP_VOLUME_HOST_PATH,        /* a path of the node (source) */
        XP_VOLUME_EMPTY_DIR,        /* a directory of the pod's own, kept while the pod is here */
        XP_VOLUME_EMPTY_DIR_MEMORY, /* the same on a tmpfs (emptyDir medium Memory) */
        XP_VOLUME_FILES, /* configMap, secret, projected: the agent's directory of their files
                            (source, below its hidden data directory), always read-only */
};

/* One volume mount of an OCI container, as the pod's volumeMounts says. */
struct xp_container_mount {
        enum xp_volume_kind kind;
        const char *volume;      /* the pod's name of the volume: an emptyDir's directory */
        const char *source;      /* hostPath: the node's path (absolute, normalized); files:
                                    the agent's directory of them */
        const char *allowed;     /* hostPath: the allowed prefix that admitted it; the runtime
                                    checks that the resolved path (symbolic links followed) is
                                    still below it */
        const char *host_type;   /* hostPath: "", DirectoryOrCreate, Directory, FileOrCreate,
                                    File, Socket, CharDevice, BlockDevice (NULL: "") */
        uint64_t size_bytes;     /* a memory emptyDir's sizeLimit (0: tmpfs' default) */
        const char *sub_path;    /* NULL, or a relative path below the volume */
        const char *destination; /* absolute, in the container */
        bool read_only;
        const char *propagation; /* NULL: private; "rslave" (HostToContainer), "rshared" */
};

/* The user of an OCI container, resolved in its root file system when it has names. */
struct xp_container_user {
        bool uid_set, gid_set; /* runAsUser, runAsGroup (the pod's) */
        uid_t uid;
        gid_t gid;
        const char *image_user; /* without runAsUser: the image's User ("app", "1000:staff", ...);
                                   NULL or "": root */
        const gid_t *supplemental; /* the pod's supplementalGroups */
        size_t n_supplemental;
};

struct xp_container_oci {
        const char *runtime_class; /* the runtime class (names the runtime's state directory) */
        const char *runtime_path;  /* the OCI runtime executable: crun, runc, runsc, ... */
        char *const *layers;       /* the image's unpacked layers, bottom first, NULL-terminated */
        const char *image;         /* the image, for messages */
        const char *image_id;      /* what the container's status gives as its imageID (kept
                                      with its record: xp_container_record.image_id) */
        const char *image_ref;     /* what the container's status gives as its image, the
                                      reference as resolved (xp_container_record.image_ref) */
        struct xp_container_user user;
        const char *hostname; /* the pod's host name */
        /* SUBDOMAIN.NAMESPACE.svc.cluster.local when the pod names a subdomain, else NULL: its
         * /etc/hosts line then carries the FQDN first, as the kubelet writes it */
        const char *host_domain;
        const char *pod_ip; /* the pod's address for /etc/hosts; NULL: 127.0.1.1 */
        const char *netns;  /* the pod's network namespace (a path); NULL: the node's */
        const struct xp_container_mount *mounts;
        size_t n_mounts;
        char *const *cdi_devices; /* fully qualified CDI device names, NULL-terminated (or NULL) */
        const char *apparmor;     /* NULL: the runtime's default profile where AppArmor is
                                     enabled; "unconfined"; else a profile loaded on the node */
};

struct xp_container_launch {
        const char *pod_uid, *pod_namespace, *pod_name, *container;
        unsigned attempt;        /* restart count: the log file <attempt>.log */
        char *const *argv;       /* NULL-terminated; argv[0] searched in env's PATH
                                    when it has no '/' */
        char *const *env;        /* NULL-terminated NAME=value: exactly the
                                    container's env */
        const char *working_dir; /* NULL: "/" */
        bool set_user;           /* securityContext.runAsUser/runAsGroup */
        uid_t uid;
        gid_t gid;
        const struct xp_cgroup_limits *limits; /* NULL: no limits */
        /* NULL: xp_contain_default(). What this machine cannot apply (xp_runtime_isolation())
         * is left out, as xp_runtime_warning() says. */
        const struct xp_contain *contain;
        /* NULL: a process of the node (the process runtime). Else a container run by an OCI
         * runtime from its image's layers: argv, env and working_dir are the container's own
         * (the image's config applied), set_user/uid/gid are ignored for oci->user; it joins
         * contain->netns as the process would. */
        const struct xp_container_oci *oci;
        /* spec.containers[].stdin: the container's stdin is a pipe that attached clients write
         * to (else /dev/null); stdin_once: it is closed when the first such client is done */
        bool stdin, stdin_once;
        /* spec.containers[].tty: the container's stdio is a terminal whose master its shim
         * keeps (output to the log as stdout, attach relays it, resize sets its size) */
        bool tty;
        /* the process runtime (oci NULL): the pod's configMap, secret, projected and downwardAPI
         * volumes (XP_VOLUME_FILES), bound read-only at their destination in the container's own
         * mount namespace; an OCI container has its mounts in oci */
        const struct xp_container_mount *mounts;
        size_t n_mounts;
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
        bool config_error; /* never from the runtime: the agent refused to start it (its
                              securityContext), exited, message says why */
        int64_t finished_ns;
        char *message;   /* NULL, or e.g. `exec "pythn": No such file or directory` */
        char *image_id;  /* the launch's oci->image_id; NULL: a process of the node */
        char *image_ref; /* the launch's oci->image_ref; NULL: a process of the node */
};
/* Frees the strings of r and zeroes it. */
void xp_container_record_clear(struct xp_container_record *r);
/* Clears r[0..n) and frees the array. NULL is fine. */
void xp_container_records_free(struct xp_container_record *r, size_t n);

/*
 * Starts the shim, which starts the container and outlives the agent. Returns once the
 * container's process has exec'd (or failed to: then 0 with start_failed set). The shim puts the
 * process in its cgroup (xp_cgroup_container_path(uid, container)) with limits before exec, in
 * its own pid, mount and cgroup namespaces (the shim is the pid namespace's init), contains it
 * (contain), sets user, working dir, env; stdout/stderr to the log; records the exit. -EEXIST
 * when that container is already running (an exited record of it is replaced); -errno + err
 * otherwise (nothing left behind). *ret (caller clears) is only set on success.
 */
int xp_runtime_start(struct xp_runtime *rt,
                     const struct xp_container_launch *launch,
                     struct xp_container_record *ret,
                     struct xp_error *err);
/* Sends sig to every process of the container (its cgroup, else its process group; SIGKILL
 * also to its main process, whose end makes the shim kill the rest of its pid namespace).
 * -ESRCH when none runs. */
int xp_runtime_kill(struct xp_runtime *rt,
                    const char *pod_uid,
                    const char *container,
                    int sig,
                    struct xp_error *err);
/*
 * Every container in state_dir, running or exited (re-adoption after an agent restart), sorted
 * by pod uid and container. A container whose shim died without recording an exit is reported
 * (and recorded) as exited with a message, after its remaining processes are killed. Caller
 * frees *ret with xp_container_records_free(). Drains the event fd.
 */
int xp_runtime_list(struct xp_runtime *rt,
                    struct xp_container_record **ret,
                    size_t *ret_n,
                    struct xp_error *err);
/*
 * The pods of the containers that exited since the last call or xp_runtime_list(): their uids,
 * sorted, each once (caller frees each and the array). Drains the event fd. A caller keeping the
 * records of xp_runtime_list() reads just these again (xp_runtime_list_pod()): an exit costs
 * its pod's containers, not every container on the node.
 */
int xp_runtime_take_exits(struct xp_runtime *rt,
                          char ***ret_uids,
                          size_t *ret_n,
                          struct xp_error *err);
/* The containers of one pod, as xp_runtime_list() reports them (none: *ret_n 0). */
int xp_runtime_list_pod(struct xp_runtime *rt,
                        const char *pod_uid,
                        struct xp_container_record **ret,
                        size_t *ret_n,
                        struct xp_error *err);
/* Readable (poll POLLIN) when a container may have exited since the last xp_runtime_list().
 * Borrowed from rt. */
int xp_runtime_event_fd(const struct xp_runtime *rt);
/* Forgets an exited container (its state and cgroup; logs stay). -EBUSY while it runs;
 * -ENOENT when unknown. */
int xp_runtime_remove(struct xp_runtime *rt,
                      const char *pod_uid,
                      const char *container,
                      struct xp_error *err);
/* Removes the pod's log directory (when the pod is deleted). Missing is fine. */
int xp_runtime_remove_logs(struct xp_runtime *rt,
                           const char *pod_namespace,
                           const char *pod_name,
                           const char *pod_uid,
                           struct xp_error *err);
/*
 * Why OCI containers cannot run here, or run with less (no overlayfs; AppArmor not enabled, or
 * its profile not loaded), one sentence each; NULL when nothing is missing. Borrowed from rt.
 */
const char *xp_runtime_oci_warning(const struct xp_runtime *rt);

/*
 * Removes what a pod left on the node beyond its containers (its emptyDir volumes, its IPC
 * namespace, its hosts files), once it is gone from the server. Its containers must be removed
 * first: -EBUSY while one has state. Missing is fine.
 */
int xp_runtime_remove_pod(struct xp_runtime *rt, const char *pod_uid, struct xp_error *err);
/*
 * Lets the IPC namespace of a pod that is over go (its pin unmounted and removed), as the
 * kubelet's sandbox stops when the pod is terminal: kept until the pod's deletion, the pins of
 * finished pods held their namespaces (and what their message queues and shared memory hold,
 * counted against the user's limits) for as long as the pods were kept. Missing is fine; -EINVAL
 * for a bad uid.
 */
int xp_runtime_release_pod_ipc(struct xp_runtime *rt, const char *pod_uid, struct xp_error *err);

/*
 * Asks for a task move that changes nothing (xp_cgroup_warm_moves()) on a thread of the
 * runtime's own, made at the first call, and returns at once: called when a container's start is
 * known, ahead of the work before it, the kernel's wait for a grace period that an idle node's
 * first move pays overlaps that work rather than the shim's start. The container's group (pod_uid
 * and container; NULL: none), its cpuset directory too when pinned, is made on that thread before
 * the move: the move holds the kernel's cgroup lock through the wait, which a group's mkdir needs,
 * so the shim finds it made. A group made for a start that never comes is reclaimed with the
 * pod's (xp_runtime_reclaim_cgroups()). Nothing without v1 cgroups.
 */
void xp_runtime_warm_moves(struct xp_runtime *rt,
                           const char *pod_uid,
                           const char *container,
                           bool pinned);
/* The start asked for above will not come now (held at a gate): its warming ends, rather than
 * running its whole hold again at each retry of a held start. The asks are counted, not owned: an
 * ask left open (a start that failed before its shim) ends with the hold's 200 ms bound. */
void xp_runtime_warm_moves_cancel(struct xp_runtime *rt);

/*
 * The parent of this runtime's pods' groups ("xpool/agent-<16 hex digits>", a hash of the state
 * directory's real path: the same after a restart, another for another agent's state), borrowed
 * from rt. A pod's group is PARENT/<pod uid>, its containers' PARENT/<pod uid>/<container>.
 */
const char *xp_runtime_cgroup_parent(const struct xp_runtime *rt);

/*
 * The key of the runtime on state_dir among the agents of one machine, "agent-<16 hex digits>"
 * (the last part of its cgroup parent), which the caller frees: a hash of state_dir's real path,
 * so it must exist. -errno with err set.
 */
int xp_runtime_agent_key(const char *state_dir, char **ret, struct xp_error *err);

/*
 * Removes the pods' groups below this runtime's parent that no pod of its state needs and no
 * start is making (those that a killed shim, a failed start or lost state left), killing what
 * still runs in them; groups of other runtimes are never looked at. How many were removed (0
 * without cgroups), or -errno with err when the parent cannot be listed.
 */
int xp_runtime_reclaim_cgroups(struct xp_runtime *rt, struct xp_error *err);
/* ---- reaching into a running container: exec, attach, its network -------------------------
 *
 * What the agent's streaming endpoint (docs/agent.md, "Exec, attach, port-forward") does with a
 * container of this runtime. For the process runtime a command runs through a helper process
 * (`xpool-shim __exec`, exec_helper.c) that joins the container as `runc exec` would; an OCI
 * container would run `crun exec` in its place with the same stdio, status and signals.
 */

struct xp_exec_options {
        char *const *argv; /* NULL-terminated, at least one word; argv[0] searched in the
                              container's PATH when it has no '/' */
        bool tty;          /* stdin_fd is a terminal's slave side: the command's controlling one
                              (and TERM=xterm unless the container sets TERM) */
        int stdin_fd, stdout_fd, stderr_fd; /* the command's stdio (dup'ed); -1: /dev/null */
};

/*
 * Runs argv in the running container pod_uid/container: in its cgroup and namespaces, with its
 * containment (capabilities, no_new_privs, seccomp), user, working directory and environment,
 * as its own process is. Returns once the helper runs: *ret_pid is the process to wait for, whose
 * exit status is the command's (its code, or 128 + the signal that ended it); *ret_report_fd
 * (caller closes) reads EOF once the command was exec'd, or one line saying why it was not
 * (then the helper exits 127). SIGTERM to *ret_pid ends the command and its whole process group.
 * -ESRCH when the container does not run; -errno with err.
 */
int xp_runtime_exec(struct xp_runtime *rt,
                    const char *pod_uid,
                    const char *container,
                    const struct xp_exec_options *o,
                    pid_t *ret_pid,
                    int *ret_report_fd,
                    struct xp_error *err);

/*
 * Connects to the container's stdio as its shim serves it (attach.c): *ret_fd (caller closes) is
 * a SOCK_SEQPACKET socket speaking the messages of xpool/attach.h. -ESRCH when the container
 * does not run; -errno with err.
 */
int xp_runtime_attach(struct xp_runtime *rt,
                      const char *pod_uid,
                      const char *container,
                      int *ret_fd,
                      struct xp_error *err);

/*
 * The network namespace of the pod's containers (of the first that runs): *ret_fd (caller
 * closes) for setns(CLONE_NEWNET). -ESRCH when none of them runs.
 */
int xp_runtime_pod_netns(struct xp_runtime *rt,
                         const char *pod_uid,
                         int *ret_fd,
                         struct xp_error *err);

/* The size a container's or a command's terminal has until a client sends its own. */
#define XP_RUNTIME_TTY_ROWS 24
#define XP_RUNTIME_TTY_COLS 80

/* A pseudo-terminal: *ret_master (non-blocking) and *ret_slave, both close-on-exec and neither
 * anyone's controlling terminal yet, sized XP_RUNTIME_TTY_ROWS x _COLS. -errno. */
int xp_runtime_pty_open(int *ret_master, int *ret_slave);
/* The same for a command run in a running container, from the container's own devpts (so that
 * `tty` inside names it), never the node's: -errno with err when the container is not running
 * or its ptmx cannot be opened. */
int xp_runtime_exec_pty(struct xp_runtime *rt,
                        const char *pod_uid,
                        const char *container,
                        int *ret_master,
                        int *ret_slave,
                        struct xp_error *err);

/* Entry point of `xpool __exec STATE_DIR tty|notty COMMAND...` (hidden; started by
 * xp_runtime_exec()). Ends the process with the command's exit status (returns only the usage
 * error's 2). */
int xp_exec_main(int argc, char **argv);

/*
 * Entry point of `xpool __shim STATE_DIR` (hidden subcommand): argv[0] is "__shim", argv[1] the
 * container's state directory; fd 3 is the pipe to xp_runtime_start(). Returns the process exit
 * status (of the first process: the shim itself forks and detaches at once).
 */
int xp_shim_main(int argc, char **argv);
