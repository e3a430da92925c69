/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Running one CNI plugin (include/xpool/cni.h): posix_spawn (the agent is multi-threaded, so no
 * code of ours runs between fork and exec), the configuration written to its stdin, stdout and
 * stderr read at the same time with poll, everything bounded: the time it may take (its whole
 * process group is killed after it), and what it may print.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "xpool/cni.h"

/* What a plugin wrote to stderr that is kept for the message. */
#define STDERR_KEEP 2048

#define DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

extern char **environ;

int xp_cni_find_plugin(const char *bin_dirs, const char *type, char **ret, struct xp_error *err)
{
        const char *p = bin_dirs ? bin_dirs : "";

        if (!type || !*type || strchr(type, '/') || strcmp(type, ".") == 0 ||
            strcmp(type, "..") == 0)
                return xp_errorf(
                    err, -EINVAL, "CNI plugin \"%s\": not a plain file name", type ? type : "");
        while (*p) {
                size_t len = strcspn(p, ":");
                char *path;
                struct stat st;

                if (len > 0) {
                        if (asprintf(&path, "%.*s/%s", (int)len, p, type) < 0)
                                return xp_errorf(
                                    err, -ENOMEM, "CNI plugin \"%s\": out of memory", type);
                        if (stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
                            access(path, X_OK) == 0) {
                                *ret = path;
                                return 0;
                        }
                        free(path);
                }
                p += len + (p[len] == ':');
        }
        return xp_errorf(
            err,
            -ENOENT,
            "no CNI plugin \"%s\" in %s (Debian: apt install containernetworking-plugins)",
            type,
            bin_dirs && *bin_dirs ? bin_dirs : "(no plugin directory)");
}

