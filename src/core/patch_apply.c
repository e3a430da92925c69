/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Server-side apply (xpool/managedfields.h): the configuration merged into the live object as
 * the schema says each field merges, ownership in metadata.managedFields, and conflicts when a
 * change would take a field another manager owns.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "managedfields_internal.h"

/* ---- merging ------------------------------------------------------------------------------------
 */

static json_t *
merge_object(const struct xp_apitype *type, const json_t *live, const json_t *config);

/* live's keyed list with config's items merged into theirs by key, new ones appended. */
static json_t *
merge_keyed_list(const struct xp_apifield *f, const json_t *live, const json_t *config)
{
        json_t *out = json_deep_copy(live), *item;
        size_t i;

        json_array_foreach(config, i, item)
        {
                char *key = f->merge == XP_APIMERGE_MAP ? xp_fieldset_item_key(f, item)
                                                        : xp_fieldset_set_key(item);
                ssize_t at = key && out ? xp_fieldset_find_item(out, key) : -1;
                int r = key && out ? 0 : -ENOMEM;

                if (r == 0 && at < 0)
                        r = json_array_append_new(out, json_deep_copy(item));
                else if (r == 0 && f->merge == XP_APIMERGE_MAP)
                        r = json_array_set_new(out,
                                               (size_t)at,
                                               merge_object(f->value->element->type,
                                                            json_array_get(out, (size_t)at),
                                                            item));
                free(key);
                if (r < 0) {
                        json_decref(out);
                        return NULL;
                }
        }
        return out;
}

static json_t *merge_value(const struct xp_apifield *f,
                           const struct xp_apivalue *v,
                           const json_t *live,
                           const json_t *config)
{
        enum xp_apimerge merge = f ? f->merge : XP_APIMERGE_GRANULAR;

        if (!live || merge == XP_APIMERGE_ATOMIC)
                return json_deep_copy(config);
        if (v->kind == XP_APIVALUE_TYPE && !v->type->atomic && json_is_object(live) &&
            json_is_object(config))
                return merge_object(v->type, live, config);
        if (v->kind == XP_APIVALUE_MAP && json_is_object(live) && json_is_object(config)) {
                json_t *out = json_deep_copy(live), *member;
                const char *key;

                json_object_foreach((json_t *)config, key, member)
                {
                        if (!out ||
                            json_object_set_new(
                                out,
                                key,
                                merge_value(NULL, v->element, json_object_get(live, key), member)) <
                                0) {
                                json_decref(out);
                                return NULL;
                        }
                }
                return out;
        }
        if (v->kind == XP_APIVALUE_LIST && f &&
            (f->merge == XP_APIMERGE_MAP || f->merge == XP_APIMERGE_SET) && json_is_array(live) &&
            json_is_array(config))
                return merge_keyed_list(f, live, config);
        return json_deep_copy(config);
}

static json_t *merge_object(const struct xp_apitype *type, const json_t *live, const json_t *config)
{
        json_t *out = json_deep_copy(live), *member;
        const char *key;

        json_object_foreach((json_t *)config, key, member)
        {
                const struct xp_apifield *f = type ? xp_apitype_field(type, key) : NULL;
                json_t *merged = f ? merge_value(f, f->value, json_object_get(live, key), member)
                                   : json_deep_copy(member);

                if (!out || json_object_set_new(out, key, merged) < 0) {
                        json_decref(out);
                        return NULL;
                }
        }
        return out;
}

/* ---- ownership ----------------------------------------------------------------------------------
 */

struct apply {
        const struct xp_apply_request *req;
        json_t *entries; /* managedFields, being rewritten */
        json_t *config;  /* the configuration without what apply does not merge */
        const json_t *live;
        json_t *applied;   /* the configuration's set */
        json_t *previous;  /* this manager's set before, or NULL */
        json_t *result;    /* the merged object */
        json_t *conflicts; /* [{"manager", "field", "entry"}] */
};

static bool is_mine(const struct apply *a, const json_t *entry)
{
        const char *manager = json_string_value(json_object_get(entry, "manager"));
        const char *op = json_string_value(json_object_get(entry, "operation"));

        return manager && op && strcmp(manager, a->req->manager) == 0 && strcmp(op, "Apply") == 0;
}

static char *manager_text(const json_t *entry)
{
        const char *manager = json_string_value(json_object_get(entry, "manager"));
        const char *op = json_string_value(json_object_get(entry, "operation"));
        const char *version = json_string_value(json_object_get(entry, "apiVersion"));
        char *out;

        int r = op && strcmp(op, "Update") == 0 && version
                    ? asprintf(&out, "\"%s\" using %s", manager ? manager : "", version)
                    : asprintf(&out, "\"%s\"", manager ? manager : "");

        return r < 0 ? NULL : out;
}

