/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The protobuf wire format and a table-driven decoder into JSON. Every length is checked
 * against the bytes left before it is used, and every nested message counts towards
 * XP_PROTOBUF_DEPTH_MAX, so hostile input can neither read out of bounds nor recurse deeply.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "protobuf_internal.h"
#include "xpool/base64.h"
#include "xpool/protobuf.h"
#include "xpool/strutil.h"
#include "xpool/timeutil.h"

/* JSON paths in errors; longer ones are cut, which only shortens a message. */
#define PATH_MAX_LEN 256

/* A varint of at most 10 bytes. 0, or -EBADMSG when truncated or too long. */
static int pb_read_varint(struct pb_reader *r, uint64_t *ret)
{
        uint64_t value = 0;

        for (unsigned i = 0; i < 10; i++) {
                uint8_t byte;

                if (r->p >= r->end)
                        return -EBADMSG;
                byte = *r->p++;
                /* the tenth byte holds only bit 63 */
                if (i == 9 && byte > 1)
                        return -EBADMSG;
                value |= (uint64_t)(byte & 0x7f) << (7 * i);
                if (!(byte & 0x80)) {
                        *ret = value;
                        return 0;
                }
        }
        return -EBADMSG;
}

static int read_fixed(struct pb_reader *r, size_t n, uint64_t *ret)
{
        uint64_t value = 0;

        if ((size_t)(r->end - r->p) < n)
                return -EBADMSG;
        for (size_t i = 0; i < n; i++)
                value |= (uint64_t)r->p[i] << (8 * i);
        r->p += n;
        *ret = value;
        return 0;
}

int pb_read_field(struct pb_reader *r,
                  const uint8_t *base,
                  struct pb_field *ret,
                  struct xp_error *err)
{
        size_t offset = (size_t)(r->p - base);
        struct pb_field field = {0};
        uint64_t tag, len;

        if (r->p >= r->end)
                return 0;
        if (pb_read_varint(r, &tag) < 0)
                return xp_errorf(err, -EBADMSG, "truncated field tag at byte %zu", offset);
        if (tag >> 3 == 0 || tag >> 3 > UINT32_MAX >> 3)
                return xp_errorf(err,
                                 -EBADMSG,
                                 "invalid field number %" PRIu64 " at byte %zu",
                                 tag >> 3,
                                 offset);
        field.number = (uint32_t)(tag >> 3);
        field.wire = (enum pb_wire)(tag & 7);
        switch (tag & 7) {
        case PB_WIRE_VARINT:
                if (pb_read_varint(r, &field.varint) < 0)
                        return xp_errorf(err,
                                         -EBADMSG,
                                         "truncated varint of field %" PRIu32 " at byte %zu",
                                         field.number,
                                         offset);
                break;
        case PB_WIRE_FIXED64:
        case PB_WIRE_FIXED32:
                if (read_fixed(r, (tag & 7) == PB_WIRE_FIXED64 ? 8 : 4, &field.varint) < 0)
                        return xp_errorf(err,
                                         -EBADMSG,
                                         "truncated fixed-size value of field %" PRIu32
                                         " at byte %zu",
                                         field.number,
                                         offset);
                break;
        case PB_WIRE_LEN:
                if (pb_read_varint(r, &len) < 0 || len > (uint64_t)(r->end - r->p))
                        return xp_errorf(err,
                                         -EBADMSG,
                                         "the length of field %" PRIu32
                                         " at byte %zu runs past the end of its message",
                                         field.number,
                                         offset);
                field.bytes = r->p;
                field.len = (size_t)len;
                r->p += len;
                break;
        default:
                /* 3 and 4 are the deprecated groups, which Kubernetes never writes */
                return xp_errorf(err,
                                 -EBADMSG,
                                 "unsupported wire type %u of field %" PRIu32 " at byte %zu",
                                 (unsigned)(tag & 7),
                                 field.number,
                                 offset);
        }
        *ret = field;
        return 1;
}

/* Well-formed UTF-8 (no overlong forms, no surrogates, at most U+10FFFF) without NUL, which
 * our C strings could not hold. */
static bool valid_text(const uint8_t *s, size_t len)
{
        return !memchr(s, 0, len) && xp_utf8_valid((const char *)s, len);
}

static const char *wire_name(enum pb_wire wire)
{
        switch (wire) {
        case PB_WIRE_VARINT:
                return "varint";
        case PB_WIRE_FIXED64:
                return "fixed64";
        case PB_WIRE_LEN:
                return "length-delimited";
        case PB_WIRE_FIXED32:
                return "fixed32";
        }
        return "unknown";
}

static const struct pb_field_desc *find_field(const struct pb_message *desc, uint32_t number)
{
        for (size_t i = 0; i < desc->n_fields; i++)
                if (desc->fields[i].number == number)
                        return &desc->fields[i];
        return NULL;
}

