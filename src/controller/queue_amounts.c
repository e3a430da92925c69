/* SPDX-License-Identifier: Apache-2.0 */
/* A pod's requests as the queues count them, from its JSON (what the informer hands over). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "queue_state.h"
#include "xpool/quantity.h"

void amounts_free(struct xp_queue_amount *a, size_t n)
{
        for (size_t i = 0; i < n; i++)
                free((char *)a[i].resource);
        free(a);
}

/* v of name in a (added when absent; sum or max). -ENOMEM, -E2BIG. */
static int
amount_put(struct xp_queue_amount *a, size_t *n, const char *name, int64_t milli, bool sum)
{
        for (size_t i = 0; i < *n; i++)
                if (strcmp(a[i].resource, name) == 0) {
                        a[i].milli =
                            sum ? a[i].milli + milli : (milli > a[i].milli ? milli : a[i].milli);
                        return 0;
                }
        if (*n == XP_QUEUE_RESOURCES_MAX)
                return -E2BIG;
        a[*n].resource = strdup(name);
        if (!a[*n].resource)
                return -ENOMEM;
        a[(*n)++].milli = milli;
        return 0;
}

/* One container's requests (limits where a request is missing) into a. */
static int container(const json_t *c, struct xp_queue_amount *a, size_t *n, bool sum)
{
        const json_t *res = json_object_get(c, "resources");
        const json_t *req = json_object_get(res, "requests"), *lim = json_object_get(res, "limits");
        const char *name;
        const json_t *v;

        for (int pass = 0; pass < 2; pass++)
                json_object_foreach((json_t *)(pass ? lim : req), name, v)
                {
                        struct xp_quantity q;
                        int64_t milli;
                        int r;

                        if (pass && json_object_get(req, name))
                                continue;
                        if (!json_is_string(v) ||
                            xp_quantity_parse(json_string_value(v), &q, NULL) < 0 ||
                            xp_quantity_to_milli(&q, &milli) < 0 || milli <= 0)
                                continue; /* validated on the way in: not ours to refuse */
                        r = amount_put(a, n, name, milli, sum);
                        if (r == -ENOMEM)
                                return r;
                }
        return 0;
}

int pod_amounts(const json_t *pod, struct xp_queue_amount **ret, size_t *ret_n)
{
        const json_t *spec = json_object_get(pod, "spec"), *c;
        struct xp_queue_amount *a = calloc(XP_QUEUE_RESOURCES_MAX, sizeof(*a)),
                               init[XP_QUEUE_RESOURCES_MAX];
        size_t n = 0, n_init = 0, i;
        int r = 0;

        if (!a)
                return -ENOMEM;
        json_array_foreach(json_object_get(spec, "containers"), i, c) if (r >= 0) r =
            container(c, a, &n, true);
        json_array_foreach(json_object_get(spec, "initContainers"), i, c)
        {
                size_t k = 0;
                struct xp_queue_amount one[XP_QUEUE_RESOURCES_MAX];
                if (r >= 0)
                        r = container(c, one, &k, true);
                for (size_t j = 0; j < k; j++) {
                        if (r >= 0 &&
                            amount_put(init, &n_init, one[j].resource, one[j].milli, false) ==
                                -ENOMEM)
                                r = -ENOMEM;
                        free((char *)one[j].resource);
                }
        }
        for (size_t j = 0; j < n_init; j++) {
                if (r >= 0 && amount_put(a, &n, init[j].resource, 0, false) == -ENOMEM)
                        r = -ENOMEM;
                for (size_t k = 0; r >= 0 && k < n; k++)
                        if (strcmp(a[k].resource, init[j].resource) == 0 &&
                            init[j].milli > a[k].milli)
                                a[k].milli = init[j].milli;
                free((char *)init[j].resource);
        }
        if (r < 0) {
                amounts_free(a, n);
                return r;
        }
        *ret = a;
        *ret_n = n;
        return 0;
}

int resources_amounts(const json_t *resources, struct xp_queue_amount **ret, size_t *ret_n)
{
        json_t *c = json_pack(
            "{s:{s:O}}", "resources", "requests", resources ? (json_t *)resources : json_null());
        struct xp_queue_amount *a = calloc(XP_QUEUE_RESOURCES_MAX, sizeof(*a));
        size_t n = 0;
        int r = c && a ? container(c, a, &n, true) : -ENOMEM;

        json_decref(c);
        if (r < 0) {
                amounts_free(a, n);
                return r;
        }
        *ret = a;
        *ret_n = n;
        return 0;
}
