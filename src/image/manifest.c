/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Manifests and indexes as registries serve them: Docker's image manifest v2 schema 2 and
 * manifest list, the OCI image manifest and index. Pure, bounded, fuzzed
 * (tests/fuzz/fuzz_image_manifest.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "image_internal.h"

static const char *const layer_types[] = {
    "application/vnd.docker.image.rootfs.diff.tar.gzip",
    "application/vnd.docker.image.rootfs.foreign.diff.tar.gzip",
    XP_MT_OCI_LAYER_TAR,
    "application/vnd.oci.image.layer.v1.tar+gzip",
    "application/vnd.oci.image.layer.v1.tar+zstd",
    "application/vnd.oci.image.layer.nondistributable.v1.tar",
    "application/vnd.oci.image.layer.nondistributable.v1.tar+gzip",
    "application/vnd.oci.image.layer.nondistributable.v1.tar+zstd",
};

static bool one_of(const char *s, const char *const *list, size_t n)
{
        for (size_t i = 0; i < n; i++)
                if (strcmp(s, list[i]) == 0)
                        return true;
        return false;
}

bool xp_image_media_is_manifest(const char *t)
{
        static const char *const types[] = {
            XP_MT_DOCKER_MANIFEST, XP_MT_DOCKER_LIST, XP_MT_OCI_MANIFEST, XP_MT_OCI_INDEX};

        return t && one_of(t, types, XP_ELEMENTSOF(types));
}

static void desc_done(struct xp_image_desc *d)
{
        free(d->media_type);
        free(d->digest);
        free(d->os);
        free(d->architecture);
        free(d->variant);
        *d = (struct xp_image_desc){0};
}

void xp_image_manifest_done(struct xp_image_manifest *m)
{
        if (!m)
                return;
        free(m->media_type);
        desc_done(&m->config);
        for (size_t i = 0; i < m->n_layers; i++)
                desc_done(&m->layers[i]);
        free(m->layers);
        for (size_t i = 0; i < m->n_manifests; i++)
                desc_done(&m->manifests[i]);
        free(m->manifests);
        *m = (struct xp_image_manifest){0};
}

/* An optional string member: -EBADMSG when present and not a string. */
static int
opt_string(const json_t *obj, const char *key, const char *where, char **ret, struct xp_error *err)
{
        const json_t *v = json_object_get(obj, key);

        *ret = NULL;
        if (!v || json_is_null(v))
                return 0;
        if (!json_is_string(v))
                return xp_errorf(err, -EBADMSG, "%s.%s: must be a string", where, key);
        *ret = strdup(json_string_value(v));
        return *ret ? 0 : -ENOMEM;
}

static int
desc_parse(const json_t *j, const char *where, struct xp_image_desc *d, struct xp_error *err)
{
        const json_t *size = json_object_get(j, "size"), *platform;
        int r;

        if (!json_is_object(j))
                return xp_errorf(err, -EBADMSG, "%s: must be an object", where);
        if ((r = opt_string(j, "mediaType", where, &d->media_type, err)) < 0 ||
            (r = opt_string(j, "digest", where, &d->digest, err)) < 0)
                return r;
        if (!d->digest || !xp_image_digest_ok(d->digest))
                return xp_errorf(
                    err, -EBADMSG, "%s.digest: must be sha256:<64 lower-case hex digits>", where);
        if (!json_is_integer(size) || json_integer_value(size) < 0)
                return xp_errorf(err, -EBADMSG, "%s.size: must be a non-negative integer", where);
        d->size = json_integer_value(size);
        platform = json_object_get(j, "platform");
        if (!platform || json_is_null(platform))
                return 0;
        if (!json_is_object(platform))
                return xp_errorf(err, -EBADMSG, "%s.platform: must be an object", where);
        if ((r = opt_string(platform, "os", where, &d->os, err)) < 0 ||
            (r = opt_string(platform, "architecture", where, &d->architecture, err)) < 0 ||
            (r = opt_string(platform, "variant", where, &d->variant, err)) < 0)
                return r;
        return 0;
}

static int descs_parse(const json_t *arr,
                       const char *name,
                       size_t max,
                       struct xp_image_desc **ret,
                       size_t *ret_n,
                       struct xp_error *err)
{
        size_t n = json_array_size(arr);

        if (!json_is_array(arr))
                return xp_errorf(err, -EBADMSG, "%s: must be an array", name);
        if (n > max)
                return xp_errorf(err, -EBADMSG, "%s: more than %zu entries", name, max);
        *ret = calloc(n ? n : 1, sizeof(**ret));
        if (!*ret)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                char where[64];
                int r;

                snprintf(where, sizeof(where), "%s[%zu]", name, i);
                *ret_n = i + 1;
                r = desc_parse(json_array_get(arr, i), where, &(*ret)[i], err);
                if (r < 0)
                        return r;
        }
        *ret_n = n;
        return 0;
}

