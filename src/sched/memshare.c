/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shares by device memory: resources.limits["nvidia.com/gpu-memory"] = 20Gi asks for a share of
 * one nvidia.com/gpu device with at least that much memory. Devices differ across nodes (and
 * may within one), so the share in milli is computed per device: ceil(bytes * 1000 / device
 * memory). The placement then records the device with that milli like any share.
 */
#include <errno.h>
#include <string.h>

#include "sched_internal.h"

size_t memshare_base_len(const char *name)
{
        size_t len = strlen(name), suffix = sizeof(MEMSHARE_SUFFIX) - 1;
        const char *slash = strchr(name, '/');

        /* an extended resource with a device part before the suffix: "vendor.com/x-memory" */
        if (!slash || len <= suffix || (size_t)(slash - name) + 1 >= len - suffix ||
            memcmp(name + len - suffix, MEMSHARE_SUFFIX, suffix) != 0)
                return 0;
        return len - suffix;
}

/* The share of a device of memory_bytes that bytes take, in milli (ceil); 0 when the device's
 * memory is unknown (0) or smaller than bytes. */
static int64_t memshare_milli(int64_t bytes, int64_t memory_bytes)
{
        if (memory_bytes <= 0 || bytes <= 0 || bytes > memory_bytes)
                return 0;
        /* 128 bits: bytes * 1000 overflows above 8 PiB */
        return (int64_t)(((__int128)bytes * 1000 + memory_bytes - 1) / memory_bytes);
}

struct dgroup *memshare_group(const struct pctx *ctx, const struct snode *node)
{
        if (ctx->req.mem_bytes == 0)
                return NULL;
        if (ctx->req.mem_base == RES_ACCEL)
                return accel_pick_group(ctx, node, NULL);
        return node_group(node, ctx->req.mem_base);
}

bool memshare_device_fits(const struct dgroup *g,
                          size_t i,
                          int64_t bytes,
                          const struct accel_constraints *ac,
                          bool shared_only)
{
        const struct devsel_device *d = &g->dev[i];
        int64_t milli;

        if (!d->healthy || (shared_only && d->used_milli == 0))
                return false;
        if (ac && !accel_device_matches(ac, g, i))
                return false;
        milli = memshare_milli(bytes, d->memory_bytes);
        return milli > 0 && 1000 - d->used_milli >= milli;
}

bool memshare_group_fits(const struct dgroup *g,
                         int64_t bytes,
                         const struct accel_constraints *ac,
                         bool shared_only)
{
        for (size_t i = 0; i < g->n; i++)
                if (memshare_device_fits(g, i, bytes, ac, shared_only))
                        return true;
        return false;
}

int memshare_choose(const struct dgroup *g,
                    int64_t bytes,
                    const struct accel_constraints *ac,
                    int numa,
                    struct devsel_result *ret)
{
        struct devsel_device devs[DEVSEL_MAX];
        struct devsel_result best = {0}, res;
        bool found = false;

        if (g->n > DEVSEL_MAX)
                return -EINVAL;
        /* one devsel call per memory size, the other sizes hidden: most nodes have one size */
        for (size_t s = 0; s < g->n; s++) {
                int64_t size = g->dev[s].memory_bytes, milli = memshare_milli(bytes, size);
                struct devsel_node dn = {.n = g->n, .devices = devs, .affinity = g->affinity};
                struct devsel_request dr = {.milli = milli, .numa = numa};
                bool seen = false;
                int r;

                for (size_t k = 0; k < s && !seen; k++)
                        seen = g->dev[k].memory_bytes == size;
                if (seen || milli == 0)
                        continue;
                for (size_t d = 0; d < g->n; d++) {
                        devs[d] = g->dev[d];
                        devs[d].healthy = devs[d].healthy && devs[d].memory_bytes == size &&
                                          (!ac || accel_device_matches(ac, g, d));
                }
                r = devsel_choose(&dn, &dr, &res);
                if (r < 0)
                        return r;
                if (r > 0 && (!found || res.score > best.score)) {
                        best = res;
                        found = true;
                }
        }
        if (!found)
                return 0;
        *ret = best;
        return 1;
}
