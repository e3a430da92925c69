/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One probe run (probe.h), blocking on a probe worker's thread, bounded by the probe's timeout:
 * exec in the container through the runtime's exec path (as `kubectl exec`), a TCP connect, an
 * HTTP(S) GET (HTTPS without verifying the certificate, as the kubelet), with the kubelet's
 * messages.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "probe.h"
#include "xpool/runtime.h"

/* the helper's time to end the command's group once told to */
#define STOP_WAIT_MS 2000

int64_t xp_probe_now_ms(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int xp_probe_left_ms(int64_t deadline_ms)
{
        int64_t left = deadline_ms - xp_probe_now_ms();

        return left < 0 ? 0 : left > INT_MAX ? INT_MAX : (int)left;
}

/* Reads fd until EOF or the deadline, keeping at most cap - 1 bytes (the rest is read and
 * dropped, so the writer is not blocked). Returns the bytes kept; -ETIMEDOUT at the deadline. */
static ssize_t read_until(int fd, char *buf, size_t cap, int64_t deadline_ms)
{
        struct pollfd p = {.fd = fd, .events = POLLIN};
        size_t len = 0;

        for (;;) {
                char sink[4096];
                ssize_t k;
                int n = poll(&p, 1, xp_probe_left_ms(deadline_ms));

                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        return -ETIMEDOUT;
                if (len + 1 < cap)
                        k = read(fd, buf + len, cap - 1 - len);
                else
                        k = read(fd, sink, sizeof(sink));
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        break;
                if (len + 1 < cap)
                        len += (size_t)k;
        }
        buf[len] = '\0';
        return (ssize_t)len;
}

/* Waits for pid until the deadline; at it, ends the command's group and reaps it. Returns the
 * exit status, or -ETIMEDOUT. */
static int reap(pid_t pid, int64_t deadline_ms)
{
        int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
        struct pollfd p = {.fd = pidfd, .events = POLLIN};
        int st = 0, r = -ETIMEDOUT;
        pid_t w;

        if (pidfd >= 0 && poll(&p, 1, xp_probe_left_ms(deadline_ms)) > 0)
                r = 0;
        if (r < 0) {
                kill(pid, SIGTERM); /* the helper ends the command's whole group */
                p.revents = 0;
                if (pidfd < 0 || poll(&p, 1, STOP_WAIT_MS) <= 0)
                        kill(pid, SIGKILL);
        }
        while ((w = waitpid(pid, &st, 0)) < 0 && errno == EINTR)
                ;
        if (pidfd >= 0)
                close(pidfd);
        if (r < 0 || w != pid)
                return r < 0 ? r : -ECHILD;
        return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void trim(char *s)
{
        size_t n = strlen(s);

        while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == '\r'))
                s[--n] = '\0';
}

/* The kubelet's words: command "sh -c sleep 5" timed out. */
static void timed_out(char *const *argv, char *msg)
{
        size_t len = (size_t)snprintf(msg, XP_PROBE_MESSAGE_MAX, "command \"");

        for (size_t i = 0; argv[i] && len < XP_PROBE_MESSAGE_MAX; i++)
                len += (size_t)snprintf(
                    msg + len, XP_PROBE_MESSAGE_MAX - len, "%s%s", i ? " " : "", argv[i]);
        if (len < XP_PROBE_MESSAGE_MAX)
                snprintf(msg + len, XP_PROBE_MESSAGE_MAX - len, "\" timed out");
}

static enum xp_probe_result
run_exec(const struct xp_probe_spec *spec, const struct xp_probe_target *t, char *msg)
{
        int64_t deadline = xp_probe_now_ms() + spec->timeout_s * 1000;
        struct xp_exec_options o = {.argv = spec->command, .stdin_fd = -1};
        struct xp_error err = {0};
        int pipefd[2], report = -1, status;
        char *out = malloc(XP_PROBE_OUTPUT_MAX + 1);
        pid_t pid;
        ssize_t n;

        if (!out || pipe2(pipefd, O_CLOEXEC) < 0) {
                free(out);
                snprintf(msg, XP_PROBE_MESSAGE_MAX, "starting the probe: %s", strerror(errno));
                return XP_PROBE_FAILURE;
        }
        o.stdout_fd = o.stderr_fd = pipefd[1];
        status = xp_runtime_exec(t->runtime, t->pod_uid, t->container, &o, &pid, &report, &err);
        close(pipefd[1]);
        if (status < 0) {
                close(pipefd[0]);
                free(out);
                snprintf(msg, XP_PROBE_MESSAGE_MAX, "%s", xp_error_message(&err));
                return XP_PROBE_FAILURE;
        }
        n = read_until(pipefd[0], out, XP_PROBE_OUTPUT_MAX + 1, deadline);
        close(pipefd[0]);
        status = reap(pid, deadline);
        if (status < 0 || n < 0) {
                timed_out(spec->command, msg);
        } else if (status == 127 && read_until(report, msg, XP_PROBE_MESSAGE_MAX, deadline) > 0) {
                trim(msg); /* the helper's word of why the command did not run */
        } else {
                snprintf(msg, XP_PROBE_MESSAGE_MAX, "%s", out);
                trim(msg);
        }
        close(report);
        free(out);
        return status == 0 && n >= 0 ? XP_PROBE_SUCCESS : XP_PROBE_FAILURE;
}