static int
make_string(const uint8_t *s, size_t len, const char *path, json_t **ret, struct xp_error *err)
{
        json_t *value;

        if (!valid_text(s, len))
                return xp_errorf(
                    err, -EBADMSG, "%s: the string is not UTF-8 text without NUL", path);
        value = json_stringn((const char *)s, len);
        if (!value)
                return -ENOMEM;
        *ret = value;
        return 0;
}

/* bytes as Go's encoding/json writes a []byte: standard base64. */
static int make_base64(const uint8_t *s, size_t len, json_t **ret)
{
        _cleanup_free_ char *text = NULL;
        json_t *value;

        if (xp_base64_encode(s, len, &text) < 0)
                return -ENOMEM;
        value = json_string(text);
        if (!value)
                return -ENOMEM;
        *ret = value;
        return 0;
}

/* resource.Quantity is a message holding its text in field 1. */
static int decode_quantity(
    const uint8_t *data, size_t size, const char *path, json_t **ret, struct xp_error *err)
{
        struct pb_reader r = {data, data + size};
        const uint8_t *text = NULL;
        size_t len = 0;
        struct pb_field f;
        int k;

        while ((k = pb_read_field(&r, data, &f, err)) > 0) {
                if (f.number != 1)
                        return xp_errorf(
                            err,
                            -EPROTONOSUPPORT,
                            "%s: field number %" PRIu32
                            " of resource.Quantity is not supported in protobuf bodies; send the object as JSON (kubectl apply -f)",
                            path,
                            f.number);
                if (f.wire != PB_WIRE_LEN)
                        return xp_errorf(err, -EBADMSG, "%s: the quantity is not a string", path);
                text = f.bytes;
                len = f.len;
        }
        if (k < 0)
                return xp_error_prefix(err, k, "%s", path);
        if (len == 0)
                return xp_errorf(err, -EBADMSG, "%s: the quantity is empty", path);
        return make_string(text, len, path, ret, err);
}

/* util/intstr IntOrString {int64 type = 1; int32 intVal = 2; string strVal = 3}: a JSON
 * integer (type 0) or string (type 1). */
static int decode_intstr(
    const uint8_t *data, size_t size, const char *path, json_t **ret, struct xp_error *err)
{
        struct pb_reader r = {data, data + size};
        const uint8_t *text = NULL;
        int64_t type = 0, value = 0;
        size_t len = 0;
        struct pb_field f;
        int k;

        while ((k = pb_read_field(&r, data, &f, err)) > 0) {
                if (f.number == 1 && f.wire == PB_WIRE_VARINT)
                        type = (int64_t)f.varint;
                else if (f.number == 2 && f.wire == PB_WIRE_VARINT)
                        value = (int32_t)(uint32_t)f.varint;
                else if (f.number == 3 && f.wire == PB_WIRE_LEN) {
                        text = f.bytes;
                        len = f.len;
                } else
                        return xp_errorf(err, -EBADMSG, "%s: not an IntOrString", path);
        }
        if (k < 0)
                return xp_error_prefix(err, k, "%s", path);
        if (type == 1)
                return make_string(text ? text : (const uint8_t *)"", len, path, ret, err);
        *ret = json_integer(value);
        return *ret ? 0 : -ENOMEM;
}

/* meta/v1 Time. 1 with *ret set, 0 for the zero time (which Kubernetes omits). */
static int
decode_time(const uint8_t *data, size_t size, const char *path, json_t **ret, struct xp_error *err)
{
        struct pb_reader r = {data, data + size};
        char text[XP_RFC3339_MAX];
        int64_t seconds = 0, nanos = 0;
        struct pb_field f;
        json_t *value;
        int k;

        while ((k = pb_read_field(&r, data, &f, err)) > 0) {
                if (f.number != 1 && f.number != 2)
                        return xp_errorf(
                            err,
                            -EPROTONOSUPPORT,
                            "%s: field number %" PRIu32
                            " of meta/v1 Time is not supported in protobuf bodies; send the object as JSON (kubectl apply -f)",
                            path,
                            f.number);
                if (f.wire != PB_WIRE_VARINT)
                        return xp_errorf(
                            err, -EBADMSG, "%s: the time is not made of varints", path);
                if (f.number == 1)
                        seconds = (int64_t)f.varint;
                else
                        nanos = (int32_t)(uint32_t)f.varint;
        }
        if (k < 0)
                return xp_error_prefix(err, k, "%s", path);
        if (nanos < 0 || nanos > 999999999)
                return xp_errorf(
                    err, -EBADMSG, "%s: nanoseconds %" PRId64 " out of range", path, nanos);
        if (seconds == 0 && nanos == 0)
                return 0;
        if (xp_time_format_rfc3339(seconds, text) < 0)
                return xp_errorf(err,
                                 -EBADMSG,
                                 "%s: %" PRId64 " seconds is outside the years 0-9999",
                                 path,
                                 seconds);
        value = json_string(text);
        if (!value)
                return -ENOMEM;
        *ret = value;
        return 1;
}

