/* SPDX-License-Identifier: Apache-2.0 */
/*
 * exec and attach (stream_internal.h): Kubernetes' remote command protocol, over a WebSocket
 * (each message's first byte its channel) or SPDY (a stream per channel, the client opens them
 * all first). The channels stdin, stdout, stderr, error and resize carry the command's stdio;
 * the error channel ends the stream with a v1 Status (http/remotecmd.h).
 *
 * exec runs its command through the runtime (xp_runtime_exec()) on pipes, or on a terminal this
 * side keeps the master of (resize: TIOCSWINSZ). attach connects to the container's shim
 * (xp_runtime_attach()), which sends the container's output from now on and takes its stdin when
 * the container has one. A client that goes away ends the command and its process group.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "stream_internal.h"
#include "xpool/attach.h"
#include "xpool/log.h"
#include "xpool/macro.h"
#include "xpool/runtime.h"

/* After the command ended, its pipes are read until DRAIN_MS passes without a byte: a background
 * child of its may hold them open. */
#define DRAIN_MS         2000
#define SETUP_TIMEOUT_MS 30000 /* SPDY: the client's streams must all be open by then */
#define STOP_WAIT_MS     3000  /* the helper's time to kill the command's group */
#define SIZE_WAIT_MS     1000  /* a terminal's keystrokes wait this long for its first size */

enum {
        FD_PID,
        FD_OUT,
        FD_ERR,
        FD_IN,
        FD_ATTACH
};

struct rc {
        struct session *s;
        struct spdy_stream *ch[XP_RC_CHANNELS]; /* SPDY: the stream of each channel */
        int64_t setup_deadline_ms;
        bool started, finished;
        /* exec */
        pid_t pid;
        int pidfd, report_fd, pty;
        int in_fd, out_fd, err_fd;
        bool exited;
        int status;
        int64_t drain_deadline_ms;
        /* attach */
        int attach_fd;
        struct shimq to_shim; /* stdin, sizes and stdin's end, in order */
        /* stdin waiting to be written, and the client's end of it */
        uint8_t *stdin_buf;
        size_t stdin_len, stdin_off;
        bool stdin_eof;
        char resize[XP_RC_RESIZE_MAX + 1]; /* SPDY: a terminal size message so far */
        size_t resize_len;
        char *failure; /* a Status to end with instead of the command's */
        /* exec with a terminal: the command starts once the first terminal size came (kubectl
         * sends it at once), so that it sees its size from the start; or after a second */
        bool start_deferred, have_size;
        int64_t start_deadline_ms;
        struct winsize size;
        int poll_kind[8];
};

static struct rc *rc_of(struct session *s)
{
        return s->state;
}

static int rc_send(struct rc *rc, int ch, const void *data, size_t len)
{
        struct session *s = rc->s;

        if (s->req.websocket)
                return sconn_ws_send(&s->conn, (uint8_t)ch, data, len);
        if (!rc->ch[ch])
                return 0;
        return spdy_send(&s->spdy, rc->ch[ch], data, len, false);
}

/* The Status on the error channel, then the end: a close frame, or each stream's FIN. */
static void finish(struct rc *rc, const char *status)
{
        struct session *s = rc->s;

        if (rc->finished)
                return;
        rc->finished = true;
        if (status)
                (void)rc_send(rc, XP_RC_ERROR, status, strlen(status));
        if (s->req.websocket) {
                sconn_ws_close(&s->conn, XP_WS_CLOSE_NORMAL, NULL);
                return;
        }
        for (int i = 0; i < XP_RC_CHANNELS; i++)
                if (rc->ch[i] && !rc->ch[i]->local_fin)
                        (void)spdy_send(&s->spdy, rc->ch[i], NULL, 0, true);
}

