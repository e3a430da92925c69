/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The inventory annotation (xpool/kubeinventory.h): a Node's devices, topology and allocation in
 * one small JSON text. Small because every watcher of Nodes receives it with each change: fields
 * equal to the previous device's are left out and carried forward by the reader, and the links
 * are an upper-triangular matrix of short level names rather than a list of pairs. The reader
 * expands it into the JSON of status.xpool and decodes that with the codec, so what a node
 * writes is checked by the same rules as a Node's own status.xpool.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube_internal.h"
#include "xpool/codec.h"
#include "xpool/kubeinventory.h"
#include "xpool/strutil.h"

/* ---- allocation ------------------------------------------------------------------------------ */

void xp_kube_allocation_done(struct xp_kube_allocation *a)
{
        for (size_t i = 0; a && i < a->uses.n; i++) {
                struct xp_kube_device_use *u = &a->uses.items[i];
                free(u->namespace);
                free(u->name);
                free(u->resource);
                free(u->device_id);
        }
        if (a) {
                free(a->uses.items);
                a->uses.items = NULL;
                a->uses.n = 0;
        }
}

int xp_kube_allocation_add(struct xp_kube_allocation *a,
                           const char *namespace,
                           const char *name,
                           const char *resource,
                           const char *device_id)
{
        struct xp_kube_device_use u = {
            .namespace = strdup(namespace),
            .name = strdup(name),
            .resource = xp_strdup0(resource),
            .device_id = strdup(device_id),
        };
        struct xp_kube_device_use *m;

        if (!u.namespace || !u.name || (resource && !u.resource) || !u.device_id)
                goto nomem;
        m = realloc(a->uses.items, (a->uses.n + 1) * sizeof(*m));
        if (!m)
                goto nomem;
        a->uses.items = m;
        m[a->uses.n++] = u;
        return 0;
nomem:
        free(u.namespace);
        free(u.name);
        free(u.resource);
        free(u.device_id);
        return -ENOMEM;
}

/* ---- writing --------------------------------------------------------------------------------- */

/* "NV12", "PIX", ...; "-" when the pair has no known link. */
static void link_token(const struct xp_node_inventory *inv,
                       const struct xp_device *a,
                       const struct xp_device *b,
                       char buf[16])
{
        const struct xp_device_link *l = xp_device_link_find(inv, a->id, b->id);
        const char *level = l ? xp_link_level_to_string(l->level) : NULL;

        if (!level)
                snprintf(buf, 16, "-");
        else if (l->level == XP_LINK_NVLINK)
                snprintf(buf, 16, "NV%" PRId64, l->nvlinks > 0 ? l->nvlinks : 1);
        else
                snprintf(buf, 16, "%s", level);
}

static int add_links(const struct xp_node_inventory *inv,
                     const struct xp_device *const *dev,
                     size_t n,
                     json_t *root)
{
        json_t *rows;

        if (n < 2 || inv->links.n == 0)
                return 0;
        rows = json_array();
        if (!rows || json_object_set_new(root, "links", rows) < 0)
                return -ENOMEM;
        for (size_t i = 0; i + 1 < n; i++) {
                _cleanup_free_ char *row = malloc((n - i) * 16 + 1);
                size_t len = 0;

                if (!row)
                        return -ENOMEM;
                for (size_t j = i + 1; j < n; j++) {
                        char tok[16];
                        size_t l;
                        link_token(inv, dev[i], dev[j], tok);
                        l = strlen(tok);
                        if (len)
                                row[len++] = ' ';
                        memcpy(row + len, tok, l);
                        len += l;
                }
                row[len] = '\0';
                if (json_array_append_new(rows, json_string(row)) < 0)
                        return -ENOMEM;
        }
        return 0;
}

/* The pod that holds device d ("namespace/name"), or NULL. */
static const struct xp_kube_device_use *holder(const struct xp_kube_allocation *a,
                                               const struct xp_device *d)
{
        for (size_t i = 0; a && i < a->uses.n; i++)
                if (xp_streq0(a->uses.items[i].device_id, d->id) &&
                    (!a->uses.items[i].resource ||
                     xp_streq0(a->uses.items[i].resource, d->resource_name)))
                        return &a->uses.items[i];
        return NULL;
}

/* Sets key to the string when it differs from the previous device's (first: always); null when
 * this device lacks what the previous one had, so the reader does not carry it forward. */
static int carry_string(json_t *o, const char *key, const char *value, const char *prev, bool first)
{
        if (!first && xp_streq0(value, prev))
                return 0;
        if (!value)
                return first ? 0 : json_object_set_new(o, key, json_null());
        return json_object_set_new(o, key, json_string(value));
}

static int
carry_number(json_t *o, const char *key, double value, double prev, bool first, bool integer)
{
        if (!first && value == prev)
                return 0;
        if (value <= 0)
                return first ? 0 : json_object_set_new(o, key, json_null());
        return json_object_set_new(
            o, key, integer ? json_integer((json_int_t)value) : json_real(value));
}

