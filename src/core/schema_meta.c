/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>

#include "schema.h"

static const struct xp_field object_meta_fields[] = {
    XP_FIELD("name", XP_FT_STRING, struct xp_object_meta, name, .check = xp_check_subdomain_field),
    XP_FIELD("generateName", XP_FT_STRING, struct xp_object_meta, generate_name),
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
    XP_FIELD("finalizers", XP_FT_STRING_LIST, struct xp_object_meta, finalizers),
};

static int validate_object_meta(struct xp_decode_ctx *ctx, const void *object)
{
        const struct xp_object_meta *meta = object;
        int r;

        if (meta->name || meta->generate_name)
                return 0;
        xp_path_push_field(&ctx->path, "name");
        r = xp_decode_fail(
            ctx, -EINVAL, NULL, false, "required value: name or generateName is required");
        xp_path_pop(&ctx->path);
        return r;
}

const struct xp_schema xp_object_meta_schema = XP_SCHEMA(
    struct xp_object_meta, "ObjectMeta", object_meta_fields, .validate = validate_object_meta);
