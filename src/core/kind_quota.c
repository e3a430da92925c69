/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ResourceQuota and LimitRange (v1), document kinds (xpool/doc.h). What they hold is enforced
 * when a pod is created (src/registry/quota.c, limitrange.c); here are their shapes, checks and
 * kubectl's columns.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kind_quota.h"
#include "protobuf_internal.h"
#include "schema.h"
#include "table_internal.h"
#include "xpool/doc.h"
#include "xpool/macro.h"
#include "xpool/quantity.h"
#include "xpool/resource.h"

/* Every quantity of a map is not negative, and every name is a resource name (quota: or a
 * name the quota system counts, such as configmaps). */
static int
check_amounts(struct xp_decode_ctx *ctx, const json_t *map, const char *field, bool quota)
{
        const char *key;
        json_t *value;

        json_object_foreach((json_t *)map, key, value)
        {
                struct xp_quantity q;
                struct xp_error cause = {0};
                struct xp_ge_msg m;
                const char *name = strncmp(key, "requests.", 9) == 0 ? key + 9
                                   : strncmp(key, "limits.", 7) == 0 ? key + 7
                                   : strncmp(key, "count/", 6) == 0  ? NULL
                                                                     : key;

                if (quota && xp_quota_standard_resource(key))
                        name = NULL;
                if (name && xp_resource_name_check(name, &cause) < 0)
                        return xp_fail_key(
                            ctx, -EINVAL, field, key, "Invalid value: \"%s\": %s", key, cause.msg);
                if (json_is_string(value) &&
                    xp_quantity_parse(json_string_value(value), &q, NULL) >= 0 &&
                    xp_quantity_sign(&q) < 0)
                        return xp_fail_key(ctx,
                                           -EINVAL,
                                           field,
                                           key,
                                           "%s",
                                           xp_ge_msg_quoted(&m, json_string_value(value), 0));
        }
        return 0;
}

/* Whether every scope of a is in b (spec.scopes compared as sets, as Kubernetes does). */
static bool scopes_within(const json_t *a, const json_t *b)
{
        const json_t *scope;
        size_t i;

        json_array_foreach(a, i, scope)
        {
                if (!xp_json_has_string(b, json_string_value(scope)))
                        return false;
        }
        return true;
}

/* ValidateResourceQuotaUpdate: spec.scopes may not change, in kube-apiserver's words (the value
 * as Go's %#v prints it). */
static int check_scopes_kept(struct xp_decode_ctx *ctx, const json_t *now, const json_t *before)
{
        char value[1024];
        size_t len, i;
        const json_t *scope;

        if (scopes_within(now, before) && scopes_within(before, now))
                return 0;
        len = (size_t)snprintf(value, sizeof value, "[]core.ResourceQuotaScope");
        if (!json_array_size(now))
                len += (size_t)snprintf(value + len, sizeof value - len, "(nil)");
        json_array_foreach(now, i, scope)
        {
                if (len < sizeof value)
                        len += (size_t)snprintf(value + len,
                                                sizeof value - len,
                                                "%s\"%s\"",
                                                i ? ", " : "{",
                                                json_string_value(scope) ?: "");
        }
        if (json_array_size(now) && len < sizeof value)
                snprintf(value + len, sizeof value - len, "}");
        return xp_fail_field(
            ctx, -EINVAL, "spec.scopes", "Invalid value: %s: field is immutable", value);
}

/* A create's and an update's spec alike (ValidateResourceQuotaSpec), and on an update scopes
 * that stay as they were. */
static int
quota_validate(struct xp_decode_ctx *ctx, const struct xp_doc *doc, const struct xp_doc *old)
{
        int r;

        r = check_amounts(ctx, xp_json_object_at(doc->body, "spec.hard"), "spec.hard", true);
        if (r >= 0)
                r = xp_quota_scopes_validate(ctx, json_object_get(doc->body, "spec"));
        if (r >= 0 && old)
                r = check_scopes_kept(ctx,
                                      xp_json_at(doc->body, "spec.scopes"),
                                      xp_json_at(old->body, "spec.scopes"));
        return r;
}

