/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Removing images and what nothing uses: `xpool image rm` and `prune`. Content (layers, blobs)
 * is deleted only under the store's lock held exclusively, which no pull or import holds then,
 * so nothing a pull is about to use disappears under it.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "image_internal.h"

/* Whether any record uses the blob or layer called name (a digest's hex, a layer's dir name). */
static bool in_use(const json_t *refs, const char *name, bool layer)
{
        size_t i, j;
        json_t *rec, *v;

        json_array_foreach(json_object_get(refs, "images"), i, rec)
        {
                static const char *const blob_keys[] = {"id", "digest", "manifest"};

                if (layer) {
                        bool untrusted = json_is_true(json_object_get(rec, "untrusted"));

                        json_array_foreach(json_object_get(rec, "layers"), j, v)
                        {
                                char n[96];

                                xp_store_layer_name(
                                    json_string_value(v) ?: "sha256:", untrusted, n, sizeof(n));
                                if (strcmp(n, name) == 0)
                                        return true;
                        }
                        continue;
                }
                for (j = 0; j < XP_ELEMENTSOF(blob_keys); j++) {
                        const char *d = json_string_value(json_object_get(rec, blob_keys[j]));

                        if (d && strlen(d) > 7 && strcmp(d + 7, name) == 0)
                                return true;
                }
        }
        return false;
}

/* Removes what in dir (relative to the store) nothing uses. */
static void sweep(struct xp_image_store *s,
                  const char *dir,
                  const json_t *refs,
                  bool layers,
                  size_t *count,
                  uint64_t *bytes)
{
        _cleanup_close_ int fd = openat(s->dir_fd, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
        struct dirent *de;

        if (!d)
                return;
        fd = -1;
        while ((de = readdir(d))) {
                struct stat st;

                if (de->d_name[0] == '.' || (refs && in_use(refs, de->d_name, layers)))
                        continue;
                if (layers) {
                        char size_path[300];
                        char text[32] = "";
                        int f;

                        snprintf(size_path, sizeof(size_path), "%s/size", de->d_name);
                        f = openat(dirfd(d), size_path, O_RDONLY | O_CLOEXEC);
                        if (f >= 0) {
                                if (read(f, text, sizeof(text) - 1) > 0 && bytes)
                                        *bytes += strtoull(text, NULL, 10);
                                close(f);
                        }
                } else if (bytes && fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
                        *bytes += (uint64_t)st.st_size;
                }
                if (xp_remove_tree_at(dirfd(d), de->d_name) >= 0 && count)
                        (*count)++;
        }
        closedir(d);
}

int xp_store_gc(struct xp_image_store *s,
                const json_t *refs,
                struct xp_image_prune_result *res,
                struct xp_error *err)
{
        (void)err;
        sweep(s, "layers", refs, true, &res->layers, &res->bytes);
        sweep(s, "blobs/sha256", refs, false, &res->blobs, &res->bytes);
        sweep(s, "used", refs, false, NULL, NULL); /* named by the image ID's hex, as blobs */
        /* no pull runs: their temporary directories and layer locks are nobody's */
        sweep(s, "tmp", NULL, false, NULL, NULL);
        sweep(s, "locks", NULL, false, NULL, NULL);
        return 0;
}

/* Drops the record at i (or just the name named) under the refs lock: 1 when the image went. */
static int drop(struct xp_image_store *s,
                json_t *images,
                size_t i,
                const char *text,
                bool by_id,
                struct xp_error *err)
{
        json_t *rec = json_array_get(images, i), *names = json_object_get(rec, "names"), *v;
        const char *id = json_string_value(json_object_get(rec, "id")) ?: "";
        bool tags_left = false;
        char holder[512];
        size_t j;

        if (!by_id) {
                struct xp_image_ref ref = {0};
                _cleanup_free_ char *name = NULL, *repo = NULL;

                if (xp_image_ref_parse(text, &ref, err) < 0)
                        return -EINVAL;
                repo = xp_image_ref_repository(&ref);
                if (ref.digest)
                        name =
                            repo && asprintf(&name, "%s@%s", repo, ref.digest) >= 0 ? name : NULL;
                else
                        name = xp_image_ref_format(&ref);
                xp_image_ref_done(&ref);
                if (!name)
                        return -ENOMEM;
                for (j = json_array_size(names); j-- > 0;)
                        if (strcmp(json_string_value(json_array_get(names, j)) ?: "", name) == 0)
                                json_array_remove(names, j);
                json_array_foreach(names, j, v) tags_left |=
                    !strchr(json_string_value(v) ?: "@", '@');
                if (tags_left)
                        return 0;
        }
        if (xp_store_held(s, id, holder, sizeof(holder)))
                return xp_errorf(err, -EBUSY, "image %s is in use (held by %s)", id, holder);
        json_array_remove(images, i);
        return 1;
}

int xp_image_remove(struct xp_image_store *s, const char *text, struct xp_error *err)
{
        _cleanup_close_ int refs_lock = -1, lock = -1;
        json_auto_t *refs = NULL;
        struct xp_image_prune_result res = {0};
        size_t i = 0;
        bool by_id = false;
        int r;

        /* taken before the refs lock, as prune takes them; a pull in progress: cleaned up later */
        lock = xp_store_lock(s, true, true);
        refs_lock = xp_store_refs_open(s, &refs, err);
        if (refs_lock < 0)
                return refs_lock;
        r = xp_store_find(refs, text, &i, &by_id, err);
        if (r < 0)
                return r;
        r = drop(s, json_object_get(refs, "images"), i, text, by_id, err);
        if (r < 0)
                return r;
        r = xp_store_refs_save(s, refs, err);
        if (r < 0)
                return r;
        return lock >= 0 ? xp_store_gc(s, refs, &res, err) : 0;
}

int xp_image_prune(struct xp_image_store *s,
                   bool all,
                   struct xp_image_prune_result *ret,
                   struct xp_error *err)
{
        _cleanup_close_ int refs_lock = -1, lock = -1;
        struct xp_image_prune_result res = {0};
        json_auto_t *refs = NULL;
        json_t *images;
        int r;

        lock = xp_store_lock(s, true, false);
        if (lock < 0)
                return xp_errorf(err, lock, "the image store's lock: %s", strerror(-lock));
        refs_lock = xp_store_refs_open(s, &refs, err);
        if (refs_lock < 0)
                return refs_lock;
        images = json_object_get(refs, "images");
        for (size_t i = json_array_size(images); i-- > 0;) {
                json_t *rec = json_array_get(images, i);
                char holder[256];
                bool named = json_array_size(json_object_get(rec, "names")) > 0;

                if ((named && !all) ||
                    xp_store_held(s,
                                  json_string_value(json_object_get(rec, "id")) ?: "",
                                  holder,
                                  sizeof(holder)))
                        continue;
                json_array_remove(images, i);
                res.images++;
        }
        if (res.images > 0 && (r = xp_store_refs_save(s, refs, err)) < 0)
                return r;
        r = xp_store_gc(s, refs, &res, err);
        if (r >= 0 && ret)
                *ret = res;
        return r;
}
