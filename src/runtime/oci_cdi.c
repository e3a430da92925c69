/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A container's devices through CDI: the edits of its devices read from the node's spec files
 * (include/xpool/cdi.h), each device node completed from the host as runtimes do, and the device
 * cgroup's allow list extended by exactly those nodes, so that what the container sees and what
 * it may open are the same devices.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "oci_internal.h"
#include "xpool/cdi.h"

/* type, major, minor and fileMode of a device node from its host path, where the spec has none. */
static int fill_node(json_t *n, struct xp_error *err)
{
        const char *path = json_string_value(json_object_get(n, "path"));
        const char *host = json_string_value(json_object_get(n, "hostPath"));
        const char *type = json_string_value(json_object_get(n, "type"));
        bool have_numbers = json_object_get(n, "major") && json_object_get(n, "minor");
        struct stat st;
        char t;

        if (type && *type && have_numbers &&
            (strcmp(type, "p") == 0 || json_object_get(n, "fileMode")))
                return 0;
        if (stat(host ? host : path, &st) < 0) {
                if (type && strcmp(type, "p") == 0)
                        return 0;
                return xp_errorf(
                    err, -errno, "CDI device node %s: %s: %m", path, host ? host : path);
        }
        if (S_ISCHR(st.st_mode))
                t = 'c';
        else if (S_ISBLK(st.st_mode))
                t = 'b';
        else if (S_ISFIFO(st.st_mode))
                t = 'p';
        else
                return xp_errorf(err,
                                 -ENODEV,
                                 "CDI device node %s: %s is not a device",
                                 path,
                                 host ? host : path);
        if (!type || !*type || strcmp(type, "u") == 0)
                json_object_set_new(n, "type", json_stringn(&t, 1));
        if (!have_numbers) {
                json_object_set_new(n, "major", json_integer(major(st.st_rdev)));
                json_object_set_new(n, "minor", json_integer(minor(st.st_rdev)));
        }
        if (!json_object_get(n, "fileMode"))
                json_object_set_new(n, "fileMode", json_integer(st.st_mode & 07777));
        return 0;
}

int oci_cdi_edits(const char *dir, char *const *names, json_t **ret, struct xp_error *err)
{
        _cleanup_(xp_cdi_specs_freep) struct xp_cdi_specs *specs = NULL;
        json_t *edits = NULL, *n;
        size_t count = 0, i;
        int r;

        while (names && names[count])
                count++;
        r = xp_cdi_specs_load(dir, &specs, err);
        if (r >= 0)
                r = xp_cdi_resolve(specs, names, count, &edits, err);
        if (r < 0)
                return r;
        json_array_foreach(json_object_get(edits, "deviceNodes"), i, n)
        {
                r = fill_node(n, err);
                if (r < 0) {
                        json_decref(edits);
                        return r;
                }
        }
        *ret = edits;
        return 0;
}

int oci_cdi_allow(const struct xp_cgroup_limits *limits,
                  const json_t *edits,
                  struct xp_cgroup_limits *ret,
                  struct xp_cgroup_device **ret_devices,
                  struct xp_error *err)
{
        /* an unrestricted (privileged) container opens every node: no rules, the cgroup refuses
         * rules without the restriction, and the node's whole /dev is more than it takes */
        json_t *nodes = limits->restrict_devices ? json_object_get(edits, "deviceNodes") : NULL, *n;
        size_t have = limits->n_devices, total = have + json_array_size(nodes), i;
        struct xp_cgroup_device *devices;

        if (total > XP_CGROUP_DEVICES_MAX)
                return xp_errorf(err, -E2BIG, "more than %d device nodes", XP_CGROUP_DEVICES_MAX);
        devices = calloc(total ? total : 1, sizeof(*devices));
        if (!devices)
                return xp_errorf(err, -ENOMEM, "out of memory");
        if (have)
                memcpy(devices, limits->devices, have * sizeof(*devices));
        json_array_foreach(nodes, i, n)
        {
                const char *type = json_string_value(json_object_get(n, "type"));
                const char *perm = json_string_value(json_object_get(n, "permissions"));
                struct xp_cgroup_device d = {
                    .type = type ? type[0] : 'c',
                    .major = (unsigned)json_integer_value(json_object_get(n, "major")),
                    .minor = (unsigned)json_integer_value(json_object_get(n, "minor")),
                };
                bool dup = false;

                if (d.type != 'c' && d.type != 'b')
                        continue; /* a FIFO is no device the cgroup filters */
                snprintf(d.access, sizeof(d.access), "%.3s", perm && *perm ? perm : "rwm");
                for (size_t k = 0; k < have && !dup; k++)
                        dup = devices[k].type == d.type && devices[k].major == d.major &&
                              devices[k].minor == d.minor &&
                              strcmp(devices[k].access, d.access) == 0;
                if (!dup)
                        devices[have++] = d;
        }
        *ret = *limits;
        ret->devices = devices;
        ret->n_devices = have;
        *ret_devices = devices;
        return 0;
}
