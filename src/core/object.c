/* SPDX-License-Identifier: Apache-2.0 */
/* Top-level objects of every kind: apiVersion/kind, decode + validate, encode, free. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "schema.h"
#include "xpool/apischema.h"
#include "xpool/jsonliteral.h"
#include "xpool/kind.h"
#include "xpool/strutil.h"

struct kind_info {
        const struct xp_kind *type; /* NULL: not a Kubernetes object, no apiVersion or kind */
        const char *name;           /* for messages */
        const struct xp_schema *schema;
};

static const struct kind_info pod_kind = {&xp_kind_pod, "Pod", &xp_pod_schema};
static const struct kind_info node_kind = {&xp_kind_node, "Node", &xp_node_schema};
static const struct kind_info namespace_kind = {
    &xp_kind_namespace, "Namespace", &xp_namespace_schema};
static const struct kind_info event_kind = {&xp_kind_event, "Event", &xp_event_schema};
static const struct kind_info lease_kind = {&xp_kind_lease, "Lease", &xp_lease_schema};
/* not a Kubernetes object: no apiVersion or kind (a node description, `xpool devices -o json`) */
static const struct kind_info inventory_kind = {NULL, "node inventory", &xp_node_inventory_schema};

static int
check_type_meta(struct xp_decode_ctx *ctx, const struct xp_kind *type, const json_t *json)
{
        const json_t *api_version = json_object_get(json, "apiVersion");
        const json_t *kind = json_object_get(json, "kind");
        char q[XP_QUOTE_MAX];
        int r = 0;

        if (!type)
                return 0;
        if (api_version && !json_is_null(api_version) &&
            (!json_is_string(api_version) ||
             strcmp(json_string_value(api_version), type->api_version) != 0)) {
                xp_path_push_field(&ctx->path, "apiVersion");
                r = json_is_string(api_version)
                        ? xp_decode_fail(ctx,
                                         -EINVAL,
                                         NULL,
                                         false,
                                         "Unsupported value: %s: %s is in apiVersion \"%s\"",
                                         xp_quote(json_string_value(api_version), q),
                                         type->kind,
                                         type->api_version)
                        : xp_decode_fail(ctx,
                                         -EINVAL,
                                         NULL,
                                         false,
                                         "expected a string such as \"%s\"",
                                         type->api_version);
        } else if (kind && !json_is_null(kind) &&
                   (!json_is_string(kind) || strcmp(json_string_value(kind), type->kind) != 0)) {
                xp_path_push_field(&ctx->path, "kind");
                r = json_is_string(kind) ? xp_decode_fail(ctx,
                                                          -EINVAL,
                                                          NULL,
                                                          false,
                                                          "unexpected kind %s: expected \"%s\"",
                                                          xp_quote(json_string_value(kind), q),
                                                          type->kind)
                                         : xp_decode_fail(ctx,
                                                          -EINVAL,
                                                          NULL,
                                                          false,
                                                          "expected a string such as \"%s\"",
                                                          type->kind);
        }
        if (r < 0)
                xp_path_pop(&ctx->path);
        return r;
}

/*
 * Before the model reads it: the bound on nesting, then the API schema's types for every member,
 * modelled or not. Objects read back from our own store passed both when they were written.
 */
static int check_json(struct xp_decode_ctx *ctx, const char *type_name, const json_t *json)
{
        const struct xp_apischema *api;
        const struct xp_apitype *type;
        int r;

        if (ctx->flags & XP_DECODE_TRUSTED)
                return 0;
        r = ctx->flags & XP_DECODE_SHALLOW ? 0 : xp_decode_check_depth(ctx, json);
        if (r < 0)
                return r;
        r = xp_apischema_builtin(&api, ctx->err);
        if (r < 0)
                return r;
        type = xp_apischema_find(api, type_name);
        return type ? xp_apischema_check_at(ctx, type, json) : 0;
}

int xp_object_check_head(struct xp_decode_ctx *ctx,
                         const struct xp_kind *kind,
                         const char *type_name,
                         const json_t *json)
{
        int r;

        if (!json_is_object(json))
                return xp_decode_fail(ctx,
                                      -EINVAL,
                                      NULL,
                                      false,
                                      "expected a %s object (a mapping), got %s",
                                      kind ? kind->kind : type_name,
                                      json_is_array(json) ? "a list" : "a scalar");
        r = check_type_meta(ctx, kind, json);
        return r < 0 ? r : check_json(ctx, type_name, json);
}

