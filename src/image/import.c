/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `xpool image import`: a tarball's members are written into a directory of tmp/ (regular files
 * under flattened names, links as hard links to what they point to within the tarball), then
 * read as an OCI image layout or a docker-archive (import_formats.c) with the checks of a pull.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "import.h"
#include "libs.h"

#define MEMBERS_MAX 100000
#define MEMBER_NAME 200

/* A member's name made flat ("blobs/sha256/HEX" -> "blobs#sha256#HEX"): -EPERM for '..'. */
int xp_import_flat_name(const char *name, char buf[static XP_IMPORT_NAME_MAX], struct xp_error *err)
{
        size_t len = 0;

        for (const char *p = name; *p;) {
                size_t n = strcspn(p, "/");

                if (n == 2 && p[0] == '.' && p[1] == '.')
                        return xp_errorf(
                            err, -EPERM, "member \"%s\": '..' leads out of the tarball", name);
                if (n > 0 && !(n == 1 && p[0] == '.')) {
                        if (len + n + 2 > XP_IMPORT_NAME_MAX || len + n + 1 > MEMBER_NAME)
                                return xp_errorf(
                                    err, -EBADMSG, "member \"%.64s...\": name too long", name);
                        if (len > 0)
                                buf[len++] = '#';
                        memcpy(buf + len, p, n);
                        len += n;
                }
                p += n + (p[n] == '/');
        }
        buf[len] = '\0';
        return 0;
}

