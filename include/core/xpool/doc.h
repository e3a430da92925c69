/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Document kinds: Kubernetes kinds served without a typed C struct. Such an object is its
 * metadata, decoded by the same codec as a Pod's (names, labels, ownerReferences, finalizers,
 * resourceVersion, managedFields all behave the same), and a JSON body holding everything else
 * (spec, status, data, ...), checked against the kind's API schema type (src/core/apischema*.txt:
 * field names under strict decoding, JSON types, int32 ranges, the nesting bound) with the
 * codec's words, then defaulted and validated by the kind's hooks (struct xp_kind in
 * xpool/kind.h). docs/development.md "Adding a kind" walks through one.
 *
 * The accessors at the end read and write any JSON object by dotted path ("spec.replicas"), for
 * controllers that hold objects as the informer hands them over.
 */

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "xpool/codec.h"
#include "xpool/error.h"
#include "xpool/kind.h"
#include "xpool/macro.h"
#include "xpool/object.h"

struct xp_doc {
        const struct xp_kind *kind; /* borrowed: the static entry of the kinds table */
        struct xp_object_meta metadata;
        json_t *body; /* owned: an object of every member but apiVersion, kind and metadata */
};

/*
 * Decodes json as an object of kind (a document kind): apiVersion and kind, when present, must
 * be kind's; unless flags holds XP_DECODE_TRUSTED, the schema type's check, the metadata's
 * validation, kind->doc_defaults and kind->doc_validate (old NULL) run, in that order. On success
 * *ret owns a new document (free with xp_doc_free()); on failure it is untouched and err says
 * where and what ("data[a b]: Invalid value: ...").
 */
int xp_doc_from_json(const struct xp_kind *kind,
                     const json_t *json,
                     const struct xp_decode_source *source,
                     unsigned flags,
                     struct xp_doc **ret,
                     struct xp_error *err);
/* apiVersion and kind first, then metadata, then the body's members in their order. */
int xp_doc_to_json(const struct xp_doc *doc, json_t **ret);
/* The kind's validation of doc again (a document changed in code); old as for doc_validate. */
int xp_doc_validate(const struct xp_doc *doc, const struct xp_doc *old, struct xp_error *err);
void xp_doc_free(struct xp_doc *doc);
XP_DEFINE_FREEP(struct xp_doc, xp_doc_free)

/*
 * The kinds table's operations for a document kind. In kind_<name>.c:
 *
 *   XP_DOC_KIND_DECODER(xp_kind_configmap)
 *   const struct xp_kind xp_kind_configmap = {.kind = "ConfigMap", ...,
 *                                             XP_DOC_KIND_OPS(xp_kind_configmap), ...};
 */
int xp_doc_from_json_any(const struct xp_kind *kind,
                         const json_t *json,
                         const struct xp_decode_source *source,
                         unsigned flags,
                         void **ret,
                         struct xp_error *err);
int xp_doc_to_json_any(const void *object, json_t **ret);
int xp_doc_validate_any(const void *object, struct xp_error *err);
int xp_doc_validate_update_any(const void *object, const json_t *stored, struct xp_error *err);
void xp_doc_free_any(void *object);
struct xp_object_meta *xp_doc_meta_any(void *object);

#define XP_DOC_KIND_DECODER(var)                                                                   \
        extern const struct xp_kind var;                                                           \
        static int var##_from_json(const json_t *json,                                             \
                                   const struct xp_decode_source *source,                          \
                                   unsigned flags,                                                 \
                                   void **ret,                                                     \
                                   struct xp_error *err)                                           \
        {                                                                                          \
                return xp_doc_from_json_any(&var, json, source, flags, ret, err);                  \
        }

#define XP_DOC_KIND_OPS(var)                                                                       \
        .from_json = var##_from_json, .to_json = xp_doc_to_json_any,                               \
        .validate = xp_doc_validate_any, .free = xp_doc_free_any, .meta = xp_doc_meta_any,         \
        .validate_update = xp_doc_validate_update_any

/*
 * A doc_validate hook (in src/core) reports with schema.h's xp_fail_field(ctx, -EINVAL,
 * "spec.replicas", "Invalid value: %d: ...", n) (`field: message`, field a dotted path below
 * the object) or xp_fail_key(ctx, -EINVAL, "data", key, ...) (`field[key]: message`).
 */

/* ---- accessors by dotted path ("spec.template.spec"), on any JSON value ----------------- */

/* The value at path, NULL when a step is missing or not an object. Borrowed. */
const json_t *xp_json_at(const json_t *object, const char *path);
/* The integer at path, or def when missing or not an integer. */
int64_t xp_json_int_at(const json_t *object, const char *path, int64_t def);
/* The string at path, or def. Borrowed. */
const char *xp_json_str_at(const json_t *object, const char *path, const char *def);
/* The boolean at path, or def. */
bool xp_json_bool_at(const json_t *object, const char *path, bool def);
/* Whether the array list holds the string s (false when list is not an array). */
bool xp_json_has_string(const json_t *list, const char *s);
/* The object at path, or NULL. Borrowed. */
const json_t *xp_json_object_at(const json_t *object, const char *path);
/*
 * Sets the member at path to value (taken, also on failure), making the objects on the way
 * ("status" for "status.replicas"); NULL value deletes the member. -EINVAL when a step exists
 * and is not an object, -ENOMEM.
 */
int xp_json_set_at(json_t *object, const char *path, json_t *value);
/* xp_json_set_at() with an integer or a string. */
int xp_json_set_int_at(json_t *object, const char *path, int64_t value);
int xp_json_set_str_at(json_t *object, const char *path, const char *value);

/*
 * A LabelSelector object ({matchLabels, matchExpressions}) in selector syntax, as Kubernetes
 * prints one (a Scale's status.selector): requirements sorted by key, "k=v", "k in (a,b)",
 * "k notin (a,b)", "k", "!k", joined by ","; "" for an empty or absent selector. *ret is a new
 * string (caller frees). 0 or -ENOMEM.
 */
int xp_json_label_selector_string(const json_t *selector, char **ret);

/*
 * The autoscaling/v1 Scale of object (borrowed), an object of kind: metadata's name, namespace,
 * uid, resourceVersion and creationTimestamp, spec.replicas and status.replicas from the kind's
 * scale paths (0 when absent), status.selector (left out when empty). -EINVAL when kind has no
 * scale subresource, -ENOMEM; *ret is new (caller json_decref()s it).
 */
int xp_doc_scale(const struct xp_kind *kind, const json_t *object, json_t **ret);
