/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The shim: one process per container, started by xp_runtime_start() as `xpool __shim DIR`. It
 * reads DIR/spec.json and prepares the container's containment (contain_plan.c), detaches (clone,
 * the first process exits, setsid) into a pid namespace of its own where it is the init, creates
 * the cgroup, clones the container's process (shim_child.c), moves it into the cgroup, lets it
 * exec, writes its output as CRI log lines, waits for it, kills what it left behind (every other
 * process of the namespace, so nothing outlives the container, not even a process that left its
 * cgroup and session) and records the exit in DIR/exit.json.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cgroup_internal.h"
#include "shim_internal.h"

#define DEFAULT_PATH     "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
#define DRAIN_TIMEOUT_MS 2000
#define SHIM_STACK_SIZE  (8 * 1024 * 1024) /* a main thread's, as RLIMIT_STACK gives it */

/* Reports to the runtime that started us; false when it is gone (it was killed meanwhile). */
static bool notify_send(struct shim *s, const char *fmt, ...) _printf_(2, 3);
static bool notify_send(struct shim *s, const char *fmt, ...)
{
        char buf[RUNTIME_NOTIFY_MAX];
        bool sent;
        va_list ap;
        int n;

        if (s->notify < 0)
                return true;
        va_start(ap, fmt);
        n = vsnprintf(buf, sizeof(buf), fmt, ap);
        va_end(ap);
        if (n < 0)
                n = 0;
        if ((size_t)n >= sizeof(buf))
                n = sizeof(buf) - 1;
        sent = write(s->notify, buf, (size_t)n) == n;
        close(s->notify);
        s->notify = -1;
        return sent;
}

char **shim_string_array(const json_t *a)
{
        size_t n = json_array_size(a);
        char **v = calloc(n + 1, sizeof(*v));

        if (!v)
                return NULL;
        for (size_t i = 0; i < n; i++) {
                v[i] = (char *)json_string_value(json_array_get(a, i));
                if (!v[i]) {
                        free(v);
                        return NULL;
                }
        }
        return v;
}

static uint64_t u64_of(json_t *o, const char *key)
{
        json_int_t v = json_integer_value(json_object_get(o, key));

        return v > 0 ? (uint64_t)v : 0;
}

int shim_load_spec(struct shim *s, struct xp_error *err)
{
        char path[PATH_MAX];
        json_error_t jerr;

        snprintf(path, sizeof(path), "%s/" RUNTIME_SPEC_FILE, s->dir);
        jerr.line = 0;
        s->spec = runtime_read_json(path, &jerr);
        if (!s->spec)
                return xp_errorf(err, -EINVAL, "%s:%d: %s", path, jerr.line, jerr.text);
        s->uid = json_string_value(json_object_get(s->spec, "pod_uid"));
        s->container = json_string_value(json_object_get(s->spec, "container"));
        s->events_dir = json_string_value(json_object_get(s->spec, "events_dir"));
        s->working_dir = json_string_value(json_object_get(s->spec, "working_dir"));
        s->attempt = (unsigned)u64_of(s->spec, "attempt");
        s->set_user = json_is_true(json_object_get(s->spec, "set_user"));
        s->stdin = json_is_true(json_object_get(s->spec, "stdin"));
        s->stdin_once = json_is_true(json_object_get(s->spec, "stdin_once"));
        s->tty = json_is_true(json_object_get(s->spec, "tty"));
        s->user = (uid_t)u64_of(s->spec, "uid");
        s->group = (gid_t)u64_of(s->spec, "gid");
        s->oci = json_object_get(s->spec, "oci");
        s->argv = shim_string_array(json_object_get(s->spec, "argv"));
        s->env = shim_string_array(json_object_get(s->spec, "env"));
        if (!s->uid || !s->container || !s->events_dir || !s->working_dir || !s->argv ||
            !s->argv[0] || !s->env)
                return xp_errorf(err, -EINVAL, "%s: missing or malformed fields", path);
        if (s->tty) {
                char **env = shim_env_for_tty(s->env, true);

                if (!env)
                        return xp_errorf(err, -ENOMEM, "out of memory");
                free(s->env);
                s->env = env;
        }
        s->path = DEFAULT_PATH;
        for (char **e = s->env; *e; e++)
                if (strncmp(*e, "PATH=", 5) == 0)
                        s->path = *e + 5;
        return xp_error_prefix(err, contain_plan_prepare(&s->plan, s->spec, err), "%s", path);
}

