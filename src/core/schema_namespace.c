/* SPDX-License-Identifier: Apache-2.0 */
/* Namespace (core v1): cluster-scoped, named by an RFC 1123 label. */
#include <errno.h>

#include "schema.h"
#include "xpool/names.h"
#include "xpool/strutil.h"

static const struct xp_enum_name namespace_phase_names[] = {
    {"Active", XP_NAMESPACE_ACTIVE},
    {"Terminating", XP_NAMESPACE_TERMINATING},
    {NULL, 0},
};

static const struct xp_field namespace_spec_fields[] = {
    XP_FIELD("finalizers",
             XP_FT_STRING_LIST,
             struct xp_namespace_spec,
             finalizers,
             .check = xp_check_finalizers),
};
static const struct xp_schema namespace_spec_schema =
    XP_SCHEMA(struct xp_namespace_spec, "NamespaceSpec", namespace_spec_fields);

static const struct xp_field namespace_status_fields[] = {
    XP_FIELD("phase",
             XP_FT_ENUM,
             struct xp_namespace_status,
             phase,
             .enum_names = namespace_phase_names),
};
static const char *const namespace_status_passthrough[] = {"conditions", NULL};
static const struct xp_schema namespace_status_schema =
    XP_SCHEMA(struct xp_namespace_status,
              "NamespaceStatus",
              namespace_status_fields,
              .passthrough = namespace_status_passthrough);

static const struct xp_field namespace_fields[] = {
    XP_FIELD("metadata",
             XP_FT_STRUCT,
             struct xp_namespace,
             metadata,
             .flags = XP_FIELD_REQUIRED | XP_FIELD_ALWAYS,
             .schema = &xp_object_meta_schema),
    XP_FIELD("spec", XP_FT_STRUCT, struct xp_namespace, spec, .schema = &namespace_spec_schema),
    XP_FIELD(
        "status", XP_FT_STRUCT, struct xp_namespace, status, .schema = &namespace_status_schema),
};

/* Kubernetes names a namespace with a label (it becomes part of DNS names), not a subdomain. */
static int validate_namespace(struct xp_decode_ctx *ctx, const void *object)
{
        const struct xp_object_meta *meta = &((const struct xp_namespace *)object)->metadata;
        char q[XP_QUOTE_MAX];
        int r = 0;

        xp_path_push_field(&ctx->path, "metadata");
        if (meta->namespace && *meta->namespace)
                r = xp_fail_field(
                    ctx,
                    -EINVAL,
                    "namespace",
                    "Invalid value: %s: a Namespace is cluster-scoped and has no namespace",
                    xp_quote(meta->namespace, q));
        if (r >= 0 && meta->name && *meta->name) {
                struct xp_error cause = {0};

                if (xp_check_dns1123_label(meta->name, &cause) < 0) {
                        xp_path_push_field(&ctx->path, "name");
                        r = xp_decode_fail_error(ctx, &cause, NULL, false);
                        xp_path_pop(&ctx->path);
                }
        }
        xp_path_pop(&ctx->path);
        return r;
}

const struct xp_schema xp_namespace_schema =
    XP_SCHEMA(struct xp_namespace, "Namespace", namespace_fields, .validate = validate_namespace);

const char *xp_namespace_phase_to_string(enum xp_namespace_phase phase)
{
        return xp_enum_to_string(namespace_phase_names, (int)phase);
}

int xp_namespace_phase_from_string(const char *s)
{
        return xp_enum_from_string(namespace_phase_names, s);
}
