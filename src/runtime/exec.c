/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Reaching into a running container (xpool/runtime.h): a command run through the exec helper
 * (exec_helper.c), and the network namespace port-forward connects in. Which process is the
 * container's is what its shim wrote to running.json, checked against /proc (the pid and its start
 * time), so a pid the kernel has given to another process since is never entered.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "contain_internal.h"
#include "runtime_internal.h"
#include "xpool/macro.h"

extern char **environ;

#define REPORT_FD 3

int runtime_running_pid(const char *dir, pid_t *ret, struct xp_error *err)
{
        char path[PATH_MAX], state = 0;
        json_t *running;
        uint64_t start = 0;
        json_int_t want;
        pid_t pid;

        snprintf(path, sizeof(path), "%s/" RUNTIME_RUNNING_FILE, dir);
        running = json_load_file(path, 0, NULL);
        snprintf(path, sizeof(path), "%s/" RUNTIME_EXIT_FILE, dir);
        if (!running || access(path, F_OK) == 0) {
                json_decref(running);
                return xp_errorf(err, -ESRCH, "the container is not running");
        }
        pid = (pid_t)json_integer_value(json_object_get(running, "pid"));
        want = json_integer_value(json_object_get(running, "pid_start"));
        json_decref(running);
        if (pid <= 0 || runtime_proc_start(pid, &start, &state) < 0 || start != (uint64_t)want ||
            state == 'Z')
                return xp_errorf(err, -ESRCH, "the container is not running");
        *ret = pid;
        return 0;
}

static bool component_ok(const char *s)
{
        return s && *s && strcmp(s, ".") != 0 && strcmp(s, "..") != 0 && !strchr(s, '/') &&
               strlen(s) <= NAME_MAX / 2;
}

int runtime_container_dir(const struct xp_runtime *rt,
                          const char *uid,
                          const char *container,
                          char buf[static PATH_MAX],
                          struct xp_error *err)
{
        int n;

        if (!component_ok(uid) || (container && !component_ok(container)))
                return xp_errorf(err, -EINVAL, "not a pod uid or container name");
        n = container ? snprintf(buf, PATH_MAX, "%s/%s/%s", runtime_state_dir(rt), uid, container)
                      : snprintf(buf, PATH_MAX, "%s/%s", runtime_state_dir(rt), uid);
        return n < 0 || n >= PATH_MAX ? xp_errorf(err, -ENAMETOOLONG, "path too long") : 0;
}

/* A copy of fd above the standard ones and REPORT_FD, close-on-exec; -1 for fd -1. */
static int high_fd(int fd)
{
        return fd < 0 ? -1 : fcntl(fd, F_DUPFD_CLOEXEC, 10);
}

/*
 * The filter the container's shim got on CONTAIN_FILTER_FD when its spec says so (filter_fd), for
 * the helper, which contains the command as the shim did: *ret -1 when the spec asks for none.
 */
static int exec_filter(struct xp_runtime *rt, const char *dir, int *ret, struct xp_error *err)
{
        char path[PATH_MAX + 16];
        uint64_t effective;
        json_t *spec;
        int r = 0;

        *ret = -1;
        snprintf(path, sizeof(path), "%s/spec.json", dir);
        spec = json_load_file(path, 0, NULL);
        if (!spec)
                r = xp_errorf(err, -EINVAL, "exec: %s cannot be read", path);
        else if (contain_spec_filter_fd(spec, &effective)) {
                *ret = runtime_filter_for(rt, effective);
                if (*ret < 0)
                        r = xp_errorf(
                            err, -EIO, "exec: the container's seccomp filter cannot be made");
        }
        json_decref(spec);
        return r;
}

static int spawn_helper(const struct xp_runtime *rt,
                        char **argv,
                        const int stdio[static 3],
                        int report,
                        int filter,
                        pid_t *ret_pid,
                        struct xp_error *err)
{
        posix_spawn_file_actions_t fa;
        posix_spawnattr_t attr;
        sigset_t none, all;
        int r;