/* The cgroup root: the v1 hierarchies the runtime found when its spec names them (no
 * mountinfo read), else detected here. */
static int open_root(struct shim *s, const char *root, struct xp_error *err)
{
        json_t *v1 = json_object_get(s->spec, "cgroup_v1"), *other;
        const char *mounts[CGROUP_CONTROLLER_MAX] = {0};
        bool any = false;
        size_t i;
        int r;

        for (int c = 0; c < CGROUP_CONTROLLER_MAX; c++) {
                mounts[c] = json_string_value(
                    json_object_get(v1, cgroup_controller_name((enum cgroup_controller)c)));
                any |= mounts[c] != NULL;
        }
        if (!any)
                return xp_cgroup_root_open(root, &s->root, err);
        r = cgroup_root_open_v1(root, mounts, &s->root, err);
        json_array_foreach(json_object_get(s->spec, "cgroup_v1_others"), i, other)
        {
                if (r >= 0 && json_is_string(other))
                        r = cgroup_root_add_v1_other(s->root, json_string_value(other), err);
        }
        return r;
}

/* The cgroup root opened and the container's group path: 1 with *path, 0 when the spec names
 * no groups (a machine without usable cgroups runs without). */
static int container_group(struct shim *s, char **path, struct xp_error *err)
{
        const char *root = json_string_value(json_object_get(s->spec, "cgroup_root"));
        int r;

        if (!json_is_true(json_object_get(s->spec, "cgroups")) || !root)
                return 0;
        r = open_root(s, root, err);
        if (r < 0)
                return r;
        /* a spec an older agent wrote has none: its groups are where it made them */
        r = xp_cgroup_container_path(json_string_value(json_object_get(s->spec, "cgroup_parent")),
                                     s->uid,
                                     s->container,
                                     path,
                                     err);
        return r < 0 ? r : 1;
}

int shim_open_cgroup(struct shim *s, struct xp_error *err)
{
        _cleanup_free_ char *path = NULL;
        int r = container_group(s, &path, err);

        if (r <= 0)
                return r;
        r = xp_cgroup_open(s->root, path, &s->cg, err);
        if (r < 0)
                return r;
        /* a group left by an earlier attempt keeps its count; a new one starts at 0, and an OOM
         * kill before the runtime's call returns must count */
        if (xp_cgroup_oom_kills(s->cg, &s->oom_before, NULL) < 0)
                s->oom_before = 0;
        s->have_oom = true;
        return 0;
}