static void fail_with(struct rc *rc, const char *fmt, ...) _printf_(2, 3);
static void fail_with(struct rc *rc, const char *fmt, ...)
{
        _cleanup_free_ char *msg = NULL;
        va_list ap;
        int n;

        if (rc->failure)
                return;
        va_start(ap, fmt);
        n = vasprintf(&msg, fmt, ap);
        va_end(ap);
        rc->failure = n >= 0 ? xp_rc_status_error(msg) : NULL;
}

/* ---- the client's input ------------------------------------------------------------------- */

static void stdin_add(struct rc *rc, const uint8_t *data, size_t len)
{
        uint8_t *p;

        if (!rc->s->req.in || rc->stdin_eof || len == 0)
                return;
        if (rc->s->req.kind == STREAM_ATTACH) {
                /* in line with the sizes: a size takes effect before the keystrokes after it */
                if (shimq_stdin(&rc->to_shim, data, len) < 0)
                        fail_with(rc, "out of memory");
                return;
        }
        if (rc->stdin_off == rc->stdin_len)
                rc->stdin_off = rc->stdin_len = 0;
        p = realloc(rc->stdin_buf, rc->stdin_len + len);
        if (!p) {
                fail_with(rc, "out of memory");
                return;
        }
        memcpy(p + rc->stdin_len, data, len);
        rc->stdin_buf = p;
        rc->stdin_len += len;
}

static size_t stdin_pending(const struct rc *rc)
{
        return rc->stdin_len - rc->stdin_off;
}

/* What the client sent that waits for the command or the shim: past STREAM_OUT_HIGH no more is
 * read, and the client waits on its socket. */
static size_t input_backlog(const struct rc *rc)
{
        return stdin_pending(rc) + rc->to_shim.bytes;
}

/* The client's stdin ended (once). */
static void stdin_end(struct rc *rc)
{
        if (rc->stdin_eof)
                return;
        rc->stdin_eof = true;
        if (rc->s->req.kind == STREAM_ATTACH && rc->s->req.in &&
            shimq_stdin_close(&rc->to_shim) < 0)
                fail_with(rc, "out of memory");
}

static void resize(struct rc *rc, const uint8_t *data, size_t len)
{
        struct winsize ws = {0};
        const char *why = NULL;
        uint16_t w, h;

        if (xp_rc_parse_resize(data, len, &w, &h, &why) < 0) {
                fail_with(rc, "invalid resize message: %s", why);
                return;
        }
        ws.ws_col = w;
        ws.ws_row = h;
        rc->size = ws;
        rc->have_size = true;
        if (rc->pty >= 0 && ioctl(rc->pty, TIOCSWINSZ, &ws) < 0)
                xp_debug("stream", "resizing the terminal: %s", strerror(errno));
        /* attach: the shim sets it on the container's terminal (when it has one) */
        if (rc->s->req.kind == STREAM_ATTACH && shimq_resize(&rc->to_shim, w, h) < 0)
                fail_with(rc, "out of memory");
}

/* SPDY: the resize stream is JSON objects, one per line, cut anywhere. */
static void resize_bytes(struct rc *rc, const uint8_t *data, size_t len)
{
        for (size_t i = 0; i < len && !rc->failure; i++) {
                if (data[i] == '\n') {
                        resize(rc, (const uint8_t *)rc->resize, rc->resize_len);
                        rc->resize_len = 0;
                } else if (rc->resize_len == XP_RC_RESIZE_MAX) {
                        fail_with(
                            rc,
                            "invalid resize message: terminal size message longer than %d bytes",
                            XP_RC_RESIZE_MAX);
                } else {
                        rc->resize[rc->resize_len++] = (char)data[i];
                }
        }
}

