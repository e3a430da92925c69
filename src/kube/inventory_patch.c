/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The merge patch that puts the inventory's labels and annotation on a Node and nothing else
 * (xpool/kubeinventory.h). The Node is the kubelet's: a full update would race its status
 * writes and could drop what other controllers set, so only changed keys are sent, labels this
 * publisher set earlier and no longer wants are removed with null, and the set it owns now is
 * recorded in XP_OWNED_LABELS_ANNOTATION (a comma-separated list, as node-feature-discovery
 * records its own).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kube_internal.h"
#include "xpool/kubeinventory.h"
#include "xpool/strutil.h"

static const json_t *meta_map(const json_t *node, const char *field)
{
        return json_object_get(json_object_get(node, "metadata"), field);
}

/* Whether the comma-separated list holds key. */
static bool list_has(const char *list, const char *key)
{
        size_t len = strlen(key);

        for (const char *p = list; p && *p;) {
                size_t n = strcspn(p, ",");
                if (n == len && strncmp(p, key, len) == 0)
                        return true;
                p += n + (p[n] == ',');
        }
        return false;
}

static int cmp_str(const void *a, const void *b)
{
        return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The sorted, comma-separated keys of labels. */
static char *owned_list(const json_t *labels)
{
        size_t n = json_object_size(labels), len = 0, i = 0;
        _cleanup_free_ const char **keys = calloc(n + 1, sizeof(*keys));
        const char *key;
        json_t *value;
        char *out;

        if (!keys)
                return NULL;
        json_object_foreach((json_t *)labels, key, value)
        {
                keys[i++] = key;
                len += strlen(key) + 1;
        }
        qsort(keys, n, sizeof(*keys), cmp_str);
        out = calloc(len + 1, 1);
        for (i = 0; out && i < n; i++) {
                if (i)
                        strcat(out, ",");
                strcat(out, keys[i]);
        }
        return out;
}

static int set_changed(json_t *patch, const json_t *current, const char *key, json_t *value)
{
        const json_t *old = json_object_get(current, key);

        if (value && old && json_equal(old, value)) {
                json_decref(value);
                return 0;
        }
        if (!value && !old)
                return 0;
        return json_object_set_new(patch, key, value ? value : json_null()) < 0 ? -ENOMEM : 0;
}

int xp_kube_inventory_patch(const json_t *node,
                            const json_t *labels,
                            const json_t *annotations,
                            json_t **ret)
{
        const json_t *cur_labels = meta_map(node, "labels"),
                     *cur_ann = meta_map(node, "annotations");
        const char *owned = json_string_value(json_object_get(cur_ann, XP_OWNED_LABELS_ANNOTATION));
        json_auto_t *l = json_object(), *a = json_object();
        _cleanup_free_ char *now_owned = owned_list(labels);
        const char *key;
        json_t *value;
        int r = 0;

        if (!l || !a || !now_owned)
                return -ENOMEM;
        json_object_foreach((json_t *)labels, key, value) r |=
            set_changed(l, cur_labels, key, json_incref(value));
        json_object_foreach((json_t *)cur_labels, key, value) if (list_has(owned, key) &&
                                                                  !json_object_get(labels, key))
            r |= set_changed(l, cur_labels, key, NULL);
        json_object_foreach((json_t *)annotations, key, value) r |=
            set_changed(a, cur_ann, key, json_incref(value));
        r |= set_changed(
            a, cur_ann, XP_OWNED_LABELS_ANNOTATION, *now_owned ? json_string(now_owned) : NULL);
        if (r < 0)
                return -ENOMEM;
        if (json_object_size(l) == 0 && json_object_size(a) == 0) {
                *ret = NULL;
                return 0;
        }
        *ret = json_pack("{s:{s:O, s:O}}", "metadata", "labels", l, "annotations", a);
        if (*ret && json_object_size(l) == 0)
                json_object_del(json_object_get(*ret, "metadata"), "labels");
        if (*ret && json_object_size(a) == 0)
                json_object_del(json_object_get(*ret, "metadata"), "annotations");
        return *ret ? 0 : -ENOMEM;
}

/* Whether the inventory annotation on node names a device of resource. */
static bool published_by_us(const json_t *node, const char *resource)
{
        const char *text = json_string_value(
            json_object_get(meta_map(node, "annotations"), XP_INVENTORY_ANNOTATION));
        _cleanup_(xp_node_inventory_freep) struct xp_node_inventory *inv = NULL;

        if (!text || xp_kube_inventory_decode(text, strlen(text), &inv, NULL, NULL) < 0)
                return false;
        for (size_t i = 0; i < inv->devices.n; i++)
                if (xp_streq0(inv->devices.items[i].resource_name, resource))
                        return true;
        return false;
}

int xp_kube_inventory_conflicts(const json_t *node,
                                const struct xp_node_inventory *inventory,
                                const char *const *leave,
                                size_t n_leave,
                                json_t **ret)
{
        const json_t *capacity = json_object_get(json_object_get(node, "status"), "capacity");
        json_auto_t *out = json_array();

        if (!out)
                return -ENOMEM;
        for (size_t i = 0; i < inventory->devices.n; i++) {
                const char *res = inventory->devices.items[i].resource_name;
                bool listed = false, left = false;
                size_t k;
                json_t *v;

                if (!res || !json_object_get(capacity, res))
                        continue;
                json_array_foreach(out, k, v) listed =
                    listed || xp_streq0(json_string_value(v), res);
                for (k = 0; k < n_leave; k++)
                        left = left || xp_streq0(leave[k], res);
                if (listed || left || published_by_us(node, res))
                        continue;
                if (json_array_append_new(out, json_string(res)) < 0)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(out);
        return 0;
}
