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

/* What the images taken so far give back. */
struct planned {
        struct xp_image_store *s;
        uint64_t bytes;
};

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

/* A value for the maps of ids below (a map takes no NULL). */
static char present;

/*
 * The ids that stay whatever else: a record of theirs is used by a container (o->in_use) or was
 * pulled less than min_age_s ago (a trusted and an untrusted record may share an id: dropping
 * the image drops both). Keys borrowed from refs.
 */
static int kept_ids(const json_t *refs,
                    const struct xp_image_gc_options *o,
                    int64_t now_s,
                    struct xp_map *kept)
{
        json_t *images = json_object_get(refs, "images"), *rec;
        size_t i, at;
        bool by_id;
        int r = 0;

        for (i = 0; i < o->n_in_use && r >= 0; i++)
                if (o->in_use[i] && xp_store_find(refs, o->in_use[i], &at, &by_id, NULL) >= 0 &&
                    (rec = json_array_get(images, at)) &&
                    json_string_value(json_object_get(rec, "id")))
                        r = xp_map_put(
                            kept, json_string_value(json_object_get(rec, "id")), &present);
        json_array_foreach(images, i, rec)
        {
                const char *id = json_string_value(json_object_get(rec, "id"));

                if (r >= 0 && id &&
                    now_s - json_integer_value(json_object_get(rec, "pulled")) < o->min_age_s)
                        r = xp_map_put(kept, id, &present);
        }
        return r;
}

/* The images that may go (no record of theirs held, used or pulled less than min_age_s ago), each
 * once, oldest use first: how many, or -ENOMEM. */
static ssize_t candidates(struct xp_image_store *s,
                          const json_t *refs,
                          const struct xp_image_gc_options *o,
                          struct candidate *out)
{
        int64_t now_s = o->now_s ? o->now_s : time(NULL);
        struct xp_map kept = {0}, seen = {0};
        size_t i, n = 0;
        json_t *rec;
        int r = kept_ids(refs, o, now_s, &kept);

        json_array_foreach(json_object_get(refs, "images"), i, rec)
        {
                const char *id = json_string_value(json_object_get(rec, "id"));
                char holder[8];

                if (r < 0 || !id || xp_map_get(&kept, id) || xp_map_get(&seen, id))
                        continue;
                r = xp_map_put(&seen, id, &present);
                if (r < 0 || xp_store_held(s, id, holder, sizeof(holder)))
                        continue;
                out[n++] = (struct candidate){
                    id, last_used(s, id), json_integer_value(json_object_get(rec, "pulled"))};
        }
        xp_map_done(&kept);
        xp_map_done(&seen);
        if (r < 0)
                return r;
        qsort(out, n, sizeof(*out), oldest_first);
        return (ssize_t)n;
}

static void add_size(void *cls, bool layer, const char *name)
{
        struct planned *p = cls;

        p->bytes += xp_store_content_size(p->s, layer, name);
}

/* Drops every record of id, what it alone used counted into p. */
static void drop_id(json_t *images, const char *id, struct gc_uses *uses, struct planned *p)
{
        for (size_t i = json_array_size(images); i-- > 0;) {
                json_t *rec = json_array_get(images, i);

                if (strcmp(json_string_value(json_object_get(rec, "id")) ?: "", id) != 0)
                        continue;
                gc_uses_drop(uses, rec, add_size, p);
                json_array_remove(images, i);
        }
}

/*
 * Takes images from refs, oldest use first, until what they alone used comes to want_bytes: the
 * sizes are added up from the records, and the content goes afterwards in one sweep. What no
 * record used already counts with the first image, as its sweep took it too.
 */
static int plan(struct xp_image_store *s,
                json_t *refs,
                char **ids,
                size_t n,
                uint64_t want_bytes,
                size_t *ret_images)
{
        struct planned p = {.s = s};
        struct gc_uses uses;
        size_t i;
        int r = gc_uses_count(&uses, refs);

        for (i = 0; r >= 0 && i < n && (i == 0 || p.bytes < want_bytes); i++) {
                drop_id(json_object_get(refs, "images"), ids[i], &uses, &p);
                if (i == 0) /* what its sweep would take: its own and what was unused */
                        p.bytes = xp_store_unused_bytes(s, &uses);
        }
        gc_uses_done(&uses);
        *ret_images = r < 0 ? 0 : i;
        return r;
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
        ssize_t n;
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
        if (n < 0)
                return xp_errorf(err, (int)n, "out of memory");
        ret->eligible = (size_t)n;
        /* ids outlive each record's removal from the document */
        for (ssize_t i = 0; i < n; i++)
                if (!(ids[i] = strdup(cands[i].id)))
                        r = -ENOMEM;
        if (r >= 0)
                r = plan(s, refs, ids, (size_t)n, o->want_bytes, &ret->images);
        /* the records are gone for good before their content goes */
        if (r >= 0 && ret->images > 0)
                r = xp_store_refs_save(s, refs, err);
        if (r >= 0 && ret->images > 0)
                r = xp_store_gc(s, refs, &res, err);
        if (r < 0)
                ret->images = 0;
        ret->bytes = res.bytes;
        for (ssize_t i = 0; i < n; i++)
                free(ids[i]);
        return r;
}
