/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unpacking crafted layers (whiteouts, opaque directories, every way out of the layer root,
 * device nodes and setuid files of untrusted images, digests, damage) and the store around them
 * (layers made once under concurrency, nothing left by a failure, names, holds, rm, prune,
 * image garbage collection).
 */
#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cmocka.h>

#include "image/image_internal.h"
#include "tmpdir.h"

static int setup(void **state)
{
        return tmpdir_setup(state, "image", "store");
}

static int teardown(void **state)
{
        return tmpdir_teardown(state);
}

/* One entry of a crafted tar: kind f(ile) d(ir) l(symlink) h(ardlink) c(har device). */
struct entry {
        char kind;
        const char *name, *target;
        mode_t mode;
};

/* A tar (gzip when gz) of entries into buf; returns its size. */
static size_t make_tar(const struct entry *e, size_t n, bool gz, char *buf, size_t size)
{
        struct archive *a = archive_write_new();
        size_t used = 0;

        assert_non_null(a);
        archive_write_set_format_pax_restricted(a);
        if (gz)
                archive_write_add_filter_gzip(a);
        archive_write_set_bytes_in_last_block(a, 1);
        assert_int_equal(archive_write_open_memory(a, buf, size, &used), ARCHIVE_OK);
        for (size_t i = 0; i < n; i++) {
                struct archive_entry *ae = archive_entry_new();

                archive_entry_set_pathname(ae, e[i].name);
                archive_entry_set_mode(ae, e[i].mode ? e[i].mode : 0644);
                switch (e[i].kind) {
                case 'd':
                        archive_entry_set_filetype(ae, AE_IFDIR);
                        break;
                case 'l':
                        archive_entry_set_filetype(ae, AE_IFLNK);
                        archive_entry_set_symlink(ae, e[i].target);
                        break;
                case 'h':
                        archive_entry_set_filetype(ae, AE_IFREG);
                        archive_entry_set_hardlink(ae, e[i].target);
                        break;
                case 'c':
                        archive_entry_set_filetype(ae, AE_IFCHR);
                        archive_entry_set_rdev(ae, makedev(8, 0));
                        break;
                default:
                        archive_entry_set_filetype(ae, AE_IFREG);
                        archive_entry_set_size(ae, 2);
                }
                assert_int_equal(archive_write_header(a, ae), ARCHIVE_OK);
                if (e[i].kind == 'f')
                        assert_int_equal(archive_write_data(a, "hi", 2), 2);
                archive_entry_free(ae);
        }
        assert_int_equal(archive_write_close(a), ARCHIVE_OK);
        archive_write_free(a);
        return used;
}

/* Unpacks buf into DIR/name (made empty) and returns the result. */
static int unpack_buf(struct tmpdir *t,
                      const char *name,
                      const char *buf,
                      size_t size,
                      bool untrusted,
                      struct xp_image_unpacked *u,
                      struct xp_error *err)
{
        char dir[256], path[256];
        int fd, root, r;

        snprintf(dir, sizeof(dir), "%s/%s", t->dir, name);
        assert_int_equal(mkdir(dir, 0755), 0);
        snprintf(path, sizeof(path), "%s/%s.tar", t->dir, name);
        fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, buf, size), (ssize_t)size);
        assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
        root = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        r = xp_image_unpack(fd, root, untrusted, NULL, u, err);
        close(root);
        close(fd);
        return r;
}