static int ws_input(struct rc *rc)
{
        const uint8_t *data;
        size_t len;
        int r = 0;

        /* a full stdin stops reading: the client then waits on its socket */
        while (input_backlog(rc) < STREAM_OUT_HIGH && !rc->failure &&
               (r = sconn_ws_next(&rc->s->conn, &data, &len)) > 0) {
                if (len == 0)
                        continue;
                if (data[0] == XP_RC_STDIN)
                        stdin_add(rc, data + 1, len - 1);
                else if (data[0] == XP_RC_RESIZE)
                        resize(rc, data + 1, len - 1);
                else if (data[0] == XP_RC_CLOSE && len == 2 && data[1] == XP_RC_STDIN &&
                         strcmp(rc->s->req.protocol, XP_RC_V5) == 0)
                        stdin_end(rc);
                /* anything else is for a channel the client does not write: dropped */
        }
        return r < 0 ? r : 0;
}

static int spdy_open(void *cls, struct spdy_stream *st)
{
        struct rc *rc = cls;
        int ch = xp_rc_channel_from_stream_type(xp_spdy_headers_get(&st->headers, "streamtype"));

        if (ch < 0 || rc->ch[ch] || rc->started)
                return -EINVAL;
        st->tag = ch;
        rc->ch[ch] = st;
        return 0;
}

static void spdy_data(void *cls, struct spdy_stream *st, const uint8_t *data, size_t len)
{
        struct rc *rc = cls;

        if (st->tag == XP_RC_STDIN)
                stdin_add(rc, data, len);
        else if (st->tag == XP_RC_RESIZE)
                resize_bytes(rc, data, len);
}

static void spdy_fin(void *cls, struct spdy_stream *st)
{
        struct rc *rc = cls;

        if (st->tag == XP_RC_STDIN)
                stdin_end(rc);
}

static void spdy_reset_stream(void *cls, struct spdy_stream *st)
{
        struct rc *rc = cls;

        if (st->tag >= 0 && st->tag < XP_RC_CHANNELS && rc->ch[st->tag] == st)
                rc->ch[st->tag] = NULL;
        if (st->tag == XP_RC_STDIN)
                stdin_end(rc);
}

static int rc_input(struct session *s)
{
        struct rc *rc = rc_of(s);
        const struct spdy_handler h = {.open = spdy_open,
                                       .data = spdy_data,
                                       .fin = spdy_fin,
                                       .reset = spdy_reset_stream,
                                       .cls = rc};

        if (s->req.websocket)
                return ws_input(rc);
        if (input_backlog(rc) >= STREAM_OUT_HIGH)
                return 0;
        return spdy_process(&s->spdy, &h);
}

/* ---- starting ------------------------------------------------------------------------------ */

/* A terminal: the master stays here, the slave goes to the command. -errno. */
static int open_pty(struct rc *rc, int *ret_slave, struct xp_error *err)
{
        const struct stream_request *req = &rc->s->req;
        int r =
            xp_runtime_exec_pty(rc->s->runtime, req->uid, req->container, &rc->pty, ret_slave, err);

        if (r >= 0 && rc->have_size)
                (void)ioctl(rc->pty, TIOCSWINSZ, &rc->size);
        return r;
}

/* A pipe for one of the command's stdio: ours (non-blocking) and its. */
static int stdio_pipe(bool want, bool ours_writes, int *ours, int *theirs)
{
        int p[2];

        if (!want)
                return 0;
        if (pipe2(p, O_CLOEXEC) < 0)
                return -errno;
        *ours = ours_writes ? p[1] : p[0];
        *theirs = ours_writes ? p[0] : p[1];
        fcntl(*ours, F_SETFL, fcntl(*ours, F_GETFL) | O_NONBLOCK);
        return 0;
}