/* The object member name of a map, made first when absent. NULL on ENOMEM. */
static json_t *member_object(json_t *target, const char *name)
{
        json_t *object = json_object_get(target, name);

        if (json_is_object(object))
                return object;
        object = json_object();
        if (!object || json_object_set_new(target, name, object) < 0)
                return NULL;
        return object;
}

static int decode_map_entry(const struct pb_field_desc *fd,
                            const uint8_t *data,
                            size_t size,
                            const char *path,
                            json_t *map,
                            struct xp_error *err)
{
        struct pb_reader r = {data, data + size};
        const uint8_t *key = NULL, *value = NULL;
        size_t key_len = 0, value_len = 0;
        _cleanup_free_ char *key_text = NULL;
        json_t *json_value = NULL;
        struct pb_field f;
        int k;

        while ((k = pb_read_field(&r, data, &f, err)) > 0) {
                if ((f.number != 1 && f.number != 2) || f.wire != PB_WIRE_LEN)
                        return xp_errorf(err,
                                         -EBADMSG,
                                         "%s: a map entry holds field %" PRIu32
                                         " (%s); only a key (1) and a value (2) may be there",
                                         path,
                                         f.number,
                                         wire_name(f.wire));
                if (f.number == 1) {
                        key = f.bytes;
                        key_len = f.len;
                } else {
                        value = f.bytes;
                        value_len = f.len;
                }
        }
        if (k < 0)
                return xp_error_prefix(err, k, "%s", path);
        if (!valid_text(key ? key : (const uint8_t *)"", key_len))
                return xp_errorf(err, -EBADMSG, "%s: a key is not UTF-8 text without NUL", path);
        key_text = strndup(key ? (const char *)key : "", key_len);
        if (!key_text)
                return -ENOMEM;
        if (fd->type == PB_QUANTITY_MAP) {
                char child[PATH_MAX_LEN];

                snprintf(child, sizeof(child), "%s[%s]", path, key_text);
                k = decode_quantity(
                    value ? value : (const uint8_t *)"", value_len, child, &json_value, err);
        } else if (fd->type == PB_BYTES_MAP)
                k = make_base64(value ? value : (const uint8_t *)"", value_len, &json_value);
        else
                k = make_string(
                    value ? value : (const uint8_t *)"", value_len, path, &json_value, err);
        if (k < 0)
                return k;
        if (json_object_set_new(map, key_text, json_value) < 0)
                return -ENOMEM;
        return 0;
}

static enum pb_wire expected_wire(enum pb_type type)
{
        switch (type) {
        case PB_INT32:
        case PB_INT64:
        case PB_BOOL:
                return PB_WIRE_VARINT;
        case PB_STRING:
        case PB_MESSAGE:
        case PB_STRING_MAP:
        case PB_QUANTITY:
        case PB_QUANTITY_MAP:
        case PB_TIME:
        case PB_BYTES:
        case PB_BYTES_MAP:
        case PB_INTSTR:
                break;
        }
        return PB_WIRE_LEN;
}

/* Stores value (taking it) as fd's member of target; NULL value: the zero of a plain field. */
static int store(const struct pb_field_desc *fd, json_t *target, json_t *value)
{
        json_t *array;

        if (!(fd->flags & PB_REPEATED)) {
                if (!value) {
                        json_object_del(target, fd->json);
                        return 0;
                }
                return json_object_set_new(target, fd->json, value) < 0 ? -ENOMEM : 0;
        }
        array = json_object_get(target, fd->json);
        if (!json_is_array(array)) {
                array = json_array();
                if (!array || json_object_set_new(target, fd->json, array) < 0) {
                        json_decref(value);
                        return -ENOMEM;
                }
        }
        return json_array_append_new(array, value) < 0 ? -ENOMEM : 0;
}

/* A scalar field's JSON value; *ret stays NULL for a zero a plain field leaves out. */
static int decode_scalar(const struct pb_field_desc *fd,
                         const struct pb_field *f,
                         const char *child,
                         bool keep_zero,
                         json_t **ret,
                         struct xp_error *err)
{
        json_t *value = NULL;
        int r;

