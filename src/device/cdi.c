/* SPDX-License-Identifier: Apache-2.0 */
/* CDI spec files for a node's devices (include/kube/xpool/cdi.h): names, specs, atomic writes. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "xpool/atomic_file.h"
#include "xpool/cdi.h"
#include "xpool/device.h"
#include "xpool/macro.h"
#include "xpool/strutil.h"

/* CDI's kinds, one per device kind: the class is the kind's own name. */
static const char *const kinds[] = {
    [XP_DEVICE_GPU] = XP_CDI_VENDOR "/gpu",
    [XP_DEVICE_NPU] = XP_CDI_VENDOR "/npu",
    [XP_DEVICE_FPGA] = XP_CDI_VENDOR "/fpga",
    [XP_DEVICE_VPU] = XP_CDI_VENDOR "/vpu",
    [XP_DEVICE_ACCELERATOR] = XP_CDI_VENDOR "/accelerator",
};

static bool alnum(char c)
{
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* A CDI device name: letters, digits, '_', '-', '.', ':'; a letter or digit at both ends. */
static bool valid_name(const char *name)
{
        size_t n = strlen(name);

        if (n == 0 || n >= XP_CDI_NAME_MAX || !alnum(name[0]) || !alnum(name[n - 1]))
                return false;
        for (size_t i = 0; i < n; i++)
                if (!alnum(name[i]) && !strchr("_-.:", name[i]))
                        return false;
        return true;
}

/* The kind of device's spec ("xpool.io/gpu"), or NULL when the device has no CDI name. */
static const char *xp_cdi_kind(const struct xp_device *d)
{
        if (!d->id || !d->resource_name || d->device_nodes.n == 0 || !valid_name(d->id))
                return NULL;
        if ((size_t)d->kind >= XP_ELEMENTSOF(kinds) || !kinds[d->kind])
                return NULL;
        return kinds[d->kind];
}

int xp_cdi_device_name(const struct xp_device *d, char *buf, size_t size)
{
        const char *kind = xp_cdi_kind(d);
        int n;

        if (!kind)
                return -ENOENT;
        n = snprintf(buf, size, "%s=%s", kind, d->id);
        if (n < 0 || (size_t)n >= size)
                return -ENAMETOOLONG;
        return 0;
}

/* Appends one device node: its path in the container, and where it is on the host when that
 * differs (a simulated device's stand-in). The runtime reads type and numbers from the host. */
static int add_node(json_t *nodes, const char *path, const char *host_path)
{
        json_t *n = json_pack("{s:s}", "path", path);

        for (size_t i = 0; i < json_array_size(nodes); i++)
                if (xp_streq0(json_string_value(json_object_get(json_array_get(nodes, i), "path")),
                              path)) {
                        json_decref(n);
                        return 0;
                }
        if (!n || (host_path && json_object_set_new(n, "hostPath", json_string(host_path)) < 0) ||
            json_array_append_new(nodes, n) < 0)
                return -ENOMEM;
        return 0;
}

/* A simulated device's node /dev/NAME is its stand-in DIR/NAME on the host (into buf); NULL:
 * the node is itself on the host. */
static const char *standin(const struct xp_device *d,
                           const char *node,
                           const struct xp_cdi_write_options *o,
                           char buf[static 4096])
{
        const char *base = strrchr(node, '/');

        if (!d->simulated || !o || !o->simulated_dev_dir || strncmp(node, "/dev/", 5) != 0 ||
            base != node + 4)
                return NULL;
        snprintf(buf, 4096, "%s%s", o->simulated_dev_dir, base);
        return buf;
}

static json_t *device_edits(const struct xp_device *d, const struct xp_cdi_write_options *o)
{
        json_t *edits = json_object(), *nodes = json_array();
        const char *const *control = xp_device_control_nodes(d);
        char buf[4096];
        int r = 0;

        if (!edits || !nodes || json_object_set_new(edits, "deviceNodes", nodes) < 0) {
                json_decref(edits);
                return NULL;
        }
        /* the device's own nodes always: a runtime must fail loudly when one is missing */
        for (size_t i = 0; r >= 0 && i < d->device_nodes.n; i++)
                r = add_node(
                    nodes, d->device_nodes.items[i], standin(d, d->device_nodes.items[i], o, buf));
        /* the vendor's control nodes where this node has them */
        for (size_t i = 0; r >= 0 && control && control[i]; i++) {
                const char *host = standin(d, control[i], o, buf);

                if (access(host ? host : control[i], F_OK) == 0)
                        r = add_node(nodes, control[i], host);
        }
        if (r < 0) {
                json_decref(edits);
                return NULL;
        }
        return edits;
}

int xp_cdi_spec_build(const struct xp_node_inventory *inv, const char *kind, json_t **ret)
{
        return xp_cdi_spec_build_with(inv, kind, NULL, ret);
}

int xp_cdi_spec_build_with(const struct xp_node_inventory *inv,
                           const char *kind,
                           const struct xp_cdi_write_options *o,
                           json_t **ret)
{
        json_t *spec =
            json_pack("{s:s,s:s,s:[]}", "cdiVersion", XP_CDI_VERSION, "kind", kind, "devices");
        json_t *devices = spec ? json_object_get(spec, "devices") : NULL;

        if (!spec)
                return -ENOMEM;
        for (size_t i = 0; i < inv->devices.n; i++) {
                const struct xp_device *d = &inv->devices.items[i];
                json_t *edits;
                bool seen = false;

                if (!xp_streq0(xp_cdi_kind(d), kind))
                        continue;
                /* ids are unique per node; a second one of the same name is left out */
                for (size_t j = 0; j < json_array_size(devices) && !seen; j++)
                        seen = xp_streq0(
                            json_string_value(json_object_get(json_array_get(devices, j), "name")),
                            d->id);
                if (seen)
                        continue;
                edits = device_edits(d, o);
                if (!edits ||
                    json_array_append_new(
                        devices, json_pack("{s:s,s:o}", "name", d->id, "containerEdits", edits)) <
                        0) {
                        json_decref(spec);
                        return -ENOMEM;
                }
        }
        if (json_array_size(devices) == 0) {
                json_decref(spec);
                return -ENOENT;
        }
        *ret = spec;
        return 0;
}

/* "xpool.io/gpu" -> "xpool.io-gpu.json" */
static void spec_file_name(const char *kind, char buf[static 64])
{
        snprintf(buf, 64, "%s.json", kind);
        *strchr(buf, '/') = '-';
}

static int write_kind(const struct xp_node_inventory *inv,
                      const char *dir,
                      const char *kind,
                      const struct xp_cdi_write_options *o,
                      struct xp_error *err)
{
        _cleanup_free_ char *text = NULL, *path = NULL;
        char name[64];
        json_t *spec;
        int r;

        r = xp_cdi_spec_build_with(inv, kind, o, &spec);
        if (r < 0)
                return r; /* -ENOENT: no device of this kind */
        r = xp_cdi_check(spec, err);
        if (r >= 0 && !(text = json_dumps(spec, JSON_INDENT(2) | JSON_PRESERVE_ORDER)))
                r = -ENOMEM;
        json_decref(spec);
        spec_file_name(kind, name);
        if (r < 0)
                return xp_error_prefix(err, r, "CDI spec %s/%s", dir, name);
        if (asprintf(&path, "%s/%s", dir, name) < 0)
                return xp_errorf(err, -ENOMEM, "out of memory");
        return xp_write_file_atomic(path, text, strlen(text), 0644, err);
}

int xp_cdi_write(const struct xp_node_inventory *inv, const char *dir, struct xp_error *err)
{
        return xp_cdi_write_with(inv, dir, NULL, err);
}

int xp_cdi_write_with(const struct xp_node_inventory *inv,
                      const char *dir,
                      const struct xp_cdi_write_options *o,
                      struct xp_error *err)
{
        int r;

        if (mkdir(dir, 0755) < 0 && errno != EEXIST)
                return xp_errorf(err, -errno, "CDI spec directory %s: %m", dir);
        for (size_t k = 0; k < XP_ELEMENTSOF(kinds); k++) {
                char name[64], path[4096];

                if (!kinds[k])
                        continue;
                r = write_kind(inv, dir, kinds[k], o, err);
                if (r >= 0)
                        continue;
                if (r != -ENOENT)
                        return r;
                /* the node has no such device (any more): no spec may promise one */
                spec_file_name(kinds[k], name);
                snprintf(path, sizeof(path), "%s/%s", dir, name);
                if (unlink(path) < 0 && errno != ENOENT)
                        return xp_errorf(
                            err, -errno, "cannot remove the stale CDI spec %s: %m", path);
        }
        return 0;
}