/*
 * Whether the configuration changes the field at path. An item of a keyed list is owned as an
 * item (it exists) and field by field: only its fields compare, each on its own path.
 */
static bool changes(const struct apply *a, const char *const *path, size_t n)
{
        if (strncmp(path[n - 1], "k:", 2) == 0)
                return false;
        return !json_equal(xp_fieldset_value_at(a->config, path, n),
                           xp_fieldset_value_at(a->live, path, n));
}

/* A field the configuration sets: a conflict when it changes a value another manager owns. */
static int find_conflicts(const char *const *path, size_t n, void *data)
{
        struct apply *a = data;
        json_t *entry;
        size_t i;

        if (!changes(a, path, n))
                return 0;
        json_array_foreach(a->entries, i, entry)
        {
                char *who, *field;
                int r;

                if (is_mine(a, entry) ||
                    !xp_fieldset_has(json_object_get(entry, "fieldsV1"), path, n))
                        continue;
                who = manager_text(entry);
                field = xp_fieldset_path_string(path, n);
                r = who && field ? json_array_append_new(a->conflicts,
                                                         json_pack("{s:s, s:s, s:I}",
                                                                   "manager",
                                                                   who,
                                                                   "field",
                                                                   field,
                                                                   "entry",
                                                                   (json_int_t)i))
                                 : -1;
                free(who);
                free(field);
                if (r < 0)
                        return -ENOMEM;
        }
        return 0;
}

/* A field this manager applied before and no longer does: gone unless someone else owns it. */
static int drop_unapplied(const char *const *path, size_t n, void *data)
{
        struct apply *a = data;
        json_t *entry;
        size_t i;

        if (xp_fieldset_has(a->applied, path, n))
                return 0;
        json_array_foreach(
            a->entries, i, entry) if (!is_mine(a, entry) &&
                                      xp_fieldset_has(
                                          json_object_get(entry, "fieldsV1"), path, n)) return 0;
        xp_fieldset_remove_value(a->result, path, n);
        return 0;
}

/* With force, a field the configuration changes leaves the other managers that own it. */
static int remove_taken(const char *const *path, size_t n, void *data)
{
        struct apply *a = data;
        json_t *entry;
        size_t i;

        if (!changes(a, path, n))
                return 0;
        json_array_foreach(a->entries, i, entry) if (!is_mine(a, entry))
            xp_fieldset_remove(json_object_get(entry, "fieldsV1"), path, n);
        return 0;
}

/* This manager's entry replaced by the new set; other entries without fields dropped. */
static int write_entries(struct apply *a)
{
        json_t *out = json_array(), *entry;
        size_t i;

        if (!out)
                return -ENOMEM;
        json_array_foreach(a->entries, i, entry)
        {
                json_object_del(entry, "taken");
                if (is_mine(a, entry) || json_object_size(json_object_get(entry, "fieldsV1")) == 0)
                        continue;
                json_array_append(out, entry);
        }
        if (json_array_append_new(out,
                                  json_pack("{s:s, s:s, s:s, s:s, s:s, s:O}",
                                            "manager",
                                            a->req->manager,
                                            "operation",
                                            "Apply",
                                            "apiVersion",
                                            a->req->api_version,
                                            "time",
                                            a->req->now,
                                            "fieldsType",
                                            "FieldsV1",
                                            "fieldsV1",
                                            a->applied)) < 0 ||
            !json_is_object(json_object_get(a->result, "metadata")) ||
            json_object_set_new(json_object_get(a->result, "metadata"), "managedFields", out) < 0)
                return -ENOMEM;
        return 0;
}

/* The configuration as apply merges it: no status, no metadata the server keeps. */
static json_t *clean_config(const json_t *config)
{
        static const char *const server_meta[] = {
            "managedFields", "resourceVersion", "uid", "creationTimestamp", "generation", NULL};
        json_t *copy = json_deep_copy(config), *meta;

        if (!copy)
                return NULL;
        json_object_del(copy, "status");
        meta = json_object_get(copy, "metadata");
        for (size_t i = 0; json_is_object(meta) && server_meta[i]; i++)
                json_object_del(meta, server_meta[i]);
        return copy;
}