static int exec_start(struct rc *rc)
{
        const struct stream_request *req = &rc->s->req;
        struct xp_exec_options o = {
            .argv = req->argv, .tty = req->tty, .stdin_fd = -1, .stdout_fd = -1, .stderr_fd = -1};
        struct xp_error err = {0};
        int slave = -1, r;

        if (req->tty) {
                r = open_pty(rc, &slave, &err);
                o.stdin_fd = o.stdout_fd = o.stderr_fd = slave;
                rc->in_fd = req->in ? rc->pty : -1;
                rc->out_fd = rc->pty;
        } else {
                r = stdio_pipe(req->in, true, &rc->in_fd, &o.stdin_fd);
                if (r >= 0)
                        r = stdio_pipe(req->out, false, &rc->out_fd, &o.stdout_fd);
                if (r >= 0)
                        r = stdio_pipe(req->err, false, &rc->err_fd, &o.stderr_fd);
        }
        if (r >= 0)
                r = xp_runtime_exec(
                    rc->s->runtime, req->uid, req->container, &o, &rc->pid, &rc->report_fd, &err);
        else if (!req->tty)
                xp_errorf(&err, r, "setting up the command's stdio: %s", strerror(-r));
        if (slave >= 0)
                close(slave);
        else
                for (int i = 0; i < 3; i++) {
                        int fd = i == 0 ? o.stdin_fd : i == 1 ? o.stdout_fd : o.stderr_fd;

                        if (fd >= 0)
                                close(fd);
                }
        if (r < 0) {
                fail_with(rc, "error executing command in container: %s", xp_error_message(&err));
                return 0;
        }
        rc->pidfd = (int)syscall(SYS_pidfd_open, rc->pid, 0);
        if (rc->pidfd < 0)
                fail_with(rc, "pidfd_open: %s", strerror(errno));
        return 0;
}

/* The shim's HELLO, within a second or two. */
static int attach_start(struct rc *rc)
{
        const struct stream_request *req = &rc->s->req;
        struct xp_error err = {0};
        struct pollfd p;
        uint8_t hello[2], open_msg = XP_ATTACH_STDIN_OPEN;
        int r;

        r = xp_runtime_attach(rc->s->runtime, req->uid, req->container, &rc->attach_fd, &err);
        if (r < 0) {
                fail_with(rc, "error attaching to container: %s", xp_error_message(&err));
                return 0;
        }
        p = (struct pollfd){.fd = rc->attach_fd, .events = POLLIN};
        if (poll(&p, 1, 2000) <= 0 || recv(rc->attach_fd, hello, sizeof(hello), 0) != 2 ||
            hello[0] != XP_ATTACH_HELLO) {
                fail_with(rc, "error attaching to container: the container's shim did not answer");
                return 0;
        }
        fcntl(rc->attach_fd, F_SETFL, fcntl(rc->attach_fd, F_GETFL) | O_NONBLOCK);
        /* ahead of the queue: the shim takes stdin only from a client that opened it */
        if (req->in && (hello[1] & XP_ATTACH_HAS_STDIN))
                (void)send(rc->attach_fd, &open_msg, 1, MSG_NOSIGNAL);
        if (!(hello[1] & XP_ATTACH_HAS_TTY))
                rc->to_shim.await_size = false; /* no terminal: no size to wait for */
        return 0;
}

/* Everything the client was to open is there: the command runs. */
static int begin(struct rc *rc)
{
        const struct stream_request *req = &rc->s->req;
        int r;

        rc->started = true;
        if (req->websocket) {
                /* an empty message on the first channel it reads: the kubelet's sign that the
                 * connection is up */
                int ch = req->out ? XP_RC_STDOUT : req->err ? XP_RC_STDERR : XP_RC_ERROR;

                r = rc_send(rc, ch, NULL, 0);
                if (r < 0)
                        return r;
        }
        if (req->kind == STREAM_EXEC && req->tty && !rc->have_size) {
                rc->start_deferred = true;
                rc->start_deadline_ms = stream_now_ms() + SIZE_WAIT_MS;
                return 0;
        }
        return req->kind == STREAM_EXEC ? exec_start(rc) : attach_start(rc);
}

static bool streams_complete(const struct rc *rc)
{
        const struct stream_request *req = &rc->s->req;

        return rc->ch[XP_RC_ERROR] && (!req->in || rc->ch[XP_RC_STDIN]) &&
               (!req->out || rc->ch[XP_RC_STDOUT]) && (!req->err || rc->ch[XP_RC_STDERR]) &&
               (!req->tty || rc->ch[XP_RC_RESIZE]);
}

