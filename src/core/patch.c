/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <string.h>
#include <strings.h>

#include "patch_internal.h"
#include "xpool/codec.h"
#include "xpool/patch.h"

/* The server stores only objects it can patch afterwards. */
_Static_assert(XP_OBJECT_MAX_DEPTH <= XP_PATCH_MAX_DEPTH, "a stored object must be patchable");

static const struct {
        enum xp_patch_type type;
        const char *content_type;
} patch_types[] = {
    {.type = XP_PATCH_JSON, .content_type = "application/json-patch+json"},
    {.type = XP_PATCH_MERGE, .content_type = "application/merge-patch+json"},
    {.type = XP_PATCH_STRATEGIC, .content_type = "application/strategic-merge-patch+json"},
    {.type = XP_PATCH_APPLY, .content_type = "application/apply-patch+yaml"},
};

int xp_patch_type_from_content_type(const char *content_type,
                                    enum xp_patch_type *ret,
                                    struct xp_error *err)
{
        const char *start, *end;

        if (!content_type)
                return xp_errorf(
                    err,
                    -EINVAL,
                    "missing patch content type: use application/json-patch+json, application/merge-patch+json or application/strategic-merge-patch+json");

        start = content_type + strspn(content_type, " \t");
        end = start + strcspn(start, ";");
        while (end > start && (end[-1] == ' ' || end[-1] == '\t'))
                end--;
        for (size_t i = 0; i < XP_ELEMENTSOF(patch_types); i++) {
                size_t len = strlen(patch_types[i].content_type);

                if ((size_t)(end - start) == len &&
                    strncasecmp(start, patch_types[i].content_type, len) == 0) {
                        *ret = patch_types[i].type;
                        return 0;
                }
        }
        return xp_errorf(
            err,
            -EINVAL,
            "unsupported patch content type \"%s\": use application/json-patch+json, application/merge-patch+json or application/strategic-merge-patch+json",
            content_type);
}

const char *xp_patch_type_to_content_type(enum xp_patch_type type)
{
        for (size_t i = 0; i < XP_ELEMENTSOF(patch_types); i++)
                if (patch_types[i].type == type)
                        return patch_types[i].content_type;
        return NULL;
}

static bool number_equal(const json_t *a, const json_t *b)
{
        /* integers compare exactly; a real only equals an integer that converts without loss */
        if (json_is_integer(a) && json_is_integer(b))
                return json_integer_value(a) == json_integer_value(b);
        return json_number_value(a) == json_number_value(b);
}

bool xp_patch_value_equal(const json_t *a, const json_t *b)
{
        const char *key;
        json_t *value;

        if (json_is_number(a) && json_is_number(b))
                return number_equal(a, b);
        if (json_typeof(a) != json_typeof(b))
                return false;
        switch (json_typeof(a)) {
        case JSON_OBJECT:
                if (json_object_size(a) != json_object_size(b))
                        return false;
                json_object_foreach((json_t *)a, key, value)
                {
                        json_t *other = json_object_get(b, key);

                        if (!other || !xp_patch_value_equal(value, other))
                                return false;
                }
                return true;
        case JSON_ARRAY:
                if (json_array_size(a) != json_array_size(b))
                        return false;
                for (size_t i = 0; i < json_array_size(a); i++)
                        if (!xp_patch_value_equal(json_array_get(a, i), json_array_get(b, i)))
                                return false;
                return true;
        case JSON_STRING:
                return json_string_length(a) == json_string_length(b) &&
                       memcmp(json_string_value(a), json_string_value(b), json_string_length(a)) ==
                           0;
        default:
                return true; /* true, false, null: the type is the value */
        }
}

int xp_patch_check_depth(const json_t *value, const char *what, struct xp_error *err)
{
        if (xp_json_deeper_than(value, XP_PATCH_MAX_DEPTH))
                return xp_errorf(
                    err, -E2BIG, "%s: nesting deeper than %d levels", what, XP_PATCH_MAX_DEPTH);
        return 0;
}

static int patch_apply(enum xp_patch_type type,
                       const char *kind,
                       const json_t *original,
                       const json_t *patch,
                       bool share,
                       json_t **ret,
                       struct xp_error *err)
{
        int r;

        if (!original || !patch)
                return xp_errorf(err, -EINVAL, "patch: missing %s", original ? "patch" : "object");
        r = xp_patch_check_depth(original, "object", err);
        if (r < 0)
                return r;
        r = xp_patch_check_depth(patch, "patch", err);
        if (r < 0)
                return r;

        switch (type) {
        case XP_PATCH_JSON:
                return xp_patch_json_apply(original, patch, ret, err);
        case XP_PATCH_MERGE:
                r = xp_patch_merge_apply(original, patch, ret);
                return r < 0 ? xp_errorf(err, r, "merge patch: out of memory") : r;
        case XP_PATCH_STRATEGIC:
                if (!xp_patch_kind_known(kind)) {
                        r = xp_patch_merge_apply(original, patch, ret);
                        return r < 0 ? xp_errorf(err, r, "merge patch: out of memory") : r;
                }
                return xp_patch_strategic_apply(kind, original, patch, share, ret, err);
        case XP_PATCH_APPLY:
                return xp_errorf(
                    err, -EINVAL, "an apply patch is merged by its field manager: use xp_apply()");
        }
        return xp_errorf(err, -EINVAL, "unknown patch type %d", (int)type);
}

int xp_patch_apply(enum xp_patch_type type,
                   const char *kind,
                   const json_t *original,
                   const json_t *patch,
                   json_t **ret,
                   struct xp_error *err)
{
        return patch_apply(type, kind, original, patch, false, ret, err);
}

int xp_patch_apply_sharing(enum xp_patch_type type,
                           const char *kind,
                           const json_t *original,
                           const json_t *patch,
                           json_t **ret,
                           struct xp_error *err)
{
        return patch_apply(type, kind, original, patch, true, ret, err);
}