        switch (fd->type) {
        case PB_STRING:
                if (f->len == 0 && !keep_zero)
                        break;
                r = make_string(f->bytes, f->len, child, &value, err);
                if (r < 0)
                        return r;
                break;
        case PB_INT32:
        case PB_INT64: {
                /* int32 values travel sign-extended to 64 bits; protobuf truncates them */
                int64_t n =
                    fd->type == PB_INT32 ? (int32_t)(uint32_t)f->varint : (int64_t)f->varint;

                if (n == 0 && !keep_zero)
                        break;
                value = json_integer(n);
                if (!value)
                        return -ENOMEM;
                break;
        }
        case PB_BOOL:
                if (f->varint == 0 && !keep_zero)
                        break;
                value = json_boolean(f->varint != 0);
                break;
        case PB_BYTES:
                if (f->len == 0 && !keep_zero)
                        break;
                r = make_base64(f->bytes, f->len, &value);
                if (r < 0)
                        return r;
                break;
        case PB_QUANTITY:
                r = decode_quantity(f->bytes, f->len, child, &value, err);
                if (r < 0)
                        return r;
                break;
        case PB_TIME:
                r = decode_time(f->bytes, f->len, child, &value, err);
                if (r < 0)
                        return r;
                break;
        case PB_INTSTR:
                r = decode_intstr(f->bytes, f->len, child, &value, err);
                if (r < 0)
                        return r;
                break;
        default:
                break;
        }
        *ret = value;
        return 0;
}

static int decode_field(const struct pb_field_desc *fd,
                        const struct pb_message *desc,
                        const struct pb_field *f,
                        const char *path,
                        unsigned depth,
                        json_t *target,
                        struct xp_error *err)
{
        bool keep_zero = fd->flags & (PB_PRESENCE | PB_REPEATED);
        char child[PATH_MAX_LEN];
        json_t *value = NULL, *object;
        int r;

        if (path[0])
                snprintf(child, sizeof(child), "%s.%s", path, fd->json);
        else
                snprintf(child, sizeof(child), "%s", fd->json);
        if (f->wire != expected_wire(fd->type))
                return xp_errorf(err,
                                 -EBADMSG,
                                 "%s: field %" PRIu32 " of %s is %s on the wire, expected %s",
                                 child,
                                 f->number,
                                 desc->name,
                                 wire_name(f->wire),
                                 wire_name(expected_wire(fd->type)));
        if (fd->flags & PB_REPEATED) {
                json_t *array = json_object_get(target, fd->json);
                size_t len = json_is_array(array) ? json_array_size(array) : 0;
                char indexed[PATH_MAX_LEN];

                snprintf(indexed, sizeof(indexed), "%s[%zu]", child, len);
                memcpy(child, indexed, sizeof(child));
        }

        switch (fd->type) {
        case PB_STRING:
        case PB_INT32:
        case PB_INT64:
        case PB_BOOL:
        case PB_BYTES:
        case PB_QUANTITY:
        case PB_TIME:
        case PB_INTSTR:
                r = decode_scalar(fd, f, child, keep_zero, &value, err);
                if (r < 0)
                        return r;
                break;
        case PB_STRING_MAP:
        case PB_QUANTITY_MAP:
        case PB_BYTES_MAP:
                object = member_object(target, fd->json);
                if (!object)
                        return -ENOMEM;
                return decode_map_entry(fd, f->bytes, f->len, child, object, err);
        case PB_MESSAGE:
                if (fd->flags & PB_REPEATED)
                        object = json_object();
                else
                        object = json_incref(member_object(target, fd->json));
                if (!object)
                        return -ENOMEM;
                r = pb_decode_message(fd->message, f->bytes, f->len, child, depth + 1, object, err);
                if (r < 0 || !(fd->flags & PB_REPEATED)) {
                        json_decref(object);
                        return r;
                }
                value = object;
                break;
        }
        return store(fd, target, value);
}

int pb_decode_message(const struct pb_message *desc,
                      const uint8_t *data,
                      size_t size,
                      const char *path,
                      unsigned depth,
                      json_t *target,
                      struct xp_error *err)
{
        struct pb_reader r = {data, data + size};
        struct pb_field f;
        int k;

        if (depth > XP_PROTOBUF_DEPTH_MAX)
                return xp_errorf(err,
                                 -E2BIG,
                                 "%s: messages nest deeper than %d levels",
                                 path[0] ? path : "the object",
                                 XP_PROTOBUF_DEPTH_MAX);
        while ((k = pb_read_field(&r, data, &f, err)) > 0) {
                const struct pb_field_desc *fd = find_field(desc, f.number);

                if (!fd)
                        return xp_errorf(
                            err,
                            -EPROTONOSUPPORT,
                            "%s: field number %" PRIu32
                            " of %s is not supported in protobuf bodies; send the object as JSON instead (kubectl apply -f with a manifest)",
                            path[0] ? path : "the object",
                            f.number,
                            desc->name);
                k = decode_field(fd, desc, &f, path, depth, target, err);
                if (k < 0)
                        return k;
        }
        if (k < 0)
                return xp_error_prefix(
                    err, k, "%s (%s)", path[0] ? path : "the object", desc->name);
        return 0;
}
