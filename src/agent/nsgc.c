/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Leaked namespace pins (nsgc.h). An agent SIGKILLed, or stopped with pods running and never
 * started again, leaves the bind mounts of its pods' network and IPC namespaces; every one stays
 * in the mount table, which each container start copies. Agents may share the directories (the
 * defaults; tests), so an entry is removed only when no process is in its namespace: a running
 * pod of another agent keeps its own.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nsgc.h"
#include "xpool/log.h"

/* A detached mount may have been stacked: this many unmounts at most per entry. */
#define UNMOUNTS_MAX 8

static int add_id(struct xp_nsgc_inuse *set, dev_t dev, ino_t ino)
{
        if (xp_nsgc_inuse_has(set, dev, ino))
                return 0;
        if (set->n == set->cap) {
                size_t cap = set->cap ? set->cap * 2 : 64;
                struct xp_nsgc_id *ids = realloc(set->ids, cap * sizeof(*ids));

                if (!ids)
                        return -ENOMEM;
                set->ids = ids;
                set->cap = cap;
        }
        set->ids[set->n++] = (struct xp_nsgc_id){.dev = dev, .ino = ino};
        return 0;
}

/* The namespaces of one process's threads (a CNI plugin's thread may be in another's). */
static int scan_tasks(const char *proc, const char *pid, struct xp_nsgc_inuse *set)
{
        static const char *const kinds[] = {"net", "ipc"};
        char path[512];
        struct dirent *e;
        DIR *d;
        int r = 0;

        snprintf(path, sizeof(path), "%s/%s/task", proc, pid);
        d = opendir(path);
        if (!d)
                return 0;
        while (r == 0 && (e = readdir(d))) {
                if (e->d_name[0] < '0' || e->d_name[0] > '9')
                        continue;
                for (size_t k = 0; r == 0 && k < 2; k++) {
                        struct stat st;

                        snprintf(path,
                                 sizeof(path),
                                 "%s/%s/task/%s/ns/%s",
                                 proc,
                                 pid,
                                 e->d_name,
                                 kinds[k]);
                        if (stat(path, &st) == 0)
                                r = add_id(set, st.st_dev, st.st_ino);
                }
        }
        closedir(d);
        return r;
}

int xp_nsgc_inuse_scan(const char *proc, struct xp_nsgc_inuse *set)
{
        struct dirent *e;
        DIR *d = opendir(proc);
        int r = 0;

        if (!d)
                return -errno;
        while (r == 0 && (e = readdir(d)))
                if (e->d_name[0] >= '0' && e->d_name[0] <= '9')
                        r = scan_tasks(proc, e->d_name, set);
        closedir(d);
        return r;
}

bool xp_nsgc_inuse_has(const struct xp_nsgc_inuse *set, dev_t dev, ino_t ino)
{
        for (size_t i = 0; i < set->n; i++)
                if (set->ids[i].dev == dev && set->ids[i].ino == ino)
                        return true;
        return false;
}

void xp_nsgc_inuse_done(struct xp_nsgc_inuse *set)
{
        free(set->ids);
        *set = (struct xp_nsgc_inuse){0};
}

enum xp_nsgc_verdict xp_nsgc_judge(const char *name, bool known, bool in_use)
{
        /* "." "..", and anything hidden, is no pod's: pods' entries are named by their uid */
        if (!name || !*name || name[0] == '.' || known)
                return XP_NSGC_KEEP;
        return in_use ? XP_NSGC_IN_USE : XP_NSGC_REMOVE;
}

static int remove_entry(const char *path)
{
        for (int i = 0; i < UNMOUNTS_MAX && umount2(path, MNT_DETACH) == 0; i++)
                ;
        return unlink(path) < 0 && errno != ENOENT ? -errno : 0;
}

int xp_nsgc_sweep(const char *dir,
                  const char *what,
                  const struct xp_nsgc_inuse *inuse,
                  bool (*known)(const char *uid, void *userdata),
                  void *userdata)
{
        struct dirent *e;
        DIR *d = opendir(dir);
        int removed = 0;

        if (!d)
                return errno == ENOENT ? 0 : -errno;
        while ((e = readdir(d))) {
                char path[4096];
                struct stat st;
                enum xp_nsgc_verdict v;
                int r;

                snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
                /* through the mount: the namespace's own inode, as /proc/PID/ns/ shows it */
                if (e->d_name[0] == '.' || stat(path, &st) < 0 || !S_ISREG(st.st_mode))
                        continue;
                v = xp_nsgc_judge(e->d_name,
                                  known(e->d_name, userdata),
                                  xp_nsgc_inuse_has(inuse, st.st_dev, st.st_ino));
                if (v == XP_NSGC_IN_USE) {
                        xp_log(LOG_INFO,
                               "agent: %s left: the %s namespace of no pod of this node, but a "
                               "process is in it",
                               path,
                               what);
                } else if (v == XP_NSGC_REMOVE) {
                        r = remove_entry(path);
                        if (r < 0)
                                xp_log(LOG_WARNING, "agent: removing %s: %s", path, strerror(-r));
                        else
                                xp_log(LOG_INFO,
                                       "agent: removed %s, the %s namespace of no pod of this "
                                       "node (left by an earlier agent)",
                                       path,
                                       what);
                        removed += r == 0;
                }
        }
        closedir(d);
        return removed;
}
