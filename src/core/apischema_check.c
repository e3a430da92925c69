/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Checks a JSON value against the API schema, with the codec's context (path, source positions)
 * and the codec's words for each kind of value, so a field xpool keeps without modelling it is
 * refused exactly as a modelled one would be.
 */
#include <errno.h>
#include <stdint.h>

#include "schema.h"
#include "xpool/apischema.h"
#include "xpool/jsonliteral.h"
#include "xpool/quantity.h"

static int check_value(struct xp_decode_ctx *ctx, const struct xp_apivalue *v, const json_t *json);

/* What a value of v is called in a type error: the codec's words for its own fields. */
static const char *expected_name(const struct xp_apivalue *v)
{
        bool of_strings = v->element && v->element->kind == XP_APIVALUE_STRING;

        if (v->kind == XP_APIVALUE_LIST)
                return of_strings ? "a list of strings" : "a list";
        if (v->kind == XP_APIVALUE_MAP && v->element->kind == XP_APIVALUE_QUANTITY)
                return "a mapping of resource names to quantities";
        if (v->kind == XP_APIVALUE_MAP)
                return of_strings ? "a mapping of strings" : "a mapping";
        return "a mapping";
}

static int unknown_field(struct xp_decode_ctx *ctx, const struct xp_apitype *type, const char *key)
{
        int r;

        xp_path_push_field(&ctx->path, key);
        r = xp_decode_fail(ctx, -EINVAL, NULL, true, "unknown field \"%s\" in %s", key, type->name);
        xp_path_pop(&ctx->path);
        return r;
}

enum segment {
        FIELD,
        KEY,
        INDEX
};

/* Checks json as v one path segment below the current path; null means absent, as Kubernetes
 * reads it, for a field, a map value or a list element alike. */
static int check_below(struct xp_decode_ctx *ctx,
                       enum segment segment,
                       const char *name,
                       size_t index,
                       const struct xp_apivalue *v,
                       const json_t *json)
{
        int r;

        /* one of the program's own trees, which passed when it was made (xpool/jsonliteral.h) */
        if (json_is_null(json) || (json_is_object(json) && xp_json_is_shared_tree(json)))
                return 0;
        if (segment == FIELD)
                xp_path_push_field(&ctx->path, name);
        else if (segment == KEY)
                xp_path_push_key(&ctx->path, name);
        else
                xp_path_push_index(&ctx->path, index);
        r = check_value(ctx, v, json);
        xp_path_pop(&ctx->path);
        return r;
}

static int
check_members(struct xp_decode_ctx *ctx, const struct xp_apitype *type, const json_t *json)
{
        const char *key;
        json_t *member;

        json_object_foreach((json_t *)json, key, member)
        {
                const struct xp_apifield *field = xp_apitype_field(type, key);
                int r;

                /* one it does not know is kept as sent and not checked, as the codec keeps it */
                if (!field && (ctx->flags & XP_DECODE_STRICT))
                        return unknown_field(ctx, type, key);
                r = field ? check_below(ctx, FIELD, key, 0, field->value, member) : 0;
                if (r < 0)
                        return r;
        }
        return 0;
}

/* The elements of a list, or the values of a map. */
static int
check_elements(struct xp_decode_ctx *ctx, const struct xp_apivalue *v, const json_t *json)
{
        const char *key;
        json_t *element;
        size_t i;
        int r;

        if (v->kind == XP_APIVALUE_LIST ? !json_is_array(json) : !json_is_object(json))
                return xp_decode_type_error(ctx, json, expected_name(v));
        /* one of the two loops runs: the first over a list, the second over a mapping */
        json_array_foreach(json, i, element)
        {
                r = check_below(ctx, INDEX, NULL, i, v->element, element);
                if (r < 0)
                        return r;
        }
        json_object_foreach((json_t *)json, key, element)
        {
                r = check_below(ctx, KEY, key, 0, v->element, element);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int check_value(struct xp_decode_ctx *ctx, const struct xp_apivalue *v, const json_t *json)
{
        struct xp_quantity q;
        int64_t n;

        switch (v->kind) {
        case XP_APIVALUE_STRING:
                return json_is_string(json) ? 0 : xp_decode_type_error(ctx, json, "a string");
        case XP_APIVALUE_BOOL:
                return json_is_boolean(json)
                           ? 0
                           : xp_decode_type_error(ctx, json, "a boolean (true or false)");
        case XP_APIVALUE_INT32:
        case XP_APIVALUE_INT64:
                return xp_decode_integer(ctx, json, v->kind == XP_APIVALUE_INT32, &n);
        case XP_APIVALUE_DOUBLE:
                return json_is_number(json) ? 0 : xp_decode_type_error(ctx, json, "a number");
        case XP_APIVALUE_QUANTITY:
                return xp_decode_quantity(ctx, json, &q);
        case XP_APIVALUE_INT_OR_STRING:
                if (json_is_string(json))
                        return 0;
                if (json_is_number(json))
                        return xp_decode_integer(ctx, json, true, &n);
                return xp_decode_type_error(ctx, json, "an integer or a string");
        case XP_APIVALUE_TIME:
        case XP_APIVALUE_MICROTIME:
                return xp_decode_time(ctx, json, v->kind == XP_APIVALUE_MICROTIME, &n);
        case XP_APIVALUE_OBJECT:
                return json_is_object(json) ? 0 : xp_decode_type_error(ctx, json, "a mapping");
        case XP_APIVALUE_TYPE:
                if (!json_is_object(json))
                        return xp_decode_type_error(ctx, json, "a mapping");
                return check_members(ctx, v->type, json);
        case XP_APIVALUE_LIST:
        case XP_APIVALUE_MAP:
                return check_elements(ctx, v, json);
        }
        return xp_decode_fail(ctx, -EINVAL, NULL, false, "the API schema holds an unknown type");
}

int xp_apischema_check_at(struct xp_decode_ctx *ctx,
                          const struct xp_apitype *type,
                          const json_t *json)
{
        struct xp_apivalue v = {.kind = XP_APIVALUE_TYPE, .type = type};

        return check_value(ctx, &v, json);
}

int xp_apischema_check(const struct xp_apitype *type,
                       const json_t *json,
                       unsigned flags,
                       struct xp_error *err)
{
        struct xp_decode_ctx ctx = {.flags = flags, .err = err};
        int r = xp_decode_check_depth(&ctx, json);

        return r < 0 ? r : xp_apischema_check_at(&ctx, type, json);
}
