/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The process runtime: starts shims (shim.c), and reads the state files they write to list,
 * signal and forget containers. The agent is multi-threaded, so shims are started with
 * posix_spawn (no library code runs between fork and exec); each shim detaches at once.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cgroup_internal.h"
#include "contain_internal.h"
#include "oci_internal.h"
#include "runtime_internal.h"
#include "speccache.h"
#include "xpool/attach.h"
#include "xpool/cdi.h"
#include "xpool/fileio.h"
#include "xpool/map.h"

extern char **environ;

#define LOST_EXIT_CODE 137

struct xp_runtime {
        char *state_dir, *log_dir, *events_dir, *shim_exe, *cgroup_root;
        char *cgroup_parent; /* of this runtime's pods' groups: xpool/agent-<key> */
        uint64_t log_max_bytes;
        unsigned log_max_files;
        struct xp_cgroup_root *root;  /* NULL when containers run without cgroups */
        struct cgroup_warmer *warmer; /* made at the first xp_runtime_warm_moves(), under lock */
        char **hide;                  /* NULL-terminated: paths no container sees */
        char **detach;                /* NULL-terminated: mount points no container keeps */
        char **share;                 /* NULL-terminated: the node's paths pods may write */
        pthread_mutex_t filters_lock;
        pthread_mutex_t pods_lock; /* the pods' own files (oci_pod.c) */
        struct {
                uint64_t effective;
                int fd;
        } filters[8]; /* the seccomp filters compiled, by effective set (contain_filter_memfd()) */
        size_t n_filters;
        unsigned isolation; /* enum xp_isolation bits */
        char *warning;
        char *cdi_dir, *ipc_dir;
        bool overlay, apparmor; /* OCI containers: the kernel has overlayfs; the profile loaded */
        char *oci_warning;
        int inotify;
        int keeper; /* the state directory, read-locked (an OFD lock) while the runtime is open */
        struct shimwatch *shims; /* with inotify: the event fd */
        pthread_mutex_t lock;
        char **starting; /* "uid/container" of starts in progress, under lock */
        size_t n_starting;
        struct speccache specs; /* under lock */
};

/* ---- small helpers ----------------------------------------------------------------------------
 */

static bool component_ok(const char *s)
{
        return s && *s && strcmp(s, ".") != 0 && strcmp(s, "..") != 0 && !strchr(s, '/') &&
               strlen(s) <= NAME_MAX / 2;
}

/* The fields of /proc/PID/stat after the command name (which may hold spaces and parentheses:
 * they start after the last ')'), in buf. NULL when there is no such process. */
static const char *proc_stat_fields(pid_t pid, char buf[static 1024])
{
        char path[64], *p;
        _cleanup_close_ int fd = -1;
        ssize_t n;

        if (pid <= 0)
                return NULL;
        snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return NULL;
        n = read(fd, buf, 1023);
        if (n <= 0)
                return NULL;
        buf[n] = '\0';
        p = strrchr(buf, ')');
        return p && p[1] == ' ' ? p + 2 : NULL;
}

pid_t runtime_proc_parent(pid_t pid)
{
        char buf[1024];
        const char *p = proc_stat_fields(pid, buf);
        int parent;

        return p && sscanf(p, "%*c %d", &parent) == 1 ? (pid_t)parent : 0;
}

int runtime_proc_start(pid_t pid, uint64_t *ret_start, char *ret_state)
{
        char buf[1024];
        const char *p = proc_stat_fields(pid, buf);
        unsigned long long start;

        if (!p)
                return -ESRCH;
        if (sscanf(p,
                   "%c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d "
                   "%*d %*d %llu",
                   ret_state,
                   &start) != 2)
                return -EINVAL;
        *ret_start = start;
        return 0;
}

/* Alive and the same process (not a reused pid): start time matches, not a zombie. */
static bool proc_alive(pid_t pid, uint64_t start)
{
        uint64_t s;
        char state;

        return runtime_proc_start(pid, &s, &state) == 0 && s == start && state != 'Z' &&
               state != 'X';
}

int runtime_write_json(
    const char *dir, const char *name, const char *text, bool durable, struct xp_error *err)
{
        char tmp[PATH_MAX], path[PATH_MAX];
        size_t len = strlen(text);
        int fd, r = 0;

        if (snprintf(path, sizeof(path), "%s/%s", dir, name) >= (int)sizeof(path) ||
            snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", dir, name) >= (int)sizeof(tmp))
                return xp_errorf(err, -ENAMETOOLONG, "%s/%s: path too long", dir, name);
        fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (fd < 0) {
                r = -errno;
                return xp_errorf(err, r, "writing %s: %s", tmp, strerror(-r));
        }
        if (write(fd, text, len) != (ssize_t)len)
                r = errno ? -errno : -EIO;
        else if (durable && fsync(fd) < 0)
                r = -errno;
        close(fd);
        if (r == 0 && rename(tmp, path) < 0)
                r = -errno;
        if (r < 0) {
                unlink(tmp);
                return xp_errorf(err, r, "writing %s: %s", path, strerror(-r));
        }
        if (durable) {
                fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (fd >= 0) {
                        fsync(fd);
                        close(fd);
                }
        }
        return 0;
}

static json_t *read_json_fd(int fd, json_error_t *jerr)
{
        _cleanup_free_ char *text = NULL;
        size_t size = 0;
        int r;

        r = xp_read_fd_all(fd, RUNTIME_STATE_FILE_MAX, &text, &size);
        if (r < 0) {
                if (jerr)
                        snprintf(jerr->text, sizeof(jerr->text), "%s", strerror(-r));
                return NULL;
        }
        return json_loadb(text, size, 0, jerr);
}

json_t *runtime_read_json(const char *path, json_error_t *jerr)
{
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);

        if (fd < 0) {
                if (jerr)
                        snprintf(jerr->text, sizeof(jerr->text), "%s", strerror(errno));
                return NULL;
        }
        return read_json_fd(fd, jerr);
}

static json_t *read_json(const char *dir, const char *name)
{
        char path[PATH_MAX];

        snprintf(path, sizeof(path), "%s/%s", dir, name);
        return runtime_read_json(path, NULL);
}

static int64_t i64_of(json_t *o, const char *key)
{
        return (int64_t)json_integer_value(json_object_get(o, key));
}

static int dup_str(json_t *o, const char *key, char **ret)
{
        const char *s = json_string_value(json_object_get(o, key));

        *ret = NULL;
        if (!s)
                return 0;
        *ret = strdup(s);
        return *ret ? 0 : -ENOMEM;
}

void xp_container_record_clear(struct xp_container_record *r)
{
        if (!r)
                return;
        free(r->pod_uid);
        free(r->pod_namespace);
        free(r->pod_name);
        free(r->container);
        free(r->message);
        free(r->image_id);
        free(r->image_ref);
        *r = (struct xp_container_record){0};
}

void xp_container_records_free(struct xp_container_record *r, size_t n)
{
        if (!r)
                return;
        for (size_t i = 0; i < n; i++)
                xp_container_record_clear(&r[i]);
        free(r);
}

/* ---- one container's state --------------------------------------------------------------------
 */

enum cstate {
        CSTATE_NONE,     /* no spec: nothing there */
        CSTATE_STARTING, /* spec only: a start in progress or a shim that died before reporting */
        CSTATE_RUNNING,
        CSTATE_EXITED,
        CSTATE_LOST, /* running.json, no exit.json, the shim gone */
};

struct cinfo {
        enum cstate state;
        json_t *spec, *running, *exit;
};

static void cinfo_done(struct cinfo *c)
{
        json_decref(c->spec);
        json_decref(c->running);
        json_decref(c->exit);
        *c = (struct cinfo){0};
}

/* The state a container's shim recorded (exit.json, running.json), its spec not read. */
static void cinfo_load_state(const char *dir, struct cinfo *c)
{
        c->exit = read_json(dir, RUNTIME_EXIT_FILE);
        if (c->exit) {
                c->state = CSTATE_EXITED;
                return;
        }
        c->running = read_json(dir, RUNTIME_RUNNING_FILE);
        if (!c->running) {
                c->state = CSTATE_STARTING;
                return;
        }
        /* the shim may have written exit.json between our two reads */
        if (proc_alive((pid_t)i64_of(c->running, "shim_pid"),
                       (uint64_t)i64_of(c->running, "shim_start")))
                c->state = CSTATE_RUNNING;
        else if ((c->exit = read_json(dir, RUNTIME_EXIT_FILE)))
                c->state = CSTATE_EXITED;
        else
                c->state = CSTATE_LOST;
}

static void cinfo_load(const char *dir, struct cinfo *c)
{
        *c = (struct cinfo){0};
        c->spec = read_json(dir, RUNTIME_SPEC_FILE);
        if (c->spec)
                cinfo_load_state(dir, c);
}

/*
 * cinfo_load() for the readers of the spec's kept keys alone (speccache.c: a listing, a removal):
 * those of the file as it is, parsed once. Under lock.
 */
static void cinfo_load_kept(struct speccache *specs, const char *dir, struct cinfo *c)
{
        char path[PATH_MAX];
        _cleanup_close_ int fd = -1;
        struct stat st;

        *c = (struct cinfo){0};
        if (snprintf(path, sizeof(path), "%s/" RUNTIME_SPEC_FILE, dir) >= (int)sizeof(path))
                return;
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0 || fstat(fd, &st) < 0)
                return;
        c->spec = speccache_get(specs, dir, &st);
        if (!c->spec) {
                c->spec = read_json_fd(fd, NULL);
                if (c->spec)
                        speccache_put(specs, dir, &st, c->spec);
        }
        if (c->spec)
                cinfo_load_state(dir, c);
}

/* Fills r's pids, times and exit from what the shim recorded, then hands it over; e: whether a
 * copy failed already. */
static int record_finish(const struct cinfo *c,
                         struct xp_container_record r,
                         int e,
                         struct xp_container_record *ret)
{
        json_t *src = c->exit ? c->exit : c->running;

        if (src) {
                r.pid = (pid_t)i64_of(src, "pid");
                r.started_ns = i64_of(src, "started_ns");
        }
        if (c->exit) {
                r.exited = true;
                r.exit_code = (int)i64_of(c->exit, "exit_code");
                r.signal = (int)i64_of(c->exit, "signal");
                r.oom_killed = json_is_true(json_object_get(c->exit, "oom_killed"));
                r.start_failed = json_is_true(json_object_get(c->exit, "start_failed"));
                r.finished_ns = i64_of(c->exit, "finished_ns");
                e |= dup_str(c->exit, "message", &r.message);
        }
        if (e) {
                xp_container_record_clear(&r);
                return -ENOMEM;
        }
        *ret = r;
        return 0;
}

