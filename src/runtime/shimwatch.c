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
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "runtime_internal.h"

struct watched {
        struct watched *next;
        pid_t pid;
        int pidfd;
        char uid[]; /* the pod's */
};

struct shimwatch {
        int epoll;
        struct watched *list;
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

static void drop(struct shimwatch *w, struct watched **link)
{
        struct watched *e = *link;

        *link = e->next;
        (void)epoll_ctl(w->epoll, EPOLL_CTL_DEL, e->pidfd, NULL);
        close(e->pidfd);
        free(e);
}

void shimwatch_free(struct shimwatch *w)
{
        if (!w)
                return;
        while (w->list)
                drop(w, &w->list);
        if (w->epoll >= 0)
                close(w->epoll);
        free(w);
}

int shimwatch_fd(const struct shimwatch *w)
{
        return w->epoll;
}

int shimwatch_add(struct shimwatch *w, const char *uid, pid_t pid, uint64_t start)
{
        struct epoll_event ev = {.events = EPOLLIN};
        struct watched *e;
        uint64_t s;
        char state;
        int fd, r;

        for (e = w->list; e; e = e->next)
                if (e->pid == pid && strcmp(e->uid, uid) == 0)
                        return 0;
        fd = (int)syscall(SYS_pidfd_open, pid, 0);
        if (fd < 0)
                return -errno; /* ESRCH: gone already, its state says so; ENOSYS: before 5.3 */
        /* the pid's process now, held by the pidfd, is the shim only if it started then */
        if (runtime_proc_start(pid, &s, &state) < 0 || s != start) {
                close(fd);
                return -ESRCH;
        }
        e = malloc(sizeof(*e) + strlen(uid) + 1);
        if (!e) {
                close(fd);
                return -ENOMEM;
        }
        e->pid = pid;
        e->pidfd = fd;
        strcpy(e->uid, uid);
        ev.data.ptr = e;
        if (epoll_ctl(w->epoll, EPOLL_CTL_ADD, fd, &ev) < 0) {
                r = -errno;
                close(fd);
                free(e);
                return r;
        }
        e->next = w->list;
        w->list = e;
        return 0;
}

/* Appends the uid (copied) to *uids. */
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
        int got, r = 0;

        /* level-triggered: a dead shim's pidfd stays readable until its watch is dropped */
        while ((got = epoll_wait(w->epoll, ev, (int)(sizeof(ev) / sizeof(ev[0])), 0)) > 0) {
                bool dropped = false;

                for (int i = 0; i < got; i++) {
                        struct watched *e = ev[i].data.ptr;

                        if (!e)
                                continue; /* the announcements' inotify: the caller reads it */
                        if (uids && r >= 0)
                                r = push(uids, n, e->uid);
                        for (struct watched **link = &w->list; *link; link = &(*link)->next)
                                if (*link == e) {
                                        drop(w, link);
                                        dropped = true;
                                        break;
                                }
                }
                if (!dropped)
                        break; /* only the inotify was ready */
        }
        return r;
}
