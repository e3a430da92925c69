/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ConfigMap (v1), a document kind (xpool/doc.h): data (strings) and binaryData (base64), keys
 * checked as Kubernetes' IsConfigMapKey, 1 MiB in all, immutable once `immutable` is set.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kind_config.h"
#include "protobuf_internal.h"
#include "schema.h"
#include "table_internal.h"
#include "xpool/base64.h"
#include "xpool/doc.h"
#include "xpool/strutil.h"

#define IMMUTABLE_MESSAGE "Forbidden: field is immutable when `immutable` is set"

static bool config_key_char(char c)
{
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               c == '-' || c == '_' || c == '.';
}

/* Kubernetes' IsConfigMapKey, with its messages; NULL when key is fine. */
const char *xp_config_key_problem(const char *key)
{
        if (strlen(key) > XP_CONFIG_KEY_MAX)
                return "must be no more than 253 characters";
        if (!*key)
                return "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')";
        for (const char *p = key; *p; p++)
                if (!config_key_char(*p))
                        return "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')";
        if (strcmp(key, ".") == 0)
                return "must not be '.'";
        if (strcmp(key, "..") == 0)
                return "must not be '..'";
        if (strncmp(key, "..", 2) == 0)
                return "must not start with '..'";
        return NULL;
}

int xp_config_check_keys(struct xp_decode_ctx *ctx, const json_t *map, const char *field)
{
        const char *key;
        json_t *value;
        char q[XP_QUOTE_MAX];

        json_object_foreach((json_t *)map, key, value)
        {
                const char *problem = xp_config_key_problem(key);

                (void)value;
                if (problem)
                        return xp_fail_key(ctx,
                                           -EINVAL,
                                           field,
                                           key,
                                           "Invalid value: %s: %s",
                                           xp_quote(key, q),
                                           problem);
        }
        return 0;
}

int xp_config_binary_size(struct xp_decode_ctx *ctx,
                          const json_t *map,
                          const char *field,
                          size_t *size)
{
        const char *key;
        json_t *value;

        json_object_foreach((json_t *)map, key, value)
        {
                const char *text = json_string_value(value);
                char *bytes = NULL;
                size_t len = 0;
                int r = text ? xp_base64_decode(text, strlen(text), &bytes, &len) : -EINVAL;

                if (r == -ENOMEM)
                        return r;
                free(bytes);
                if (r < 0)
                        return xp_fail_key(
                            ctx, -EINVAL, field, key, "Invalid value: illegal base64 data");
                *size += len;
        }
        return 0;
}

size_t xp_config_string_size(const json_t *map)
{
        const char *key;
        json_t *value;
        size_t size = 0;

        json_object_foreach((json_t *)map, key, value) size += json_string_length(value);
        return size;
}

/* A key may be in data or in binaryData, not both. */
static int check_overlap(struct xp_decode_ctx *ctx, const json_t *data, const json_t *binary)
{
        const char *key;
        json_t *value;
        char q[XP_QUOTE_MAX];

        json_object_foreach((json_t *)data, key, value)
        {
                (void)value;
                if (json_object_get(binary, key))
                        return xp_fail_key(
                            ctx,
                            -EINVAL,
                            "data",
                            key,
                            "Invalid value: %s: duplicate of key present in binaryData",
                            xp_quote(key, q));
        }
        return 0;
}

int xp_config_check_immutable(struct xp_decode_ctx *ctx,
                              const struct xp_doc *doc,
                              const struct xp_doc *old,
                              const char *const *fields)
{
        if (!old || !xp_json_bool_at(old->body, "immutable", false))
                return 0;
        if (!xp_json_bool_at(doc->body, "immutable", false))
                return xp_fail_field(ctx, -EINVAL, "immutable", IMMUTABLE_MESSAGE);
        for (const char *const *f = fields; *f; f++) {
                const json_t *a = json_object_get(doc->body, *f);
                const json_t *b = json_object_get(old->body, *f);

                /* absent and empty are the same map, as Go's DeepEqual of two nil maps */
                if (json_object_size(a) == 0 && json_object_size(b) == 0)
                        continue;
                if (!json_equal((json_t *)a, (json_t *)b))
                        return xp_fail_field(ctx, -EINVAL, *f, IMMUTABLE_MESSAGE);
        }
        return 0;
}

static int
configmap_validate(struct xp_decode_ctx *ctx, const struct xp_doc *doc, const struct xp_doc *old)
{
        static const char *const immutable_fields[] = {"data", "binaryData", NULL};
        const json_t *data = xp_json_object_at(doc->body, "data");
        const json_t *binary = xp_json_object_at(doc->body, "binaryData");
        size_t size = xp_config_string_size(data);
        int r;

        if (old)
                return xp_config_check_immutable(ctx, doc, old, immutable_fields);
        r = xp_config_check_keys(ctx, data, "data");
        if (r >= 0)
                r = xp_config_check_keys(ctx, binary, "binaryData");
        if (r >= 0)
                r = check_overlap(ctx, data, binary);
        if (r >= 0)
                r = xp_config_binary_size(ctx, binary, "binaryData", &size);
        if (r >= 0 && size > XP_CONFIG_SIZE_MAX)
                r = xp_decode_fail(ctx,
                                   -EINVAL,
                                   NULL,
                                   false,
                                   "[]: Too long: may not be more than %d bytes",
                                   XP_CONFIG_SIZE_MAX);
        return r;
}

/* ---- kubectl get configmaps: NAME DATA AGE ------------------------------------------------- */

static const struct table_column configmap_columns[] = {
    {.name = "Name", .type = "string", .format = "name", .description = "Name of the object."},
    {.name = "Data", .type = "string", .description = "The number of keys in data and binaryData."},
    {.name = "Age", .type = "string", .description = "Time since the object was created."},
};

static int configmap_row(const json_t *object, time_t now, json_t *cells, json_t *row)
{
        size_t n = json_object_size(xp_json_object_at(object, "data")) +
                   json_object_size(xp_json_object_at(object, "binaryData"));
        int r;

        (void)row;
        r = table_cell_str(cells, table_str0(object, "metadata.name"));
        if (r >= 0)
                r = table_cell_int(cells, (int64_t)n);
        if (r >= 0)
                r = table_cell_age(cells, object, "metadata.creationTimestamp", now);
        return r;
}

static const struct xp_table_kind configmap_table = {
    .kind = "ConfigMap",
    .columns = configmap_columns,
    .n_columns = XP_ELEMENTSOF(configmap_columns),
    .row = configmap_row,
};

/* core/v1 ConfigMap's generated.proto */
MESSAGE(configmap_pb,
        "core/v1 ConfigMap",
        MSG(1, "metadata", xp_pb_object_meta),
        SMAP(2, "data"),
        BMAP(3, "binaryData"),
        BOOL_P(4, "immutable"));

static const char *const configmap_short_names[] = {"cm", NULL};

XP_DOC_KIND_DECODER(xp_kind_configmap)

const struct xp_kind xp_kind_configmap = {
    .kind = "ConfigMap",
    .list_kind = "ConfigMapList",
    .group = "",
    .version = "v1",
    .api_version = "v1",
    .plural = "configmaps",
    .singular = "configmap",
    .short_names = configmap_short_names,
    .namespaced = true,
    XP_DOC_KIND_OPS(xp_kind_configmap),
    .doc_validate = configmap_validate,
    .table = &configmap_table,
    .protobuf = &configmap_pb,
};