/* Creates the cgroup and applies the limits; a machine without usable cgroups runs without. */
int shim_setup_cgroup(struct shim *s, struct xp_error *err)
{
        json_t *jl = json_object_get(s->spec, "limits"), *jd;
        struct xp_cgroup_limits l = {0};
        _cleanup_free_ struct xp_cgroup_device *devices = NULL;
        _cleanup_free_ char *path = NULL;
        int r = container_group(s, &path, err);

        if (r <= 0)
                return r;
        r = xp_cgroup_create(s->root, path, &s->cg, err);
        if (r < 0)
                return r;
        if (json_is_object(jl)) {
                l.cpu_millis = u64_of(jl, "cpu_millis");
                l.cpu_period_us = u64_of(jl, "cpu_period_us");
                l.memory_bytes = u64_of(jl, "memory_bytes");
                l.pids_max = u64_of(jl, "pids_max");
                l.cpuset_cpus = json_string_value(json_object_get(jl, "cpuset_cpus"));
                l.cpuset_mems = json_string_value(json_object_get(jl, "cpuset_mems"));
                l.restrict_devices = json_is_true(json_object_get(jl, "restrict_devices"));
                jd = json_object_get(jl, "devices");
                l.n_devices = json_array_size(jd);
                if (l.n_devices) {
                        devices = calloc(l.n_devices, sizeof(*devices));
                        if (!devices)
                                return xp_errorf(err, -ENOMEM, "cgroup %s: out of memory", path);
                }
                for (size_t i = 0; i < l.n_devices; i++) {
                        json_t *d = json_array_get(jd, i);
                        const char *type = json_string_value(json_object_get(d, "type"));
                        const char *access = json_string_value(json_object_get(d, "access"));

                        devices[i].type = type ? type[0] : 0;
                        devices[i].major = (unsigned)u64_of(d, "major");
                        devices[i].minor = (unsigned)u64_of(d, "minor");
                        snprintf(devices[i].access,
                                 sizeof(devices[i].access),
                                 "%s",
                                 access ? access : "");
                }
                l.devices = devices;
                r = xp_cgroup_apply(s->cg, &l, err);
                if (r == -EOPNOTSUPP && l.restrict_devices) {
                        /* v2 without a device program: the runtime's warning says so */
                        l.restrict_devices = false;
                        l.n_devices = 0;
                        l.devices = NULL;
                        r = xp_cgroup_apply(s->cg, &l, err);
                }
                if (r < 0)
                        return r;
        }
        s->have_oom = xp_cgroup_oom_kills(s->cg, &s->oom_before, NULL) >= 0;
        return 0;
}

void shim_reap_all(void)
{
        while (waitpid(-1, NULL, WNOHANG) > 0)
                ;
}

/*
 * SIGKILL to the children /proc/thread-self/children lists (the shim is one thread): 1 when there
 * were some, 0 when none, -1 where the kernel lists none (CONFIG_PROC_CHILDREN). Reading every
 * process's stat instead costs milliseconds on a busy node, at each container's end.
 */
static int kill_listed_children(void)
{
        char buf[4096];
        int fd = open("/proc/thread-self/children", O_RDONLY | O_CLOEXEC);
        bool found = false;
        ssize_t n;

        if (fd < 0)
                return -1;
        n = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        if (n < 0)
                return -1;
        buf[n] = '\0';
        /* more than fit the buffer: the rest in the next pass, not a pid cut in two */
        if ((size_t)n == sizeof(buf) - 1 && strrchr(buf, ' '))
                *strrchr(buf, ' ') = '\0';
        for (char *p = buf, *end;; p = end) {
                long pid = strtol(p, &end, 10);

                if (end == p)
                        break;
                if (pid > 0 && kill((pid_t)pid, SIGKILL) == 0)
                        found = true;
        }
        return found;
}

/* Without a pid namespace: SIGKILL to the shim's children until none is left. The shim is a
 * subreaper, so every process the container leaves behind becomes its child in turn, whatever
 * session or cgroup it moved to. */
static void kill_children(struct shim *s)
{
        for (int pass = 0; pass < 100; pass++) {
                int listed = kill_listed_children();
                DIR *d = listed < 0 ? opendir("/proc") : NULL;
                struct dirent *e;
                bool found = listed > 0;

                while (d && (e = readdir(d))) {
                        pid_t pid = (pid_t)strtol(e->d_name, NULL, 10);

                        if (pid > 0 && runtime_proc_parent(pid) == s->self) {
                                kill(pid, SIGKILL);
                                found = true;
                        }
                }
                if (d)
                        closedir(d);
                if (!found)
                        return;
                shim_reap_all();
        }
}

/*
 * Kills what is left of the container: as the init of its pid namespace, every other process in
 * it (nothing of the container can leave the namespace); else its cgroup and every process that
 * is still the shim's descendant. Only once the main process was reaped (or never ran): orphans
 * reparented to us are reaped here, so zombies do not keep the group busy.
 */
void shim_kill_rest(struct shim *s)
{
        /* kill(-1) outside a pid namespace would be every process of the machine */
        if (s->pidns && getpid() == 1) {
                kill(-1, SIGKILL);
                shim_reap_all();
        }
        if (s->cg) {
                for (int i = 0; i < 50 && xp_cgroup_kill(s->cg, SIGKILL, NULL) > 0; i++) {
                        struct timespec ts = {0, 2 * 1000 * 1000};

                        shim_reap_all();
                        nanosleep(&ts, NULL);
                }
        } else if (s->child > 0) {
                kill(-s->child, SIGKILL);
        }
        if (!s->pidns)
                kill_children(s);
}

