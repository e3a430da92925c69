/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Document kinds (xpool/doc.h): metadata through the codec, the rest kept as JSON and checked
 * against the kind's API schema type, then the kind's defaults and validation.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "schema.h"
#include "xpool/doc.h"

/*
 * One codec field, metadata; every other member lands in the body (the codec's `extra`, which
 * keeps members in order and turns integral reals into integers as it does for every kind).
 */
static const struct xp_field doc_fields[] = {
    XP_FIELD("metadata",
             XP_FT_STRUCT,
             struct xp_doc,
             metadata,
             .flags = XP_FIELD_REQUIRED | XP_FIELD_ALWAYS,
             .schema = &xp_object_meta_schema),
};

static const struct xp_schema doc_schema = {
    .name = "document",
    .size = sizeof(struct xp_doc),
    .extra_offset = offsetof(struct xp_doc, body),
    .fields = doc_fields,
    .n_fields = XP_ELEMENTSOF(doc_fields),
};

static const char *type_name(const struct xp_kind *kind)
{
        return kind->schema_type ? kind->schema_type : kind->kind;
}

static void doc_clear(struct xp_doc *doc)
{
        xp_schema_done(&doc_schema, doc);
}

/* The schema's check, then the codec's reading of the metadata into doc. */
static int decode_head(struct xp_decode_ctx *ctx,
                       const struct xp_kind *kind,
                       const json_t *json,
                       struct xp_doc *doc)
{
        struct xp_decode_ctx loose = *ctx;
        json_t *copy;
        int r = xp_object_check_head(ctx, kind, type_name(kind), json);

        if (r < 0)
                return r;
        copy = json_copy((json_t *)json);
        if (!copy)
                return -ENOMEM;
        json_object_del(copy, "apiVersion");
        json_object_del(copy, "kind");
        /* the schema's check already refused what strict decoding refuses */
        loose.flags &= ~(unsigned)XP_DECODE_STRICT;
        /* Defaults write into the body: a body sharing the caller's nodes would write them (an
         * update's merge shares them with the request's patch and the stored object). */
        if (kind->doc_defaults && !(ctx->flags & XP_DECODE_TRUSTED))
                loose.flags &= ~(unsigned)XP_DECODE_SHARE;
        r = xp_schema_decode(&loose, &doc_schema, copy, doc);
        json_decref(copy);
        if (r >= 0 && !doc->body) {
                doc->body = json_object();
                if (!doc->body)
                        r = -ENOMEM;
        }
        return r;
}

/* What a client's document goes through after its types: metadata, defaults, the kind's rules. */
static int check_doc(struct xp_decode_ctx *ctx, struct xp_doc *doc)
{
        int r = xp_schema_validate(ctx, &doc_schema, doc);

        if (r >= 0 && doc->kind->doc_defaults)
                r = doc->kind->doc_defaults(doc);
        if (r >= 0 && doc->kind->doc_validate)
                r = doc->kind->doc_validate(ctx, doc, NULL);
        return r;
}

int xp_doc_from_json(const struct xp_kind *kind,
                     const json_t *json,
                     const struct xp_decode_source *source,
                     unsigned flags,
                     struct xp_doc **ret,
                     struct xp_error *err)
{
        struct xp_decode_ctx ctx = {.source = source, .flags = flags, .err = err};
        struct xp_doc *doc;
        int r;

        if (source && source->base)
                ctx.path = *source->base;
        doc = calloc(1, sizeof(*doc));
        if (!doc)
                return -ENOMEM;
        doc->kind = kind;
        r = decode_head(&ctx, kind, json, doc);
        if (r >= 0 && !(flags & XP_DECODE_TRUSTED))
                r = check_doc(&ctx, doc);
        if (r < 0) {
                if (r == -ENOMEM)
                        xp_errorf(err, r, "out of memory decoding a %s", kind->kind);
                xp_doc_free(doc);
                return r;
        }
        *ret = doc;
        return 0;
}

int xp_doc_to_json(const struct xp_doc *doc, json_t **ret)
{
        json_t *out, *rest;
        int r;

        out =
            json_pack("{s:s, s:s}", "apiVersion", doc->kind->api_version, "kind", doc->kind->kind);
        if (!out)
                return -ENOMEM;
        r = xp_schema_encode(&doc_schema, doc, &rest);
        if (r < 0) {
                json_decref(out);
                return r;
        }
        r = json_object_update(out, rest);
        json_decref(rest);
        if (r < 0) {
                json_decref(out);
                return -ENOMEM;
        }
        *ret = out;
        return 0;
}

int xp_doc_validate(const struct xp_doc *doc, const struct xp_doc *old, struct xp_error *err)
{
        struct xp_decode_ctx ctx = {.err = err};
        int r = xp_schema_validate(&ctx, &doc_schema, doc);

        if (r >= 0 && doc->kind->doc_validate)
                r = doc->kind->doc_validate(&ctx, doc, old);
        return r;
}

void xp_doc_free(struct xp_doc *doc)
{
        if (!doc)
                return;
        doc_clear(doc);
        free(doc);
}

/* ---- the kinds table's operations ------------------------------------------------------------ */

int xp_doc_from_json_any(const struct xp_kind *kind,
                         const json_t *json,
                         const struct xp_decode_source *source,
                         unsigned flags,
                         void **ret,
                         struct xp_error *err)
{
        struct xp_doc *doc;
        int r = xp_doc_from_json(kind, json, source, flags, &doc, err);

        if (r >= 0)
                *ret = doc;
        return r;
}

int xp_doc_to_json_any(const void *object, json_t **ret)
{
        return xp_doc_to_json(object, ret);
}

int xp_doc_validate_any(const void *object, struct xp_error *err)
{
        return xp_doc_validate(object, NULL, err);
}

/* The stored object as it was written (trusted), then the kind's rules with it as old. */
int xp_doc_validate_update_any(const void *object, const json_t *stored, struct xp_error *err)
{
        const struct xp_doc *doc = object;
        _cleanup_(xp_doc_freep) struct xp_doc *old = NULL;
        struct xp_decode_ctx ctx = {.err = err};
        int r;

        if (!doc->kind->doc_validate)
                return 0;
        r = xp_doc_from_json(doc->kind, stored, NULL, XP_DECODE_TRUSTED, &old, err);
        if (r < 0)
                return r;
        return doc->kind->doc_validate(&ctx, doc, old);
}

void xp_doc_free_any(void *object)
{
        xp_doc_free(object);
}

struct xp_object_meta *xp_doc_meta_any(void *object)
{
        return &((struct xp_doc *)object)->metadata;
}
