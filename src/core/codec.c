/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec_body.h"
#include "schema.h"
#include "xpool/apischema.h"
#include "xpool/jsonliteral.h"
#include "xpool/quantity.h"
#include "xpool/strutil.h"
#include "xpool/timeutil.h"

#define AT(object, offset)       ((void *)((char *)(object) + (offset)))
#define AT_CONST(object, offset) ((const void *)((const char *)(object) + (offset)))

/* ---- errors -------------------------------------------------------------------------------- */

/* The position of the deepest recorded ancestor of the current path. */
static bool locate(const struct xp_decode_ctx *ctx,
                   const char *key_segment,
                   bool at_key,
                   struct xp_source_pos *ret)
{
        struct xp_path path = ctx->path;
        char pointer[XP_PATH_TEXT_MAX];

        if (!ctx->source || !ctx->source->map)
                return false;
        if (key_segment)
                xp_path_push_key(&path, key_segment);
        for (;;) {
                struct xp_source_entry entry;

                xp_path_pointer(&path, pointer, sizeof(pointer));
                if (path.depth <= XP_PATH_MAX_DEPTH &&
                    xp_source_map_lookup(ctx->source->map, pointer, &entry) == 0) {
                        *ret = at_key ? entry.key : entry.value;
                        return ret->line > 0;
                }
                if (path.depth == 0)
                        return false;
                /* an ancestor stands for a missing member: point at it, not at its key */
                at_key = false;
                xp_path_pop(&path);
        }
}

static int fail_message(
    struct xp_decode_ctx *ctx, int code, const char *key_segment, bool at_key, const char *message)
{
        struct xp_path path = ctx->path;
        char where[64] = "";
        char text[XP_PATH_TEXT_MAX];
        struct xp_source_pos pos;

        if (key_segment)
                xp_path_push_key(&path, key_segment);
        xp_path_format(&path, text, sizeof(text));
        if (locate(ctx, key_segment, at_key, &pos))
                snprintf(where, sizeof(where), ":%u:%u", pos.line, pos.column);

        if (ctx->source && ctx->source->name)
                return xp_errorf(ctx->err,
                                 code,
                                 "%s%s: %s%s%s",
                                 ctx->source->name,
                                 where,
                                 text,
                                 text[0] ? ": " : "",
                                 message);
        return xp_errorf(ctx->err, code, "%s%s%s", text, text[0] ? ": " : "", message);
}

int xp_decode_fail(
    struct xp_decode_ctx *ctx, int code, const char *key_segment, bool at_key, const char *fmt, ...)
{
        char message[XP_ERROR_MSG_MAX];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(message, sizeof(message), fmt, ap);
        va_end(ap);
        return fail_message(ctx, code, key_segment, at_key, message);
}

int xp_decode_fail_error(struct xp_decode_ctx *ctx,
                         const struct xp_error *cause,
                         const char *key_segment,
                         bool at_key)
{
        return fail_message(
            ctx, cause->code ? cause->code : -EINVAL, key_segment, at_key, xp_error_message(cause));
}

static const char *json_type_name(const json_t *json)
{
        switch (json_typeof(json)) {
        case JSON_OBJECT:
                return "a mapping";
        case JSON_ARRAY:
                return "a list";
        case JSON_STRING:
                return "a string";
        case JSON_INTEGER:
        case JSON_REAL:
                return "a number";
        case JSON_TRUE:
        case JSON_FALSE:
                return "a boolean";
        default:
                return "null";
        }
}

int xp_decode_type_error(struct xp_decode_ctx *ctx, const json_t *json, const char *expected)
{
        if (strcmp(expected, "a string") == 0 && (json_is_number(json) || json_is_boolean(json)))
                return xp_decode_fail(
                    ctx,
                    -EINVAL,
                    NULL,
                    false,
                    "expected a string, got %s (quote the value to make it a string)",
                    json_type_name(json));
        return xp_decode_fail(
            ctx, -EINVAL, NULL, false, "expected %s, got %s", expected, json_type_name(json));
}

/* ---- nesting ------------------------------------------------------------------------------- */

static bool deeper(const json_t *value, unsigned level, unsigned max_depth)
{
        const char *key;
        json_t *child;
        size_t i;

        if (!json_is_object(value) && !json_is_array(value))
                return false;
        if (level + 1 > max_depth)
                return true;
        json_object_foreach((json_t *)value, key, child)
        {
                if (deeper(child, level + 1, max_depth))
                        return true;
        }
        json_array_foreach(value, i, child)
        {
                if (deeper(child, level + 1, max_depth))
                        return true;
        }
        return false;
}

bool xp_json_deeper_than(const json_t *value, unsigned max_depth)
{
        return deeper(value, 0, max_depth);
}

