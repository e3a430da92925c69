/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The kubelet's local storage eviction decisions (ephemeral.h), in its order and words
 * (pkg/kubelet/eviction: emptyDirLimitEviction, podEphemeralStorageLimitEviction,
 * containerEphemeralStorageLimitEviction). Pure.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "ephemeral.h"
#include "xpool/quantity.h"
#include "xpool/strutil.h"

#define EPHEMERAL_STORAGE "ephemeral-storage"

/* A quantity of JSON (a string, or a number a client sent): false when absent or bad. */
static bool quantity_of(const json_t *v, struct xp_quantity *q)
{
        if (json_is_string(v))
                return xp_quantity_parse(json_string_value(v), q, NULL) >= 0;
        return json_is_number(v) && xp_quantity_from_double(json_number_value(v), q, NULL) >= 0;
}

/* Whether bytes is above q (a limit), which may be fractional. */
static bool above(uint64_t bytes, const struct xp_quantity *q)
{
        struct xp_quantity used =
            xp_quantity_from_int(bytes > INT64_MAX ? INT64_MAX : (int64_t)bytes);

        return xp_quantity_cmp(&used, q) > 0;
}

static uint64_t use_of(const struct xp_pod_disk_use *use, bool volume, const char *name)
{
        size_t n = volume ? use->n_volumes : use->n_containers;

        for (size_t i = 0; i < n; i++)
                if (xp_streq0(volume ? use->volumes[i].name : use->containers[i].name, name))
                        return volume ? use->volumes[i].bytes : use->containers[i].bytes;
        return 0;
}

/* 1 with *ret, or -ENOMEM: asprintf's result as the verdict's */
static int verdict_of(int asprintf_result)
{
        return asprintf_result < 0 ? -ENOMEM : 1;
}

static int empty_dirs(const json_t *spec, const struct xp_pod_disk_use *use, char **ret)
{
        char limit[XP_QUANTITY_STRING_MAX];
        const json_t *v;
        size_t i;

        json_array_foreach(json_object_get(spec, "volumes"), i, v)
        {
                const json_t *ed = json_object_get(v, "emptyDir");
                const char *name = json_string_value(json_object_get(v, "name"));
                struct xp_quantity size;

                if (!ed || !name || !quantity_of(json_object_get(ed, "sizeLimit"), &size) ||
                    xp_quantity_sign(&size) <= 0 || !above(use_of(use, true, name), &size))
                        continue;
                return verdict_of(
                    asprintf(ret,
                             "Usage of EmptyDir volume \"%s\" exceeds the limit \"%s\". ",
                             name,
                             xp_quantity_format(&size, limit)));
        }
        return 0;
}

static bool limit_of(const json_t *c, struct xp_quantity *q)
{
        return quantity_of(
            json_object_get(json_object_get(json_object_get(c, "resources"), "limits"),
                            EPHEMERAL_STORAGE),
            q);
}

/* The pod's limit as the kubelet's PodLimits sums it: the containers', or an init container's
 * when larger. false when no container has one. */
static bool pod_limit(const json_t *spec, struct xp_quantity *total)
{
        struct xp_quantity sum = xp_quantity_from_int(0), q;
        bool found = false;
        const json_t *c;
        size_t i;

        json_array_foreach(json_object_get(spec, "containers"), i, c)
        {
                if (limit_of(c, &q) && xp_quantity_add(&sum, &q, &sum) >= 0)
                        found = true;
        }
        json_array_foreach(json_object_get(spec, "initContainers"), i, c)
        {
                if (limit_of(c, &q) && xp_quantity_cmp(&q, &sum) > 0) {
                        sum = q;
                        found = true;
                }
        }
        *total = sum;
        return found;
}

static uint64_t total_use(const struct xp_pod_disk_use *use)
{
        uint64_t t = 0;

        for (size_t i = 0; i < use->n_volumes; i++)
                t += use->volumes[i].bytes;
        for (size_t i = 0; i < use->n_containers; i++)
                t += use->containers[i].bytes;
        return t;
}

static int containers(const json_t *spec, const struct xp_pod_disk_use *use, char **ret)
{
        char limit[XP_QUANTITY_STRING_MAX];
        const json_t *c;
        size_t i;

        json_array_foreach(json_object_get(spec, "containers"), i, c)
        {
                const char *name = json_string_value(json_object_get(c, "name"));
                struct xp_quantity q;

                if (name && limit_of(c, &q) && above(use_of(use, false, name), &q))
                        return verdict_of(asprintf(
                            ret,
                            "Container %s exceeded its local ephemeral storage limit \"%s\". ",
                            name,
                            xp_quantity_format(&q, limit)));
        }
        return 0;
}

bool xp_agent_pod_evictable(const json_t *pod)
{
        const json_t *prio = json_object_get(json_object_get(pod, "spec"), "priority");

        return !json_is_integer(prio) || json_integer_value(prio) < XP_SYSTEM_CRITICAL_PRIORITY;
}

size_t xp_agent_pod_walk_budget(size_t pass_max, size_t floor, size_t n_pods)
{
        size_t share = n_pods ? pass_max / n_pods : pass_max;

        return share > floor ? share : floor;
}

/* Whether the pod has a limit the agent enforces: an on-disk emptyDir's sizeLimit, an
 * ephemeral-storage limit. */
static bool has_limit(const json_t *spec)
{
        struct xp_quantity q;
        const json_t *v;
        size_t i;

        json_array_foreach(json_object_get(spec, "volumes"), i, v)
        {
                const json_t *ed = json_object_get(v, "emptyDir");

                if (ed && !xp_streq0(json_string_value(json_object_get(ed, "medium")), "Memory") &&
                    quantity_of(json_object_get(ed, "sizeLimit"), &q) && xp_quantity_sign(&q) > 0)
                        return true;
        }
        return pod_limit(spec, &q);
}

static int truncated(const json_t *spec, const struct xp_pod_disk_use *use, char **ret)
{
        if (!use->truncated || !has_limit(spec))
                return 0;
        if (use->too_deep)
                return verdict_of(asprintf(ret,
                                           "Pod ephemeral local storage usage exceeds what the "
                                           "agent measures (deeper than %d directories). ",
                                           XP_DISK_WALK_MAX_DEPTH));
        return verdict_of(asprintf(ret,
                                   "Pod ephemeral local storage usage exceeds what the agent "
                                   "measures (more than %zu entries). ",
                                   use->max_entries));
}

int xp_agent_ephemeral_verdict(const json_t *pod,
                               const struct xp_pod_disk_use *use,
                               char **ret_message)
{
        const json_t *spec = json_object_get(pod, "spec");
        char text[XP_QUANTITY_STRING_MAX];
        struct xp_quantity limit;
        int r;

        *ret_message = NULL;
        r = empty_dirs(spec, use, ret_message);
        if (r != 0)
                return r;
        if (pod_limit(spec, &limit) && above(total_use(use), &limit))
                return verdict_of(asprintf(
                    ret_message,
                    "Pod ephemeral local storage usage exceeds the total limit of containers %s. ",
                    xp_quantity_format(&limit, text)));
        r = containers(spec, use, ret_message);
        if (r != 0)
                return r;
        return truncated(spec, use, ret_message);
}
