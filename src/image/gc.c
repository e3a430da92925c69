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

uint64_t xp_store_content_size(struct xp_image_store *s, bool layer, const char *name)
{
        char path[300], text[32] = "";
        struct stat st;
        int fd;

        if (!layer) {
                snprintf(path, sizeof(path), "blobs/sha256/%s", name);
                return fstatat(s->dir_fd, path, &st, AT_SYMLINK_NOFOLLOW) == 0
                           ? (uint64_t)st.st_size
                           : 0;
        }
        snprintf(path, sizeof(path), "layers/%s/size", name);
        fd = openat(s->dir_fd, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return 0;
        if (read(fd, text, sizeof(text) - 1) <= 0)
                text[0] = '\0';
        close(fd);
        return strtoull(text, NULL, 10);
}

/*
 * What in dir (relative to the store) no record uses (uses NULL: nothing is used): removed, unless
 * only counted (remove false). Each entry is one lookup in uses, not a walk of the records.
 */
static void sweep(struct xp_image_store *s,
                  const char *dir,
                  const struct gc_uses *uses,
                  bool layers,
                  bool remove,
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
                if (de->d_name[0] == '.' || (uses && gc_uses_has(uses, layers, de->d_name)))
                        continue;
                if (bytes)
                        *bytes += xp_store_content_size(s, layers, de->d_name);
                if (!remove) {
                        if (count)
                                (*count)++;
                } else if (xp_remove_tree_at(dirfd(d), de->d_name) >= 0 && count) {
                        (*count)++;
                }
        }
        closedir(d);
}

uint64_t xp_store_unused_bytes(struct xp_image_store *s, const struct gc_uses *uses)
{
        uint64_t bytes = 0;

        sweep(s, "layers", uses, true, false, NULL, &bytes);
        sweep(s, "blobs/sha256", uses, false, false, NULL, &bytes);
        return bytes;
}

int xp_store_gc(struct xp_image_store *s,
                const json_t *refs,
                struct xp_image_prune_result *res,
                struct xp_error *err)
{
        struct gc_uses uses;
        int r = gc_uses_count(&uses, refs);

        if (r < 0)
                return xp_errorf(err, r, "counting what the images use: %s", strerror(-r));
        sweep(s, "layers", &uses, true, true, &res->layers, &res->bytes);
        sweep(s, "blobs/sha256", &uses, false, true, &res->blobs, &res->bytes);
        sweep(
            s, "used", &uses, false, true, NULL, NULL); /* named by the image ID's hex, as blobs */
        /* no pull runs: their temporary directories and layer locks are nobody's */
        sweep(s, "tmp", NULL, false, true, NULL, NULL);
        sweep(s, "locks", NULL, false, true, NULL, NULL);
        gc_uses_done(&uses);
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