static void whiteouts(void **state)
{
        struct tmpdir *t = *state;
        static const struct entry e[] = {
            {'d', "a/", NULL, 0755},
            {'f', "a/file", NULL, 0},
            {'f', "a/.wh..wh..opq", NULL, 0},
            {'f', ".wh.gone", NULL, 0},
            {'f', "/abs/file", NULL, 0},
            {'f', "./dot/./file", NULL, 0},
            {'l', "link", "/etc/passwd", 0},
            {'h', "hard", "a/file", 0},
        };
        static char buf[65536];
        struct xp_image_unpacked u;
        struct xp_error err = {0};
        char path[256], value[32] = "";
        struct stat st;
        size_t n;

        if (geteuid() != 0)
                skip(); /* whiteouts are 0:0 devices and opaque marks trusted.* xattrs: root */
        n = make_tar(e, XP_ELEMENTSOF(e), false, buf, sizeof(buf));
        if (unpack_buf(t, "w", buf, n, false, &u, &err) < 0)
                fail_msg("%s", err.msg);
        snprintf(path, sizeof(path), "%s/w/gone", t->dir);
        assert_int_equal(lstat(path, &st), 0);
        assert_true(S_ISCHR(st.st_mode) && st.st_rdev == makedev(0, 0));
        snprintf(path, sizeof(path), "%s/w/a", t->dir);
        assert_int_equal(getxattr(path, "trusted.overlay.opaque", value, sizeof(value)), 1);
        assert_int_equal(value[0], 'y');
        snprintf(path, sizeof(path), "%s/w/a/.wh..wh..opq", t->dir);
        assert_int_equal(access(path, F_OK), -1);
        snprintf(path, sizeof(path), "%s/w/abs/file", t->dir);
        assert_int_equal(access(path, F_OK), 0);
        snprintf(path, sizeof(path), "%s/w/dot/file", t->dir);
        assert_int_equal(access(path, F_OK), 0);
        /* an absolute symlink is kept as it is: it is resolved in the container, never here */
        snprintf(path, sizeof(path), "%s/w/link", t->dir);
        assert_int_equal(readlink(path, value, sizeof(value)), 11);
        snprintf(path, sizeof(path), "%s/w/hard", t->dir);
        assert_int_equal(stat(path, &st), 0);
        assert_int_equal(st.st_nlink, 2);
        assert_int_equal(u.size, 3 * 2); /* three files; whiteouts and the hard link are no data */
}

static void escapes(void **state)
{
        struct tmpdir *t = *state;
        static const struct {
                struct entry e[2];
                const char *error;
        } cases[] = {
            {{{'f', "../escaped", NULL, 0}},
             "entry \"../escaped\": '..' leads out of the layer root"},
            {{{'f', "a/../../escaped", NULL, 0}}, "'..' leads out"},
            {{{'l', "evil", "/tmp", 0}, {'f', "evil/escaped", NULL, 0}},
             "entry \"evil/escaped\": its path leads out of the layer root through a symbolic link"},
            {{{'l', "up", "../../../..", 0}, {'f', "up/escaped", NULL, 0}},
             "through a symbolic link"},
            {{{'h', "hard", "../../../../etc/passwd", 0}},
             "entry \"hard\": hard link: entry \"../../../../etc/passwd\": '..' leads out"},
            {{{'h', "hard", "/etc/passwd", 0}},
             "a hard link to \"/etc/passwd\", which the layer does not hold"},
        };
        static char buf[65536];

        for (size_t i = 0; i < XP_ELEMENTSOF(cases); i++) {
                struct xp_image_unpacked u;
                struct xp_error err = {0};
                char name[16], outside[256];
                size_t n =
                    make_tar(cases[i].e, cases[i].e[1].name ? 2 : 1, false, buf, sizeof(buf));
                int r;

                snprintf(name, sizeof(name), "e%zu", i);
                r = unpack_buf(t, name, buf, n, false, &u, &err);
                if (r >= 0 || !strstr(err.msg, cases[i].error))
                        fail_msg("case %zu: %d \"%s\" lacks \"%s\"", i, r, err.msg, cases[i].error);
                snprintf(outside, sizeof(outside), "%s/escaped", t->dir);
                assert_int_equal(access(outside, F_OK), -1);
                assert_int_equal(access("/tmp/escaped", F_OK), -1);
        }
}

