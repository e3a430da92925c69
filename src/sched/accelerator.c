/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Vendor-neutral requests: xpool.io/accelerator: N with optional constraint annotations. On
 * each node the candidates are the device resources whose devices match (kind, memory, fp16
 * TFLOPS); one resource (so one kind) serves the pod, the vendor preference orders them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sched_internal.h"
#include "xpool/strutil.h"

void accel_done(struct accel_constraints *ac)
{
        for (size_t i = 0; i < ac->n_vendors; i++)
                free(ac->vendors[i]);
        free(ac->vendors);
        ac->vendors = NULL;
        ac->n_vendors = 0;
}

/* Splits a comma list, trimming spaces; empty items are errors. */
static int
split_list(const char *text, const char *what, char ***ret, size_t *ret_n, struct xp_error *err)
{
        char **items = NULL;
        size_t n = 0;
        const char *p = text;

        for (;;) {
                const char *end = strchr(p, ',');
                size_t len = end ? (size_t)(end - p) : strlen(p);
                const char *s = p;
                char **m;

                while (len > 0 && *s == ' ') {
                        s++;
                        len--;
                }
                while (len > 0 && s[len - 1] == ' ')
                        len--;
                if (len == 0 || n >= 16) {
                        for (size_t i = 0; i < n; i++)
                                free(items[i]);
                        free(items);
                        return xp_errorf(err,
                                         -EINVAL,
                                         "metadata.annotations[%s]: %s in \"%s\"",
                                         what,
                                         len == 0 ? "empty item" : "more than 16 items",
                                         text);
                }
                m = realloc(items, (n + 1) * sizeof(*m));
                if (!m || !(m[n] = strndup(s, len))) {
                        items = m ? m : items;
                        for (size_t i = 0; i < n; i++)
                                free(items[i]);
                        free(items);
                        return -ENOMEM;
                }
                items = m;
                n++;
                if (!end)
                        break;
                p = end + 1;
        }
        *ret = items;
        *ret_n = n;
        return 0;
}

int accel_parse(const struct xp_pod *pod, struct accel_constraints *ret, struct xp_error *err)
{
        const struct xp_strmap *ann = &pod->metadata.annotations;
        const char *kinds = xp_strmap_get(ann, XP_ACCELERATOR_KINDS_ANNOTATION);
        const char *mem = xp_strmap_get(ann, XP_ACCELERATOR_MEMORY_ANNOTATION);
        const char *tflops = xp_strmap_get(ann, XP_ACCELERATOR_TFLOPS_ANNOTATION);
        const char *vendors = xp_strmap_get(ann, XP_ACCELERATOR_VENDORS_ANNOTATION);
        struct accel_constraints ac = {0};
        int r;

        if (kinds) {
                char **items;
                size_t n;
                r = split_list(kinds, XP_ACCELERATOR_KINDS_ANNOTATION, &items, &n, err);
                if (r < 0)
                        return r;
                for (size_t i = 0; i < n; i++) {
                        int k = xp_device_kind_from_string(items[i]);
                        if (k < 0)
                                r = xp_errorf(
                                    err,
                                    -EINVAL,
                                    "metadata.annotations[%s]: unknown kind \"%s\" (gpu, npu, fpga, vpu, accelerator)",
                                    XP_ACCELERATOR_KINDS_ANNOTATION,
                                    items[i]);
                        else
                                ac.kinds |= 1u << k;
                }
                for (size_t i = 0; i < n; i++)
                        free(items[i]);
                free(items);
                if (r < 0)
                        return r;
        }
        if (mem) {
                struct xp_quantity q;
                int64_t bytes;
                if (xp_quantity_parse(mem, &q, NULL) < 0 ||
                    xp_quantity_to_int_ceil(&q, &bytes) < 0 || bytes < 0)
                        return xp_errorf(err,
                                         -EINVAL,
                                         "metadata.annotations[%s]: \"%s\" is not a valid quantity",
                                         XP_ACCELERATOR_MEMORY_ANNOTATION,
                                         mem);
                ac.min_memory = bytes;
        }
        if (tflops) {
                char *end;
                double v = strtod(tflops, &end);
                if (end == tflops || *end || !(v >= 0) || v > 1e9)
                        return xp_errorf(
                            err,
                            -EINVAL,
                            "metadata.annotations[%s]: \"%s\" is not a non-negative number",
                            XP_ACCELERATOR_TFLOPS_ANNOTATION,
                            tflops);
                ac.min_tflops = v;
        }
        if (vendors) {
                r = split_list(
                    vendors, XP_ACCELERATOR_VENDORS_ANNOTATION, &ac.vendors, &ac.n_vendors, err);
                if (r < 0)
                        return r;
        }
        *ret = ac;
        return 0;
}

bool accel_device_matches(const struct accel_constraints *ac, const struct dgroup *g, size_t i)
{
        if (ac->kinds && !(ac->kinds & (1u << g->kind)))
                return false;
        if (g->dev[i].memory_bytes < ac->min_memory)
                return false;
        return g->fp16[i] >= ac->min_tflops;
}

size_t accel_vendor_rank(const struct accel_constraints *ac, const char *vendor)
{
        for (size_t i = 0; i < ac->n_vendors; i++)
                if (vendor && strcasecmp(ac->vendors[i], vendor) == 0)
                        return i;
        return ac->n_vendors;
}

/*
 * The group that serves the pod's xpool.io/accelerator (or xpool.io/accelerator-memory) request
 * on node: among the groups with enough matching free devices (or a matching device with room
 * for the share), the preferred
 * vendor, then the most free devices. NULL when none.
 */
struct dgroup *accel_pick_group(const struct pctx *ctx, const struct snode *node, int64_t *ret_rank)
{
        const struct podreq *req = &ctx->req;
        struct dgroup *best = NULL;
        size_t best_rank = SIZE_MAX;
        int best_free = -1;
        /* without constraints on the devices every healthy one matches: the group's own counts
         * say the same as the loop below, for each of the many nodes a placement checks */
        bool plain = !req->ac.kinds && req->ac.min_memory <= 0 && req->ac.min_tflops <= 0 &&
                     !(req->mem_bytes > 0 && req->mem_base == RES_ACCEL);

        for (size_t k = 0; k < node->n_groups; k++) {
                struct dgroup *g = &node->groups[k];
                int free_whole = plain ? g->free_whole : 0;
                bool share = plain && g->max_free >= req->accel;
                size_t rank;

                if (g->kind == XP_DEVICE_KIND_UNSET)
                        continue;
                for (size_t i = 0; !plain && i < g->n; i++) {
                        if (!g->dev[i].healthy || !accel_device_matches(&req->ac, g, i))
                                continue;
                        if (g->dev[i].used_milli == 0)
                                free_whole++;
                        if (req->mem_bytes > 0 && req->mem_base == RES_ACCEL
                                ? memshare_device_fits(g, i, req->mem_bytes, NULL, false)
                                : 1000 - g->dev[i].used_milli >= req->accel)
                                share = true;
                }
                if (req->accel >= 1000 ? free_whole < req->accel / 1000 : !share)
                        continue;
                rank = accel_vendor_rank(&req->ac, g->n ? g->vendors[0] : NULL);
                if (rank < best_rank || (rank == best_rank && free_whole > best_free)) {
                        best = g;
                        best_rank = rank;
                        best_free = free_whole;
                }
        }
        if (ret_rank)
                *ret_rank = best ? (int64_t)best_rank : 0;
        return best;
}
