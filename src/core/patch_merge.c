/* SPDX-License-Identifier: Apache-2.0 */
/*
 * RFC 7386 JSON merge patch, and the two- and three-way diffs that produce one (kubectl apply for
 * types without strategic merge information).
 */
#include <errno.h>

#include "patch_internal.h"
#include "xpool/patch.h"

/* MergePatch(target, patch) of RFC 7386 section 2; target (may be NULL) is borrowed. */
static json_t *merge(const json_t *target, const json_t *patch)
{
        const char *key;
        json_t *value, *result;

        if (!json_is_object(patch))
                return json_deep_copy(patch);

        result = json_is_object(target) ? json_deep_copy(target) : json_object();
        if (!result)
                return NULL;
        json_object_foreach((json_t *)patch, key, value)
        {
                json_t *merged;

                if (json_is_null(value)) {
                        json_object_del(result, key);
                        continue;
                }
                merged = merge(json_object_get(result, key), value);
                if (!merged || json_object_set_new(result, key, merged) < 0) {
                        json_decref(result);
                        return NULL;
                }
        }
        return result;
}

int xp_patch_merge_apply(const json_t *original, const json_t *patch, json_t **ret)
{
        json_t *result = merge(original, patch);

        if (!result)
                return -ENOMEM;
        *ret = result;
        return 0;
}

/* Sets key to a copy of value (or to null when value is NULL). */
static int set_copy(json_t *object, const char *key, const json_t *value)
{
        json_t *copy = value ? json_deep_copy(value) : json_null();

        if (!copy || json_object_set_new(object, key, copy) < 0)
                return -ENOMEM;
        return 0;
}

static int diff(const json_t *from, const json_t *to, json_t **ret)
{
        const char *key;
        json_t *value, *patch;
        int r;

        patch = json_object();
        if (!patch)
                return -ENOMEM;
        json_object_foreach((json_t *)from, key, value) if (!json_object_get(to, key) &&
                                                            set_copy(patch, key, NULL) <
                                                                0) goto oom;
        json_object_foreach((json_t *)to, key, value)
        {
                json_t *old = json_object_get(from, key), *sub;

                if (old && json_is_object(old) && json_is_object(value)) {
                        r = diff(old, value, &sub);
                        if (r < 0)
                                goto oom;
                        if (json_object_size(sub) == 0) {
                                json_decref(sub);
                                continue;
                        }
                        if (json_object_set_new(patch, key, sub) < 0)
                                goto oom;
                } else if (!old || !json_equal(old, value)) {
                        if (set_copy(patch, key, value) < 0)
                                goto oom;
                }
        }
        *ret = patch;
        return 0;
oom:
        json_decref(patch);
        return -ENOMEM;
}

int xp_patch_merge_diff(const json_t *from, const json_t *to, json_t **ret)
{
        json_t *patch;
        int r;

        if (xp_patch_check_depth(from, "from", NULL) < 0 ||
            xp_patch_check_depth(to, "to", NULL) < 0)
                return -E2BIG;
        if (!json_is_object(from) || !json_is_object(to)) {
                /* a non-object patch replaces the whole value (RFC 7386) */
                patch = json_equal(from, to) ? json_object() : json_deep_copy(to);
                if (!patch)
                        return -ENOMEM;
                *ret = patch;
                return 0;
        }
        r = diff(from, to, &patch);
        if (r < 0)
                return r;
        *ret = patch;
        return 0;
}

/*
 * One object level of the three-way patch. last may be NULL. Deletions come from last vs modified
 * only for members that current still has (deleting what is gone already is a no-op anyway, and
 * leaving it out keeps "nothing changed" an empty patch).
 */
static int
three_way(const json_t *last, const json_t *modified, const json_t *current, json_t **ret)
{
        const char *key;
        json_t *value, *patch;
        int r;

        patch = json_object();
        if (!patch)
                return -ENOMEM;
        json_object_foreach((json_t *)last, key, value) if (!json_object_get(modified, key) &&
                                                            json_object_get(current, key) &&
                                                            set_copy(patch, key, NULL) <
                                                                0) goto oom;
        json_object_foreach((json_t *)modified, key, value)
        {
                json_t *now = json_object_get(current, key), *before = json_object_get(last, key),
                       *sub;

                if (json_is_object(value) && json_is_object(now)) {
                        r = three_way(json_is_object(before) ? before : NULL, value, now, &sub);
                        if (r < 0)
                                goto oom;
                        if (json_object_size(sub) == 0) {
                                json_decref(sub);
                                continue;
                        }
                        if (json_object_set_new(patch, key, sub) < 0)
                                goto oom;
                } else if (!now || !json_equal(now, value)) {
                        if (set_copy(patch, key, value) < 0)
                                goto oom;
                }
        }
        *ret = patch;
        return 0;
oom:
        json_decref(patch);
        return -ENOMEM;
}

int xp_patch_merge_three_way(const json_t *last_applied,
                             const json_t *modified,
                             const json_t *current,
                             json_t **ret)
{
        if (!json_is_object(modified) || !json_is_object(current) ||
            (last_applied && !json_is_object(last_applied)))
                return -EINVAL;
        if ((last_applied && xp_patch_check_depth(last_applied, "last applied", NULL) < 0) ||
            xp_patch_check_depth(modified, "modified", NULL) < 0 ||
            xp_patch_check_depth(current, "current", NULL) < 0)
                return -E2BIG;
        return three_way(last_applied, modified, current, ret);
}