static void untrusted(void **state)
{
        struct tmpdir *t = *state;
        static const struct entry dev[] = {{'c', "dev/sda", NULL, 0600}};
        static const struct entry suid[] = {{'f', "su", NULL, 04755}, {'f', "sg", NULL, 02755}};
        static char buf[65536];
        struct xp_image_unpacked u;
        struct xp_error err = {0};
        char path[256];
        struct stat st;
        size_t n;

        n = make_tar(dev, 1, false, buf, sizeof(buf));
        assert_int_equal(unpack_buf(t, "dev", buf, n, true, &u, &err), -EPERM);
        assert_non_null(strstr(
            err.msg, "entry \"dev/sda\": a character device node (8:0) in an untrusted image"));
        if (geteuid() == 0) {
                assert_int_equal(unpack_buf(t, "dev-trusted", buf, n, false, &u, &err), 0);
                snprintf(path, sizeof(path), "%s/dev-trusted/dev/sda", t->dir);
                assert_int_equal(lstat(path, &st), 0);
                assert_true(S_ISCHR(st.st_mode));
        }
        n = make_tar(suid, 2, false, buf, sizeof(buf));
        assert_int_equal(unpack_buf(t, "suid", buf, n, true, &u, &err), 0);
        assert_int_equal(u.stripped, 2);
        snprintf(path, sizeof(path), "%s/suid/su", t->dir);
        assert_int_equal(stat(path, &st), 0);
        assert_int_equal(st.st_mode & 07777, 0755);
        assert_int_equal(unpack_buf(t, "suid-trusted", buf, n, false, &u, &err), 0);
        snprintf(path, sizeof(path), "%s/suid-trusted/su", t->dir);
        assert_int_equal(stat(path, &st), 0);
        assert_int_equal(st.st_mode & 07777, 04755);
}

static void digests_and_damage(void **state)
{
        struct tmpdir *t = *state;
        static const struct entry e[] = {{'f', "a", NULL, 0}, {'f', "b", NULL, 0}};
        static char tar[65536], gz[65536];
        char want_tar[XP_IMAGE_DIGEST_BUFSIZE], want_gz[XP_IMAGE_DIGEST_BUFSIZE];
        struct xp_image_unpacked u;
        struct xp_error err = {0};
        size_t n_tar = make_tar(e, 2, false, tar, sizeof(tar)),
               n_gz = make_tar(e, 2, true, gz, sizeof(gz));

        assert_int_equal(xp_sha256_digest(tar, n_tar, want_tar), 0);
        assert_int_equal(xp_sha256_digest(gz, n_gz, want_gz), 0);
        assert_int_equal(unpack_buf(t, "gz", gz, n_gz, false, &u, &err), 0);
        assert_string_equal(u.diff_id, want_tar);
        assert_string_equal(u.blob_digest, want_gz);
        assert_int_equal(u.read, n_gz);
        assert_int_equal(unpack_buf(t, "plain", tar, n_tar, false, &u, &err), 0);
        assert_string_equal(u.diff_id, want_tar);
        assert_string_equal(u.blob_digest, want_tar);
        assert_int_equal(unpack_buf(t, "cut", gz, n_gz / 2, false, &u, &err), -EBADMSG);
        assert_non_null(strstr(err.msg, "truncated"));
        assert_int_equal(
            unpack_buf(
                t, "junk", "this is no tar at all, not even close to one", 44, false, &u, &err),
            -EBADMSG);
}

/* ---- the store ------------------------------------------------------------------------------- */

struct fill_data {
        const char *tar;
        size_t size;
        int calls;
        bool fail, slow;
};

static int fill(int fs_fd, struct xp_image_unpacked *ret, void *userdata, struct xp_error *err)
{
        struct fill_data *f = userdata;
        char path[] = "/tmp/xpool-test-fill-XXXXXX";
        int fd = mkstemp(path), r;

        __atomic_add_fetch(&f->calls, 1, __ATOMIC_SEQ_CST);
        if (f->slow)
                usleep(200000);
        assert_true(fd >= 0);
        unlink(path);
        assert_int_equal(write(fd, f->tar, f->size), (ssize_t)f->size);
        lseek(fd, 0, SEEK_SET);
        r = xp_image_unpack(fd, fs_fd, false, NULL, ret, err);
        close(fd);
        return f->fail ? xp_errorf(err, -EIO, "made to fail") : r;
}

