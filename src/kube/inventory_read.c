/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Reading the inventory annotation back (inventory_codec.c writes it): the compact form is
 * expanded into the JSON of a Node's status.xpool, carrying each device's omitted fields forward
 * and turning the link matrix into pairs, and the codec decodes and validates that. The text
 * comes from the API, where any node writes its own Node: every size is bounded and every
 * mistake named by its place.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube_internal.h"
#include "xpool/codec.h"
#include "xpool/kubeinventory.h"

struct reader {
        struct xp_error *err;
        json_t *out_devices;
        json_t *out_links;
        struct xp_kube_allocation *alloc;
        /* the previous device's carried fields */
        json_t *carried;
};

static int string_member(struct reader *rd,
                         const json_t *o,
                         const char *where,
                         size_t i,
                         const char *key,
                         const char **ret)
{
        const json_t *v = json_object_get(o, key);

        *ret = NULL;
        if (!v)
                return 0;
        if (!json_is_string(v))
                return xp_errorf(rd->err, -EINVAL, "%s[%zu].%s: must be a string", where, i, key);
        if (json_string_length(v) > XP_INVENTORY_STRING_MAX)
                return xp_errorf(rd->err,
                                 -E2BIG,
                                 "%s[%zu].%s: longer than %d bytes",
                                 where,
                                 i,
                                 key,
                                 XP_INVENTORY_STRING_MAX);
        *ret = json_string_value(v);
        return 0;
}

static int int_member(
    struct reader *rd, const json_t *o, const char *where, size_t i, const char *key, bool *found)
{
        const json_t *v = json_object_get(o, key);

        *found = v != NULL;
        if (v && (!json_is_integer(v) || json_integer_value(v) < 0))
                return xp_errorf(
                    rd->err, -EINVAL, "%s[%zu].%s: must be a non-negative integer", where, i, key);
        return 0;
}

/* The fields a device carries forward: compact name, status.xpool name, JSON type. */
static const struct {
        const char *key, *full;
        bool number;
} carried_fields[] = {
    {"resource", "resourceName", false},
    {"kind", "kind", false},
    {"vendor", "vendor", false},
    {"model", "model", false},
    {"computeCapability", "computeCapability", false},
    {"memoryBytes", "memoryBytes", true},
    {"fp16TFLOPS", "fp16TFLOPS", true},
};

/* The device's carried fields: its own where it has them (null clears one), else the previous
 * device's. */
static int carry(struct reader *rd, const json_t *d, size_t i, json_t *out)
{
        for (size_t k = 0; k < XP_ELEMENTSOF(carried_fields); k++) {
                const char *key = carried_fields[k].key, *s;
                const json_t *v = json_object_get(d, key);
                int r;

                if (json_is_null(v)) {
                        json_object_del(rd->carried, key);
                        continue;
                }
                if (v && carried_fields[k].number &&
                    (!json_is_number(v) || json_number_value(v) < 0))
                        return xp_errorf(rd->err,
                                         -EINVAL,
                                         "devices[%zu].%s: must be a non-negative number",
                                         i,
                                         key);
                if (v && !carried_fields[k].number &&
                    (r = string_member(rd, d, "devices", i, key, &s)) < 0)
                        return r;
                if (v && json_object_set(rd->carried, key, (json_t *)v) < 0)
                        return -ENOMEM;
                v = json_object_get(rd->carried, key);
                if (v && json_object_set(out, carried_fields[k].full, (json_t *)v) < 0)
                        return -ENOMEM;
        }
        return 0;
}

/* "namespace/name" of the pod holding the device into the allocation. */
static int add_holder(struct reader *rd, const json_t *d, size_t i, const char *id)
{
        const char *pod, *slash, *resource;
        _cleanup_free_ char *ns = NULL;
        int r = string_member(rd, d, "devices", i, "pod", &pod);

        if (r < 0 || !pod || !rd->alloc)
                return r;
        slash = strchr(pod, '/');
        if (!slash || slash == pod || !slash[1] || strchr(slash + 1, '/'))
                return xp_errorf(
                    rd->err, -EINVAL, "devices[%zu].pod: \"%s\" is not namespace/name", i, pod);
        ns = strndup(pod, (size_t)(slash - pod));
        if (!ns)
                return -ENOMEM;
        resource = json_string_value(json_object_get(rd->carried, "resource"));
        return xp_kube_allocation_add(rd->alloc, ns, slash + 1, resource, id);
}

