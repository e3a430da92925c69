/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `xpool-shim __exec DIR tty|notty COMMAND...`: a command run in a running container, as `runc
 * exec` does it (include/xpool/runtime.h, xp_runtime_exec()). A process of its own, started by the
 * agent with posix_spawn, because joining a mount namespace needs a process with one thread.
 *
 * It reads the container's spec (the same file its shim runs it from) and running.json, joins its
 * cgroup, then every namespace of its main process that differs from ours (pid, mount, cgroup,
 * and ipc, uts, net when the pod has its own), forks (a new pid namespace takes only children),
 * and the child contains itself exactly as the container's process did (shim_child.c) with the
 * container's user, working directory and environment, and execs the command on the stdio it
 * was given. This process stays outside, waits, and exits with the command's status: its code,
 * or 128 + the signal. SIGTERM, SIGHUP or SIGINT to it (or the agent's death) kill the command's
 * whole process group. A failure before the exec is one line on fd 3, exit status 127.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "shim_internal.h"

#define REPORT_FD 3

/* The namespaces joined, in the order runc joins them: the mount namespace last, since the
 * others are opened through /proc of ours. */
static const struct {
        const char *name;
        int type;
} namespaces[] = {
    {"ipc", CLONE_NEWIPC},
    {"uts", CLONE_NEWUTS},
    {"net", CLONE_NEWNET},
    {"pid", CLONE_NEWPID},
    {"cgroup", CLONE_NEWCGROUP},
    {"mnt", CLONE_NEWNS},
};
#define N_NAMESPACES (sizeof(namespaces) / sizeof(namespaces[0]))

static volatile pid_t command_pid;

static void on_stop(int sig)
{
        (void)sig;
        /* before the command's setsid() there is no group yet: the command itself then, which has
         * no children of its own before its exec (a SIGTERM at a probe's timeout can come that
         * early; the command then ran its whole course after the helper was killed) */
        if (command_pid > 0 && kill(-command_pid, SIGKILL) < 0)
                kill(command_pid, SIGKILL);
}

/* fds[i]: the namespace of pid to join, or -1 when it is ours already. */
static int open_namespaces(pid_t pid, int fds[static N_NAMESPACES], struct xp_error *err)
{
        for (size_t i = 0; i < N_NAMESPACES; i++) {
                char path[64];
                struct stat theirs, ours;

                fds[i] = -1;
                snprintf(path, sizeof(path), "/proc/%d/ns/%s", (int)pid, namespaces[i].name);
                if (stat(path, &theirs) < 0) {
                        if (errno == ENOENT)
                                continue; /* a kernel without that kind of namespace */
                        return xp_errorf(err, -errno, "%s: %m", path);
                }
                snprintf(path, sizeof(path), "/proc/self/ns/%s", namespaces[i].name);
                if (stat(path, &ours) == 0 && ours.st_ino == theirs.st_ino &&
                    ours.st_dev == theirs.st_dev)
                        continue;
                snprintf(path, sizeof(path), "/proc/%d/ns/%s", (int)pid, namespaces[i].name);
                fds[i] = open(path, O_RDONLY | O_CLOEXEC);
                if (fds[i] < 0)
                        return xp_errorf(err, -errno, "%s: %m", path);
        }
        return 0;
}

/* Joins the container's cgroup (before its cgroup namespace, whose root it is). */
static int join_cgroup(const struct shim *s, struct xp_error *err)
{
        const char *root = json_string_value(json_object_get(s->spec, "cgroup_root"));
        _cleanup_free_ char *path = NULL;
        struct xp_cgroup_root *cr = NULL;
        struct xp_cgroup *cg = NULL;
        int r;

        if (!json_is_true(json_object_get(s->spec, "cgroups")) || !root)
                return 0;
        r = xp_cgroup_root_open(root, &cr, err);
        if (r >= 0)
                r = xp_cgroup_container_path(
                    json_string_value(json_object_get(s->spec, "cgroup_parent")),
                    s->uid,
                    s->container,
                    &path,
                    err);
        if (r >= 0)
                r = xp_cgroup_open(cr, path, &cg, err);
        if (r >= 0)
                r = xp_cgroup_add_pid(cg, getpid(), err);
        xp_cgroup_free(cg);
        xp_cgroup_root_free(cr);
        return r;
}

static int enter_namespaces(int fds[static N_NAMESPACES], struct xp_error *err)
{
        for (size_t i = 0; i < N_NAMESPACES; i++) {
                if (fds[i] < 0)
                        continue;
                if (setns(fds[i], namespaces[i].type) < 0)
                        return xp_errorf(err,
                                         -errno,
                                         "joining the container's %s namespace: %m",
                                         namespaces[i].name);
                close(fds[i]);
                fds[i] = -1;
        }
        return 0;
}

/* The stdio the command has now; ours become /dev/null, so its ends see EOF when it ends. */
static void drop_stdio(void)
{
        int null = open("/dev/null", O_RDWR | O_CLOEXEC);

        for (int fd = 0; fd < 3 && null >= 0; fd++)
                dup2(null, fd);
        if (null > 2)
                close(null);
}

/* A uid or gid of config.json: a number below 2^32 - 1 (which means "none" to the kernel). */
static bool id_of(const json_t *v, uint32_t *ret)
{
        json_int_t n = json_integer_value(v);

        if (!json_is_integer(v) || n < 0 || n >= (json_int_t)UINT32_MAX)
                return false;
        *ret = (uint32_t)n;
        return true;
}

/*
 * An OCI container's command runs as its process does, as `runc exec` and `crun exec` run it:
 * as the user and groups of its bundle's config.json (where its shim resolved the image's user
 * by name, and set HOME from it), with its environment, and under the runtime/default seccomp
 * filter when the container has one. The spec's own user and filter fields are the process
 * runtime's; an OCI container's leave them unset. *ret_config: config.json, which s->env borrows
 * from (the caller frees it last).
 */
static int take_oci_process(struct shim *s, json_t **ret_config, struct xp_error *err)
{
        const char *bundle = json_string_value(json_object_get(s->oci, "bundle"));
        const json_t *user, *gids;
        char **env;
        json_error_t jerr = {.line = 0};
        char path[PATH_MAX];
        uint32_t uid = 0, gid = 0;
        json_t *config;
        int r = 0;

        if (!bundle)
                return xp_errorf(err, -EINVAL, "spec: the OCI container names no bundle");
        snprintf(path, sizeof(path), "%s/config.json", bundle);
        config = runtime_read_json(path, &jerr);
        if (!config)
                return xp_errorf(err, -EINVAL, "%s:%d: %s", path, jerr.line, jerr.text);
        *ret_config = config;
        env = shim_string_array(json_object_get(json_object_get(config, "process"), "env"));
        if (!env)
                return xp_errorf(err, -EINVAL, "%s: process.env: not an array of strings", path);
        free(s->env);
        s->env = env;
        user = json_object_get(json_object_get(config, "process"), "user");
        gids = json_object_get(user, "additionalGids");
        if (!id_of(json_object_get(user, "uid"), &uid) ||
            !id_of(json_object_get(user, "gid"), &gid))
                r = xp_errorf(err, -EINVAL, "%s: process.user: no uid and gid", path);
        else if (json_array_size(gids) > 0 &&
                 !(s->groups = calloc(json_array_size(gids), sizeof(*s->groups))))
                r = xp_errorf(err, -ENOMEM, "out of memory");
        for (size_t i = 0; r >= 0 && i < json_array_size(gids); i++)
                if (!id_of(json_array_get(gids, i), &s->groups[s->n_groups++]))
                        r = xp_errorf(err,
                                      -EINVAL,
                                      "%s: process.user.additionalGids[%zu]: not a gid",
                                      path,
                                      i);
        if (r >= 0) {
                s->set_user = true;
                s->user = uid;
                s->group = gid;
        }
        if (r >= 0 && json_object_get(json_object_get(config, "linux"), "seccomp") &&
            !s->plan.filter)
                r = xp_seccomp_build(
                    s->plan.caps.effective, &s->plan.filter, &s->plan.filter_len, err);
        return r;
}

/* Forks the command and waits for it: its wait status, or -errno with err (the exec failed). */
static int run_command(struct shim *s, char *const *argv, bool tty, struct xp_error *err)
{
        _cleanup_free_ char **env = shim_env_for_tty(s->env, tty);
        struct sigaction sa = {.sa_handler = on_stop};
        char msg[RUNTIME_NOTIFY_MAX];
        sigset_t all, old;
        int ep[2], status = 0;
        ssize_t n, len = 0;
        pid_t pid;

        if (!env)
                return xp_errorf(err, -ENOMEM, "out of memory");
        s->env = env;
        if (pipe2(ep, O_CLOEXEC) < 0)
                return xp_errorf(err, -errno, "pipe: %m");
        sigfillset(&all);
        sigprocmask(SIG_BLOCK, &all, &old);
        pid = fork();
        if (pid == 0) {
                sigprocmask(SIG_SETMASK, &old, NULL);
                close(ep[0]);
                shim_exec_child_main(s, argv, tty, ep[1]);
        }
        if (pid < 0) {
                sigprocmask(SIG_SETMASK, &old, NULL);
                return xp_errorf(err, -errno, "fork: %m");
        }
        command_pid = pid;
        sigaction(SIGTERM, &sa, NULL);
        sigaction(SIGHUP, &sa, NULL);
        sigaction(SIGINT, &sa, NULL);
        sigprocmask(SIG_SETMASK, &old, NULL);
        close(ep[1]);
        drop_stdio();
        while ((n = read(ep[0], msg + len, sizeof(msg) - 1 - (size_t)len)) > 0 ||
               (n < 0 && errno == EINTR))
                if (n > 0)
                        len += n;
        close(ep[0]);
        msg[len] = '\0';
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
                ;
        if (len > 0)
                return xp_errorf(err, -ENOEXEC, "%s", msg);
        return status;
}

static void report(const char *msg)
{
        size_t len = strlen(msg);

        if (write(REPORT_FD, msg, len) != (ssize_t)len)
                return;
}

/* Closes every fd from first on but the seccomp filter the agent hands over on CONTAIN_FILTER_FD
 * (a sealed memfd: anything else there is closed too). */
static void close_from(int first)
{
        bool filter = fcntl(CONTAIN_FILTER_FD, F_GET_SEALS) >= 0;

        for (int fd = first; fd < CONTAIN_FILTER_FD; fd++)
                close(fd);
        if (!filter)
                close(CONTAIN_FILTER_FD);
        if (close_range(CONTAIN_FILTER_FD + 1, ~0U, 0) < 0)
                for (int fd = CONTAIN_FILTER_FD + 1; fd < 1024; fd++)
                        close(fd);
}

int xp_exec_main(int argc, char **argv)
{
        struct shim s = {.notify = -1, .lock = -1, .plan = CONTAIN_PLAN_NONE};
        struct xp_error err = {0};
        int fds[N_NAMESPACES], r, status;
        char **env = NULL;
        json_t *config = NULL;
        pid_t pid = 0;

        for (size_t i = 0; i < N_NAMESPACES; i++)
                fds[i] = -1;
        if (argc < 4 || (strcmp(argv[2], "tty") != 0 && strcmp(argv[2], "notty") != 0)) {
                fprintf(
                    stderr,
                    "usage: xpool __exec STATE_DIR tty|notty COMMAND... (started by the node agent)\n");
                return 2;
        }
        /* nothing of the agent's past stdio and the report: its sockets would keep its clients'
         * connections open as long as the command runs */
        close_from(REPORT_FD + 1);
        fcntl(REPORT_FD, F_SETFD, FD_CLOEXEC);
        /* the agent's thread that started us waits for us; its end is ours */
        prctl(PR_SET_PDEATHSIG, SIGTERM, 0, 0, 0);
        s.dir = argv[1];
        r = shim_load_spec(&s, &err);
        if (r >= 0 && s.oci)
                r = take_oci_process(&s, &config, &err);
        if (r >= 0)
                r = runtime_running_pid(s.dir, &pid, &err);
        if (r >= 0)
                r = open_namespaces(pid, fds, &err);
        if (r >= 0)
                r = join_cgroup(&s, &err);
        if (r >= 0)
                r = enter_namespaces(fds, &err);
        for (size_t i = 0; i < N_NAMESPACES; i++)
                if (fds[i] >= 0)
                        close(fds[i]);
        env = s.env;
        status = r >= 0 ? run_command(&s, argv + 3, strcmp(argv[2], "tty") == 0, &err) : r;
        contain_plan_done(&s.plan);
        free(s.argv);
        free(s.groups);
        free(env);
        json_decref(config);
        json_decref(s.spec);
        if (status < 0) {
                report(xp_error_message(&err));
                _exit(127);
        }
        /* _exit: this process now lives in the container's namespaces, where the sanitizers'
         * exit-time leak check cannot stop the world (its tracer spins forever); everything is
         * freed above, and no exit handler of ours has work left */
        _exit(WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status));
}
