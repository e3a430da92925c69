/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The protobuf wire format (protobuf.c) and a decoder driven by per-message tables (the tables
 * of the Kubernetes messages live in k8s_proto.c). Internal to libxpool.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "xpool/error.h"
#include "xpool/macro.h"

enum pb_wire {
        PB_WIRE_VARINT = 0,
        PB_WIRE_FIXED64 = 1,
        PB_WIRE_LEN = 2,
        PB_WIRE_FIXED32 = 5,
};

/* A bounded view of the bytes still to read; never reads outside [p, end). */
struct pb_reader {
        const uint8_t *p;
        const uint8_t *end;
};

/* One field as it appears on the wire. */
struct pb_field {
        uint32_t number;
        enum pb_wire wire;
        uint64_t varint;      /* PB_WIRE_VARINT, FIXED32 and FIXED64 */
        const uint8_t *bytes; /* PB_WIRE_LEN: borrowed from the reader's buffer */
        size_t len;
};

/*
 * The next field: its tag, then its value (a length-delimited value checked to lie within the
 * reader). 1 with *ret set, 0 at the end, -EBADMSG when malformed (groups, field number 0,
 * unknown wire types, truncation); err says what and at which byte offset from base.
 */
int pb_read_field(struct pb_reader *r,
                  const uint8_t *base,
                  struct pb_field *ret,
                  struct xp_error *err);

enum pb_type {
        PB_STRING,       /* JSON string */
        PB_INT32,        /* JSON integer */
        PB_INT64,        /* JSON integer */
        PB_BOOL,         /* JSON boolean */
        PB_MESSAGE,      /* JSON object, through field->message */
        PB_STRING_MAP,   /* map<string, string>: JSON object of strings */
        PB_QUANTITY,     /* resource.Quantity {string = 1}: JSON string */
        PB_QUANTITY_MAP, /* map<string, Quantity>: JSON object of strings */
        PB_TIME,         /* meta/v1 Time {int64 seconds = 1; int32 nanos = 2}: RFC 3339 */
        PB_BYTES,        /* bytes: a base64 JSON string, as Go's encoding/json writes []byte */
        PB_BYTES_MAP,    /* map<string, bytes>: JSON object of base64 strings */
        PB_INTSTR,       /* util/intstr IntOrString: a JSON integer or string */
};

enum {
        PB_REPEATED = 1 << 0, /* a JSON array, one element per occurrence (never packed here) */
        PB_PRESENCE = 1 << 1, /* Go pointer: written whenever present, even when zero */
};

struct pb_message;

struct pb_field_desc {
        uint32_t number;
        const char *json; /* the JSON member name */
        enum pb_type type;
        unsigned flags;
        const struct pb_message *message; /* PB_MESSAGE only */
};

struct pb_message {
        const char *name; /* for errors: "core/v1 PodSpec" */
        const struct pb_field_desc *fields;
        size_t n_fields;
};

/*
 * Decodes the message in [data, data + size) through desc into the JSON object target (fields
 * are added to it; a message field that occurs again is merged, a scalar replaced, as protobuf
 * does). path is the JSON path of target for errors ("spec.containers[0]"), depth how many
 * messages enclose it. Errors as xp_protobuf_to_json(); target may be partly filled on failure
 * (the caller drops it).
 */
int pb_decode_message(const struct pb_message *desc,
                      const uint8_t *data,
                      size_t size,
                      const char *path,
                      unsigned depth,
                      json_t *target,
                      struct xp_error *err);

/* The tables are written with these (k8s_proto.c, the document kinds' kind_*.c). */
#define FIELD(n, name, t, f, m)                                                                    \
        {                                                                                          \
                .number = (n), .json = (name), .type = (t), .flags = (f), .message = (m)           \
        }
/* plain fields: a zero value is omitted, as Go's JSON omitempty does */
#define STR(n, name)  FIELD(n, name, PB_STRING, 0, NULL)
#define I32(n, name)  FIELD(n, name, PB_INT32, 0, NULL)
#define I64(n, name)  FIELD(n, name, PB_INT64, 0, NULL)
#define BOOL(n, name) FIELD(n, name, PB_BOOL, 0, NULL)
/* pointer fields: kept when present, zero or not */
#define STR_P(n, name)   FIELD(n, name, PB_STRING, PB_PRESENCE, NULL)
#define I32_P(n, name)   FIELD(n, name, PB_INT32, PB_PRESENCE, NULL)
#define I64_P(n, name)   FIELD(n, name, PB_INT64, PB_PRESENCE, NULL)
#define BOOL_P(n, name)  FIELD(n, name, PB_BOOL, PB_PRESENCE, NULL)
#define STRS(n, name)    FIELD(n, name, PB_STRING, PB_REPEATED, NULL)
#define MSG(n, name, m)  FIELD(n, name, PB_MESSAGE, 0, &(m))
#define MSGS(n, name, m) FIELD(n, name, PB_MESSAGE, PB_REPEATED, &(m))
#define SMAP(n, name)    FIELD(n, name, PB_STRING_MAP, 0, NULL)
#define QMAP(n, name)    FIELD(n, name, PB_QUANTITY_MAP, 0, NULL)
#define QTY(n, name)     FIELD(n, name, PB_QUANTITY, 0, NULL)
#define TIME(n, name)    FIELD(n, name, PB_TIME, 0, NULL)
#define BYTES(n, name)   FIELD(n, name, PB_BYTES, 0, NULL)
#define BMAP(n, name)    FIELD(n, name, PB_BYTES_MAP, 0, NULL)
#define INTSTR(n, name)  FIELD(n, name, PB_INTSTR, 0, NULL)

#define MESSAGE(var, label, ...)                                                                   \
        static const struct pb_field_desc var##_fields[] = {__VA_ARGS__};                          \
        static const struct pb_message var = {                                                     \
            .name = (label), .fields = var##_fields, .n_fields = XP_ELEMENTSOF(var##_fields)}

/* meta/v1 ObjectMeta, every kind's metadata = 1 (k8s_proto.c). */
extern const struct pb_message xp_pb_object_meta;
/* meta/v1 LabelSelector (kind_policy.c). */
extern const struct pb_message xp_pb_label_selector;
/* core/v1 ObjectReference and LocalObjectReference (k8s_proto.c). */
extern const struct pb_message xp_pb_object_reference;
extern const struct pb_message xp_pb_local_object_reference;
/* core/v1 PodSpec, of a pod template (k8s_proto.c). */
extern const struct pb_message xp_pb_pod_spec;