static int64_t now_ms(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The plugin's environment: the CNI_* variables and PATH, nothing else of ours. */
struct env {
        char *v[8];
};

static void env_done(struct env *e)
{
        for (size_t i = 0; i < XP_ELEMENTSOF(e->v); i++)
                free(e->v[i]);
}

static int env_build(struct env *e, const char *command, const struct xp_cni_args *a)
{
        const char *path = getenv("PATH");
        int n = 0;

        *e = (struct env){{NULL}};
        if (asprintf(&e->v[n++], "CNI_COMMAND=%s", command) < 0 ||
            asprintf(&e->v[n++], "CNI_CONTAINERID=%s", a->container_id ? a->container_id : "") <
                0 ||
            asprintf(&e->v[n++], "CNI_NETNS=%s", a->netns ? a->netns : "") < 0 ||
            asprintf(&e->v[n++], "CNI_IFNAME=%s", a->ifname ? a->ifname : "eth0") < 0 ||
            asprintf(&e->v[n++], "CNI_ARGS=%s", a->args ? a->args : "") < 0 ||
            asprintf(&e->v[n++], "CNI_PATH=%s", a->bin_dirs ? a->bin_dirs : "") < 0 ||
            asprintf(&e->v[n++], "PATH=%s", path && *path ? path : DEFAULT_PATH) < 0) {
                e->v[n - 1] = NULL;
                env_done(e);
                return -ENOMEM;
        }
        return 0;
}

/* One pipe (or, for stdin, a socket: a plugin that exits early then costs EPIPE, not SIGPIPE). */
struct io {
        int fd;
        char *buf;
        size_t len, cap, max;
        bool truncated;
};

static int read_some(struct io *io)
{
        char chunk[16384];
        ssize_t n = read(io->fd, chunk, sizeof(chunk));

        if (n < 0)
                return errno == EINTR || errno == EAGAIN ? 0 : -errno;
        if (n == 0) {
                close(io->fd);
                io->fd = -1;
                return 0;
        }
        if (io->len + (size_t)n > io->max) {
                io->truncated = true;
                n = (ssize_t)(io->max - io->len);
        }
        if (io->len + (size_t)n + 1 > io->cap) {
                size_t cap = io->cap ? io->cap * 2 : 4096;
                char *buf;

                while (cap < io->len + (size_t)n + 1)
                        cap *= 2;
                buf = realloc(io->buf, cap);
                if (!buf)
                        return -ENOMEM;
                io->buf = buf;
                io->cap = cap;
        }
        memcpy(io->buf + io->len, chunk, (size_t)n);
        io->len += (size_t)n;
        io->buf[io->len] = '\0';
        return 0;
}

struct child {
        pid_t pid;
        int pidfd;
        struct io in, out, err;
        const char *input;
        size_t input_len, written;
};

static void close_io(struct io *io)
{
        if (io->fd >= 0)
                close(io->fd);
        io->fd = -1;
}

static int spawn(struct child *c, const char *exe, char *const envp[], struct xp_error *err)
{
        int in[2] = {-1, -1}, out[2] = {-1, -1}, errp[2] = {-1, -1};
        posix_spawn_file_actions_t fa;
        posix_spawnattr_t attr;
        sigset_t none, all;
        char *argv[] = {(char *)exe, NULL};
        int r;

        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, in) < 0 ||
            pipe2(out, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0) {
                r = -errno;
                for (int i = 0; i < 2; i++) {
                        if (in[i] >= 0)
                                close(in[i]);
                        if (out[i] >= 0)
                                close(out[i]);
                        if (errp[i] >= 0)
                                close(errp[i]);
                }
                return xp_errorf(err, r, "CNI plugin %s: pipes: %s", exe, strerror(-r));
        }
        sigemptyset(&none);
        sigfillset(&all);
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_adddup2(&fa, in[1], 0);
        posix_spawn_file_actions_adddup2(&fa, out[1], 1);
        posix_spawn_file_actions_adddup2(&fa, errp[1], 2);
        posix_spawnattr_init(&attr);
        /* its own process group, to kill what it started too; the signals as a fresh process */
        posix_spawnattr_setflags(
            &attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
        posix_spawnattr_setpgroup(&attr, 0);
        posix_spawnattr_setsigmask(&attr, &none);
        posix_spawnattr_setsigdefault(&attr, &all);
        r = -posix_spawn(&c->pid, exe, &fa, &attr, argv, envp);
        posix_spawn_file_actions_destroy(&fa);
        posix_spawnattr_destroy(&attr);
        close(in[1]);
        close(out[1]);
        close(errp[1]);
        c->in.fd = in[0];
        c->out.fd = out[0];
        c->err.fd = errp[0];
        if (r < 0) {
                close_io(&c->in);
                close_io(&c->out);
                close_io(&c->err);
                return xp_errorf(err, r, "CNI plugin %s: cannot run it: %s", exe, strerror(-r));
        }
        fcntl(c->in.fd, F_SETFL, O_NONBLOCK);
        c->pidfd = (int)syscall(SYS_pidfd_open, c->pid, 0);
        return 0;
}

static void write_some(struct child *c)
{
        ssize_t n = send(c->in.fd,
                         c->input + c->written,
                         c->input_len - c->written,
                         MSG_NOSIGNAL | MSG_DONTWAIT);

        if (n > 0)
                c->written += (size_t)n;
        /* all written, or the plugin does not read (it exited, or closed stdin): EOF */
        if (c->written == c->input_len || (n < 0 && errno != EAGAIN && errno != EINTR))
                close_io(&c->in);
}

/* Feeds stdin and drains stdout and stderr until both end or the deadline: 0, -ETIMEDOUT. */
static int pump(struct child *c, int64_t deadline)
{
        while (c->out.fd >= 0 || c->err.fd >= 0) {
                struct pollfd p[3] = {
                    {.fd = c->in.fd, .events = POLLOUT},
                    {.fd = c->out.fd, .events = POLLIN},
                    {.fd = c->err.fd, .events = POLLIN},
                };
                int64_t left = deadline - now_ms();
                int r;

                if (left <= 0)
                        return -ETIMEDOUT;
                if (poll(p, 3, (int)(left > 1000 ? 1000 : left)) < 0 && errno != EINTR)
                        return -errno;
                if (p[0].revents & (POLLOUT | POLLERR | POLLHUP))
                        write_some(c);
                if ((p[1].revents & (POLLIN | POLLHUP | POLLERR)) && (r = read_some(&c->out)) < 0)
                        return r;
                if ((p[2].revents & (POLLIN | POLLHUP | POLLERR)) && (r = read_some(&c->err)) < 0)
                        return r;
        }
        return 0;
}

/* Waits for the exit until the deadline: its wait status, or -ETIMEDOUT. */
static int reap(struct child *c, int64_t deadline)
{
        int status;

        for (;;) {
                pid_t p = waitpid(c->pid, &status, WNOHANG);
                int64_t left = deadline - now_ms();

                if (p == c->pid)
                        return status;
                if (p < 0 && errno != EINTR)
                        return -errno;
                if (left <= 0)
                        return -ETIMEDOUT;
                if (c->pidfd >= 0)
                        poll(&(struct pollfd){.fd = c->pidfd, .events = POLLIN},
                             1,
                             (int)(left > 1000 ? 1000 : left));
                else
                        nanosleep(&(struct timespec){.tv_nsec = 5 * 1000 * 1000}, NULL);
        }
}

static void child_done(struct child *c)
{
        close_io(&c->in);
        close_io(&c->out);
        close_io(&c->err);
        if (c->pidfd >= 0)
                close(c->pidfd);
        free(c->out.buf);
        free(c->err.buf);
}

/* The last line of what the plugin wrote to stderr, for the message. */
static const char *stderr_tail(struct io *io)
{
        char *s = io->buf;

        if (!s)
                return "";
        while (io->len > 0 && (s[io->len - 1] == '\n' || s[io->len - 1] == ' '))
                s[--io->len] = '\0';
        return strrchr(s, '\n') ? strrchr(s, '\n') + 1 : s;
}

/* The error of a plugin that did not exit 0. */
static int
failure(struct child *c, const char *type, const char *command, int status, struct xp_error *err)
{
        char msg[XP_ERROR_MSG_MAX / 2];
        int code;

        if (WIFEXITED(status) &&
            xp_cni_error_parse(c->out.buf, c->out.len, &code, msg, sizeof(msg)) == 0)
                return xp_errorf(err,
                                 code == XP_CNI_ERR_TRY_AGAIN ? -EAGAIN : -EIO,
                                 "plugin \"%s\" (%s): %s (code %d)",
                                 type,
                                 command,
                                 msg,
                                 code);
        if (WIFSIGNALED(status))
                return xp_errorf(err,
                                 -EIO,
                                 "plugin \"%s\" (%s): killed by signal %d%s%s",
                                 type,
                                 command,
                                 WTERMSIG(status),
                                 c->err.len ? ": " : "",
                                 stderr_tail(&c->err));
        return xp_errorf(err,
                         -EIO,
                         "plugin \"%s\" (%s): exited with status %d%s%s",
                         type,
                         command,
                         WEXITSTATUS(status),
                         c->err.len ? ": " : "",
                         stderr_tail(&c->err));
}

int xp_cni_exec(const char *exe,
                const char *command,
                const struct xp_cni_args *args,
                const char *input,
                size_t input_len,
                char **ret,
                struct xp_error *err)
{
        struct child c = {.pid = -1, .pidfd = -1, .input = input, .input_len = input_len};
        const char *type = strrchr(exe, '/') ? strrchr(exe, '/') + 1 : exe;
        int64_t timeout = args->timeout_ms > 0 ? args->timeout_ms : XP_CNI_TIMEOUT_MS;
        int64_t deadline = now_ms() + timeout;
        struct env env;
        int r, status;

        c.in.fd = c.out.fd = c.err.fd = -1;
        c.out.max = XP_CNI_OUTPUT_MAX;
        c.err.max = STDERR_KEEP;
        if (env_build(&env, command, args) < 0)
                return xp_errorf(err, -ENOMEM, "plugin \"%s\": out of memory", type);
        r = spawn(&c, exe, env.v, err);
        env_done(&env);
        if (r < 0)
                return r;
        if (input_len == 0)
                close_io(&c.in);
        r = pump(&c, deadline);
        status = r < 0 ? r : reap(&c, deadline);
        if (status < 0) {
                /* the group first: what it started (iptables, the IPAM plugin) goes with it */
                kill(-c.pid, SIGKILL);
                kill(c.pid, SIGKILL);
                while (waitpid(c.pid, NULL, 0) < 0 && errno == EINTR)
                        ;
                child_done(&c);
                if (status == -ETIMEDOUT)
                        return xp_errorf(err,
                                         -ETIMEDOUT,
                                         "plugin \"%s\" (%s): no answer within %.1f s: killed",
                                         type,
                                         command,
                                         (double)timeout / 1000.0);
                return xp_errorf(
                    err, status, "plugin \"%s\" (%s): %s", type, command, strerror(-status));
        }
        if (c.out.truncated)
                r = xp_errorf(
                    err, -E2BIG, "plugin \"%s\" (%s): printed more than 1 MiB", type, command);
        else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
                r = failure(&c, type, command, status, err);
        else if (!(*ret = c.out.buf ? TAKE_PTR(c.out.buf) : strdup("")))
                r = xp_errorf(err, -ENOMEM, "plugin \"%s\": out of memory", type);
        child_done(&c);
        return r;
}