/* A connected socket to host:port within the deadline, or -1 with msg in Go's words. */
static int dial(const char *host, int port, int64_t deadline_ms, char *msg)
{
        struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV};
        struct addrinfo *ai = NULL;
        char service[8];
        int fd = -1, e = 0;
        socklen_t len = sizeof(e);
        struct pollfd p = {.events = POLLOUT};

        snprintf(service, sizeof(service), "%d", port);
        if (getaddrinfo(host, service, &hints, &ai) != 0 || !ai) {
                snprintf(msg, XP_PROBE_MESSAGE_MAX, "dial tcp: lookup %s: no such host", host);
                return -1;
        }
        fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) < 0 && errno != EINPROGRESS)
                e = errno;
        p.fd = fd;
        if (fd >= 0 && !e && poll(&p, 1, xp_probe_left_ms(deadline_ms)) <= 0)
                e = ETIMEDOUT;
        else if (fd >= 0 && !e && getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &len) < 0)
                e = errno;
        freeaddrinfo(ai);
        if (fd >= 0 && !e)
                return fd;
        snprintf(msg,
                 XP_PROBE_MESSAGE_MAX,
                 e == ETIMEDOUT ? "dial tcp %s%s%s:%d: i/o timeout"
                                : "dial tcp %s%s%s:%d: connect: %s",
                 strchr(host, ':') ? "[" : "",
                 host,
                 strchr(host, ':') ? "]" : "",
                 port,
                 fd < 0              ? strerror(errno)
                 : e == ECONNREFUSED ? "connection refused"
                                     : strerror(e));
        if (fd >= 0)
                close(fd);
        return -1;
}

static const char *target_host(const struct xp_probe_spec *spec, const struct xp_probe_target *t)
{
        return spec->host ? spec->host : t->pod_ip && *t->pod_ip ? t->pod_ip : "127.0.0.1";
}

static enum xp_probe_result
run_tcp(const struct xp_probe_spec *spec, const struct xp_probe_target *t, char *msg)
{
        int fd =
            dial(target_host(spec, t), spec->port, xp_probe_now_ms() + spec->timeout_s * 1000, msg);

        if (fd < 0)
                return XP_PROBE_FAILURE;
        close(fd);
        return XP_PROBE_SUCCESS;
}

static enum xp_probe_result
run_http(const struct xp_probe_spec *spec, const struct xp_probe_target *t, char *msg)
{
        int64_t deadline = xp_probe_now_ms() + spec->timeout_s * 1000;
        int fd = dial(target_host(spec, t), spec->port, deadline, msg);
        enum xp_probe_result r;
        char dial_msg[XP_PROBE_MESSAGE_MAX];

        if (fd < 0) {
                snprintf(dial_msg, sizeof(dial_msg), "%s", msg);
                snprintf(msg,
                         XP_PROBE_MESSAGE_MAX,
                         "Get \"%s://%s:%d%s\": %s",
                         strcmp(spec->scheme, "HTTPS") == 0 ? "https" : "http",
                         target_host(spec, t),
                         spec->port,
                         spec->path,
                         dial_msg);
                return XP_PROBE_FAILURE;
        }
        r = xp_probe_http_run(spec, t, fd, deadline, msg);
        close(fd);
        return r;
}

enum xp_probe_result xp_probe_run(const struct xp_probe_spec *spec,
                                  const struct xp_probe_target *target,
                                  char message[static XP_PROBE_MESSAGE_MAX])
{
        message[0] = '\0';
        switch (spec->handler) {
        case XP_PROBE_EXEC:
                return run_exec(spec, target, message);
        case XP_PROBE_TCP:
                return run_tcp(spec, target, message);
        case XP_PROBE_HTTP:
                return run_http(spec, target, message);
        case XP_PROBE_GRPC:
                break;
        }
        snprintf(
            message,
            XP_PROBE_MESSAGE_MAX,
            "gRPC probes are not supported by the xpool agent (port %d): the container is never counted as passing it",
            spec->port);
        return XP_PROBE_UNKNOWN;
}
