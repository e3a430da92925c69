/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Whether every path of a source's set names a value of the source (managed_update.c): a write
 * whose two sides have that one source then changes no ownership, and the set need not be made
 * and walked. The check follows fields_of_object() (managedfields.c) member by member and finds
 * each path element as xp_fieldset_value_at() would: a member by a name that fits a path
 * element, a list item by its own key, which must find that item and no earlier one. Where it
 * cannot say (a name too long, a key that finds another item, a depth near the walk's bound)
 * it answers false, and the set is made and walked.
 */
#include <stdlib.h>
#include <string.h>

#include "managedfields_internal.h"
#include "xpool/apischema.h"

#define NAME_FITS  1021 /* bytes of a name in managedfields.c's 1024-byte "f:<name>" element */
#define DEPTH_SURE (XP_FIELDSET_MAX_DEPTH - 8)

static bool object_named(const struct xp_apitype *type, const json_t *object, size_t depth);

/* Items at depth; a keyed item's fields one below. */
static bool list_named(const struct xp_apifield *f, const json_t *list, size_t depth)
{
        bool keyed = f->merge == XP_APIMERGE_MAP;
        const json_t *item;
        size_t i;

        json_array_foreach(list, i, item)
        {
                char *key = keyed ? xp_fieldset_item_key(f, item) : xp_fieldset_set_key(item);
                bool named = key && xp_fieldset_find_item(list, key) == (ssize_t)i;

                free(key);
                if (named && keyed)
                        named = object_named(f->value->element->type, item, depth + 1);
                if (!named)
                        return false;
        }
        return true;
}

/* The elements value's set holds are at depth. */
static bool value_named(const struct xp_apifield *f,
                        const struct xp_apivalue *v,
                        const json_t *value,
                        size_t depth)
{
        enum xp_apimerge merge = f ? f->merge : XP_APIMERGE_GRANULAR;
        const char *key;
        json_t *member;

        if (depth >= DEPTH_SURE)
                return false;
        if (v->kind == XP_APIVALUE_TYPE && json_is_object(value) && !v->type->atomic &&
            merge != XP_APIMERGE_ATOMIC)
                return object_named(v->type, value, depth);
        if (v->kind == XP_APIVALUE_MAP && json_is_object(value) && merge != XP_APIMERGE_ATOMIC) {
                json_object_foreach((json_t *)value, key, member)
                {
                        if (strlen(key) > NAME_FITS ||
                            !value_named(NULL, v->element, member, depth + 1))
                                return false;
                }
                return true;
        }
        if (v->kind == XP_APIVALUE_LIST && json_is_array(value) && f &&
            (f->merge == XP_APIMERGE_MAP || f->merge == XP_APIMERGE_SET))
                return list_named(f, value, depth);
        return true;
}

static bool object_named(const struct xp_apitype *type, const json_t *object, size_t depth)
{
        const char *key;
        json_t *member;

        if (depth >= DEPTH_SURE)
                return false;
        json_object_foreach((json_t *)object, key, member)
        {
                const struct xp_apifield *f = xp_apitype_field(type, key);

                if (strlen(key) > NAME_FITS || (f && !value_named(f, f->value, member, depth + 1)))
                        return false;
        }
        return true;
}

bool xp_fieldset_names_all(const struct xp_apitype *type, const json_t *source)
{
        return object_named(type, source, 0);
}
