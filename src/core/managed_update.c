/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Ownership after a write that is not an apply (xpool/managedfields.h, xp_managed_update()): as
 * Kubernetes' structured merge records an Update, the writer's manager takes the fields the write
 * adds or changes, every manager (the writer too) gives up the fields it removes, and the other
 * managers give up those it changes. So a later apply that changes a field `kubectl label` or
 * `kubectl edit` set conflicts with that manager, as on a cluster.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "managedfields_internal.h"
#include "xpool/timeutil.h"

struct update {
        const json_t *live, *object;
        json_t *added;   /* the fields the write adds or changes */
        json_t *removed; /* the fields it removes */
};

/* Adds path to set: a field as {}, a list item as {".": {}} beside the fields it holds. */
static int fieldset_add(json_t *set, const char *const *path, size_t n)
{
        json_t *node = set;

        for (size_t i = 0; i < n; i++) {
                json_t *sub = json_object_get(node, path[i]);

                if (!sub) {
                        sub = json_object();
                        if (!sub || json_object_set_new(node, path[i], sub) < 0)
                                return -ENOMEM;
                }
                node = sub;
        }
        if (strncmp(path[n - 1], "k:", 2) == 0 || strncmp(path[n - 1], "v:", 2) == 0)
                return json_object_set_new(node, ".", json_object()) < 0 ? -ENOMEM : 0;
        return 0;
}

/* A field of the new object: added or changed when the live one lacks it or differs. An item
 * counts as added only when it is new: its fields compare on their own paths. */
static int visit_new(const char *const *path, size_t n, void *data)
{
        struct update *u = data;
        const json_t *before = u->live ? xp_fieldset_value_at(u->live, path, n) : NULL;
        bool item = strncmp(path[n - 1], "k:", 2) == 0 || strncmp(path[n - 1], "v:", 2) == 0;

        if (before && (item || json_equal(before, xp_fieldset_value_at(u->object, path, n))))
                return 0;
        return fieldset_add(u->added, path, n);
}

/* A field of the live object the write no longer has. */
static int visit_old(const char *const *path, size_t n, void *data)
{
        struct update *u = data;

        if (xp_fieldset_value_at(u->object, path, n))
                return 0;
        return fieldset_add(u->removed, path, n);
}

/*
 * One walk for both sides when they share their set (fieldsets()): on equal sources a path finds
 * a value in both or in neither, so the write adds, and removes, exactly the paths that name no
 * value (a label key longer than a path element holds), as the two walks would find.
 */
static int visit_both(const char *const *path, size_t n, void *data)
{
        struct update *u = data;
        int r;

        if (xp_fieldset_value_at(u->live, path, n))
                return 0;
        r = fieldset_add(u->added, path, n);
        return r < 0 ? r : fieldset_add(u->removed, path, n);
}

static int take_away(const char *const *path, size_t n, void *data)
{
        xp_fieldset_remove(data, path, n);
        return 0;
}

static int give(const char *const *path, size_t n, void *data)
{
        return fieldset_add(data, path, n);
}

static bool is_writer(const json_t *entry, const struct xp_apply_request *req)
{
        const char *manager = json_string_value(json_object_get(entry, "manager"));
        const char *op = json_string_value(json_object_get(entry, "operation"));

        return manager && op && strcmp(manager, req->manager) == 0 && strcmp(op, "Update") == 0 &&
               !json_object_get(entry, "subresource");
}

/* The entries after the write: the fields it removes gone from all, those it changes from the
 * others, and the writer's Update entry with what it added (last, as Kubernetes orders it). */
static int
settle(struct update *u, json_t *entries, const struct xp_apply_request *req, json_t **ret)
{
        json_t *out = json_array(), *mine = NULL, *entry;
        size_t i;
        int r = out ? 0 : -ENOMEM;

        json_array_foreach(entries, i, entry)
        {
                json_t *set = json_object_get(entry, "fieldsV1");

                if (r < 0)
                        break;
                r = xp_fieldset_walk(u->removed, take_away, set);
                if (r >= 0 && is_writer(entry, req)) {
                        mine = json_incref(entry);
                        continue;
                }
                if (r >= 0)
                        r = xp_fieldset_walk(u->added, take_away, set);
                if (r >= 0 && json_object_size(set) > 0)
                        r = json_array_append(out, entry);
        }
        if (r >= 0 && !mine) {
                mine = json_pack("{s:s, s:s, s:s, s:s, s:s, s:{}}",
                                 "manager",
                                 req->manager,
                                 "operation",
                                 "Update",
                                 "apiVersion",
                                 req->api_version,
                                 "time",
                                 req->now,
                                 "fieldsType",
                                 "FieldsV1",
                                 "fieldsV1");
                r = mine ? 0 : -ENOMEM;
        }
        if (r >= 0)
                r = xp_fieldset_walk(u->added, give, json_object_get(mine, "fieldsV1"));
        if (r >= 0 && (json_object_set_new(mine, "time", json_string(req->now)) < 0 ||
                       json_object_set_new(mine, "apiVersion", json_string(req->api_version)) < 0))
                r = -ENOMEM;
        if (r >= 0 && json_object_size(json_object_get(mine, "fieldsV1")) > 0)
                r = json_array_append(out, mine);
        json_decref(mine);
        if (r < 0) {
                json_decref(out);
                return r;
        }
        *ret = out;
        return 0;
}

/* live's entries, shared: a write that changes no ownership keeps them as they are, and
 * settle() works on a copy. An empty list where they are not all entries. */
