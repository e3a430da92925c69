/* SPDX-License-Identifier: Apache-2.0 */
/*
 * FieldsV1 sets (xpool/managedfields.h): made from a value and its schema type, walked, queried
 * and pruned, and a set's path found in an object. A set is a JSON object whose keys are
 * path elements ("f:name", "k:{...}" for an item of a keyed list, "v:<json>" for an item of a
 * set list, "." for an item itself); an empty object is a field owned whole.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "managedfields_internal.h"
#include "xpool/macro.h"

/* ---- making a set ------------------------------------------------------------------------------
 */

static json_t *fields_of_object(const struct xp_apitype *type, const json_t *object);

/* "k:{...}": the item's keys (missing ones at their default) as compact JSON, keys sorted. */
char *xp_fieldset_item_key(const struct xp_apifield *f, const json_t *item)
{
        json_t *keys = json_object();
        char *text, *out;

        for (size_t i = 0; keys && i < f->n_keys; i++) {
                json_t *v = json_object_get(item, f->keys[i].name);

                if (v)
                        json_object_set(keys, f->keys[i].name, v);
                else if (f->keys[i].default_value)
                        json_object_set_new(
                            keys, f->keys[i].name, json_string(f->keys[i].default_value));
        }
        text = keys ? json_dumps(keys, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
        json_decref(keys);
        if (!text || asprintf(&out, "k:%s", text) < 0)
                out = NULL;
        free(text);
        return out;
}

char *xp_fieldset_set_key(const json_t *item)
{
        char *text = json_dumps(item, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY), *out;

        if (!text || asprintf(&out, "v:%s", text) < 0)
                out = NULL;
        free(text);
        return out;
}

static int set_owned(json_t *set, const char *key, json_t *sub)
{
        return sub && json_object_set_new(set, key, sub) == 0 ? 0 : -ENOMEM;
}

static json_t *fields_of_list(const struct xp_apifield *f, const json_t *list)
{
        json_t *set = json_object(), *item;
        size_t i;

        json_array_foreach(list, i, item)
        {
                char *key = f->merge == XP_APIMERGE_MAP ? xp_fieldset_item_key(f, item)
                                                        : xp_fieldset_set_key(item);
                json_t *sub = f->merge == XP_APIMERGE_MAP
                                  ? fields_of_object(f->value->element->type, item)
                                  : json_object();
                int r = key && sub ? 0 : -ENOMEM;

                if (r == 0 && f->merge == XP_APIMERGE_MAP)
                        r = set_owned(sub, ".", json_object());
                if (r == 0)
                        r = json_object_set(set, key, sub) == 0 ? 0 : -ENOMEM;
                json_decref(sub);
                free(key);
                if (r < 0 || !set) {
                        json_decref(set);
                        return NULL;
                }
        }
        return set;
}

/* The set under one field: a subtree where its members are owned one by one, else {} (whole). */
static json_t *
fields_of_value(const struct xp_apifield *f, const struct xp_apivalue *v, const json_t *value)
{
        enum xp_apimerge merge = f ? f->merge : XP_APIMERGE_GRANULAR;

        if (v->kind == XP_APIVALUE_TYPE && json_is_object(value) && !v->type->atomic &&
            merge != XP_APIMERGE_ATOMIC)
                return fields_of_object(v->type, value);
        if (v->kind == XP_APIVALUE_MAP && json_is_object(value) && merge != XP_APIMERGE_ATOMIC) {
                json_t *set = json_object(), *member;
                const char *key;

                json_object_foreach((json_t *)value, key, member)
                {
                        char name[1024];

                        snprintf(name, sizeof name, "f:%s", key);
                        if (!set ||
                            set_owned(set, name, fields_of_value(NULL, v->element, member)) < 0) {
                                json_decref(set);
                                return NULL;
                        }
                }
                return set;
        }
        if (v->kind == XP_APIVALUE_LIST && json_is_array(value) && f &&
            (f->merge == XP_APIMERGE_MAP || f->merge == XP_APIMERGE_SET))
                return fields_of_list(f, value);
        return json_object();
}

static json_t *fields_of_object(const struct xp_apitype *type, const json_t *object)
{
        json_t *set = json_object(), *member;
        const char *key;

        json_object_foreach((json_t *)object, key, member)
        {
                const struct xp_apifield *f = xp_apitype_field(type, key);
                char name[1024];

                snprintf(name, sizeof name, "f:%s", key);
                if (!set ||
                    set_owned(set, name, f ? fields_of_value(f, f->value, member) : json_object()) <
                        0) {
                        json_decref(set);
                        return NULL;
                }
        }
        return set;
}

/*
 * What of config the set is made from, its members shared, not copied (a pod's status is most of
 * it, and every write of one makes two sets): config less apiVersion, kind and status, and a
 * metadata of labels and annotations alone, dropped when it has neither. Members keep their
 * order, so the set's is the same as from a pruned copy. NULL without memory.
 */
json_t *xp_fieldset_source(const json_t *config)
{
        json_t *view = json_object(), *member;
        const char *key;

        json_object_foreach((json_t *)config, key, member)
        {
                json_t *kept = member;
                int r;

                if (!view)
                        return NULL;
                if (strcmp(key, "apiVersion") == 0 || strcmp(key, "kind") == 0 ||
                    strcmp(key, "status") == 0)
                        continue;
                if (strcmp(key, "metadata") == 0) {
                        json_t *labels = json_object_get(member, "labels"),
                               *annotations = json_object_get(member, "annotations");

                        if (!labels && !annotations)
                                continue;
                        kept = json_object();
                        if (kept && labels && json_object_set(kept, "labels", labels) < 0)
                                json_decref(TAKE_PTR(kept));
                        if (kept && annotations &&
                            json_object_set(kept, "annotations", annotations) < 0)
                                json_decref(TAKE_PTR(kept));
                        r = kept ? json_object_set_new(view, key, kept) : -1;
                } else {
                        r = json_object_set(view, key, member);
                }
                if (r < 0) {
                        json_decref(view);
                        return NULL;
                }
        }
        return view;
}

json_t *xp_fieldset_of_source(const struct xp_apitype *type, const json_t *source)
{
        return fields_of_object(type, source);
}

json_t *xp_fieldset_of(const struct xp_apitype *type, const json_t *config)
{
        json_t *source = xp_fieldset_source(config), *set;

        if (!source)
                return NULL;
        set = fields_of_object(type, source);
        json_decref(source);
        return set;
}

/* ---- walking a set -----------------------------------------------------------------------------
 */

static int
walk(const json_t *set, const char **path, size_t depth, xp_fieldset_visit visit, void *data)
{
        const char *key;
        json_t *sub;

        if (depth >= XP_FIELDSET_MAX_DEPTH)
                return -E2BIG;
        json_object_foreach((json_t *)set, key, sub)
        {
                int r = 0;

                if (strcmp(key, ".") == 0)
                        continue;
                path[depth] = key;
                if (json_object_size(sub) == 0 || json_object_get(sub, "."))
                        r = visit(path, depth + 1, data);
                if (r >= 0 && json_object_size(sub) > 0)
                        r = walk(sub, path, depth + 1, visit, data);
                if (r < 0)
                        return r;
        }
        return 0;
}

int xp_fieldset_walk(const json_t *set, xp_fieldset_visit visit, void *data)
{
        const char *path[XP_FIELDSET_MAX_DEPTH];

        return walk(set, path, 0, visit, data);
}

bool xp_fieldset_has(const json_t *set, const char *const *path, size_t n)
{
        const json_t *node = set;

        for (size_t i = 0; i < n; i++) {
                if (!json_is_object(node))
                        return false;
                if (i > 0 && json_object_size(node) == 0)
                        return true; /* an ancestor owned whole */
                node = json_object_get(node, path[i]);
                if (!node)
                        return false;
        }
        return json_object_size(node) == 0 || json_object_get(node, ".") != NULL;
}

/* Removes path from set, and the parents it leaves empty. */
void xp_fieldset_remove(json_t *set, const char *const *path, size_t n)
{
        json_t *node;

        if (n == 0 || !json_is_object(set))
                return;
        node = json_object_get(set, path[0]);
        if (!node)
                return;
        if (n == 1) {
                if (json_object_size(node) > 0 && json_object_get(node, "."))
                        json_object_del(node, ".");
                else
                        json_object_del(set, path[0]);
                return;
        }
        xp_fieldset_remove(node, path + 1, n - 1);
        if (json_object_size(node) == 0)
                json_object_del(set, path[0]);
}

/* ---- a set's path in an object ------------------------------------------------------------------
 */

/*
 * Whether item has the keys of "k:{...}" (parsed). A key the item lacks matches its default; the
 * one default the schema's keys have is a port's protocol, "TCP" (apischema.txt), which a path
 * alone does not carry.
 */
static bool item_matches(const json_t *item, const json_t *keys)
{
        const char *name;
        json_t *want;

        json_object_foreach((json_t *)keys, name, want)
        {
                json_t *have = json_object_get(item, name);

                if (!have ? !json_is_string(want) || strcmp(json_string_value(want), "TCP") != 0
                          : !json_equal(have, want))
                        return false;
        }
        return true;
}

/* The index of the array item element names ("k:" or "v:"), or -1. */
ssize_t xp_fieldset_find_item(const json_t *array, const char *element)
{
        json_t *parsed = json_loads(element + 2, JSON_DECODE_ANY, NULL), *item;
        size_t i;
        ssize_t found = -1;

        if (!parsed || !json_is_array(array)) {
                json_decref(parsed);
                return -1;
        }
        json_array_foreach(array, i, item)
        {
                if (element[0] == 'k' ? json_is_object(item) && item_matches(item, parsed)
                                      : json_equal(item, parsed)) {
                        found = (ssize_t)i;
                        break;
                }
        }
        json_decref(parsed);
        return found;
}

json_t *xp_fieldset_value_at(const json_t *object, const char *const *path, size_t n)
{
        const json_t *node = object;

        for (size_t i = 0; node && i < n; i++) {
                if (strcmp(path[i], ".") == 0)
                        continue;
                if (strncmp(path[i], "f:", 2) == 0) {
                        node = json_object_get(node, path[i] + 2);
                } else {
                        ssize_t k = xp_fieldset_find_item(node, path[i]);

                        node = k < 0 ? NULL : json_array_get(node, (size_t)k);
                }
        }
        return (json_t *)node;
}

void xp_fieldset_remove_value(json_t *object, const char *const *path, size_t n)
{
        json_t *parent = n > 0 ? xp_fieldset_value_at(object, path, n - 1) : NULL;
        const char *last = n > 0 ? path[n - 1] : NULL;

        if (!parent)
                return;
        if (strncmp(last, "f:", 2) == 0) {
                json_object_del(parent, last + 2);
        } else if (last[0] == 'k' || last[0] == 'v') {
                ssize_t k = xp_fieldset_find_item(parent, last);

                if (k >= 0)
                        json_array_remove(parent, (size_t)k);
        }
}

/* ".spec.containers[name=\"c\"].image", as Kubernetes prints a path. */
char *xp_fieldset_path_string(const char *const *path, size_t n)
{
        char *out = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&out, &len);

        if (!f)
                return NULL;
        for (size_t i = 0; i < n; i++) {
                const char *e = path[i];

                if (strcmp(e, ".") == 0)
                        continue;
                if (strncmp(e, "f:", 2) == 0) {
                        fprintf(f, ".%s", e + 2);
                } else if (e[0] == 'v') {
                        fprintf(f, "[=%s]", e + 2);
                } else {
                        json_t *keys = json_loads(e + 2, 0, NULL), *v;
                        const char *name;
                        bool first = true;

                        fputc('[', f);
                        json_object_foreach(keys, name, v)
                        {
                                char *text = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);

                                fprintf(f, "%s%s=%s", first ? "" : ",", name, text ? text : "");
                                free(text);
                                first = false;
                        }
                        fputc(']', f);
                        json_decref(keys);
                }
        }
        if (fclose(f) != 0) {
                free(out);
                return NULL;
        }
        return out;
}