static int read_entries(const json_t *live, json_t **ret, struct xp_error *err)
{
        json_t *fields = json_object_get(json_object_get(live, "metadata"), "managedFields"), *e;
        size_t i;

        if (!fields) {
                *ret = json_array();
                return *ret ? 0 : -ENOMEM;
        }
        if (!json_is_array(fields))
                return xp_errorf(err, -EINVAL, "metadata.managedFields: must be a list");
        json_array_foreach(fields, i, e) if (
            !json_is_object(e) || !json_is_string(json_object_get(e, "manager")) ||
            !json_is_object(json_object_get(
                e,
                "fieldsV1"))) return xp_errorf(err,
                                               -EINVAL,
                                               "metadata.managedFields[%zu]: needs a manager and a fieldsV1 object",
                                               i);
        *ret = json_deep_copy(fields);
        return *ret ? 0 : -ENOMEM;
}

static int run(struct apply *a, const struct xp_apitype *type, json_t **ret_conflicts)
{
        json_t *entry;
        size_t i;
        int r = 0;

        json_array_foreach(a->entries, i, entry) if (is_mine(a, entry)) a->previous =
            json_object_get(entry, "fieldsV1");
        if (a->live)
                r = xp_fieldset_walk(a->applied, find_conflicts, a);
        if (r >= 0 && json_array_size(a->conflicts) > 0 && !a->req->force) {
                *ret_conflicts = json_incref(a->conflicts);
                return -EBUSY;
        }
        if (r >= 0 && a->live)
                r = xp_fieldset_walk(a->applied, remove_taken, a);
        if (r >= 0) {
                a->result =
                    a->live ? merge_object(type, a->live, a->config) : json_deep_copy(a->config);
                if (!a->result)
                        r = -ENOMEM;
        }
        if (r >= 0 && !json_is_object(json_object_get(a->result, "metadata")))
                r = json_object_set_new(a->result, "metadata", json_object()) < 0 ? -ENOMEM : 0;
        if (r >= 0 && a->previous)
                r = xp_fieldset_walk(a->previous, drop_unapplied, a);
        if (r >= 0)
                r = write_entries(a);
        return r;
}

int xp_apply(const struct xp_apitype *type,
             const json_t *live,
             const json_t *config,
             const struct xp_apply_request *req,
             json_t **ret,
             json_t **ret_conflicts,
             struct xp_error *err)
{
        struct apply a = {.req = req, .live = live};
        int r = read_entries(live, &a.entries, err);

        if (r < 0)
                return r;
        a.config = clean_config(config);
        a.applied = a.config ? xp_fieldset_of(type, a.config) : NULL;
        a.conflicts = json_array();
        r = a.config && a.applied && a.conflicts ? run(&a, type, ret_conflicts) : -ENOMEM;
        if (r >= 0)
                *ret = json_incref(a.result);
        json_decref(a.result);
        json_decref(a.entries);
        json_decref(a.config);
        json_decref(a.applied);
        json_decref(a.conflicts);
        return r;
}

static int by_manager(const void *x, const void *y)
{
        const json_t *a = *(json_t *const *)x, *b = *(json_t *const *)y;

        return strcmp(json_string_value(json_object_get(a, "manager")),
                      json_string_value(json_object_get(b, "manager")));
}

char *xp_apply_conflict_message(const json_t *conflicts)
{
        size_t n = json_array_size(conflicts), len = 0;
        json_t **sorted = calloc(n ? n : 1, sizeof(*sorted));
        char *out = NULL;
        FILE *f = sorted ? open_memstream(&out, &len) : NULL;

        if (!f) {
                free(sorted);
                return NULL;
        }
        for (size_t i = 0; i < n; i++)
                sorted[i] = json_array_get(conflicts, i);
        if (n == 1)
                fprintf(f,
                        "Apply failed with 1 conflict: conflict with %s: %s",
                        json_string_value(json_object_get(sorted[0], "manager")),
                        json_string_value(json_object_get(sorted[0], "field")));
        else {
                /* grouped by manager, managers sorted, each path on a line of its own */
                qsort(sorted, n, sizeof(*sorted), by_manager);
                fprintf(f, "Apply failed with %zu conflicts: ", n);
                for (size_t i = 0; i < n; i++) {
                        const char *m = json_string_value(json_object_get(sorted[i], "manager"));

                        if (i == 0 || by_manager(&sorted[i - 1], &sorted[i]) != 0)
                                fprintf(f, "%sconflicts with %s:", i ? "\n" : "", m);
                        fprintf(
                            f, "\n- %s", json_string_value(json_object_get(sorted[i], "field")));
                }
        }
        free(sorted);
        if (fclose(f) != 0) {
                free(out);
                return NULL;
        }
        return out;
}
