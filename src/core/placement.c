/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The placement annotation (xpool.io/placement), written through the Binding and read by the
 * agent and by xp_sched_pod_add():
 *   {"node":"gpu-1","devices":[{"resource":"nvidia.com/gpu","id":"GPU-..","index":0,"milli":1000}],
 *    "cpus":"0-11","numaNode":0}
 */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "xpool/placement.h"
#include "xpool/strutil.h"

#define PLACEMENT_DEVICES_MAX 256
#define PLACEMENT_TEXT_MAX    65536

void xp_placement_done(struct xp_placement *placement)
{
        if (!placement)
                return;
        free(placement->node);
        for (size_t i = 0; i < placement->devices.n; i++) {
                free(placement->devices.items[i].resource);
                free(placement->devices.items[i].id);
        }
        free(placement->devices.items);
        free(placement->cpus);
        *placement = (struct xp_placement){.numa_node = -1};
}

int xp_placement_to_json(const struct xp_placement *placement, char **ret)
{
        json_t *root = json_object(), *devs = json_array();
        char *text = NULL;
        int r = -ENOMEM;

        if (!root || !devs)
                goto out;
        if (json_object_set_new(root, "node", json_string(placement->node ? placement->node : "")) <
            0)
                goto out;
        for (size_t i = 0; i < placement->devices.n; i++) {
                const struct xp_placement_device *d = &placement->devices.items[i];
                json_t *o = json_pack("{s:s, s:s, s:I, s:I}",
                                      "resource",
                                      d->resource ? d->resource : "",
                                      "id",
                                      d->id ? d->id : "",
                                      "index",
                                      (json_int_t)d->index,
                                      "milli",
                                      (json_int_t)d->milli);
                if (!o || json_array_append_new(devs, o) < 0)
                        goto out;
        }
        if (json_object_set(root, "devices", devs) < 0)
                goto out;
        if (placement->cpus && json_object_set_new(root, "cpus", json_string(placement->cpus)) < 0)
                goto out;
        if (json_object_set_new(root, "numaNode", json_integer(placement->numa_node)) < 0)
                goto out;
        text = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER);
        if (!text)
                goto out;
        *ret = text;
        r = 0;
out:
        json_decref(devs);
        json_decref(root);
        return r;
}

static int bad(struct xp_error *err, const char *what)
{
        return xp_errorf(err, -EINVAL, "%s: %s", XP_PLACEMENT_ANNOTATION, what);
}

/* One entry of "devices" into *ret (whose strings the caller frees, set or not). */
static int
read_device(const json_t *d, size_t i, struct xp_placement_device *ret, struct xp_error *err)
{
        json_t *res = json_object_get(d, "resource"), *id = json_object_get(d, "id");
        json_t *idx = json_object_get(d, "index"), *milli = json_object_get(d, "milli");
        const char *field = !json_is_object(d)                                 ? ""
                            : !json_is_string(res) || !json_string_length(res) ? ".resource"
                            : !json_is_string(id) || !json_string_length(id)   ? ".id"
                            : idx && !json_is_integer(idx)                     ? ".index"
                            : !json_is_integer(milli) || json_integer_value(milli) <= 0 ||
                                    json_integer_value(milli) > 1000
                                ? ".milli"
                                : NULL;

        if (field)
                return xp_errorf(err,
                                 -EINVAL,
                                 "%s: devices[%zu]%s: %s",
                                 XP_PLACEMENT_ANNOTATION,
                                 i,
                                 field,
                                 field[0] == '\0'  ? "must be an object"
                                 : field[1] == 'm' ? "must be an integer from 1 to 1000"
                                 : field[2] == 'n' ? "must be an integer"
                                                   : "must be a non-empty string");
        ret->resource = strdup(json_string_value(res));
        ret->id = strdup(json_string_value(id));
        ret->index = idx ? json_integer_value(idx) : -1;
        ret->milli = json_integer_value(milli);
        return ret->resource && ret->id ? 0 : -ENOMEM;
}

static int read_devices(const json_t *devs, struct xp_placement *pl, struct xp_error *err)
{
        if (devs && !json_is_array(devs))
                return bad(err, "devices: must be an array");
        if (json_array_size(devs) > PLACEMENT_DEVICES_MAX)
                return bad(err, "devices: more than 256 entries");
        if (json_array_size(devs) == 0)
                return 0;
        pl->devices.items = calloc(json_array_size(devs), sizeof(*pl->devices.items));
        if (!pl->devices.items)
                return -ENOMEM;
        for (size_t i = 0; i < json_array_size(devs); i++) {
                int r = read_device(json_array_get(devs, i), i, &pl->devices.items[i], err);

                pl->devices.n++; /* what it holds is freed with pl */
                if (r < 0)
                        return r;
        }
        return 0;
}

static int read_node(const json_t *root, struct xp_placement *pl, struct xp_error *err)
{
        const json_t *v = json_object_get(root, "node");

        if (!json_is_string(v) || json_string_length(v) == 0)
                return bad(err, "node: must be a non-empty string");
        pl->node = strdup(json_string_value(v));
        return pl->node ? 0 : -ENOMEM;
}

static int read_cpus(const json_t *root, struct xp_placement *pl, struct xp_error *err)
{
        const json_t *v = json_object_get(root, "cpus");
        if (v && !json_is_null(v)) {
                if (!json_is_string(v))
                        return bad(err, "cpus: must be a cpulist string");
                pl->cpus = strdup(json_string_value(v));
                if (!pl->cpus)
                        return -ENOMEM;
        }
        v = json_object_get(root, "numaNode");
        if (v) {
                if (!json_is_integer(v) || json_integer_value(v) < -1)
                        return bad(err, "numaNode: must be an integer, -1 for none");
                pl->numa_node = json_integer_value(v);
        }
        return 0;
}

int xp_placement_from_json(const char *text, struct xp_placement *ret, struct xp_error *err)
{
        _cleanup_(xp_placement_done) struct xp_placement pl = {.numa_node = -1};
        json_error_t jerr;
        json_t *root;
        int r;

        if (strlen(text) > PLACEMENT_TEXT_MAX)
                return bad(err, "longer than 65536 bytes");
        root = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
        if (!root)
                return xp_errorf(err,
                                 -EINVAL,
                                 "%s: %s at line %d column %d",
                                 XP_PLACEMENT_ANNOTATION,
                                 jerr.text,
                                 jerr.line,
                                 jerr.column);
        if (!json_is_object(root))
                r = bad(err, "not a JSON object");
        else
                r = read_node(root, &pl, err);
        if (r >= 0)
                r = read_devices(json_object_get(root, "devices"), &pl, err);
        if (r >= 0)
                r = read_cpus(root, &pl, err);
        json_decref(root);
        if (r < 0)
                return r;
        *ret = pl;
        pl = (struct xp_placement){0};
        return 0;
}
