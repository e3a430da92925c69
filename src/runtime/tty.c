/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Terminals for containers and the commands run in them (xpool/runtime.h, shim_internal.h): the
 * pseudo-terminal pair, the TERM a command on a terminal gets, as containerd gives it, and the
 * console socket an OCI runtime hands a container's terminal over (`crun create --console-socket`:
 * one connection whose message carries the master as SCM_RIGHTS).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "shim_internal.h"
#include "xpool/runtime.h"

#define CONSOLE_SOCKET  "console.sock"
#define CONSOLE_WAIT_MS 2000

/*
 * A new terminal is 0x0, and programs that ask its size before anyone attached and resized it
 * fail (busybox's stty, top) or lay out nothing; a client's size replaces this one. 80x24: the
 * VT100's, what a serial console and the programs' own fallbacks assume.
 */
static void pty_default_size(int master)
{
        struct winsize ws;

        if (ioctl(master, TIOCGWINSZ, &ws) < 0 || (ws.ws_row && ws.ws_col))
                return;
        ws = (struct winsize){.ws_row = XP_RUNTIME_TTY_ROWS, .ws_col = XP_RUNTIME_TTY_COLS};
        (void)ioctl(master, TIOCSWINSZ, &ws);
}

int xp_runtime_pty_open(int *ret_master, int *ret_slave)
{
        char name[64];
        int master, slave;

        master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
        if (master < 0)
                return -errno;
        if (grantpt(master) < 0 || unlockpt(master) < 0 || ptsname_r(master, name, sizeof(name)))
                goto fail;
        slave = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
        if (slave < 0)
                goto fail;
        fcntl(master, F_SETFL, fcntl(master, F_GETFL) | O_NONBLOCK);
        pty_default_size(master);
        *ret_master = master;
        *ret_slave = slave;
        return 0;
fail:
        slave = -errno;
        close(master);
        return slave;
}

int xp_runtime_exec_pty(struct xp_runtime *rt,
                        const char *pod_uid,
                        const char *container,
                        int *ret_master,
                        int *ret_slave,
                        struct xp_error *err)
{
        char dir[PATH_MAX], ptmx[64];
        pid_t pid;
        int master, slave, r;

        if (runtime_container_dir(rt, pod_uid, container, dir, NULL) < 0 ||
            runtime_running_pid(dir, &pid, NULL) < 0)
                return xp_errorf(err, -ESRCH, "container %s is not running", container);
        /* the container's own devpts: its slave is a /dev/pts/N the command can name. Never the
         * node's instead: a terminal there is one of the node's (an admin's session beside it),
         * and a container whose ptmx fails has no terminal to give */
        snprintf(ptmx, sizeof(ptmx), "/proc/%d/root/dev/pts/ptmx", (int)pid);
        master = open(ptmx, O_RDWR | O_NOCTTY | O_CLOEXEC);
        if (master < 0) {
                r = -errno;
                return xp_errorf(err,
                                 r,
                                 "cannot open a terminal in container %s: its /dev/pts/ptmx: %s",
                                 container,
                                 strerror(-r));
        }
        if (unlockpt(master) < 0 ||
            (slave = ioctl(master, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC)) < 0) {
                r = -errno;
                close(master);
                return xp_errorf(err,
                                 r,
                                 "cannot open a terminal in container %s: its devpts: %s",
                                 container,
                                 strerror(-r));
        }
        fcntl(master, F_SETFL, fcntl(master, F_GETFL) | O_NONBLOCK);
        pty_default_size(master);
        *ret_master = master;
        *ret_slave = slave;
        return 0;
}

char **shim_env_for_tty(char *const *env, bool tty)
{
        size_t n = 0;
        char **v;

        for (; env[n]; n++)
                if (strncmp(env[n], "TERM=", 5) == 0)
                        tty = false;
        v = calloc(n + 2, sizeof(*v));
        if (!v)
                return NULL;
        memcpy(v, env, n * sizeof(*v));
        if (tty)
                v[n] = (char *)"TERM=xterm";
        return v;
}

/* ---- the console socket of an OCI runtime ------------------------------------------------- */

int shim_console_open(const struct shim *s, struct shim_console *c, struct xp_error *err)
{
        struct sockaddr_un sa = {.sun_family = AF_UNIX};

        *c = (struct shim_console){.dir_fd = -1, .listen_fd = -1};
        c->dir_fd = open(s->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        c->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (c->dir_fd < 0 || c->listen_fd < 0)
                return xp_errorf(err, -errno, "%s: console socket: %m", s->dir);
        /* state directories are deep: the path goes through our directory's fd, as the host's
         * /proc names it for the runtime (a process of the host's pid namespace) */
        snprintf(sa.sun_path, sizeof(sa.sun_path), "/proc/self/fd/%d/" CONSOLE_SOCKET, c->dir_fd);
        snprintf(c->path,
                 sizeof(c->path),
                 "/proc/%d/fd/%d/" CONSOLE_SOCKET,
                 (int)(s->self > 0 ? s->self : getpid()),
                 c->dir_fd);
        unlinkat(c->dir_fd, CONSOLE_SOCKET, 0);
        if (bind(c->listen_fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
            fchmodat(c->dir_fd, CONSOLE_SOCKET, 0600, 0) < 0 || listen(c->listen_fd, 1) < 0)
                return xp_errorf(err, -errno, "%s: console socket: %m", s->dir);
        return 0;
}

int shim_console_receive(struct shim_console *c, int *ret_master, struct xp_error *err)
{
        union {
                struct cmsghdr h;
                char buf[CMSG_SPACE(sizeof(int))];
        } control = {0};
        char name[256];
        struct iovec iov = {.iov_base = name, .iov_len = sizeof(name)};
        struct msghdr msg = {.msg_iov = &iov,
                             .msg_iovlen = 1,
                             .msg_control = &control,
                             .msg_controllen = sizeof(control)};
        struct pollfd p = {.fd = c->listen_fd, .events = POLLIN};
        struct cmsghdr *cm;
        int fd, master = -1;

        /* the runtime sent it before its create returned: it waits in the backlog */
        if (poll(&p, 1, CONSOLE_WAIT_MS) <= 0)
                return xp_errorf(err, -ETIMEDOUT, "the OCI runtime sent no terminal");
        fd = accept4(c->listen_fd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0)
                return xp_errorf(err, -errno, "console socket: accept: %m");
        p = (struct pollfd){.fd = fd, .events = POLLIN};
        if (poll(&p, 1, CONSOLE_WAIT_MS) > 0 && recvmsg(fd, &msg, MSG_CMSG_CLOEXEC) >= 0)
                for (cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm))
                        if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS &&
                            cm->cmsg_len == CMSG_LEN(sizeof(int)))
                                memcpy(&master, CMSG_DATA(cm), sizeof(int));
        close(fd);
        if (master < 0)
                return xp_errorf(err, -EPROTO, "the OCI runtime sent no terminal");
        fcntl(master, F_SETFL, fcntl(master, F_GETFL) | O_NONBLOCK);
        pty_default_size(master);
        *ret_master = master;
        return 0;
}

void shim_console_close(struct shim_console *c)
{
        if (c->listen_fd >= 0) {
                close(c->listen_fd);
                unlinkat(c->dir_fd, CONSOLE_SOCKET, 0);
        }
        if (c->dir_fd >= 0)
                close(c->dir_fd);
        *c = (struct shim_console){.dir_fd = -1, .listen_fd = -1};
}
