/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A layer's stream: libarchive twice, so both digests come from the one pass. The outer reader
 * takes the bytes from the fd (hashed: the blob's digest) and undoes the compression (gzip,
 * zstd or none, as libarchive detects it) as its "raw" format; the inner one reads the tar from
 * the outer one's data (hashed: the diff_id). Entries are created by unpack_entry.c.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "image_internal.h"
#include "libs.h"

#define BLOCK (128 * 1024)

struct stream {
        int fd;
        const atomic_bool *cancel;
        struct archive *outer;
        struct xp_sha256 blob, tar;
        uint64_t read;
        bool eof;
        int error; /* -errno of the fd, or -ECANCELED */
        char in[BLOCK];
};

static la_ssize_t outer_read(struct archive *a, void *userdata, const void **buf)
{
        struct stream *s = userdata;
        ssize_t n;

        (void)a;
        if (s->cancel && atomic_load(s->cancel)) {
                s->error = -ECANCELED;
                return -1;
        }
        do
                n = read(s->fd, s->in, sizeof(s->in));
        while (n < 0 && errno == EINTR);
        if (n < 0) {
                s->error = -errno;
                return -1;
        }
        xp_sha256_update(&s->blob, s->in, (size_t)n);
        s->read += (uint64_t)n;
        *buf = s->in;
        return n;
}

/* The outer reader's next block as it comes (no copy, and no wait for a full buffer: what the
 * network has delivered is unpacked at once). 0 at the end. */
static la_ssize_t next_block(struct stream *s, const void **buf)
{
        la_int64_t offset;
        size_t size = 0;
        int r;

        if (s->eof)
                return 0;
        r = image_libs.archive_read_data_block(s->outer, buf, &size, &offset);
        if (r == ARCHIVE_EOF) {
                s->eof = true;
                return 0;
        }
        if (r != ARCHIVE_OK)
                return -1;
        xp_sha256_update(&s->tar, *buf, size);
        return (la_ssize_t)size;
}

static la_ssize_t inner_read(struct archive *a, void *userdata, const void **buf)
{
        (void)a;
        return next_block(userdata, buf);
}

/* What went wrong with the stream, as an error. */
static int stream_error(struct stream *s, struct archive *a, const char *what, struct xp_error *err)
{
        const char *msg = image_libs.archive_error_string(a);

        if (s->error == -ECANCELED)
                return xp_errorf(err, -ECANCELED, "cancelled");
        if (s->error < 0)
                return xp_errorf(err, s->error, "reading the layer: %s", strerror(-s->error));
        if (!msg && s->outer != a)
                msg = image_libs.archive_error_string(s->outer);
        return xp_errorf(err, -EBADMSG, "%s: %s", what, msg ? msg : "damaged or truncated");
}

static int open_outer(struct stream *s, struct xp_error *err)
{
        struct archive_entry *e;

        s->outer = image_libs.archive_read_new();
        if (!s->outer)
                return -ENOMEM;
        if (image_libs.archive_read_support_filter_gzip(s->outer) != ARCHIVE_OK ||
            image_libs.archive_read_support_filter_zstd(s->outer) != ARCHIVE_OK ||
            image_libs.archive_read_support_format_raw(s->outer) != ARCHIVE_OK)
                return xp_errorf(err,
                                 -ENOTSUP,
                                 "libarchive lacks gzip or zstd: %s",
                                 image_libs.archive_error_string(s->outer));
        if (image_libs.archive_read_open(s->outer, s, NULL, outer_read, NULL) != ARCHIVE_OK ||
            image_libs.archive_read_next_header(s->outer, &e) != ARCHIVE_OK)
                return stream_error(s, s->outer, "the layer's compression", err);
        return 0;
}

/* The tar's entries, one by one. */
static int unpack_entries(struct stream *s,
                          struct xp_unpack_state *st,
                          struct archive *inner,
                          struct xp_error *err)
{
        struct archive_entry *e;
        int r;

        if (image_libs.archive_read_support_format_tar(inner) != ARCHIVE_OK ||
            image_libs.archive_read_open(inner, s, NULL, inner_read, NULL) != ARCHIVE_OK)
                return stream_error(s, inner, "the layer's tar", err);
        for (;;) {
                r = image_libs.archive_read_next_header(inner, &e);
                if (r == ARCHIVE_EOF)
                        return 0;
                if (r != ARCHIVE_OK && r != ARCHIVE_WARN)
                        return stream_error(s, inner, "the layer's tar", err);
                if (s->cancel && atomic_load(s->cancel))
                        return xp_errorf(err, -ECANCELED, "cancelled");
                r = xp_unpack_entry(st, inner, e, err);
                if (r < 0)
                        return r;
        }
}

/* The rest of the stream after the tar's end: hashed too (the diff_id covers every byte). */
static int drain(struct stream *s, struct xp_error *err)
{
        while (!s->eof) {
                const void *buf;

                if (next_block(s, &buf) < 0)
                        return stream_error(s, s->outer, "the layer's compression", err);
        }
        /* and what follows the compressed stream */
        for (;;) {
                const void *buf;
                la_ssize_t n = outer_read(s->outer, s, &buf);

                if (n < 0)
                        return stream_error(s, s->outer, "the layer", err);
                if (n == 0)
                        return 0;
        }
}

int xp_image_unpack(int fd,
                    int root_fd,
                    bool untrusted,
                    const atomic_bool *cancel,
                    struct xp_image_unpacked *ret,
                    struct xp_error *err)
{
        struct xp_unpack_state st = {
            .root_fd = root_fd, .untrusted = untrusted, .root = geteuid() == 0};
        struct stream *s = calloc(1, sizeof(*s));
        struct archive *inner = NULL;
        int r;

        r = image_archive_load(err);
        if (r < 0 || !s) {
                free(s);
                return r < 0 ? r : -ENOMEM;
        }
        s->fd = fd;
        s->cancel = cancel;
        if (xp_sha256_init(&s->blob) < 0 || xp_sha256_init(&s->tar) < 0) {
                r = -ENOMEM;
                goto out;
        }
        r = open_outer(s, err);
        if (r >= 0) {
                inner = image_libs.archive_read_new();
                r = inner ? unpack_entries(s, &st, inner, err) : -ENOMEM;
        }
        if (r >= 0)
                r = drain(s, err);
        if (r >= 0) {
                *ret = (struct xp_image_unpacked){
                    .size = st.size, .read = s->read, .stripped = st.stripped};
                xp_sha256_final(&s->blob, ret->blob_digest);
                xp_sha256_final(&s->tar, ret->diff_id);
        }
out:
        if (inner)
                image_libs.archive_read_free(inner);
        if (s->outer)
                image_libs.archive_read_free(s->outer);
        if (s->blob.h)
                xp_sha256_final(&s->blob, s->in);
        if (s->tar.h)
                xp_sha256_final(&s->tar, s->in);
        free(s);
        return r;
}
