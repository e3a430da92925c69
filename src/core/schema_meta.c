/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "schema.h"
#include "xpool/names.h"
#include "xpool/strutil.h"

/* "" is no name at all, which validate_object_meta() reports. */
static int check_name(struct xp_decode_ctx *ctx, const void *value)
{
        return **(char *const *)value ? xp_check_subdomain_field(ctx, value) : 0;
}

/* The server appends random characters, so a trailing '-' is allowed: check "prefix-" as "prefixa".
 */
static int check_generate_name(struct xp_decode_ctx *ctx, const void *value)
{
        const char *prefix = *(char *const *)value;
        size_t len = strlen(prefix);
        struct xp_error cause = {0};
        _cleanup_free_ char *masked = strdup(prefix);

        if (!masked)
                return -ENOMEM;
        if (len == 0)
                return 0;
        if (masked[len - 1] == '-')
                masked[len - 1] = 'a';
        if (xp_check_dns1123_subdomain(masked, &cause) < 0) {
                char q[XP_QUOTE_MAX];

                return xp_decode_fail(
                    ctx,
                    -EINVAL,
                    NULL,
                    false,
                    "Invalid value: %s: a name prefix must be a lowercase RFC 1123 subdomain, optionally ending in '-' (e.g. 'trainer-')",
                    xp_quote(prefix, q));
        }
        return 0;
}

/* Kubernetes' own finalizers, the only ones allowed without a domain. */
static const char *const standard_finalizers[] = {"kubernetes", "orphan", "foregroundDeletion"};

int xp_check_finalizers(struct xp_decode_ctx *ctx, const void *value)
{
        const struct xp_list_raw *list = value;
        char **names = list->items;

        for (size_t i = 0; i < list->n; i++) {
                struct xp_error cause = {0};
                bool standard = false;
                int r = 0;

                for (size_t j = 0; j < XP_ELEMENTSOF(standard_finalizers); j++)
                        standard = standard || strcmp(names[i], standard_finalizers[j]) == 0;
                xp_path_push_index(&ctx->path, i);
                if (xp_check_qualified_name(names[i], &cause) < 0)
                        r = xp_decode_fail_error(ctx, &cause, NULL, false);
                else if (!standard && !strchr(names[i], '/')) {
                        char q[XP_QUOTE_MAX];

                        r = xp_decode_fail(
                            ctx,
                            -EINVAL,
                            NULL,
                            false,
                            "Invalid value: %s: a finalizer name needs a domain, e.g. \"example.com/cleanup\"",
                            xp_quote(names[i], q));
                }
                xp_path_pop(&ctx->path);
                if (r < 0)
                        return r;
        }
        return 0;
}

static const struct xp_field object_meta_fields[] = {
    XP_FIELD("name", XP_FT_STRING, struct xp_object_meta, name, .check = check_name),
    XP_FIELD("generateName",
             XP_FT_STRING,
             struct xp_object_meta,
             generate_name,
             .check = check_generate_name),
    XP_FIELD(
        "namespace", XP_FT_STRING, struct xp_object_meta, namespace, .check = xp_check_label_field),
    XP_FIELD("uid", XP_FT_STRING, struct xp_object_meta, uid),
    XP_FIELD("resourceVersion", XP_FT_STRING, struct xp_object_meta, resource_version),
    XP_FIELD("generation", XP_FT_INT64, struct xp_object_meta, generation),
    XP_FIELD("creationTimestamp", XP_FT_TIME, struct xp_object_meta, creation_timestamp),
    XP_FIELD("deletionTimestamp", XP_FT_TIME, struct xp_object_meta, deletion_timestamp),
    XP_FIELD("deletionGracePeriodSeconds",
             XP_FT_OPT_INT64,
             struct xp_object_meta,
             deletion_grace_period_seconds),
    XP_FIELD(
        "labels", XP_FT_STRING_MAP, struct xp_object_meta, labels, .check = xp_check_label_map),
    XP_FIELD("annotations",
             XP_FT_STRING_MAP,
             struct xp_object_meta,
             annotations,
             .check = xp_check_annotation_map),
    XP_FIELD("finalizers",
             XP_FT_STRING_LIST,
             struct xp_object_meta,
             finalizers,
             .check = xp_check_finalizers),
};

static int validate_object_meta(struct xp_decode_ctx *ctx, const void *object)
{
        const struct xp_object_meta *meta = object;
        int r;

        if ((meta->name && *meta->name) || (meta->generate_name && *meta->generate_name))
                return 0;
        xp_path_push_field(&ctx->path, "name");
        r = xp_decode_fail(
            ctx, -EINVAL, NULL, false, "Required value: name or generateName is required");
        xp_path_pop(&ctx->path);
        return r;
}

const struct xp_schema xp_object_meta_schema = XP_SCHEMA(
    struct xp_object_meta, "ObjectMeta", object_meta_fields, .validate = validate_object_meta);
