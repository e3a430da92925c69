/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The shim of a container an OCI runtime runs (docs/containers.md): in a mount namespace of its
 * own it mounts the overlay root file system from the image's layers, so the mount lives and dies
 * with the shim and its container (a shim killed leaves no mount behind), creates the group as
 * for a process, has the runtime create the container (its stdout and stderr are the shim's
 * pipes), makes the release marker (from here it may run), starts it (crun and runc: the marker,
 * then `run --detach`, one call), writes its output as CRI lines until it ends, and deletes it
 * from the runtime. The container's main process is the runtime's init, reparented to the shim
 * (a subreaper) once the runtime's call returns.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "oci_internal.h"
#include "shim_internal.h"
#include "xpool/fileio.h"

#define RUNTIME_LOG         "runtime.log"
#define PID_FILE            "pid"
#define CREATE_START_MARKER "create-start"

struct oci_shim {
        const char *runtime, *root, *id, *bundle;
        char rootfs[PATH_MAX], log[PATH_MAX];
        bool run; /* one call: `run --detach` (one_call()) */
};

static const char *str(const json_t *o, const char *key)
{
        return json_string_value(json_object_get(o, key));
}

/* path of a mountinfo field, its octal escapes (\040 for a space) undone in place. */
static char *unescape(char *path)
{
        char *w = path;

        for (char *r = path; *r; r++) {
                if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' &&
                    r[3] >= '0' && r[3] <= '7') {
                        *w++ = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
                        r += 3;
                } else {
                        *w++ = *r;
                }
        }
        *w = '\0';
        return path;
}

static bool listed(const json_t *list, const char *path, bool below)
{
        json_t *e;
        size_t i;

        json_array_foreach(list, i, e)
        {
                const char *p = json_string_value(e);
                size_t n = p ? strlen(p) : 0;

                /* below: strictly below p; else p itself or below it */
                if (p && strncmp(path, p, n) == 0 && (path[n] == '/' || (!below && !path[n])))
                        return true;
        }
        return false;
}

/*
 * This namespace's copies of the other pods' IPC and network namespaces, let go of: the shim
 * must not keep them alive (the container's own, which its runtime joins, stay). Done once the
 * container runs, not before: each unmount waits for an RCU grace period, so a node with a
 * hundred pods would add that many to every start; the runtime's container leaves these copies
 * behind at its pivot_root in one unmount anyway.
 */
static void drop_foreign(const json_t *detach)
{
        FILE *f = fopen("/proc/self/mountinfo", "re");
        char line[8192];

        while (f && fgets(line, sizeof(line), f)) {
                char *save = NULL, *field = strtok_r(line, " ", &save);

                for (int i = 0; field && i < 4; i++)
                        field = strtok_r(NULL, " ", &save);
                if (field && listed(json_object_get(detach, "below"), unescape(field), true) &&
                    !listed(json_object_get(detach, "keep"), field, false))
                        (void)umount2(field, MNT_DETACH);
        }
        if (f)
                fclose(f);
}

/*
 * The shim's own mount namespace, receiving the node's later mounts (slave) but giving none
 * back. On a hybrid cgroup machine whose v2 hierarchy holds a controller (hugetlb, say), crun
 * refuses to run even though the shim makes and limits the group: the v2 hierarchy's controller
 * list is hidden from it here, in this namespace only.
 */
static int own_namespace(struct xp_error *err)
{
        static const char unified[] = "/sys/fs/cgroup/unified/cgroup.controllers";
        struct stat st;

        if (unshare(CLONE_NEWNS) < 0)
                return xp_errorf(err, -errno, "unshare CLONE_NEWNS: %m");
        if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0)
                return xp_errorf(err, -errno, "making the shim's mounts slaves: %m");
        if (stat(unified, &st) == 0 && st.st_size == 0) {
                char c;
                int fd = open(unified, O_RDONLY | O_CLOEXEC);
                bool listed = fd >= 0 && read(fd, &c, 1) == 1 && c != '\n';

                if (fd >= 0)
                        close(fd);
                if (listed)
                        (void)mount("/dev/null", unified, NULL, MS_BIND, NULL);
        }
        return 0;
}