static int manifest_body(const json_t *root, struct xp_image_manifest *m, struct xp_error *err)
{
        static const char *const config_types[] = {XP_MT_DOCKER_CONFIG, XP_MT_OCI_CONFIG};
        int r;

        r = desc_parse(json_object_get(root, "config"), "config", &m->config, err);
        if (r < 0)
                return r;
        if (m->config.media_type && !one_of(m->config.media_type, config_types, 2))
                return xp_errorf(
                    err,
                    -EBADMSG,
                    "config.mediaType: %s is not a container image config (an artifact?)",
                    m->config.media_type);
        if (m->config.size > (int64_t)XP_IMAGE_CONFIG_MAX)
                return xp_errorf(
                    err, -EBADMSG, "config.size: larger than %u bytes", XP_IMAGE_CONFIG_MAX);
        r = descs_parse(json_object_get(root, "layers"),
                        "layers",
                        XP_IMAGE_LAYERS_MAX,
                        &m->layers,
                        &m->n_layers,
                        err);
        if (r < 0)
                return r;
        for (size_t i = 0; i < m->n_layers; i++) {
                const char *t = m->layers[i].media_type;

                if (!t || !one_of(t, layer_types, XP_ELEMENTSOF(layer_types)))
                        return xp_errorf(
                            err,
                            -EBADMSG,
                            "layers[%zu].mediaType: %s is not a filesystem layer (tar, tar+gzip, tar+zstd)",
                            i,
                            t ? t : "(none)");
        }
        return 0;
}

static int index_body(const json_t *root, struct xp_image_manifest *m, struct xp_error *err)
{
        int r;

        r = descs_parse(json_object_get(root, "manifests"),
                        "manifests",
                        XP_IMAGE_INDEX_MAX,
                        &m->manifests,
                        &m->n_manifests,
                        err);
        if (r < 0)
                return r;
        for (size_t i = 0; i < m->n_manifests; i++)
                if (m->manifests[i].size > (int64_t)XP_IMAGE_MANIFEST_MAX)
                        return xp_errorf(err,
                                         -EBADMSG,
                                         "manifests[%zu].size: larger than %u bytes",
                                         i,
                                         XP_IMAGE_MANIFEST_MAX);
        return 0;
}

/* The document's kind: its mediaType, else the served type, else its shape. */
static const char *kind_of(const json_t *root, const char *content_type)
{
        const char *t = json_string_value(json_object_get(root, "mediaType"));

        if (t)
                return t;
        if (xp_image_media_is_manifest(content_type))
                return content_type;
        if (json_object_get(root, "manifests"))
                return XP_MT_OCI_INDEX;
        if (json_object_get(root, "config") || json_object_get(root, "layers"))
                return XP_MT_OCI_MANIFEST;
        return NULL;
}

static int parse_root(const json_t *root,
                      const char *content_type,
                      struct xp_image_manifest *m,
                      struct xp_error *err)
{
        const json_t *version = json_object_get(root, "schemaVersion");
        const char *kind;

        if (!json_is_object(root))
                return xp_errorf(err, -EBADMSG, "not a JSON object");
        if (json_is_integer(version) && json_integer_value(version) == 1)
                return xp_errorf(
                    err,
                    -EBADMSG,
                    "a Docker image manifest of schema 1, which is deprecated and not supported: push the image again with a current client");
        if (!json_is_integer(version) || json_integer_value(version) != 2)
                return xp_errorf(err, -EBADMSG, "schemaVersion: must be 2");
        if (json_object_get(root, "mediaType") &&
            !json_is_string(json_object_get(root, "mediaType")))
                return xp_errorf(err, -EBADMSG, "mediaType: must be a string");
        kind = kind_of(root, content_type);
        if (!kind)
                return xp_errorf(
                    err, -EBADMSG, "neither a manifest (config, layers) nor an index (manifests)");
        if (!xp_image_media_is_manifest(kind))
                return xp_errorf(
                    err, -EBADMSG, "mediaType: %s is not an image manifest or index", kind);
        m->media_type = strdup(kind);
        if (!m->media_type)
                return -ENOMEM;
        m->index = strcmp(kind, XP_MT_OCI_INDEX) == 0 || strcmp(kind, XP_MT_DOCKER_LIST) == 0;
        return m->index ? index_body(root, m, err) : manifest_body(root, m, err);
}

int xp_image_manifest_parse(const char *data,
                            size_t size,
                            const char *content_type,
                            struct xp_image_manifest *ret,
                            struct xp_error *err)
{
        struct xp_image_manifest m = {0};
        json_t *root = NULL;
        int r;

        r = xp_image_json_load(data, size, XP_IMAGE_MANIFEST_MAX, &root, err);
        if (r < 0)
                return r;
        r = parse_root(root, content_type, &m, err);
        json_decref(root);
        if (r < 0) {
                xp_image_manifest_done(&m);
                return r;
        }
        *ret = m;
        return 0;
}
