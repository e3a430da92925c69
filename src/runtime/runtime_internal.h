/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Shared between the runtime (process.c), the shim (shim.c) and the log writer (logwrite.c). */

#include <inttypes.h>
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "xpool/error.h"
#include "xpool/runtime.h"

/* Files in a container's state directory. */
#define RUNTIME_SPEC_FILE    "spec.json"
#define RUNTIME_RUNNING_FILE "running.json"
#define RUNTIME_EXIT_FILE    "exit.json"
/*
 * The start lock: an flock on the container's state directory, taken by xp_runtime_start()
 * before it writes the spec, handed to the shim as RUNTIME_LOCK_FD (the same open file
 * description, so the lock passes without a gap), and dropped by the shim once running.json or
 * exit.json is written, or by its death. Free with a spec and neither file: whoever started it is
 * gone. Just before the shim lets the container go on to exec it makes the release marker, a
 * second name of spec.json: RUNTIME_RELEASE_PREFIX "PID.STARTTIME.SHIMPID" (the container's pid
 * and start time, its own pid). No marker proves the container never ran.
 */
#define RUNTIME_LOCK_FD        4
#define RUNTIME_RELEASE_PREFIX "released."
/* The spec's key of the state directory that the runtime holds a read lock on while it is open
 * (an OFD lock): a shim that finds it held (F_OFD_GETLK) leaves the runtime's parent group. */
#define RUNTIME_KEEPER_KEY "cgroup_parent_keeper"
/* The flat directory below the state dir where shims announce exits. */
#define RUNTIME_EVENTS_DIR ".events"
/* The fd the shim gets its pipe to xp_runtime_start() on. */
#define RUNTIME_NOTIFY_FD 3
/* Longest message line of the shim's pipe. */
#define RUNTIME_NOTIFY_MAX 1024

/* The CRI log writer of one attempt: LOGDIR/<attempt>.log, rotated to .log.1 .. .log.K. */
#define LOGWRITE_LINE_MAX (16 * 1024) /* longer lines are split into P fragments */

enum logwrite_stream {
        LOGWRITE_STDOUT,
        LOGWRITE_STDERR,
};

struct logwrite {
        char *dir;
        unsigned attempt;
        uint64_t max_bytes;
        unsigned max_files;
        int fd;
        uint64_t size;
        char *buf[2]; /* the unfinished line of each stream, LOGWRITE_LINE_MAX bytes */
        size_t len[2];
};

/* Creates dir (and parents) and opens (appending) dir/<attempt>.log. */
int logwrite_open(struct logwrite *lw,
                  const char *dir,
                  unsigned attempt,
                  uint64_t max_bytes,
                  unsigned max_files,
                  struct xp_error *err);
/* Writes the complete lines of data (read at now_ns) as CRI lines; keeps the rest buffered. */
int logwrite_data(struct logwrite *lw,
                  enum logwrite_stream stream,
                  const char *data,
                  size_t len,
                  int64_t now_ns,
                  struct xp_error *err);
/* The live log's mode while written, and once complete (xpool/logread.h). */
#define LOGWRITE_LIVE_MODE     0640
#define LOGWRITE_COMPLETE_MODE 0440
/* Writes what is buffered as P lines, marks the log complete (its write bits off) and closes it. */
int logwrite_finish(struct logwrite *lw, int64_t now_ns, struct xp_error *err);
/* Frees lw (closing the log without marking it complete if not finished). */
void logwrite_done(struct logwrite *lw);

int64_t runtime_now_ns(void);
/* Field 22 (starttime) and field 3 (state) of /proc/PID/stat. -ESRCH when no such process. */
int runtime_proc_start(pid_t pid, uint64_t *ret_start, char *ret_state);
/* Field 4 (the parent's pid) of /proc/PID/stat; 0 when it cannot be read. */
pid_t runtime_proc_parent(pid_t pid);