static int cinfo_record(const struct cinfo *c, struct xp_container_record *ret)
{
        struct xp_container_record r = {0};
        int e = 0;

        e |= dup_str(c->spec, "pod_uid", &r.pod_uid);
        e |= dup_str(c->spec, "pod_namespace", &r.pod_namespace);
        e |= dup_str(c->spec, "pod_name", &r.pod_name);
        e |= dup_str(c->spec, "container", &r.container);
        e |= dup_str(c->spec, "image_id", &r.image_id);
        e |= dup_str(c->spec, "image_ref", &r.image_ref);
        r.attempt = (unsigned)i64_of(c->spec, "attempt");
        return record_finish(c, r, e, ret);
}

static int dup_opt(const char *s, char **ret)
{
        *ret = s ? strdup(s) : NULL;
        return s && !*ret;
}

/* The record of a start just made: who it is comes from the launch, which the spec was written
 * from, so that the start does not parse the spec it wrote. */
static int launch_record(const struct xp_container_launch *l,
                         const struct cinfo *c,
                         struct xp_container_record *ret)
{
        struct xp_container_record r = {.attempt = l->attempt};
        int e = 0;

        e |= dup_opt(l->pod_uid, &r.pod_uid);
        e |= dup_opt(l->pod_namespace, &r.pod_namespace);
        e |= dup_opt(l->pod_name, &r.pod_name);
        e |= dup_opt(l->container, &r.container);
        e |= dup_opt(l->oci ? l->oci->image_id : NULL, &r.image_id);
        e |= dup_opt(l->oci ? l->oci->image_ref : NULL, &r.image_ref);
        return record_finish(c, r, e, ret);
}

static int container_dir(const struct xp_runtime *rt,
                         const char *uid,
                         const char *container,
                         char buf[static PATH_MAX])
{
        int n = snprintf(buf, PATH_MAX, "%s/%s/%s", rt->state_dir, uid, container);

        return n < 0 || n >= PATH_MAX ? -ENAMETOOLONG : 0;
}

/* The container's group: below the parent its spec names (a spec an agent before per-runtime
 * parents wrote names none: the legacy one), else this runtime's. */
static int open_cgroup(struct xp_runtime *rt,
                       const json_t *spec,
                       const char *uid,
                       const char *container,
                       struct xp_cgroup **ret,
                       struct xp_error *err)
{
        const char *parent =
            !spec ? rt->cgroup_parent : json_string_value(json_object_get(spec, "cgroup_parent"));
        _cleanup_free_ char *path = NULL;
        int r = xp_cgroup_container_path(parent, uid, container, &path, err);

        if (r < 0)
                return r;
        return xp_cgroup_open(rt->root, path, ret, err);
}

/* A signal to the container's main process alone (its pid checked against its start time). */
static int signal_main(const struct cinfo *c, int sig, struct xp_error *err)
{
        pid_t pid = (pid_t)i64_of(c->running, "pid");
        int r;

        if (!proc_alive(pid, (uint64_t)i64_of(c->running, "pid_start")))
                return 0;
        if (kill(pid, sig) < 0) {
                r = -errno;
                if (r == -ESRCH)
                        return 0;
                return xp_errorf(err, r, "signal %d to pid %d: %s", sig, (int)pid, strerror(-r));
        }
        return 1;
}

/*
 * Signals what runs of the container. SIGKILL: its cgroup when it has one, else its process
 * group. Any other signal (the SIGTERM of a graceful deletion) goes to the main process alone, as
 * Kubernetes' runtimes send it to the container's process 1: a handler it runs may fork (a shell
 * trap's `touch`), and the cgroup's passes, reread until no new pid comes, would kill what it
 * forked; the main process stops the others, or its end makes the shim kill them.
 */
static int
signal_container(struct xp_runtime *rt, const struct cinfo *c, int sig, struct xp_error *err)
{
        const char *uid = json_string_value(json_object_get(c->spec, "pod_uid"));
        const char *name = json_string_value(json_object_get(c->spec, "container"));
        pid_t pid = (pid_t)i64_of(c->running, "pid");
        int r;

        if (sig != SIGKILL)
                return signal_main(c, sig, err);
        if (json_is_true(json_object_get(c->running, "cgroup")) && rt->root) {
                _cleanup_(xp_cgroup_freep) struct xp_cgroup *cg = NULL;

                r = open_cgroup(rt, c->spec, uid, name, &cg, err);
                if (r >= 0)
                        r = xp_cgroup_kill(cg, sig, err);
                /* the main process, should it have left its group: its end ends the pid
                 * namespace (the shim kills the rest) */
                if (r >= 0 && proc_alive(pid, (uint64_t)i64_of(c->running, "pid_start")) &&
                    kill(pid, SIGKILL) == 0 && r == 0)
                        r = 1;
                return r;
        }
        if (!proc_alive(pid, (uint64_t)i64_of(c->running, "pid_start")))
                return 0;
        if (kill(-pid, sig) < 0) {
                r = -errno;
                if (r == -ESRCH)
                        return 0;
                return xp_errorf(
                    err, r, "signal %d to process group %d: %s", sig, (int)pid, strerror(-r));
        }
        return 1;
}

/* A shim that died without recording the exit: kill what is left and record it for it. */
static int record_lost(struct xp_runtime *rt, const char *dir, struct cinfo *c)
{
        _cleanup_free_ char *text = NULL, *msg = NULL;
        bool started = c->running != NULL;
        json_t *o;
        int r;

        if (started)
                (void)signal_container(rt, c, SIGKILL, NULL);
        if (started)
                r = asprintf(&msg,
                             json_is_true(json_object_get(c->running, "starting"))
                                 ? "the shim (pid %" PRId64 ") died while starting the container"
                                 : "the shim (pid %" PRId64 ") died without recording the exit",
                             i64_of(c->running, "shim_pid"));
        else
                r = asprintf(&msg, "the shim died before starting the container");
        if (r < 0)
                return -ENOMEM;
        o = json_pack("{s:I, s:I, s:i, s:i, s:b, s:b, s:I, s:s}",
                      "pid",
                      (json_int_t)(started ? i64_of(c->running, "pid") : 0),
                      "started_ns",
                      (json_int_t)(started ? i64_of(c->running, "started_ns") : 0),
                      "exit_code",
                      started ? LOST_EXIT_CODE : 128,
                      "signal",
                      0,
                      "oom_killed",
                      0,
                      "start_failed",
                      !started,
                      "finished_ns",
                      (json_int_t)runtime_now_ns(),
                      "message",
                      msg);
        if (!o)
                return -ENOMEM;
        text = json_dumps(o, JSON_COMPACT);
        if (!text) {
                json_decref(o);
                return -ENOMEM;
        }
        r = runtime_write_json(dir, RUNTIME_EXIT_FILE, text, true, NULL);
        if (r < 0) {
                json_decref(o);
                return r;
        }
        json_decref(c->exit);
        c->exit = o;
        c->state = CSTATE_EXITED;
        return 0;
}

/* A running container's shim, watched: should it die without recording the exit, the event fd
 * wakes the agent, whose next read of the pod records it lost and kills the container. Under
 * lock. Best effort: without pidfds (before Linux 5.3) only the agent's next full list sees it. */
static void watch_shim(struct xp_runtime *rt, const char *uid, const struct cinfo *c)
{
        if (c->state == CSTATE_RUNNING)
                (void)shimwatch_add(rt->shims,
                                    uid,
                                    (pid_t)i64_of(c->running, "shim_pid"),
                                    (uint64_t)i64_of(c->running, "shim_start"));
}

static bool is_starting(const struct xp_runtime *rt, const char *uid, const char *container)
{
        size_t ulen = strlen(uid);

        for (size_t i = 0; i < rt->n_starting; i++)
                if (strncmp(rt->starting[i], uid, ulen) == 0 && rt->starting[i][ulen] == '/' &&
                    strcmp(rt->starting[i] + ulen + 1, container) == 0)
                        return true;
        return false;
}

/* ---- interrupted starts --------------------------------------------------------------------- */

/*
 * Kills what is in a container's group and removes it, for a start whose container never ran:
 * nothing there ran the container's code (an OCI runtime's container created and waiting for
 * its start, a runtime process the dead shim left), so nothing of it may stay.
 */
static void kill_group(struct xp_runtime *rt, const char *uid, const char *container)
{
        _cleanup_(xp_cgroup_freep) struct xp_cgroup *cg = NULL;

        if (!rt->root || open_cgroup(rt, NULL, uid, container, &cg, NULL) < 0)
                return;
        for (int i = 0; i < 50 && xp_cgroup_kill(cg, SIGKILL, NULL) > 0; i++) {
                struct timespec ts = {0, 2 * 1000 * 1000};

                nanosleep(&ts, NULL);
        }
        (void)xp_cgroup_remove(cg, NULL);
}

/*
 * A start that no live process holds the lock of (c spec only, the lock held by the caller):
 * 0 when its container never ran (there is no release marker: the start may be made again, as
 * the same attempt); 1 when its shim died after letting the container go on to exec: what may
 * run of it is killed and the exit recorded (c is EXITED then), so it never runs twice.
 */
static int settle_interrupted(struct xp_runtime *rt, const char *dir, int lock_fd, struct cinfo *c)
{
        struct runtime_release rel;
        json_t *running;
        int r;

        r = runtime_release_read(lock_fd, &rel);
        if (r <= 0)
                return r;
        running = json_pack("{s:i, s:I, s:i, s:b, s:b}",
                            "pid",
                            (int)rel.pid,
                            "pid_start",
                            (json_int_t)rel.pid_start,
                            "shim_pid",
                            (int)rel.shim_pid,
                            "cgroup",
                            rt->root != NULL,
                            "starting",
                            true);
        if (!running)
                return -ENOMEM;
        json_decref(c->running);
        c->running = running;
        /* before its setsid() the container is no group leader yet: the pid itself too */
        if (rel.pid > 0 && proc_alive(rel.pid, rel.pid_start))
                (void)kill(rel.pid, SIGKILL);
        r = record_lost(rt, dir, c);
        return r < 0 ? r : 1;
}

/* ---- open / free ---------------------------------------------------------------------------- */