static int decode_object(const struct kind_info *info,
                         const json_t *json,
                         const struct xp_decode_source *source,
                         unsigned flags,
                         void **ret,
                         struct xp_error *err)
{
        struct xp_decode_ctx ctx = {.source = source, .flags = flags, .err = err};
        void *object;
        int r;

        if (source && source->base)
                ctx.path = *source->base;

        if (!json_is_object(json))
                return xp_decode_fail(&ctx,
                                      -EINVAL,
                                      NULL,
                                      false,
                                      "expected a %s object (a mapping), got %s",
                                      info->name,
                                      json_is_array(json) ? "a list" : "a scalar");
        r = xp_object_check_head(&ctx, info->type, info->schema->name, json);
        if (r < 0)
                return r;

        object = calloc(1, info->schema->size);
        if (!object)
                return -ENOMEM;
        /* apiVersion and kind are implied by the type: decode the rest */
        r = info->type ? xp_schema_decode_top(&ctx, info->schema, json, object)
                       : xp_schema_decode(&ctx, info->schema, json, object);
        if (r >= 0 && !(flags & XP_DECODE_TRUSTED))
                r = xp_schema_validate(&ctx, info->schema, object);
        if (r < 0) {
                if (r == -ENOMEM)
                        xp_errorf(err, r, "out of memory decoding a %s", info->name);
                xp_schema_done(info->schema, object);
                free(object);
                return r;
        }

        *ret = object;
        return 0;
}

static int encode_object(const struct kind_info *info, const void *object, json_t **ret)
{
        json_t *out;
        int r;

        if (!info->type)
                return xp_schema_encode(info->schema, object, ret);
        out = json_object();
        if (!out ||
            /* the kind's own strings: one node for all trees (xpool/jsonliteral.h) */
            json_object_set_new_nocheck(
                out, "apiVersion", xp_json_literal(info->type->api_version)) < 0 ||
            json_object_set_new_nocheck(out, "kind", xp_json_literal(info->type->kind)) < 0) {
                json_decref(out);
                return -ENOMEM;
        }
        r = xp_schema_encode_into(info->schema, object, out);
        if (r < 0) {
                json_decref(out);
                return r;
        }
        *ret = out;
        return 0;
}

static int validate_object(const struct kind_info *info, const void *object, struct xp_error *err)
{
        struct xp_decode_ctx ctx = {.err = err};

        return xp_schema_validate(&ctx, info->schema, object);
}

