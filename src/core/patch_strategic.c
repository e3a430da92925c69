/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Kubernetes strategic merge patch: a JSON merge patch in which lists with a merge key merge
 * element by element, lists of primitives tagged "merge" are unioned, and `$`-directives delete,
 * replace and reorder. The merge keys come from patch_keys.c by kind and field path.
 *
 * The patch is applied to one deep copy of the original, changed in place; on failure the copy is
 * dropped, so the caller's object never changes. A sharing merge copies only the path it changes,
 * and takes from the patch the values the merge would rebuild as they are (patch_plain.c).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "patch_internal.h"
#include "xpool/macro.h"
#include "xpool/patch.h"

#define DIRECTIVE                  "$patch"
#define RETAIN_KEYS                "$retainKeys"
#define SET_ELEMENT_ORDER          "$setElementOrder/"
#define DELETE_FROM_PRIMITIVE_LIST "$deleteFromPrimitiveList/"
#define MAX_LIST                   10000 /* elements of a list merged by key or as a set */

struct smp {
        const char *kind;
        char schema[XP_PATCH_PATH_MAX]; /* "spec.containers[].env": the key into patch_keys.c */
        char where[XP_PATCH_PATH_MAX];  /* "spec.containers[1].env": for messages */
        struct xp_error *err;
        bool share;       /* the target shares original's members until it descends into one */
        unsigned unplain; /* inside a value found not plain: its members are not checked again */
};

struct mark {
        size_t schema, where;
};

static struct mark push_field(struct smp *s, const char *name)
{
        return (struct mark){
            .schema = xp_patch_path_append(s->schema, s->schema[0] ? "." : "", name),
            .where = xp_patch_path_append(s->where, s->where[0] ? "." : "", name),
        };
}

static struct mark push_index(struct smp *s, size_t index)
{
        char text[32];

        snprintf(text, sizeof(text), "[%zu]", index);
        return (struct mark){
            .schema = xp_patch_path_append(s->schema, "[]", ""),
            .where = xp_patch_path_append(s->where, text, ""),
        };
}

static void pop(struct smp *s, struct mark m)
{
        s->schema[m.schema] = '\0';
        s->where[m.where] = '\0';
}

static int fail(struct smp *s, int code, const char *fmt, ...) _printf_(3, 4);
static int fail(struct smp *s, int code, const char *fmt, ...)
{
        char message[XP_ERROR_MSG_MAX];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(message, sizeof(message), fmt, ap);
        va_end(ap);
        return xp_errorf(s->err, code, "%s: %s", s->where[0] ? s->where : "patch", message);
}

static int oom(struct smp *s)
{
        return fail(s, -ENOMEM, "out of memory");
}

static int merge_map(struct smp *s, json_t *target, const json_t *patch, bool *ret_delete);

/*
 * A patch value where the original has nothing to merge with: maps and lists go through the
 * merge anyway so their directives are applied, not stored. Returns 1 when a map asked to be
 * deleted (*ret untouched), 0 with *ret.
 */
static int merge_list(struct smp *s,
                      const json_t *orig,
                      const json_t *patch,
                      const json_t *order,
                      const json_t *deletions,
                      json_t **ret);

/*
 * A sharing merge takes a value new to the target as it is where patch_plain.c finds it plain: 1
 * with *ret. -1: checked, not plain; the caller rebuilds it with s->unplain raised, so that no
 * member of it is walked again (each value is walked by one check at most). 0: not checked.
 */
static int take_plain(struct smp *s, const json_t *patch, json_t **ret)
{
        if (!s->share || s->unplain)
                return 0;
        if (!xp_patch_strategic_plain(s->kind, s->schema, patch))
                return -1;
        *ret = json_incref((json_t *)patch);
        return 1;
}

static int rebuild_value(struct smp *s, const json_t *patch, json_t **ret)
{
        json_t *value;
        bool deleted = false;
        int r;

        if (!json_is_object(patch)) {
                value = json_deep_copy(patch);
                if (!value)
                        return oom(s);
                *ret = value;
                return 0;
        }
        value = json_object();
        if (!value)
                return oom(s);
        r = merge_map(s, value, patch, &deleted);
        if (r < 0 || deleted) {
                json_decref(value);
                return r < 0 ? r : 1;
        }
        *ret = value;
        return 0;
}