static int rc_start(struct session *s)
{
        struct rc *rc = calloc(1, sizeof(*rc));

        if (!rc)
                return -ENOMEM;
        *rc = (struct rc){.s = s,
                          .pidfd = -1,
                          .report_fd = -1,
                          .pty = -1,
                          .in_fd = -1,
                          .out_fd = -1,
                          .err_fd = -1,
                          .attach_fd = -1};
        s->state = rc;
        shimq_init(&rc->to_shim,
                   stream_now_ms(),
                   s->req.kind == STREAM_ATTACH && s->req.tty ? SIZE_WAIT_MS : 0);
        rc->setup_deadline_ms = stream_now_ms() + SETUP_TIMEOUT_MS;
        return s->req.websocket ? begin(rc) : 0;
}

/* ---- running --------------------------------------------------------------------------------- */

/* What the command or the shim wrote, to its channel; 0 at EOF (fd closed), -errno. */
static int pump_output(struct rc *rc, int *fd, int ch)
{
        uint8_t buf[STREAM_CHUNK];
        ssize_t n = read(*fd, buf, sizeof(buf));

        if (n < 0 && (errno == EAGAIN || errno == EINTR))
                return 1;
        if (n <= 0) {
                /* EOF, or EIO from a terminal whose last user closed it */
                close(*fd);
                if (rc->in_fd == *fd)
                        rc->in_fd = -1;
                if (rc->pty == *fd)
                        rc->pty = -1;
                *fd = -1;
                return 0;
        }
        if (rc->exited)
                rc->drain_deadline_ms = stream_now_ms() + DRAIN_MS;
        return rc_send(rc, ch, buf, (size_t)n) < 0 ? -ENOMEM : 1;
}

/* Writes pending stdin to the command; closes its stdin once the client's ended. */
static void pump_stdin(struct rc *rc)
{
        while (rc->in_fd >= 0 && stdin_pending(rc) > 0) {
                ssize_t n = write(rc->in_fd, rc->stdin_buf + rc->stdin_off, stdin_pending(rc));

                if (n < 0 && (errno == EAGAIN || errno == EINTR))
                        return;
                if (n < 0) {
                        /* the command closed its stdin: the rest is dropped */
                        rc->stdin_off = rc->stdin_len;
                        break;
                }
                rc->stdin_off += (size_t)n;
        }
        if (rc->stdin_eof && stdin_pending(rc) == 0 && rc->in_fd >= 0 && rc->in_fd != rc->pty) {
                close(rc->in_fd);
                rc->in_fd = -1;
        }
}

/* One message from the shim's attach socket. */
static void attach_message(struct rc *rc)
{
        static uint8_t buf[XP_ATTACH_DATA_MAX + 1];
        ssize_t n = recv(rc->attach_fd, buf, sizeof(buf), MSG_DONTWAIT);

        if (n < 0 && (errno == EAGAIN || errno == EINTR))
                return;
        if (n <= 0 || buf[0] == XP_ATTACH_EXIT) {
                close(rc->attach_fd);
                rc->attach_fd = -1;
                return;
        }
        if ((buf[0] == XP_ATTACH_STDOUT && rc->s->req.out) ||
            (buf[0] == XP_ATTACH_STDERR && rc->s->req.err))
                (void)rc_send(rc,
                              buf[0] == XP_ATTACH_STDOUT ? XP_RC_STDOUT : XP_RC_STDERR,
                              buf + 1,
                              (size_t)n - 1);
}

/* stdin, sizes and stdin's end to the shim, in order, as far as its socket takes them. */
static void attach_flush(struct rc *rc)
{
        int r = rc->attach_fd >= 0 ? shimq_flush(&rc->to_shim, rc->attach_fd, stream_now_ms()) : 0;

        if (r < 0) /* the shim went away: its socket's end says the rest */
                xp_debug("stream", "attach: the shim's socket: %s", strerror(-r));
}

