/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Reading CRI logs (see logread.h). The files of one attempt are opened at once, oldest first, so
 * a rotation while we read (a rename) does not pull a file away. A tail is found by reading
 * backwards in blocks from the end until enough lines (or a line older than since_ns) are seen;
 * from there everything is read forwards by the same code that follows, so tail, since, limit,
 * timestamps and follow combine freely.
 *
 * Following waits on inotify on the log directory (with a one-second timeout, which also paces
 * the len-0 calls of fn) for the live file to grow or be replaced. A replaced live file (a
 * rotation) is read to its end before the new one; the read ends when the attempt's log is
 * complete (the live file without write bits, or an older agent's <attempt>.end) and the live
 * file is read to its end with no newer one.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "xpool/logread.h"
#include "xpool/macro.h"
#include "xpool/timeutil.h"

#define BLOCK        (64 * 1024)
#define LINE_MAX_LEN (1024 * 1024) /* a longer run without newline is cut into lines */
#define ROTATED_MAX  1000          /* rotated files of one attempt we look at */
#define WAIT_MS      1000
#define STOP         1 /* emit(): the limit is reached, the read is done */

struct reader {
        const struct xp_log_read_options *o;
        xp_log_write_fn fn;
        void *userdata;
        int64_t written;
        bool in_line; /* a P fragment was the last thing seen: the line goes on */
        bool skip;    /* the current line is older than since_ns */
        /* the forward reader's unprocessed bytes of the current file */
        char *buf;
        size_t len, cap;
};

static int emit(struct reader *rd, const char *data, size_t len)
{
        int r;

        if (len == 0)
                return 0;
        if (rd->o->limit_bytes > 0) {
                int64_t left = rd->o->limit_bytes - rd->written;

                if (left <= 0)
                        return STOP;
                if ((int64_t)len > left)
                        len = (size_t)left;
        }
        r = rd->fn(data, len, rd->userdata);
        if (r < 0)
                return r;
        rd->written += (int64_t)len;
        if (rd->o->limit_bytes > 0 && rd->written >= rd->o->limit_bytes)
                return STOP;
        return 0;
}

int xp_log_format_time(int64_t ns, char buf[static XP_LOG_TIME_MAX])
{
        int64_t sec = ns / 1000000000, frac = ns % 1000000000;
        char base[XP_RFC3339_MAX], digits[16];
        size_t n, blen;
        int r;

        if (frac < 0) {
                frac += 1000000000;
                sec--;
        }
        r = xp_time_format_rfc3339(sec, base);
        if (r < 0)
                return r;
        blen = strlen(base) - 1; /* without the Z */
        if (frac == 0) {
                snprintf(buf, XP_LOG_TIME_MAX, "%s", base);
                return 0;
        }
        snprintf(digits, sizeof digits, "%09" PRId64, frac);
        n = 9;
        while (n > 0 && digits[n - 1] == '0')
                n--;
        snprintf(buf, XP_LOG_TIME_MAX, "%.*s.%.*sZ", (int)blen, base, (int)n, digits);
        return 0;
}

int xp_log_parse_cri(
    const char *line, size_t len, int64_t *ret_ns, bool *ret_partial, size_t *ret_message)
{
        const char *sp1, *sp2, *p;
        char ts[XP_LOG_TIME_MAX];
        int64_t sec, frac = 0;
        size_t tlen, i;
        bool partial;

        sp1 = memchr(line, ' ', len);
        if (!sp1)
                return -EINVAL;
        tlen = (size_t)(sp1 - line);
        if (tlen < 20 || tlen >= sizeof ts)
                return -EINVAL;
        memcpy(ts, line, tlen);
        ts[tlen] = '\0';
        if (xp_time_parse_rfc3339(ts, &sec) < 0)
                return -EINVAL;
        if (ts[19] == '.') {
                int64_t scale = 100000000;

                for (i = 20; i < tlen && ts[i] >= '0' && ts[i] <= '9'; i++) {
                        frac += (ts[i] - '0') * scale;
                        scale /= 10;
                }
        }
        p = sp1 + 1;
        sp2 = memchr(p, ' ', len - (size_t)(p - line));
        if (!sp2 ||
            !((sp2 - p == 6 && (memcmp(p, "stdout", 6) == 0 || memcmp(p, "stderr", 6) == 0))))
                return -EINVAL;
        p = sp2 + 1;
        if ((size_t)(p - line) >= len || (*p != 'F' && *p != 'P'))
                return -EINVAL;
        partial = *p == 'P';
        p++;
        if ((size_t)(p - line) < len && *p != ' ')
                return -EINVAL;
        if ((size_t)(p - line) < len)
                p++;
        if (sec > INT64_MAX / 1000000000 - 1 || sec < INT64_MIN / 1000000000 + 1)
                return -EINVAL;
        *ret_ns = sec * 1000000000 + frac;
        *ret_partial = partial;
        *ret_message = (size_t)(p - line);
        return 0;
}

/* One raw line of a file (without its newline) into the output. */
static int process_line(struct reader *rd, const char *line, size_t len)
{
        bool partial;
        size_t msg;
        int64_t ns;
        int r;

        if (xp_log_parse_cri(line, len, &ns, &partial, &msg) < 0) {
                /* Not CRI: shown as it is, on a line of its own. */
                if (rd->in_line && !rd->skip) {
                        r = emit(rd, "\n", 1);
                        if (r != 0)
                                return r;
                }
                rd->in_line = false;
                r = emit(rd, line, len);
                if (r != 0)
                        return r;
                return emit(rd, "\n", 1);
        }
        if (!rd->in_line) {
                rd->skip = rd->o->since_ns > 0 && ns < rd->o->since_ns;
                if (!rd->skip && rd->o->timestamps) {
                        char t[XP_LOG_TIME_MAX + 1];

                        if (xp_log_format_time(ns, t) == 0) {
                                strcat(t, " ");
                                r = emit(rd, t, strlen(t));
                                if (r != 0)
                                        return r;
                        }
                }
        }
        rd->in_line = partial;
        if (rd->skip)
                return 0;
        r = emit(rd, line + msg, len - msg);
        if (r != 0)
                return r;
        return partial ? 0 : emit(rd, "\n", 1);
}

/* Processes the complete lines in rd->buf; with flush, the rest too (the file is done). */
static int process_buffer(struct reader *rd, bool flush)
{
        size_t start = 0;
        int r = 0;

        while (start < rd->len) {
                char *nl = memchr(rd->buf + start, '\n', rd->len - start);
                size_t end;

                if (nl)
                        end = (size_t)(nl - rd->buf);
                else if (flush || rd->len - start > LINE_MAX_LEN)
                        end = rd->len;
                else
                        break;
                r = process_line(rd, rd->buf + start, end - start);
                start = nl ? end + 1 : end;
                if (r != 0)
                        break;
        }
        memmove(rd->buf, rd->buf + start, rd->len - start);
        rd->len -= start;
        return r;
}

/* Reads fd from *off to its current end, processing complete lines. */
static int drain(struct reader *rd, int fd, off_t *off, struct xp_error *err)
{
        for (;;) {
                ssize_t n;
                int r;

                if (rd->cap - rd->len < BLOCK) {
                        char *b = realloc(rd->buf, rd->len + BLOCK);

                        if (!b)
                                return -ENOMEM;
                        rd->buf = b;
                        rd->cap = rd->len + BLOCK;
                }
                n = pread(fd, rd->buf + rd->len, BLOCK, *off);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return xp_errorf(err, -errno, "cannot read a log file: %m");
                if (n == 0)
                        return 0;
                rd->len += (size_t)n;
                *off += n;
                r = process_buffer(rd, false);
                if (r != 0)
                        return r;
        }
}

struct files {
        int *fds; /* oldest first; the live file last when live */
        size_t n;
        bool live; /* the last one is <attempt>.log */
};

static void files_done(struct files *f)
{
        for (size_t i = 0; i < f->n; i++)
                if (f->fds[i] >= 0)
                        close(f->fds[i]);
        free(f->fds);
        *f = (struct files){0};
}

static int cmp_desc(const void *a, const void *b)
{
        unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;

        return x < y ? 1 : x > y ? -1 : 0;
}

/* Parses "<digits>" fully into *ret. */
static bool parse_uint(const char *s, size_t len, unsigned *ret)
{
        unsigned long v = 0;

        if (len == 0 || len > 9)
                return false;
        for (size_t i = 0; i < len; i++) {
                if (s[i] < '0' || s[i] > '9')
                        return false;
                v = v * 10 + (unsigned long)(s[i] - '0');
        }
        *ret = (unsigned)v;
        return true;
}

/* Opens attempt's files: .log.K .. .log.1, then .log. */
static int files_open(const char *dir, unsigned attempt, struct files *ret, struct xp_error *err)
{
        _cleanup_free_ unsigned *rotated = NULL;
        size_t n_rotated = 0, cap = 0;
        struct files f = {0};
        char prefix[32], path[PATH_MAX];
        size_t plen;
        DIR *d;
        struct dirent *de;

        plen = (size_t)snprintf(prefix, sizeof prefix, "%u.log.", attempt);
        d = opendir(dir);
        if (!d)
                return xp_errorf(err, -errno, "cannot open the log directory '%s': %m", dir);
        while ((de = readdir(d))) {
                unsigned k;

                if (strncmp(de->d_name, prefix, plen) != 0 ||
                    !parse_uint(de->d_name + plen, strlen(de->d_name + plen), &k) || k == 0)
                        continue;
                if (n_rotated == ROTATED_MAX)
                        break;
                if (n_rotated == cap) {
                        unsigned *p = realloc(rotated, (cap ? 2 * cap : 8) * sizeof *p);

                        if (!p) {
                                closedir(d);
                                return -ENOMEM;
                        }
                        rotated = p;
                        cap = cap ? 2 * cap : 8;
                }
                rotated[n_rotated++] = k;
        }
        closedir(d);
        if (n_rotated > 0)
                qsort(rotated, n_rotated, sizeof *rotated, cmp_desc);
        f.fds = calloc(n_rotated + 1, sizeof *f.fds);
        if (!f.fds)
                return -ENOMEM;
        for (size_t i = 0; i <= n_rotated; i++) {
                int fd;

                if (i < n_rotated)
                        snprintf(path, sizeof path, "%s/%u.log.%u", dir, attempt, rotated[i]);
                else
                        snprintf(path, sizeof path, "%s/%u.log", dir, attempt);
                fd = open(path, O_RDONLY | O_CLOEXEC);
                if (fd < 0 && errno == ENOENT)
                        continue; /* rotated away or not there yet */
                if (fd < 0) {
                        int r = xp_errorf(err, -errno, "cannot open '%s': %m", path);

                        files_done(&f);
                        return r;
                }
                f.fds[f.n++] = fd;
                f.live = i == n_rotated;
        }
        *ret = f;
        return 0;
}

/* Puts the block before *boff in front of buf, which then holds [*boff, pos). */
static int extend(int fd, char **buf, off_t *boff, off_t pos, struct xp_error *err)
{
        off_t nb = *boff > BLOCK ? *boff - BLOCK : 0;
        char *nbuf = malloc((size_t)(pos - nb));
        ssize_t n;

        if (!nbuf)
                return -ENOMEM;
        n = pread(fd, nbuf, (size_t)(*boff - nb), nb);
        if (n != *boff - nb) {
                int r = n < 0 ? -errno : -EIO;

                free(nbuf);
                return xp_errorf(err, r, "cannot read a log file backwards");
        }
        if (pos > *boff)
                memcpy(nbuf + (*boff - nb), *buf, (size_t)(pos - *boff));
        free(*buf);
        *buf = nbuf;
        *boff = nb;
        return 0;
}

/*
 * Backwards from the end: where the output of tail_lines/since_ns starts. A raw line ends an
 * output line when it is F or not CRI, and so does the very last one (a P at the end is a line
 * cut short). Logs are in time order, so the first line older than since_ns ends the search.
 */
static int find_start(struct reader *rd,
                      const struct files *f,
                      size_t *ret_file,
                      off_t *ret_off,
                      struct xp_error *err)
{
        const struct xp_log_read_options *o = rd->o;
        bool last = true;
        int64_t count = 0;

        for (size_t i = f->n; i-- > 0;) {
                _cleanup_free_ char *buf = NULL;
                off_t boff, pos; /* buf holds [boff, pos); everything after pos is done */
                struct stat st;
                int r;

                if (fstat(f->fds[i], &st) < 0)
                        return xp_errorf(err, -errno, "cannot stat a log file: %m");
                pos = boff = st.st_size;
                while (pos > 0) {
                        off_t after = pos, line_end, ls;
                        bool partial = false;
                        size_t msg;
                        int64_t ns;
                        int cri;

                        if (boff == pos) {
                                r = extend(f->fds[i], &buf, &boff, pos, err);
                                if (r < 0)
                                        return r;
                        }
                        line_end = buf[pos - 1 - boff] == '\n' ? pos - 1 : pos;
                        for (;;) {
                                ls = -1;
                                for (off_t k = line_end; k > boff; k--)
                                        if (buf[k - 1 - boff] == '\n') {
                                                ls = k;
                                                break;
                                        }
                                if (ls >= 0)
                                        break;
                                if (boff == 0 || line_end - boff > LINE_MAX_LEN) {
                                        ls = boff;
                                        break;
                                }
                                r = extend(f->fds[i], &buf, &boff, pos, err);
                                if (r < 0)
                                        return r;
                        }
                        cri = xp_log_parse_cri(
                            buf + (ls - boff), (size_t)(line_end - ls), &ns, &partial, &msg);
                        if (cri < 0 || !partial || last) {
                                if ((o->since_ns > 0 && cri == 0 && ns < o->since_ns) ||
                                    (o->tail_lines >= 0 && ++count > o->tail_lines)) {
                                        *ret_file = i;
                                        *ret_off = after;
                                        return 0;
                                }
                        }
                        last = false;
                        pos = ls;
                }
        }
        *ret_file = 0;
        *ret_off = 0;
        return 0;
}

/* Whether the writer is done with the attempt's log: the live file's write bits off (a mode
 * change, no inode of its own), or the empty <attempt>.end an older agent made. */
static bool log_complete(const char *dir, unsigned attempt)
{
        char path[PATH_MAX];
        struct stat st;

        snprintf(path, sizeof path, "%s/%u.log", dir, attempt);
        if (stat(path, &st) == 0 && !(st.st_mode & 0222))
                return true;
        snprintf(path, sizeof path, "%s/%u.end", dir, attempt);
        return access(path, F_OK) == 0;
}

/* Waits for a change in the directory (or the timeout); lets fn stop the read meanwhile. */
static int wait_change(struct reader *rd, int ifd)
{
        struct pollfd p = {.fd = ifd, .events = POLLIN};
        char events[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
        int r;

        r = poll(&p, 1, WAIT_MS);
        if (r > 0)
                while (read(ifd, events, sizeof events) > 0)
                        ;
        return rd->fn("", 0, rd->userdata) < 0 ? -ECANCELED : 0;
}

/* Follows the live file after the initial files are read: see the comment at the top. */
static int follow(struct reader *rd,
                  const char *dir,
                  unsigned attempt,
                  int ifd,
                  int fd,
                  off_t off,
                  struct xp_error *err)
{
        _cleanup_close_ int cur = fd;
        char live[PATH_MAX];
        struct stat st, cst;
        int r;

        snprintf(live, sizeof live, "%s/%u.log", dir, attempt);
        if (cur >= 0 && fstat(cur, &cst) < 0)
                return xp_errorf(err, -errno, "cannot stat '%s': %m", live);
        for (;;) {
                bool ended = log_complete(dir, attempt);

                if (cur >= 0) {
                        r = drain(rd, cur, &off, err);
                        if (r != 0)
                                return r;
                }
                if (stat(live, &st) == 0 &&
                    (cur < 0 || st.st_ino != cst.st_ino || st.st_dev != cst.st_dev)) {
                        int nfd;

                        if (cur >= 0) {
                                /* Rotated: what was written before the rename is in the old one. */
                                r = drain(rd, cur, &off, err);
                                if (r == 0)
                                        r = process_buffer(rd, true);
                                if (r != 0)
                                        return r;
                        }
                        nfd = open(live, O_RDONLY | O_CLOEXEC);
                        if (nfd < 0 && errno == ENOENT)
                                continue;
                        if (nfd < 0)
                                return xp_errorf(err, -errno, "cannot open '%s': %m", live);
                        if (cur >= 0)
                                close(cur);
                        cur = nfd;
                        off = 0;
                        if (fstat(cur, &cst) < 0)
                                return xp_errorf(err, -errno, "cannot stat '%s': %m", live);
                        continue;
                }
                if (ended)
                        return process_buffer(rd, true);
                r = wait_change(rd, ifd);
                if (r < 0)
                        return r;
        }
}

int xp_log_read(const char *container_log_dir,
                unsigned attempt,
                const struct xp_log_read_options *options,
                xp_log_write_fn fn,
                void *userdata,
                struct xp_error *err)
{
        struct reader rd = {.o = options, .fn = fn, .userdata = userdata};
        _cleanup_close_ int ifd = -1;
        struct files f = {0};
        size_t first = 0;
        off_t off = 0;
        int r;

        if (options->follow) {
                /* Watching starts before the listing, so no change between them is missed. */
                ifd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
                if (ifd < 0)
                        return xp_errorf(
                            err, -errno, "cannot watch '%s': inotify: %m", container_log_dir);
                if (inotify_add_watch(ifd,
                                      container_log_dir,
                                      IN_MODIFY | IN_CREATE | IN_MOVED_TO | IN_MOVED_FROM |
                                          IN_CLOSE_WRITE | IN_ATTRIB) < 0)
                        return xp_errorf(err, -errno, "cannot watch '%s': %m", container_log_dir);
        }
        r = files_open(container_log_dir, attempt, &f, err);
        if (r < 0)
                return r;
        if (f.n == 0 && !options->follow) {
                files_done(&f);
                return xp_errorf(
                    err, -ENOENT, "no log of attempt %u in '%s'", attempt, container_log_dir);
        }
        if (options->tail_lines >= 0 || options->since_ns > 0) {
                r = find_start(&rd, &f, &first, &off, err);
                if (r < 0)
                        goto out;
        }
        for (size_t i = first; i < f.n; i++) {
                bool last = i + 1 == f.n;

                if (i > first)
                        off = 0;
                if (last && f.live && options->follow) {
                        r = follow(
                            &rd, container_log_dir, attempt, ifd, TAKE_FD(f.fds[i]), off, err);
                        goto out;
                }
                r = drain(&rd, f.fds[i], &off, err);
                if (r == 0)
                        r = process_buffer(&rd, true);
                if (r != 0)
                        goto out;
        }
        if (options->follow)
                r = follow(&rd, container_log_dir, attempt, ifd, -1, 0, err);
out:
        files_done(&f);
        free(rd.buf);
        return r < 0 ? r : 0;
}

int xp_log_latest_attempt(const char *container_log_dir,
                          bool previous,
                          unsigned *ret,
                          struct xp_error *err)
{
        unsigned newest = 0, before = 0;
        bool have_newest = false, have_before = false;
        struct dirent *de;
        DIR *d;

        d = opendir(container_log_dir);
        if (!d)
                return xp_errorf(
                    err, -errno, "cannot open the log directory '%s': %m", container_log_dir);
        while ((de = readdir(d))) {
                const char *dot = strstr(de->d_name, ".log");
                unsigned a, k;

                if (!dot || !parse_uint(de->d_name, (size_t)(dot - de->d_name), &a))
                        continue;
                if (dot[4] != '\0' && !(dot[4] == '.' && parse_uint(dot + 5, strlen(dot + 5), &k)))
                        continue;
                if (!have_newest || a > newest) {
                        if (have_newest && (!have_before || newest > before)) {
                                before = newest;
                                have_before = true;
                        }
                        newest = a;
                        have_newest = true;
                } else if (a < newest && (!have_before || a > before)) {
                        before = a;
                        have_before = true;
                }
        }
        closedir(d);
        if (!have_newest || (previous && !have_before))
                return xp_errorf(err,
                                 -ENOENT,
                                 previous ? "no log of a previous attempt in '%s'"
                                          : "no log in '%s'",
                                 container_log_dir);
        *ret = previous ? before : newest;
        return 0;
}