static int read_device(struct reader *rd, const json_t *d, size_t i)
{
        json_t *out = json_object();
        const char *id, *health;
        bool has_index, has_numa;
        int r;

        if (!out || json_array_append_new(rd->out_devices, out) < 0)
                return -ENOMEM;
        if (!json_is_object(d))
                return xp_errorf(rd->err, -EINVAL, "devices[%zu]: must be an object", i);
        r = string_member(rd, d, "devices", i, "id", &id);
        if (r < 0)
                return r;
        if (!id || !*id)
                return xp_errorf(rd->err, -EINVAL, "devices[%zu].id: required", i);
        if ((r = int_member(rd, d, "devices", i, "index", &has_index)) < 0 ||
            (r = int_member(rd, d, "devices", i, "numaNode", &has_numa)) < 0 ||
            (r = string_member(rd, d, "devices", i, "health", &health)) < 0)
                return r;
        if (json_object_set_new(out, "id", json_string(id)) < 0)
                return -ENOMEM;
        r = carry(rd, d, i, out);
        if (r < 0)
                return r;
        if ((has_index && json_object_set(out, "index", json_object_get(d, "index")) < 0) ||
            (has_numa && json_object_set(out, "numaNode", json_object_get(d, "numaNode")) < 0) ||
            json_object_set_new(out, "health", json_string(health ? health : "Healthy")) < 0)
                return -ENOMEM;
        return add_holder(rd, d, i, id);
}

static int add_link(struct reader *rd, size_t i, size_t j, const char *level, long nvlinks)
{
        json_t *l = json_pack("{s:O, s:O, s:s}",
                              "a",
                              json_object_get(json_array_get(rd->out_devices, i), "id"),
                              "b",
                              json_object_get(json_array_get(rd->out_devices, j), "id"),
                              "level",
                              level);

        if (!l || json_array_append_new(rd->out_links, l) < 0 ||
            (nvlinks && json_object_set_new(l, "nvlinks", json_integer(nvlinks)) < 0))
                return -ENOMEM;
        return 0;
}

/* One level of the matrix: NV<count>, PIX, PXB, PHB, NODE, SYS or "-". */
static int read_level(struct reader *rd, size_t i, size_t j, const char *tok)
{
        long nv;
        char *end;

        if (strcmp(tok, "-") == 0)
                return 0;
        if (strncmp(tok, "NV", 2) == 0 && strcmp(tok, "NODE") != 0) {
                nv = strtol(tok + 2, &end, 10);
                if (end == tok + 2 || *end || nv <= 0 || nv > 1000)
                        return xp_errorf(
                            rd->err, -EINVAL, "links[%zu]: \"%s\" is not a level", i, tok);
                return add_link(rd, i, j, "NVLink", nv);
        }
        if (xp_link_level_from_string(tok) < 0)
                return xp_errorf(rd->err, -EINVAL, "links[%zu]: \"%s\" is not a level", i, tok);
        return add_link(rd, i, j, tok, 0);
}

/* Row i of the link matrix: the levels from device i to devices i+1..n-1, space-separated. */
static int read_row(struct reader *rd, const json_t *row, size_t i, size_t n)
{
        const char *p = json_string_value(row);
        size_t j = i + 1;

        if (!p)
                return xp_errorf(rd->err, -EINVAL, "links[%zu]: must be a string", i);
        while (*p) {
                size_t len = strcspn(p, " ");
                char tok[16];
                int r;

                if (len == 0 || len >= sizeof(tok) || j >= n)
                        break;
                memcpy(tok, p, len);
                tok[len] = '\0';
                r = read_level(rd, i, j++, tok);
                if (r < 0)
                        return r;
                p += len;
                if (*p == ' ' && p[1])
                        p++;
        }
        if (j != n || *p)
                return xp_errorf(rd->err,
                                 -EINVAL,
                                 "links[%zu]: expected %zu levels separated by single spaces",
                                 i,
                                 n - i - 1);
        return 0;
}

static int read_numa(struct reader *rd, const json_t *numa, json_t *out)
{
        const json_t *nn;
        size_t i;

        if (!numa)
                return 0;
        if (!json_is_array(numa) || json_array_size(numa) > XP_INVENTORY_DEVICES_MAX)
                return xp_errorf(rd->err,
                                 -EINVAL,
                                 "numaNodes: must be a list of at most %d",
                                 XP_INVENTORY_DEVICES_MAX);
        json_array_foreach(numa, i, nn)
        {
                const char *cpus;
                bool has_id;
                json_t *o;
                int r;

                if (!json_is_object(nn))
                        return xp_errorf(rd->err, -EINVAL, "numaNodes[%zu]: must be an object", i);
                if ((r = int_member(rd, nn, "numaNodes", i, "id", &has_id)) < 0 ||
                    (r = string_member(rd, nn, "numaNodes", i, "cpus", &cpus)) < 0)
                        return r;
                if (!has_id)
                        return xp_errorf(rd->err, -EINVAL, "numaNodes[%zu].id: required", i);
                o = json_pack("{s:O}", "id", json_object_get(nn, "id"));
                if (!o || json_array_append_new(out, o) < 0 ||
                    (cpus && json_object_set_new(o, "cpus", json_string(cpus)) < 0))
                        return -ENOMEM;
        }
        return 0;
}

