/* SPDX-License-Identifier: Apache-2.0 */
/* CRI log files: `TIME STREAM F|P MESSAGE` lines, rotated by size. Used by the shim only. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "runtime_internal.h"
#include "xpool/fileio.h"

static const char *const stream_names[] = {
    [LOGWRITE_STDOUT] = "stdout",
    [LOGWRITE_STDERR] = "stderr",
};

/* Formats ns since the epoch as RFC 3339 UTC with nine fraction digits; buf of 32 bytes. */
static void runtime_format_ns(int64_t ns, char buf[static 32])
{
        time_t secs = (time_t)(ns / 1000000000);
        struct tm tm;

        gmtime_r(&secs, &tm);
        snprintf(buf,
                 32,
                 "%04d-%02d-%02dT%02d:%02d:%02d.%09ldZ",
                 tm.tm_year + 1900,
                 tm.tm_mon + 1,
                 tm.tm_mday,
                 tm.tm_hour,
                 tm.tm_min,
                 tm.tm_sec,
                 (long)(ns % 1000000000));
}

int64_t runtime_now_ns(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_REALTIME, &ts);
        return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int log_path(const struct logwrite *lw, unsigned index, char buf[static PATH_MAX])
{
        int n = index ? snprintf(buf, PATH_MAX, "%s/%u.log.%u", lw->dir, lw->attempt, index)
                      : snprintf(buf, PATH_MAX, "%s/%u.log", lw->dir, lw->attempt);

        return n < 0 || n >= PATH_MAX ? -ENAMETOOLONG : 0;
}

static int open_live(struct logwrite *lw, bool truncate, struct xp_error *err)
{
        int flags = O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOCTTY | (truncate ? O_TRUNC : 0);
        char path[PATH_MAX];
        struct stat st;
        int r = log_path(lw, 0, path);

        if (r < 0)
                return xp_errorf(err, r, "log %s: path too long", lw->dir);
        lw->fd = open(path, flags, LOGWRITE_LIVE_MODE);
        /* an attempt's log made complete before (a restart with the same attempt number): a
         * writer that is not root needs its write permission back */
        if (lw->fd < 0 && errno == EACCES && chmod(path, LOGWRITE_LIVE_MODE) == 0)
                lw->fd = open(path, flags, LOGWRITE_LIVE_MODE);
        if (lw->fd < 0) {
                r = -errno;
                return xp_errorf(err, r, "opening log %s: %s", path, strerror(-r));
        }
        lw->size = 0;
        if (fstat(lw->fd, &st) == 0) {
                lw->size = (uint64_t)st.st_size;
                if ((st.st_mode & 0777) != LOGWRITE_LIVE_MODE)
                        (void)fchmod(lw->fd, LOGWRITE_LIVE_MODE);
        }
        return 0;
}

int logwrite_open(struct logwrite *lw,
                  const char *dir,
                  unsigned attempt,
                  uint64_t max_bytes,
                  unsigned max_files,
                  struct xp_error *err)
{
        int r;

        *lw = (struct logwrite){.fd = -1, .attempt = attempt};
        lw->max_bytes = max_bytes ? max_bytes : 10 * 1024 * 1024;
        lw->max_files = max_files ? max_files : 1;
        lw->dir = strdup(dir);
        lw->buf[0] = malloc(LOGWRITE_LINE_MAX);
        lw->buf[1] = malloc(LOGWRITE_LINE_MAX);
        if (!lw->dir || !lw->buf[0] || !lw->buf[1]) {
                logwrite_done(lw);
                return xp_errorf(err, -ENOMEM, "log %s: out of memory", dir);
        }
        r = xp_mkdir_p(dir, 0755, err);
        if (r >= 0) {
                char end[PATH_MAX];

                /* the attempt's log is live again (a restart with the same attempt number): an
                 * older agent's marker goes, open_live() gives the log its write bits back */
                snprintf(end, sizeof(end), "%s/%u.end", dir, attempt);
                unlink(end);
                r = open_live(lw, false, err);
        }
        if (r < 0)
                logwrite_done(lw);
        return r;
}