/* Removes the group at path when it is empty (-EBUSY while it has groups or processes): 0 when
 * it is gone. */
static int remove_if_empty(struct shim *s, const char *path)
{
        _cleanup_(xp_cgroup_freep) struct xp_cgroup *cg = NULL;
        int r = xp_cgroup_open(s->root, path, &cg, NULL);

        return r < 0 ? r : xp_cgroup_remove(cg, NULL);
}

/* Whether the runtime that wrote the spec is still open (its read lock on the state directory,
 * RUNTIME_KEEPER_KEY, tested without taking it): false without the key or the lock. */
static bool runtime_open(const struct shim *s)
{
        const char *dir = json_string_value(json_object_get(s->spec, RUNTIME_KEEPER_KEY));
        _cleanup_close_ int fd = dir ? open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
        struct flock lock = {.l_type = F_WRLCK, .l_whence = SEEK_SET};

        if (fd < 0 || fcntl(fd, F_OFD_GETLK, &lock) < 0)
                return false;
        return lock.l_type != F_UNLCK;
}

/*
 * The pod's group once its last container's is gone, then the runtime's parent once its last
 * pod's is (never the legacy parent, which all older agents share) and the runtime is gone:
 * whoever ends last removes them, so that none outlives its pods when the agent is away or gone,
 * while a running agent's next start finds the parent made. A start racing this makes them again
 * (xp_cgroup_create()).
 */
static void remove_pod_group(struct shim *s)
{
        const char *parent = json_string_value(json_object_get(s->spec, "cgroup_parent"));
        _cleanup_free_ char *path = strdup(xp_cgroup_path(s->cg));
        char *slash = path ? strrchr(path, '/') : NULL;

        if (!slash)
                return;
        *slash = '\0';
        if (remove_if_empty(s, path) >= 0 && parent && !runtime_open(s))
                (void)remove_if_empty(s, parent);
}

void shim_remove_cgroup(struct shim *s)
{
        if (!s->cg)
                return;
        for (int i = 0; i < 200; i++) {
                struct timespec ts = {0, 10 * 1000 * 1000};
                int r = xp_cgroup_remove(s->cg, NULL);

                if (r >= 0)
                        remove_pod_group(s);
                if (r != -EBUSY)
                        return;
                shim_kill_rest(s);
                shim_reap_all();
                nanosleep(&ts, NULL);
        }
}

/* A file in the events directory, named UID_CONTAINER_ATTEMPT_PID[suffix]: the agent reads the
 * pod's state again. */
static void announce(struct shim *s, const char *suffix)
{
        char path[PATH_MAX];
        int fd;

        snprintf(path,
                 sizeof(path),
                 "%s/%s_%s_%u_%d%s",
                 s->events_dir,
                 s->uid,
                 s->container,
                 s->attempt,
                 (int)s->self,
                 suffix);
        fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOCTTY, 0644);
        if (fd >= 0)
                close(fd);
}

/* The start is recorded (running.json or exit.json): the next start may look at it. */
static void release_lock(struct shim *s)
{
        if (s->lock >= 0)
                close(s->lock);
        s->lock = -1;
}

/* Tells the runtime the start is done; when it is gone (the agent was killed), announces it
 * instead, so the next agent reads the pod again even though it did not start this. */
void shim_start_done(struct shim *s)
{
        release_lock(s);
        if (!notify_send(s, "ok\n"))
                announce(s, "_started");
}

int shim_write_exit(struct shim *s,
                    int exit_code,
                    int sig,
                    bool oom,
                    bool start_failed,
                    const char *message,
                    struct xp_error *err)
{
        _cleanup_free_ char *text = NULL;
        json_t *o;
        int r;

