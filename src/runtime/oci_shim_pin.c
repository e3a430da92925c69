/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The pod's own volumes pinned before the OCI runtime binds them. An emptyDir (and the pod's
 * hosts files) lies below the pod's directory, STATE/.pods/<uid>, and the pod writes it: between
 * the agent's check that a subPath stays inside its volume (oci_pod.c) and the runtime's bind, a
 * container of the pod could swap a directory of that path for a symbolic link to the node's
 * root, and the runtime would bind the node's files (as CVE-2021-25741 on the kubelet). Here, in
 * the shim's own mount namespace, each such source is opened with no symbolic link allowed on
 * its path (the agent gave its real path), that very directory is bound onto a mount point in
 * the bundle, which no pod sees, and config.json's mount binds from there. The same for every
 * volume's source the agent checked (a hostPath the pod may write too), which the spec lists.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shim_internal.h"
#include "xpool/fileio.h"
#include "xpool/macro.h"
#include "xpool/strutil.h"

#define PIN_DIR "pinned"

static bool below(const char *path, const char *dir)
{
        size_t n = dir ? strlen(dir) : 0;

        return n > 1 && strncmp(path, dir, n) == 0 && path[n] == '/';
}

/* source, opened without following a link, bound onto BUNDLE/pinned/<i>. */
static int pin(const char *bundle, size_t i, const char *source, char *ret, size_t size)
{
        _cleanup_close_ int fd = xp_open_no_links(AT_FDCWD, source, 0);
        char proc[64];
        struct stat st;
        int point;

        if (fd < 0)
                return fd;
        if (fstat(fd, &st) < 0)
                return -errno;
        if ((size_t)snprintf(ret, size, "%s/" PIN_DIR "/%zu", bundle, i) >= size)
                return -ENAMETOOLONG;
        point = S_ISDIR(st.st_mode) ? mkdir(ret, 0700)
                                    : open(ret, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (point < 0 && errno != EEXIST)
                return -errno;
        if (!S_ISDIR(st.st_mode) && point >= 0)
                close(point);
        snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
        /* MS_REC: config.json rbinds from the pin, which sees only what the pin holds; mounts
         * inside the volume (a hostPath /sys's cgroup tree, a disk under a data directory) would
         * otherwise be empty directories in the container. */
        return mount(proc, ret, NULL, MS_BIND | MS_REC, NULL) < 0 ? -errno : 0;
}

static bool listed(const json_t *list, const char *path)
{
        const json_t *v;
        size_t i;

        json_array_foreach(list, i, v)
        {
                if (xp_streq0(json_string_value(v), path))
                        return true;
        }
        return false;
}

int oci_shim_pin_volumes(const char *bundle,
                         const char *pod_dir,
                         const json_t *volume_sources,
                         json_t *config,
                         struct xp_error *err)
{
        json_t *m;
        size_t i;
        char dir[PATH_MAX], pinned[PATH_MAX];
        int r;

        if ((size_t)snprintf(dir, sizeof dir, "%s/" PIN_DIR, bundle) >= sizeof dir ||
            (mkdir(dir, 0700) < 0 && errno != EEXIST))
                return xp_errorf(err, -errno, "%s: %m", dir);
        json_array_foreach(json_object_get(config, "mounts"), i, m)
        {
                const char *source = json_string_value(json_object_get(m, "source"));

                if (!source || !(below(source, pod_dir) || listed(volume_sources, source)))
                        continue;
                r = pin(bundle, i, source, pinned, sizeof pinned);
                if (r == -ELOOP || r == -EXDEV)
                        return xp_errorf(err,
                                         -EPERM,
                                         "volume source %s: a symbolic link appeared on its path "
                                         "after it was checked (the pod changed its volume)",
                                         source);
                if (r < 0)
                        return xp_errorf(
                            err, r, "pinning volume source %s: %s", source, strerror(-r));
                if (json_object_set_new(m, "source", json_string(pinned)) < 0)
                        return xp_errorf(err, -ENOMEM, "out of memory");
        }
        return 0;
}