/* Shifts <attempt>.log.(K-1) .. .log to .log.K .. .log.1 (the oldest falls off) and reopens. */
static int rotate(struct logwrite *lw, struct xp_error *err)
{
        char from[PATH_MAX], to[PATH_MAX];

        close(lw->fd);
        lw->fd = -1;
        for (unsigned i = lw->max_files; i > 0; i--) {
                if (log_path(lw, i - 1, from) < 0 || log_path(lw, i, to) < 0)
                        return xp_errorf(err, -ENAMETOOLONG, "log %s: path too long", lw->dir);
                if (rename(from, to) < 0 && errno != ENOENT) {
                        int r = -errno;

                        return xp_errorf(err, r, "rotating %s: %s", from, strerror(-r));
                }
        }
        return open_live(lw, true, err);
}

static int write_line(
    struct logwrite *lw, enum logwrite_stream s, bool full, int64_t now_ns, struct xp_error *err)
{
        char prefix[64], ts[32];
        struct iovec iov[3];
        size_t total;
        ssize_t n;
        int plen, r;

        runtime_format_ns(now_ns, ts);
        plen = snprintf(prefix, sizeof(prefix), "%s %s %c ", ts, stream_names[s], full ? 'F' : 'P');
        total = (size_t)plen + lw->len[s] + 1;
        iov[0] = (struct iovec){prefix, (size_t)plen};
        iov[1] = (struct iovec){lw->buf[s], lw->len[s]};
        iov[2] = (struct iovec){"\n", 1};
        lw->len[s] = 0;
        if (lw->fd < 0)
                return xp_errorf(err, -EBADF, "log %s: not open", lw->dir);
        if (lw->size > 0 && lw->size + total > lw->max_bytes) {
                r = rotate(lw, err);
                if (r < 0)
                        return r;
        }
        do
                n = writev(lw->fd, iov, 3);
        while (n < 0 && errno == EINTR);
        if (n < 0) {
                r = -errno;
                return xp_errorf(
                    err, r, "writing log %s/%u.log: %s", lw->dir, lw->attempt, strerror(-r));
        }
        lw->size += (uint64_t)n;
        return 0;
}

int logwrite_data(struct logwrite *lw,
                  enum logwrite_stream s,
                  const char *data,
                  size_t len,
                  int64_t now_ns,
                  struct xp_error *err)
{
        int first = 0;

        while (len > 0) {
                size_t room = LOGWRITE_LINE_MAX - lw->len[s];
                const char *nl = memchr(data, '\n', len < room ? len : room);
                size_t take = nl ? (size_t)(nl - data) : (len < room ? len : room);
                int r = 0;

                memcpy(lw->buf[s] + lw->len[s], data, take);
                lw->len[s] += take;
                data += take;
                len -= take;
                if (nl) {
                        data++;
                        len--;
                        r = write_line(lw, s, true, now_ns, first < 0 ? NULL : err);
                } else if (lw->len[s] == LOGWRITE_LINE_MAX) {
                        r = write_line(lw, s, false, now_ns, first < 0 ? NULL : err);
                }
                if (r < 0 && first == 0)
                        first = r;
        }
        return first;
}

int logwrite_finish(struct logwrite *lw, int64_t now_ns, struct xp_error *err)
{
        char path[PATH_MAX];
        int first = 0, r;

        for (int s = 0; s < 2; s++)
                if (lw->len[s] > 0) {
                        r = write_line(lw, s, false, now_ns, first < 0 ? NULL : err);
                        if (r < 0 && first == 0)
                                first = r;
                }
        /* the live log without write bits says the attempt's log is complete (logread.h): one
         * fchmod, where a marker file of its own was one more inode made and removed per attempt */
        if (lw->fd < 0 && log_path(lw, 0, path) == 0)
                lw->fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOCTTY, LOGWRITE_LIVE_MODE);
        if (lw->fd < 0 || fchmod(lw->fd, LOGWRITE_COMPLETE_MODE) < 0) {
                r = -errno;
                if (first == 0)
                        first = xp_errorf(err,
                                          r,
                                          "marking log %s/%u.log complete: %s",
                                          lw->dir,
                                          lw->attempt,
                                          strerror(-r));
        }
        if (lw->fd >= 0) {
                close(lw->fd);
                lw->fd = -1;
        }
        return first;
}

void logwrite_done(struct logwrite *lw)
{
        if (lw->fd >= 0)
                close(lw->fd);
        free(lw->dir);
        free(lw->buf[0]);
        free(lw->buf[1]);
        *lw = (struct logwrite){.fd = -1};
}