/* A value new to the target (a list without directives about it), as the merge makes it. */
static int new_value(struct smp *s, const json_t *patch, json_t **ret)
{
        int plain = take_plain(s, patch, ret), r;

        if (plain > 0)
                return 0;
        s->unplain += plain < 0;
        r = json_is_array(patch) ? merge_list(s, NULL, patch, NULL, NULL, ret)
                                 : rebuild_value(s, patch, ret);
        s->unplain -= plain < 0;
        return r;
}

/* What identifies an element: its merge key's value, or the element itself for primitives. */
static const json_t *identity(const json_t *element, const char *key)
{
        return key ? json_object_get(element, key) : element;
}

static ssize_t index_of(const json_t *list, const json_t *element, const char *key)
{
        const json_t *id = identity(element, key);

        if (!id)
                return -1;
        for (size_t i = 0; i < json_array_size(list); i++) {
                const json_t *other = identity(json_array_get(list, i), key);

                if (other && xp_patch_value_equal(id, other))
                        return (ssize_t)i;
        }
        return -1;
}

struct slot {
        json_t *element;
        ssize_t order;  /* position in the order list, -1: server-only */
        ssize_t server; /* position in the original list, -1: new */
        size_t seq;     /* position in the merged list: keeps the sort stable */
};

static int compare_order(const void *a, const void *b)
{
        const struct slot *x = a, *y = b;

        if (x->order != y->order)
                return x->order < y->order ? -1 : 1;
        return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/*
 * Orders a merged list as Kubernetes does: the elements named by `order` (the patch list or
 * $setElementOrder) come in that order, and the elements only the server has keep their places
 * relative to them, by their positions in server_order (the original list). Takes merged.
 */
static int reorder(struct smp *s,
                   json_t *merged,
                   const json_t *server_order,
                   const json_t *order,
                   const char *key,
                   json_t **ret)
{
        size_t n = json_array_size(merged), n_ordered = 0, n_server = 0, i = 0, j = 0;
        _cleanup_free_ struct slot *ordered = calloc(n ? n : 1, sizeof(*ordered));
        _cleanup_free_ struct slot *server_only = calloc(n ? n : 1, sizeof(*server_only));
        json_t *result = json_array();

        if (!ordered || !server_only || !result) {
                json_decref(result);
                json_decref(merged);
                return oom(s);
        }
        for (size_t k = 0; k < n; k++) {
                struct slot slot = {
                    .element = json_array_get(merged, k),
                    .seq = k,
                };

                slot.order = index_of(order, slot.element, key);
                slot.server = index_of(server_order, slot.element, key);
                if (slot.order >= 0)
                        ordered[n_ordered++] = slot;
                else
                        server_only[n_server++] = slot;
        }
        qsort(ordered, n_ordered, sizeof(*ordered), compare_order);

        /* interleave: a server-only element goes before the next ordered one that follows it on
         * the server; when either is new to the server, the ordered one goes first */
        while (i < n_server || j < n_ordered) {
                const struct slot *next;

                if (i >= n_server)
                        next = &ordered[j++];
                else if (j >= n_ordered)
                        next = &server_only[i++];
                else if (server_only[i].server >= 0 && ordered[j].server >= 0 &&
                         server_only[i].server < ordered[j].server)
                        next = &server_only[i++];
                else
                        next = &ordered[j++];
                if (json_array_append(result, next->element) < 0) {
                        json_decref(result);
                        json_decref(merged);
                        return oom(s);
                }
        }
        json_decref(merged);
        *ret = result;
        return 0;
}

static int check_list(struct smp *s, const json_t *list, const char *what)
{
        if (json_array_size(list) > MAX_LIST)
                return fail(s,
                            -E2BIG,
                            "%s has %zu elements, more than the limit of %d for a merged list",
                            what,
                            json_array_size(list),
                            MAX_LIST);
        return 0;
}

static int remove_primitives(struct smp *s, json_t *work, const json_t *deletions)
{
        for (size_t d = 0; d < json_array_size(deletions); d++)
                for (size_t k = json_array_size(work); k > 0; k--)
                        if (xp_patch_value_equal(json_array_get(work, k - 1),
                                                 json_array_get(deletions, d)) &&
                            json_array_remove(work, k - 1) < 0)
                                return oom(s);
        return 0;
}

/* A list of primitives merged as a set: union, then $deleteFromPrimitiveList, then order. */
static int merge_set(struct smp *s,
                     json_t *work,
                     const json_t *orig,
                     const json_t *patch,
                     const json_t *order,
                     const json_t *deletions,
                     json_t **ret)
{
        int r;

        for (size_t i = 0; i < json_array_size(patch); i++) {
                json_t *element = json_array_get(patch, i);

                if (json_is_object(element) || json_is_array(element)) {
                        json_decref(work);
                        return fail(s,
                                    -EINVAL,
                                    "element %zu is a%s, but this list merges primitive values",
                                    i,
                                    json_is_object(element) ? "n object" : "n array");
                }
                if (index_of(work, element, NULL) < 0 &&
                    json_array_append_new(work, json_deep_copy(element)) < 0) {
                        json_decref(work);
                        return oom(s);
                }
        }
        r = remove_primitives(s, work, deletions);
        if (r < 0) {
                json_decref(work);
                return r;
        }
        return reorder(s, work, orig, order ? order : patch, NULL, ret);
}

/* A list of objects merged by key: $patch elements, then merging by key, then order. */
static int merge_by_key(struct smp *s,
                        json_t *work,
                        const json_t *orig,
                        const json_t *patch,
                        const json_t *order,
                        const char *key,
                        json_t **ret)
{
        _cleanup_(json_decrefp) json_t *named = json_array(); /* the patch's ordinary elements */
        bool replace = false;
        struct mark m;
        int r = 0;

        if (!named) {
                json_decref(work);
                return oom(s);
        }
        for (size_t i = 0; i < json_array_size(patch) && r == 0; i++) {
                json_t *element = json_array_get(patch, i), *directive;
                const char *value;

                m = push_index(s, i);
                if (!json_is_object(element)) {
                        r = fail(s,
                                 -EINVAL,
                                 "not an object, but this list merges objects by \"%s\"",
                                 key);
                } else if (!(directive = json_object_get(element, DIRECTIVE))) {
                        if (!json_object_get(element, key))
                                r = fail(s, -EINVAL, "missing merge key \"%s\"", key);
                        else if (json_array_append(named, element) < 0)
                                r = oom(s);
                } else if (!json_is_string(directive)) {
                        r = fail(s, -EINVAL, "$patch is not a string");
                } else if (strcmp(value = json_string_value(directive), "delete") == 0) {
                        const json_t *id = json_object_get(element, key);

                        if (!id)
                                r = fail(
                                    s, -EINVAL, "$patch: delete needs the merge key \"%s\"", key);
                        for (ssize_t at; r == 0 && (at = index_of(work, element, key)) >= 0;)
                                if (json_array_remove(work, (size_t)at) < 0)
                                        r = oom(s);
                } else if (strcmp(value, "replace") == 0) {
                        replace = true;
                } else if (strcmp(value, "merge") == 0) {
                        if (!json_object_get(element, key))
                                r = fail(s, -EINVAL, "missing merge key \"%s\"", key);
                        else if (json_array_append(named, element) < 0)
                                r = oom(s);
                } else {
                        r = fail(s,
                                 -EINVAL,
                                 "unknown $patch value \"%s\" (expected replace, delete or merge)",
                                 value);
                }
                pop(s, m);
        }
        if (r == 0 && replace)
                r = json_array_clear(work) < 0 ? oom(s) : 0;

        for (size_t i = 0, n = 0; i < json_array_size(patch) && r == 0; i++) {
                json_t *element = json_array_get(patch, i), *merged;
                bool deleted = false;
                ssize_t at;

                if (n >= json_array_size(named) || element != json_array_get(named, n))
                        continue;
                n++;
                m = push_index(s, i);
                at = index_of(work, element, key);
                if (at >= 0) {
                        r = merge_map(s, json_array_get(work, (size_t)at), element, &deleted);
                } else {
                        merged = json_object();
                        if (!merged)
                                r = oom(s);
                        else
                                r = merge_map(s, merged, element, &deleted);
                        if (r == 0 && json_array_append_new(work, merged) < 0)
                                r = oom(s);
                        else if (r < 0)
                                json_decref(merged);
                }
                pop(s, m);
        }
        for (size_t i = 0; i < json_array_size(order) && r == 0; i++)
                if (!json_is_object(json_array_get(order, i)) ||
                    !json_object_get(json_array_get(order, i), key))
                        r = fail(
                            s, -EINVAL, "$setElementOrder[%zu]: missing merge key \"%s\"", i, key);
        if (r == 0)
                r = check_list(s, work, "the result");
        if (r < 0) {
                json_decref(work);
                return r;
        }
        return reorder(s, work, orig, order ? order : named, key, ret);
}

static int merge_list(struct smp *s,
                      const json_t *orig,
                      const json_t *patch,
                      const json_t *order,
                      const json_t *deletions,
                      json_t **ret)
{
        const char *key = NULL;
        json_t *work, *result;
        int r;

        if (xp_patch_list_strategy(s->kind, s->schema, &key)) {
                if ((r = check_list(s, orig, "the list")) < 0 ||
                    (r = check_list(s, patch, "the patch list")) < 0 ||
                    (r = check_list(s, order, "$setElementOrder")) < 0)
                        return r;
                work = orig ? json_deep_copy(orig) : json_array();
                if (!work)
                        return oom(s);
                if (key)
                        return merge_by_key(s, work, orig, patch, order, key, ret);
                return merge_set(s, work, orig, patch, order, deletions, ret);
        }

        /* no strategy: the patch list replaces the original */
        if (!patch) {
                work = orig ? json_deep_copy(orig) : json_array();
                if (!work)
                        return oom(s);
                r = remove_primitives(s, work, deletions);
                if (r < 0) {
                        json_decref(work);
                        return r;
                }
                *ret = work;
                return 0;
        }
        result = json_array();
        if (!result)
                return oom(s);
        for (size_t i = 0; i < json_array_size(patch); i++) {
                struct mark m = push_index(s, i);
                json_t *value;

                r = new_value(s, json_array_get(patch, i), &value);
                pop(s, m);
                if (r == 0 && json_array_append_new(result, value) < 0)
                        r = oom(s);
                if (r < 0) {
                        json_decref(result);
                        return r;
                }
        }
        *ret = result;
        return 0;
}

/* Merges the list field `field` of target with patch[field] and its directives. */
static int merge_list_field(struct smp *s, json_t *target, const json_t *patch, const char *field)
{
        char order_key[XP_PATCH_PATH_MAX], deletions_key[XP_PATCH_PATH_MAX];
        const json_t *list, *order, *deletions;
        json_t *orig, *result = NULL;
        struct mark m;
        int r = 0;

        snprintf(order_key, sizeof(order_key), SET_ELEMENT_ORDER "%s", field);
        snprintf(deletions_key, sizeof(deletions_key), DELETE_FROM_PRIMITIVE_LIST "%s", field);
        list = json_object_get(patch, field);
        order = json_object_get(patch, order_key);
        deletions = json_object_get(patch, deletions_key);
        orig = json_object_get(target, field);
        if (!json_is_array(orig))
                orig = NULL;

        m = push_field(s, field);
        if (order && !json_is_array(order))
                r = fail(s, -EINVAL, "%s is not a list", order_key);
        else if (deletions && !json_is_array(deletions))
                r = fail(s, -EINVAL, "%s is not a list", deletions_key);
        else if (list && !json_is_array(list))
                r = fail(
                    s, -EINVAL, "%s and %s need a list", order ? order_key : deletions_key, field);
        else if (!list && !orig)
                goto out; /* directives about a list that does not exist change nothing */
        else
                r = orig || order || deletions
                        ? merge_list(s, orig, list, order, deletions, &result)
                        : new_value(s, list, &result);
        if (r == 0 && json_object_set_new(target, field, result) < 0)
                r = oom(s);
out:
        pop(s, m);
        return r;
}

/* Applies $retainKeys: the members the patch keeps; the others go from target. */
static int retain_keys(struct smp *s, json_t *target, const json_t *patch, const json_t *keep)
{
        const char *key;
        json_t *value, *tmp;

        if (!json_is_array(keep))
                return fail(s, -EINVAL, "$retainKeys is not a list");
        for (size_t i = 0; i < json_array_size(keep); i++)
                if (!json_is_string(json_array_get(keep, i)))
                        return fail(s, -EINVAL, "$retainKeys[%zu] is not a string", i);
        json_object_foreach((json_t *)patch, key, value)
        {
                json_t *name = json_string(key);
                ssize_t at;

                if (!name)
                        return oom(s);
                at = index_of(keep, name, NULL);
                json_decref(name);
                if (key[0] != '$' && !json_is_null(value) && at < 0)
                        return fail(s, -EINVAL, "\"%s\" is set but not in $retainKeys", key);
        }
        json_object_foreach_safe(target, tmp, key, value)
        {
                json_t *name = json_string(key);
                ssize_t at;

                if (!name)
                        return oom(s);
                at = index_of(keep, name, NULL);
                json_decref(name);
                if (at < 0)
                        json_object_del(target, key);
        }
        return 0;
}

static bool has_prefix(const char *s, const char *prefix)
{
        return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* Gives target a copy of its member key (an object) in place of the one it shares with the
 * original, one level deep: what the merge changes below it is copied as it descends. */
static int own_member(json_t *target, const char *key)
{
        json_t *copy = json_copy(json_object_get(target, key));

        return copy && json_object_set_new(target, key, copy) == 0 ? 0 : -ENOMEM;
}

/*
 * Merges patch (an object) into target (an object we own), in place. *ret_delete is set when the
 * patch says `$patch: delete`: the caller then removes the map.
 */
static int merge_map(struct smp *s, json_t *target, const json_t *patch, bool *ret_delete)
{
        const json_t *directive = json_object_get(patch, DIRECTIVE), *keep;
        const char *key;
        json_t *value;
        int r;

        if (directive) {
                const char *name = json_string_value(directive);

                if (!name)
                        return fail(s, -EINVAL, "$patch is not a string");
                if (strcmp(name, "delete") == 0) {
                        *ret_delete = true;
                        return 0;
                }
                if (strcmp(name, "replace") == 0)
                        json_object_clear(target);
                else if (strcmp(name, "merge") != 0)
                        return fail(
                            s,
                            -EINVAL,
                            "unknown $patch value \"%s\" (expected replace, delete or merge)",
                            name);
        }
        keep = json_object_get(patch, RETAIN_KEYS);
        if (keep && (r = retain_keys(s, target, patch, keep)) < 0)
                return r;

        json_object_foreach((json_t *)patch, key, value)
        {
                const char *field = NULL;
                struct mark m;

                if (strcmp(key, DIRECTIVE) == 0 || strcmp(key, RETAIN_KEYS) == 0)
                        continue;
                if (has_prefix(key, SET_ELEMENT_ORDER))
                        field = key + strlen(SET_ELEMENT_ORDER);
                else if (has_prefix(key, DELETE_FROM_PRIMITIVE_LIST))
                        field = key + strlen(DELETE_FROM_PRIMITIVE_LIST);
                else if (key[0] == '$')
                        return fail(
                            s,
                            -EINVAL,
                            "unknown directive \"%s\" (expected $patch, $retainKeys, $setElementOrder/<field> or $deleteFromPrimitiveList/<field>)",
                            key);
                if (field) {
                        if (field[0] == '\0' || field[0] == '$')
                                return fail(s, -EINVAL, "directive \"%s\" names no field", key);
                        /* the list itself, when in the patch, handles its directives */
                        if (json_is_array(json_object_get(patch, field)))
                                continue;
                        r = merge_list_field(s, target, patch, field);
                } else if (json_is_null(value)) {
                        json_object_del(target, key);
                        r = 0;
                } else if (json_is_array(value)) {
                        r = merge_list_field(s, target, patch, key);
                } else if (json_is_object(value) && json_is_object(json_object_get(target, key))) {
                        bool deleted = false;

                        if (s->share && own_member(target, key) < 0)
                                return oom(s);
                        m = push_field(s, key);
                        r = merge_map(s, json_object_get(target, key), value, &deleted);
                        pop(s, m);
                        if (r == 0 && deleted)
                                json_object_del(target, key);
                } else {
                        json_t *fresh;

                        m = push_field(s, key);
                        r = new_value(s, value, &fresh);
                        pop(s, m);
                        if (r == 1)
                                json_object_del(target, key);
                        else if (r == 0 && json_object_set_new(target, key, fresh) < 0)
                                r = oom(s);
                        r = r < 0 ? r : 0;
                }
                if (r < 0)
                        return r;
        }
        return 0;
}

int xp_patch_strategic_apply(const char *kind,
                             const json_t *original,
                             const json_t *patch,
                             bool share,
                             json_t **ret,
                             struct xp_error *err)
{
        struct smp s = {.kind = kind, .err = err, .share = share};
        bool deleted = false;
        json_t *target;
        int r;

        if (!json_is_object(patch))
                return xp_errorf(
                    err, -EINVAL, "patch: a strategic merge patch must be a JSON object");
        if (!json_is_object(original))
                target = json_object();
        else
                target = share ? json_copy((json_t *)original) : json_deep_copy(original);
        if (!target)
                return xp_errorf(err, -ENOMEM, "patch: out of memory copying the object");
        r = merge_map(&s, target, patch, &deleted);
        if (r < 0) {
                json_decref(target);
                return r;
        }
        if (deleted)
                json_object_clear(target);
        *ret = target;
        return 0;
}
