/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Reclaiming the pods' groups their runtime no longer knows (xp_cgroup_reclaim()): what a start
 * that failed, a shim that was killed or state that was lost left below the runtime's parent.
 * Only the parent's own children are looked at, so groups of other runtimes (their own parents)
 * are never touched.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cgroup_internal.h"
#include "xpool/macro.h"

#define RECLAIM_DEPTH_MAX 4    /* pod, container, and what an OCI runtime may nest below */
#define RECLAIM_NAMES_MAX 4096 /* pods' groups decided per call; the rest wait for the next */
#define KILL_TRIES        50

enum outcome {
        UNTOUCHED,
        REMOVED,
        BUSY
}; /* BUSY in one hierarchy stays BUSY */

struct decided {
        char **names;
        bool *reclaim;
        unsigned char *outcome;
        size_t n;
};

/* The hierarchies' directories below the root: v2's, or v1's mounts each once, ours first. */
static size_t hierarchies(const struct xp_cgroup_root *root, const char *out[], size_t max)
{
        size_t n = 0;

        if (root->mode == XP_CGROUP_V2) {
                out[n++] = CGROUP_V2_DIR;
                return n;
        }
        for (int c = 0; c < CGROUP_CONTROLLER_MAX && n < max; c++)
                if (root->v1_mounts[c] && !cgroup_v1_shared(root, c))
                        out[n++] = root->v1_mounts[c];
        for (size_t i = 0; i < root->n_v1_others && n < max; i++)
                out[n++] = root->v1_others[i];
        return n;
}

/* SIGKILL to the processes of base/dir's cgroup.procs: how many were signalled. */
static int kill_procs(struct xp_cgroup_root *root, const char *base, const char *dir)
{
        char full[PATH_MAX];
        _cleanup_free_ char *text = NULL;
        int n = 0;

        if (snprintf(full, sizeof(full), "%s/%s", base, dir) >= (int)sizeof(full) ||
            cgroup_read(root, full, "cgroup.procs", &text, NULL) < 0)
                return 0;
        for (char *p = text, *end; *p; p = end) {
                long pid = strtol(p, &end, 10);

                if (end == p)
                        break;
                if (pid > 0 && pid <= INT_MAX && kill((pid_t)pid, SIGKILL) == 0)
                        n++;
                end += strspn(end, "\n");
        }
        return n;
}

/* Removes base/dir and its subgroups, deepest first, killing what runs there: 1 removed (or it
 * was gone), 0 left busy. */
static int remove_tree(struct xp_cgroup_root *root, const char *base, const char *dir, int depth)
{
        char full[PATH_MAX], child[PATH_MAX];
        struct dirent *e;
        int fd, r;
        DIR *d;

        if (snprintf(full, sizeof(full), "%s/%s", base, dir) >= (int)sizeof(full))
                return 0;
        fd = openat(root->fd, full, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT ? 1 : 0;
        d = fdopendir(fd);
        if (!d) {
                close(fd);
                return 0;
        }
        while (depth < RECLAIM_DEPTH_MAX && (e = readdir(d)))
                if (e->d_type == DT_DIR && strcmp(e->d_name, ".") != 0 &&
                    strcmp(e->d_name, "..") != 0 &&
                    snprintf(child, sizeof(child), "%s/%s", dir, e->d_name) < (int)sizeof(child))
                        (void)remove_tree(root, base, child, depth + 1);
        closedir(d);
        for (int i = 0; i < KILL_TRIES; i++) {
                r = cgroup_rmdir(root, base, dir, NULL);
                if (r >= 0)
                        return 1;
                if (r != -EBUSY)
                        return 0;
                (void)kill_procs(root, base, dir);
                nanosleep(&(struct timespec){0, 2 * 1000 * 1000}, NULL);
        }
        return 0;
}

/* The index of name among the decided ones, asking keep the first time; -1 when full. */
static ssize_t
decide(struct decided *dd, const char *name, bool (*keep)(const char *, void *), void *userdata)
{
        char **names;
        bool *reclaim;
        unsigned char *outcome;

        for (size_t i = 0; i < dd->n; i++)
                if (strcmp(dd->names[i], name) == 0)
                        return (ssize_t)i;
        if (dd->n >= RECLAIM_NAMES_MAX)
                return -1;
        names = reallocarray(dd->names, dd->n + 1, sizeof(*names));
        if (names)
                dd->names = names;
        reclaim = reallocarray(dd->reclaim, dd->n + 1, sizeof(*reclaim));
        if (reclaim)
                dd->reclaim = reclaim;
        outcome = reallocarray(dd->outcome, dd->n + 1, sizeof(*outcome));
        if (outcome)
                dd->outcome = outcome;
        if (!names || !reclaim || !outcome || !(dd->names[dd->n] = strdup(name)))
                return -1;
        dd->reclaim[dd->n] = !keep(name, userdata);
        dd->outcome[dd->n] = UNTOUCHED;
        return (ssize_t)dd->n++;
}

/* One hierarchy's children of parent: those not kept are removed. -errno of listing parent. */
static int reclaim_in(struct xp_cgroup_root *root,
                      const char *base,
                      const char *parent,
                      struct decided *dd,
                      bool (*keep)(const char *, void *),
                      void *userdata)
{
        char full[PATH_MAX], dir[PATH_MAX];
        struct dirent *e;
        DIR *d;
        int fd;

        if (snprintf(full, sizeof(full), "%s/%s", base, parent) >= (int)sizeof(full))
                return -ENAMETOOLONG;
        fd = openat(root->fd, full, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT ? 0 : -errno;
        d = fdopendir(fd);
        if (!d) {
                close(fd);
                return -ENOMEM;
        }
        while ((e = readdir(d))) {
                ssize_t i;

                if (e->d_type != DT_DIR || strcmp(e->d_name, ".") == 0 ||
                    strcmp(e->d_name, "..") == 0)
                        continue;
                i = decide(dd, e->d_name, keep, userdata);
                if (i < 0 || !dd->reclaim[i] ||
                    snprintf(dir, sizeof(dir), "%s/%s", parent, e->d_name) >= (int)sizeof(dir))
                        continue;
                if (!remove_tree(root, base, dir, 1))
                        dd->outcome[i] = BUSY;
                else if (dd->outcome[i] == UNTOUCHED)
                        dd->outcome[i] = REMOVED;
        }
        closedir(d);
        return 0;
}

int xp_cgroup_reclaim(struct xp_cgroup_root *root,
                      const char *parent,
                      bool (*keep)(const char *name, void *userdata),
                      void *userdata,
                      struct xp_error *err)
{
        const char *bases[CGROUP_CONTROLLER_MAX + XP_ELEMENTSOF(root->v1_others)];
        size_t n_bases = hierarchies(root, bases, XP_ELEMENTSOF(bases));
        struct decided dd = {0};
        int r = 0, removed = 0;

        for (size_t i = 0; r >= 0 && i < n_bases; i++) {
                r = reclaim_in(root, bases[i], parent, &dd, keep, userdata);
                if (r < 0)
                        r = xp_errorf(
                            err, r, "listing cgroup /%s/%s: %s", bases[i], parent, strerror(-r));
        }
        for (size_t i = 0; i < dd.n; i++) {
                removed += dd.outcome[i] == REMOVED;
                free(dd.names[i]);
        }
        free(dd.names);
        free(dd.reclaim);
        free(dd.outcome);
        return r < 0 ? r : removed;
}
