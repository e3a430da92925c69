/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Warming the kernel's task moves between groups. A move takes cgroup_threadgroup_rwsem for
 * writing, a percpu rwsem: when no writer took it in the last grace period or so, the writer first
 * waits for an RCU grace period (rcu_sync_enter()), 4-28 ms on an idle VM, and a shim's first
 * move of a container's process pays that on an idle node's every start. A move that changes
 * nothing (a thread of the agent into the group it is in) pays the wait instead, off the
 * start's path: begun when the start is known, it overlaps the agent's work before the shim
 * (the token volume, the TokenRequest), and the shim's moves that follow within a grace period of
 * its end find the lock warm. Only the "favordynmods" mount option avoids the wait altogether,
 * and v1 hierarchies refuse it on a remount.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cgroup_internal.h"
#include "xpool/timeutil.h"

int cgroup_own_path(const char *text, const char *controller, char *buf, size_t size)
{
        size_t want = strlen(controller);

        for (const char *line = text; *line;) {
                const char *end = strchrnul(line, '\n');
                const char *list = memchr(line, ':', (size_t)(end - line));
                const char *path = list ? memchr(list + 1, ':', (size_t)(end - list - 1)) : NULL;

                for (const char *c = list ? list + 1 : end; path && c < path;) {
                        size_t len = strcspn(c, ",:");

                        if (len == want && memcmp(c, controller, len) == 0) {
                                size_t n = (size_t)(end - path - 1);

                                if (n == 0 || path[1] != '/' || n >= size)
                                        return -EINVAL;
                                memcpy(buf, path + 1, n);
                                buf[n] = '\0';
                                return 0;
                        }
                        c += len + (c[len] == ',');
                }
                line = *end ? end + 1 : end;
        }
        return -ENOENT;
}

/* The first controller whose hierarchy is mounted whole: -1 when none. */
static int warm_controller(const struct xp_cgroup_root *root)
{
        for (int c = 0; c < CGROUP_CONTROLLER_MAX; c++)
                if (root->v1_mounts[c] && (root->v1_whole & (1u << c)))
                        return c;
        return -1;
}

/* The tasks file of the calling process's group (the first hierarchy mounted whole), open for
 * writing: the fd, or -errno with err. */
static int open_own_tasks(struct xp_cgroup_root *root, struct xp_error *err)
{
        _cleanup_free_ char *text = NULL;
        char path[PATH_MAX], file[PATH_MAX];
        int c = root->mode == XP_CGROUP_V1 ? warm_controller(root) : -1;
        int fd, r, n;

        if (c < 0)
                return xp_errorf(
                    err, -EOPNOTSUPP, "no v1 hierarchy mounted whole to move a thread in");
        /* read at each open: an operator may have moved the agent meanwhile; the process's
         * (its first thread's), so that a move this thread made with a stale fd is undone */
        r = cgroup_read(root, "proc/self", "cgroup", &text, err);
        if (r < 0)
                return r;
        r = cgroup_own_path(
            text, cgroup_controller_name((enum cgroup_controller)c), path, sizeof(path));
        if (r < 0)
                return xp_errorf(err,
                                 r,
                                 "proc/self/cgroup: no group of the %s hierarchy",
                                 cgroup_controller_name((enum cgroup_controller)c));
        /* "tasks" moves this thread alone: the agent's other threads are not touched */
        n = snprintf(file, sizeof(file), "%s%s/tasks", root->v1_mounts[c], path);
        if (n < 0 || (size_t)n >= sizeof(file))
                return xp_errorf(err, -ENAMETOOLONG, "cgroup %s: path too long", path);
        fd = openat(root->fd, file, O_WRONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0) {
                r = -errno;
                return xp_errorf(err, r, "opening /%s: %s", file, strerror(-r));
        }
        return fd;
}

/* Writes the calling thread's id to the tasks file open at fd. */
static int move_self(int fd, struct xp_error *err)
{
        char tid[24];
        int n = snprintf(tid, sizeof(tid), "%d", (int)gettid());
        ssize_t written;

        do
                written = write(fd, tid, (size_t)n);
        while (written < 0 && errno == EINTR);
        if (written < 0)
                return xp_errorf(err, -errno, "moving thread %s into its group: %m", tid);
        return written == n ? 0 : xp_errorf(err, -EIO, "moving thread %s: a short write", tid);
}