struct ensure_args {
        struct xp_image_store *s;
        const char *diff_id;
        struct fill_data *f;
        bool shared;
        int r;
};

static void *ensure_thread(void *userdata)
{
        struct ensure_args *a = userdata;
        uint64_t size = 0;

        a->r = xp_store_layer_ensure(
            a->s, a->diff_id, NULL, false, NULL, fill, a->f, &a->shared, &size, NULL);
        return NULL;
}

static size_t count_dir(const char *dir, const char *sub)
{
        char path[256];
        size_t n = 0;
        DIR *d;

        snprintf(path, sizeof(path), "%s/%s", dir, sub);
        d = opendir(path);
        assert_non_null(d);
        for (struct dirent *de; (de = readdir(d));)
                n += de->d_name[0] != '.';
        closedir(d);
        return n;
}

static void record_image_as(struct xp_image_store *s,
                            const char *diff_id,
                            const char *name,
                            bool untrusted,
                            struct xp_image **ret)
{
        char config[512], id[XP_IMAGE_DIGEST_BUFSIZE], manifest[XP_IMAGE_DIGEST_BUFSIZE];
        const char *names[] = {name};
        char *ids[] = {(char *)diff_id, NULL};
        struct xp_error err = {0};

        snprintf(
            config,
            sizeof(config),
            "{\"os\":\"linux\",\"architecture\":\"amd64\",\"config\":{\"Cmd\":[\"sh\"]},\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[\"%s\"]}}",
            diff_id);
        assert_int_equal(xp_sha256_digest(config, strlen(config), id), 0);
        assert_int_equal(xp_store_blob_put(s, id, config, strlen(config), &err), 0);
        assert_int_equal(xp_sha256_digest(name, strlen(name), manifest), 0);
        if (xp_store_record(s,
                            &(struct xp_store_record){.id = id,
                                                      .digest = manifest,
                                                      .manifest = manifest,
                                                      .names = names,
                                                      .n_names = 1,
                                                      .diff_ids = ids,
                                                      .n_layers = 1,
                                                      .size = 4,
                                                      .untrusted = untrusted},
                            ret,
                            &err) < 0)
                fail_msg("%s", err.msg);
}

static void
record_image(struct xp_image_store *s, const char *diff_id, const char *name, struct xp_image **ret)
{
        record_image_as(s, diff_id, name, false, ret);
}

