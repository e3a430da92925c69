/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Secret (v1), a document kind (xpool/doc.h): data (base64), stringData merged into data when
 * written, the type's required keys checked as Kubernetes' ValidateSecret, 1 MiB in all,
 * immutable once `immutable` is set, and a type that never changes.
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

/* What a write sends as stringData lands in data, base64-encoded, as the API server converts. */
static int merge_string_data(json_t *body)
{
        json_t *strings = json_object_get(body, "stringData"), *data;
        const char *key;
        json_t *value;

        if (!json_is_object(strings) || json_object_size(strings) == 0)
                return json_object_del(body, "stringData"), 0;
        data = json_object_get(body, "data");
        if (!json_is_object(data)) {
                data = json_object();
                if (!data || json_object_set_new(body, "data", data) < 0)
                        return -ENOMEM;
        }
        json_object_foreach(strings, key, value)
        {
                const char *text = json_string_value(value);
                char *encoded = NULL;

                if (xp_base64_encode(text ? text : "", text ? strlen(text) : 0, &encoded) < 0 ||
                    json_object_set_new(data, key, json_string(encoded)) < 0) {
                        free(encoded);
                        return -ENOMEM;
                }
                free(encoded);
        }
        return json_object_del(body, "stringData"), 0;
}

static int secret_defaults(struct xp_doc *doc)
{
        const char *type = xp_json_str_at(doc->body, "type", "");
        int r = merge_string_data(doc->body);

        if (r >= 0 && !type[0])
                r = xp_json_set_str_at(doc->body, "type", "Opaque");
        return r;
}

static int required_key(struct xp_decode_ctx *ctx, const json_t *data, const char *key)
{
        if (json_object_get(data, key))
                return 0;
        return xp_fail_key(ctx, -EINVAL, "data", key, "Required value");
}

/* The keys and annotations each built-in type requires (Kubernetes' ValidateSecret). */
static int check_type(struct xp_decode_ctx *ctx, const struct xp_doc *doc, const char *type)
{
        const json_t *data = xp_json_object_at(doc->body, "data");

        if (strcmp(type, "kubernetes.io/service-account-token") == 0 &&
            !xp_strmap_get(&doc->metadata.annotations, "kubernetes.io/service-account.name"))
                return xp_fail_key(ctx,
                                   -EINVAL,
                                   "metadata.annotations",
                                   "kubernetes.io/service-account.name",
                                   "Required value");
        if (strcmp(type, "kubernetes.io/dockercfg") == 0)
                return required_key(ctx, data, ".dockercfg");
        if (strcmp(type, "kubernetes.io/dockerconfigjson") == 0)
                return required_key(ctx, data, ".dockerconfigjson");
        if (strcmp(type, "kubernetes.io/basic-auth") == 0 && !json_object_get(data, "username") &&
            !json_object_get(data, "password"))
                return required_key(ctx, data, "username");
        if (strcmp(type, "kubernetes.io/ssh-auth") == 0)
                return required_key(ctx, data, "ssh-privatekey");
        if (strcmp(type, "kubernetes.io/tls") == 0) {
                int r = required_key(ctx, data, "tls.key");

                return r < 0 ? r : required_key(ctx, data, "tls.crt");
        }
        return 0;
}

/* A dockerconfigjson value holds JSON, as the kubelet reads it. */
static int check_docker_config(struct xp_decode_ctx *ctx, const struct xp_doc *doc)
{
        /* the key holds a dot, which a dotted path cannot name */
        const char *text = json_string_value(
            json_object_get(xp_json_object_at(doc->body, "data"), ".dockerconfigjson"));
        _cleanup_free_ char *bytes = NULL;
        size_t len = 0;
        json_t *config;

        if (!text || xp_base64_decode(text, strlen(text), &bytes, &len) < 0)
                return 0; /* the base64 check reports it */
        config = json_loadb(bytes, len, 0, NULL);
        if (json_is_object(config)) {
                json_decref(config);
                return 0;
        }
        json_decref(config);
        return xp_fail_key(ctx,
                           -EINVAL,
                           "data",
                           ".dockerconfigjson",
                           "Invalid value: \"<secret contents redacted>\": not a JSON object");
}

