/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Attach (xpool/attach.h): the shim's server (attach_internal.h) and the agent's way in
 * (xp_runtime_attach()). The socket's path can be longer than a sockaddr_un holds (state
 * directories are deep), so both sides name it through /proc/self/fd/N of the directory.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "attach_internal.h"
#include "runtime_internal.h"
#include "xpool/macro.h"

enum {
        POLL_LISTEN = -1,
        POLL_STDIN = -2
};

struct attach_record {
        size_t len;
        struct attach_record *next;
        char data[];
};

static void socket_path(int dir_fd, struct sockaddr_un *sa)
{
        *sa = (struct sockaddr_un){.sun_family = AF_UNIX};
        snprintf(sa->sun_path, sizeof(sa->sun_path), "/proc/self/fd/%d/" XP_ATTACH_SOCKET, dir_fd);
}

int attach_open(
    struct attach *a, const char *dir, int stdin_fd, bool stdin_once, struct xp_error *err)
{
        struct sockaddr_un sa;
        int r;

        *a = (struct attach){.opened = true,
                             .dir_fd = -1,
                             .listen_fd = -1,
                             .stdin_fd = stdin_fd,
                             .tty_fd = -1,
                             .stdin_once = stdin_once};
        for (size_t i = 0; i < XP_ATTACH_CLIENTS; i++)
                a->clients[i].fd = -1;
        a->dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        a->listen_fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (a->dir_fd < 0 || a->listen_fd < 0) {
                r = -errno;
                return xp_errorf(err, r, "%s: attach socket: %s", dir, strerror(-r));
        }
        socket_path(a->dir_fd, &sa);
        unlinkat(a->dir_fd, XP_ATTACH_SOCKET, 0);
        if (bind(a->listen_fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
            fchmodat(a->dir_fd, XP_ATTACH_SOCKET, 0600, 0) < 0 || listen(a->listen_fd, 8) < 0) {
                r = -errno;
                return xp_errorf(err, r, "%s: attach socket: %s", dir, strerror(-r));
        }
        if (stdin_fd >= 0)
                fcntl(stdin_fd, F_SETFL, fcntl(stdin_fd, F_GETFL) | O_NONBLOCK);
        return 0;
}

void attach_tty(struct attach *a, int tty_fd)
{
        if (a->tty_fd >= 0)
                close(a->tty_fd);
        a->tty_fd = tty_fd;
}

static void client_drop(struct attach *a, struct attach_client *c)
{
        while (c->queue) {
                struct attach_record *rec = c->queue;

                c->queue = rec->next;
                free(rec);
        }
        close(c->fd);
        /* stdinOnce: the first client that wrote stdin takes it with it */
        if (c->writes_stdin && a->stdin_once && a->stdin_fd >= 0 &&
            a->pending_off >= a->pending_len) {
                close(a->stdin_fd);
                a->stdin_fd = -1;
        }
        *c = (struct attach_client){.fd = -1};
}

/* Sends what c has queued, as far as its socket takes it. */
static void client_flush(struct attach *a, struct attach_client *c)
{
        while (c->queue) {
                struct attach_record *rec = c->queue;
                ssize_t n = send(c->fd, rec->data, rec->len, MSG_DONTWAIT | MSG_NOSIGNAL);

                if (n < 0 && errno == EAGAIN)
                        return;
                if (n < 0) {
                        client_drop(a, c);
                        return;
                }
                c->queue = rec->next;
                if (!c->queue)
                        c->queue_tail = NULL;
                c->queued -= rec->len;
                free(rec);
        }
}

/* Queues one message for c: a client that lets too much pile up is dropped. */
static void
client_send(struct attach *a, struct attach_client *c, uint8_t type, const char *data, size_t len)
{
        struct attach_record *rec;

        if (c->queued + len + 1 > XP_ATTACH_QUEUE_MAX) {
                client_drop(a, c);
                return;
        }
        rec = malloc(sizeof(*rec) + len + 1);
        if (!rec) {
                client_drop(a, c);
                return;
        }
        rec->len = len + 1;
        rec->next = NULL;
        rec->data[0] = (char)type;
        if (len)
                memcpy(rec->data + 1, data, len);
        if (c->queue_tail)
                c->queue_tail->next = rec;
        else
                c->queue = rec;
        c->queue_tail = rec;
        c->queued += rec->len;
        client_flush(a, c);
}

static void accept_client(struct attach *a)
{
        int fd = accept4(a->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        char hello;

        if (fd < 0)
                return;
        for (size_t i = 0; i < XP_ATTACH_CLIENTS; i++)
                if (a->clients[i].fd < 0) {
                        a->clients[i].fd = fd;
                        hello = (char)((a->stdin_fd >= 0 ? XP_ATTACH_HAS_STDIN : 0) |
                                       (a->tty_fd >= 0 ? XP_ATTACH_HAS_TTY : 0));
                        client_send(a, &a->clients[i], XP_ATTACH_HELLO, &hello, 1);
                        return;
                }
        close(fd); /* too many at once */
}

static void stdin_write(struct attach *a)
{
        while (a->stdin_fd >= 0 && a->pending_off < a->pending_len) {
                ssize_t n = write(
                    a->stdin_fd, a->pending + a->pending_off, a->pending_len - a->pending_off);

                if (n < 0 && errno == EAGAIN)
                        return;
                if (n < 0) {
                        /* the container closed its stdin: what comes is dropped */
                        close(a->stdin_fd);
                        a->stdin_fd = -1;
                        break;
                }
                a->pending_off += (size_t)n;
        }
        a->pending_off = a->pending_len = 0;
}

/* RESIZE: columns and rows, as TIOCSWINSZ takes them; a malformed one is dropped. */
static void tty_resize(struct attach *a, const char *payload, size_t len)
{
        struct winsize ws = {0};
        uint16_t size[2];

        if (a->tty_fd < 0 || len != sizeof(size))
                return;
        memcpy(size, payload, sizeof(size));
        ws.ws_col = size[0];
        ws.ws_row = size[1];
        (void)ioctl(a->tty_fd, TIOCSWINSZ, &ws);
}

/* One message from client c. */
static void client_read(struct attach *a, struct attach_client *c)
{
        char buf[XP_ATTACH_DATA_MAX + 1];
        ssize_t n;

        if (a->pending_off < a->pending_len)
                return; /* stdin first takes what it has */
        n = recv(c->fd, buf, sizeof(buf), MSG_DONTWAIT);
        if (n < 0 && errno == EAGAIN)
                return;
        if (n <= 0) {
                client_drop(a, c);
                return;
        }
        switch ((uint8_t)buf[0]) {
        case XP_ATTACH_STDIN_OPEN:
                c->writes_stdin = a->stdin_fd >= 0;
                break;
        case XP_ATTACH_STDIN:
                if (!c->writes_stdin || a->stdin_fd < 0 || n == 1)
                        break;
                free(a->pending);
                a->pending = malloc((size_t)n - 1);
                if (!a->pending)
                        break;
                memcpy(a->pending, buf + 1, (size_t)n - 1);
                a->pending_len = (size_t)n - 1;
                a->pending_off = 0;
                stdin_write(a);
                break;
        case XP_ATTACH_STDIN_CLOSE:
                if (c->writes_stdin && a->stdin_once && a->stdin_fd >= 0) {
                        stdin_write(a);
                        close(a->stdin_fd);
                        a->stdin_fd = -1;
                }
                c->writes_stdin = false;
                break;
        case XP_ATTACH_RESIZE:
                tty_resize(a, buf + 1, (size_t)n - 1);
                break;
        default:
                client_drop(a, c); /* not a client of this protocol */
        }
}

size_t attach_poll(struct attach *a, struct pollfd *fds)
{
        bool stdin_busy = a->stdin_fd >= 0 && a->pending_off < a->pending_len;
        size_t n = 0;

        if (!a->opened || a->listen_fd < 0)
                return 0;
        a->poll_kind[n] = POLL_LISTEN;
        fds[n++] = (struct pollfd){.fd = a->listen_fd, .events = POLLIN};
        if (stdin_busy) {
                a->poll_kind[n] = POLL_STDIN;
                fds[n++] = (struct pollfd){.fd = a->stdin_fd, .events = POLLOUT};
        }
        for (size_t i = 0; i < XP_ATTACH_CLIENTS; i++) {
                struct attach_client *c = &a->clients[i];

                if (c->fd < 0)
                        continue;
                a->poll_kind[n] = (int)i;
                /* while stdin waits, no more is read from anyone */
                fds[n++] = (struct pollfd){
                    .fd = c->fd,
                    .events = (short)((stdin_busy ? 0 : POLLIN) | (c->queue ? POLLOUT : 0))};
        }
        return n;
}

void attach_handle(struct attach *a, const struct pollfd *fds, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                struct attach_client *c;

                if (!fds[i].revents)
                        continue;
                if (a->poll_kind[i] == POLL_LISTEN) {
                        accept_client(a);
                        continue;
                }
                if (a->poll_kind[i] == POLL_STDIN) {
                        stdin_write(a);
                        continue;
                }
                c = &a->clients[a->poll_kind[i]];
                if (c->fd != fds[i].fd)
                        continue; /* dropped meanwhile */
                if (fds[i].revents & POLLOUT)
                        client_flush(a, c);
                if (c->fd >= 0 && (fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
                        client_read(a, c);
        }
}

void attach_output(struct attach *a, bool err, const char *data, size_t len)
{
        for (size_t i = 0; a->opened && i < XP_ATTACH_CLIENTS; i++) {
                size_t off = 0;

                while (a->clients[i].fd >= 0 && off < len) {
                        size_t k = len - off > XP_ATTACH_DATA_MAX ? XP_ATTACH_DATA_MAX : len - off;

                        client_send(a,
                                    &a->clients[i],
                                    err ? XP_ATTACH_STDERR : XP_ATTACH_STDOUT,
                                    data + off,
                                    k);
                        off += k;
                }
        }
}

void attach_close(struct attach *a)
{
        for (size_t i = 0; a->opened && i < XP_ATTACH_CLIENTS; i++)
                if (a->clients[i].fd >= 0) {
                        client_send(a, &a->clients[i], XP_ATTACH_EXIT, NULL, 0);
                        if (a->clients[i].fd >= 0)
                                client_drop(a, &a->clients[i]);
                }
        if (a->listen_fd >= 0) {
                close(a->listen_fd);
                unlinkat(a->dir_fd, XP_ATTACH_SOCKET, 0);
        }
        if (a->dir_fd >= 0)
                close(a->dir_fd);
        if (a->stdin_fd >= 0)
                close(a->stdin_fd);
        if (a->tty_fd >= 0)
                close(a->tty_fd);
        free(a->pending);
        *a = (struct attach){.dir_fd = -1, .listen_fd = -1, .stdin_fd = -1, .tty_fd = -1};
}

int xp_runtime_attach(struct xp_runtime *rt,
                      const char *pod_uid,
                      const char *container,
                      int *ret_fd,
                      struct xp_error *err)
{
        char dir[PATH_MAX];
        struct sockaddr_un sa;
        _cleanup_close_ int dir_fd = -1, fd = -1;
        pid_t pid;
        int n, r;

        if (!pod_uid || !container || strchr(pod_uid, '/') || strchr(container, '/') ||
            !pod_uid[0] || !container[0] || pod_uid[0] == '.' || container[0] == '.')
                return xp_errorf(err, -EINVAL, "not a pod uid or container name");
        n = snprintf(dir, sizeof(dir), "%s/%s/%s", runtime_state_dir(rt), pod_uid, container);
        if (n < 0 || n >= (int)sizeof(dir))
                return xp_errorf(err, -ENAMETOOLONG, "path too long");
        r = runtime_running_pid(dir, &pid, err);
        if (r < 0)
                return r;
        dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        if (dir_fd < 0 || fd < 0)
                return xp_errorf(err, -errno, "attach: %m");
        socket_path(dir_fd, &sa);
        if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
                return xp_errorf(err,
                                 errno == ENOENT || errno == ECONNREFUSED ? -ESRCH : -errno,
                                 "attach: the container's shim does not answer: %m");
        *ret_fd = TAKE_FD(fd);
        return 0;
}
