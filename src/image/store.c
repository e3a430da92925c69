/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The store's directory and its index (refs.json: every image with its names, layers and size),
 * lookups, holds. Layout, locks and what each holds: include/xpool/image.h, docs/images.md.
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
#include "xpool/datadir.h"
#include "xpool/fileio.h"

#define REFS_MAX   (64u * 1024 * 1024)
#define HOLDER_MAX 200

static const char *const subdirs[] = {
    "blobs", "blobs/sha256", "layers", "locks", "holds", "used", "tmp"};

int xp_store_lock(struct xp_image_store *s, bool exclusive, bool nonblock)
{
        int fd = openat(s->dir_fd, "lock", O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);

        if (fd < 0)
                return -errno;
        while (flock(fd, (exclusive ? LOCK_EX : LOCK_SH) | (nonblock ? LOCK_NB : 0)) < 0) {
                int r = -errno;

                if (r == -EINTR)
                        continue;
                close(fd);
                return r;
        }
        return fd;
}

int xp_store_refs_lock(struct xp_image_store *s)
{
        int fd = openat(s->dir_fd, "refs.lock", O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);

        if (fd < 0)
                return -errno;
        while (flock(fd, LOCK_EX) < 0)
                if (errno != EINTR) {
                        int r = -errno;

                        close(fd);
                        return r;
                }
        return fd;
}

int xp_store_refs_open(struct xp_image_store *s, json_t **ret, struct xp_error *err)
{
        int lock = xp_store_refs_lock(s), r;

        if (lock < 0)
                return xp_errorf(err, lock, "the image store's lock: %s", strerror(-lock));
        r = xp_store_refs_load(s, ret, err);
        if (r < 0) {
                close(lock);
                return r;
        }
        return lock;
}

int xp_store_refs_load(struct xp_image_store *s, json_t **ret, struct xp_error *err)
{
        _cleanup_close_ int fd = openat(s->dir_fd, "refs.json", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        _cleanup_free_ char *data = NULL;
        json_error_t jerr;
        size_t size = 0;
        json_t *refs;
        int r;

        if (fd < 0 && errno == ENOENT) {
                *ret = json_pack("{s:[]}", "images");
                return *ret ? 0 : -ENOMEM;
        }
        if (fd < 0)
                return xp_errorf(err, -errno, "%s/refs.json: %m", s->dir);
        r = xp_read_fd_all(fd, REFS_MAX, &data, &size);
        if (r < 0)
                return xp_errorf(err, r, "reading %s/refs.json: %s", s->dir, strerror(-r));
        refs = json_loadb(data, size, 0, &jerr);
        if (!refs || !json_is_array(json_object_get(refs, "images"))) {
                json_decref(refs);
                return xp_errorf(err,
                                 -EBADMSG,
                                 "%s/refs.json: damaged (line %d: %s)",
                                 s->dir,
                                 jerr.line,
                                 refs ? "no images array" : jerr.text);
        }
        *ret = refs;
        return 0;
}

int xp_store_refs_save(struct xp_image_store *s, json_t *refs, struct xp_error *err)
{
        _cleanup_free_ char *text = json_dumps(refs, JSON_INDENT(1)), *path = NULL;

        if (!text || asprintf(&path, "%s/refs.json", s->dir) < 0)
                return -ENOMEM;
        return xp_write_file_atomic(path, text, strlen(text), 0600, err);
}

/* Empties tmp/ when no other process is pulling (nothing there is anyone's any more). */
static void clean_tmp(struct xp_image_store *s)
{
        _cleanup_close_ int lock = xp_store_lock(s, true, true);
        _cleanup_close_ int tmp = -1;
        struct dirent *de;
        DIR *d;

        if (lock < 0)
                return;
        tmp = openat(s->dir_fd, "tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        d = tmp >= 0 ? fdopendir(tmp) : NULL;
        if (!d)
                return;
        tmp = -1;
        while ((de = readdir(d)))
                if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
                        (void)xp_remove_tree_at(dirfd(d), de->d_name);
        closedir(d);
}

static int
read_auth(struct xp_image_store *s, const char *path, bool must_exist, struct xp_error *err)
{
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        struct xp_image_cred probe = {0};
        int r;

        if (fd < 0 && errno == ENOENT && !must_exist)
                return 0;
        if (fd < 0)
                return xp_errorf(err, -errno, "cannot open the credentials file %s: %m", path);
        r = xp_read_fd_all(fd, 1024 * 1024, &s->auth_text, &s->auth_size);
        if (r < 0)
                return xp_errorf(
                    err, r, "cannot read the credentials file %s: %s", path, strerror(-r));
        /* a file that does not parse is said at open, not at the first pull */
        r = xp_image_auth_lookup(s->auth_text, s->auth_size, "", "", &probe, err);
        xp_image_cred_done(&probe);
        return r < 0 ? xp_error_prefix(err, r, "%s", path) : 0;
}

static int open_dirs(struct xp_image_store *s, struct xp_error *err)
{
        int r = xp_datadir_make(s->dir, err);

        if (r < 0)
                return r;
        s->dir_fd = open(s->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (s->dir_fd < 0)
                return xp_errorf(err, -errno, "cannot open the image store %s: %m", s->dir);
        for (size_t i = 0; i < XP_ELEMENTSOF(subdirs); i++)
                if (mkdirat(s->dir_fd, subdirs[i], 0700) < 0 && errno != EEXIST)
                        return xp_errorf(err, -errno, "cannot make %s/%s: %m", s->dir, subdirs[i]);
        return 0;
}

int xp_image_store_open(const char *dir,
                        const struct xp_image_store_config *config,
                        struct xp_image_store **ret,
                        struct xp_error *err)
{
        const struct xp_image_store_config none = {0};
        const struct xp_image_store_config *c = config ? config : &none;
        _cleanup_(xp_image_store_freep) struct xp_image_store *s = calloc(1, sizeof(*s));
        int r;

        if (!s)
                return -ENOMEM;
        s->dir_fd = -1;
        s->dir = strdup(dir);
        if (!s->dir || asprintf(&s->layers_dir, "%s/layers", dir) < 0)
                return -ENOMEM;
        r = xp_image_platform_parse(
            c->platform ? c->platform : xp_image_platform_host(), &s->platform, err);
        if (r < 0)
                return r;
        r = open_dirs(s, err);
        if (r < 0)
                return r;
        r = xp_regconf_load(c->registries_file ? c->registries_file : XP_IMAGE_REGISTRIES_DEFAULT,
                            c->registries_file != NULL,
                            &s->conf,
                            err);
        if (r < 0)
                return r;
        r = read_auth(
            s, c->auth_file ? c->auth_file : XP_IMAGE_AUTH_DEFAULT, c->auth_file != NULL, err);
        if (r < 0)
                return r;
        clean_tmp(s);
        *ret = TAKE_PTR(s);
        return 0;
}

void xp_image_store_free(struct xp_image_store *s)
{
        if (!s)
                return;
        if (s->dir_fd >= 0)
                close(s->dir_fd);
        xp_regconf_free(s->conf);
        if (s->auth_text)
                explicit_bzero(s->auth_text, s->auth_size);
        free(s->auth_text);
        free(s->dir);
        free(s->layers_dir);
        free(s);
}

const char *xp_image_store_layers_dir(const struct xp_image_store *s)
{
        return s->layers_dir;
}
