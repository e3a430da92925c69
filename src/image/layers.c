/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The store's content: blobs (manifests, indexes, configs) under blobs/sha256/, unpacked layers
 * under layers/HEX[.untrusted]/ (fs/ and size), each written in tmp/ and renamed into place once
 * checked, so whatever is under blobs/ and layers/ is complete. A layer is filled by one
 * process or thread at a time: the flock of locks/NAME, which the others wait for.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "image_internal.h"
#include "xpool/atomic_file.h"
#include "xpool/fileio.h"

#define LOCK_POLL_MS 50

static int blob_path(struct xp_image_store *s, const char *digest, char **ret)
{
        return asprintf(ret, "%s/blobs/sha256/%s", s->dir, digest + 7) < 0 ? -ENOMEM : 0;
}

int xp_store_blob_put(struct xp_image_store *s,
                      const char *digest,
                      const void *data,
                      size_t size,
                      struct xp_error *err)
{
        _cleanup_free_ char *path = NULL;
        int r;

        r = xp_image_digest_check(data, size, digest, "the blob", err);
        if (r < 0)
                return r;
        if (blob_path(s, digest, &path) < 0)
                return -ENOMEM;
        if (access(path, F_OK) == 0)
                return 0;
        return xp_write_file_atomic(path, data, size, 0600, err);
}

int xp_store_blob_get(struct xp_image_store *s,
                      const char *digest,
                      size_t max,
                      char **ret,
                      size_t *ret_size,
                      struct xp_error *err)
{
        _cleanup_free_ char *path = NULL, *data = NULL;
        _cleanup_close_ int fd = -1;
        size_t size = 0;
        int r;

        if (!xp_image_digest_ok(digest))
                return xp_errorf(err, -EINVAL, "\"%s\" is not a digest", digest);
        if (blob_path(s, digest, &path) < 0)
                return -ENOMEM;
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return xp_errorf(err, -errno, "the store's blob %s: %m", digest);
        r = xp_read_fd_all(fd, max, &data, &size);
        if (r < 0)
                return xp_errorf(err, r, "reading the store's blob %s: %s", digest, strerror(-r));
        r = xp_image_digest_check(data, size, digest, "the store's blob", err);
        if (r < 0)
                return xp_error_prefix(
                    err, r, "%s: damaged (remove the image and pull it again)", path);
        *ret = TAKE_PTR(data);
        *ret_size = size;
        return 0;
}

void xp_store_layer_name(const char *diff_id, bool untrusted, char *buf, size_t size)
{
        snprintf(buf, size, "%s%s", diff_id + 7, untrusted ? ".untrusted" : "");
}