        o = json_pack("{s:I, s:I, s:i, s:i, s:b, s:b, s:I, s:s?}",
                      "pid",
                      (json_int_t)(start_failed ? 0 : s->child_host),
                      "started_ns",
                      (json_int_t)s->started_ns,
                      "exit_code",
                      exit_code,
                      "signal",
                      sig,
                      "oom_killed",
                      oom,
                      "start_failed",
                      start_failed,
                      "finished_ns",
                      (json_int_t)runtime_now_ns(),
                      "message",
                      message);
        if (!o)
                return xp_errorf(err, -ENOMEM, "%s: out of memory", s->dir);
        text = json_dumps(o, JSON_COMPACT);
        json_decref(o);
        if (!text)
                return xp_errorf(err, -ENOMEM, "%s: out of memory", s->dir);
        r = runtime_write_json(s->dir, RUNTIME_EXIT_FILE, text, true, err);
        if (r < 0)
                return r;
        announce(s, "");
        return 0;
}

int shim_write_running(struct shim *s, struct xp_error *err)
{
        _cleanup_free_ char *text = NULL;
        uint64_t child_start = 0, shim_start = 0;
        char state;
        json_t *o;

        (void)runtime_proc_start(s->child_host, &child_start, &state);
        (void)runtime_proc_start(s->self, &shim_start, &state);
        o = json_pack("{s:I, s:I, s:I, s:I, s:I, s:b, s:b}",
                      "pid",
                      (json_int_t)s->child_host,
                      "pid_start",
                      (json_int_t)child_start,
                      "shim_pid",
                      (json_int_t)s->self,
                      "shim_start",
                      (json_int_t)shim_start,
                      "started_ns",
                      (json_int_t)s->started_ns,
                      "cgroup",
                      s->cg != NULL,
                      "pidns",
                      s->pidns);
        if (!o)
                return xp_errorf(err, -ENOMEM, "%s: out of memory", s->dir);
        text = json_dumps(o, JSON_COMPACT);
        json_decref(o);
        if (!text)
                return xp_errorf(err, -ENOMEM, "%s: out of memory", s->dir);
        /* not fsync()ed: start latency matters, and a crash loses the container anyway */
        return runtime_write_json(s->dir, RUNTIME_RUNNING_FILE, text, false, err);
}

/* Runs until the container ended and its output is drained; returns its wait status. Attached
 * clients (attach.c) are served meanwhile. */
int shim_supervise(struct shim *s, int sigfd, int out_fd, int err_fd)
{
        struct pollfd pfd[3 + ATTACH_POLL_MAX] = {
            {.fd = sigfd, .events = POLLIN},
            {.fd = out_fd, .events = POLLIN},
            {.fd = err_fd, .events = POLLIN},
        };
        bool main_done = false;
        int status = 0;
        static char buf[64 * 1024];

        while (!main_done || pfd[1].fd >= 0 || pfd[2].fd >= 0) {
                size_t n_attach = attach_poll(&s->attach, pfd + 3);
                int n = poll(pfd, 3 + n_attach, main_done ? DRAIN_TIMEOUT_MS : -1);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        break; /* a process that escaped still holds a pipe: stop waiting */
                attach_handle(&s->attach, pfd + 3, n_attach);
                if (pfd[0].revents) {
                        struct signalfd_siginfo si;
                        int st;
                        pid_t pid;

                        (void)!read(sigfd, &si, sizeof(si));
                        while ((pid = waitpid(-1, &st, WNOHANG)) > 0)
                                if (pid == s->child) {
                                        status = st;
                                        main_done = true;
                                        /* the container is its whole process tree */
                                        shim_kill_rest(s);
                                }
                }
                for (int i = 1; i < 3; i++) {
                        ssize_t got;

                        if (pfd[i].fd < 0 || !pfd[i].revents)
                                continue;
                        got = read(pfd[i].fd, buf, sizeof(buf));
                        if (got < 0 && (errno == EINTR || errno == EAGAIN))
                                continue;
                        if (got <= 0) {
                                close(pfd[i].fd);
                                pfd[i].fd = -1;
                                continue;
                        }
                        (void)logwrite_data(&s->log,
                                            i == 1 ? LOGWRITE_STDOUT : LOGWRITE_STDERR,
                                            buf,
                                            (size_t)got,
                                            runtime_now_ns(),
                                            NULL);
                        attach_output(&s->attach, i == 2, buf, (size_t)got);
                }
        }
        for (int i = 1; i < 3; i++)
                if (pfd[i].fd >= 0)
                        close(pfd[i].fd);
        return status;
}

