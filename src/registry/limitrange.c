/* SPDX-License-Identifier: Apache-2.0 */
/*
 * LimitRange admission of a new pod (xpool/registry.h), as Kubernetes' LimitRanger: each
 * container without a limit or a request gets its namespace's default and defaultRequest, then
 * every container's requests and limits are checked against min and max, in Kubernetes' words
 * ("maximum cpu usage per Container is 1, but limit is 2").
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "registry_internal.h"
#include "xpool/doc.h"
#include "xpool/quantity.h"
#include "xpool/store.h"

/* Sets what map (a container's "limits" or "requests", made when absent) lacks from defaults. */
static int fill(json_t *container, const char *which, const json_t *defaults)
{
        const char *key;
        json_t *value;

        json_object_foreach((json_t *)defaults, key, value)
        {
                char path[300];

                snprintf(path, sizeof(path), "resources.%s", which);
                if (json_object_get(xp_json_object_at(container, path), key))
                        continue;
                if (!xp_json_object_at(container, path) &&
                    xp_json_set_at(container, path, json_object()) < 0)
                        return -ENOMEM;
                /* a copy: defaults come from the cache every create shares (kind_cache.c) */
                if (json_object_set_new(
                        json_object_get(json_object_get(container, "resources"), which),
                        key,
                        json_deep_copy(value)) < 0)
                        return -ENOMEM;
        }
        return 0;
}

/* One "Container" item's defaults: limits from default, requests from defaultRequest (or from
 * default where it has none, as Kubernetes defaults them). */
static int default_container(json_t *container, const json_t *item)
{
        const json_t *request = xp_json_object_at(item, "defaultRequest");
        int r = fill(container, "limits", xp_json_object_at(item, "default"));

        if (r >= 0)
                r = fill(container, "requests", request);
        if (r >= 0)
                r = fill(container, "requests", xp_json_object_at(item, "default"));
        return r;
}

/* "minimum cpu usage per Container is 100m, but request is 50m", or 0. */
static int check_bounds(const json_t *container, const json_t *item, struct xp_error *err)
{
        static const struct {
                const char *bound, *word, *side, *cmp;
        } checks[] = {
            {"min", "minimum", "resources.requests", "request"},
            {"max", "maximum", "resources.limits", "limit"},
        };

        for (size_t i = 0; i < 2; i++) {
                const char *key;
                json_t *value;

                json_t *bounds = (json_t *)xp_json_object_at(item, checks[i].bound);

                json_object_foreach(bounds, key, value)
                {
                        const json_t *have =
                            json_object_get(xp_json_object_at(container, checks[i].side), key);
                        struct xp_quantity bound, q;
                        char a[XP_QUANTITY_STRING_MAX], b[XP_QUANTITY_STRING_MAX];

                        if (!registry_quantity_of(value, &bound) || !registry_quantity_of(have, &q))
                                continue;
                        if (i == 0 ? xp_quantity_cmp(&q, &bound) >= 0
                                   : xp_quantity_cmp(&q, &bound) <= 0)
                                continue;
                        return xp_errorf(err,
                                         -EPERM,
                                         "%s %s usage per Container is %s, but %s is %s",
                                         checks[i].word,
                                         key,
                                         xp_quantity_format(&bound, a),
                                         checks[i].cmp,
                                         xp_quantity_format(&q, b));
                }
        }
        return 0;
}

int xp_registry_limitrange_apply(const json_t *ranges, json_t *pod, struct xp_error *err)
{
        json_t *containers = json_object_get(json_object_get(pod, "spec"), "containers");
        const json_t *range, *item;
        json_t *c;
        size_t i, j, k;
        int r = 0;

        json_array_foreach(ranges, i, range)
        {
                json_array_foreach(xp_json_at(range, "spec.limits"), j, item)
                {
                        if (strcmp(xp_json_str_at(item, "type", ""), "Container") != 0)
                                continue;
                        json_array_foreach(containers, k, c)
                        {
                                if (r >= 0)
                                        r = default_container(c, item);
                        }
                }
        }
        json_array_foreach(ranges, i, range)
        {
                json_array_foreach(xp_json_at(range, "spec.limits"), j, item)
                {
                        if (strcmp(xp_json_str_at(item, "type", ""), "Container") != 0)
                                continue;
                        json_array_foreach(containers, k, c)
                        {
                                if (r >= 0)
                                        r = check_bounds(c, item, err);
                        }
                }
        }
        return r;
}

int xp_registry_limitrange_admit(struct xp_registry *registry,
                                 const char *namespace,
                                 json_t *pod,
                                 struct xp_error *err)
{
        json_t *ranges = NULL;
        int r = kind_cache_list(&registry->limitranges, registry->store, namespace, &ranges, err);

        if (r >= 0)
                r = xp_registry_limitrange_apply(ranges, pod, err);
        json_decref(ranges);
        return r;
}
