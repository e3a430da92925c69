/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A strategic merge patch's value that merges into nothing (a new member, or the members of a
 * map its `$patch: replace` emptied: an agent's whole pod status) comes out of the merge equal to
 * itself when it holds no directive, no null in a map (a null deletes the member) and no list the
 * merge would change (a list merged by key: objects with their key, each key once; merged as a
 * set: primitives, each once). Such a value is shared into a sharing merge's result rather than
 * rebuilt member by member.
 */
#include <string.h>

#include "patch_internal.h"
#include "xpool/patch.h"

/* elements compared pairwise for uniqueness; a longer list goes through the merge */
#define UNIQUE_CHECK_MAX 64

size_t xp_patch_path_append(char *path, const char *a, const char *b)
{
        const char *parts[] = {a, b};
        size_t len = strlen(path), at = len;

        /* as snprintf(path + len, XP_PATCH_PATH_MAX - len, "%s%s", a, b) cuts it */
        for (size_t i = 0; i < 2; i++)
                for (const char *c = parts[i]; *c && at + 1 < XP_PATCH_PATH_MAX; c++)
                        path[at++] = *c;
        path[at] = '\0';
        return len;
}

static bool plain_value(const char *kind, char *path, const json_t *value);

/* Whether no two elements of list have the same identity (its merge key's value, or itself). */
static bool unique(const json_t *list, const char *key)
{
        size_t n = json_array_size(list);

        if (n > UNIQUE_CHECK_MAX)
                return false;
        for (size_t i = 1; i < n; i++) {
                const json_t *a = json_array_get(list, i);

                for (size_t j = 0; j < i; j++) {
                        const json_t *b = json_array_get(list, j);

                        if (xp_patch_value_equal(key ? json_object_get(a, key) : a,
                                                 key ? json_object_get(b, key) : b))
                                return false;
                }
        }
        return true;
}

/* Whether each element is what the list's merge takes as it is: an object with the merge key, or
 * a primitive for a set; a list without a strategy takes anything. */
static bool elements_fit(const json_t *list, bool merged, const char *key)
{
        const json_t *element;
        size_t i;

        if (!merged)
                return true;
        json_array_foreach(list, i, element)
        {
                if (key ? !json_is_object(element) || !json_object_get(element, key)
                        : json_is_object(element) || json_is_array(element))
                        return false;
        }
        return unique(list, key);
}

static bool plain_list(const char *kind, char *path, const json_t *list)
{
        const char *key = NULL;
        bool merged = xp_patch_list_strategy(kind, path, &key), plain;
        const json_t *element;
        size_t len, i;

        if (!elements_fit(list, merged, key))
                return false;
        len = xp_patch_path_append(path, "[]", "");
        plain = true;
        json_array_foreach(list, i, element)
        {
                plain = plain_value(kind, path, element);
                if (!plain)
                        break;
        }
        path[len] = '\0';
        return plain;
}

static bool plain_map(const char *kind, char *path, const json_t *map)
{
        const char *key;
        json_t *member;

        json_object_foreach((json_t *)map, key, member)
        {
                size_t len;
                bool plain;

                if (key[0] == '$' || json_is_null(member))
                        return false;
                len = xp_patch_path_append(path, path[0] ? "." : "", key);
                plain = plain_value(kind, path, member);
                path[len] = '\0';
                if (!plain)
                        return false;
        }
        return true;
}

static bool plain_value(const char *kind, char *path, const json_t *value)
{
        if (json_is_object(value))
                return plain_map(kind, path, value);
        if (json_is_array(value))
                return plain_list(kind, path, value);
        return true;
}

bool xp_patch_strategic_plain(const char *kind, char *path, const json_t *value)
{
        return plain_value(kind, path, value);
}