void xp_runtime_free(struct xp_runtime *rt)
{
        if (!rt)
                return;
        shimwatch_free(rt->shims);
        cgroup_warmer_stop(rt->warmer);
        if (rt->inotify >= 0)
                close(rt->inotify);
        /* first: a shim ending meanwhile then removes the parent itself, not leaves it */
        if (rt->keeper >= 0)
                close(rt->keeper);
        if (rt->root && rt->cgroup_parent) {
                _cleanup_(xp_cgroup_freep) struct xp_cgroup *parent = NULL;

                /* the runtime's parent goes with its last pod's group; pods running keep it */
                if (xp_cgroup_open(rt->root, rt->cgroup_parent, &parent, NULL) >= 0)
                        (void)xp_cgroup_remove(parent, NULL);
        }
        xp_cgroup_root_free(rt->root);
        pthread_mutex_destroy(&rt->lock);
        pthread_mutex_destroy(&rt->filters_lock);
        pthread_mutex_destroy(&rt->pods_lock);
        for (size_t i = 0; i < rt->n_filters; i++)
                close(rt->filters[i].fd);
        free(rt->starting);
        speccache_done(&rt->specs);
        free(rt->state_dir);
        free(rt->log_dir);
        free(rt->events_dir);
        free(rt->shim_exe);
        free(rt->cgroup_root);
        free(rt->cgroup_parent);
        for (size_t i = 0; rt->hide && rt->hide[i]; i++)
                free(rt->hide[i]);
        free(rt->hide);
        for (size_t i = 0; rt->detach && rt->detach[i]; i++)
                free(rt->detach[i]);
        free(rt->detach);
        for (size_t i = 0; rt->share && rt->share[i]; i++)
                free(rt->share[i]);
        free(rt->share);
        free(rt->warning);
        free(rt->cdi_dir);
        free(rt->ipc_dir);
        free(rt->oci_warning);
        free(rt);
}

/* Adds a sentence to the warning ("...; ..."). */
static void set_warning(struct xp_runtime *rt, const char *fmt, ...) _printf_(2, 3);
static void set_warning(struct xp_runtime *rt, const char *fmt, ...)
{
        _cleanup_free_ char *text = NULL;
        char *joined = NULL;
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = vasprintf(&text, fmt, ap);
        va_end(ap);
        if (r < 0)
                return;
        if (!rt->warning) {
                rt->warning = TAKE_PTR(text);
                return;
        }
        if (asprintf(&joined, "%s; %s", rt->warning, text) < 0)
                return;
        free(rt->warning);
        rt->warning = joined;
}

/* Decides whether containers get cgroups, and says why not (or what is missing) in warning. */
static void detect_cgroups(struct xp_runtime *rt)
{
        _cleanup_(xp_cgroup_freep) struct xp_cgroup *probe = NULL;
        struct xp_error err = {0};
        char path[64];
        int r;

        r = xp_cgroup_root_open(rt->cgroup_root, &rt->root, &err);
        if (r < 0) {
                set_warning(
                    rt, "no cgroups (%s): containers run without limits", xp_error_message(&err));
                return;
        }
        if (xp_cgroup_root_mode(rt->root) == XP_CGROUP_NONE) {
                set_warning(rt, "this machine has no cgroups: containers run without limits");
                goto none;
        }
        /* the parent of every container's group, and a group below it: creating that proves
         * the hierarchy writable (xpool/ may be there already, made by another user) */
        r = snprintf(path, sizeof(path), "xpool/probe-%d", (int)getpid()) < 0 ? -ENOMEM : 0;
        if (r >= 0)
                r = xp_cgroup_create(rt->root, path, &probe, &err);
        if (r >= 0)
                (void)xp_cgroup_remove(probe, NULL);
        if (r < 0) {
                set_warning(rt,
                            "cgroups are not writable (%s): containers run without limits",
                            xp_error_message(&err));
                goto none;
        }
        rt->isolation |= XP_ISOLATION_CGROUPS;
        xp_error_clear(&err);
        if (xp_cgroup_device_filter_check(rt->root, &err) < 0)
                set_warning(rt,
                            "no device filtering (%s): containers can open every device node",
                            xp_error_message(&err));
        else
                rt->isolation |= XP_ISOLATION_DEVICES;
        return;
none:
        xp_cgroup_root_free(rt->root);
        rt->root = NULL;
}

/*
 * While the runtime is open its shims leave its parent group in place when their pod's was the
 * last below it (RUNTIME_KEEPER_KEY): an idle node's every start made it again, a mkdir and a
 * failing one in each hierarchy. A read lock on the state directory says that the runtime runs:
 * an open file description's lock (F_OFD_SETLKW), which a shim tests without taking it
 * (F_OFD_GETLK), so that two shims testing at once never take each other's test for the runtime.
 * It goes with the process, so a killed agent's last shim removes the parent as before, and an
 * agent killed with no pod left leaves it empty until an agent on the same state ends. Without
 * the lock (an unreadable directory) the shims remove it as before.
 */