static void store(void **state)
{
        struct tmpdir *t = *state;
        static const struct entry e[] = {{'f', "a", NULL, 0}, {'f', "b", NULL, 0}};
        static char tar[65536];
        struct fill_data f = {.tar = tar, .slow = true};
        char diff_id[XP_IMAGE_DIGEST_BUFSIZE], *lower;
        struct ensure_args a[2];
        pthread_t th[2];
        struct xp_image_store *s = NULL;
        struct xp_image *img = NULL, *got = NULL;
        struct xp_image_prune_result res = {0};
        struct xp_error err = {0};
        uint64_t size;
        bool shared;

        f.size = make_tar(e, 2, false, tar, sizeof(tar));
        assert_int_equal(xp_sha256_digest(tar, f.size, diff_id), 0);
        if (xp_image_store_open(t->path,
                                &(struct xp_image_store_config){
                                    .registries_file = NULL, .auth_file = "/nonexistent/auth.json"},
                                &s,
                                &err) != -ENOENT)
                fail_msg("a missing credentials file that was named: %s", err.msg);
        assert_int_equal(xp_image_store_open(t->path, NULL, &s, &err), 0);

        /* a fill that fails leaves nothing */
        f.fail = true;
        assert_int_equal(
            xp_store_layer_ensure(s, diff_id, NULL, false, NULL, fill, &f, &shared, &size, &err),
            -EIO);
        assert_int_equal(count_dir(t->path, "layers"), 0);
        assert_int_equal(count_dir(t->path, "tmp"), 0);
        f.fail = false;
        /* two at once: one fills, the other finds it made */
        f.calls = 0;
        for (int i = 0; i < 2; i++) {
                a[i] = (struct ensure_args){.s = s, .diff_id = diff_id, .f = &f};
                assert_int_equal(pthread_create(&th[i], NULL, ensure_thread, &a[i]), 0);
        }
        for (int i = 0; i < 2; i++)
                pthread_join(th[i], NULL);
        assert_int_equal(a[0].r, 0);
        assert_int_equal(a[1].r, 0);
        assert_int_equal(f.calls, 1);
        assert_true(a[0].shared != a[1].shared);
        /* a diff_id that does not match what was unpacked */
        assert_int_equal(
            xp_store_layer_ensure(
                s,
                "sha256:0000000000000000000000000000000000000000000000000000000000000000",
                NULL,
                false,
                NULL,
                fill,
                &f,
                &shared,
                &size,
                &err),
            -EILSEQ);
        assert_non_null(strstr(err.msg, "does not match the config's diff_id"));

        record_image(s, diff_id, "example.com/app:1", &img);
        assert_int_equal(img->n_layers, 1);
        lower = xp_image_lowerdir(img, true);
        assert_string_equal(lower + 64, "/fs");
        free(lower);
        assert_int_equal(xp_image_get(s, "example.com/app:1", &got, &err), 0);
        assert_string_equal(got->id, img->id);
        xp_image_free(got);
        assert_int_equal(xp_image_get(s, img->id + 7, &got, &err), 0); /* the ID without sha256: */
        xp_image_free(got);
        {
                char prefix[20];

                snprintf(prefix, sizeof(prefix), "%.12s", img->id + 7);
                assert_int_equal(xp_image_get(s, prefix, &got, &err), 0);
                xp_image_free(got);
        }
        assert_int_equal(xp_image_get(s, "example.com/other:1", &got, &err), -ENOENT);

        /* held: neither rm nor prune --all takes it */
        assert_int_equal(xp_image_hold(s, img->id, "container-1", &err), 0);
        assert_int_equal(xp_image_hold(s, img->id, "../evil", &err), -EINVAL);
        assert_int_equal(xp_image_remove(s, "example.com/app:1", &err), -EBUSY);
        assert_non_null(strstr(err.msg, "held by container-1"));
        assert_int_equal(xp_image_prune(s, true, &res, &err), 0);
        assert_int_equal(res.images, 0);
        assert_int_equal(count_dir(t->path, "layers"), 1);
        assert_int_equal(xp_image_release(s, "container-1", &err), 0);
        assert_int_equal(xp_image_remove(s, "example.com/app:1", &err), 0);
        assert_int_equal(count_dir(t->path, "layers"), 0);
        assert_int_equal(xp_image_hold(s, img->id, "container-1", &err), -ENOENT);
        xp_image_free(img);
        xp_image_store_free(s);
}

/* A hold that says what holds it: rm names that (a pod and container), not the holder's id. */
static void hold_names_its_pod(void **state)
{
        struct tmpdir *t = *state;
        static const struct entry e[] = {{'f', "a", NULL, 0}};
        static char tar[65536];
        struct fill_data f = {.tar = tar};
        char diff_id[XP_IMAGE_DIGEST_BUFSIZE];
        struct xp_image_store *s = NULL;
        struct xp_image *img = NULL;
        struct xp_error err = {0};
        uint64_t size;
        bool shared;

        f.size = make_tar(e, 1, false, tar, sizeof(tar));
        assert_int_equal(xp_sha256_digest(tar, f.size, diff_id), 0);
        assert_int_equal(xp_image_store_open(t->path, NULL, &s, &err), 0);
        assert_int_equal(
            xp_store_layer_ensure(s, diff_id, NULL, false, NULL, fill, &f, &shared, &size, &err),
            0);
        record_image(s, diff_id, "example.com/app:1", &img);
        assert_int_equal(
            xp_image_hold_for(s, img->id, "f9a2769f_app", "pod default/web, container app", &err),
            0);
        assert_int_equal(xp_image_hold_for(s, img->id, "x", "two\nlines", &err), -EINVAL);
        assert_int_equal(xp_image_remove(s, "example.com/app:1", &err), -EBUSY);
        assert_non_null(strstr(err.msg, "held by pod default/web, container app)"));
        assert_null(strstr(err.msg, "f9a2769f"));
        assert_int_equal(xp_image_release(s, "f9a2769f_app", &err), 0);
        assert_int_equal(xp_image_remove(s, "example.com/app:1", &err), 0);
        xp_image_free(img);
        xp_image_store_free(s);
}