static int expand(struct reader *rd, const json_t *root, json_t *out)
{
        const json_t *devices = json_object_get(root, "devices"),
                     *links = json_object_get(root, "links");
        const json_t *version = json_object_get(root, "version"), *d;
        size_t i, n;
        int r;

        if (!json_is_object(root))
                return xp_errorf(rd->err, -EINVAL, "must be a JSON object");
        if (!json_is_integer(version) || json_integer_value(version) != XP_INVENTORY_VERSION)
                return xp_errorf(
                    rd->err,
                    -EINVAL,
                    "version: this xpool reads version %d (the agent and the extender must be upgraded together)",
                    XP_INVENTORY_VERSION);
        if (devices && !json_is_array(devices))
                return xp_errorf(rd->err, -EINVAL, "devices: must be a list");
        n = json_array_size(devices);
        if (n > XP_INVENTORY_DEVICES_MAX)
                return xp_errorf(
                    rd->err, -E2BIG, "devices: more than %d", XP_INVENTORY_DEVICES_MAX);
        r = read_numa(rd, json_object_get(root, "numaNodes"), json_object_get(out, "numaNodes"));
        if (r < 0)
                return r;
        json_array_foreach(devices, i, d)
        {
                r = read_device(rd, d, i);
                if (r < 0)
                        return r;
        }
        if (links && (!json_is_array(links) || json_array_size(links) != (n ? n - 1 : 0)))
                return xp_errorf(
                    rd->err, -EINVAL, "links: must be a list of %zu rows", n ? n - 1 : 0);
        for (i = 0; links && i < json_array_size(links); i++) {
                r = read_row(rd, json_array_get(links, i), i, n);
                if (r < 0)
                        return r;
        }
        return 0;
}

int xp_kube_inventory_expand(const char *text,
                             size_t len,
                             json_t **ret,
                             struct xp_kube_allocation *ret_allocation,
                             struct xp_error *err)
{
        struct xp_kube_allocation alloc = {0};
        json_error_t jerr;
        json_auto_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
        json_auto_t *out = json_pack("{s:[], s:[], s:[]}", "numaNodes", "devices", "links");
        json_auto_t *carried = json_object();
        struct reader rd = {
            .err = err, .alloc = ret_allocation ? &alloc : NULL, .carried = carried};
        int r;

        if (!out || !carried)
                return -ENOMEM;
        if (!root)
                return xp_errorf(err,
                                 -EINVAL,
                                 "%s: %d:%d: %s",
                                 XP_INVENTORY_ANNOTATION,
                                 jerr.line,
                                 jerr.column,
                                 jerr.text);
        rd.out_devices = json_object_get(out, "devices");
        rd.out_links = json_object_get(out, "links");
        r = expand(&rd, root, out);
        if (r < 0) {
                xp_kube_allocation_done(&alloc);
                return r == -ENOMEM ? r : xp_error_prefix(err, r, "%s", XP_INVENTORY_ANNOTATION);
        }
        *ret = TAKE_PTR(out);
        if (ret_allocation)
                *ret_allocation = alloc;
        return 0;
}

int xp_kube_inventory_decode(const char *text,
                             size_t len,
                             struct xp_node_inventory **ret_inventory,
                             struct xp_kube_allocation *ret_allocation,
                             struct xp_error *err)
{
        struct xp_kube_allocation alloc = {0};
        json_auto_t *expanded = NULL;
        int r;

        r = xp_kube_inventory_expand(text, len, &expanded, ret_allocation ? &alloc : NULL, err);
        if (r < 0)
                return r;
        r = xp_node_inventory_from_json(expanded, NULL, 0, ret_inventory, err);
        if (r < 0) {
                xp_kube_allocation_done(&alloc);
                return r == -ENOMEM ? r : xp_error_prefix(err, r, "%s", XP_INVENTORY_ANNOTATION);
        }
        if (ret_allocation)
                *ret_allocation = alloc;
        return 0;
}
