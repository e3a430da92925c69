/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Stand-in device nodes for simulated devices (include/xpool/device.h): character devices of a
 * major the kernel reserves for local use, so a container can be given a simulated GPU as it is
 * given a real one, see it, and find that no driver answers it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "xpool/device.h"
#include "xpool/strutil.h"

/* NAME of "/dev/NAME", or NULL for a path elsewhere (a stand-in is one file of dir). */
static const char *dev_name(const char *path)
{
        const char *name = path && strncmp(path, "/dev/", 5) == 0 ? path + 5 : NULL;

        if (!name || !*name || strchr(name, '/') || strcmp(name, ".") == 0 ||
            strcmp(name, "..") == 0)
                return NULL;
        return name;
}

static int
make_node(int dfd, const char *dir, const char *name, unsigned minor, struct xp_error *err)
{
        struct stat st;

        if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
                if (S_ISCHR(st.st_mode))
                        return 0;
                return xp_errorf(err,
                                 -EEXIST,
                                 "the simulated device node %s/%s exists and is not a character "
                                 "device",
                                 dir,
                                 name);
        }
        if (mknodat(dfd, name, S_IFCHR | 0666, makedev(XP_SIM_DEVICE_MAJOR, minor)) < 0 &&
            errno != EEXIST)
                return xp_errorf(
                    err, -errno, "making the simulated device node %s/%s: %m", dir, name);
        /* open to every user, as a GPU's node is (the umask took some) */
        (void)!fchmodat(dfd, name, 0666, 0);
        return 0;
}

int xp_device_sim_nodes(const struct xp_node_inventory *inv, const char *dir, struct xp_error *err)
{
        _cleanup_close_ int dfd = -1;
        unsigned minor = 0;
        int r;

        if (mkdir(dir, 0755) < 0 && errno != EEXIST)
                return xp_errorf(err, -errno, "the simulated device directory %s: %m", dir);
        dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (dfd < 0)
                return xp_errorf(err, -errno, "the simulated device directory %s: %m", dir);
        for (size_t i = 0; i < inv->devices.n; i++) {
                const struct xp_device *d = &inv->devices.items[i];

                if (!d->simulated)
                        continue;
                for (size_t k = 0; k < d->device_nodes.n; k++) {
                        const char *name = dev_name(d->device_nodes.items[k]);

                        if (!name)
                                continue;
                        r = make_node(dfd, dir, name, minor++, err);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}