static void keep_parent(struct xp_runtime *rt)
{
        int fd = open(rt->state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        struct flock lock = {.l_type = F_RDLCK, .l_whence = SEEK_SET};

        if (fd < 0)
                return;
        while (fcntl(fd, F_OFD_SETLKW, &lock) < 0)
                if (errno != EINTR) {
                        close(fd);
                        return;
                }
        rt->keeper = fd;
}

/* Whether a process can be cloned into new pid, mount and cgroup namespaces here (root, and no
 * sandbox of our own that forbids it). The agent has threads: the child only exits. */
static bool namespaces_work(void)
{
        pid_t pid = (pid_t)syscall(SYS_clone,
                                   CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWCGROUP | SIGCHLD,
                                   NULL,
                                   NULL,
                                   NULL,
                                   NULL);
        int status;

        if (pid == 0)
                _exit(0);
        if (pid < 0)
                return false;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
                ;
        return true;
}

/* Decides what else containers get: namespaces, capabilities, seccomp; says what is missing. */
static void detect_contain(struct xp_runtime *rt)
{
        struct xp_error err = {0};
        void *prog = NULL;
        size_t len = 0;

        if (geteuid() == 0)
                rt->isolation |= XP_ISOLATION_CAPABILITIES;
        else
                set_warning(rt,
                            "the agent is not root: containers run as its user, with whatever it "
                            "may read, and no capability set of their own");
        if (geteuid() == 0 && namespaces_work())
                rt->isolation |= XP_ISOLATION_NAMESPACES;
        else
                set_warning(rt,
                            "no namespaces (%s): containers see the node's files, its secrets "
                            "included, and processes, and a process that leaves its cgroup and "
                            "session can outlive its pod",
                            geteuid() == 0 ? strerror(errno) : "not root");
        if (prctl(PR_GET_SECCOMP, 0, 0, 0, 0) < 0 ||
            xp_seccomp_build(XP_CAP_DEFAULT, &prog, &len, &err) < 0)
                set_warning(rt,
                            "no seccomp filter (%s): containers may call mount, bpf, keyctl, ...",
                            err.code ? xp_error_message(&err) : strerror(errno));
        else
                rt->isolation |= XP_ISOLATION_SECCOMP;
        free(prog);
}

/* Adds a sentence to the OCI warning. */
static void oci_warn(struct xp_runtime *rt, const char *text)
{
        char *joined = NULL;

        if (rt->oci_warning && asprintf(&joined, "%s; %s", rt->oci_warning, text) < 0)
                return;
        if (!joined && !(joined = strdup(text)))
                return;
        free(rt->oci_warning);
        rt->oci_warning = joined;
}

/* What OCI containers can have here: overlayfs for their root file systems, xpool's AppArmor
 * profile where AppArmor is enabled. */
static void detect_oci(struct xp_runtime *rt)
{
        _cleanup_free_ char *data = NULL, *dir = NULL;
        _cleanup_close_ int fd = open("/proc/filesystems", O_RDONLY | O_CLOEXEC);
        struct xp_error err = {0};
        const char *why = NULL;
        size_t size = 0;
        int r;

        if (fd >= 0 && xp_read_fd_all(fd, 64 * 1024, &data, &size) >= 0 && data)
                rt->overlay = memmem(data, size, "\toverlay\n", 9) != NULL;
        if (!rt->overlay)
                oci_warn(rt,
                         "this kernel has no overlayfs (/proc/filesystems): containers that run "
                         "from an image cannot start here");
        if (asprintf(&dir, "%s/" OCI_RUNTIME_DIR "/apparmor", rt->state_dir) < 0)
                return;
        r = oci_apparmor_load(dir, &why, &err);
        if (r > 0)
                rt->apparmor = true;
        else if (r == 0)
                oci_warn(rt, why);
        else
                oci_warn(rt, xp_error_message(&err));
}

const char *xp_runtime_oci_warning(const struct xp_runtime *rt)
{
        return rt->oci_warning;
}

/* The strings of list (NULL-terminated; NULL: none) copied to hide[*k...]. -ENOMEM. */
static int append_hide(char **hide, size_t *k, const char *const *list)
{
        for (size_t i = 0; list && list[i]; i++)
                if (!(hide[(*k)++] = strdup(list[i])))
                        return -ENOMEM;
        return 0;
}

static size_t count(const char *const *list)
{
        size_t n = 0;

        while (list && list[n])
                n++;
        return n;
}

/*
 * The paths to hide: the runtime's own directories, the caller's, the node's control sockets and
 * credentials, the namespace pins (the pods' network ones, detach, and IPC ones wherever the
 * agent keeps them, any agent's below XP_RUNTIME_RUN_DIR, iproute2's), and the CDI specs, which
 * the node applies as root at an OCI container's start (their hooks run on the node, their
 * mounts and device nodes go into the container): a pod running as root could otherwise rewrite
 * them in /var/run/cdi, which /run leaves writable.
 */
static int copy_hide(struct xp_runtime *rt, const char *const *paths, const char *const *detach)
{
        const char *const own[] = {rt->state_dir, rt->log_dir, rt->cdi_dir, rt->ipc_dir, NULL};
        const char *const *lists[] = {own,
                                      paths,
                                      detach,
                                      xp_contain_node_sockets,
                                      xp_contain_node_credentials,
                                      xp_contain_namespace_pins};
        size_t n = 1, k = 0;

        for (size_t i = 0; i < XP_ELEMENTSOF(lists); i++)
                n += count(lists[i]);
        rt->hide = calloc(n, sizeof(*rt->hide));
        if (!rt->hide)
                return -ENOMEM;
        for (size_t i = 0; i < XP_ELEMENTSOF(lists); i++)
                if (append_hide(rt->hide, &k, lists[i]) < 0)
                        return -ENOMEM;
        return 0;
}

/* A NULL-terminated copy of paths: the mount points containers do not keep (the pods' network
 * namespaces), the node's paths shared with pods. */
static int copy_paths(char ***ret, const char *const *paths)
{
        size_t n = 0;

        while (paths && paths[n])
                n++;
        *ret = calloc(n + 1, sizeof(**ret));
        if (!*ret)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                if (!((*ret)[i] = strdup(paths[i])))
                        return -ENOMEM;
        return 0;
}

/*
 * The lean xpool-shim beside our own executable (libc and jansson only: a tenth of the start
 * time of `xpool`), else our own executable, which runs `__shim` as well.
 */
static char *default_shim_exe(void)
{
        _cleanup_free_ char *self = realpath("/proc/self/exe", NULL);
        char *lean;

        if (!self)
                return NULL;
        if (asprintf(&lean, "%.*s/xpool-shim", (int)(strrchr(self, '/') - self), self) < 0)
                return NULL;
        if (access(lean, X_OK) == 0)
                return lean;
        free(lean);
        return TAKE_PTR(self);
}

/*
 * A hash of the state directory's real path, so that an agent restarted on its state finds its
 * groups (and namespace pins) again, and agents on other state directories (several on one
 * machine) have their own, which no reclaim of another touches.
 */
int xp_runtime_agent_key(const char *state_dir, char **ret, struct xp_error *err)
{
        char real[PATH_MAX];

        if (!realpath(state_dir, real))
                return xp_errorf(err, -errno, "runtime: %s: %s", state_dir, strerror(errno));
        if (asprintf(ret, "agent-%016" PRIx64, xp_hash_mix(xp_hash_string(real))) < 0)
                return xp_errorf(err, -ENOMEM, "runtime: out of memory");
        return 0;
}

/* The parent of this runtime's pods' groups: "xpool/agent-<key>". */
static int cgroup_parent_of(const char *state_dir, char **ret, struct xp_error *err)
{
        _cleanup_free_ char *key = NULL;
        int r = xp_runtime_agent_key(state_dir, &key, err);

        if (r < 0)
                return r;
        if (asprintf(ret, XP_CGROUP_PARENT_LEGACY "/%s", key) < 0)
                return xp_errorf(err, -ENOMEM, "runtime: out of memory");
        return 0;
}

int xp_runtime_open(const struct xp_runtime_options *o,
                    struct xp_runtime **ret,
                    struct xp_error *err)
{
        _cleanup_(xp_runtime_freep) struct xp_runtime *rt = calloc(1, sizeof(*rt));
        int r;

        if (!rt)
                return xp_errorf(err, -ENOMEM, "runtime: out of memory");
        rt->inotify = -1;
        rt->keeper = -1;
        pthread_mutex_init(&rt->lock, NULL);
        pthread_mutex_init(&rt->filters_lock, NULL);
        pthread_mutex_init(&rt->pods_lock, NULL);
        if (!o->state_dir || !o->log_dir)
                return xp_errorf(err, -EINVAL, "runtime: state_dir and log_dir are required");
        rt->state_dir = strdup(o->state_dir);
        rt->log_dir = strdup(o->log_dir);
        rt->shim_exe = o->shim_exe ? strdup(o->shim_exe) : default_shim_exe();
        rt->cgroup_root = strdup(o->cgroup_root ? o->cgroup_root : "/");
        rt->cdi_dir = strdup(o->cdi_dir ? o->cdi_dir : XP_CDI_DIR);
        rt->ipc_dir = strdup(o->ipc_dir ? o->ipc_dir : XP_RUNTIME_IPC_DIR);
        if (!rt->state_dir || !rt->log_dir || !rt->shim_exe || !rt->cgroup_root || !rt->cdi_dir ||
            !rt->ipc_dir || asprintf(&rt->events_dir, "%s/" RUNTIME_EVENTS_DIR, o->state_dir) < 0)
                return xp_errorf(err, -ENOMEM, "runtime: out of memory");
        if (copy_hide(rt, o->hide_paths, o->detach_paths) < 0 ||
            copy_paths(&rt->detach, o->detach_paths) < 0 ||
            copy_paths(&rt->share, o->share_paths) < 0)
                return xp_errorf(err, -ENOMEM, "runtime: out of memory");
        rt->log_max_bytes = o->log_max_bytes ? o->log_max_bytes : 10 * 1024 * 1024;
        rt->log_max_files = o->log_max_files ? o->log_max_files : 1;
        r = xp_mkdir_p(rt->events_dir, 0755, err);
        if (r >= 0)
                r = xp_mkdir_p(rt->log_dir, 0755, err);
        if (r < 0)
                return xp_error_prefix(err, r, "runtime");
        rt->inotify = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        if (rt->inotify < 0 ||
            inotify_add_watch(rt->inotify, rt->events_dir, IN_CREATE | IN_MOVED_TO) < 0) {
                r = -errno;
                return xp_errorf(err, r, "runtime: watching %s: %s", rt->events_dir, strerror(-r));
        }
        r = shimwatch_new(rt->inotify, &rt->shims);
        if (r < 0)
                return xp_errorf(err, r, "runtime: an epoll set for the shims: %s", strerror(-r));
        r = cgroup_parent_of(rt->state_dir, &rt->cgroup_parent, err);
        if (r < 0)
                return r;
        detect_cgroups(rt);
        keep_parent(rt);
        detect_contain(rt);
        detect_oci(rt);
        *ret = TAKE_PTR(rt);
        return 0;
}

unsigned xp_runtime_isolation(const struct xp_runtime *rt)
{
        return rt->isolation;
}

enum xp_cgroup_mode xp_runtime_cgroup_mode(const struct xp_runtime *rt)
{
        return rt->root ? xp_cgroup_root_mode(rt->root) : XP_CGROUP_NONE;
}

const char *xp_runtime_warning(const struct xp_runtime *rt)
{
        return rt->warning;
}

const char *runtime_state_dir(const struct xp_runtime *rt)
{
        return rt->state_dir;
}

const char *runtime_shim_exe(const struct xp_runtime *rt)
{
        return rt->shim_exe;
}

int xp_runtime_event_fd(const struct xp_runtime *rt)
{
        return shimwatch_fd(rt->shims);
}

/* The log directory of one container: DATA/logs/<ns>_<name>_<uid>/<container> (caller frees).
 * -EINVAL when a name is not a path component; -ENOMEM. */
static int xp_runtime_log_dir(const struct xp_runtime *rt,
                              const char *pod_namespace,
                              const char *pod_name,
                              const char *pod_uid,
                              const char *container,
                              char **ret)
{
        if (!component_ok(pod_namespace) || !component_ok(pod_name) || !component_ok(pod_uid) ||
            !component_ok(container))
                return -EINVAL;
        return asprintf(ret,
                        "%s/%s_%s_%s/%s",
                        rt->log_dir,
                        pod_namespace,
                        pod_name,
                        pod_uid,
                        container) < 0
                   ? -ENOMEM
                   : 0;
}

/* ---- start ---------------------------------------------------------------------------------- */

static json_t *limits_json(const struct xp_cgroup_limits *l)
{
        json_t *devices = json_array(), *o;

        if (!devices)
                return NULL;
        for (size_t i = 0; i < l->n_devices; i++) {
                char type[2] = {l->devices[i].type, '\0'};
                char access[sizeof(l->devices[i].access)];

                memcpy(access, l->devices[i].access, sizeof(access));
                access[sizeof(access) - 1] = '\0';
                if (json_array_append_new(devices,
                                          json_pack("{s:s, s:I, s:I, s:s}",
                                                    "type",
                                                    type,
                                                    "major",
                                                    (json_int_t)l->devices[i].major,
                                                    "minor",
                                                    (json_int_t)l->devices[i].minor,
                                                    "access",
                                                    access)) < 0) {
                        json_decref(devices);
                        return NULL;
                }
        }
        o = json_pack("{s:I, s:I, s:I, s:I, s:s?, s:s?, s:b, s:o}",
                      "cpu_millis",
                      (json_int_t)l->cpu_millis,
                      "cpu_period_us",
                      (json_int_t)l->cpu_period_us,
                      "memory_bytes",
                      (json_int_t)l->memory_bytes,
                      "pids_max",
                      (json_int_t)l->pids_max,
                      "cpuset_cpus",
                      l->cpuset_cpus,
                      "cpuset_mems",
                      l->cpuset_mems,
                      "restrict_devices",
                      l->restrict_devices,
                      "devices",
                      devices);
        return o;
}

/*
 * The seccomp filter for effective, compiled once (a shim need not: libseccomp takes about a
 * millisecond), as the sealed memfd each shim gets on CONTAIN_FILTER_FD. The runtime's (open
 * until xp_runtime_free()); -1 when it cannot be had (the shim compiles it then).
 */
int runtime_filter_for(struct xp_runtime *rt, uint64_t effective)
{
        int fd = -1;

        pthread_mutex_lock(&rt->filters_lock);
        for (size_t i = 0; i < rt->n_filters && fd < 0; i++)
                if (rt->filters[i].effective == effective)
                        fd = rt->filters[i].fd;
        if (fd < 0 && rt->n_filters < XP_ELEMENTSOF(rt->filters) &&
            contain_filter_memfd(effective, &fd, NULL) >= 0) {
                rt->filters[rt->n_filters].effective = effective;
                rt->filters[rt->n_filters++].fd = fd;
        }
        pthread_mutex_unlock(&rt->filters_lock);
        return fd;
}

/* What was asked, less what this machine cannot do. */
static struct xp_contain contain_cut(const struct xp_runtime *rt,
                                     const struct xp_container_launch *l)
{
        struct xp_contain c = l->contain ? *l->contain : xp_contain_default();

        if (!(rt->isolation & XP_ISOLATION_SECCOMP))
                c.seccomp = false;
        return c;
}

/* The filter fd the shim of launch l gets, as contain_json() put it in its spec; -1: none. */
static int filter_of(struct xp_runtime *rt, const struct xp_container_launch *l)
{
        struct xp_contain c = contain_cut(rt, l);

        return !l->oci && c.seccomp ? runtime_filter_for(rt, c.caps.effective) : -1;
}

/* The containment the shim applies. An OCI runtime applies its own (config.json): its shim
 * gets none to prepare (no filter to compile, no namespaces of its own). */
static json_t *contain_json(struct xp_runtime *rt,
                            const struct xp_container_launch *l,
                            char *const *sources,
                            const char *ipc)
{
        struct xp_contain c = contain_cut(rt, l);

        if (l->oci) {
                c.seccomp = false;
                c.netns = NULL; /* the OCI runtime joins it (config.json) */
                return contain_spec_json(&c, false, false, NULL, NULL, false);
        }
        json_t *o = contain_spec_json(&c,
                                      rt->isolation & XP_ISOLATION_NAMESPACES,
                                      xp_runtime_cgroup_mode(rt) == XP_CGROUP_V2,
                                      (const char *const *)rt->hide,
                                      (const char *const *)rt->detach,
                                      filter_of(rt, l) >= 0);

        /* its own /tmp and /var/tmp hold half its memory limit each: together no more than
         * the limit (as a kubelet sizes a memory emptyDir), and one filled alone fails with
         * ENOSPC before the memory it is charged to calls the OOM killer */
        if (o && l->limits && l->limits->memory_bytes > 0 &&
            json_object_set_new(
                o, "tmp_size", json_integer((json_int_t)(l->limits->memory_bytes / 2))) < 0) {
                json_decref(o);
                return NULL;
        }
        /* the node's shared paths and the pod's volumes, bound by the shim's child
         * (contain_bind.c) */
        if (o && rt->share[0] &&
            json_object_set_new(o, "share", contain_strings_json((const char *const *)rt->share)) <
                0) {
                json_decref(o);
                return NULL;
        }
        /* the pod's IPC namespace, which its containers share (its own message queues) */
        if (o && ipc && json_object_set_new(o, "ipc", json_string(ipc)) < 0) {
                json_decref(o);
                return NULL;
        }
        if (o && l->n_mounts > 0 &&
            json_object_set_new(o, "binds", contain_binds_json(l->mounts, sources, l->n_mounts)) <
                0) {
                json_decref(o);
                return NULL;
        }
        return o;
}

/* spec.json's text; oci (taken) is an OCI container's object, limits what the shim applies. */
/* The v1 hierarchies the runtime found, for the shim (cgroup_root_open_v1()): {} otherwise. */
static json_t *cgroup_v1_json(const struct xp_runtime *rt)
{
        json_t *o = json_object();

        for (int c = 0; o && rt->root && c < CGROUP_CONTROLLER_MAX; c++) {
                const char *mount = cgroup_v1_mount(rt->root, (enum cgroup_controller)c);

                if (mount && json_object_set_new(o,
                                                 cgroup_controller_name((enum cgroup_controller)c),
                                                 json_string(mount)) < 0) {
                        json_decref(o);
                        return NULL;
                }
        }
        return o;
}

/* The other v1 hierarchies (freezer, name=systemd, ...), where an OCI runtime makes the
 * container's groups too: the shim removes them with its own, so that the runtime's delete finds
 * no group to freeze. */
static json_t *cgroup_v1_others_json(const struct xp_runtime *rt)
{
        json_t *a = json_array();
        char *const *others;
        size_t n = rt->root ? cgroup_v1_others(rt->root, &others) : 0;

        for (size_t i = 0; a && i < n; i++)
                if (json_array_append_new(a, json_string(others[i])) < 0) {
                        json_decref(a);
                        return NULL;
                }
        return a;
}

static json_t *spec_json(struct xp_runtime *rt,
                         const struct xp_container_launch *l,
                         const struct xp_cgroup_limits *lim,
                         const char *log_dir,
                         json_t *oci,
                         char *const *sources,
                         const char *ipc)
{
        json_t *limits = lim ? limits_json(lim) : json_null();
        json_t *argv = contain_strings_json((const char *const *)l->argv);
        json_t *env = contain_strings_json((const char *const *)l->env), *o;
        json_t *contain = contain_json(rt, l, sources, ipc);

        if (!limits || !argv || !env || !contain) {
                json_decref(limits);
                json_decref(argv);
                json_decref(env);
                json_decref(contain);
                json_decref(oci);
                return NULL;
        }
        o = json_pack("{s:s, s:s, s:s, s:s, s:I, s:o, s:o, s:s, s:b, s:I, s:I, s:o, s:s, s:I, "
                      "s:I, s:s, s:b, s:s, s:o}",
                      "pod_uid",
                      l->pod_uid,
                      "pod_namespace",
                      l->pod_namespace,
                      "pod_name",
                      l->pod_name,
                      "container",
                      l->container,
                      "attempt",
                      (json_int_t)l->attempt,
                      "argv",
                      argv,
                      "env",
                      env,
                      "working_dir",
                      l->working_dir ? l->working_dir : "/",
                      "set_user",
                      l->set_user,
                      "uid",
                      (json_int_t)l->uid,
                      "gid",
                      (json_int_t)l->gid,
                      "limits",
                      limits,
                      "log_dir",
                      log_dir,
                      "log_max_bytes",
                      (json_int_t)rt->log_max_bytes,
                      "log_max_files",
                      (json_int_t)rt->log_max_files,
                      "cgroup_root",
                      rt->cgroup_root,
                      "cgroups",
                      rt->root != NULL,
                      "events_dir",
                      rt->events_dir,
                      CONTAIN_SPEC_KEY,
                      contain);
        if (o && oci && json_object_set_new(o, OCI_SPEC_KEY, TAKE_PTR(oci)) < 0) {
                json_decref(o);
                return NULL;
        }
        json_decref(oci);
        if (!o)
                return NULL;
        /* the hierarchies the shim needs not look for (the others only where an OCI runtime
         * makes groups: for a process container's each was an rmdir failing at three levels);
         * what attach.c serves: the container's stdin (spec.containers[].stdin, stdinOnce) */
        if (json_object_set_new(o, "cgroup_v1", cgroup_v1_json(rt)) < 0 ||
            (l->oci && json_object_set_new(o, "cgroup_v1_others", cgroup_v1_others_json(rt)) < 0) ||
            json_object_set_new(o, "cgroup_parent", json_string(rt->cgroup_parent)) < 0 ||
            (rt->keeper >= 0 &&
             json_object_set_new(o, RUNTIME_KEEPER_KEY, json_string(rt->state_dir)) < 0) ||
            json_object_set_new(o, "stdin", json_boolean(l->stdin)) < 0 ||
            json_object_set_new(o, "stdin_once", json_boolean(l->stdin_once)) < 0 ||
            json_object_set_new(o, "tty", json_boolean(l->tty)) < 0 ||
            (l->oci && l->oci->image_id &&
             json_object_set_new(o, "image_id", json_string(l->oci->image_id)) < 0) ||
            (l->oci && l->oci->image_ref &&
             json_object_set_new(o, "image_ref", json_string(l->oci->image_ref)) < 0)) {
                json_decref(o);
                return NULL;
        }
        return o;
}

/* What an OCI container of the spec in dir left (its runtime's state, its bundle; a bundle
 * also when its start failed before the spec was written). spec: the container's, where the
 * caller has read it already; NULL: read here. */
static void forget_oci(const char *dir, const json_t *spec)
{
        json_t *read = spec ? NULL : read_json(dir, RUNTIME_SPEC_FILE);
        char bundle[PATH_MAX];

        oci_cleanup(dir, spec ? spec : read);
        json_decref(read);
        snprintf(bundle, sizeof(bundle), "%s/" OCI_BUNDLE, dir);
        (void)oci_rm_rf(bundle);
}

/*
 * Removes the files of a container's state directory, then the directory and its pod's. spec:
 * the container's spec as read (a remove has it: one parse of it fewer), or NULL.
 */
static void
remove_state(struct xp_runtime *rt, const char *uid, const char *container, const json_t *spec)
{
        /* the attach socket too: a shim killed before it could unlink it leaves it, which kept
         * the directory, and with it the pod's cgroup, after the pod was gone */
        static const char *const files[] = {
            RUNTIME_EXIT_FILE, RUNTIME_RUNNING_FILE, RUNTIME_SPEC_FILE, XP_ATTACH_SOCKET};
        char dir[PATH_MAX], path[PATH_MAX + 32];
        int fd;

        if (container_dir(rt, uid, container, dir) < 0)
                return;
        speccache_forget(&rt->specs, dir);
        forget_oci(dir, spec);
        fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (fd >= 0) {
                (void)runtime_release_clear(fd);
                close(fd);
        }
        for (size_t i = 0; i < XP_ELEMENTSOF(files); i++) {
                snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
                unlink(path);
        }
        rmdir(dir);
        snprintf(path, sizeof(path), "%s/%s", rt->state_dir, uid);
        rmdir(path); /* fails while other containers of the pod have state */
}

/* An OCI container's spec.json: its bundle prepared, the limits with its CDI devices. */
static int oci_spec(struct xp_runtime *rt,
                    const struct xp_container_launch *l,
                    const char *dir,
                    const char *log_dir,
                    json_t **ret,
                    struct xp_error *err)
{
        struct oci_runtime_view v = {
            .state_dir = rt->state_dir,
            .cdi_dir = rt->cdi_dir,
            .ipc_dir = rt->ipc_dir,
            .hide = (const char *const *)rt->hide,
            .detach = (const char *const *)rt->detach,
            .cgroups = rt->root != NULL,
            .cgroup_parent = rt->cgroup_parent,
            .cgroup2 = xp_runtime_cgroup_mode(rt) == XP_CGROUP_V2,
            .apparmor = rt->apparmor,
            .overlay = rt->overlay,
            .isolation = rt->isolation,
            .pods_lock = &rt->pods_lock,
        };
        struct xp_contain c = contain_cut(rt, l);
        struct xp_cgroup_limits limits = {0};
        _cleanup_free_ struct xp_cgroup_device *devices = NULL;
        json_t *oci = NULL;
        int r;

        r = oci_start_prepare(&v, l, &c, dir, &oci, &limits, &devices, err);
        if (r < 0)
                return r;
        *ret = spec_json(rt, l, l->limits ? &limits : NULL, log_dir, oci, NULL, NULL);
        return *ret ? 0 : xp_errorf(err, -ENOMEM, "out of memory");
}

/* A process container's spec.json: its pod's emptyDirs made, its volumes' node paths checked
 * (a hostPath's type, its allowed prefix) as an image pod's are (oci_pod.c). */
static int process_spec(struct xp_runtime *rt,
                        const struct xp_container_launch *l,
                        const char *log_dir,
                        json_t **ret,
                        struct xp_error *err)
{
        _cleanup_free_ char *pod_dir = NULL, *ipc = NULL;
        char **sources = NULL;
        int r = 0;

        /* an IPC namespace of the pod's own, as an image pod has: the node's holds the node's
         * and every other pod's System V segments and message queues */
        if (rt->isolation & XP_ISOLATION_NAMESPACES) {
                pthread_mutex_lock(&rt->pods_lock);
                r = oci_pod_ipc(rt->ipc_dir, l->pod_uid, &ipc, err);
                pthread_mutex_unlock(&rt->pods_lock);
                if (r < 0)
                        return r;
        }
        if (l->n_mounts > 0) {
                pthread_mutex_lock(&rt->pods_lock);
                r = oci_pod_volumes(
                    rt->state_dir, l->pod_uid, l->mounts, l->n_mounts, &pod_dir, err);
                pthread_mutex_unlock(&rt->pods_lock);
                if (r >= 0)
                        r = oci_mount_sources(pod_dir, l->mounts, l->n_mounts, &sources, err);
                if (r < 0)
                        return r;
        }
        *ret = spec_json(rt, l, l->limits, log_dir, NULL, sources, ipc);
        oci_sources_free(sources, l->n_mounts);
        return *ret ? 0 : xp_errorf(err, -ENOMEM, "out of memory");
}

/* Starts the shim, handing it the start lock and the seccomp filter (filter_fd, -1: none), and
 * waits for its one-line report (it closes the pipe after it). */
static int spawn_shim(struct xp_runtime *rt,
                      const char *dir,
                      int lock_fd,
                      int filter_fd,
                      char *reply,
                      size_t size,
                      struct xp_error *err)
{
        _cleanup_close_ int rd = -1, wr = -1, high = -1, lock_high = -1, filter_high = -1;
        char *argv[] = {rt->shim_exe, (char *)"__shim", (char *)dir, NULL};
        posix_spawn_file_actions_t fa;
        posix_spawnattr_t attr;
        sigset_t none, all;
        size_t len = 0;
        ssize_t n;
        pid_t pid;
        int fds[2], r, status;

        if (pipe2(fds, O_CLOEXEC) < 0) {
                r = -errno;
                return xp_errorf(err, r, "starting the shim: pipe: %s", strerror(-r));
        }
        rd = fds[0];
        wr = fds[1];
        /* above RUNTIME_NOTIFY_FD, so the dup2 onto it always makes a new, inheritable fd */
        high = fcntl(wr, F_DUPFD_CLOEXEC, 10);
        lock_high = fcntl(lock_fd, F_DUPFD_CLOEXEC, 10);
        if (filter_fd >= 0)
                filter_high = fcntl(filter_fd, F_DUPFD_CLOEXEC, 10);
        if (high < 0 || lock_high < 0 || (filter_fd >= 0 && filter_high < 0)) {
                r = -errno;
                return xp_errorf(err, r, "starting the shim: dup: %s", strerror(-r));
        }
        sigemptyset(&none);
        sigfillset(&all);
        posix_spawn_file_actions_init(&fa);
        posix_spawnattr_init(&attr);
        posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
        posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
        posix_spawn_file_actions_adddup2(&fa, high, RUNTIME_NOTIFY_FD);
        posix_spawn_file_actions_adddup2(&fa, lock_high, RUNTIME_LOCK_FD);
        if (filter_high >= 0)
                posix_spawn_file_actions_adddup2(&fa, filter_high, CONTAIN_FILTER_FD);
        posix_spawnattr_setsigmask(&attr, &none);
        posix_spawnattr_setsigdefault(&attr, &all);
        posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
        r = -posix_spawn(&pid, rt->shim_exe, &fa, &attr, argv, environ);
        posix_spawn_file_actions_destroy(&fa);
        posix_spawnattr_destroy(&attr);
        if (r < 0)
                return xp_errorf(err, r, "starting the shim %s: %s", rt->shim_exe, strerror(-r));
        close(TAKE_FD(wr));
        close(TAKE_FD(high));
        close(TAKE_FD(lock_high));
        while (len < size - 1 &&
               ((n = read(rd, reply + len, size - 1 - len)) > 0 || (n < 0 && errno == EINTR)))
                if (n > 0)
                        len += (size_t)n;
        reply[len] = '\0';
        /* the first shim process exits at once after forking the real one */
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
                ;
        return 0;
}

static int starting_add(struct xp_runtime *rt, const char *uid, const char *container)
{
        char **grown, *key;

        if (asprintf(&key, "%s/%s", uid, container) < 0)
                return -ENOMEM;
        grown = reallocarray(rt->starting, rt->n_starting + 1, sizeof(*grown));
        if (!grown) {
                free(key);
                return -ENOMEM;
        }
        rt->starting = grown;
        rt->starting[rt->n_starting++] = key;
        return 0;
}

static void starting_remove(struct xp_runtime *rt, const char *uid, const char *container)
{
        size_t ulen = strlen(uid);

        for (size_t i = 0; i < rt->n_starting; i++)
                if (strncmp(rt->starting[i], uid, ulen) == 0 && rt->starting[i][ulen] == '/' &&
                    strcmp(rt->starting[i] + ulen + 1, container) == 0) {
                        free(rt->starting[i]);
                        rt->starting[i] = rt->starting[--rt->n_starting];
                        return;
                }
}

static int start_locked_check(struct xp_runtime *rt,
                              const struct xp_container_launch *l,
                              const char *dir,
                              struct xp_error *err)
{
        struct cinfo c;
        int r = 0;

        if (is_starting(rt, l->pod_uid, l->container))
                return xp_errorf(
                    err, -EEXIST, "container %s/%s: being started", l->pod_uid, l->container);
        cinfo_load(dir, &c);
        if (c.state == CSTATE_RUNNING)
                r = xp_errorf(
                    err, -EEXIST, "container %s/%s: already running", l->pod_uid, l->container);
        else if (c.state == CSTATE_LOST)
                (void)record_lost(rt, dir, &c); /* kills what the lost shim left running */
        cinfo_done(&c);
        if (r < 0)
                return r;
        r = starting_add(rt, l->pod_uid, l->container);
        if (r < 0)
                return xp_errorf(
                    err, r, "container %s/%s: out of memory", l->pod_uid, l->container);
        return 0;
}

/*
 * With the start lock held: what an earlier start left in dir. -EEXIST when the container runs,
 * or when this attempt (or a later one) of it ran already: an attempt never runs twice. A start
 * interrupted before its container could run is simply made again.
 */
static int claim(struct xp_runtime *rt,
                 const struct xp_container_launch *l,
                 const char *dir,
                 int lock_fd,
                 struct xp_error *err)
{
        struct cinfo c;
        int r = 0;

        cinfo_load(dir, &c);
        if (c.state == CSTATE_STARTING)
                r = settle_interrupted(rt, dir, lock_fd, &c);
        /* never ran: what a killed start left waiting (an OCI runtime's created container) */
        if (r == 0 && c.state == CSTATE_STARTING)
                kill_group(rt, l->pod_uid, l->container);
        else if (c.state == CSTATE_LOST)
                r = record_lost(rt, dir, &c); /* kills what the lost shim left running */
        if (r < 0)
                r = xp_errorf(err,
                              r,
                              "container %s/%s: an earlier start: %s",
                              l->pod_uid,
                              l->container,
                              strerror(-r));
        else if (c.state == CSTATE_RUNNING)
                r = xp_errorf(
                    err, -EEXIST, "container %s/%s: already running", l->pod_uid, l->container);
        else if (c.state == CSTATE_EXITED && i64_of(c.spec, "attempt") >= (int64_t)l->attempt)
                r = xp_errorf(err,
                              -EEXIST,
                              "container %s/%s: attempt %" PRId64 " ran already",
                              l->pod_uid,
                              l->container,
                              i64_of(c.spec, "attempt"));
        else
                r = 0;
        cinfo_done(&c);
        return r;
}

/* What the shim answered of a start: 0 for "ok", else its error ("error CODE MESSAGE"), or that
 * it ended without a word. */
static int shim_answer(const struct xp_runtime *rt,
                       const struct xp_container_launch *l,
                       char *reply,
                       struct xp_error *err)
{
        char *msg = NULL;
        int code;

        if (strcmp(reply, "ok\n") == 0)
                return 0;
        if (sscanf(reply, "error %d", &code) == 1 && code > 0 && (msg = strchr(reply + 6, ' '))) {
                msg[strcspn(msg, "\n")] = '\0';
                return xp_errorf(
                    err, -code, "container %s/%s: %s", l->pod_uid, l->container, msg + 1);
        }
        return xp_errorf(err,
                         -EIO,
                         "container %s/%s: the shim %s exited without reporting",
                         l->pod_uid,
                         l->container,
                         rt->shim_exe);
}

/* Writes the container's spec.json, and keeps what the runtime reads of it again (its exit's
 * listing, its removal) as read from the file just written. */
static int
write_spec(struct xp_runtime *rt, const char *dir, const json_t *spec, struct xp_error *err)
{
        _cleanup_free_ char *text = json_dumps(spec, JSON_COMPACT);
        char path[PATH_MAX + 32];
        struct stat st;
        int r;

        if (!text)
                return xp_errorf(err, -ENOMEM, "out of memory");
        r = runtime_write_json(dir, RUNTIME_SPEC_FILE, text, false, err);
        if (r < 0)
                return r;
        snprintf(path, sizeof(path), "%s/" RUNTIME_SPEC_FILE, dir);
        /* after the write: a listing meanwhile kept the new file's, not a reused inode's */
        pthread_mutex_lock(&rt->lock);
        if (stat(path, &st) == 0)
                speccache_put(&rt->specs, dir, &st, spec);
        else
                speccache_forget(&rt->specs, dir);
        pthread_mutex_unlock(&rt->lock);
        return 0;
}

/* ret_c: what the shim recorded (its pid, for the caller's watch), the caller's to free */
static int start(struct xp_runtime *rt,
                 const struct xp_container_launch *l,
                 const char *dir,
                 struct xp_container_record *ret,
                 struct cinfo *ret_c,
                 struct xp_error *err)
{
        _cleanup_free_ char *log_dir = NULL;
        json_auto_t *spec = NULL;
        _cleanup_close_ int lock = -1;
        bool fresh = true;
        char reply[RUNTIME_NOTIFY_MAX + 1], path[PATH_MAX + 32];
        int r;

        r = xp_runtime_log_dir(
            rt, l->pod_namespace, l->pod_name, l->pod_uid, l->container, &log_dir);
        if (r < 0)
                return xp_errorf(err,
                                 r,
                                 "container %s/%s: log directory: %s",
                                 l->pod_uid,
                                 l->container,
                                 strerror(-r));
        /* a directory made now holds nothing of an earlier start */
        if (mkdir(dir, 0755) < 0) {
                fresh = false;
                if (errno != EEXIST) {
                        fresh = true;
                        r = xp_mkdir_p(dir, 0755, err);
                        if (r < 0)
                                return r;
                }
        }
        /* waits while the shim of an interrupted start (an earlier agent's) is still at it */
        r = runtime_start_lock(dir, true, &lock);
        if (r < 0)
                return xp_errorf(err,
                                 r,
                                 "container %s/%s: the start lock in %s: %s",
                                 l->pod_uid,
                                 l->container,
                                 dir,
                                 strerror(-r));
        r = claim(rt, l, dir, lock, err);
        if (r < 0)
                return r;
        /* an exited record of an earlier attempt is replaced, and its release marker */
        snprintf(path, sizeof(path), "%s/" RUNTIME_EXIT_FILE, dir);
        unlink(path);
        snprintf(path, sizeof(path), "%s/" RUNTIME_RUNNING_FILE, dir);
        unlink(path);
        r = fresh ? 0 : runtime_release_clear(lock);
        if (r < 0)
                return xp_errorf(err,
                                 r,
                                 "container %s/%s: clearing the release marker: %s",
                                 l->pod_uid,
                                 l->container,
                                 strerror(-r));
        /* an earlier attempt's runtime state, should its shim be lost */
        if (!fresh)
                forget_oci(dir, NULL);
        r = l->oci ? oci_spec(rt, l, dir, log_dir, &spec, err)
                   : process_spec(rt, l, log_dir, &spec, err);
        if (r < 0)
                return xp_error_prefix(err, r, "container %s/%s", l->pod_uid, l->container);
        r = write_spec(rt, dir, spec, err);
        if (r < 0)
                return r;
        r = spawn_shim(rt, dir, lock, filter_of(rt, l), reply, sizeof(reply), err);
        if (r < 0)
                return xp_error_prefix(err, r, "container %s/%s", l->pod_uid, l->container);
        r = shim_answer(rt, l, reply, err);
        if (r < 0)
                return r;
        cinfo_load_state(dir, ret_c);
        r = ret_c->state == CSTATE_RUNNING || ret_c->state == CSTATE_EXITED
                ? launch_record(l, ret_c, ret)
                : -EIO;
        if (r < 0)
                return xp_errorf(err,
                                 r,
                                 "container %s/%s: reading the shim's state in %s: %s",
                                 l->pod_uid,
                                 l->container,
                                 dir,
                                 strerror(-r));
        return 0;
}

static void remove_pod_cgroup(struct xp_runtime *rt, const char *uid);

/* A start's shim has made its moves: the warming it was asked for may end. */
static void warm_moves_done(struct xp_runtime *rt)
{
        pthread_mutex_lock(&rt->lock);
        if (rt->warmer)
                cgroup_warmer_done(rt->warmer);
        pthread_mutex_unlock(&rt->lock);
}

int xp_runtime_start(struct xp_runtime *rt,
                     const struct xp_container_launch *l,
                     struct xp_container_record *ret,
                     struct xp_error *err)
{
        char dir[PATH_MAX];
        struct cinfo c = {0};
        int r;

        if (!component_ok(l->pod_uid) || !component_ok(l->container) ||
            !component_ok(l->pod_namespace) || !component_ok(l->pod_name))
                return xp_errorf(
                    err,
                    -EINVAL,
                    "container launch: pod uid, namespace, name and container must be path components");
        if (!l->argv || !l->argv[0] || !*l->argv[0])
                return xp_errorf(
                    err, -EINVAL, "container %s/%s: argv is empty", l->pod_uid, l->container);
        if (l->limits) {
                /* the shim applies them; a bad value is the caller's error, not a failed start */
                r = cgroup_check_limits(l->limits, err);
                if (r < 0)
                        return xp_error_prefix(
                            err, r, "container %s/%s: limits", l->pod_uid, l->container);
        }
        r = container_dir(rt, l->pod_uid, l->container, dir);
        if (r < 0)
                return xp_errorf(
                    err, r, "container %s/%s: state path too long", l->pod_uid, l->container);
        pthread_mutex_lock(&rt->lock);
        r = start_locked_check(rt, l, dir, err);
        pthread_mutex_unlock(&rt->lock);
        if (r < 0)
                return r;
        r = start(rt, l, dir, ret, &c, err);
        warm_moves_done(rt);
        pthread_mutex_lock(&rt->lock);
        if (r >= 0)
                watch_shim(rt, l->pod_uid, &c);
        cinfo_done(&c);
        if (r < 0 && r != -EEXIST) /* -EEXIST: what is there is another start's */
                remove_state(rt, l->pod_uid, l->container, NULL);
        starting_remove(rt, l->pod_uid, l->container);
        if (r < 0 && r != -EEXIST)
                remove_pod_cgroup(rt, l->pod_uid); /* a first start's group would stay */
        pthread_mutex_unlock(&rt->lock);
        return r;
}

/* ---- kill, list, remove ------------------------------------------------------------------- */

int xp_runtime_kill(
    struct xp_runtime *rt, const char *uid, const char *container, int sig, struct xp_error *err)
{
        char dir[PATH_MAX];
        struct cinfo c;
        int r;

        if (!component_ok(uid) || !component_ok(container) ||
            container_dir(rt, uid, container, dir) < 0)
                return xp_errorf(err, -EINVAL, "kill: '%s/%s' is not a container", uid, container);
        pthread_mutex_lock(&rt->lock);
        cinfo_load(dir, &c);
        if (c.state != CSTATE_RUNNING)
                r = xp_errorf(err, -ESRCH, "kill %s/%s: not running", uid, container);
        else
                r = signal_container(rt, &c, sig, err);
        if (r == 0)
                r = xp_errorf(err, -ESRCH, "kill %s/%s: no process left", uid, container);
        cinfo_done(&c);
        pthread_mutex_unlock(&rt->lock);
        return r < 0 ? r : 0;
}

/*
 * Consumes the pending exit announcements, the queue first, then the directory, so the scan that
 * follows sees every exit announced so far and one announced after it wakes us again. With uids,
 * collects the pod uid of each (UID_CONTAINER_ATTEMPT_PID: uids and container names hold no
 * '_'). Under lock. -errno when the directory cannot be read, -ENOMEM (what was collected stays
 * in *uids, *n).
 */
static int drain_events(struct xp_runtime *rt, char ***uids, size_t *n)
{
        char buf[4096];
        struct dirent *e;
        DIR *d;
        int r = 0;

        while (read(rt->inotify, buf, sizeof(buf)) > 0)
                ;
        d = opendir(rt->events_dir);
        if (!d) {
                /* the shims' deaths are taken all the same: a dead shim's pidfd stays readable,
                 * and the event fd with it, until taken (the agent's loop would spin) */
                r = -errno;
                (void)shimwatch_take(rt->shims, uids, n);
                return r;
        }
        while (r >= 0 && (e = readdir(d))) {
                size_t len = strcspn(e->d_name, "_");

                if (e->d_name[0] == '.')
                        continue;
                if (uids && e->d_name[len] == '_') {
                        char **grown = reallocarray(*uids, *n + 1, sizeof(**uids));

                        if (!grown || !(grown[*n] = strndup(e->d_name, len))) {
                                *uids = grown ? grown : *uids;
                                r = -ENOMEM;
                                break;
                        }
                        *uids = grown;
                        (*n)++;
                }
                unlinkat(dirfd(d), e->d_name, 0);
        }
        closedir(d);
        /* the shims that died without announcing: their pods are read again (record_lost()) */
        return r < 0 ? r : shimwatch_take(rt->shims, uids, n);
}

static int record_cmp(const void *a, const void *b)
{
        const struct xp_container_record *x = a, *y = b;
        int c = strcmp(x->pod_uid ? x->pod_uid : "", y->pod_uid ? y->pod_uid : "");

        return c ? c : strcmp(x->container ? x->container : "", y->container ? y->container : "");
}

/*
 * A start that no start of ours runs (spec only): true when it is to be listed, its shim having
 * died after letting the container go (recorded as lost). False while a shim holds its lock (it
 * will record how the start went, and announce it, its agent being gone), and when its container
 * never ran: the state is removed then, and the pod's next sync starts it again.
 */
static bool list_interrupted(
    struct xp_runtime *rt, const char *uid, const char *container, const char *dir, struct cinfo *c)
{
        _cleanup_close_ int lock = -1;
        int r = runtime_start_lock(dir, false, &lock);

        /* held: a shim is at it; or the directory cannot be read: left for a start to wait on */
        if (r < 0)
                return false;
        r = settle_interrupted(rt, dir, lock, c);
        if (r != 0)
                return r > 0;
        kill_group(rt, uid, container);
        remove_state(rt, uid, container, c->spec);
        remove_pod_cgroup(rt, uid);
        return false;
}

static int list_pod(struct xp_runtime *rt,
                    const char *uid,
                    struct xp_container_record **v,
                    size_t *n,
                    struct xp_error *err)
{
        char pdir[PATH_MAX], dir[PATH_MAX];
        DIR *d;
        struct dirent *e;
        bool all_exited = true;
        size_t listed = 0;
        int r = 0;

        snprintf(pdir, sizeof(pdir), "%s/%s", rt->state_dir, uid);
        d = opendir(pdir);
        if (!d)
                return 0;
        while (r >= 0 && (e = readdir(d))) {
                struct xp_container_record *grown;
                struct cinfo c;

                if (e->d_name[0] == '.' || container_dir(rt, uid, e->d_name, dir) < 0)
                        continue;
                cinfo_load_kept(&rt->specs, dir, &c);
                /* the rare states read the whole spec, as their settling may */
                if (c.state == CSTATE_STARTING || c.state == CSTATE_LOST) {
                        cinfo_done(&c);
                        cinfo_load(dir, &c);
                }
                if (c.state == CSTATE_NONE || (c.state == CSTATE_STARTING &&
                                               (is_starting(rt, uid, e->d_name) ||
                                                !list_interrupted(rt, uid, e->d_name, dir, &c)))) {
                        all_exited &= c.state == CSTATE_NONE;
                        cinfo_done(&c);
                        continue;
                }
                if (c.state == CSTATE_LOST)
                        (void)record_lost(rt, dir, &c);
                all_exited &= c.state == CSTATE_EXITED || c.state == CSTATE_LOST;
                listed++;
                watch_shim(rt, uid, &c); /* adopted after a restart, or started meanwhile */
                grown = reallocarray(*v, *n + 1, sizeof(**v));
                if (!grown)
                        r = -ENOMEM;
                else {
                        *v = grown;
                        r = cinfo_record(&c, &(*v)[*n]);
                        if (r >= 0)
                                (*n)++;
                }
                cinfo_done(&c);
        }
        closedir(d);
        /* every exit read: the shims' ends, each a read of the pod again, tell nothing more */
        if (r >= 0 && listed > 0 && all_exited)
                shimwatch_forget_pod(rt->shims, uid);
        return r < 0 ? xp_errorf(err, r, "listing %s: out of memory", pdir) : 0;
}

/* Hands the listed records over sorted (r >= 0), else frees them and returns r. */
static int records_done(
    int r, struct xp_container_record *v, size_t n, struct xp_container_record **ret, size_t *ret_n)
{
        if (r < 0) {
                xp_container_records_free(v, n);
                return r;
        }
        if (n)
                qsort(v, n, sizeof(*v), record_cmp);
        *ret = v;
        *ret_n = n;
        return 0;
}

int xp_runtime_list(struct xp_runtime *rt,
                    struct xp_container_record **ret,
                    size_t *ret_n,
                    struct xp_error *err)
{
        struct xp_container_record *v = NULL;
        size_t n = 0;
        struct dirent *e;
        DIR *d;
        int r = 0;

        pthread_mutex_lock(&rt->lock);
        (void)drain_events(rt, NULL, NULL);
        d = opendir(rt->state_dir);
        if (!d) {
                r = -errno;
                pthread_mutex_unlock(&rt->lock);
                return xp_errorf(err, r, "listing %s: %s", rt->state_dir, strerror(-r));
        }
        while (r >= 0 && (e = readdir(d)))
                if (e->d_name[0] != '.')
                        r = list_pod(rt, e->d_name, &v, &n, err);
        closedir(d);
        pthread_mutex_unlock(&rt->lock);
        return records_done(r, v, n, ret, ret_n);
}

static int uid_cmp(const void *a, const void *b)
{
        return strcmp(*(char *const *)a, *(char *const *)b);
}

int xp_runtime_take_exits(struct xp_runtime *rt,
                          char ***ret_uids,
                          size_t *ret_n,
                          struct xp_error *err)
{
        char **uids = NULL;
        size_t n = 0, kept = 0;
        int r;

        pthread_mutex_lock(&rt->lock);
        r = drain_events(rt, &uids, &n);
        pthread_mutex_unlock(&rt->lock);
        if (r < 0) {
                for (size_t i = 0; i < n; i++)
                        free(uids[i]);
                free(uids);
                return xp_errorf(err, r, "reading %s: %s", rt->events_dir, strerror(-r));
        }
        if (n > 0)
                qsort(uids, n, sizeof(*uids), uid_cmp);
        for (size_t i = 0; i < n; i++) {
                if (kept > 0 && strcmp(uids[kept - 1], uids[i]) == 0)
                        free(uids[i]);
                else
                        uids[kept++] = uids[i];
        }
        *ret_uids = uids;
        *ret_n = kept;
        return 0;
}

int xp_runtime_list_pod(struct xp_runtime *rt,
                        const char *pod_uid,
                        struct xp_container_record **ret,
                        size_t *ret_n,
                        struct xp_error *err)
{
        struct xp_container_record *v = NULL;
        size_t n = 0;
        int r;

        if (!component_ok(pod_uid))
                return xp_errorf(err, -EINVAL, "runtime: bad pod uid \"%s\"", pod_uid);
        pthread_mutex_lock(&rt->lock);
        r = list_pod(rt, pod_uid, &v, &n, err);
        pthread_mutex_unlock(&rt->lock);
        return records_done(r, v, n, ret, ret_n);
}

/* Whether the pod uid has a group this runtime still needs: its state, or a start under way.
 * Under lock. */
static bool pod_group_needed(const char *uid, void *userdata)
{
        const struct xp_runtime *rt = userdata;
        char dir[PATH_MAX];
        size_t ulen = strlen(uid);

        for (size_t i = 0; i < rt->n_starting; i++)
                if (strncmp(rt->starting[i], uid, ulen) == 0 && rt->starting[i][ulen] == '/')
                        return true;
        if (snprintf(dir, sizeof(dir), "%s/%s", rt->state_dir, uid) >= (int)sizeof(dir))
                return true; /* in doubt, kept */
        return access(dir, F_OK) == 0 || errno != ENOENT;
}

/*
 * The pod's level of the cgroup tree (PARENT/<uid>), once no state of the pod is left and none of
 * its containers is being started (a shim creating its group would race the rmdir). Under lock.
 */
static void remove_pod_cgroup(struct xp_runtime *rt, const char *uid)
{
        _cleanup_(xp_cgroup_freep) struct xp_cgroup *cg = NULL;
        _cleanup_free_ char *path = NULL;

        if (!rt->root || pod_group_needed(uid, rt))
                return;
        /* this runtime's level, and the legacy one (a pod adopted from an agent before
         * per-runtime parents), each where it exists: the last container's shim removed the
         * pod's level itself, and a lookup costs less than an rmdir failing in each hierarchy
         * (xp_cgroup_reclaim() still takes what a partial removal left below our parent) */
        for (int i = 0; i < 2; i++) {
                if (asprintf(
                        &path, "%s/%s", i == 0 ? rt->cgroup_parent : XP_CGROUP_PARENT_LEGACY, uid) <
                    0)
                        return;
                if (xp_cgroup_exists(rt->root, path) &&
                    xp_cgroup_open(rt->root, path, &cg, NULL) >= 0)
                        (void)xp_cgroup_remove(cg, NULL);
                xp_cgroup_free(TAKE_PTR(cg));
                free(TAKE_PTR(path));
        }
}

int xp_runtime_reclaim_cgroups(struct xp_runtime *rt, struct xp_error *err)
{
        int r;

        if (!rt->root)
                return 0;
        pthread_mutex_lock(&rt->lock);
        r = xp_cgroup_reclaim(rt->root, rt->cgroup_parent, pod_group_needed, rt, err);
        pthread_mutex_unlock(&rt->lock);
        return r;
}

void xp_runtime_warm_moves(struct xp_runtime *rt,
                           const char *uid,
                           const char *container,
                           bool pinned)
{
        _cleanup_free_ char *group = NULL;
        bool have;

        if (!rt->root || xp_cgroup_root_mode(rt->root) != XP_CGROUP_V1)
                return;
        /* a bad name makes no group: the start itself says what is wrong with it */
        if (uid && container && component_ok(uid) && component_ok(container))
                (void)xp_cgroup_container_path(rt->cgroup_parent, uid, container, &group, NULL);
        pthread_mutex_lock(&rt->lock);
        have = rt->warmer || cgroup_warmer_start(rt->root, &rt->warmer) >= 0;
        if (have)
                cgroup_warmer_want(rt->warmer, group, pinned);
        pthread_mutex_unlock(&rt->lock);
}

void xp_runtime_warm_moves_cancel(struct xp_runtime *rt)
{
        warm_moves_done(rt);
}

const char *xp_runtime_cgroup_parent(const struct xp_runtime *rt)
{
        return rt->cgroup_parent;
}

int xp_runtime_remove(struct xp_runtime *rt,
                      const char *uid,
                      const char *container,
                      struct xp_error *err)
{
        char dir[PATH_MAX];
        struct cinfo c;
        int r = 0;

        if (!component_ok(uid) || !component_ok(container) ||
            container_dir(rt, uid, container, dir) < 0)
                return xp_errorf(
                    err, -EINVAL, "remove: '%s/%s' is not a container", uid, container);
        pthread_mutex_lock(&rt->lock);
        cinfo_load_kept(&rt->specs, dir, &c);
        if (c.state == CSTATE_NONE)
                r = xp_errorf(err, -ENOENT, "remove %s/%s: no such container", uid, container);
        else if (c.state != CSTATE_EXITED || is_starting(rt, uid, container))
                r = xp_errorf(err, -EBUSY, "remove %s/%s: still running", uid, container);
        if (r == 0 && rt->root) {
                _cleanup_(xp_cgroup_freep) struct xp_cgroup *cg = NULL;

                /* normally the shim removed it already (one lookup tells); this covers a lost
                 * shim */
                r = open_cgroup(rt, c.spec, uid, container, &cg, err);
                if (r >= 0 && xp_cgroup_exists(rt->root, xp_cgroup_path(cg)))
                        r = xp_cgroup_remove(cg, err);
                if (r < 0)
                        r = xp_error_prefix(err, r, "remove %s/%s", uid, container);
        }
        if (r == 0) {
                remove_state(rt, uid, container, c.spec);
                remove_pod_cgroup(rt, uid);
        }
        cinfo_done(&c);
        pthread_mutex_unlock(&rt->lock);
        return r;
}

static int rm_rf_at(int dfd, const char *name)
{
        int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        DIR *d;
        struct dirent *e;
        int r = 0;

        if (fd < 0)
                return unlinkat(dfd, name, 0) < 0 && errno != ENOENT ? -errno : 0;
        d = fdopendir(fd);
        if (!d) {
                close(fd);
                return -errno;
        }
        while ((e = readdir(d)))
                if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
                        int q = rm_rf_at(dirfd(d), e->d_name);

                        if (q < 0 && r == 0)
                                r = q;
                }
        closedir(d);
        if (unlinkat(dfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT && r == 0)
                r = -errno;
        return r;
}

int xp_runtime_remove_logs(
    struct xp_runtime *rt, const char *ns, const char *name, const char *uid, struct xp_error *err)
{
        char leaf[PATH_MAX];
        _cleanup_close_ int dfd = -1;
        int r;

        if (!component_ok(ns) || !component_ok(name) || !component_ok(uid))
                return xp_errorf(err,
                                 -EINVAL,
                                 "remove logs: '%s_%s_%s' is not a pod",
                                 ns ? ns : "",
                                 name ? name : "",
                                 uid ? uid : "");
        snprintf(leaf, sizeof(leaf), "%s_%s_%s", ns, name, uid);
        dfd = open(rt->log_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0) {
                r = -errno;
                return xp_errorf(err, r, "remove logs: %s: %s", rt->log_dir, strerror(-r));
        }
        r = rm_rf_at(dfd, leaf);
        if (r < 0)
                return xp_errorf(err, r, "remove logs: %s/%s: %s", rt->log_dir, leaf, strerror(-r));
        return 0;
}

int xp_runtime_release_pod_ipc(struct xp_runtime *rt, const char *uid, struct xp_error *err)
{
        if (!component_ok(uid))
                return xp_errorf(err, -EINVAL, "release pod: bad pod uid \"%s\"", uid ? uid : "");
        pthread_mutex_lock(&rt->pods_lock);
        oci_pod_ipc_release(rt->ipc_dir, uid);
        pthread_mutex_unlock(&rt->pods_lock);
        return 0;
}

int xp_runtime_remove_pod(struct xp_runtime *rt, const char *uid, struct xp_error *err)
{
        char dir[PATH_MAX];
        bool had_dir = true;
        int r = 0;

        if (!component_ok(uid))
                return xp_errorf(err, -EINVAL, "remove pod: bad pod uid \"%s\"", uid ? uid : "");
        snprintf(dir, sizeof(dir), "%s/%s", rt->state_dir, uid);
        pthread_mutex_lock(&rt->lock);
        /* its containers' state goes first (a container dir left: -EBUSY) */
        if (rmdir(dir) < 0) {
                had_dir = errno != ENOENT;
                if (had_dir)
                        r = xp_errorf(
                            err, -EBUSY, "remove pod %s: its containers are still here", uid);
        }
        for (size_t i = 0; r == 0 && i < rt->n_starting; i++)
                if (strncmp(rt->starting[i], uid, strlen(uid)) == 0 &&
                    rt->starting[i][strlen(uid)] == '/')
                        r = xp_errorf(
                            err, -EBUSY, "remove pod %s: a container is being started", uid);
        if (r == 0) {
                pthread_mutex_lock(&rt->pods_lock);
                r = oci_pod_remove(rt->state_dir, rt->ipc_dir, uid, err);
                pthread_mutex_unlock(&rt->pods_lock);
        }
        /* the pod's own files kept xp_runtime_remove() from it; with no directory left, the
         * removal of its last container took the group already (an rmdir failing in each
         * hierarchy twice per pod otherwise) */
        if (r == 0 && had_dir)
                remove_pod_cgroup(rt, uid);
        pthread_mutex_unlock(&rt->lock);
        return r;
}