static void add_fd(struct rc *rc, struct pollfd *fds, size_t *n, int kind, int fd, short events)
{
        if (fd < 0 || !events)
                return;
        rc->poll_kind[*n] = kind;
        fds[(*n)++] = (struct pollfd){.fd = fd, .events = events};
}

static size_t rc_poll(struct session *s, struct pollfd *fds, size_t max)
{
        struct rc *rc = rc_of(s);
        bool room = sconn_pending(&s->conn) < STREAM_OUT_HIGH;
        size_t n = 0;

        if (!rc->started || rc->finished || rc->failure || max < 5)
                return 0;
        add_fd(rc, fds, &n, FD_PID, rc->exited ? -1 : rc->pidfd, POLLIN);
        add_fd(rc, fds, &n, FD_OUT, rc->out_fd, room ? POLLIN : 0);
        add_fd(rc, fds, &n, FD_ERR, rc->err_fd, room ? POLLIN : 0);
        add_fd(rc, fds, &n, FD_IN, rc->in_fd, stdin_pending(rc) ? POLLOUT : 0);
        add_fd(rc,
               fds,
               &n,
               FD_ATTACH,
               rc->attach_fd,
               (short)((room ? POLLIN : 0) |
                       (shimq_ready(&rc->to_shim, stream_now_ms()) ? POLLOUT : 0)));
        return n;
}

/* The helper ended: the command's status, or why it never ran (its report). */
static void reap(struct rc *rc)
{
        char msg[512];
        ssize_t len = 0, k;
        int st;

        if (waitpid(rc->pid, &st, WNOHANG) != rc->pid)
                return;
        rc->exited = true;
        rc->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        rc->drain_deadline_ms = stream_now_ms() + DRAIN_MS;
        fcntl(rc->report_fd, F_SETFL, fcntl(rc->report_fd, F_GETFL) | O_NONBLOCK);
        while ((size_t)len < sizeof(msg) - 1 &&
               (k = read(rc->report_fd, msg + len, sizeof(msg) - 1 - (size_t)len)) > 0)
                len += k;
        msg[len] = '\0';
        while (len > 0 && msg[len - 1] == '\n')
                msg[--len] = '\0';
        if (len > 0)
                fail_with(rc, "error executing command in container: %s", msg);
}