int xp_cgroup_warm_moves(struct xp_cgroup_root *root, struct xp_error *err)
{
        int fd = open_own_tasks(root, err), r;

        if (fd < 0)
                return fd;
        r = move_self(fd, err);
        close(fd);
        return r;
}

/*
 * After a move the lock stays warm for a grace period or so (4-30 ms here), and each move within
 * that time extends it: the thread moves again every WARM_EVERY_MS while a start it was asked for
 * has not reported back (cgroup_warmer_done()), WARM_HOLD_MS after the last ask at most, so a
 * shim that comes later than a grace period after the first move (a loaded node, a slow volume)
 * still finds it warm. A move into the thread's own group costs microseconds when warm.
 */
#define WARM_EVERY_MS 4
#define WARM_HOLD_MS  200
/* how long the thread's group, once read, is written without reading it again */
#define WARM_REOPEN_MS 1000

/* A start's container group, to be made before the move. */
struct wanted_group {
        char *path;
        bool pinned; /* its cpuset directories too */
};

struct cgroup_warmer {
        struct xp_cgroup_root *root; /* borrowed */
        pthread_t thread;
        pthread_mutex_t lock;
        pthread_cond_t cond; /* on CLOCK_MONOTONIC */
        bool wanted, stop;
        unsigned pending;  /* asks whose start has not reported back */
        int64_t until_ms;  /* the hold's end, CLOCK_MONOTONIC */
        int fd;            /* the thread's own: its group's tasks file during a hold, or -1 */
        int64_t opened_ms; /* when fd was opened */
        struct wanted_group
            *groups; /* asked for, not made yet (cgroup_warmer_want()), under lock */
        size_t n_groups;
};

/* Under lock. */
static bool holding(struct cgroup_warmer *w)
{
        if (w->pending > 0 && xp_monotonic_ms() >= w->until_ms)
                w->pending = 0; /* asks that led to no start (a gate held it) */
        return w->pending > 0;
}

/* Under lock: waits WARM_EVERY_MS, or less when asked or stopped. */
static void wait_between_moves(struct cgroup_warmer *w)
{
        int64_t at = xp_monotonic_ms() + WARM_EVERY_MS;
        struct timespec ts = {.tv_sec = at / 1000, .tv_nsec = (at % 1000) * 1000000};

        while (!w->wanted && !w->stop &&
               pthread_cond_timedwait(&w->cond, &w->lock, &ts) != ETIMEDOUT)
                ;
}

static void close_tasks(struct cgroup_warmer *w)
{
        if (w->fd >= 0)
                close(w->fd);
        w->fd = -1;
}

/* One move: a hold's moves after its first write the group's tasks file read then (one system
 * call each), read again after WARM_REOPEN_MS so that the thread follows the agent's moves. */
static int move(struct cgroup_warmer *w)
{
        int64_t now = xp_monotonic_ms();

        if (w->fd >= 0 && now - w->opened_ms >= WARM_REOPEN_MS)
                close_tasks(w);
        if (w->fd < 0) {
                w->fd = open_own_tasks(w->root, NULL);
                w->opened_ms = now;
        }
        return w->fd < 0 ? w->fd : move_self(w->fd, NULL);
}

static void free_groups(struct wanted_group *groups, size_t n)
{
        for (size_t i = 0; i < n; i++)
                free(groups[i].path);
        free(groups);
}

/*
 * The groups asked for, made before the move: a group's mkdir takes the kernel's cgroup_mutex,
 * which the move holds through its grace period, so a shim making its group then waited for the
 * move's end (2.5-8 ms of an idle start, stop 41). Made here first, the shim's mkdirs find them
 * (EEXIST, decided before the cgroup code) and its moves come after the wait. Unlocked; what fails
 * is left to the shim, which makes them as before. A pinned group's cpuset directories are only
 * made: their cpus and mems are the shim's to fill in and pin (cgroup_v1_make_cpuset()). Where
 * cpuset is v1's only hierarchy, making a group writes its cpuset files, so none is made here.
 */
