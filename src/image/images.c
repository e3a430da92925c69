/* SPDX-License-Identifier: Apache-2.0 */
/* The images of the store: records of refs.json made into struct xp_image, names, lookups. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "image_internal.h"
#include "xpool/strutil.h"

void xp_image_free(struct xp_image *img)
{
        if (!img)
                return;
        free(img->id);
        free(img->digest);
        xp_image_strv_free(img->names);
        xp_image_config_done(&img->config);
        for (size_t i = 0; i < img->n_layers; i++) {
                free(img->layers[i]);
                free(img->diff_ids[i]);
        }
        free(img->layers);
        free(img->diff_ids);
        free(img);
}

char *xp_image_status_id(const struct xp_image *img, const char *reference)
{
        struct xp_image_ref ref = {0};
        struct xp_error err = {0};
        char *repo = NULL;
        const char *pick = NULL;
        size_t n = 0;

        if (reference && xp_image_ref_parse(reference, &ref, &err) >= 0) {
                repo = xp_image_ref_repository(&ref);
                xp_image_ref_done(&ref);
                if (!repo)
                        return NULL;
                n = strlen(repo);
        }
        for (char **name = img->names; name && *name; name++) {
                if (!strchr(*name, '@'))
                        continue;
                if (!pick)
                        pick = *name;
                if (repo && strncmp(*name, repo, n) == 0 && (*name)[n] == '@') {
                        pick = *name;
                        break;
                }
        }
        free(repo);
        return strdup(pick ? pick : img->id);
}

/* containerd reports the store's first tagged name of the image, its "repo tag" */
static const char *first_tagged_name(const struct xp_image *img)
{
        for (char **name = img->names; name && *name; name++)
                if (!strchr(*name, '@'))
                        return *name;
        return NULL;
}

char *xp_image_status_ref(const struct xp_image *img, const char *reference)
{
        struct xp_image_ref ref = {0};
        char *formatted = NULL;
        const char *tagged;

        if (reference && xp_image_ref_parse(reference, &ref, NULL) >= 0) {
                formatted = xp_image_ref_format(&ref);
                xp_image_ref_done(&ref);
                if (!formatted)
                        return NULL;
        }
        /* a digest reference is no tag: containerd then gives the image's first tag */
        for (char **name = img->names; formatted && !strchr(formatted, '@') && name && *name;
             name++)
                if (strcmp(*name, formatted) == 0)
                        return formatted;
        tagged = first_tagged_name(img);
        if (tagged) {
                free(formatted);
                return strdup(tagged);
        }
        if (formatted)
                return formatted;
        return strdup(reference ? reference : img->id);
}

void xp_image_list_free(struct xp_image **images, size_t n)
{
        for (size_t i = 0; images && i < n; i++)
                xp_image_free(images[i]);
        free(images);
}

char *xp_image_lowerdir(const struct xp_image *img, bool relative)
{
        size_t len = 1;
        char *out, *p;

        for (size_t i = 0; i < img->n_layers; i++)
                len += strlen(img->layers[i]) + 1;
        out = p = malloc(len);
        if (!out)
                return NULL;
        *p = '\0';
        for (size_t i = img->n_layers; i-- > 0;) {
                const char *l = img->layers[i];

                /* ".../layers/NAME/fs" relative to .../layers is "NAME/fs" */
                if (relative) {
                        const char *fs = strrchr(l, '/');

                        while (fs > l && fs[-1] != '/')
                                fs--;
                        l = fs ? fs : l;
                }
                p += sprintf(p, "%s%s", p == out ? "" : ":", l);
        }
        return out;
}

static int layers_from_record(struct xp_image_store *s, const json_t *rec, struct xp_image *img)
{
        const json_t *layers = json_object_get(rec, "layers");
        size_t n = json_array_size(layers);

        img->layers = calloc(n ? n : 1, sizeof(char *));
        img->diff_ids = calloc(n ? n : 1, sizeof(char *));
        if (!img->layers || !img->diff_ids)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                const char *id = json_string_value(json_array_get(layers, i));
                char name[96];

                if (!id || !xp_image_digest_ok(id))
                        return -EBADMSG;
                xp_store_layer_name(id, img->untrusted, name, sizeof(name));
                img->n_layers = i + 1;
                img->diff_ids[i] = strdup(id);
                if (!img->diff_ids[i] ||
                    asprintf(&img->layers[i], "%s/%s/fs", s->layers_dir, name) < 0) {
                        img->layers[i] = NULL;
                        return -ENOMEM;
                }
        }
        return 0;
}

static int names_from_record(const json_t *rec, struct xp_image *img)
{
        const json_t *names = json_object_get(rec, "names");
        size_t n = json_array_size(names), k = 0;

        img->names = calloc(n + 1, sizeof(char *));
        if (!img->names)
                return -ENOMEM;
        /* tags first, then repo@digest names */
        for (int pass = 0; pass < 2; pass++)
                for (size_t i = 0; i < n; i++) {
                        const char *name = json_string_value(json_array_get(names, i));

                        if (!name || (strchr(name, '@') != NULL) != (pass == 1))
                                continue;
                        if (!(img->names[k++] = strdup(name)))
                                return -ENOMEM;
                }
        return 0;
}

int xp_store_image_from_record(struct xp_image_store *s,
                               const json_t *rec,
                               struct xp_image **ret,
                               struct xp_error *err)
{
        _cleanup_(xp_image_freep) struct xp_image *img = calloc(1, sizeof(*img));
        const char *id = json_string_value(json_object_get(rec, "id"));
        const char *digest = json_string_value(json_object_get(rec, "digest"));
        _cleanup_free_ char *data = NULL;
        char **diff_ids = NULL;
        size_t size = 0, n = 0;
        int r;

