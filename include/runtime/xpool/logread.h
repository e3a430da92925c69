/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Reading a container's log as `kubectl logs` shows it. The runtime writes one log per attempt
 * (restart count) in the container's log directory, in the CRI format kubelet uses:
 *
 *     <RFC3339NANO UTC> <stdout|stderr> <F|P> <message>\n
 *
 * <attempt>.log is live; at its size limit it is renamed to <attempt>.log.1 (the older ones shift
 * to .log.2 .. .log.K). Once the attempt's log is complete the live <attempt>.log loses its
 * write bits (0440; an older agent made an empty <attempt>.end instead, still understood).
 * A P (partial) line is a fragment of a longer line: fragments are joined up to the next F line.
 * Lines that are not in that format are passed through as they are, never dropped.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "xpool/error.h"

struct xp_log_read_options {
        bool follow;         /* keep reading until the attempt's log is complete and EOF */
        int64_t tail_lines;  /* -1: all */
        int64_t since_ns;    /* 0: all; lines at or after this time */
        int64_t limit_bytes; /* 0: no limit */
        bool timestamps;     /* prefix each line with its RFC3339NANO time, as kubectl */
};

/*
 * Writes the messages of attempt's log (rotated files oldest first, then live) to fn: the CRI
 * prefix removed, P fragments joined. fn returning < 0 stops with that value.
 *
 * Each call of fn carries part of the output (a line may come in several calls). While
 * following, fn is also called with len 0 about once a second, so that a caller whose reader went
 * away can stop the read by returning < 0. tail_lines is found by reading the files backwards in
 * blocks, so a small tail of a big log costs little. A line's time is that of its first
 * fragment; lines without one (not CRI) pass every since_ns and get no timestamp prefix.
 * limit_bytes cuts the output at that many bytes, even within a line.
 * -ENOENT with err when neither the live file nor a rotated one exists (with follow, the live
 * file is waited for instead); -errno with err else.
 */
typedef int (*xp_log_write_fn)(const char *data, size_t len, void *userdata);
int xp_log_read(const char *container_log_dir,
                unsigned attempt,
                const struct xp_log_read_options *options,
                xp_log_write_fn fn,
                void *userdata,
                struct xp_error *err);

/* The newest attempt that has a log (previous=true: the one before it). -ENOENT when none. */
int xp_log_latest_attempt(const char *container_log_dir,
                          bool previous,
                          unsigned *ret,
                          struct xp_error *err);

/*
 * Parses a CRI line (without its newline): 0 with the time (ns since the epoch), whether it is
 * a partial fragment, and where the message starts (an offset into line); -EINVAL when the line
 * is not CRI. Exposed for the tests and the fuzz target.
 */
int xp_log_parse_cri(
    const char *line, size_t len, int64_t *ret_ns, bool *ret_partial, size_t *ret_message);

#define XP_LOG_TIME_MAX 40
/* Formats ns since the epoch as Go's RFC3339Nano does (trailing fraction zeros dropped). */
int xp_log_format_time(int64_t ns, char buf[static XP_LOG_TIME_MAX]);
