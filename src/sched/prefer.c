/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The kubelet's preferred allocation through the scheduler's own device selection: one node's
 * devices of one resource become a devsel node (the kubelet's free devices free, the others held,
 * its must-include devices required) and devsel_choose() picks, as it does for xp_sched_place().
 */
#include <errno.h>
#include <string.h>

#include "devsel.h"
#include "xpool/sched.h"
#include "xpool/strutil.h"

struct group {
        size_t n;
        size_t slot[DEVSEL_MAX]; /* into inventory->devices */
        struct devsel_device dev[DEVSEL_MAX];
        uint16_t affinity[DEVSEL_MAX * DEVSEL_MAX];
};

static int group_find(const struct xp_node_inventory *inv, const struct group *g, const char *id)
{
        for (size_t i = 0; i < g->n; i++)
                if (xp_streq0(inv->devices.items[g->slot[i]].id, id))
                        return (int)i;
        return -1;
}

static int group_build(const struct xp_node_inventory *inv,
                       const char *resource,
                       struct group *g,
                       struct xp_error *err)
{
        g->n = 0;
        for (size_t i = 0; i < inv->devices.n; i++) {
                const struct xp_device *d = &inv->devices.items[i];

                if (!d->id || !xp_streq0(d->resource_name, resource))
                        continue;
                if (g->n == DEVSEL_MAX)
                        return xp_errorf(err,
                                         -EINVAL,
                                         "%s: more than %d devices on this node",
                                         resource,
                                         DEVSEL_MAX);
                g->slot[g->n] = i;
                g->dev[g->n] = (struct devsel_device){
                    .numa = d->numa_node.set ? (int)d->numa_node.value : -1,
                    .memory_bytes = d->memory_bytes > 0 ? d->memory_bytes : 0,
                    .used_milli = 1000, /* until the kubelet says it is available */
                    .healthy = d->health != XP_DEVICE_UNHEALTHY,
                };
                g->n++;
        }
        memset(g->affinity, 0, sizeof(g->affinity));
        for (size_t i = 0; i < inv->links.n; i++) {
                const struct xp_device_link *l = &inv->links.items[i];
                int a = group_find(inv, g, l->a), b = group_find(inv, g, l->b);

                if (a < 0 || b < 0 || a == b)
                        continue;
                g->affinity[(size_t)a * g->n + (size_t)b] =
                    g->affinity[(size_t)b * g->n + (size_t)a] =
                        devsel_link_affinity((int)l->level, l->nvlinks);
        }
        return 0;
}

/* Marks the listed ids free (or required); -EINVAL naming the first that is not a device. */
static int mark(const struct xp_node_inventory *inv,
                struct group *g,
                const char *resource,
                const char *const *ids,
                size_t n,
                bool required,
                struct xp_error *err)
{
        for (size_t i = 0; i < n; i++) {
                int k = group_find(inv, g, ids[i]);

                if (k < 0)
                        return xp_errorf(err,
                                         -EINVAL,
                                         "%s device %s: no such device on this node",
                                         resource,
                                         ids[i] ? ids[i] : "(null)");
                if (required && g->dev[k].used_milli != 0)
                        return xp_errorf(err,
                                         -EINVAL,
                                         "%s device %s must be included but is not available",
                                         resource,
                                         ids[i]);
                if (required)
                        g->dev[k].required = true;
                else
                        g->dev[k].used_milli = 0;
        }
        return 0;
}

int xp_sched_prefer_devices(const struct xp_node_inventory *inventory,
                            const struct xp_device_preference *request,
                            size_t *ret_devices,
                            struct xp_error *err)
{
        struct devsel_result res;
        struct devsel_node node;
        struct group g;
        int r;

        if (!inventory || !request || !request->resource || !ret_devices)
                return xp_errorf(err, -EINVAL, "no inventory, request or result");
        r = group_build(inventory, request->resource, &g, err);
        if (r < 0)
                return r;
        if (request->size == 0 || request->size > g.n)
                return xp_errorf(err,
                                 -EINVAL,
                                 "%s: %zu devices asked, the node has %zu",
                                 request->resource,
                                 request->size,
                                 g.n);
        if (request->n_must_include > request->size)
                return xp_errorf(err,
                                 -EINVAL,
                                 "%s: %zu devices must be included in an allocation of %zu",
                                 request->resource,
                                 request->n_must_include,
                                 request->size);
        r = mark(
            inventory, &g, request->resource, request->available, request->n_available, false, err);
        if (r >= 0)
                r = mark(inventory,
                         &g,
                         request->resource,
                         request->must_include,
                         request->n_must_include,
                         true,
                         err);
        if (r < 0)
                return r;

        node = (struct devsel_node){.n = g.n, .devices = g.dev, .affinity = g.affinity};
        r = devsel_choose(
            &node,
            &(struct devsel_request){.milli = (int64_t)request->size * 1000, .numa = -1},
            &res);
        if (r <= 0)
                return r == 0 ? 0
                              : xp_errorf(err, r, "%s: device selection failed", request->resource);
        for (size_t i = 0; i < res.n; i++)
                ret_devices[i] = g.slot[res.index[i]];
        return 1;
}