/* The first member or element of json that is nested deeper than max_depth, pushed on the path. */
static const json_t *
push_deep_child(struct xp_decode_ctx *ctx, const json_t *json, unsigned max_depth)
{
        const char *key;
        json_t *child;
        size_t i;

        json_object_foreach((json_t *)json, key, child)
        {
                if (xp_json_deeper_than(child, max_depth)) {
                        xp_path_push_field(&ctx->path, key);
                        return child;
                }
        }
        json_array_foreach(json, i, child)
        {
                if (xp_json_deeper_than(child, max_depth)) {
                        xp_path_push_index(&ctx->path, i);
                        return child;
                }
        }
        return NULL;
}

int xp_decode_check_depth(struct xp_decode_ctx *ctx, const json_t *json)
{
        size_t depth = ctx->path.depth;
        const json_t *at = json;
        int r;

        if (!xp_json_deeper_than(json, XP_OBJECT_MAX_DEPTH))
                return 0;
        /* name two levels: the whole path of the deep part would be a hundred segments long */
        for (unsigned level = 1; at && level <= 2; level++)
                at = push_deep_child(ctx, at, XP_OBJECT_MAX_DEPTH - level);
        r = xp_decode_fail(
            ctx,
            -E2BIG,
            NULL,
            false,
            "Invalid value: nested too deeply: an object may nest at most %d levels of mappings and lists",
            XP_OBJECT_MAX_DEPTH);
        ctx->path.depth = depth;
        return r;
}

/* ---- enums --------------------------------------------------------------------------------- */

const char *xp_enum_to_string(const struct xp_enum_name *names, int value)
{
        for (const struct xp_enum_name *e = names; e->name; e++)
                if (e->value == value)
                        return e->name;
        return NULL;
}

int xp_enum_from_string(const struct xp_enum_name *names, const char *s)
{
        for (const struct xp_enum_name *e = names; e->name; e++)
                if (strcmp(e->name, s) == 0)
                        return e->value;
        return -EINVAL;
}

static int
enum_error(struct xp_decode_ctx *ctx, const struct xp_enum_name *names, const char *value)
{
        char supported[XP_ERROR_MSG_MAX / 2] = "";
        char q[XP_QUOTE_MAX];
        size_t used = 0;

        for (const struct xp_enum_name *e = names; e->name && used < sizeof(supported); e++) {
                int n = snprintf(supported + used,
                                 sizeof(supported) - used,
                                 "%s\"%s\"",
                                 used ? ", " : "",
                                 e->name);

                if (n < 0)
                        break;
                used += (size_t)n;
        }
        return xp_decode_fail(ctx,
                              -EINVAL,
                              NULL,
                              false,
                              "Unsupported value: %s: supported values: %s",
                              xp_quote(value, q),
                              supported);
}

/* ---- decoding ------------------------------------------------------------------------------ */

static int decode_string(struct xp_decode_ctx *ctx, const json_t *json, char **ret)
{
        size_t len;
        char *copy;

        if (!json_is_string(json))
                return xp_decode_type_error(ctx, json, "a string");
        len = json_string_length(json);
        if (len > XP_STRING_MAX)
                return xp_decode_fail(ctx,
                                      -E2BIG,
                                      NULL,
                                      false,
                                      "string is too long (%zu bytes, at most %d)",
                                      len,
                                      XP_STRING_MAX);
        if (memchr(json_string_value(json), '\0', len))
                return xp_decode_fail(
                    ctx, -EINVAL, NULL, false, "string must not contain NUL characters");
        copy = strdup(json_string_value(json));
        if (!copy)
                return -ENOMEM;
        *ret = copy;
        return 0;
}

/* decode_string() of a string the model keeps as it is (a map's values it copies are not) */
static int decode_kept_string(struct xp_decode_ctx *ctx, const json_t *json, char **ret)
{
        int r = decode_string(ctx, json, ret);

        if (r >= 0 && (ctx->flags & XP_DECODE_SHARE))
                xp_codec_body_note(*ret, json);
        return r;
}

int xp_decode_integer(struct xp_decode_ctx *ctx, const json_t *json, bool int32, int64_t *ret)
{
        json_int_t v;

        if (json_is_real(json)) {
                double d = json_real_value(json);

                if (d != floor(d) || d < -9.2e18 || d > 9.2e18)
                        return xp_decode_fail(
                            ctx, -EINVAL, NULL, false, "expected an integer, got %g", d);
                v = (json_int_t)d;
        } else if (json_is_integer(json)) {
                v = json_integer_value(json);
        } else {
                return xp_decode_type_error(ctx, json, "an integer");
        }
        if (int32 && (v < INT32_MIN || v > INT32_MAX))
                return xp_decode_fail(ctx,
                                      -ERANGE,
                                      NULL,
                                      false,
                                      "Invalid value: %" JSON_INTEGER_FORMAT
                                      ": must be a 32-bit integer (between %d and %d)",
                                      v,
                                      INT32_MIN,
                                      INT32_MAX);
        *ret = v;
        return 0;
}