        sigemptyset(&none);
        sigfillset(&all);
        posix_spawn_file_actions_init(&fa);
        posix_spawnattr_init(&attr);
        for (int i = 0; i < 3; i++)
                if (stdio[i] >= 0)
                        posix_spawn_file_actions_adddup2(&fa, stdio[i], i);
                else
                        posix_spawn_file_actions_addopen(
                            &fa, i, "/dev/null", i == 0 ? O_RDONLY : O_WRONLY, 0);
        posix_spawn_file_actions_adddup2(&fa, report, REPORT_FD);
        if (filter >= 0)
                posix_spawn_file_actions_adddup2(&fa, filter, CONTAIN_FILTER_FD);
        posix_spawnattr_setsigmask(&attr, &none);
        posix_spawnattr_setsigdefault(&attr, &all);
        posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
        r = -posix_spawn(ret_pid, runtime_shim_exe(rt), &fa, &attr, argv, environ);
        posix_spawn_file_actions_destroy(&fa);
        posix_spawnattr_destroy(&attr);
        if (r < 0)
                return xp_errorf(err, r, "starting %s: %s", runtime_shim_exe(rt), strerror(-r));
        return 0;
}

int xp_runtime_exec(struct xp_runtime *rt,
                    const char *pod_uid,
                    const char *container,
                    const struct xp_exec_options *o,
                    pid_t *ret_pid,
                    int *ret_report_fd,
                    struct xp_error *err)
{
        char dir[PATH_MAX];
        _cleanup_free_ char **argv = NULL;
        _cleanup_close_ int rd = -1, wr = -1, in = -1, out = -1, errfd = -1, filter = -1;
        size_t n = 0;
        pid_t pid, helper;
        int fds[2], shared_filter, r;

        r = runtime_container_dir(rt, pod_uid, container, dir, err);
        if (r < 0)
                return r;
        r = runtime_running_pid(dir, &pid, err);
        if (r < 0)
                return r;
        while (o->argv && o->argv[n])
                n++;
        if (n == 0)
                return xp_errorf(err, -EINVAL, "no command to run");
        argv = calloc(n + 5, sizeof(*argv));
        if (!argv)
                return -ENOMEM;
        argv[0] = (char *)runtime_shim_exe(rt);
        argv[1] = (char *)"__exec";
        argv[2] = dir;
        argv[3] = (char *)(o->tty ? "tty" : "notty");
        memcpy(argv + 4, o->argv, n * sizeof(*argv));
        if (pipe2(fds, O_CLOEXEC) < 0)
                return xp_errorf(err, -errno, "exec: pipe: %m");
        rd = fds[0];
        wr = high_fd(fds[1]);
        close(fds[1]);
        in = high_fd(o->stdin_fd);
        out = high_fd(o->stdout_fd);
        errfd = high_fd(o->stderr_fd);
        if (wr < 0 || (o->stdin_fd >= 0 && in < 0) || (o->stdout_fd >= 0 && out < 0) ||
            (o->stderr_fd >= 0 && errfd < 0))
                return xp_errorf(err, -errno, "exec: dup: %m");
        r = exec_filter(rt, dir, &shared_filter, err);
        if (r < 0)
                return r;
        /* the runtime keeps its filter open: the helper gets a copy above the fds it is given */
        filter = high_fd(shared_filter);
        if (shared_filter >= 0 && filter < 0)
                return xp_errorf(err, -errno, "exec: dup: %m");
        r = spawn_helper(rt, argv, (int[3]){in, out, errfd}, wr, filter, &helper, err);
        if (r < 0)
                return r;
        *ret_pid = helper;
        *ret_report_fd = TAKE_FD(rd);
        return 0;
}

int xp_runtime_pod_netns(struct xp_runtime *rt,
                         const char *pod_uid,
                         int *ret_fd,
                         struct xp_error *err)
{
        char dir[PATH_MAX], path[PATH_MAX + 256], ns[64];
        struct dirent *de;
        DIR *d;
        pid_t pid = 0;
        int r, fd;

        r = runtime_container_dir(rt, pod_uid, NULL, dir, err);
        if (r < 0)
                return r;
        d = opendir(dir);
        while (d && (de = readdir(d)) && pid == 0) {
                if (de->d_name[0] == '.')
                        continue;
                snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
                if (runtime_running_pid(path, &pid, NULL) < 0)
                        pid = 0;
        }
        if (d)
                closedir(d);
        if (pid == 0)
                return xp_errorf(err, -ESRCH, "no container of the pod is running");
        snprintf(ns, sizeof(ns), "/proc/%d/ns/net", (int)pid);
        fd = open(ns, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return xp_errorf(err, -errno, "%s: %m", ns);
        *ret_fd = fd;
        return 0;
}
