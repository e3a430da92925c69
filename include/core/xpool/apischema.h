/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The Kubernetes API types xpool serves, as clients see them: every field of a v1 Pod and Node
 * and of everything they hold, with its JSON type. One source describes them,
 * src/core/apischema.txt (compiled into the library), whose header comment is the syntax; this
 * is its reader and the check of JSON values against it.
 *
 * The codec runs the check on every Pod and Node it decodes (xpool/codec.h), so a field xpool
 * keeps without modelling it is type-checked like a modelled one, and strict decoding takes the
 * Kubernetes field names from here. The tables are also what an OpenAPI document is generated
 * from: types in source order with their packages, fields in source order, inlined types
 * already flattened (docs/development.md).
 *
 * A schema is immutable once read: every pointer it hands out lives as long as it does (the
 * built-in one: for the whole process), and it may be read from any thread.
 */

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "xpool/error.h"

enum xp_apivalue_kind {
        XP_APIVALUE_STRING = 1,
        XP_APIVALUE_BOOL,
        XP_APIVALUE_INT32,
        XP_APIVALUE_INT64,
        XP_APIVALUE_DOUBLE,
        XP_APIVALUE_QUANTITY,      /* a string such as "500m", or a number */
        XP_APIVALUE_INT_OR_STRING, /* a string or an int32 */
        XP_APIVALUE_TIME,          /* an RFC 3339 string */
        XP_APIVALUE_MICROTIME,     /* an RFC 3339 string with microseconds */
        XP_APIVALUE_OBJECT,        /* any JSON object */
        XP_APIVALUE_TYPE,          /* an object of a named type (.type) */
        XP_APIVALUE_LIST,          /* a list of .element */
        XP_APIVALUE_MAP,           /* an object with string keys and .element values */
};

struct xp_apitype;

/* The type of a value: a scalar, a named type, or a list or map of another value type. */
struct xp_apivalue {
        enum xp_apivalue_kind kind;
        const struct xp_apivalue *element; /* LIST, MAP */
        const struct xp_apitype *type;     /* TYPE */
};

struct xp_apifield {
        const char *name; /* the JSON member name */
        const struct xp_apivalue *value;
};

/* A named object type ("Container"), its fields in source order, inlined ones included. */
struct xp_apitype {
        const char *name;
        const char *package; /* "io.k8s.api.core.v1" */
        const struct xp_apifield *fields;
        size_t n_fields;
};

struct xp_apischema;

/*
 * Reads a schema from text in the syntax of src/core/apischema.txt. -EINVAL with err naming the
 * line and what is wrong (an unknown type, a field declared twice, an inlining cycle, ...),
 * -ENOMEM. Caller frees with xp_apischema_free().
 */
int xp_apischema_parse(const char *text,
                       size_t len,
                       struct xp_apischema **ret,
                       struct xp_error *err);
void xp_apischema_free(struct xp_apischema *schema);

/*
 * The built-in schema (src/core/apischema.txt), read once on first use; never freed. -EINVAL
 * only if the built-in text does not read (the unit tests make sure it does), -ENOMEM.
 */
int xp_apischema_builtin(const struct xp_apischema **ret, struct xp_error *err);

/* The type of that name, or NULL. O(log n). */
const struct xp_apitype *xp_apischema_find(const struct xp_apischema *schema, const char *name);
/* The types in source order, for generators: index < xp_apischema_count(). */
size_t xp_apischema_count(const struct xp_apischema *schema);
const struct xp_apitype *xp_apischema_type(const struct xp_apischema *schema, size_t index);

/* The field of that JSON name, or NULL. */
const struct xp_apifield *xp_apitype_field(const struct xp_apitype *type, const char *name);

/* "string", "int32", "quantity", "int-or-string", ... as the source spells them; "" for TYPE,
 * LIST and MAP, whose spelling is the type's name, "[]" or "map[]" around the element's. */
const char *xp_apivalue_kind_to_string(enum xp_apivalue_kind kind);

/*
 * Checks json, an object of type, against the schema: each member the type knows has a value of
 * its type, at every depth (a 32-bit integer fits in 32 bits; a quantity and a time parse);
 * null is always allowed (it means absent); members the type does not know are not checked,
 * unless flags holds XP_DECODE_STRICT (xpool/codec.h), which makes them errors. Refuses values
 * nested deeper than XP_OBJECT_MAX_DEPTH. Returns 0, or -EINVAL (-ERANGE for a number out of
 * range, -E2BIG for nesting) with err saying where and what, in the codec's words:
 *   spec.containers[0].ports[0].containerPort: invalid value 99999999999: must be a 32-bit
 *   integer (between -2147483648 and 2147483647)
 */
int xp_apischema_check(const struct xp_apitype *type,
                       const json_t *json,
                       unsigned flags,
                       struct xp_error *err);