int xp_decode_time(struct xp_decode_ctx *ctx, const json_t *json, bool micro, int64_t *ret)
{
        char q[XP_QUOTE_MAX];

        if (!json_is_string(json))
                return xp_decode_type_error(ctx, json, "an RFC 3339 timestamp string");
        if (!micro && xp_time_parse_rfc3339(json_string_value(json), ret) < 0)
                return xp_decode_fail(
                    ctx,
                    -EINVAL,
                    NULL,
                    false,
                    "invalid timestamp %s: expected RFC 3339, e.g. \"2026-12-02T15:04:05Z\"",
                    xp_quote(json_string_value(json), q));
        if (micro && xp_time_parse_microtime(json_string_value(json), ret) < 0)
                return xp_decode_fail(
                    ctx,
                    -EINVAL,
                    NULL,
                    false,
                    "invalid timestamp %s: expected RFC 3339 with microseconds, e.g. \"2026-12-02T15:04:05.123456Z\"",
                    xp_quote(json_string_value(json), q));
        return 0;
}

static int
decode_string_list(struct xp_decode_ctx *ctx, const json_t *json, struct xp_list_raw *list)
{
        size_t n;
        char **items;
        int r = 0;

        if (!json_is_array(json))
                return xp_decode_type_error(ctx, json, "a list of strings");
        n = json_array_size(json);
        if (n > XP_LIST_MAX)
                return xp_decode_fail(
                    ctx, -E2BIG, NULL, false, "too many items (%zu, at most %d)", n, XP_LIST_MAX);
        if (n == 0)
                return 0;
        items = calloc(n, sizeof(char *));
        if (!items)
                return -ENOMEM;
        list->items = items;
        for (size_t i = 0; i < n && r >= 0; i++) {
                xp_path_push_index(&ctx->path, i);
                r = decode_kept_string(ctx, json_array_get(json, i), &items[i]);
                xp_path_pop(&ctx->path);
                if (r >= 0)
                        list->n = i + 1;
        }
        if (r >= 0 && (ctx->flags & XP_DECODE_SHARE))
                xp_codec_body_note(items, json);
        return r;
}

/* A JSON object of at most XP_LIST_MAX members, or a type error naming what was expected. */
static int check_mapping(struct xp_decode_ctx *ctx, const json_t *json, const char *expected)
{
        if (!json_is_object(json))
                return xp_decode_type_error(ctx, json, expected);
        if (json_object_size(json) > XP_LIST_MAX)
                return xp_decode_fail(ctx,
                                      -E2BIG,
                                      NULL,
                                      false,
                                      "too many entries (%zu, at most %d)",
                                      json_object_size(json),
                                      XP_LIST_MAX);
        return 0;
}

static int decode_string_map(struct xp_decode_ctx *ctx, const json_t *json, struct xp_strmap *map)
{
        const char *key;
        json_t *value;

        int r = check_mapping(ctx, json, "a mapping of strings");

        if (r < 0)
                return r;
        json_object_foreach((json_t *)json, key, value)
        {
                _cleanup_free_ char *text = NULL;

                if (json_is_null(value))
                        continue;
                xp_path_push_key(&ctx->path, key);
                r = decode_string(ctx, value, &text);
                xp_path_pop(&ctx->path);
                if (r < 0)
                        return r;
                r = xp_strmap_set(map, key, text);
                if (r < 0)
                        return r;
        }
        if (ctx->flags & XP_DECODE_SHARE)
                xp_codec_body_note(map->items, json);
        return 0;
}

int xp_decode_quantity(struct xp_decode_ctx *ctx, const json_t *json, struct xp_quantity *ret)
{
        struct xp_error cause = {0};
        int r;

        if (json_is_string(json))
                r = xp_quantity_parse(json_string_value(json), ret, &cause);
        else if (json_is_integer(json) && json_integer_value(json) != INT64_MIN)
                *ret = xp_quantity_from_int(json_integer_value(json)), r = 0;
        else if (json_is_integer(json)) { /* one past the quantity range: the usual error */
                char text[32];

                snprintf(text, sizeof(text), "%" JSON_INTEGER_FORMAT, json_integer_value(json));
                r = xp_quantity_parse(text, ret, &cause);
        } else if (json_is_real(json))
                r = xp_quantity_from_double(json_real_value(json), ret, &cause);
        else
                return xp_decode_type_error(
                    ctx, json, "a quantity (a string such as \"500m\" or \"2Gi\", or a number)");
        if (r < 0)
                return xp_decode_fail_error(ctx, &cause, NULL, false);
        return 0;
}

static int
decode_resources(struct xp_decode_ctx *ctx, const json_t *json, struct xp_resource_list *list)
{
        const char *key;
        json_t *value;

        int r = check_mapping(ctx, json, "a mapping of resource names to quantities");

        if (r < 0)
                return r;
        json_object_foreach((json_t *)json, key, value)
        {
                struct xp_quantity q;

                if (json_is_null(value))
                        continue;
                xp_path_push_key(&ctx->path, key);
                r = xp_decode_quantity(ctx, value, &q);
                xp_path_pop(&ctx->path);
                if (r < 0)
                        return r;
                r = xp_resource_list_set(list, key, &q);
                if (r < 0)
                        return r;
        }
        if (ctx->flags & XP_DECODE_SHARE)
                xp_codec_body_note(list->items, json);
        return 0;
}

