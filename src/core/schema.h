/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Schemas: tables that describe how each model struct maps to JSON. One generic engine
 * (codec.c) decodes, validates, encodes and frees any struct through its schema, so adding a
 * field is one table row, and unknown-member preservation, null handling, type errors and field
 * paths behave the same everywhere.
 */

#include <jansson.h>
#include <stddef.h>

#include "xpool/codec.h"
#include "xpool/object.h"
#include "xpool/path.h"

enum xp_field_type {
        XP_FT_STRING,      /* char * */
        XP_FT_INT64,       /* int64_t, left out of JSON when 0 unless XP_FIELD_ALWAYS */
        XP_FT_INT32,       /* int64_t holding an int32 (range-checked) */
        XP_FT_OPT_INT64,   /* struct xp_opt_int64 */
        XP_FT_OPT_INT32,   /* struct xp_opt_int64 holding an int32 */
        XP_FT_BOOL,        /* bool */
        XP_FT_OPT_BOOL,    /* struct xp_opt_bool */
        XP_FT_DOUBLE,      /* double */
        XP_FT_TIME,        /* int64_t seconds, RFC 3339 */
        XP_FT_ENUM,        /* an enum (int) with .enum_names; 0 is unset */
        XP_FT_STRING_LIST, /* XP_LIST(char *) */
        XP_FT_STRING_MAP,  /* struct xp_strmap */
        XP_FT_RESOURCES,   /* struct xp_resource_list */
        XP_FT_STRUCT,      /* an embedded struct described by .schema */
        XP_FT_STRUCT_PTR,  /* a pointer to a struct described by .schema, NULL when absent */
        XP_FT_STRUCT_LIST, /* XP_LIST(struct ...) of .schema */
        XP_FT_MICROTIME,   /* int64_t microseconds, RFC 3339 with six fraction digits */
};

enum xp_field_flags {
        XP_FIELD_ALWAYS = 1u << 0,   /* encode zero values too (ready: false, restartCount: 0) */
        XP_FIELD_REQUIRED = 1u << 1, /* decoding fails when absent or null */
};

struct xp_enum_name {
        const char *name;
        int value;
};

struct xp_decode_ctx;

struct xp_field {
        const char *name; /* JSON member name */
        enum xp_field_type type;
        size_t offset;
        unsigned flags;
        const struct xp_schema *schema;        /* STRUCT, STRUCT_PTR, STRUCT_LIST */
        const struct xp_enum_name *enum_names; /* ENUM: terminated by {NULL, 0} */
        /* Semantic check of a present value, run with the path at this field. */
        int (*check)(struct xp_decode_ctx *ctx, const void *value);
};

struct xp_schema {
        const char *name; /* the Kubernetes type name, "Container" */
        size_t size;
        size_t extra_offset;
        const struct xp_field *fields;
        size_t n_fields;
        /*
         * Kubernetes fields of this type that xpool does not model but keeps as sent (in extra),
         * NULL-terminated, for types the API schema (src/core/apischema.txt) does not describe;
         * for the others, the API schema's type of the same name says. Strict decoding refuses
         * only names that are neither modelled nor Kubernetes fields, as a Kubernetes API
         * server's strict field validation would.
         */
        const char *const *passthrough;
        /* Cross-field rules, run after the fields' own checks with the path at this struct. */
        int (*validate)(struct xp_decode_ctx *ctx, const void *object);
};

#define XP_FIELD(json_name, field_type, owner, member, ...)                                        \
        {                                                                                          \
                .name = (json_name), .type = (field_type), .offset = offsetof(owner, member),      \
                __VA_ARGS__                                                                        \
        }

#define XP_SCHEMA(owner, type_name, field_table, ...)                                              \
        {                                                                                          \
                .name = (type_name), .size = sizeof(owner),                                        \
                .extra_offset = offsetof(owner, extra), .fields = (field_table),                   \
                .n_fields = XP_ELEMENTSOF(field_table), __VA_ARGS__                                \
        }

/* The list every XP_LIST() is laid out as. */
struct xp_list_raw {
        void *items;
        size_t n;
};

struct xp_decode_ctx {
        const struct xp_decode_source *source; /* may be NULL */
        unsigned flags;
        struct xp_path path;
        struct xp_error *err;
};

/* Bounds on what one object may hold, against hostile input. */
#define XP_LIST_MAX   10000
#define XP_STRING_MAX (1024 * 1024)

/*
 * Reports a problem at the current path (or at path + `extra_segment` when it is not NULL, e.g.
 * a map key) and returns code. at_key points the position at the member's key rather than its
 * value (unknown fields, bad keys).
 */
int xp_decode_fail(
    struct xp_decode_ctx *ctx, int code, const char *key_segment, bool at_key, const char *fmt, ...)
    _printf_(5, 6);

/* Relays an xp_error from a lower layer (a name check, a quantity parse) at the current path. */
int xp_decode_fail_error(struct xp_decode_ctx *ctx,
                         const struct xp_error *cause,
                         const char *key_segment,
                         bool at_key);

/*
 * The codec's reading of one JSON value, shared with the API schema's check (apischema_check.c)
 * so that both say the same about the same value: a type error ("expected a string, got a
 * number"), an integer (an int32 in range), a quantity, an RFC 3339 time (micro: with
 * microseconds). Each reports at the current path; *ret is set on success only.
 */