/*
 * The runtime's binary, read-only in this namespace. crun bind-mounts itself read-only on a
 * temporary file and re-execs that at every call, so that a container cannot overwrite the
 * node's binary through /proc/PID/exe (CVE-2019-5736); it skips that (as runc's cloned-binary
 * code does) when its binary already lies on a read-only mount and _LIBCONTAINER_CLONED_BINARY
 * is set: the same protection. Made once here, it saves a mount, an unmount and an exec in each
 * of the shim's calls (create, start, delete). Where the bind fails the runtime copies itself
 * as before; a runtime that never copies itself ignores the variable.
 */
static void runtime_read_only(const char *runtime)
{
        if (mount(runtime, runtime, NULL, MS_BIND, NULL) < 0)
                return;
        if (mount(NULL, runtime, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY, NULL) < 0) {
                (void)umount2(runtime, MNT_DETACH);
                return;
        }
        setenv("_LIBCONTAINER_CLONED_BINARY", "1", 1);
}

/*
 * The overlay on o->rootfs, from the store's layers directory (relative layer names): volatile
 * where the kernel has it (Linux 5.10): the upper layer is the container's scratch, gone with it
 * and never mounted again (each start has a fresh bundle), so the overlay passes no sync to the
 * node's file system, which its unmount otherwise waits for (a writeback of the whole disk).
 */
static int mount_overlay(struct oci_shim *o, const char *lower, struct xp_error *err)
{
        _cleanup_free_ char *opts = NULL;
        char *volatile_opt;
        int r;

        if (asprintf(&opts,
                     "lowerdir=%s,upperdir=%s/upper,workdir=%s/work,volatile",
                     lower,
                     o->bundle,
                     o->bundle) < 0)
                return xp_errorf(err, -ENOMEM, "out of memory");
        volatile_opt = strrchr(opts, ',');
        if (strlen(opts) >= 4096)
                *volatile_opt = '\0'; /* what fits a page first */
        if (strlen(opts) >= 4096)
                return xp_errorf(err,
                                 -E2BIG,
                                 "the overlay's options for %zu-byte layer paths do not fit a page",
                                 strlen(lower));
        r = mount("overlay", o->rootfs, "overlay", 0, opts) < 0 ? -errno : 0;
        if (r == -EINVAL && *volatile_opt) {
                /* a kernel without volatile: the same overlay, synced at its unmount */
                *volatile_opt = '\0';
                r = mount("overlay", o->rootfs, "overlay", 0, opts) < 0 ? -errno : 0;
        }
        if (r == -ENODEV)
                return xp_errorf(
                    err, r, "mounting the root file system: this kernel has no overlayfs");
        if (r < 0)
                return xp_errorf(err,
                                 r,
                                 "mounting the overlay root file system on %s: %s",
                                 o->rootfs,
                                 strerror(-r));
        return 0;
}

/* The root file system: the image's layers (read-only, shared with every container of the image)
 * under the container's own upper layer. */
static int mount_rootfs(struct shim *s, struct oci_shim *o, struct xp_error *err)
{
        const char *layers_dir = str(s->oci, "layers_dir"), *lower = str(s->oci, "lowerdir");
        char cwd[PATH_MAX];
        int r;

        if (!layers_dir || !lower)
                return xp_errorf(err, -EINVAL, "%s: the spec names no layers", s->dir);
        /* relative layer names are the store's: mount from there */
        if (!getcwd(cwd, sizeof(cwd)) || chdir(layers_dir) < 0)
                return xp_errorf(err, -errno, "chdir %s: %m", layers_dir);
        r = mount_overlay(o, lower, err);
        if (chdir(cwd) < 0 && r >= 0)
                r = xp_errorf(err, -errno, "chdir %s: %m", cwd);
        return r;
}

/*
 * config.json rewritten in place: the bundle is this start's alone and made afresh by the next,
 * so no reader can see it half-written, and the write allocates no inode, which costs ext4
 * milliseconds on a node that deletes as many (the bundles of the containers before).
 */
static int rewrite_config(const char *path, const char *text, struct xp_error *err)
{
        size_t len = strlen(text);
        int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC | O_NOFOLLOW);
        ssize_t n = fd >= 0 ? write(fd, text, len) : -1;
        int r = n == (ssize_t)len ? 0 : n < 0 ? -errno : -EIO;

        if (fd >= 0 && close(fd) < 0 && r == 0)
                r = -errno;
        return r < 0 ? xp_errorf(err, r, "writing %s: %s", path, strerror(-r)) : 0;
}

