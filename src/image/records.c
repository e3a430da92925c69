/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Changing the store's index: recording a pulled or imported image, holds, removing images and
 * what nothing uses any more.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "image_internal.h"
#include "xpool/atomic_file.h"

#define HOLDER_MAX      200
#define HOLDER_WHAT_MAX 400 /* what a hold says holds it: "pod NS/NAME, container C" */

/* Takes the names of rec away from every image but the one at keep. */
static void take_names(json_t *images, size_t keep, const struct xp_store_record *rec)
{
        size_t i, j;
        json_t *other, *name;

        json_array_foreach(images, i, other)
        {
                json_t *names = json_object_get(other, "names");

                if (i == keep)
                        continue;
                for (j = 0; j < json_array_size(names);) {
                        bool taken = false;

                        name = json_array_get(names, j);
                        for (size_t k = 0; k < rec->n_names && !taken; k++)
                                taken = strcmp(json_string_value(name) ?: "", rec->names[k]) == 0;
                        if (taken)
                                json_array_remove(names, j);
                        else
                                j++;
                }
        }
}

static json_t *record_json(const struct xp_store_record *rec, const json_t *old)
{
        json_t *names = json_array(), *layers = json_array(), *r;
        size_t i, j;
        json_t *v;

        if (!names || !layers)
                goto fail;
        /* the names of this pull or import first, then those it had */
        for (i = 0; i < rec->n_names; i++)
                if (json_array_append_new(names, json_string(rec->names[i])) < 0)
                        goto fail;
        json_array_foreach(json_object_get(old, "names"), i, v)
        {
                bool dup = false;

                for (j = 0; j < rec->n_names; j++)
                        dup |= strcmp(json_string_value(v) ?: "", rec->names[j]) == 0;
                if (!dup && json_array_append(names, v) < 0)
                        goto fail;
        }
        for (i = 0; i < rec->n_layers; i++)
                if (json_array_append_new(layers, json_string(rec->diff_ids[i])) < 0)
                        goto fail;
        r = json_pack("{s:s, s:s, s:s, s:o, s:o, s:I, s:I, s:b}",
                      "id",
                      rec->id,
                      "digest",
                      rec->digest,
                      "manifest",
                      rec->manifest,
                      "names",
                      names,
                      "layers",
                      layers,
                      "size",
                      (json_int_t)rec->size,
                      "pulled",
                      (json_int_t)time(NULL),
                      "untrusted",
                      rec->untrusted);
        return r;
fail:
        json_decref(names);
        json_decref(layers);
        return NULL;
}

int xp_store_record(struct xp_image_store *s,
                    const struct xp_store_record *rec,
                    struct xp_image **ret,
                    struct xp_error *err)
{
        _cleanup_close_ int lock = -1;
        json_auto_t *refs = NULL, *entry = NULL;
        json_t *images, *old = NULL, *v;
        size_t i, at = SIZE_MAX;
        int r;

        lock = xp_store_refs_open(s, &refs, err);

        if (lock < 0)

                return lock;
        images = json_object_get(refs, "images");
        json_array_foreach(
            images, i, v) if (strcmp(json_string_value(json_object_get(v, "id")) ?: "", rec->id) ==
                                  0 &&
                              json_is_true(json_object_get(v, "untrusted")) == rec->untrusted)
        {
                at = i;
                old = v;
        }
        take_names(images, at, rec);
        entry = record_json(rec, old);
        if (!entry)
                return -ENOMEM;
        /* the newest first */
        if (at != SIZE_MAX)
                json_array_remove(images, at);
        if (json_array_insert(images, 0, entry) < 0)
                return -ENOMEM;
        r = xp_store_refs_save(s, refs, err);
        if (r < 0 || !ret)
                return r;
        return xp_store_image_from_record(s, entry, ret, err);
}

/* ---- holds ----------------------------------------------------------------------------------- */