        if (!img)
                return -ENOMEM;
        if (!id || !xp_image_digest_ok(id) || !digest)
                return xp_errorf(err, -EBADMSG, "%s/refs.json: a damaged record", s->dir);
        img->untrusted = json_is_true(json_object_get(rec, "untrusted"));
        img->size = (uint64_t)json_integer_value(json_object_get(rec, "size"));
        img->pulled_s = json_integer_value(json_object_get(rec, "pulled"));
        if (!(img->id = strdup(id)) || !(img->digest = strdup(digest)) ||
            names_from_record(rec, img) < 0)
                return -ENOMEM;
        r = layers_from_record(s, rec, img);
        if (r < 0)
                return r == -EBADMSG
                           ? xp_errorf(
                                 err, r, "%s/refs.json: image %s: a damaged layer list", s->dir, id)
                           : r;
        r = xp_store_blob_get(s, id, XP_IMAGE_CONFIG_MAX, &data, &size, err);
        if (r >= 0)
                r = xp_image_config_parse(data, size, &img->config, &diff_ids, &n, err);
        xp_image_strv_free(diff_ids);
        if (r < 0)
                return xp_error_prefix(err, r, "image %s: its config", id);
        *ret = TAKE_PTR(img);
        return 0;
}

static bool has_name(const json_t *rec, const char *name)
{
        size_t i;
        json_t *v;

        json_array_foreach(json_object_get(rec, "names"),
                           i,
                           v) if (strcmp(json_string_value(v) ?: "", name) == 0) return true;
        return false;
}

static bool hex_prefix(const char *text)
{
        size_t n = strlen(text);

        if (strncmp(text, "sha256:", 7) == 0)
                text += 7, n -= 7;
        if (n < 12 || n > 64)
                return false;
        return xp_hex_is_lower(text, n);
}

/* The record text names: 1 with *ret_index, 0 none, -EINVAL for text that names nothing. */
int xp_store_find(
    const json_t *refs, const char *text, size_t *ret_index, bool *ret_by_id, struct xp_error *err)
{
        const json_t *images = json_object_get(refs, "images"), *rec;
        struct xp_image_ref ref = {0};
        _cleanup_free_ char *name = NULL;
        size_t i, found = 0, matches = 0;
        struct xp_error perr = {0};

        if (xp_image_ref_parse(text, &ref, &perr) >= 0) {
                name = ref.digest ? NULL : xp_image_ref_format(&ref);
                if (ref.digest) {
                        _cleanup_free_ char *repo = xp_image_ref_repository(&ref);

                        if (repo && asprintf(&name, "%s@%s", repo, ref.digest) < 0)
                                name = NULL;
                }
                xp_image_ref_done(&ref);
                if (!name)
                        return -ENOMEM;
                json_array_foreach(images, i, rec) if (has_name(rec, name))
                {
                        *ret_index = i;
                        *ret_by_id = false;
                        return 1;
                }
        }
        if (!hex_prefix(text)) {
                if (perr.code < 0)
                        return xp_errorf(err, perr.code, "%s", perr.msg);
                return xp_errorf(err, -ENOENT, "no image %s in the store", text);
        }
        json_array_foreach(images, i, rec)
        {
                const char *id = json_string_value(json_object_get(rec, "id")) ?: "";
                const char *t = strncmp(text, "sha256:", 7) == 0 ? text : NULL;

                if (t ? strncmp(id, t, strlen(t)) == 0 : strncmp(id + 7, text, strlen(text)) == 0)
                        found = i, matches++;
        }
        if (matches > 1)
                return xp_errorf(err,
                                 -EINVAL,
                                 "\"%s\" is the prefix of several image IDs: give more of it",
                                 text);
        if (matches == 0)
                return xp_errorf(err, -ENOENT, "no image %s in the store", text);
        *ret_index = found;
        *ret_by_id = true;
        return 1;
}

int xp_image_get(struct xp_image_store *s,
                 const char *text,
                 struct xp_image **ret,
                 struct xp_error *err)
{
        _cleanup_close_ int lock = -1;
        json_auto_t *refs = NULL;
        size_t i = 0;
        bool by_id;
        int r;

        lock = xp_store_refs_open(s, &refs, err);

        if (lock < 0)

                return lock;
        r = xp_store_find(refs, text, &i, &by_id, err);
        if (r < 0)
                return r;
        return xp_store_image_from_record(
            s, json_array_get(json_object_get(refs, "images"), i), ret, err);
}

int xp_image_list(struct xp_image_store *s,
                  struct xp_image ***ret,
                  size_t *ret_n,
                  struct xp_error *err)
{
        _cleanup_close_ int lock = -1;
        json_auto_t *refs = NULL;
        const json_t *images;
        struct xp_image **out;
        size_t n;
        int r;

        lock = xp_store_refs_open(s, &refs, err);

        if (lock < 0)

                return lock;
        images = json_object_get(refs, "images");
        n = json_array_size(images);
        out = calloc(n ? n : 1, sizeof(*out));
        if (!out)
                return -ENOMEM;
        /* refs.json keeps the newest first */
        for (size_t i = 0; i < n; i++) {
                r = xp_store_image_from_record(s, json_array_get(images, i), &out[i], err);
                if (r < 0) {
                        xp_image_list_free(out, i);
                        return r;
                }
        }
        *ret = out;
        *ret_n = n;
        return 0;
}