static int write_member(struct archive *a, int dir_fd, const char *flat, struct xp_error *err)
{
        _cleanup_close_ int fd =
            openat(dir_fd, flat, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
        const void *buf;
        size_t len;
        la_int64_t off;
        int r;

        if (fd < 0)
                return xp_errorf(err, -errno, "writing member %s: %m", flat);
        while ((r = image_libs.archive_read_data_block(a, &buf, &len, &off)) == ARCHIVE_OK)
                if (pwrite(fd, buf, len, off) != (ssize_t)len)
                        return xp_errorf(err, errno ? -errno : -EIO, "writing member %s: %m", flat);
        if (r != ARCHIVE_EOF)
                return xp_errorf(err,
                                 -EBADMSG,
                                 "member %s: %s",
                                 flat,
                                 image_libs.archive_error_string(a) ?: "truncated");
        return 0;
}

/* A link member ("a/layer.tar" -> "../b/layer.tar"): a hard link to its target's copy. */
static int link_member(int dir_fd,
                       const char *name,
                       const char *target,
                       bool symbolic,
                       const char *flat,
                       struct xp_error *err)
{
        char joined[2 * XP_IMPORT_NAME_MAX], tflat[XP_IMPORT_NAME_MAX];
        const char *slash = strrchr(name, '/');
        int r;

        /* a symbolic link's target is relative to its directory, a hard link's to the root */
        if (symbolic && target[0] != '/' && slash)
                snprintf(joined, sizeof(joined), "%.*s/%s", (int)(slash - name), name, target);
        else
                snprintf(joined, sizeof(joined), "%s", target);
        /* "a/../b" is "b": resolve the dot-dots of the join lexically */
        for (char *dd; (dd = strstr(joined, "/../"));) {
                char *start = dd;

                while (start > joined && start[-1] != '/')
                        start--;
                memmove(start, dd + 4, strlen(dd + 4) + 1);
        }
        r = xp_import_flat_name(joined, tflat, err);
        if (r < 0)
                return r;
        if (linkat(dir_fd, tflat, dir_fd, flat, 0) < 0)
                return xp_errorf(err,
                                 errno == ENOENT ? -EBADMSG : -errno,
                                 "member \"%s\": a link to \"%s\", %s",
                                 name,
                                 target,
                                 errno == ENOENT ? "which the tarball does not hold before it"
                                                 : strerror(errno));
        return 0;
}

static int extract_one(struct archive *a, struct archive_entry *e, int dir_fd, struct xp_error *err)
{
        const char *name = image_libs.archive_entry_pathname(e),
                   *link = image_libs.archive_entry_hardlink(e);
        char flat[XP_IMPORT_NAME_MAX];
        int r;

        if (!name)
                return xp_errorf(err, -EBADMSG, "a member without a name");
        r = xp_import_flat_name(name, flat, err);
        if (r < 0 || !flat[0])
                return r;
        (void)unlinkat(dir_fd, flat, 0);
        if (link)
                return link_member(dir_fd, name, link, false, flat, err);
        if (image_libs.archive_entry_filetype(e) == AE_IFLNK)
                return link_member(
                    dir_fd, name, image_libs.archive_entry_symlink(e) ?: "", true, flat, err);
        if (image_libs.archive_entry_filetype(e) != AE_IFREG)
                return 0;
        return write_member(a, dir_fd, flat, err);
}

int xp_import_extract(const char *file, int dir_fd, struct xp_error *err)
{
        struct archive *a;
        struct archive_entry *e;
        int r = image_archive_load(err), n = 0;

        if (r < 0)
                return r;
        a = image_libs.archive_read_new();
        if (!a)
                return -ENOMEM;
        image_libs.archive_read_support_filter_gzip(a);
        image_libs.archive_read_support_filter_zstd(a);
        image_libs.archive_read_support_format_tar(a);
        if (image_libs.archive_read_open_filename(a, file, 128 * 1024) != ARCHIVE_OK) {
                r = xp_errorf(err,
                              -EBADMSG,
                              "%s: %s",
                              file,
                              image_libs.archive_error_string(a) ?: "not a tarball");
                goto out;
        }
        while (r >= 0) {
                int h = image_libs.archive_read_next_header(a, &e);

                if (h == ARCHIVE_EOF)
                        break;
                if ((h != ARCHIVE_OK && h != ARCHIVE_WARN) || ++n > MEMBERS_MAX) {
                        r = xp_errorf(err, -EBADMSG, "%s: %s", file, n > MEMBERS_MAX ? "more than 100000 members" : image_libs.archive_error_string(a) ?: "damaged");
                        break;
                }
                r = extract_one(a, e, dir_fd, err);
                if (r < 0)
                        xp_error_prefix(err, r, "%s", file);
        }
out:
        image_libs.archive_read_free(a);
        return r;
}

int xp_import_read(
    int dir_fd, const char *flat, size_t max, char **ret, size_t *ret_size, struct xp_error *err)
{
        _cleanup_close_ int fd = openat(dir_fd, flat, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        int r;

        if (fd < 0)
                return xp_errorf(
                    err, errno == ENOENT ? -EBADMSG : -errno, "the tarball has no %s", flat);
        r = xp_read_fd_all(fd, max, ret, ret_size);
        if (r < 0)
                return xp_errorf(err,
                                 r == -E2BIG ? -EBADMSG : r,
                                 "%s: %s",
                                 flat,
                                 r == -E2BIG ? "too large" : strerror(-r));
        return 0;
}

int xp_image_import(struct xp_image_store *s,
                    const char *file,
                    const struct xp_image_import_options *opts,
                    struct xp_image ***ret,
                    size_t *ret_n,
                    struct xp_error *err)
{
        const struct xp_image_import_options none = {0};
        struct xp_import im = {.s = s, .o = opts ? opts : &none, .dir_fd = -1};
        _cleanup_close_ int lock = -1;
        int r;

        lock = xp_store_lock(s, false, false);
        if (lock < 0)
                return xp_errorf(err, lock, "the image store's lock: %s", strerror(-lock));
        r = xp_store_tmpdir(s, "import", &im.dir, err);
        if (r < 0)
                return r;
        im.dir_fd = open(im.dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        r = im.dir_fd < 0 ? xp_errorf(err, -errno, "%s: %m", im.dir) : 0;
        if (r >= 0 && im.o->platform)
                r = xp_image_platform_parse(im.o->platform, &im.platform, err);
        else
                im.platform = s->platform;
        if (r >= 0)
                r = xp_import_extract(file, im.dir_fd, err);
        if (r >= 0)
                r = faccessat(im.dir_fd, "index.json", F_OK, 0) == 0 ? xp_import_oci(&im, err)
                                                                     : xp_import_docker(&im, err);
        if (r >= 0 && ret) {
                *ret = TAKE_PTR(im.images);
                *ret_n = im.n_images;
        }
        xp_image_list_free(im.images, im.n_images);
        if (im.dir_fd >= 0)
                close(im.dir_fd);
        xp_store_remove_path(im.dir);
        free(im.dir);
        return r;
}