static int decode_struct_list(struct xp_decode_ctx *ctx,
                              const struct xp_schema *schema,
                              const json_t *json,
                              struct xp_list_raw *list)
{
        size_t n;
        char *items;

        if (!json_is_array(json))
                return xp_decode_type_error(ctx, json, "a list");
        n = json_array_size(json);
        if (n > XP_LIST_MAX)
                return xp_decode_fail(
                    ctx, -E2BIG, NULL, false, "too many items (%zu, at most %d)", n, XP_LIST_MAX);
        if (n == 0)
                return 0;
        items = calloc(n, schema->size);
        if (!items)
                return -ENOMEM;
        list->items = items;
        list->n = n; /* all zeroed, so freeing a partly decoded list is safe */
        for (size_t i = 0; i < n; i++) {
                const json_t *element = json_array_get(json, i);
                int r;

                xp_path_push_index(&ctx->path, i);
                if (json_is_object(element))
                        r = xp_schema_decode(ctx, schema, element, items + i * schema->size);
                else
                        r = xp_decode_type_error(ctx, element, "a mapping");
                xp_path_pop(&ctx->path);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int decode_field(struct xp_decode_ctx *ctx,
                        const struct xp_field *field,
                        const json_t *json,
                        void *object)
{
        void *value = AT(object, field->offset);

        switch (field->type) {
        case XP_FT_STRING:
                return decode_kept_string(ctx, json, value);
        case XP_FT_INT64:
        case XP_FT_INT32:
                return xp_decode_integer(ctx, json, field->type == XP_FT_INT32, value);
        case XP_FT_OPT_INT64:
        case XP_FT_OPT_INT32: {
                struct xp_opt_int64 *opt = value;
                int r = xp_decode_integer(ctx, json, field->type == XP_FT_OPT_INT32, &opt->value);

                opt->set = r >= 0;
                return r;
        }
        case XP_FT_BOOL:
        case XP_FT_OPT_BOOL:
                if (!json_is_boolean(json))
                        return xp_decode_type_error(ctx, json, "a boolean (true or false)");
                if (field->type == XP_FT_BOOL)
                        *(bool *)value = json_is_true(json);
                else
                        *(struct xp_opt_bool *)value =
                            (struct xp_opt_bool){true, json_is_true(json)};
                return 0;
        case XP_FT_DOUBLE:
                if (!json_is_number(json))
                        return xp_decode_type_error(ctx, json, "a number");
                *(double *)value = json_number_value(json);
                return 0;
        case XP_FT_TIME:
        case XP_FT_MICROTIME:
                return xp_decode_time(ctx, json, field->type == XP_FT_MICROTIME, value);
        case XP_FT_ENUM: {
                int v;

                if (!json_is_string(json))
                        return xp_decode_type_error(ctx, json, "a string");
                /* "" leaves an optional enum unset, as Kubernetes reads it (operator: "" is Equal)
                 */
                if (!*json_string_value(json) && !(field->flags & XP_FIELD_REQUIRED))
                        return 0;
                v = xp_enum_from_string(field->enum_names, json_string_value(json));
                if (v < 0)
                        return enum_error(ctx, field->enum_names, json_string_value(json));
                *(int *)value = v;
                return 0;
        }
        case XP_FT_STRING_LIST:
                return decode_string_list(ctx, json, value);
        case XP_FT_STRING_MAP:
                return decode_string_map(ctx, json, value);
        case XP_FT_RESOURCES:
                return decode_resources(ctx, json, value);
        case XP_FT_STRUCT:
                if (!json_is_object(json))
                        return xp_decode_type_error(ctx, json, "a mapping");
                return xp_schema_decode(ctx, field->schema, json, value);
        case XP_FT_STRUCT_PTR: {
                void *child;

                if (!json_is_object(json))
                        return xp_decode_type_error(ctx, json, "a mapping");
                child = calloc(1, field->schema->size);
                if (!child)
                        return -ENOMEM;
                *(void **)value = child; /* owned by object from here on, even on failure */
                return xp_schema_decode(ctx, field->schema, json, child);
        }
        case XP_FT_STRUCT_LIST:
                return decode_struct_list(ctx, field->schema, json, value);
        }
        return -EINVAL;
}

/* Every member of every decoded object is looked up here: the first byte rules out most fields
 * without a call to strcmp(). */
static const struct xp_field *find_field(const struct xp_schema *schema, const char *name)
{
        for (size_t i = 0; i < schema->n_fields; i++)
                if (schema->fields[i].name[0] == name[0] &&
                    strcmp(schema->fields[i].name, name) == 0)
                        return &schema->fields[i];
        return NULL;
}

/* Whether key is a Kubernetes field of the schema's type: the API schema's word, else the list. */
static bool is_passthrough(const struct xp_schema *schema, const char *key)
{
        const struct xp_apischema *api;
        const struct xp_apitype *type;

        if (xp_apischema_builtin(&api, NULL) >= 0 && (type = xp_apischema_find(api, schema->name)))
                return xp_apitype_field(type, key) != NULL;
        for (const char *const *name = schema->passthrough; name && *name; name++)
                if (strcmp(*name, key) == 0)
                        return true;
        return false;
}

/*
 * Integral numbers of a kept member become integers: JSON does not tell 80 from 80.0, but Go's
 * typed clients refuse 80.0 for an integer field, and the check lets 80.0 pass as it does for
 * modelled fields. Reals beyond what an int64 holds stay as they are.
 */
static bool integral_real(const json_t *json)
{
        double d = json_real_value(json);

        return json_is_real(json) && d == floor(d) && fabs(d) < 9.2e18;
}

static json_t *integer_of(const json_t *real)
{
        return json_integer((json_int_t)json_real_value(real));
}

/* Changes the integral reals inside json (an object or a list) into integers, in place. */
static int integral_to_integers(json_t *json)
{
        const char *key;
        json_t *member;
        void *tmp;
        size_t i;

        json_object_foreach_safe(json, tmp, key, member)
        {
                if (integral_real(member) ? json_object_set_new(json, key, integer_of(member)) < 0
                                          : integral_to_integers(member) < 0)
                        return -ENOMEM;
        }
        json_array_foreach(json, i, member)
        {
                if (integral_real(member) ? json_array_set_new(json, i, integer_of(member)) < 0
                                          : integral_to_integers(member) < 0)
                        return -ENOMEM;
        }
        return 0;
}

/* Whether json (an object or a list) holds an integral real anywhere inside. */
static bool holds_integral_real(const json_t *json)
{
        const char *key;
        const json_t *member;
        size_t i;

        /* the program's shared trees hold none (xpool/jsonliteral.h): the kube-api-access
         * volume's source inside a pod's volumes is not walked on every create */
        if (json_is_object(json) && xp_json_is_shared_tree(json))
                return false;
        json_object_foreach((json_t *)json, key, member)
        {
                if (integral_real(member) || holds_integral_real(member))
                        return true;
        }
        json_array_foreach(json, i, member)
        {
                if (integral_real(member) || holds_integral_real(member))
                        return true;
        }
        return false;
}

static int keep_unknown(struct xp_decode_ctx *ctx,
                        const struct xp_schema *schema,
                        const char *key,
                        const json_t *value,
                        void *object)
{
        json_t **extra = AT(object, schema->extra_offset);
        json_t *copy;

        if ((ctx->flags & XP_DECODE_STRICT) && !is_passthrough(schema, key)) {
                int r;

                xp_path_push_field(&ctx->path, key);
                r = xp_decode_fail(
                    ctx, -EINVAL, NULL, true, "unknown field \"%s\" in %s", key, schema->name);
                xp_path_pop(&ctx->path);
                return r;
        }
        if (!*extra) {
                *extra = json_object();
                if (!*extra)
                        return -ENOMEM;
        }
        /* Scalars are never changed in place (no json_*_set anywhere): a reference will do. */
        if (integral_real(value))
                copy = integer_of(value);
        else if (json_is_string(value) || json_is_integer(value) || json_is_boolean(value) ||
                 json_is_null(value) || json_is_real(value))
                copy = json_incref((json_t *)value);
        /* a shared value must need no change: the integers below are made in a copy */
        else if ((ctx->flags & XP_DECODE_SHARE) && !holds_integral_real(value))
                return json_object_set_nocheck(*extra, key, (json_t *)value) < 0 ? -ENOMEM : 0;
        else
                copy = json_deep_copy(value);
        if (!copy || integral_to_integers(copy) < 0) {
                json_decref(copy);
                return -ENOMEM;
        }
        /* key is a JSON object's: valid UTF-8 already (jansson's rule for every key it holds) */
        if (json_object_set_new_nocheck(*extra, key, copy) < 0)
                return -ENOMEM;
        return 0;
}

/* A top-level object's apiVersion and kind, implied by its type (xp_schema_decode_top()). */
static bool is_type_key(const char *key)
{
        return strcmp(key, "apiVersion") == 0 || strcmp(key, "kind") == 0;
}

static int decode_members(struct xp_decode_ctx *ctx,
                          const struct xp_schema *schema,
                          const json_t *json,
                          void *object,
                          bool skip_type)
{
        const char *key;
        json_t *value;

        if (ctx->path.depth > XP_PATH_MAX_DEPTH)
                return xp_decode_fail(ctx, -E2BIG, NULL, false, "nested too deeply");

        json_object_foreach((json_t *)json, key, value)
        {
                const struct xp_field *field = find_field(schema, key);
                int r;

                if (skip_type && is_type_key(key)) {
                        continue;
                } else if (!field) {
                        r = keep_unknown(ctx, schema, key, value, object);
                } else if (json_is_null(value)) {
                        continue; /* null means absent, as in Kubernetes */
                } else {
                        xp_path_push_field(&ctx->path, field->name);
                        r = decode_field(ctx, field, value, object);
                        xp_path_pop(&ctx->path);
                }
                if (r < 0)
                        return r;
        }

        return 0;
}

int xp_schema_decode(struct xp_decode_ctx *ctx,
                     const struct xp_schema *schema,
                     const json_t *json,
                     void *object)
{
        return decode_members(ctx, schema, json, object, false);
}

int xp_schema_decode_top(struct xp_decode_ctx *ctx,
                         const struct xp_schema *schema,
                         const json_t *json,
                         void *object)
{
        return decode_members(ctx, schema, json, object, true);
}

/* ---- validation ---------------------------------------------------------------------------- */

static bool field_present(const struct xp_field *field, const void *value)
{
        switch (field->type) {
        case XP_FT_STRING:
        case XP_FT_STRUCT_PTR:
                return *(void *const *)value != NULL;
        case XP_FT_OPT_INT64:
        case XP_FT_OPT_INT32:
                return ((const struct xp_opt_int64 *)value)->set;
        case XP_FT_OPT_BOOL:
                return ((const struct xp_opt_bool *)value)->set;
        case XP_FT_ENUM:
                return *(const int *)value != 0;
        case XP_FT_TIME:
        case XP_FT_MICROTIME:
                return *(const int64_t *)value != 0;
        default:
                return true;
        }
}

/* What every value of a type must satisfy, whatever the field: finite numbers, writable times. */
static int check_value(struct xp_decode_ctx *ctx, const struct xp_field *field, const void *value)
{
        if (field->type == XP_FT_DOUBLE && !isfinite(*(const double *)value))
                return xp_decode_fail(
                    ctx, -EINVAL, NULL, false, "Invalid value: must be a finite number");
        if (field->type == XP_FT_TIME && (*(const int64_t *)value < XP_RFC3339_MIN_SECONDS ||
                                          *(const int64_t *)value > XP_RFC3339_MAX_SECONDS))
                return xp_decode_fail(ctx,
                                      -ERANGE,
                                      NULL,
                                      false,
                                      "Invalid value: the time is outside the years 0000 to 9999");
        if (field->type == XP_FT_MICROTIME) {
                char text[XP_MICROTIME_MAX];

                if (xp_time_format_microtime(*(const int64_t *)value, text) < 0)
                        return xp_decode_fail(
                            ctx,
                            -ERANGE,
                            NULL,
                            false,
                            "Invalid value: the time is outside the years 0000 to 9999");
        }
        return 0;
}

int xp_schema_validate(struct xp_decode_ctx *ctx,
                       const struct xp_schema *schema,
                       const void *object)
{
        for (size_t i = 0; i < schema->n_fields; i++) {
                const struct xp_field *field = &schema->fields[i];
                const void *value = AT_CONST(object, field->offset);
                int r = 0;

                if (!field_present(field, value) && !(field->flags & XP_FIELD_REQUIRED))
                        continue;
                xp_path_push_field(&ctx->path, field->name);
                if (!field_present(field, value))
                        r = xp_decode_fail(ctx, -EINVAL, NULL, false, "Required value");
                if (r >= 0)
                        r = check_value(ctx, field, value);
                if (r >= 0 && field->check)
                        r = field->check(ctx, value);
                if (r >= 0 && field->type == XP_FT_STRUCT)
                        r = xp_schema_validate(ctx, field->schema, value);
                else if (r >= 0 && field->type == XP_FT_STRUCT_PTR)
                        r = xp_schema_validate(ctx, field->schema, *(void *const *)value);
                else if (r >= 0 && field->type == XP_FT_STRUCT_LIST) {
                        const struct xp_list_raw *list = value;

                        for (size_t j = 0; j < list->n && r >= 0; j++) {
                                xp_path_push_index(&ctx->path, j);
                                r = xp_schema_validate(ctx,
                                                       field->schema,
                                                       (const char *)list->items +
                                                           j * field->schema->size);
                                xp_path_pop(&ctx->path);
                        }
                }
                xp_path_pop(&ctx->path);
                if (r < 0)
                        return r;
        }
        return schema->validate ? schema->validate(ctx, object) : 0;
}

/* ---- encoding ------------------------------------------------------------------------------ */

/* json_string() refuses invalid UTF-8; a model built in code may hold some, so replace it. */
static json_t *string_value(const char *s)
{
        json_t *json = xp_codec_body_string(s); /* the body's node a create copied s from */
        size_t len;
        char *clean;

        if (!json)
                json = json_string(s);
        if (json)
                return json;
        len = strlen(s);
        clean = strdup(s);
        if (!clean)
                return NULL;
        for (size_t i = 0; i < len; i++)
                if ((unsigned char)clean[i] >= 0x80)
                        clean[i] = '?';
        json = json_string(clean);
        free(clean);
        return json;
}

static json_t *encode_string_list(const struct xp_list_raw *list)
{
        json_t *array = xp_codec_body_string_list(list);
        char **items = list->items;

        if (array)
                return array;
        array = json_array();

        for (size_t i = 0; array && i < list->n; i++)
                if (json_array_append_new(array, string_value(items[i] ? items[i] : "")) < 0) {
                        json_decref(array);
                        return NULL;
                }
        return array;
}

static json_t *encode_string_map(const struct xp_strmap *map)
{
        json_t *object = xp_codec_body_string_map(map);

        if (object)
                return object;
        object = json_object();

        for (size_t i = 0; object && i < map->n; i++)
                if (json_object_set_new(
                        object, map->items[i].key, string_value(map->items[i].value)) < 0) {
                        json_decref(object);
                        return NULL;
                }
        return object;
}

static json_t *encode_resources(const struct xp_resource_list *list)
{
        json_t *object = xp_codec_body_resources(list);

        if (object)
                return object;
        object = json_object();

        for (size_t i = 0; object && i < list->n; i++) {
                char text[XP_QUANTITY_STRING_MAX];

                if (json_object_set_new(object,
                                        list->items[i].name,
                                        /* the quantity's text is ours, ASCII: no UTF-8 check */
                                        json_string_nocheck(xp_quantity_format(
                                            &list->items[i].quantity, text))) < 0) {
                        json_decref(object);
                        return NULL;
                }
        }
        return object;
}

/*
 * The encoders of encode_field(): 1 with *ret set (NULL when out of memory), 0 when the field is
 * left out, or -errno. Scalars first, then lists, maps and structs.
 */
static int encode_scalar(const struct xp_field *field, const void *value, json_t **ret)
{
        bool always = field->flags & XP_FIELD_ALWAYS;

        switch (field->type) {
        case XP_FT_STRING:
                if (!*(char *const *)value)
                        return 0;
                *ret = string_value(*(char *const *)value);
                return 1;
        case XP_FT_INT64:
        case XP_FT_INT32:
                if (!always && *(const int64_t *)value == 0)
                        return 0;
                *ret = xp_json_integer(*(const int64_t *)value);
                return 1;
        case XP_FT_OPT_INT64:
        case XP_FT_OPT_INT32:
                if (!((const struct xp_opt_int64 *)value)->set)
                        return 0;
                *ret = xp_json_integer(((const struct xp_opt_int64 *)value)->value);
                return 1;
        case XP_FT_BOOL:
                if (!always && !*(const bool *)value)
                        return 0;
                *ret = json_boolean(*(const bool *)value);
                return 1;
        case XP_FT_OPT_BOOL:
                if (!((const struct xp_opt_bool *)value)->set)
                        return 0;
                *ret = json_boolean(((const struct xp_opt_bool *)value)->value);
                return 1;
        case XP_FT_DOUBLE:
                if (!always && *(const double *)value == 0.0)
                        return 0;
                if (!isfinite(*(const double *)value))
                        return -ERANGE; /* JSON has no NaN or infinity; validation says so */
                *ret = json_real(*(const double *)value);
                return 1;
        case XP_FT_TIME: {
                char text[XP_RFC3339_MAX];

                if (*(const int64_t *)value == 0)
                        return 0;
                if (xp_time_format_rfc3339(*(const int64_t *)value, text) < 0)
                        return -ERANGE;
                *ret = json_string_nocheck(text); /* ours, ASCII, as the two below */
                return 1;
        }
        case XP_FT_MICROTIME: {
                char text[XP_MICROTIME_MAX];

                if (*(const int64_t *)value == 0)
                        return 0;
                if (xp_time_format_microtime(*(const int64_t *)value, text) < 0)
                        return -ERANGE;
                *ret = json_string_nocheck(text);
                return 1;
        }
        case XP_FT_ENUM: {
                const char *name = xp_enum_to_string(field->enum_names, *(const int *)value);

                if (!name)
                        return 0;
                /* a name of the schema's table: one node for all trees (xpool/jsonliteral.h) */
                *ret = xp_json_literal(name);
                return 1;
        }
        default:
                break;
        }
        return -EINVAL;
}

/*
 * Encodes object's fields and kept members into *out, made at the first member when NULL: a struct
 * with nothing set costs no allocation (most of a pod's optional structs are empty).
 */
static int encode_members(const struct xp_schema *schema, const void *object, json_t **out);

static int encode_nested(const struct xp_field *field, const void *value, json_t **ret)
{
        bool always = field->flags & XP_FIELD_ALWAYS;
        int r;

        switch (field->type) {
        case XP_FT_STRING_LIST:
                if (!always && ((const struct xp_list_raw *)value)->n == 0)
                        return 0;
                *ret = encode_string_list(value);
                return 1;
        case XP_FT_STRING_MAP:
                if (!always && ((const struct xp_strmap *)value)->n == 0)
                        return 0;
                *ret = encode_string_map(value);
                return 1;
        case XP_FT_RESOURCES:
                if (!always && ((const struct xp_resource_list *)value)->n == 0)
                        return 0;
                *ret = encode_resources(value);
                return 1;
        case XP_FT_STRUCT:
                *ret = NULL;
                r = encode_members(field->schema, value, ret);
                if (r < 0) {
                        json_decref(*ret);
                        return r;
                }
                if (!*ret && !always)
                        return 0;
                if (!*ret)
                        *ret = json_object(); /* NULL: encode_field() says -ENOMEM */
                return 1;
        case XP_FT_STRUCT_PTR:
                if (!*(void *const *)value)
                        return 0;
                r = xp_schema_encode(field->schema, *(void *const *)value, ret);
                return r < 0 ? r : 1;
        case XP_FT_STRUCT_LIST: {
                const struct xp_list_raw *list = value;

                if (!always && list->n == 0)
                        return 0;
                json_t *json = json_array();

                for (size_t i = 0; json && i < list->n; i++) {
                        json_t *element;

                        r = xp_schema_encode(field->schema,
                                             (const char *)list->items + i * field->schema->size,
                                             &element);

                        if (r < 0 || json_array_append_new(json, element) < 0) {
                                json_decref(json);
                                return r < 0 ? r : -ENOMEM;
                        }
                }
                *ret = json;
                return 1;
        }
        default:
                break;
        }
        return -EINVAL;
}

/* Returns 1 with *ret set, 0 when the field is left out, or -ENOMEM. */
static int encode_field(const struct xp_field *field, const void *object, json_t **ret)
{
        const void *value = AT_CONST(object, field->offset);
        json_t *json = NULL;
        int r;

        switch (field->type) {
        case XP_FT_STRING_LIST:
        case XP_FT_STRING_MAP:
        case XP_FT_RESOURCES:
        case XP_FT_STRUCT:
        case XP_FT_STRUCT_PTR:
        case XP_FT_STRUCT_LIST:
                r = encode_nested(field, value, &json);
                break;
        default:
                r = encode_scalar(field, value, &json);
                break;
        }
        if (r <= 0)
                return r;
        if (!json)
                return -ENOMEM;
        *ret = json;
        return 1;
}

static int encode_members(const struct xp_schema *schema, const void *object, json_t **out)
{
        json_t *const *extra = AT_CONST(object, schema->extra_offset);

        for (size_t i = 0; i < schema->n_fields; i++) {
                json_t *value;
                int r = encode_field(&schema->fields[i], object, &value);

                if (r < 0)
                        return r;
                if (r == 0)
                        continue;
                if (!*out && !(*out = json_object())) {
                        json_decref(value);
                        return -ENOMEM;
                }
                /* a schema's field names are ASCII in our source: no UTF-8 check of each */
                if (json_object_set_new_nocheck(*out, schema->fields[i].name, value) < 0)
                        return -ENOMEM;
        }
        if (*extra && json_object_size(*extra) > 0) {
                if (!*out && !(*out = json_object()))
                        return -ENOMEM;
                if (json_object_update_missing(*out, *extra) < 0)
                        return -ENOMEM;
        }
        return 0;
}

int xp_schema_encode_into(const struct xp_schema *schema, const void *object, json_t *out)
{
        return encode_members(schema, object, &out);
}

int xp_schema_encode(const struct xp_schema *schema, const void *object, json_t **ret)
{
        json_t *out = NULL;
        int r = encode_members(schema, object, &out);

        if (r >= 0 && !out && !(out = json_object()))
                r = -ENOMEM;
        if (r < 0) {
                json_decref(out);
                return r;
        }
        *ret = out;
        return 0;
}

/* ---- freeing ------------------------------------------------------------------------------- */

void xp_schema_done(const struct xp_schema *schema, void *object)
{
        json_t **extra = AT(object, schema->extra_offset);

        for (size_t i = 0; i < schema->n_fields; i++) {
                const struct xp_field *field = &schema->fields[i];
                void *value = AT(object, field->offset);

                switch (field->type) {
                case XP_FT_STRING:
                        free(*(char **)value);
                        break;
                case XP_FT_STRING_LIST: {
                        struct xp_list_raw *list = value;

                        for (size_t j = 0; j < list->n; j++)
                                free(((char **)list->items)[j]);
                        free(list->items);
                        break;
                }
                case XP_FT_STRING_MAP:
                        xp_strmap_done(value);
                        break;
                case XP_FT_RESOURCES:
                        xp_resource_list_done(value);
                        break;
                case XP_FT_STRUCT:
                        xp_schema_done(field->schema, value);
                        break;
                case XP_FT_STRUCT_PTR:
                        if (*(void **)value) {
                                xp_schema_done(field->schema, *(void **)value);
                                free(*(void **)value);
                        }
                        break;
                case XP_FT_STRUCT_LIST: {
                        struct xp_list_raw *list = value;

                        for (size_t j = 0; j < list->n; j++)
                                xp_schema_done(field->schema,
                                               (char *)list->items + j * field->schema->size);
                        free(list->items);
                        break;
                }
                default:
                        break;
                }
        }
        json_decref(*extra);
        memset(object, 0, schema->size);
}