static void make_groups(struct cgroup_warmer *w)
{
        bool creates_write_cpuset = cgroup_v1_create_writes_cpuset(w->root);
        struct wanted_group *groups;
        size_t n;

        pthread_mutex_lock(&w->lock);
        groups = TAKE_PTR(w->groups);
        n = w->n_groups;
        w->n_groups = 0;
        pthread_mutex_unlock(&w->lock);
        for (size_t i = 0; i < n && !creates_write_cpuset; i++) {
                struct xp_cgroup *cg = NULL;

                if (xp_cgroup_create(w->root, groups[i].path, &cg, NULL) < 0)
                        continue;
                if (groups[i].pinned)
                        (void)cgroup_v1_make_cpuset(cg, NULL);
                xp_cgroup_free(cg);
        }
        free_groups(groups, n);
}

static void *warmer_run(void *arg)
{
        struct cgroup_warmer *w = arg;
        bool works = true;

        pthread_mutex_lock(&w->lock);
        for (;;) {
                while (!w->wanted && !w->stop && !holding(w)) {
                        close_tasks(w);
                        pthread_cond_wait(&w->cond, &w->lock);
                }
                if (w->stop)
                        break;
                w->wanted = false;
                pthread_mutex_unlock(&w->lock);
                make_groups(w);
                /* a machine where it fails once (not root, a hierarchy not ours) is not asked
                 * again: the warming only saves time */
                works = works && move(w) >= 0;
                pthread_mutex_lock(&w->lock);
                if (!works)
                        w->pending = 0;
                else if (holding(w))
                        wait_between_moves(w);
        }
        close_tasks(w);
        pthread_mutex_unlock(&w->lock);
        return NULL;
}

int cgroup_warmer_start(struct xp_cgroup_root *root, struct cgroup_warmer **ret)
{
        struct cgroup_warmer *w = calloc(1, sizeof(*w));
        pthread_condattr_t attr;
        int r;

        if (!w)
                return -ENOMEM;
        w->root = root;
        w->fd = -1;
        pthread_mutex_init(&w->lock, NULL);
        pthread_condattr_init(&attr);
        pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
        pthread_cond_init(&w->cond, &attr);
        pthread_condattr_destroy(&attr);
        r = pthread_create(&w->thread, NULL, warmer_run, w);
        if (r != 0) {
                pthread_cond_destroy(&w->cond);
                pthread_mutex_destroy(&w->lock);
                free(w);
                return -r;
        }
        *ret = w;
        return 0;
}

/* Under lock: group (taken) and pinned added to what the thread makes; false without memory. */
static bool add_group(struct cgroup_warmer *w, char *group, bool pinned)
{
        struct wanted_group *grown = reallocarray(w->groups, w->n_groups + 1, sizeof(*grown));

        if (!grown)
                return false;
        w->groups = grown;
        w->groups[w->n_groups++] = (struct wanted_group){.path = group, .pinned = pinned};
        return true;
}

void cgroup_warmer_want(struct cgroup_warmer *w, const char *group, bool pinned)
{
        char *copy = group ? strdup(group) : NULL;

        pthread_mutex_lock(&w->lock);
        /* without memory the shim makes the group, as before: the warming only saves time */
        if (copy && !add_group(w, copy, pinned))
                free(copy);
        w->wanted = true;
        w->pending++;
        w->until_ms = xp_monotonic_ms() + WARM_HOLD_MS;
        pthread_cond_signal(&w->cond);
        pthread_mutex_unlock(&w->lock);
}

void cgroup_warmer_done(struct cgroup_warmer *w)
{
        pthread_mutex_lock(&w->lock);
        if (w->pending > 0)
                w->pending--;
        pthread_mutex_unlock(&w->lock);
}

void cgroup_warmer_stop(struct cgroup_warmer *w)
{
        if (!w)
                return;
        pthread_mutex_lock(&w->lock);
        w->stop = true;
        pthread_cond_signal(&w->cond);
        pthread_mutex_unlock(&w->lock);
        pthread_join(w->thread, NULL);
        free_groups(w->groups, w->n_groups);
        pthread_cond_destroy(&w->cond);
        pthread_mutex_destroy(&w->lock);
        free(w);
}