static int
secret_update(struct xp_decode_ctx *ctx, const struct xp_doc *doc, const struct xp_doc *old)
{
        static const char *const immutable_fields[] = {"data", NULL};
        const char *type = xp_json_str_at(doc->body, "type", "");
        const char *old_type = xp_json_str_at(old->body, "type", "");
        char q[XP_QUOTE_MAX];

        if (strcmp(type, old_type) != 0)
                return xp_fail_field(ctx,
                                     -EINVAL,
                                     "type",
                                     "Invalid value: %s: field is immutable",
                                     xp_quote(type, q));
        return xp_config_check_immutable(ctx, doc, old, immutable_fields);
}

static int
secret_validate(struct xp_decode_ctx *ctx, const struct xp_doc *doc, const struct xp_doc *old)
{
        const json_t *data = xp_json_object_at(doc->body, "data");
        const char *type = xp_json_str_at(doc->body, "type", "");
        size_t size = 0;
        int r;

        if (old)
                return secret_update(ctx, doc, old);
        r = xp_config_check_keys(ctx, data, "data");
        if (r >= 0)
                r = xp_config_check_keys(
                    ctx, xp_json_object_at(doc->body, "stringData"), "stringData");
        if (r >= 0)
                r = xp_config_binary_size(ctx, data, "data", &size);
        if (r >= 0 && size > XP_CONFIG_SIZE_MAX)
                r = xp_fail_field(ctx,
                                  -EINVAL,
                                  "data",
                                  "Too long: may not be more than %d bytes",
                                  XP_CONFIG_SIZE_MAX);
        if (r >= 0)
                r = check_type(ctx, doc, type);
        if (r >= 0 && strcmp(type, "kubernetes.io/dockerconfigjson") == 0)
                r = check_docker_config(ctx, doc);
        return r;
}

/* ---- kubectl get secrets: NAME TYPE DATA AGE, never a value --------------------------------- */

static const struct table_column secret_columns[] = {
    {.name = "Name", .type = "string", .format = "name", .description = "Name of the object."},
    {.name = "Type", .type = "string", .description = "The type of the secret."},
    {.name = "Data", .type = "string", .description = "The number of keys in data."},
    {.name = "Age", .type = "string", .description = "Time since the object was created."},
};

static int secret_row(const json_t *object, time_t now, json_t *cells, json_t *row)
{
        int r;

        (void)row;
        r = table_cell_str(cells, table_str0(object, "metadata.name"));
        if (r >= 0)
                r = table_cell_str(cells, table_str0(object, "type"));
        if (r >= 0)
                r = table_cell_int(cells,
                                   (int64_t)json_object_size(xp_json_object_at(object, "data")));
        if (r >= 0)
                r = table_cell_age(cells, object, "metadata.creationTimestamp", now);
        return r;
}

static const struct xp_table_kind secret_table = {
    .kind = "Secret",
    .columns = secret_columns,
    .n_columns = XP_ELEMENTSOF(secret_columns),
    .row = secret_row,
};

/* core/v1 Secret's generated.proto */
MESSAGE(secret_pb,
        "core/v1 Secret",
        MSG(1, "metadata", xp_pb_object_meta),
        BMAP(2, "data"),
        STR(3, "type"),
        SMAP(4, "stringData"),
        BOOL_P(5, "immutable"));

static const char *const secret_short_names[] = {NULL};

XP_DOC_KIND_DECODER(xp_kind_secret)

const struct xp_kind xp_kind_secret = {
    .kind = "Secret",
    .list_kind = "SecretList",
    .group = "",
    .version = "v1",
    .api_version = "v1",
    .plural = "secrets",
    .singular = "secret",
    .short_names = secret_short_names,
    .namespaced = true,
    XP_DOC_KIND_OPS(xp_kind_secret),
    .doc_defaults = secret_defaults,
    .doc_validate = secret_validate,
    .table = &secret_table,
    .protobuf = &secret_pb,
};