/* The user resolved in the root file system and the pod's volumes pinned, written into
 * config.json. */
static int resolve_user(struct shim *s, struct oci_shim *o, struct xp_error *err)
{
        char path[PATH_MAX];
        json_error_t jerr;
        _cleanup_free_ char *text = NULL;
        json_t *config;
        int r;

        snprintf(path, sizeof(path), "%s/config.json", o->bundle);
        config = json_load_file(path, 0, &jerr);
        if (!config)
                return xp_errorf(err, -EINVAL, "%s:%d: %s", path, jerr.line, jerr.text);
        r = oci_shim_user(s, o->rootfs, config, err);
        if (r >= 0)
                r = oci_shim_pin_volumes(
                    o->bundle,
                    json_string_value(json_array_get(
                        json_object_get(json_object_get(s->oci, "detach"), "keep"), 0)),
                    json_object_get(s->oci, "volume_sources"),
                    config,
                    err);
        if (r >= 0 && !(text = json_dumps(config, JSON_COMPACT)))
                r = xp_errorf(err, -ENOMEM, "out of memory");
        json_decref(config);
        if (r < 0)
                return r;
        return rewrite_config(path, text, err);
}

/* A call of the runtime: what its child needs until its exec, in the shim's memory. */
struct runtime_call {
        const char *runtime;
        const char *const *argv;
        int in, out, errfd;
        pid_t shim;
};

/* The runtime's child (shim_vfork(): our memory, we stopped): system calls only, then its exec. */
static int runtime_child(void *arg)
{
        const struct runtime_call *c = arg;
        sigset_t none;
        int null = open("/dev/null", O_RDONLY | O_CLOEXEC);

        shim_child_default_signals();
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        /* a shim killed mid-start takes its runtime along: nothing creates the container after
         * the next agent cleaned up for it */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != c->shim)
                _exit(127);
        if (null < 0 || dup2(c->in >= 0 ? c->in : null, 0) < 0 ||
            dup2(c->out >= 0 ? c->out : null, 1) < 0 ||
            dup2(c->errfd >= 0 ? c->errfd : null, 2) < 0)
                _exit(127);
        (void)close_range(3, ~0U, CLOSE_RANGE_CLOEXEC);
        execv(c->runtime, (char *const *)c->argv);
        _exit(127);
}

/* Runs the runtime with args (after --root and --log), its stdin from in, stdout and stderr to
 * out and errfd (-1: /dev/null); returns its exit status (-errno when it could not run). */