static int decode_text(const struct kind_info *info,
                       const char *text,
                       size_t len,
                       const char *source_name,
                       unsigned flags,
                       void **ret,
                       struct xp_error *err)
{
        struct xp_decode_source source = {.name = source_name};
        json_error_t jerr;
        json_t *json = json_loadb(text, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
        int r;

        if (!json)
                return xp_errorf(err,
                                 -EINVAL,
                                 "%s%s%d:%d: invalid JSON: %s",
                                 source_name ? source_name : "",
                                 source_name ? ":" : "",
                                 jerr.line,
                                 jerr.column,
                                 jerr.text);
        r = decode_object(info, json, source_name ? &source : NULL, flags, ret, err);
        json_decref(json);
        return r;
}

int xp_pod_from_json(const json_t *json,
                     const struct xp_decode_source *source,
                     unsigned flags,
                     struct xp_pod **ret,
                     struct xp_error *err)
{
        return decode_object(&pod_kind, json, source, flags, (void **)ret, err);
}

int xp_node_from_json(const json_t *json,
                      const struct xp_decode_source *source,
                      unsigned flags,
                      struct xp_node **ret,
                      struct xp_error *err)
{
        return decode_object(&node_kind, json, source, flags, (void **)ret, err);
}

int xp_pod_from_json_text(const char *text,
                          size_t len,
                          const char *source_name,
                          unsigned flags,
                          struct xp_pod **ret,
                          struct xp_error *err)
{
        return decode_text(&pod_kind, text, len, source_name, flags, (void **)ret, err);
}

int xp_node_from_json_text(const char *text,
                           size_t len,
                           const char *source_name,
                           unsigned flags,
                           struct xp_node **ret,
                           struct xp_error *err)
{
        return decode_text(&node_kind, text, len, source_name, flags, (void **)ret, err);
}

int xp_pod_validate(const struct xp_pod *pod, struct xp_error *err)
{
        return validate_object(&pod_kind, pod, err);
}

int xp_node_validate(const struct xp_node *node, struct xp_error *err)
{
        return validate_object(&node_kind, node, err);
}

int xp_pod_to_json(const struct xp_pod *pod, json_t **ret)
{
        return encode_object(&pod_kind, pod, ret);
}

int xp_node_to_json(const struct xp_node *node, json_t **ret)
{
        return encode_object(&node_kind, node, ret);
}

void xp_pod_free(struct xp_pod *pod)
{
        if (!pod)
                return;
        xp_schema_done(&xp_pod_schema, pod);
        free(pod);
}

void xp_node_free(struct xp_node *node)
{
        if (!node)
                return;
        xp_schema_done(&xp_node_schema, node);
        free(node);
}

int xp_node_inventory_from_json(const json_t *json,
                                const struct xp_decode_source *source,
                                unsigned flags,
                                struct xp_node_inventory **ret,
                                struct xp_error *err)
{
        return decode_object(&inventory_kind, json, source, flags, (void **)ret, err);
}

int xp_node_inventory_to_json(const struct xp_node_inventory *inventory, json_t **ret)
{
        return encode_object(&inventory_kind, inventory, ret);
}

int xp_node_inventory_validate(const struct xp_node_inventory *inventory, struct xp_error *err)
{
        return validate_object(&inventory_kind, inventory, err);
}

void xp_node_inventory_free(struct xp_node_inventory *inventory)
{
        if (!inventory)
                return;
        xp_schema_done(&xp_node_inventory_schema, inventory);
        free(inventory);
}

int xp_namespace_from_json(const json_t *json,
                           const struct xp_decode_source *source,
                           unsigned flags,
                           struct xp_namespace **ret,
                           struct xp_error *err)
{
        return decode_object(&namespace_kind, json, source, flags, (void **)ret, err);
}

int xp_namespace_validate(const struct xp_namespace *ns, struct xp_error *err)
{
        return validate_object(&namespace_kind, ns, err);
}

int xp_namespace_to_json(const struct xp_namespace *ns, json_t **ret)
{
        return encode_object(&namespace_kind, ns, ret);
}

void xp_namespace_free(struct xp_namespace *ns)
{
        if (!ns)
                return;
        xp_schema_done(&xp_namespace_schema, ns);
        free(ns);
}

int xp_event_from_json(const json_t *json,
                       const struct xp_decode_source *source,
                       unsigned flags,
                       struct xp_event **ret,
                       struct xp_error *err)
{
        return decode_object(&event_kind, json, source, flags, (void **)ret, err);
}

int xp_event_validate(const struct xp_event *event, struct xp_error *err)
{
        return validate_object(&event_kind, event, err);
}

int xp_event_to_json(const struct xp_event *event, json_t **ret)
{
        return encode_object(&event_kind, event, ret);
}

void xp_event_free(struct xp_event *event)
{
        if (!event)
                return;
        xp_schema_done(&xp_event_schema, event);
        free(event);
}

int xp_lease_from_json(const json_t *json,
                       const struct xp_decode_source *source,
                       unsigned flags,
                       struct xp_lease **ret,
                       struct xp_error *err)
{
        return decode_object(&lease_kind, json, source, flags, (void **)ret, err);
}

int xp_lease_validate(const struct xp_lease *lease, struct xp_error *err)
{
        return validate_object(&lease_kind, lease, err);
}

int xp_lease_to_json(const struct xp_lease *lease, json_t **ret)
{
        return encode_object(&lease_kind, lease, ret);
}

void xp_lease_free(struct xp_lease *lease)
{
        if (!lease)
                return;
        xp_schema_done(&xp_lease_schema, lease);
        free(lease);
}