static int rc_handle(struct session *s, const struct pollfd *fds, size_t n)
{
        struct rc *rc = rc_of(s);
        int r = 0;

        for (size_t i = 0; i < n && r >= 0; i++) {
                if (!fds[i].revents)
                        continue;
                switch (rc->poll_kind[i]) {
                case FD_PID:
                        reap(rc);
                        break;
                case FD_OUT:
                        r = pump_output(rc, &rc->out_fd, XP_RC_STDOUT);
                        break;
                case FD_ERR:
                        r = pump_output(rc, &rc->err_fd, XP_RC_STDERR);
                        break;
                case FD_IN:
                        pump_stdin(rc);
                        break;
                default:
                        if (fds[i].revents & POLLOUT)
                                attach_flush(rc);
                        if (rc->attach_fd >= 0 && (fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
                                attach_message(rc);
                }
        }
        pump_stdin(rc);
        attach_flush(rc);
        return r < 0 ? r : 0;
}

/* Whether everything is said: then the Status goes out. */
static bool rc_done(struct session *s)
{
        struct rc *rc = rc_of(s);
        const struct stream_request *req = &s->req;
        _cleanup_free_ char *status = NULL;

        if (rc->finished)
                return true;
        if (!rc->started && !rc->failure && stream_now_ms() > rc->setup_deadline_ms)
                fail_with(rc,
                          "the client did not open the streams it asked for within %d s",
                          SETUP_TIMEOUT_MS / 1000);
        if (!rc->failure) {
                if (!rc->started)
                        return false;
                if (req->kind == STREAM_ATTACH && rc->attach_fd >= 0)
                        return false;
                if (req->kind == STREAM_EXEC && rc->start_deferred)
                        return false;
                if (req->kind == STREAM_EXEC) {
                        bool outputs = rc->out_fd >= 0 || rc->err_fd >= 0;

                        if (!rc->exited)
                                return false;
                        /* a slow client is no silent pipe: while it holds the pipes unread (no
                         * room), their time does not run */
                        if (outputs && sconn_pending(&s->conn) >= STREAM_OUT_HIGH)
                                rc->drain_deadline_ms = stream_now_ms() + DRAIN_MS;
                        if (outputs && stream_now_ms() < rc->drain_deadline_ms)
                                return false;
                }
        }
        if (rc->failure)
                status = TAKE_PTR(rc->failure);
        else
                status = xp_rc_status_exit(req->kind == STREAM_EXEC ? req->argv : NULL,
                                           req->kind == STREAM_EXEC ? rc->status : 0);
        finish(rc, status);
        return true;
}

/* Ends the command's whole group (the helper does that on SIGTERM) and waits for it. */
static void stop_command(struct rc *rc)
{
        struct pollfd p = {.fd = rc->pidfd, .events = POLLIN};

        if (rc->pid <= 0 || rc->exited)
                return;
        kill(rc->pid, SIGTERM);
        if (rc->pidfd < 0 || poll(&p, 1, STOP_WAIT_MS) <= 0)
                kill(rc->pid, SIGKILL);
        while (waitpid(rc->pid, NULL, 0) < 0 && errno == EINTR)
                ;
        rc->exited = true;
}

static void rc_abort(struct session *s)
{
        stop_command(rc_of(s));
}

static void close_fd(int *fd)
{
        if (*fd >= 0)
                close(*fd);
        *fd = -1;
}

static void rc_free(struct session *s)
{
        struct rc *rc = rc_of(s);

        if (!rc)
                return;
        stop_command(rc);
        if (rc->in_fd == rc->pty || rc->in_fd == rc->out_fd)
                rc->in_fd = -1;
        if (rc->out_fd == rc->pty)
                rc->out_fd = -1;
        close_fd(&rc->pidfd);
        close_fd(&rc->report_fd);
        close_fd(&rc->pty);
        close_fd(&rc->in_fd);
        close_fd(&rc->out_fd);
        close_fd(&rc->err_fd);
        close_fd(&rc->attach_fd);
        free(rc->stdin_buf);
        shimq_free(&rc->to_shim);
        free(rc->failure);
        free(rc);
        s->state = NULL;
}

/* SPDY: once every stream the client asked for is open, the command starts. */
static int rc_input_all(struct session *s)
{
        struct rc *rc = rc_of(s);
        int r = rc_input(s);

        if (r >= 0 && !s->req.websocket && !rc->started && streams_complete(rc))
                r = begin(rc);
        if (r >= 0 && rc->start_deferred && !rc->failure &&
            (rc->have_size || stream_now_ms() >= rc->start_deadline_ms)) {
                rc->start_deferred = false;
                r = exec_start(rc);
        }
        if (r >= 0)
                attach_flush(rc);
        return r;
}

/* The first size's deadline: for exec's start, and for attach's queued keystrokes. */
static int64_t rc_due(struct session *s)
{
        struct rc *rc = rc_of(s);
        int64_t due = rc->attach_fd >= 0 ? shimq_due(&rc->to_shim) : INT64_MAX;

        if (rc->start_deferred && !rc->failure && rc->start_deadline_ms < due)
                due = rc->start_deadline_ms;
        return due;
}

const struct session_ops xp_stream_exec_ops = {
    .start = rc_start,
    .input = rc_input_all,
    .poll = rc_poll,
    .handle = rc_handle,
    .due = rc_due,
    .done = rc_done,
    .abort = rc_abort,
    .free = rc_free,
};