/* One image of one layer holding a file called file, named name: its ID into id. */
static void one_image(struct xp_image_store *s, const char *file, const char *name, char *id)
{
        struct entry e[] = {{'f', file, NULL, 0}};
        static char tar[65536];
        struct fill_data f = {.tar = tar};
        char diff_id[XP_IMAGE_DIGEST_BUFSIZE];
        struct xp_image *img = NULL;
        uint64_t size;
        bool shared;

        f.size = make_tar(e, 1, false, tar, sizeof(tar));
        assert_int_equal(xp_sha256_digest(tar, f.size, diff_id), 0);
        assert_int_equal(
            xp_store_layer_ensure(s, diff_id, NULL, false, NULL, fill, &f, &shared, &size, NULL),
            0);
        record_image(s, diff_id, name, &img);
        snprintf(id, XP_IMAGE_DIGEST_BUFSIZE, "%s", img->id);
        xp_image_free(img);
}

/* Image garbage collection: never used first, then the least recently used; never a held one,
 * nor one younger than the minimum age; it stops once it freed what was asked. */
static void garbage_collection(void **state)
{
        struct tmpdir *t = *state;
        char used[XP_IMAGE_DIGEST_BUFSIZE], never[XP_IMAGE_DIGEST_BUFSIZE],
            held[XP_IMAGE_DIGEST_BUFSIZE];
        struct xp_image_store *s = NULL;
        struct xp_image_gc_result res;
        struct xp_image *img = NULL;
        struct xp_error err = {0};

        assert_int_equal(xp_image_store_open(t->path, NULL, &s, &err), 0);
        one_image(s, "a", "example.com/used:1", used);
        one_image(s, "b", "example.com/never:1", never);
        one_image(s, "c", "example.com/held:1", held);
        assert_int_equal(xp_image_hold(s, used, "old-container", &err), 0);
        assert_int_equal(xp_image_release(s, "old-container", &err), 0);
        assert_int_equal(xp_image_hold(s, held, "running", &err), 0);
        assert_int_equal(count_dir(t->path, "used"), 2);
        /* all three were pulled just now: a minimum age of an hour keeps them */
        assert_int_equal(
            xp_image_gc(s,
                        &(struct xp_image_gc_options){.want_bytes = UINT64_MAX, .min_age_s = 3600},
                        &res,
                        &err),
            0);
        assert_int_equal(res.eligible, 0);
        assert_int_equal(res.images, 0);
        assert_int_equal(count_dir(t->path, "layers"), 3);
        /* one byte asked: the image never used goes, and only it */
        assert_int_equal(xp_image_gc(s, &(struct xp_image_gc_options){.want_bytes = 1}, &res, &err),
                         0);
        assert_int_equal(res.eligible, 2);
        assert_int_equal(res.images, 1);
        assert_true(res.bytes > 0);
        assert_int_equal(xp_image_get(s, "example.com/never:1", &img, &err), -ENOENT);
        assert_int_equal(xp_image_get(s, "example.com/used:1", &img, &err), 0);
        xp_image_free(img);
        assert_int_equal(count_dir(t->path, "layers"), 2);
        /* an image a pod of the node names stays, even when no container holds it now */
        {
                const char *const pods[] = {"example.com/used:1"};

                assert_int_equal(xp_image_gc(s,
                                             &(struct xp_image_gc_options){.want_bytes = UINT64_MAX,
                                                                           .in_use = pods,
                                                                           .n_in_use = 1},
                                             &res,
                                             &err),
                                 0);
                assert_int_equal(res.eligible, 0);
                assert_int_equal(res.images, 0);
        }
        /* all it can: the used one too, never the held one */
        assert_int_equal(
            xp_image_gc(s, &(struct xp_image_gc_options){.want_bytes = UINT64_MAX}, &res, &err), 0);
        assert_int_equal(res.images, 1);
        assert_int_equal(xp_image_get(s, "example.com/used:1", &img, &err), -ENOENT);
        assert_int_equal(xp_image_get(s, "example.com/held:1", &img, &err), 0);
        xp_image_free(img);
        assert_int_equal(count_dir(t->path, "layers"), 1);
        assert_int_equal(count_dir(t->path, "used"), 1); /* the removed image's mark went too */
        assert_int_equal(xp_image_release(s, "running", &err), 0);
        xp_image_store_free(s);
}