static int
run_runtime(const struct oci_shim *o, const char *const *args, int in, int out, int errfd)
{
        const char *argv[20] = {
            o->runtime, "--root", o->root, "--log", o->log, "--log-format", "json"};
        struct runtime_call call = {o->runtime, argv, in, out, errfd, getpid()};
        size_t n = 7;
        int status;
        pid_t pid;

        for (size_t i = 0; args[i] && n < 19; i++)
                argv[n++] = args[i];
        argv[n] = NULL;
        pid = shim_vfork(runtime_child, &call);
        if (pid < 0)
                return -errno;
        while (waitpid(pid, &status, 0) < 0)
                if (errno != EINTR)
                        return -errno;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* What the runtime wrote on the container's pipes before its process could run: not the
 * container's output (its messages belong in the shim's records, never the container's log).
 * Its first line into buf (size 0: none kept). */
static void drain(int fd, char *buf, size_t size)
{
        char chunk[4096];
        int flags = fcntl(fd, F_GETFL);
        size_t len = 0;
        ssize_t n;

        fcntl(fd, F_SETFL, flags | O_NONBLOCK);
        while ((n = read(fd, chunk, sizeof(chunk))) > 0)
                for (ssize_t i = 0; i < n && len + 1 < size; i++)
                        buf[len++] = chunk[i];
        fcntl(fd, F_SETFL, flags);
        if (size > 0) {
                buf[len] = '\0';
                buf[strcspn(buf, "\n")] = '\0';
        }
}

/* The runtime's last error from its log ({"level":"error","msg":...} lines), into buf; without
 * one, the first line it wrote on its stderr (stderr_fd, the read end; -1: none). */
static void runtime_error(
    const struct oci_shim *o, const char *what, int status, int stderr_fd, char *buf, size_t size)
{
        _cleanup_free_ char *data = NULL;
        _cleanup_close_ int fd = open(o->log, O_RDONLY | O_CLOEXEC);
        char said[256] = "";
        size_t len = 0;

        if (stderr_fd >= 0)
                drain(stderr_fd, said, sizeof(said));
        snprintf(buf,
                 size,
                 "%s %s: exit status %d%s%s",
                 o->runtime,
                 what,
                 status,
                 *said ? ": " : "",
                 said);
        if (fd < 0 || xp_read_fd_all(fd, 1024 * 1024, &data, &len) < 0 || !data)
                return;
        for (char *line = data; line < data + len;) {
                char *end = memchr(line, '\n', (size_t)(data + len - line));
                json_t *j = json_loadb(
                    line, end ? (size_t)(end - line) : (size_t)(data + len - line), 0, NULL);
                const char *msg = str(j, "msg"), *level = str(j, "level");

                if (msg && level && (strcmp(level, "error") == 0 || strcmp(level, "fatal") == 0))
                        snprintf(buf, size, "%s", msg);
                json_decref(j);
                line = end ? end + 1 : data + len;
        }
}

static pid_t read_pid(const struct oci_shim *o)
{
        char path[PATH_MAX], buf[32] = "";
        int fd;
        ssize_t n;

        snprintf(path, sizeof(path), "%s/" PID_FILE, o->bundle);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return 0;
        n = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        return n > 0 ? (pid_t)strtol(buf, NULL, 10) : 0;
}

/* Whether pid has ended or is ending (a zombie, or PF_EXITING set): the kernel shows it in the
 * root group from early in its exit on. */
static bool ended(pid_t pid)
{
        char file[64], buf[512], *p;
        unsigned long flags = 0;
        int fd;
        ssize_t n;

        snprintf(file, sizeof(file), "/proc/%d/stat", (int)pid);
        fd = open(file, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return false;
        n = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        buf[n > 0 ? n : 0] = '\0';
        p = strrchr(buf, ')');
        if (!p || p[1] != ' ')
                return false;
        if (p[2] == 'Z' || p[2] == 'X')
                return true;
        /* ") S ppid pgrp session tty_nr tpgid flags" */
        p += 2;
        for (int field = 0; field < 6 && p; field++)
                p = strchr(p + 1, ' ');
        if (p)
                flags = strtoul(p + 1, NULL, 10);
        return flags & 0x4; /* PF_EXITING */
}

/*
 * Whether the runtime already put pid in the container's group in every hierarchy: 1, 0 (it is in
 * another group somewhere, or the groups are not the node's own), -1 when its groups could not be
 * read. crun does, from config.json's cgroupsPath ("/" + the group's path), when the groups are
 * the node's own (cgroup_root "/"). Moving it there again is not free: each write to cgroup.procs
 * that finds the kernel's thread-group lock idle waits for an RCU grace period (milliseconds,
 * more under load), the largest single cost of a start after the runtime's.
 */
static int runtime_placed(const struct shim *s, pid_t pid)
{
        const char *root = json_string_value(json_object_get(s->spec, "cgroup_root"));
        const char *path = xp_cgroup_path(s->cg);
        char file[64], line[1024];
        size_t plen = strlen(path);
        int placed = -1;
        FILE *f;

        if (!root || strcmp(root, "/") != 0)
                return 0;
        snprintf(file, sizeof(file), "/proc/%d/cgroup", (int)pid);
        f = fopen(file, "re");
        if (!f)
                return -1;
        /* ID:CONTROLLERS:PATH; named hierarchies (name=systemd) hold no limits of ours */
        while (fgets(line, sizeof(line), f)) {
                char *ctl = strchr(line, ':'), *at = ctl ? strchr(ctl + 1, ':') : NULL;

                line[strcspn(line, "\n")] = '\0';
                if (!at) {
                        placed = -1;
                        break;
                }
                if (strncmp(ctl + 1, "name=", 5) == 0)
                        continue;
                placed = at[1] == '/' && strncmp(at + 2, path, plen) == 0 && !at[2 + plen];
                if (!placed)
                        break;
        }
        fclose(f);
        /* an init that ended or is ending (a short container) ends its pid namespace (every
         * container has its own): the kernel kills every process in it before init is a zombie,
         * so nothing of it is left to contain */
        return placed <= 0 && ended(pid) ? 1 : placed;
}

/* The runtime class's state directory holds this file once its runtime left a container outside
 * its group in a one-call start: its later starts are create + start. */
static void create_start_marker(const struct oci_shim *o, char *path, size_t size)
{
        snprintf(path, size, "%s/" CREATE_START_MARKER, o->root);
}

/* The container could not be made to run: recorded as its exit (exit code 128), as a process
 * whose exec failed. */
static int start_failed(struct shim *s, struct oci_shim *o, const char *msg, struct xp_error *err)
{
        const char *del[] = {"delete", "--force", o->id, NULL};
        int r;

        if (s->child > 0)
                kill(s->child, SIGKILL);
        (void)run_runtime(o, del, -1, -1, -1);
        shim_kill_rest(s);
        shim_reap_all();
        (void)logwrite_finish(&s->log, runtime_now_ns(), NULL);
        shim_remove_cgroup(s);
        s->child_host = 0;
        r = shim_write_exit(s, 128, 0, false, true, msg, err);
        if (r < 0)
                return r;
        shim_start_done(s);
        return 0;
}

/*
 * crun and runc start a container in one call, `run --detach`: one execution of the runtime
 * fewer on the start path (~10 ms of CPU each on the shared VM, docs/containers.md "Speed"). The
 * release marker is then made before that call, without the container's pid: a start
 * interrupted from there on is recorded lost and its container killed through its group (never
 * run twice) rather than made again. So only where the runtime puts the container in its group
 * before its exec (the node's own cgroup root; adopt() checks that it did); other runtimes, whose
 * command line the OCI spec gives as create and start, and a runtime class whose runtime once
 * did not (create_start_marker()), keep those two calls.
 */
static bool one_call(const struct shim *s, const struct oci_shim *o)
{
        const char *root = json_string_value(json_object_get(s->spec, "cgroup_root"));
        const char *base = strrchr(o->runtime, '/');
        char marker[PATH_MAX];

        base = base ? base + 1 : o->runtime;
        if (!json_is_true(json_object_get(s->spec, "cgroups")) || !root || strcmp(root, "/") != 0 ||
            (strcmp(base, "crun") != 0 && strcmp(base, "runc") != 0))
                return false;
        create_start_marker(o, marker, sizeof(marker));
        return access(marker, F_OK) != 0;
}

/* create (run: `run --detach`), the container's stdin from in (-1: none) or its terminal's
 * master to *tty (tty: true, through the console socket): 0, or the runtime's error in msg
 * (with what it wrote on stderr, err_read, where its log says nothing). */
static int launch(struct shim *s,
                  struct oci_shim *o,
                  bool run,
                  const int io[3],
                  int err_read,
                  int *tty,
                  char *msg)
{
        char pidfile[PATH_MAX];
        const char *args[12];
        /* crun reads options before the container's id only */
        struct shim_console console = {.dir_fd = -1, .listen_fd = -1};
        struct xp_error err = {0};
        size_t n = 0;
        int status;

        snprintf(pidfile, sizeof(pidfile), "%s/" PID_FILE, o->bundle);
        if (s->tty && shim_console_open(s, &console, &err) < 0) {
                shim_console_close(&console);
                snprintf(msg, RUNTIME_NOTIFY_MAX, "%s", xp_error_message(&err));
                return -1;
        }
        args[n++] = run ? "run" : "create";
        if (run)
                args[n++] = "--detach";
        args[n++] = "--bundle";
        args[n++] = o->bundle;
        args[n++] = "--pid-file";
        args[n++] = pidfile;
        if (s->tty) {
                args[n++] = "--console-socket";
                args[n++] = console.path;
        }
        args[n++] = o->id;
        args[n] = NULL;
        status = run_runtime(o, args, io[0], io[1], io[2]);
        if (status != 0)
                runtime_error(o, run ? "run" : "create", status, err_read, msg, RUNTIME_NOTIFY_MAX);
        else if (s->tty && shim_console_receive(&console, tty, &err) < 0)
                snprintf(msg, RUNTIME_NOTIFY_MAX, "%s", xp_error_message(&err));
        shim_console_close(&console);
        return status != 0 || (s->tty && *tty < 0) ? -1 : 0;
}

/*
 * After a one-call start, the runtime did not put the container in its group (or its groups
 * could not be read): moving its pid now would leave what it forked meanwhile outside the pod's
 * limits, so the start fails (start_failed() kills it and every process it left, all of them the
 * shim's descendants) and the runtime class starts with create + start from now on.
 */
static void not_placed(const struct oci_shim *o, pid_t pid, int placed, char *msg)
{
        char marker[PATH_MAX];
        int fd;

        if (placed < 0) {
                snprintf(msg,
                         RUNTIME_NOTIFY_MAX,
                         "the container's groups (/proc/%d/cgroup) could not be read after %s run: "
                         "killed, as it may run outside its cgroup",
                         (int)pid,
                         o->runtime);
                return;
        }
        create_start_marker(o, marker, sizeof(marker));
        fd = open(marker, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (fd >= 0)
                close(fd);
        snprintf(msg,
                 RUNTIME_NOTIFY_MAX,
                 "%s run did not put the container in its cgroup: killed; this runtime class "
                 "starts containers with create + start from now on",
                 o->runtime);
}

/* The container's pid from the runtime, in its group (run: the runtime must have put it there):
 * 0, or -1 with msg. */
static int adopt(struct shim *s, struct oci_shim *o, bool run, char *msg, struct xp_error *err)
{
        int placed;

        s->child = s->child_host = read_pid(o);
        if (s->child <= 0) {
                snprintf(msg,
                         RUNTIME_NOTIFY_MAX,
                         "the OCI runtime created the container but wrote no pid");
                return -1;
        }
        placed = s->cg ? runtime_placed(s, s->child_host) : 1;
        if (placed > 0)
                return 0;
        if (run) {
                not_placed(o, s->child_host, placed, msg);
                return -1;
        }
        if (xp_cgroup_add_pid(s->cg, s->child, err) < 0) {
                snprintf(msg, RUNTIME_NOTIFY_MAX, "%s", xp_error_message(err));
                return -1;
        }
        return 0;
}

/* create, the release marker, start (or the marker, then run: one_call()): 1 when the container
 * runs, 0 when its start failed (and was recorded), -errno for the shim's own failures. */
static int create_and_start(struct shim *s,
                            struct oci_shim *o,
                            const int in[2],
                            const int out[2],
                            const int errp[2],
                            int *tty,
                            struct xp_error *err)
{
        char msg[RUNTIME_NOTIFY_MAX];
        const char *start[] = {"start", o->id, NULL};
        const int io[3] = {in[0], out[1], errp[1]};
        bool run = o->run;
        int status;

        s->child_host = 0; /* the marker of a one-call start names no pid */
        if (run && shim_release_marker(s, err) < 0)
                return start_failed(s, o, xp_error_message(err), err);
        if (launch(s, o, run, io, errp[0], tty, msg) < 0)
                return start_failed(s, o, msg, err);
        if (run)
                return adopt(s, o, true, msg, err) < 0 ? start_failed(s, o, msg, err) : 1;
        /* the container waits for its start: what is in its pipes is the runtime's own */
        drain(out[0], NULL, 0);
        drain(errp[0], NULL, 0);
        if (adopt(s, o, false, msg, err) < 0)
                return start_failed(s, o, msg, err);
        if (shim_release_marker(s, err) < 0)
                return start_failed(s, o, xp_error_message(err), err);
        status = run_runtime(o, start, -1, out[1], errp[1]);
        if (status != 0) {
                runtime_error(o, "start", status, -1, msg, sizeof(msg));
                return start_failed(s, o, msg, err);
        }
        return 1;
}

static int prepare(struct shim *s, struct oci_shim *o, struct xp_error *err)
{
        int r;

        o->runtime = str(s->oci, "runtime");
        o->root = str(s->oci, "root");
        o->id = str(s->oci, "id");
        o->bundle = str(s->oci, "bundle");
        if (!o->runtime || !o->root || !o->id || !o->bundle)
                return xp_errorf(err, -EINVAL, "%s: the spec's oci object is incomplete", s->dir);
        snprintf(o->rootfs, sizeof(o->rootfs), "%s/rootfs", o->bundle);
        snprintf(o->log, sizeof(o->log), "%s/" RUNTIME_LOG, o->bundle);
        r = own_namespace(err);
        if (r >= 0)
                runtime_read_only(o->runtime);
        if (r >= 0)
                r = xp_mkdir_p(o->root, 0755, err);
        /* the runtime of a one-call start makes the group and writes the limits (config.json's
         * linux.resources, the same) as it puts the container there: made here too, each of its
         * directories and limits would be made twice (adopt() checks that the runtime did) */
        o->run = r >= 0 && one_call(s, o);
        if (r >= 0)
                r = o->run ? shim_open_cgroup(s, err) : shim_setup_cgroup(s, err);
        if (r >= 0)
                r = logwrite_open(
                    &s->log,
                    json_string_value(json_object_get(s->spec, "log_dir")),
                    s->attempt,
                    (uint64_t)json_integer_value(json_object_get(s->spec, "log_max_bytes")),
                    (unsigned)json_integer_value(json_object_get(s->spec, "log_max_files")),
                    err);
        return r;
}

int oci_shim_run(struct shim *s, struct xp_error *err)
{
        struct oci_shim o = {0};
        int in[2] = {-1, -1}, out[2] = {-1, -1}, errp[2] = {-1, -1}, tty = -1, r, status, code, sig;
        const char *del[] = {"delete", "--force", NULL, NULL};
        _cleanup_close_ int sigfd = -1;
        uint64_t oom_after = 0;
        bool oom = false;
        sigset_t chld;

        r = prepare(s, &o, err);
        if (r < 0)
                return r;
        sigemptyset(&chld);
        sigaddset(&chld, SIGCHLD);
        sigprocmask(SIG_BLOCK, &chld, NULL);
        sigfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
        if (sigfd < 0 || pipe2(out, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0 ||
            (s->stdin && !s->tty && pipe2(in, O_CLOEXEC) < 0))
                return xp_errorf(err, -errno, "%s: pipes: %m", s->dir);
        r = mount_rootfs(s, &o, err);
        if (r >= 0)
                r = resolve_user(s, &o, err);
        if (r < 0)
                return start_failed(s, &o, xp_error_message(err), err);
        r = create_and_start(s, &o, in, out, errp, &tty, err);
        close(out[1]);
        close(errp[1]);
        if (in[0] >= 0)
                close(in[0]);
        if (r <= 0 || tty >= 0) {
                close(out[0]);
                close(errp[0]);
                out[0] = tty; /* a terminal: its master is the one output */
                errp[0] = -1;
        }
        if (r <= 0) {
                if (in[1] >= 0)
                        close(in[1]);
                if (tty >= 0)
                        close(tty);
                return r;
        }
        shim_attach_open(s, in[1], tty);
        s->started_ns = runtime_now_ns();
        r = shim_write_running(s, err);
        if (r < 0) {
                close(out[0]);
                close(errp[0]);
                return start_failed(s, &o, xp_error_message(err), err);
        }
        shim_start_done(s);
        drop_foreign(json_object_get(s->oci, "detach"));

        status = shim_supervise(s, sigfd, out[0], errp[0]);
        attach_close(&s->attach);
        shim_kill_rest(s);
        shim_reap_all();
        (void)logwrite_finish(&s->log, runtime_now_ns(), NULL);
        if (s->cg && s->have_oom && xp_cgroup_oom_kills(s->cg, &oom_after, NULL) >= 0)
                oom = oom_after > s->oom_before;
        /* the groups first, every hierarchy the runtime made them in (empty now: the container
         * and all it left are reaped): a runtime's delete that finds one freezes it to kill what
         * is in it, and the first frozen group of the machine patches the kernel's code (a
         * static key, every CPU stopped for it), again at the thaw */
        shim_remove_cgroup(s);
        del[2] = o.id;
        (void)run_runtime(&o, del, -1, -1, -1);
        (void)umount2(o.rootfs, MNT_DETACH);
        sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
        code = sig ? 128 + sig : WEXITSTATUS(status);
        return shim_write_exit(s, code, sig, oom, false, NULL, err);
}
