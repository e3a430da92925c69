/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The two tarball formats: an OCI image layout (oci-layout, index.json, blobs/ALG/HEX; names in
 * the index's annotations) and a docker-archive (manifest.json: Config, RepoTags, Layers). Each
 * image goes through the checks of a pull: blobs against their digests, the config's platform,
 * every layer's diff_id.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "import.h"

#define NAMES_MAX 64

/* One image of the tarball. */
struct one {
        const char *top_digest, *manifest_digest;
        const char *top_data, *manifest_data;
        size_t top_size, manifest_size;
        const struct xp_image_manifest *m;
        char layer_files[XP_IMAGE_LAYERS_MAX][XP_IMPORT_NAME_MAX];
        bool check_blobs; /* the layers' files are named by their digests */
        const char *names[NAMES_MAX];
        char name_store[NAMES_MAX][XP_IMAGE_REF_MAX + 2];
        size_t n_names;
};

struct file_fill {
        int dir_fd;
        const char *flat;
        bool untrusted;
};

static int
fill_from_file(int fs_fd, struct xp_image_unpacked *ret, void *userdata, struct xp_error *err)
{
        struct file_fill *f = userdata;
        _cleanup_close_ int fd = openat(f->dir_fd, f->flat, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        int r;

        if (fd < 0)
                return xp_errorf(err,
                                 errno == ENOENT ? -EBADMSG : -errno,
                                 "the tarball has no layer %s",
                                 f->flat);
        r = xp_image_unpack(fd, fs_fd, f->untrusted, NULL, ret, err);
        return r < 0 ? xp_error_prefix(err, r, "layer %s", f->flat) : 0;
}

static int add_image(struct xp_import *im, struct xp_image *img)
{
        struct xp_image **grown = realloc(im->images, (im->n_images + 1) * sizeof(*grown));

        if (!grown) {
                xp_image_free(img);
                return -ENOMEM;
        }
        im->images = grown;
        im->images[im->n_images++] = img;
        return 0;
}

static int
import_one(struct xp_import *im, struct one *o, const char *config_flat, struct xp_error *err)
{
        _cleanup_free_ char *config = NULL;
        char **diff_ids = NULL, id[XP_IMAGE_DIGEST_BUFSIZE];
        struct xp_image_config cfg = {0};
        struct xp_image *img = NULL;
        size_t size = 0, n = 0;
        uint64_t total = 0;
        int r;

        r = xp_import_read(im->dir_fd, config_flat, XP_IMAGE_CONFIG_MAX, &config, &size, err);
        if (r >= 0 && (r = xp_sha256_digest(config, size, id)) >= 0 && o->check_blobs &&
            strcmp(id, o->m->config.digest) != 0)
                r = xp_errorf(err,
                              -EILSEQ,
                              "the image config does not match its digest: expected %s, got %s",
                              o->m->config.digest,
                              id);
        if (r >= 0 && (r = xp_image_config_parse(config, size, &cfg, &diff_ids, &n, err)) < 0)
                xp_error_prefix(err, r, "the image config %s", id);
        if (r >= 0)
                r = xp_image_platform_check(&cfg, &im->platform, err);
        if (r >= 0 && n != o->m->n_layers)
                r = xp_errorf(err,
                              -EBADMSG,
                              "the manifest has %zu layers and the config %zu diff_ids",
                              o->m->n_layers,
                              n);
        for (size_t i = 0; r >= 0 && i < n; i++) {
                struct file_fill f = {
                    .dir_fd = im->dir_fd, .flat = o->layer_files[i], .untrusted = im->o->untrusted};
                bool shared;
                uint64_t layer_size = 0;

                r = xp_store_layer_ensure(im->s,
                                          diff_ids[i],
                                          o->check_blobs ? o->m->layers[i].digest : NULL,
                                          im->o->untrusted,
                                          NULL,
                                          fill_from_file,
                                          &f,
                                          &shared,
                                          &layer_size,
                                          err);
                total += layer_size;
        }
        if (r >= 0 && o->top_data && o->top_data != o->manifest_data)
                r = xp_store_blob_put(im->s, o->top_digest, o->top_data, o->top_size, err);
        if (r >= 0 &&
            (r = xp_store_blob_put(
                 im->s, o->manifest_digest, o->manifest_data, o->manifest_size, err)) >= 0)
                r = xp_store_blob_put(im->s, id, config, size, err);
        if (r >= 0)
                r = xp_store_record(im->s,
                                    &(struct xp_store_record){.id = id,
                                                              .digest = o->top_digest,
                                                              .manifest = o->manifest_digest,
                                                              .names = o->names,
                                                              .n_names = o->n_names,
                                                              .diff_ids = diff_ids,
                                                              .n_layers = n,
                                                              .size = total,
                                                              .untrusted = im->o->untrusted},
                                    &img,
                                    err);
        if (r >= 0)
                r = add_image(im, img);
        xp_image_config_done(&cfg);
        xp_image_strv_free(diff_ids);
        return r;
}

/* A name of the tarball as a canonical reference (tag-only names take --name's repository). */
static int add_name(
    struct xp_import *im, struct one *o, const char *name, bool maybe_tag, struct xp_error *err)
{
        char *store = o->name_store[o->n_names];
        size_t store_size = sizeof(o->name_store[0]);
        struct xp_image_ref ref = {0};
        char text[XP_IMAGE_REF_MAX + 2];
        char *formatted;
        int r;

        if (o->n_names >= NAMES_MAX)
                return 0;
        if (maybe_tag && !strchr(name, ':') && !strchr(name, '/') && !strchr(name, '@')) {
                if (!im->o->name)
                        return xp_errorf(
                            err,
                            -EINVAL,
                            "the tarball names an image only by the tag \"%s\": give the repository with --name",
                            name);
                snprintf(text, sizeof(text), "%s:%s", im->o->name, name);
        } else {
                snprintf(text, sizeof(text), "%s", name);
        }
        r = xp_image_ref_parse(text, &ref, err);
        if (r < 0)
                return xp_error_prefix(err, r, "the tarball's name \"%s\"", name);
        formatted = xp_image_ref_format(&ref);
        xp_image_ref_done(&ref);
        if (!formatted)
                return -ENOMEM;
        snprintf(store, store_size, "%s", formatted);
        free(formatted);
        o->names[o->n_names++] = store;
        return 0;
}

static void blob_flat(const char *digest, char buf[static XP_IMPORT_NAME_MAX])
{
        snprintf(buf, XP_IMPORT_NAME_MAX, "blobs#sha256#%s", digest + 7);
}

/* A blob of the layout, checked against its digest. */
static int read_blob(struct xp_import *im,
                     const char *digest,
                     size_t max,
                     char **ret,
                     size_t *ret_size,
                     struct xp_error *err)
{
        char flat[XP_IMPORT_NAME_MAX];
        int r;

        blob_flat(digest, flat);
        r = xp_import_read(im->dir_fd, flat, max, ret, ret_size, err);
        if (r >= 0 && (r = xp_image_digest_check(*ret, *ret_size, digest, "the blob", err)) < 0) {
                free(*ret);
                *ret = NULL;
                xp_error_prefix(err, r, "%s", flat);
        }
        return r;
}

/* One entry of index.json: its manifest (through a nested index to the platform's). */
static int oci_entry(struct xp_import *im,
                     const struct xp_image_desc *d,
                     const json_t *annotations,
                     struct xp_error *err)
{
        _cleanup_free_ struct one *o = calloc(1, sizeof(*o));
        _cleanup_free_ char *top = NULL, *data = NULL, *config_flat = NULL;
        struct xp_image_manifest top_m = {0}, m = {0};
        const char *full =
            json_string_value(json_object_get(annotations, "io.containerd.image.name"));
        const char *ref =
            json_string_value(json_object_get(annotations, "org.opencontainers.image.ref.name"));
        size_t top_size = 0, size = 0, i = 0;
        int r;

        if (!o)
                return -ENOMEM;
        r = read_blob(im, d->digest, XP_IMAGE_MANIFEST_MAX, &top, &top_size, err);
        if (r >= 0 && (r = xp_image_manifest_parse(top, top_size, d->media_type, &top_m, err)) < 0)
                xp_error_prefix(err, r, "the manifest %s", d->digest);
        o->top_digest = o->manifest_digest = d->digest;
        if (r >= 0 && top_m.index &&
            (r = xp_image_platform_select(&top_m, &im->platform, &i, err)) >= 0) {
                o->manifest_digest = top_m.manifests[i].digest;
                r = read_blob(im, o->manifest_digest, XP_IMAGE_MANIFEST_MAX, &data, &size, err);
                if (r >= 0 &&
                    (r = xp_image_manifest_parse(
                         data, size, top_m.manifests[i].media_type, &m, err)) >= 0 &&
                    m.index)
                        r = xp_errorf(
                            err,
                            -EBADMSG,
                            "the manifest %s is an index again: nested indexes are not followed",
                            o->manifest_digest);
        }
        o->m = top_m.index ? &m : &top_m;
        o->top_data = top;
        o->top_size = top_size;
        o->manifest_data = top_m.index ? data : top;
        o->manifest_size = top_m.index ? size : top_size;
        o->check_blobs = true;
        for (size_t k = 0; r >= 0 && k < o->m->n_layers; k++)
                blob_flat(o->m->layers[k].digest, o->layer_files[k]);
        if (r >= 0 && (full || ref))
                r = add_name(im, o, full ? full : ref, !full, err);
        if (r >= 0 && !(config_flat = malloc(XP_IMPORT_NAME_MAX)))
                r = -ENOMEM;
        if (r >= 0) {
                blob_flat(o->m->config.digest, config_flat);
                r = import_one(im, o, config_flat, err);
        }
        xp_image_manifest_done(&top_m);
        xp_image_manifest_done(&m);
        return r;
}

int xp_import_oci(struct xp_import *im, struct xp_error *err)
{
        _cleanup_free_ char *text = NULL;
        struct xp_image_manifest index = {0};
        json_auto_t *root = NULL;
        size_t size = 0;
        int r;

        r = xp_import_read(im->dir_fd, "index.json", XP_IMAGE_MANIFEST_MAX, &text, &size, err);
        if (r < 0)
                return r;
        r = xp_image_manifest_parse(text, size, XP_MT_OCI_INDEX, &index, err);
        if (r >= 0 && !index.index)
                r = xp_errorf(err, -EBADMSG, "not an index");
        if (r < 0)
                return xp_error_prefix(err, r, "index.json");
        root = json_loadb(text, size, 0, NULL);
        for (size_t i = 0; r >= 0 && i < index.n_manifests; i++) {
                const json_t *entry = json_array_get(json_object_get(root, "manifests"), i);
                const struct xp_image_desc *d = &index.manifests[i];
                struct xp_image_config platform = {
                    .os = d->os, .architecture = d->architecture, .variant = d->variant};

                /* a layout of several platforms' manifests: this node's only */
                if (xp_image_platform_check(&platform, &im->platform, NULL) < 0)
                        continue;
                r = oci_entry(im, d, json_object_get(entry, "annotations"), err);
        }
        if (r >= 0 && im->n_images == 0)
                r = xp_errorf(
                    err, -ENOEXEC, "index.json: no image for this platform in the tarball");
        xp_image_manifest_done(&index);
        return r;
}

/* The manifest a docker-archive lacks: an OCI manifest of the uncompressed layers (whose
 * digests are their diff_ids, checked as they are unpacked). */
static int docker_manifest(const char *config,
                           size_t config_size,
                           const json_t *layers,
                           int dir_fd,
                           char **ret,
                           struct xp_error *err)
{
        char digest[XP_IMAGE_DIGEST_BUFSIZE], **diff_ids = NULL;
        struct xp_image_config cfg = {0};
        json_auto_t *m = NULL, *ls = json_array();
        size_t n = 0;
        int r;

        r = xp_image_config_parse(config, config_size, &cfg, &diff_ids, &n, err);
        xp_image_config_done(&cfg);
        if (r < 0)
                return xp_error_prefix(err, r, "the image config");
        if (n != json_array_size(layers)) {
                xp_image_strv_free(diff_ids);
                return xp_errorf(err,
                                 -EBADMSG,
                                 "manifest.json lists %zu layers and the config %zu diff_ids",
                                 json_array_size(layers),
                                 n);
        }
        for (size_t i = 0; ls && i < n; i++) {
                char flat[XP_IMPORT_NAME_MAX];
                struct stat st = {0};

                if (xp_import_flat_name(
                        json_string_value(json_array_get(layers, i)) ?: "", flat, NULL) >= 0)
                        (void)fstatat(dir_fd, flat, &st, 0);
                json_array_append_new(ls,
                                      json_pack("{s:s, s:s, s:I}",
                                                "mediaType",
                                                XP_MT_OCI_LAYER_TAR,
                                                "digest",
                                                diff_ids[i],
                                                "size",
                                                (json_int_t)st.st_size));
        }
        xp_image_strv_free(diff_ids);
        if ((r = xp_sha256_digest(config, config_size, digest)) < 0)
                return r;
        m = json_pack("{s:i, s:s, s:{s:s, s:s, s:I}, s:O}",
                      "schemaVersion",
                      2,
                      "mediaType",
                      XP_MT_OCI_MANIFEST,
                      "config",
                      "mediaType",
                      XP_MT_OCI_CONFIG,
                      "digest",
                      digest,
                      "size",
                      (json_int_t)config_size,
                      "layers",
                      ls);
        *ret = m ? json_dumps(m, JSON_COMPACT) : NULL;
        return *ret ? 0 : -ENOMEM;
}

static int
docker_entry(struct xp_import *im, const json_t *entry, size_t index, struct xp_error *err)
{
        const json_t *layers = json_object_get(entry, "Layers"),
                     *tags = json_object_get(entry, "RepoTags");
        const char *config_name = json_string_value(json_object_get(entry, "Config"));
        _cleanup_free_ struct one *o = calloc(1, sizeof(*o));
        _cleanup_free_ char *config = NULL, *manifest = NULL;
        char config_flat[XP_IMPORT_NAME_MAX], digest[XP_IMAGE_DIGEST_BUFSIZE];
        struct xp_image_manifest m = {0};
        size_t size = 0, i;
        json_t *tag;
        int r;

        if (!o)
                return -ENOMEM;
        if (!config_name || !json_is_array(layers) ||
            json_array_size(layers) > XP_IMAGE_LAYERS_MAX ||
            (tags && !json_is_null(tags) && !json_is_array(tags)))
                return xp_errorf(
                    err,
                    -EBADMSG,
                    "manifest.json[%zu]: needs Config (a string), Layers (at most %d) and RepoTags (a list)",
                    index,
                    XP_IMAGE_LAYERS_MAX);
        if ((r = xp_import_flat_name(config_name, config_flat, err)) < 0 ||
            (r = xp_import_read(
                 im->dir_fd, config_flat, XP_IMAGE_CONFIG_MAX, &config, &size, err)) < 0 ||
            (r = docker_manifest(config, size, layers, im->dir_fd, &manifest, err)) < 0 ||
            (r = xp_sha256_digest(manifest, strlen(manifest), digest)) < 0 ||
            (r = xp_image_manifest_parse(manifest, strlen(manifest), NULL, &m, err)) < 0)
                return xp_error_prefix(err, r, "manifest.json[%zu]", index);
        for (i = 0; r >= 0 && i < m.n_layers; i++)
                r = xp_import_flat_name(
                    json_string_value(json_array_get(layers, i)) ?: "", o->layer_files[i], err);
        json_array_foreach(tags, i, tag) if (r >= 0 && json_is_string(tag)) r =
            add_name(im, o, json_string_value(tag), false, err);
        o->top_digest = o->manifest_digest = digest;
        o->manifest_data = manifest;
        o->manifest_size = strlen(manifest);
        o->m = &m;
        if (r >= 0)
                r = import_one(im, o, config_flat, err);
        xp_image_manifest_done(&m);
        return r;
}

int xp_import_docker(struct xp_import *im, struct xp_error *err)
{
        _cleanup_free_ char *text = NULL;
        json_auto_t *root = NULL;
        json_error_t jerr;
        size_t size = 0, i;
        json_t *entry;
        int r;

        r = xp_import_read(im->dir_fd, "manifest.json", XP_IMAGE_MANIFEST_MAX, &text, &size, err);
        if (r < 0)
                return xp_errorf(
                    err,
                    -EBADMSG,
                    "neither an OCI image layout (index.json) nor a docker-archive (manifest.json)");
        root = json_loadb(text, size, JSON_REJECT_DUPLICATES, &jerr);
        if (!json_is_array(root) || json_array_size(root) == 0)
                return xp_errorf(err,
                                 -EBADMSG,
                                 "manifest.json: %s",
                                 root ? "must be a non-empty list" : jerr.text);
        json_array_foreach(root, i, entry)
        {
                r = docker_entry(im, entry, i, err);
                if (r < 0)
                        return r;
        }
        return 0;
}