static int check_holder(const char *holder, struct xp_error *err)
{
        size_t n = holder ? strlen(holder) : 0;

        if (n == 0 || n > HOLDER_MAX ||
            strspn(holder, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") !=
                n ||
            holder[0] == '.')
                return xp_errorf(
                    err,
                    -EINVAL,
                    "holder \"%s\": must be 1 to %d of [A-Za-z0-9._-], not starting with '.'",
                    holder ? holder : "",
                    HOLDER_MAX);
        return 0;
}

int xp_image_hold(struct xp_image_store *s,
                  const char *image_id,
                  const char *holder,
                  struct xp_error *err)
{
        return xp_image_hold_for(s, image_id, holder, NULL, err);
}

/* A hold's file: the image's ID, then on a line of its own what holds it (when said). */
int xp_image_hold_for(struct xp_image_store *s,
                      const char *image_id,
                      const char *holder,
                      const char *what,
                      struct xp_error *err)
{
        _cleanup_close_ int lock = -1;
        _cleanup_free_ char *path = NULL, *text = NULL;
        json_auto_t *refs = NULL;
        size_t i;
        json_t *v;
        bool found = false;
        int r;

        if ((r = check_holder(holder, err)) < 0)
                return r;
        lock = xp_store_refs_open(s, &refs, err);
        if (lock < 0)
                return lock;
        json_array_foreach(json_object_get(refs, "images"), i, v) found |=
            strcmp(json_string_value(json_object_get(v, "id")) ?: "", image_id) == 0;
        if (!found)
                return xp_errorf(err, -ENOENT, "no image %s in the store", image_id);
        if (what && (strchr(what, '\n') || strlen(what) > HOLDER_WHAT_MAX))
                return xp_errorf(err, -EINVAL, "holder %s: what holds it is over a line", holder);
        if (asprintf(&path, "%s/holds/%s", s->dir, holder) < 0 ||
            asprintf(&text, "%s%s%s", image_id, what ? "\n" : "", what ? what : "") < 0)
                return -ENOMEM;
        r = xp_write_file_atomic(path, text, strlen(text), 0600, err);
        if (r >= 0)
                xp_store_touch_used(s, image_id);
        return r;
}

/* The image ID a hold file names into id ("" when it names none). */
static void held_id(struct xp_image_store *s, const char *path, char *id, size_t size)
{
        int fd = openat(s->dir_fd, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        ssize_t n = fd >= 0 ? read(fd, id, size - 1) : -1;

        if (fd >= 0)
                close(fd);
        id[n > 0 ? n : 0] = '\0';
        id[strcspn(id, "\n")] = '\0';
}

int xp_image_release(struct xp_image_store *s, const char *holder, struct xp_error *err)
{
        char path[HOLDER_MAX + 16], id[XP_IMAGE_DIGEST_BUFSIZE + 8];
        int r;

        if ((r = check_holder(holder, err)) < 0)
                return r;
        snprintf(path, sizeof(path), "holds/%s", holder);
        held_id(s, path, id, sizeof(id));
        if (unlinkat(s->dir_fd, path, 0) < 0 && errno != ENOENT)
                return xp_errorf(err, -errno, "releasing %s/%s: %m", s->dir, path);
        /* its last use, for image garbage collection: when the container gave it back */
        if (*id)
                xp_store_touch_used(s, id);
        return 0;
}

/* The first holder of image id into holder (size bytes): 1 held, 0 not. */
int xp_store_held(struct xp_image_store *s, const char *id, char *holder, size_t size)
{
        _cleanup_close_ int fd = openat(s->dir_fd, "holds", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
        struct dirent *de;
        int held = 0;

        if (!d)
                return 0;
        fd = -1;
        while (!held && (de = readdir(d))) {
                char text[XP_IMAGE_DIGEST_BUFSIZE + HOLDER_WHAT_MAX + 2] = "";
                char *what;
                int h = de->d_name[0] == '.'
                            ? -1
                            : openat(dirfd(d), de->d_name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
                ssize_t n = h >= 0 ? read(h, text, sizeof(text) - 1) : -1;

                if (h >= 0)
                        close(h);
                /* the ID alone: a hold written before holds said what held them */
                what = n > 0 ? strchr(text, '\n') : NULL;
                if (what)
                        *what++ = '\0';
                if (n > 0 && strcmp(text, id) == 0) {
                        snprintf(holder, size, "%s", what && *what ? what : de->d_name);
                        held = 1;
                }
        }
        closedir(d);
        return held;
}