static int add_device(const struct xp_device *d,
                      const struct xp_device *prev,
                      const struct xp_kube_allocation *a,
                      json_t *devices)
{
        const struct xp_kube_device_use *u = holder(a, d);
        bool first = prev == NULL;
        json_t *o = json_object();
        int r = 0;

        if (!o || json_array_append_new(devices, o) < 0)
                return -ENOMEM;
        r |= json_object_set_new(o, "id", json_string(d->id));
        r |= carry_string(
            o, "resource", d->resource_name, first ? NULL : prev->resource_name, first);
        r |= carry_string(o,
                          "kind",
                          xp_device_kind_to_string(d->kind),
                          first ? NULL : xp_device_kind_to_string(prev->kind),
                          first);
        r |= carry_string(o, "vendor", d->vendor, first ? NULL : prev->vendor, first);
        r |= carry_string(o, "model", d->model, first ? NULL : prev->model, first);
        r |= carry_string(o,
                          "computeCapability",
                          d->compute_capability,
                          first ? NULL : prev->compute_capability,
                          first);
        r |= carry_number(o,
                          "memoryBytes",
                          (double)d->memory_bytes,
                          first ? 0 : (double)prev->memory_bytes,
                          first,
                          true);
        r |= carry_number(
            o, "fp16TFLOPS", d->fp16_tflops, first ? 0 : prev->fp16_tflops, first, false);
        r |= json_object_set_new(o, "index", json_integer(d->index));
        if (d->numa_node.set)
                r |= json_object_set_new(o, "numaNode", json_integer(d->numa_node.value));
        if (d->health != XP_DEVICE_HEALTHY)
                r |= json_object_set_new(
                    o,
                    "health",
                    json_string(d->health == XP_DEVICE_UNHEALTHY ? "Unhealthy" : "Unknown"));
        if (u)
                r |= json_object_set_new(o, "pod", json_sprintf("%s/%s", u->namespace, u->name));
        return r < 0 ? -ENOMEM : 0;
}

static int build(const struct xp_node_inventory *inv,
                 const struct xp_kube_allocation *a,
                 bool links,
                 char **ret)
{
        json_auto_t *root =
            json_pack("{s:i, s:[], s:[]}", "version", XP_INVENTORY_VERSION, "numaNodes", "devices");
        json_t *numa = json_object_get(root, "numaNodes"),
               *devices = json_object_get(root, "devices");
        _cleanup_free_ const struct xp_device **dev = calloc(inv->devices.n + 1, sizeof(*dev));
        size_t n = 0;
        int r;

        if (!root || !dev)
                return -ENOMEM;
        for (size_t i = 0; i < inv->numa_nodes.n; i++) {
                const struct xp_numa_node *nn = &inv->numa_nodes.items[i];
                json_t *o = json_pack("{s:I}", "id", (json_int_t)nn->id);
                if (!o || json_array_append_new(numa, o) < 0 ||
                    (nn->cpus && json_object_set_new(o, "cpus", json_string(nn->cpus)) < 0))
                        return -ENOMEM;
        }
        /* a device without an id cannot be named by a placement: it is left out */
        for (size_t i = 0; i < inv->devices.n; i++) {
                if (!inv->devices.items[i].id)
                        continue;
                r = add_device(&inv->devices.items[i], n ? dev[n - 1] : NULL, a, devices);
                if (r < 0)
                        return r;
                dev[n++] = &inv->devices.items[i];
        }
        if (links)
                r = add_links(inv, dev, n, root);
        else
                r = json_object_set_new(root, "linksOmitted", json_true());
        if (r < 0)
                return -ENOMEM;
        *ret = json_dumps(root, JSON_COMPACT);
        return *ret ? 0 : -ENOMEM;
}

int xp_kube_inventory_encode(const struct xp_node_inventory *inventory,
                             const struct xp_kube_allocation *allocation,
                             size_t max_bytes,
                             char **ret,
                             struct xp_error *err)
{
        char *text = NULL;
        int r;

        if (max_bytes == 0)
                max_bytes = XP_INVENTORY_MAX_BYTES;
        r = build(inventory, allocation, true, &text);
        if (r == 0 && strlen(text) > max_bytes) {
                /* the topology is what grows with the square of the devices: it goes first */
                free(text);
                text = NULL;
                r = build(inventory, allocation, false, &text);
        }
        if (r < 0)
                return xp_errorf(err, r, "encoding the inventory annotation: out of memory");
        if (strlen(text) > max_bytes) {
                size_t len = strlen(text);
                free(text);
                return xp_errorf(
                    err,
                    -E2BIG,
                    "the inventory of %zu devices takes %zu bytes without its links, over the bound of %zu",
                    inventory->devices.n,
                    len,
                    max_bytes);
        }
        *ret = text;
        return 0;
}
