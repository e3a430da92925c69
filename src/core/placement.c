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

int xp_placement_from_json(const char *text, struct xp_placement *ret, struct xp_error *err)
{
        _cleanup_(xp_placement_done) struct xp_placement pl = {.numa_node = -1};
        json_error_t jerr;
        json_t *root, *v, *devs;
        int r = 0;

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
        if (!json_is_object(root)) {
                r = bad(err, "not a JSON object");
                goto out;
        }
        v = json_object_get(root, "node");
        if (!json_is_string(v) || json_string_length(v) == 0) {
                r = bad(err, "node: must be a non-empty string");
                goto out;
        }
        pl.node = strdup(json_string_value(v));
        if (!pl.node) {
                r = -ENOMEM;
                goto out;
        }
        devs = json_object_get(root, "devices");
        if (devs && !json_is_array(devs)) {
                r = bad(err, "devices: must be an array");
                goto out;
        }
        if (json_array_size(devs) > PLACEMENT_DEVICES_MAX) {
                r = bad(err, "devices: more than 256 entries");
                goto out;
        }
        if (json_array_size(devs) > 0) {
                pl.devices.items = calloc(json_array_size(devs), sizeof(*pl.devices.items));
                if (!pl.devices.items) {
                        r = -ENOMEM;
                        goto out;
                }
        }
        for (size_t i = 0; i < json_array_size(devs); i++) {
                json_t *d = json_array_get(devs, i);
                json_t *res = json_object_get(d, "resource"), *id = json_object_get(d, "id");
                json_t *idx = json_object_get(d, "index"), *milli = json_object_get(d, "milli");
                struct xp_placement_device *pd = &pl.devices.items[pl.devices.n];
                const char *field = !json_is_object(d)                                 ? ""
                                    : !json_is_string(res) || !json_string_length(res) ? ".resource"
                                    : !json_is_string(id) || !json_string_length(id)   ? ".id"
                                    : idx && !json_is_integer(idx)                     ? ".index"
                                    : !json_is_integer(milli) || json_integer_value(milli) <= 0 ||
                                            json_integer_value(milli) > 1000
                                        ? ".milli"
                                        : NULL;
                if (field) {
                        r = xp_errorf(err,
                                      -EINVAL,
                                      "%s: devices[%zu]%s: %s",
                                      XP_PLACEMENT_ANNOTATION,
                                      i,
                                      field,
                                      field[0] == '\0'  ? "must be an object"
                                      : field[1] == 'm' ? "must be an integer from 1 to 1000"
                                      : field[2] == 'n' ? "must be an integer"
                                                        : "must be a non-empty string");
                        goto out;
                }
                pd->resource = strdup(json_string_value(res));
                pd->id = strdup(json_string_value(id));
                pd->index = idx ? json_integer_value(idx) : -1;
                pd->milli = json_integer_value(milli);
                pl.devices.n++;
                if (!pd->resource || !pd->id) {
                        r = -ENOMEM;
                        goto out;
                }
        }
        v = json_object_get(root, "cpus");
        if (v && !json_is_null(v)) {
                if (!json_is_string(v)) {
                        r = bad(err, "cpus: must be a cpulist string");
                        goto out;
                }
                pl.cpus = strdup(json_string_value(v));
                if (!pl.cpus) {
                        r = -ENOMEM;
                        goto out;
                }
        }
        v = json_object_get(root, "numaNode");
        if (v) {
                if (!json_is_integer(v) || json_integer_value(v) < -1) {
                        r = bad(err, "numaNode: must be an integer, -1 for none");
                        goto out;
                }
                pl.numa_node = json_integer_value(v);
        }
        *ret = pl;
        pl = (struct xp_placement){0};
out:
        json_decref(root);
        return r;
}