static json_t *entries_of(const json_t *live)
{
        const json_t *fields = json_object_get(json_object_get(live, "metadata"), "managedFields"),
                     *e;
        size_t i;

        if (!json_is_array(fields))
                return json_array();
        json_array_foreach(
            fields, i, e) if (!json_is_object(e) ||
                              !json_is_object(json_object_get(
                                  e, "fieldsV1"))) return json_array(); /* not ours to mend: the
                                                                           write starts them anew */
        return json_incref((json_t *)fields);
}

/*
 * The sets of the new object and of the live one. A write that leaves what the sets are made of
 * as it was (a status update, the most frequent write) has one set for both: same source, same
 * set; and none at all where every path of that set names a value (1: the write changes no
 * ownership, as visit_both() would find). 0, 1, or -ENOMEM.
 */
static int fieldsets(const struct xp_apitype *type,
                     const json_t *live,
                     const json_t *object,
                     json_t **ret_new,
                     json_t **ret_old)
{
        json_t *new_source = xp_fieldset_source(object);
        json_t *old_source = live ? xp_fieldset_source(live) : NULL;
        bool same = new_source && old_source && json_equal(old_source, new_source);

        if (same && xp_fieldset_names_all(type, new_source)) {
                json_decref(new_source);
                json_decref(old_source);
                *ret_new = *ret_old = NULL;
                return 1;
        }
        *ret_new = new_source ? xp_fieldset_of_source(type, new_source) : NULL;
        if (!live)
                *ret_old = json_object();
        else if (same)
                *ret_old = json_incref(*ret_new);
        else
                *ret_old = old_source ? xp_fieldset_of_source(type, old_source) : NULL;
        json_decref(new_source);
        json_decref(old_source);
        return *ret_new && *ret_old ? 0 : -ENOMEM;
}

int xp_managed_update(const struct xp_apitype *type,
                      const json_t *live,
                      json_t *object,
                      const struct xp_apply_request *req)
{
        json_t *meta = json_object_get(object, "metadata"), *entries = NULL, *now = NULL;
        json_t *newset = NULL, *oldset = NULL;
        struct update u = {.live = live, .object = object};
        int r = -ENOMEM;

        if (!json_is_object(meta))
                return 0;
        u.added = json_object();
        u.removed = json_object();
        r = fieldsets(type, live, object, &newset, &oldset);
        /* managedFields the write sets itself replace live's, as Kubernetes lets a client reset
         * them (kubectl moves client-side apply's fields to its Apply entry so) */
        entries = entries_of(object);
        if (entries && json_array_size(entries) == 0 && live) {
                json_decref(entries);
                entries = entries_of(live);
        }
        if (r >= 0 && !(u.added && u.removed && entries))
                r = -ENOMEM;
        if (r == 1) /* one source, every path of it named: the walks would find nothing */
                r = 0;
        else if (r >= 0 && newset == oldset)
                r = xp_fieldset_walk(newset, visit_both, &u);
        else if (r >= 0)
                r = xp_fieldset_walk(newset, visit_new, &u);
        if (r >= 0 && newset != oldset)
                r = xp_fieldset_walk(oldset, visit_old, &u);
        if (r >= 0 && json_object_size(u.added) == 0 && json_object_size(u.removed) == 0) {
                /* nothing changed: ownership stays as it was */
                now = json_incref(entries);
        } else if (r >= 0) {
                json_t *own = json_deep_copy(entries); /* settle() changes the entries' sets */

                r = own ? settle(&u, own, req, &now) : -ENOMEM;
                json_decref(own);
        }
        if (r >= 0)
                r = json_array_size(now) > 0 ? json_object_set(meta, "managedFields", now)
                                             : (json_object_del(meta, "managedFields"), 0);
        json_decref(now);
        json_decref(entries);
        json_decref(newset);
        json_decref(oldset);
        json_decref(u.added);
        json_decref(u.removed);
        return r < 0 ? -ENOMEM : 0;
}

/* entry's time as metav1.Time writes it into text: true when that differs from the entry's */
static bool time_to_mend(const json_t *entry, char text[static XP_RFC3339_MAX])
{
        const char *when = json_string_value(json_object_get(entry, "time"));
        int64_t seconds;

        /* what does not parse is left for validation to refuse, naming it */
        return when && xp_time_parse_rfc3339(when, &seconds) == 0 &&
               xp_time_format_rfc3339(seconds, text) == 0 && strcmp(when, text) != 0;
}

int xp_managed_times_canonical(json_t *object)
{
        json_t *meta = json_object_get(object, "metadata");
        json_t *entries = json_object_get(meta, "managedFields"), *mended, *e;
        char text[XP_RFC3339_MAX];
        bool any = false;
        size_t i;

        json_array_foreach(entries, i, e) any = any || time_to_mend(e, text);
        if (!any)
                return 0;
        /* the entries may be shared with the stored object (a patch's result): mend copies */
        mended = json_array();
        if (!mended)
                return -ENOMEM;
        json_array_foreach(entries, i, e)
        {
                json_t *entry = time_to_mend(e, text) ? json_copy(e) : json_incref(e);

                if (!entry || json_array_append_new(mended, entry) < 0 ||
                    (entry != e && json_object_set_new(entry, "time", json_string(text)) < 0)) {
                        json_decref(mended);
                        return -ENOMEM;
                }
        }
        return json_object_set_new(meta, "managedFields", mended) < 0 ? -ENOMEM : 0;
}
