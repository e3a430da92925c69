/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The running containers' shims, watched through pidfds (runtime_internal.h). A shim announces
 * its container's exit in the events directory; a shim killed (SIGKILL, the OOM killer)
 * announces nothing, and its agent, which waits on those announcements, never read the pod
 * again: an image container, whose process is not in the shim's pid namespace, ran on
 * unsupervised, and a process container's pod stayed Running. containerd learns the same from
 * its shim's connection closing. The pidfds and the announcements' inotify share one epoll set,
 * the runtime's event fd.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "runtime_internal.h"
#include "xpool/map.h"

struct watched {
        pid_t pid;
        int pidfd;
        const char *uid; /* the pod's: in key, after the pid */
        char key[];      /* "PID:UID", the index's key */
};

struct shimwatch {
        int epoll;
        /* by key: a node runs hundreds of pods, and each list of the runtime adds every running
         * shim again, so finding one is no walk over all of them */
        struct xp_map index;
};

int shimwatch_new(int inotify_fd, struct shimwatch **ret)
{
        struct shimwatch *w = calloc(1, sizeof(*w));
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
        int r;

        if (!w)
                return -ENOMEM;
        w->epoll = epoll_create1(EPOLL_CLOEXEC);
        if (w->epoll < 0 || epoll_ctl(w->epoll, EPOLL_CTL_ADD, inotify_fd, &ev) < 0) {
                r = -errno;
                shimwatch_free(w);
                return r;
        }
        *ret = w;
        return 0;
}

/* The watch's end: out of the index and the epoll set, its pidfd closed. */
static void drop(struct shimwatch *w, struct watched *e)
{
        (void)xp_map_del(&w->index, e->key);
        (void)epoll_ctl(w->epoll, EPOLL_CTL_DEL, e->pidfd, NULL);
        close(e->pidfd);
        free(e);
}

void shimwatch_free(struct shimwatch *w)
{
        if (!w)
                return;
        for (size_t i = 0; i < w->index.cap; i++) {
                struct watched *e = w->index.values[i];

                if (!e)
                        continue;
                (void)epoll_ctl(w->epoll, EPOLL_CTL_DEL, e->pidfd, NULL);
                close(e->pidfd);
                free(e);
        }
        xp_map_done(&w->index);
        if (w->epoll >= 0)
                close(w->epoll);
        free(w);
}

int shimwatch_fd(const struct shimwatch *w)
{
        return w->epoll;
}

size_t shimwatch_count(const struct shimwatch *w)
{
        return w->index.n;
}

/* A new entry for uid's shim pid (its pidfd not set yet), or NULL when out of memory. */
static struct watched *entry_new(const char *uid, pid_t pid)
{
        int n = snprintf(NULL, 0, "%d:%s", (int)pid, uid);
        struct watched *e = n < 0 ? NULL : malloc(sizeof(*e) + (size_t)n + 1);

        if (!e)
                return NULL;
        e->pid = pid;
        e->pidfd = -1;
        snprintf(e->key, (size_t)n + 1, "%d:%s", (int)pid, uid);
        e->uid = strchr(e->key, ':') + 1;
        return e;
}

int shimwatch_add(struct shimwatch *w, const char *uid, pid_t pid, uint64_t start)
{
        struct epoll_event ev = {.events = EPOLLIN};
        struct watched *e;
        char key[192];
        uint64_t s;
        char state;
        int n = snprintf(key, sizeof(key), "%d:%s", (int)pid, uid), r;

        /* most adds are of shims watched already: found without allocating */
        if (n > 0 && (size_t)n < sizeof(key) && xp_map_get(&w->index, key))
                return 0;
        e = entry_new(uid, pid);
        if (!e)
                return -ENOMEM;
        if (xp_map_get(&w->index, e->key)) { /* a key longer than key[] */
                free(e);
                return 0;
        }
        e->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
        if (e->pidfd < 0) {
                r = -errno; /* ESRCH: gone already, its state says so; ENOSYS: before 5.3 */
                free(e);
                return r;
        }
        /* the pid's process now, held by the pidfd, is the shim only if it started then */
        r = runtime_proc_start(pid, &s, &state) < 0 || s != start ? -ESRCH : 0;
        ev.data.ptr = e;
        if (r == 0)
                r = xp_map_put(&w->index, e->key, e);
        if (r == 0 && epoll_ctl(w->epoll, EPOLL_CTL_ADD, e->pidfd, &ev) < 0) {
                r = -errno;
                (void)xp_map_del(&w->index, e->key);
        }
        if (r < 0) {
                close(e->pidfd);
                free(e);
        }
        return r;
}

void shimwatch_forget_pod(struct shimwatch *w, const char *uid)
{
        for (size_t i = 0; i < w->index.cap; i++) {
                struct watched *e = w->index.values[i];

                /* the index leaves a tombstone where drop() deletes: no entry moves */
                if (e && strcmp(e->uid, uid) == 0)
                        drop(w, e);
        }
}

/* Appends the uid (copied) to *uids; -ENOMEM leaves *uids and *n as they were, in effect. */
static int push(char ***uids, size_t *n, const char *uid)
{
        char **grown = reallocarray(*uids, *n + 1, sizeof(**uids));

        if (!grown)
                return -ENOMEM;
        *uids = grown;
        grown[*n] = strdup(uid);
        if (!grown[*n])
                return -ENOMEM;
        (*n)++;
        return 0;
}

int shimwatch_take(struct shimwatch *w, char ***uids, size_t *n)
{
        struct epoll_event ev[64];
        int got;

        /* level-triggered: a dead shim's pidfd stays readable until its watch is dropped */
        while ((got = epoll_wait(w->epoll, ev, (int)(sizeof(ev) / sizeof(ev[0])), 0)) > 0) {
                bool dropped = false;

                for (int i = 0; i < got; i++) {
                        struct watched *e = ev[i].data.ptr;

                        if (!e)
                                continue; /* the announcements' inotify: the caller reads it */
                        /* a shim whose pod could not be named stays watched, its pidfd ready:
                         * the next take names it */
                        if (uids && push(uids, n, e->uid) < 0)
                                return -ENOMEM;
                        drop(w, e);
                        dropped = true;
                }
                if (!dropped)
                        break; /* only the inotify was ready */
        }
        return 0;
}
