/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Image garbage collection (docs/images.md, "Image garbage collection"): the kubelet's image
 * manager frees disk by deleting images no container uses, least recently used first, until it
 * has freed what was asked. An image's last use is when a container last took or gave back its
 * hold (the mtime of used/HEX, touched by xp_image_hold_for() and xp_image_release()); an image
 * never used counts as used at the epoch, so it goes first, as the kubelet's never-used records
 * (lastUsed zero) do.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "image_internal.h"

struct candidate {
        const char *id; /* into the refs document, valid while it is */
        int64_t last_used, pulled;
};

void xp_store_touch_used(struct xp_image_store *s, const char *image_id)
{
        char path[XP_IMAGE_DIGEST_BUFSIZE + 8];
        int fd;

        if (strncmp(image_id, "sha256:", 7) != 0 || strchr(image_id + 7, '/'))
                return;
        snprintf(path, sizeof(path), "used/%s", image_id + 7);
        fd = openat(s->dir_fd, path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return; /* best effort: an image without a mark only goes earlier */
        (void)futimens(fd, NULL);
        close(fd);
}

static int64_t last_used(struct xp_image_store *s, const char *image_id)
{
        char path[XP_IMAGE_DIGEST_BUFSIZE + 8];
        struct stat st;

        if (strncmp(image_id, "sha256:", 7) != 0 || strchr(image_id + 7, '/'))
                return 0;
        snprintf(path, sizeof(path), "used/%s", image_id + 7);
        return fstatat(s->dir_fd, path, &st, AT_SYMLINK_NOFOLLOW) == 0 ? (int64_t)st.st_mtime : 0;
}

static int oldest_first(const void *a, const void *b)
{
        const struct candidate *p = a, *q = b;

        if (p->last_used != q->last_used)
                return p->last_used < q->last_used ? -1 : 1;
        if (p->pulled != q->pulled)
                return p->pulled < q->pulled ? -1 : 1;
        return strcmp(p->id, q->id);
}

/* Whether the record at index is one of the images o says containers use. */
static bool
used_by_containers(const json_t *refs, size_t index, const struct xp_image_gc_options *o)
{
        for (size_t i = 0; i < o->n_in_use; i++) {
                size_t at;
                bool by_id;

                if (o->in_use[i] && xp_store_find(refs, o->in_use[i], &at, &by_id, NULL) >= 0 &&
                    at == index)
                        return true;
        }
        return false;
}

/* Whether a record of image id (a trusted and an untrusted record may share one: dropping the
 * image drops both) is used by a container or pulled less than min_age_s ago. */
static bool
id_kept(const json_t *refs, const char *id, const struct xp_image_gc_options *o, int64_t now_s)
{
        size_t i;
        json_t *rec;

        json_array_foreach(json_object_get(refs, "images"), i, rec)
        {
                const char *other = json_string_value(json_object_get(rec, "id"));

                if (!other || strcmp(other, id) != 0)
                        continue;
                if (now_s - json_integer_value(json_object_get(rec, "pulled")) < o->min_age_s ||
                    used_by_containers(refs, i, o))
                        return true;
        }
        return false;
}

/* The images that may go (no record of theirs held, used or pulled less than min_age_s ago), each
 * once, oldest use first. */
static size_t candidates(struct xp_image_store *s,
                         const json_t *refs,
                         const struct xp_image_gc_options *o,
                         struct candidate *out)
{
        int64_t now_s = o->now_s ? o->now_s : time(NULL);
        size_t i, n = 0;
        json_t *rec;

        json_array_foreach(json_object_get(refs, "images"), i, rec)
        {
                const char *id = json_string_value(json_object_get(rec, "id"));
                int64_t pulled = json_integer_value(json_object_get(rec, "pulled"));
                char holder[8];
                bool seen = false;

                for (size_t k = 0; id && k < n && !seen; k++)
                        seen = strcmp(out[k].id, id) == 0;
                if (!id || seen || xp_store_held(s, id, holder, sizeof(holder)) ||
                    id_kept(refs, id, o, now_s))
                        continue;
                out[n++] = (struct candidate){id, last_used(s, id), pulled};
        }
        qsort(out, n, sizeof(*out), oldest_first);
        return n;
}

static void drop_id(json_t *images, const char *id)
{
        for (size_t i = json_array_size(images); i-- > 0;)
                if (strcmp(json_string_value(json_object_get(json_array_get(images, i), "id"))
                               ?: "",
                           id) == 0)
                        json_array_remove(images, i);
}

int xp_image_gc(struct xp_image_store *s,
                const struct xp_image_gc_options *o,
                struct xp_image_gc_result *ret,
                struct xp_error *err)
{
        _cleanup_close_ int refs_lock = -1, lock = -1;
        _cleanup_free_ struct candidate *cands = NULL;
        _cleanup_free_ char **ids = NULL;
        struct xp_image_prune_result res = {0};
        json_auto_t *refs = NULL;
        json_t *images;
        size_t n;
        int r = 0;

        *ret = (struct xp_image_gc_result){0};
        lock = xp_store_lock(s, true, o->nonblock);
        if (lock < 0)
                return lock == -EWOULDBLOCK
                           ? -EAGAIN
                           : xp_errorf(err, lock, "the image store's lock: %s", strerror(-lock));
        refs_lock = xp_store_refs_open(s, &refs, err);
        if (refs_lock < 0)
                return refs_lock;
        images = json_object_get(refs, "images");
        cands = calloc(json_array_size(images) + 1, sizeof(*cands));
        ids = calloc(json_array_size(images) + 1, sizeof(*ids));
        if (!cands || !ids)
                return -ENOMEM;
        n = candidates(s, refs, o, cands);
        ret->eligible = n;
        /* ids outlive each record's removal from the document */
        for (size_t i = 0; i < n; i++)
                if (!(ids[i] = strdup(cands[i].id)))
                        r = -ENOMEM;
        for (size_t i = 0; r >= 0 && i < n && res.bytes < o->want_bytes; i++) {
                drop_id(images, ids[i]);
                r = xp_store_refs_save(s, refs, err);
                /* the record is gone for good before its content goes */
                if (r >= 0)
                        r = xp_store_gc(s, refs, &res, err);
                if (r >= 0)
                        ret->images++;
        }
        ret->bytes = res.bytes;
        for (size_t i = 0; i < n; i++)
                free(ids[i]);
        return r;
}