int xp_decode_type_error(struct xp_decode_ctx *ctx, const json_t *json, const char *expected);
int xp_decode_integer(struct xp_decode_ctx *ctx, const json_t *json, bool int32, int64_t *ret);
int xp_decode_quantity(struct xp_decode_ctx *ctx, const json_t *json, struct xp_quantity *ret);
int xp_decode_time(struct xp_decode_ctx *ctx, const json_t *json, bool micro, int64_t *ret);

/*
 * Refuses json nested deeper than XP_OBJECT_MAX_DEPTH (-E2BIG), naming the member two levels
 * below the current path that the deep part hangs from.
 */
int xp_decode_check_depth(struct xp_decode_ctx *ctx, const json_t *json);

/*
 * The API schema's check (xpool/apischema.h) at the current path of ctx, so that its errors
 * carry the codec's positions; ctx->flags' XP_DECODE_STRICT makes unknown fields errors.
 */
struct xp_apitype;
int xp_apischema_check_at(struct xp_decode_ctx *ctx,
                          const struct xp_apitype *type,
                          const json_t *json);

/*
 * The checks every top-level object gets before it is decoded: a mapping, apiVersion and kind
 * those of kind (when kind is not NULL) and, unless ctx says XP_DECODE_TRUSTED, the nesting
 * bound and the API schema's type type_name (object.c).
 */
struct xp_kind;
int xp_object_check_head(struct xp_decode_ctx *ctx,
                         const struct xp_kind *kind,
                         const char *type_name,
                         const json_t *json);

/* The generic engine. */
int xp_schema_decode(struct xp_decode_ctx *ctx,
                     const struct xp_schema *schema,
                     const json_t *json,
                     void *object);
int xp_schema_validate(struct xp_decode_ctx *ctx,
                       const struct xp_schema *schema,
                       const void *object);
/* xp_schema_decode() of a top-level object: its apiVersion and kind are its type's, not fields. */
int xp_schema_decode_top(struct xp_decode_ctx *ctx,
                         const struct xp_schema *schema,
                         const json_t *json,
                         void *object);
int xp_schema_encode(const struct xp_schema *schema, const void *object, json_t **ret);
/* xp_schema_encode() into out, after what it holds (a top-level object's apiVersion and kind). */
int xp_schema_encode_into(const struct xp_schema *schema, const void *object, json_t *out);
void xp_schema_done(const struct xp_schema *schema, void *object);

const char *xp_enum_to_string(const struct xp_enum_name *names, int value);
int xp_enum_from_string(const struct xp_enum_name *names, const char *s);

/* Schemas of the top-level objects (schema_pod.c, schema_node.c). */
extern const struct xp_schema xp_pod_schema;
extern const struct xp_schema xp_node_schema;
extern const struct xp_schema xp_object_meta_schema;
extern const struct xp_schema xp_node_inventory_schema;
extern const struct xp_schema xp_namespace_schema; /* schema_namespace.c */
extern const struct xp_schema xp_event_schema;     /* schema_event.c */
extern const struct xp_schema xp_lease_schema;     /* schema_lease.c */

/* Checks shared by the schema files (schema_common.c). */
int xp_check_label_map(struct xp_decode_ctx *ctx, const void *value);
int xp_check_annotation_map(struct xp_decode_ctx *ctx, const void *value);
int xp_check_subdomain_field(struct xp_decode_ctx *ctx, const void *value);
int xp_check_label_field(struct xp_decode_ctx *ctx, const void *value);
int xp_check_qualified_field(struct xp_decode_ctx *ctx, const void *value);
int xp_check_label_value_field(struct xp_decode_ctx *ctx, const void *value);
int xp_check_non_negative(struct xp_decode_ctx *ctx, const void *value);
int xp_check_opt_non_negative(struct xp_decode_ctx *ctx, const void *value);
int xp_check_weight(struct xp_decode_ctx *ctx, const void *value);
/* A list of finalizer names: qualified names with a domain, or Kubernetes' own (schema_meta.c). */
int xp_check_finalizers(struct xp_decode_ctx *ctx, const void *value);
/* Reports `field: message` below the current path. */
int xp_fail_field(struct xp_decode_ctx *ctx, int code, const char *field, const char *fmt, ...)
    _printf_(4, 5);
/* Reports `field[key]: message` below the current path, positioned at the key. */
int xp_fail_key(
    struct xp_decode_ctx *ctx, int code, const char *field, const char *key, const char *fmt, ...)
    _printf_(5, 6);

/* ---- range_msg.c: a value under its minimum, in kube-apiserver's words ---------------------- */

/* One message of xp_ge_msg*(), as long as an error's (longer values are cut where it would be). */
struct xp_ge_msg {
        char text[XP_ERROR_MSG_MAX];
};
/*
 * "Invalid value: VALUE: must be greater than or equal to BOUND" into m->text, which it returns;
 * value NULL: "Invalid value: must be greater than or equal to BOUND" (a bound that is another
 * field, no one value at fault). BOUND: a number, or what it is ("`minReplicas`").
 */
const char *xp_ge_msg(struct xp_ge_msg *m, const char *value, const char *bound);
/* xp_ge_msg() of an integer and an integer minimum: "Invalid value: -1: must be ... to 0". */
const char *xp_ge_msg_int(struct xp_ge_msg *m, long long value, long long min);
/* xp_ge_msg() of a string (a quantity as written) in double quotes: "Invalid value: \"-1\": ...".
 */
const char *xp_ge_msg_quoted(struct xp_ge_msg *m, const char *value, long long min);

/* Reports `list[index].field: duplicate value "value": why` below the current path. */
int xp_fail_duplicate(struct xp_decode_ctx *ctx,
                      const char *list,
                      size_t index,
                      const char *field,
                      const char *value,
                      const char *why);