/*
 * shimwatch.c: the running containers' shims, each through a pidfd, in one epoll set with the
 * exit announcements' inotify fd (the runtime's event fd): a shim that dies without announcing
 * its container's exit (killed) makes it readable too. Used under the runtime's lock.
 */
struct shimwatch;
int shimwatch_new(int inotify_fd, struct shimwatch **ret);
void shimwatch_free(struct shimwatch *w);
int shimwatch_fd(const struct shimwatch *w);
/* Watches the shim pid that started at start (ticks since boot) for pod uid; 0 when it is
 * watched (already or now), -ESRCH when it is gone, -errno. */
int shimwatch_add(struct shimwatch *w, const char *uid, pid_t pid, uint64_t start);
/* Drops the watches of the shims that ended, appending their pods' uids (copies) to *uids when
 * uids is not NULL. -ENOMEM: what was appended stays, and a shim whose uid could not be appended
 * stays watched (the event fd still readable), so that a later take names it. */
int shimwatch_take(struct shimwatch *w, char ***uids, size_t *n);
/* Stops watching the shims of pod uid, whose containers' exits are all recorded: their ends
 * would only make the pod be read again. */
void shimwatch_forget_pod(struct shimwatch *w, const char *uid);
/* How many shims are watched. */
size_t shimwatch_count(const struct shimwatch *w);
/* startlock.c: opens the state directory dir and takes its start lock, waiting for it when
 * wait, else -EWOULDBLOCK while another holds it. The fd is close-on-exec. -errno. */
int runtime_start_lock(const char *dir, bool wait, int *ret_fd);
/* What the release marker names (zeros when its name is not whole). */
struct runtime_release {
        pid_t pid;
        uint64_t pid_start;
        pid_t shim_pid;
};
/* startlock.c: the release marker in the directory dir_fd: 1 (ret filled) when there is one,
 * 0 when not, -errno. */
int runtime_release_read(int dir_fd, struct runtime_release *ret);
/* startlock.c: makes the release marker (the shim, before the container may exec). -errno. */
int runtime_release_write(int dir_fd, pid_t pid, uint64_t pid_start, pid_t shim);
/* startlock.c: removes the release markers of the directory dir_fd. -errno. */
int runtime_release_clear(int dir_fd);
/* startlock.c: RUNTIME_LOCK_FD, made close-on-exec, when it is the directory dir; else -1. */
int runtime_start_lock_inherited(const char *dir);
/* exec.c: the container's main process (as running.json in its state directory dir names it,
 * checked against /proc), if it runs; else -ESRCH with err. */
int runtime_running_pid(const char *dir, pid_t *ret, struct xp_error *err);
/* STATE/uid/container (container NULL: STATE/uid) in buf, each name checked to be one path
 * component. -errno with err (err may be NULL). */
int runtime_container_dir(const struct xp_runtime *rt,
                          const char *uid,
                          const char *container,
                          char buf[static PATH_MAX],
                          struct xp_error *err);
/* process.c: the runtime's state directory and the shim executable (which also runs __exec). */
const char *runtime_state_dir(const struct xp_runtime *rt);
const char *runtime_shim_exe(const struct xp_runtime *rt);
/* The sealed seccomp filter for the effective set (process.c): the runtime's, open until
 * xp_runtime_free(); -1 when it cannot be made. */
int runtime_filter_for(struct xp_runtime *rt, uint64_t effective);
/* Writes data to dir/name atomically (tmp + rename, fsync when durable). */
int runtime_write_json(
    const char *dir, const char *name, const char *text, bool durable, struct xp_error *err);
/* Reads the JSON file at path (at most RUNTIME_STATE_FILE_MAX bytes) in one read, not jansson's
 * getc per byte: state and spec files are read at every start, list and exit. NULL when it is
 * missing or not JSON (jerr, when given, says why). */
#define RUNTIME_STATE_FILE_MAX (1024 * 1024)
json_t *runtime_read_json(const char *path, json_error_t *jerr);