static int
limitrange_validate(struct xp_decode_ctx *ctx, const struct xp_doc *doc, const struct xp_doc *old)
{
        static const char *const maps[] = {"max", "min", "default", "defaultRequest", NULL};
        const json_t *item;
        size_t i;

        if (old)
                return 0;
        json_array_foreach(xp_json_at(doc->body, "spec.limits"), i, item)
        {
                const char *type = xp_json_str_at(item, "type", "");
                char field[64];

                if (strcmp(type, "Container") != 0 && strcmp(type, "Pod") != 0 &&
                    strcmp(type, "PersistentVolumeClaim") != 0) {
                        snprintf(field, sizeof(field), "spec.limits[%zu].type", i);
                        return xp_fail_field(
                            ctx,
                            -EINVAL,
                            field,
                            "Unsupported value: \"%s\": supported values: \"Container\", \"PersistentVolumeClaim\", \"Pod\"",
                            type);
                }
                for (const char *const *m = maps; *m; m++) {
                        int r;

                        snprintf(field, sizeof(field), "spec.limits[%zu].%s", i, *m);
                        r = check_amounts(ctx, xp_json_object_at(item, *m), field, false);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

/*
 * A new quota's status: status.hard as the spec asks and every used amount 0, as the quota
 * controller of kube-controller-manager writes it first, so that `kubectl describe quota` shows
 * its counters from the start; the status controller (src/controller/quotastatus.c) counts
 * them next.
 */
static int quota_created(void *object)
{
        struct xp_doc *doc = object;
        const json_t *hard = xp_json_object_at(doc->body, "spec.hard");
        json_t *used = json_object(), *status;
        const char *name;
        json_t *value;

        if (!hard) /* nothing to count: the zero status */
                return 0;
        if (!used)
                return -ENOMEM;
        json_object_foreach((json_t *)hard, name, value)
        {
                (void)value;
                if (json_object_set_new(used, name, json_string("0")) < 0) {
                        json_decref(used);
                        return -ENOMEM;
                }
        }
        status = json_pack("{s:O, s:o}", "hard", hard, "used", used);
        if (!status || json_object_set_new(doc->body, "status", status) < 0)
                return -ENOMEM;
        return 0;
}

/* ---- kubectl get quota: NAME AGE REQUEST LIMIT; limits: NAME CREATED AT ------------------- */

static const struct table_column quota_columns[] = {
    {.name = "Name", .type = "string", .format = "name", .description = "Name of the object."},
    {.name = "Age", .type = "string", .description = "Time since the object was created."},
    {.name = "Request", .type = "string", .description = "Used and hard amounts of requests."},
    {.name = "Limit", .type = "string", .description = "Used and hard amounts of limits."},
};

/* A resource's used amount; its name has dots, so no dotted path names it. */
static const char *used_of(const json_t *used, const char *name)
{
        const char *v = json_string_value(json_object_get(used, name));

        return v ? v : "0";
}

/* "requests.nvidia.com/gpu: 1/2, pods: 1/10" for the limits.* names or the others. */
static int quota_cell(json_t *cells, const json_t *object, bool limits)
{
        const json_t *hard = xp_json_object_at(object, "status.hard");
        const json_t *used = xp_json_object_at(object, "status.used");
        struct xp_resource_list sorted = {0};
        char *text = NULL;
        size_t len = 0;
        const char *key;
        json_t *value;
        FILE *f;
        int r;

        /* before the quota controller has written status, what the spec asks */
        if (!hard)
                hard = xp_json_object_at(object, "spec.hard");
        json_object_foreach((json_t *)hard, key, value)
        {
                struct xp_quantity q;

                if ((strncmp(key, "limits.", 7) == 0) == limits && json_is_string(value) &&
                    xp_quantity_parse(json_string_value(value), &q, NULL) >= 0 &&
                    xp_resource_list_set(&sorted, key, &q) < 0)
                        goto oom;
        }
        f = open_memstream(&text, &len);
        if (!f)
                goto oom;
        for (size_t i = 0; i < sorted.n; i++) {
                char h[XP_QUANTITY_STRING_MAX];

                fprintf(f,
                        "%s%s: %s/%s",
                        i ? ", " : "",
                        sorted.items[i].name,
                        used_of(used, sorted.items[i].name),
                        xp_quantity_format(&sorted.items[i].quantity, h));
        }
        if (fclose(f) != 0)
                goto oom;
        r = table_cell_str(cells, text);
        free(text);
        xp_resource_list_done(&sorted);
        return r;
oom:
        free(text);
        xp_resource_list_done(&sorted);
        return -ENOMEM;
}

static int quota_row(const json_t *object, time_t now, json_t *cells, json_t *row)
{
        int r;

        (void)row;
        r = table_cell_str(cells, table_str0(object, "metadata.name"));
        if (r >= 0)
                r = table_cell_age(cells, object, "metadata.creationTimestamp", now);
        if (r >= 0)
                r = quota_cell(cells, object, false);
        if (r >= 0)
                r = quota_cell(cells, object, true);
        return r;
}

static const struct xp_table_kind quota_table = {
    .kind = "ResourceQuota",
    .columns = quota_columns,
    .n_columns = XP_ELEMENTSOF(quota_columns),
    .row = quota_row,
};

static const struct table_column limitrange_columns[] = {
    {.name = "Name", .type = "string", .format = "name", .description = "Name of the object."},
    {.name = "Created At", .type = "date", .description = "When the object was created."},
};

static int limitrange_row(const json_t *object, time_t now, json_t *cells, json_t *row)
{
        int r;

        (void)row;
        (void)now;
        r = table_cell_str(cells, table_str0(object, "metadata.name"));
        if (r >= 0)
                r = table_cell_str(cells, table_str0(object, "metadata.creationTimestamp"));
        return r;
}

static const struct xp_table_kind limitrange_table = {
    .kind = "LimitRange",
    .columns = limitrange_columns,
    .n_columns = XP_ELEMENTSOF(limitrange_columns),
    .row = limitrange_row,
};

/* ---- generated.proto ------------------------------------------------------------------------ */

MESSAGE(scoped_requirement_pb,
        "core/v1 ScopedResourceSelectorRequirement",
        STR(1, "scopeName"),
        STR(2, "operator"),
        STRS(3, "values"));
MESSAGE(scope_selector_pb,
        "core/v1 ScopeSelector",
        MSGS(1, "matchExpressions", scoped_requirement_pb));
MESSAGE(quota_spec_pb,
        "core/v1 ResourceQuotaSpec",
        QMAP(1, "hard"),
        STRS(2, "scopes"),
        MSG(3, "scopeSelector", scope_selector_pb));
MESSAGE(quota_status_pb, "core/v1 ResourceQuotaStatus", QMAP(1, "hard"), QMAP(2, "used"));
MESSAGE(quota_pb,
        "core/v1 ResourceQuota",
        MSG(1, "metadata", xp_pb_object_meta),
        MSG(2, "spec", quota_spec_pb),
        MSG(3, "status", quota_status_pb));

static const char *const quota_short_names[] = {"quota", NULL};
static const char *const limitrange_short_names[] = {"limits", NULL};

XP_DOC_KIND_DECODER(xp_kind_resourcequota)

const struct xp_kind xp_kind_resourcequota = {
    .kind = "ResourceQuota",
    .list_kind = "ResourceQuotaList",
    .group = "",
    .version = "v1",
    .api_version = "v1",
    .plural = "resourcequotas",
    .singular = "resourcequota",
    .short_names = quota_short_names,
    .namespaced = true,
    XP_DOC_KIND_OPS(xp_kind_resourcequota),
    .set_defaults = quota_created,
    .doc_validate = quota_validate,
    .table = &quota_table,
    .status_subresource = true,
    .protobuf = &quota_pb,
};

XP_DOC_KIND_DECODER(xp_kind_limitrange)

const struct xp_kind xp_kind_limitrange = {
    .kind = "LimitRange",
    .list_kind = "LimitRangeList",
    .group = "",
    .version = "v1",
    .api_version = "v1",
    .plural = "limitranges",
    .singular = "limitrange",
    .short_names = limitrange_short_names,
    .namespaced = true,
    XP_DOC_KIND_OPS(xp_kind_limitrange),
    .doc_validate = limitrange_validate,
    .table = &limitrange_table,
};