/* The release marker (runtime_internal.h), before the child may exec: it names the container's
 * process and the shim as the host sees them. */
int shim_release_marker(struct shim *s, struct xp_error *err)
{
        uint64_t start = 0;
        char state;
        int r;

        if (s->lock < 0)
                return 0;
        (void)runtime_proc_start(s->child_host, &start, &state);
        r = runtime_release_write(s->lock, s->child_host, start, s->self);
        if (r < 0)
                return xp_errorf(err, r, "%s: the release marker: %s", s->dir, strerror(-r));
        return 0;
}

/* Reads exactly len bytes (EINTR retried): false at EOF or on an error. */
static bool read_full(int fd, void *buf, size_t len)
{
        size_t got = 0;

        while (got < len) {
                ssize_t n = read(fd, (char *)buf + got, len - got);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        return false;
                got += (size_t)n;
        }
        return true;
}

/*
 * The container's stdio: pipes (in[] only with stdin), or with tty a terminal, whose slave is
 * all three of the child's (in[0], out[1], errp[1]) and whose master is the one output (out[0];
 * errp[0] -1) and the input. -errno with err.
 */
static int child_stdio(struct shim *s, int in[2], int out[2], int errp[2], struct xp_error *err)
{
        int r;

        if (!s->tty) {
                if (pipe2(out, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0 ||
                    (s->stdin && pipe2(in, O_CLOEXEC) < 0))
                        return xp_errorf(err, -errno, "%s: creating pipes: %m", s->dir);
                return 0;
        }
        r = xp_runtime_pty_open(&out[0], &in[0]);
        if (r < 0)
                return xp_errorf(err, r, "%s: a terminal: %s", s->dir, strerror(-r));
        out[1] = errp[1] = in[0];
        return 0;
}

void shim_attach_open(struct shim *s, int stdin_fd, int tty)
{
        if (tty >= 0 && s->stdin)
                stdin_fd = fcntl(tty, F_DUPFD_CLOEXEC, 3);
        if (attach_open(&s->attach, s->dir, stdin_fd, s->stdin_once, NULL) < 0)
                attach_close(&s->attach);
        else if (tty >= 0)
                attach_tty(&s->attach, fcntl(tty, F_DUPFD_CLOEXEC, 3));
}

/* The child has its stdio: ours of it are closed; attached clients get the container's stdin
 * and output. */
static void parent_stdio(struct shim *s, int in[2], int out[2], int errp[2])
{
        if (in[0] >= 0)
                close(in[0]);
        if (!s->tty) {
                close(out[1]);
                close(errp[1]);
        }
        shim_attach_open(s, in[1], s->tty ? out[0] : -1);
}

/*
 * Forks the container's process, puts it in its cgroup, lets it go, and waits until it exec'd
 * (EOF on the close-on-exec error pipe after its host pid) or failed to: msg then says why.
 * The pipes of its stdout and stderr are returned in out[0], errp[0] (with tty: the terminal's
 * master in out[0], errp[0] -1).
 */
static int start_child(struct shim *s, int out[2], int errp[2], char *msg, struct xp_error *err)
{
        int sync[2] = {-1, -1}, ep[2] = {-1, -1}, in[2] = {-1, -1}, r;
        struct shim_child_args args;
        size_t len = 0;
        ssize_t got;

        r = child_stdio(s, in, out, errp, err);
        if (r < 0)
                return r;
        if (pipe2(sync, O_CLOEXEC) < 0 || pipe2(ep, O_CLOEXEC) < 0) {
                r = -errno;
                return xp_errorf(err, r, "%s: creating pipes: %s", s->dir, strerror(-r));
        }
        /* in this frame: the child reads it until its exec (shim_child_start()). The child
         * shares our memory and our thread's TLS (errno, malloc's per-thread cache): until the
         * sync byte it calls no allocator, and after it we only block in read() on ep until its
         * exec, so the two never use them at once. Keep it so on both sides. */
        args = (struct shim_child_args){s, sync[0], ep[1], in[0], out[1], errp[1]};
        s->child = shim_child_start(&args);
        if (s->child < 0) {
                r = -errno;
                return xp_errorf(err, r, "%s: fork: %s", s->dir, strerror(-r));
        }
        parent_stdio(s, in, out, errp);
        close(sync[0]);
        close(ep[1]);
        r = 0;
        if (!read_full(ep[0], &s->child_host, sizeof(s->child_host)))
                r = xp_errorf(
                    err, -EIO, "%s: the container's process ended before it started", s->dir);
        else if (s->cg)
                r = xp_cgroup_add_pid(s->cg, s->child, err);
        /* from here the container may run: say so first (the release marker), so a next agent
         * never starts this attempt again after our death */
        if (r >= 0)
                r = shim_release_marker(s, err);
        if (r < 0) {
                close(sync[1]);
                close(ep[0]);
                kill(s->child, SIGKILL);
                waitpid(s->child, NULL, 0);
                return r;
        }
        (void)!write(sync[1], "g", 1);
        close(sync[1]);
        while (len == 0 && (got = read(ep[0], msg + len, RUNTIME_NOTIFY_MAX - 1 - len)) != 0)
                if (got > 0)
                        len += (size_t)got;
                else if (errno != EINTR)
                        break;
        close(ep[0]);
        msg[len] = '\0';
        return 0;
}

static int run(struct shim *s, struct xp_error *err)
{
        int out[2] = {-1, -1}, errp[2] = {-1, -1};
        _cleanup_close_ int sigfd = -1;
        char msg[RUNTIME_NOTIFY_MAX];
        sigset_t chld;
        int r, status, code, sig;
        uint64_t oom_after = 0;
        bool oom = false;

        r = shim_setup_cgroup(s, err);
        if (r < 0)
                return r;
        r = logwrite_open(&s->log,
                          json_string_value(json_object_get(s->spec, "log_dir")),
                          s->attempt,
                          u64_of(s->spec, "log_max_bytes"),
                          (unsigned)u64_of(s->spec, "log_max_files"),
                          err);
        if (r < 0)
                return r;
        sigemptyset(&chld);
        sigaddset(&chld, SIGCHLD);
        sigprocmask(SIG_BLOCK, &chld, NULL);
        sigfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
        if (sigfd < 0) {
                r = -errno;
                return xp_errorf(err, r, "%s: signalfd: %s", s->dir, strerror(-r));
        }
        r = start_child(s, out, errp, msg, err);
        if (r < 0)
                return r;
        s->started_ns = runtime_now_ns();
        if (*msg) {
                attach_close(&s->attach);
                waitpid(s->child, NULL, 0);
                close(out[0]);
                close(errp[0]);
                (void)logwrite_finish(&s->log, runtime_now_ns(), NULL);
                shim_remove_cgroup(s);
                r = shim_write_exit(s, 128, 0, false, true, msg, err);
                if (r < 0)
                        return r;
                shim_start_done(s);
                return 0;
        }
        r = shim_write_running(s, err);
        if (r < 0) {
                kill(s->child, SIGKILL);
                waitpid(s->child, NULL, 0);
                shim_remove_cgroup(s);
                return r;
        }
        shim_start_done(s);

        status = shim_supervise(s, sigfd, out[0], errp[0]);
        attach_close(&s->attach);
        shim_kill_rest(s);
        shim_reap_all();
        (void)logwrite_finish(&s->log, runtime_now_ns(), NULL);
        if (s->cg && s->have_oom && xp_cgroup_oom_kills(s->cg, &oom_after, NULL) >= 0)
                oom = oom_after > s->oom_before;
        shim_remove_cgroup(s);
        sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
        code = sig ? 128 + sig : WEXITSTATUS(status);
        return shim_write_exit(s, code, sig, oom, false, NULL, err);
}

/* The pid /proc (the host's: the shim never leaves the host's mount namespace) knows us by. */
static pid_t host_self(void)
{
        char buf[32];
        ssize_t n = readlink("/proc/self", buf, sizeof(buf) - 1);

        if (n <= 0)
                return getpid();
        buf[n] = '\0';
        return (pid_t)strtol(buf, NULL, 10);
}

static void shim_done(struct shim *s)
{
        attach_close(&s->attach);
        logwrite_done(&s->log);
        xp_cgroup_free(s->cg);
        xp_cgroup_root_free(s->root);
        contain_plan_done(&s->plan);
        free(s->argv);
        free(s->env);
        json_decref(s->spec);
}

/* The rest of the shim's life once detached (r 0), or the report of a failure before (r < 0):
 * the process's exit status. */
static int shim_rest(struct shim *s, struct xp_error *err, int r)
{
        if (r >= 0 && s->oci)
                r = oci_shim_run(s, err);
        else if (r >= 0)
                r = run(s, err);
        if (r < 0) {
                if (s->self > 0) {
                        shim_kill_rest(s);
                        shim_remove_cgroup(s);
                }
                notify_send(s, "error %d %s\n", -r, xp_error_message(err));
        }
        shim_done(s);
        return r < 0 ? 1 : 0;
}

struct detached {
        struct shim *s;
        struct xp_error *err;
};

/* The shim proper, in the process the first one started: as the init of the container's pid
 * namespace when the spec asks for namespaces. */
static int shim_proper(void *arg)
{
        struct detached *d = arg;
        struct shim *s = d->s;

        s->pidns = s->plan.namespaces && !s->oci;
        s->self = host_self();
        setsid();
        signal(SIGPIPE, SIG_IGN);
        /* orphans of the container come to us, so we reap them (as the init, they do anyway) */
        prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
        exit(shim_rest(s, d->err, 0));
}

/*
 * Reads the spec and prepares the containment, then detaches: the agent reaps this first process
 * at once and the shim lives on in a child of it (shim_proper()). The child shares our memory
 * (shim_clone()): we end right after starting it, without touching what it uses (s and err, in
 * our caller's frame; d, in ours, which we never leave), so it carries on as if forked without a
 * fork's copy. Returns only on a failure (-errno with err), in this first process.
 */
static int detach(struct shim *s, struct xp_error *err)
{
        struct detached d = {s, err};
        int r;

        r = shim_load_spec(s, err);
        if (r < 0)
                return r;
        /* an OCI runtime makes the container's pid namespace itself */
        if (s->plan.namespaces && !s->oci && unshare(CLONE_NEWPID) < 0) {
                r = -errno;
                return xp_errorf(err, r, "unshare CLONE_NEWPID: %s", strerror(-r));
        }
        if (shim_clone(shim_proper, &d, SHIM_STACK_SIZE) < 0) {
                r = -errno;
                return xp_errorf(err, r, "fork: %s", strerror(-r));
        }
        /* our thread's tid word is the child's too now: the kernel must not clear it at our exit */
        syscall(SYS_set_tid_address, NULL);
        _exit(0);
}

int xp_shim_main(int argc, char **argv)
{
        struct shim s = {.notify = RUNTIME_NOTIFY_FD,
                         .lock = -1,
                         .child = -1,
                         .log = {.fd = -1},
                         .attach = {.dir_fd = -1, .listen_fd = -1, .stdin_fd = -1, .tty_fd = -1},
                         .plan = CONTAIN_PLAN_NONE};
        struct xp_error err = {0};

        if (argc != 2) {
                fprintf(stderr, "usage: xpool __shim STATE_DIR (started by the node agent)\n");
                return 2;
        }
        if (fcntl(s.notify, F_GETFD) < 0)
                s.notify = -1;
        else
                fcntl(s.notify, F_SETFD, FD_CLOEXEC);
        s.lock = runtime_start_lock_inherited(argv[1]);
        s.dir = argv[1];
        return shim_rest(&s, &err, detach(&s, &err));
}
