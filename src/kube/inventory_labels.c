/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The labels a node's devices give it (xpool/kubeinventory.h). NVIDIA's GPU feature discovery
 * writes nvidia.com/gpu.product, .memory (MiB), .count and .present; the same suffixes on every
 * other device resource give the other vendors' devices the same selectors, and xpool.io/<kind>.*
 * select by kind whatever the vendor. A resource's or kind's labels describe its first device,
 * as feature discovery's do.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "kube_internal.h"
#include "xpool/kubeinventory.h"
#include "xpool/names.h"
#include "xpool/strutil.h"

static bool left_to_others(const char *resource, const char *const *leave, size_t n_leave)
{
        for (size_t i = 0; i < n_leave; i++)
                if (xp_streq0(leave[i], resource))
                        return true;
        return false;
}

/* A label key Kubernetes accepts: an optional DNS subdomain prefix, '/', a qualified name. */
static bool valid_key(const char *key)
{
        const char *slash = strchr(key, '/');
        char prefix[XP_DNS1123_SUBDOMAIN_MAX + 1];
        size_t len = slash ? (size_t)(slash - key) : 0;

        if (slash && (len == 0 || len > XP_DNS1123_SUBDOMAIN_MAX))
                return false;
        if (slash) {
                memcpy(prefix, key, len);
                prefix[len] = '\0';
                if (xp_check_dns1123_subdomain(prefix, NULL) < 0)
                        return false;
        }
        return xp_check_qualified_name(slash ? slash + 1 : key, NULL) >= 0;
}

/* Sets prefix+suffix to value when it makes a valid key and value is not empty. */
static int set_label(json_t *labels, const char *prefix, const char *suffix, const char *value)
{
        char key[400];

        if (!value || !*value ||
            snprintf(key, sizeof(key), "%s%s", prefix, suffix) >= (int)sizeof(key) ||
            !valid_key(key))
                return 0;
        return json_object_set_new(labels, key, json_string(value)) < 0 ? -ENOMEM : 0;
}

static int set_count(json_t *labels, const char *prefix, const char *suffix, size_t count)
{
        char value[32];

        snprintf(value, sizeof(value), "%zu", count);
        return set_label(labels, prefix, suffix, value);
}

/* product, memory (MiB) and compute capability of device d under prefix ("nvidia.com/gpu."). */
static int describe(json_t *labels, const char *prefix, const struct xp_device *d)
{
        char value[XP_LABEL_VALUE_MAX + 1], major[16], minor[16];
        int r = 0;

        if (d->model)
                r |= set_label(labels, prefix, "product", xp_label_value_from(d->model, value));
        if (d->memory_bytes > 0) {
                snprintf(value, sizeof(value), "%" PRId64, d->memory_bytes >> 20);
                r |= set_label(labels, prefix, "memory", value);
        }
        if (d->compute_capability &&
            sscanf(d->compute_capability, "%15[0-9].%15[0-9]", major, minor) == 2) {
                r |= set_label(labels, prefix, "compute.major", major);
                r |= set_label(labels, prefix, "compute.minor", minor);
        }
        return r;
}

/* Whether device i is the first of its group, and how many the group has. same() groups. */
static bool first_of_group(const struct xp_node_inventory *inv,
                           size_t i,
                           bool (*same)(const struct xp_device *, const struct xp_device *),
                           size_t *ret_count)
{
        size_t count = 0;

        for (size_t k = 0; k < inv->devices.n; k++) {
                if (!same(&inv->devices.items[k], &inv->devices.items[i]))
                        continue;
                if (k < i)
                        return false;
                count++;
        }
        *ret_count = count;
        return true;
}

static bool same_resource(const struct xp_device *a, const struct xp_device *b)
{
        return a->resource_name && xp_streq0(a->resource_name, b->resource_name);
}

static bool same_kind(const struct xp_device *a, const struct xp_device *b)
{
        return a->kind != XP_DEVICE_KIND_UNSET && a->kind == b->kind;
}

/* Whether two devices of kind share a direct link (NVLink, Infinity Fabric, HCCS). */
static bool kind_has_direct_link(const struct xp_node_inventory *inv, enum xp_device_kind kind)
{
        for (size_t i = 0; i < inv->links.n; i++) {
                const struct xp_device_link *l = &inv->links.items[i];
                const struct xp_device *a = NULL, *b = NULL;

                if (l->level != XP_LINK_NVLINK)
                        continue;
                for (size_t k = 0; k < inv->devices.n; k++) {
                        const struct xp_device *d = &inv->devices.items[k];
                        if (xp_streq0(d->id, l->a))
                                a = d;
                        if (xp_streq0(d->id, l->b))
                                b = d;
                }
                if (a && b && a->kind == kind && b->kind == kind)
                        return true;
        }
        return false;
}

/* The nvidia.com/gpu.* style labels of every resource not left to another plugin. */
static int resource_labels(const struct xp_node_inventory *inv,
                           const char *const *leave,
                           size_t n_leave,
                           json_t *labels)
{
        for (size_t i = 0; i < inv->devices.n; i++) {
                const struct xp_device *d = &inv->devices.items[i];
                char prefix[300];
                size_t count;
                int r;

                if (!d->resource_name || left_to_others(d->resource_name, leave, n_leave) ||
                    !first_of_group(inv, i, same_resource, &count))
                        continue;
                snprintf(prefix, sizeof(prefix), "%s.", d->resource_name);
                r = set_label(labels, prefix, "present", "true");
                r |= set_count(labels, prefix, "count", count);
                r |= describe(labels, prefix, d);
                if (r < 0)
                        return -ENOMEM;
        }
        return 0;
}

/* xpool.io/<kind>.* of every kind, and the totals. */
static int kind_labels(const struct xp_node_inventory *inv, json_t *labels)
{
        char value[XP_LABEL_VALUE_MAX + 1];
        size_t total = 0;
        int r = 0;

        for (size_t i = 0; i < inv->devices.n; i++) {
                const struct xp_device *d = &inv->devices.items[i];
                const char *kind = xp_device_kind_to_string(d->kind);
                char prefix[64];
                size_t count;

                if (!kind || !first_of_group(inv, i, same_kind, &count))
                        continue;
                total += count;
                snprintf(prefix, sizeof(prefix), "xpool.io/%s.", kind);
                r |= set_count(labels, prefix, "count", count);
                r |= describe(labels, prefix, d);
                if (d->vendor)
                        r |= set_label(
                            labels, prefix, "vendor", xp_label_value_from(d->vendor, value));
                if (kind_has_direct_link(inv, d->kind))
                        r |= set_label(labels, prefix, "nvlink", "true");
        }
        if (total)
                r |= set_count(labels, "xpool.io/", "accelerator.count", total);
        if (inv->numa_nodes.n)
                r |= set_count(labels, "xpool.io/", "numa-nodes", inv->numa_nodes.n);
        return r < 0 ? -ENOMEM : 0;
}

int xp_kube_inventory_labels(const struct xp_node_inventory *inventory,
                             const char *const *leave,
                             size_t n_leave,
                             json_t **ret)
{
        json_auto_t *labels = json_object();

        if (!labels || resource_labels(inventory, leave, n_leave, labels) < 0 ||
            kind_labels(inventory, labels) < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(labels);
        return 0;
}