bool xp_store_layer_present(struct xp_image_store *s,
                            const char *diff_id,
                            bool untrusted,
                            uint64_t *ret_size)
{
        char name[96], path[128], text[32] = "";
        _cleanup_close_ int fd = -1;
        ssize_t n;

        xp_store_layer_name(diff_id, untrusted, name, sizeof(name));
        snprintf(path, sizeof(path), "layers/%s/size", name);
        fd = openat(s->dir_fd, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return false;
        n = read(fd, text, sizeof(text) - 1);
        if (ret_size)
                *ret_size = n > 0 ? strtoull(text, NULL, 10) : 0;
        return true;
}

int xp_store_tmpdir(struct xp_image_store *s, const char *prefix, char **ret, struct xp_error *err)
{
        char *path;

        if (asprintf(&path, "%s/tmp/%s-XXXXXX", s->dir, prefix) < 0)
                return -ENOMEM;
        if (!mkdtemp(path)) {
                int r = -errno;

                free(path);
                return xp_errorf(
                    err, r, "cannot make a directory in %s/tmp: %s", s->dir, strerror(-r));
        }
        *ret = path;
        return 0;
}

void xp_store_remove_path(const char *path)
{
        _cleanup_free_ char *copy = strdup(path);
        char *slash = copy ? strrchr(copy, '/') : NULL;
        _cleanup_close_ int parent = -1;

        if (!slash)
                return;
        *slash = '\0';
        parent = open(copy[0] ? copy : "/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (parent >= 0)
                (void)xp_remove_tree_at(parent, slash + 1);
}

/* Waits for the layer's lock, looking at *cancel every LOCK_POLL_MS. */
static int lock_layer(struct xp_image_store *s,
                      const char *name,
                      const atomic_bool *cancel,
                      struct xp_error *err)
{
        char path[128];
        int fd;

        snprintf(path, sizeof(path), "locks/%s", name);
        fd = openat(s->dir_fd, path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return xp_errorf(err, -errno, "the lock of layer %s: %m", name);
        while (flock(fd, LOCK_EX | LOCK_NB) < 0) {
                struct timespec ts = {.tv_nsec = LOCK_POLL_MS * 1000000L};

                if (errno != EWOULDBLOCK && errno != EINTR) {
                        int r = -errno;

                        close(fd);
                        return xp_errorf(err, r, "the lock of layer %s: %s", name, strerror(-r));
                }
                if (cancel && atomic_load(cancel)) {
                        close(fd);
                        return xp_errorf(err, -ECANCELED, "cancelled");
                }
                nanosleep(&ts, NULL);
        }
        return fd;
}

/* The layer made in tmp (fs/ filled), checked, sized and renamed into layers/name. */
static int commit_layer(struct xp_image_store *s,
                        const char *tmp,
                        const char *name,
                        const struct xp_image_unpacked *u,
                        struct xp_error *err)
{
        _cleanup_free_ char *size_path = NULL, *dest = NULL;
        _cleanup_close_ int fd = -1, layers_fd = -1;
        char text[32];
        int r;

        if (asprintf(&size_path, "%s/size", tmp) < 0 ||
            asprintf(&dest, "%s/%s", s->layers_dir, name) < 0)
                return -ENOMEM;
        snprintf(text, sizeof(text), "%" PRIu64 "\n", u->size);
        r = xp_write_file_atomic(size_path, text, strlen(text), 0600, err);
        if (r < 0)
                return r;
        /* what was written is on disk before the layer has its name: one syncfs for all files */
        fd = open(tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0 || syncfs(fd) < 0)
                return xp_errorf(err, -errno, "syncing the layer: %m");
        if (rename(tmp, dest) < 0)
                return xp_errorf(err, -errno, "renaming the layer into %s: %m", dest);
        layers_fd = open(s->layers_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (layers_fd >= 0)
                (void)fsync(layers_fd);
        return 0;
}

static int check_unpacked(const struct xp_image_unpacked *u,
                          const char *diff_id,
                          const char *blob_digest,
                          struct xp_error *err)
{
        if (blob_digest && strcmp(u->blob_digest, blob_digest) != 0)
                return xp_errorf(err,
                                 -EILSEQ,
                                 "layer %s does not match its digest: got %s",
                                 blob_digest,
                                 u->blob_digest);
        if (strcmp(u->diff_id, diff_id) != 0)
                return xp_errorf(
                    err,
                    -EILSEQ,
                    "layer %s: its content does not match the config's diff_id %s (got %s)",
                    blob_digest ? blob_digest : "",
                    diff_id,
                    u->diff_id);
        return 0;
}

/* Fills and commits the layer: the caller holds its lock. */
static int make_layer(struct xp_image_store *s,
                      const char *name,
                      const char *diff_id,
                      const char *blob_digest,
                      xp_store_layer_fill_fn fill,
                      void *userdata,
                      uint64_t *ret_size,
                      struct xp_error *err)
{
        _cleanup_free_ char *tmp = NULL, *fs = NULL;
        _cleanup_close_ int fs_fd = -1;
        struct xp_image_unpacked u = {0};
        int r;

        r = xp_store_tmpdir(s, "layer", &tmp, err);
        if (r < 0)
                return r;
        if (asprintf(&fs, "%s/fs", tmp) < 0)
                r = -ENOMEM;
        else if (mkdir(fs, 0755) < 0 || chmod(fs, 0755) < 0 ||
                 (fs_fd = open(fs, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
                r = xp_errorf(err, -errno, "cannot make %s: %m", fs);
        if (r >= 0)
                r = fill(fs_fd, &u, userdata, err);
        if (r >= 0)
                r = check_unpacked(&u, diff_id, blob_digest, err);
        if (r >= 0)
                r = commit_layer(s, tmp, name, &u, err);
        if (r < 0) {
                /* nothing half-written stays behind */
                xp_store_remove_path(tmp);
                return r;
        }
        *ret_size = u.size;
        return 0;
}

int xp_store_layer_ensure(struct xp_image_store *s,
                          const char *diff_id,
                          const char *blob_digest,
                          bool untrusted,
                          const atomic_bool *cancel,
                          xp_store_layer_fill_fn fill,
                          void *userdata,
                          bool *ret_shared,
                          uint64_t *ret_size,
                          struct xp_error *err)
{
        char name[96];
        int lock, r;

        *ret_shared = true;
        if (xp_store_layer_present(s, diff_id, untrusted, ret_size))
                return 0;
        xp_store_layer_name(diff_id, untrusted, name, sizeof(name));
        lock = lock_layer(s, name, cancel, err);
        if (lock < 0)
                return lock;
        /* whoever held the lock may have made it */
        if (xp_store_layer_present(s, diff_id, untrusted, ret_size)) {
                close(lock);
                return 0;
        }
        *ret_shared = false;
        r = make_layer(s, name, diff_id, blob_digest, fill, userdata, ret_size, err);
        close(lock);
        return r;
}