/* A trusted and an untrusted record of one image (dropping an image drops every record of it): a
 * pod naming either keeps both, and the image is counted once. */
static void garbage_collection_shared_id(void **state)
{
        struct tmpdir *t = *state;
        struct entry e[] = {{'f', "a", NULL, 0}};
        static char tar[65536];
        struct fill_data f = {.tar = tar};
        char diff_id[XP_IMAGE_DIGEST_BUFSIZE];
        const char *const pods[] = {"example.com/app:2"};
        struct xp_image_store *s = NULL;
        struct xp_image_gc_result res;
        struct xp_image *img = NULL;
        struct xp_error err = {0};
        uint64_t size;
        bool shared;

        assert_int_equal(xp_image_store_open(t->path, NULL, &s, &err), 0);
        f.size = make_tar(e, 1, false, tar, sizeof(tar));
        assert_int_equal(xp_sha256_digest(tar, f.size, diff_id), 0);
        assert_int_equal(
            xp_store_layer_ensure(s, diff_id, NULL, false, NULL, fill, &f, &shared, &size, NULL),
            0);
        record_image_as(s, diff_id, "example.com/app:1", false, NULL);
        record_image_as(s, diff_id, "example.com/app:2", true, NULL);
        assert_int_equal(xp_image_gc(s,
                                     &(struct xp_image_gc_options){
                                         .want_bytes = UINT64_MAX, .in_use = pods, .n_in_use = 1},
                                     &res,
                                     &err),
                         0);
        assert_int_equal(res.eligible, 0);
        assert_int_equal(res.images, 0);
        assert_int_equal(xp_image_get(s, "example.com/app:2", &img, &err), 0);
        xp_image_free(img);
        /* unused: one image, both records gone */
        assert_int_equal(
            xp_image_gc(s, &(struct xp_image_gc_options){.want_bytes = UINT64_MAX}, &res, &err), 0);
        assert_int_equal(res.eligible, 1);
        assert_int_equal(res.images, 1);
        assert_int_equal(xp_image_get(s, "example.com/app:1", &img, &err), -ENOENT);
        assert_int_equal(xp_image_get(s, "example.com/app:2", &img, &err), -ENOENT);
        xp_image_store_free(s);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test_setup_teardown(whiteouts, setup, teardown),
            cmocka_unit_test_setup_teardown(escapes, setup, teardown),
            cmocka_unit_test_setup_teardown(untrusted, setup, teardown),
            cmocka_unit_test_setup_teardown(digests_and_damage, setup, teardown),
            cmocka_unit_test_setup_teardown(store, setup, teardown),
            cmocka_unit_test_setup_teardown(hold_names_its_pod, setup, teardown),
            cmocka_unit_test_setup_teardown(garbage_collection, setup, teardown),
            cmocka_unit_test_setup_teardown(garbage_collection_shared_id, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
