/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Shared between the runtime (process.c), the shim (shim.c) and the log writer (logwrite.c). */

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
/* Writes what is buffered as P lines, closes the log and creates <attempt>.end. */
int logwrite_finish(struct logwrite *lw, int64_t now_ns, struct xp_error *err);
/* Frees lw (closing the log without the .end marker if not finished). */
void logwrite_done(struct logwrite *lw);

/* Formats ns since the epoch as RFC 3339 UTC with nine fraction digits; buf of 32 bytes. */
void runtime_format_ns(int64_t ns, char buf[static 32]);
int64_t runtime_now_ns(void);
/* Field 22 (starttime) and field 3 (state) of /proc/PID/stat. -ESRCH when no such process. */
int runtime_proc_start(pid_t pid, uint64_t *ret_start, char *ret_state);
/* Field 4 (the parent's pid) of /proc/PID/stat; 0 when it cannot be read. */
pid_t runtime_proc_parent(pid_t pid);
/* mkdir -p (mode 0755). */
int runtime_mkdir_p(const char *path, struct xp_error *err);
/* Writes data to dir/name atomically (tmp + rename, fsync when durable). */
int runtime_write_json(
    const char *dir, const char *name, const char *text, bool durable, struct xp_error *err);
