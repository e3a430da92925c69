/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Network namespaces kept as bind mounts (include/xpool/podnet.h), made as `ip netns add` makes
 * them. The caller is multi-threaded (the agent), so a namespace is made by a thread of its own
 * that unshares, mounts /proc/thread-self/ns/net and ends: no other thread's namespace changes,
 * and no fork runs beside threads.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <linux/nsfs.h>
#include <net/if.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "xpool/fileio.h"
#include "xpool/podnet.h"

#ifndef NSFS_MAGIC
#define NSFS_MAGIC 0x6e736673
#endif

int xp_netns_dir_prepare(const char *dir, struct xp_error *err)
{
        bool made = false;
        int r = xp_mkdir_p(dir, 0755, err);

        if (r < 0)
                return r;
        /* as iproute2 does with /run/netns: shared, so that an unmount reaches every copy */
        while (mount("", dir, "none", MS_SHARED | MS_REC, NULL) < 0) {
                r = -errno;
                if (r != -EINVAL || made)
                        return xp_errorf(err, r, "making %s a shared mount: %s", dir, strerror(-r));
                /* not a mount point yet: it becomes one, bound onto itself */
                if (mount(dir, dir, "none", MS_BIND | MS_REC, NULL) < 0) {
                        r = -errno;
                        return xp_errorf(err, r, "binding %s onto itself: %s", dir, strerror(-r));
                }
                made = true;
        }
        return 0;
}

struct maker {
        const char *path; /* NULL: only try to unshare */
        int r;
        const char *step;
};

/* Sets the namespace's loopback interface up (127.0.0.1 is the pod's own). */
static int loopback_up(void)
{
        struct ifreq ifr = {0};
        int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), r = 0;

        if (fd < 0)
                return -errno;
        snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
        if (ioctl(fd, SIOCGIFFLAGS, &ifr) < 0)
                r = -errno;
        ifr.ifr_flags |= IFF_UP;
        if (r == 0 && ioctl(fd, SIOCSIFFLAGS, &ifr) < 0)
                r = -errno;
        close(fd);
        return r;
}

/* The thread that makes the namespace: its own, and then it ends. */
static void *maker_thread(void *userdata)
{
        struct maker *m = userdata;

        m->step = "unshare(CLONE_NEWNET)";
        if (unshare(CLONE_NEWNET) < 0) {
                m->r = -errno;
                return NULL;
        }
        if (!m->path)
                return NULL;
        m->step = "setting lo up";
        m->r = loopback_up();
        if (m->r < 0)
                return NULL;
        m->step = "mounting the namespace";
        if (mount("/proc/thread-self/ns/net", m->path, "none", MS_BIND, NULL) < 0)
                m->r = -errno;
        return NULL;
}

static int run_maker(struct maker *m)
{
        pthread_t t;
        int r = -pthread_create(&t, NULL, maker_thread, m);

        if (r < 0) {
                m->step = "starting a thread";
                return m->r = r;
        }
        pthread_join(t, NULL);
        return m->r;
}

int xp_netns_create(const char *path, struct xp_error *err)
{
        struct maker m = {.path = path};
        int fd, r;

        fd = open(path, O_RDONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0);
        if (fd < 0) {
                r = -errno;
                return xp_errorf(err, r, "network namespace %s: %s", path, strerror(-r));
        }
        close(fd);
        r = run_maker(&m);
        if (r < 0) {
                (void)umount2(path, MNT_DETACH);
                unlink(path);
                return xp_errorf(
                    err, r, "network namespace %s: %s: %s", path, m.step, strerror(-r));
        }
        return 0;
}

int xp_netns_mounted(const char *path)
{
        struct statfs sfs;
        int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW), r;

        if (fd < 0)
                return errno == ENOENT || errno == ELOOP ? 0 : -errno;
        if (fstatfs(fd, &sfs) < 0)
                r = -errno;
        else if (sfs.f_type != NSFS_MAGIC)
                r = 0;
        else
                r = ioctl(fd, NS_GET_NSTYPE) == CLONE_NEWNET;
        close(fd);
        return r;
}

int xp_netns_remove(const char *path, struct xp_error *err)
{
        int r;

        /* a namespace mounted twice (two makers racing) is unmounted twice */
        for (int i = 0; i < 8 && umount2(path, MNT_DETACH | UMOUNT_NOFOLLOW) == 0; i++)
                ;
        if (unlink(path) < 0 && errno != ENOENT) {
                r = -errno;
                return xp_errorf(err, r, "removing network namespace %s: %s", path, strerror(-r));
        }
        return 0;
}

int xp_netns_probe(struct xp_error *err)
{
        struct maker m = {.path = NULL};
        int r = run_maker(&m);

        if (r < 0)
                return xp_errorf(
                    err, r, "cannot make network namespaces: %s: %s", m.step, strerror(-r));
        return 0;
}
