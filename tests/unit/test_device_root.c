/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Files below the discovery root (src/device/root.c), on small trees written to a temporary
 * directory.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "device/backend.h"
#include "xpool/macro.h"

struct fixture {
        char root[256];
        struct xp_discovery_config config;
        struct xp_discovery d;
};

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
        (void)st;
        (void)flag;
        (void)ftw;
        return remove(path);
}

static int setup(void **state)
{
        struct fixture *f = calloc(1, sizeof(*f));
        const char *tmp = getenv("TMPDIR");

        if (!f)
                return -1;
        snprintf(f->root, sizeof(f->root), "%s/xpool-root-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(f->root)) {
                free(f);
                return -1;
        }
        f->config.root = f->root;
        f->d.config = &f->config;
        f->d.root_fd = open(f->root, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (f->d.root_fd < 0) {
                rmdir(f->root);
                free(f);
                return -1;
        }
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        struct fixture *f = *state;

        close(f->d.root_fd);
        nftw(f->root, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
        free(f);
        return 0;
}

static void full_path(struct fixture *f, const char *path, char *buf, size_t size)
{
        snprintf(buf, size, "%s/%s", f->root, path);
}

/* Writes len bytes of content to root/path, creating the directories on the way. */
static void put_mem(struct fixture *f, const char *path, const char *content, size_t len)
{
        char full[1024];
        FILE *file;

        full_path(f, path, full, sizeof(full));
        for (char *slash = strchr(full + strlen(f->root) + 1, '/'); slash;
             slash = strchr(slash + 1, '/')) {
                *slash = '\0';
                if (mkdir(full, 0755) < 0 && errno != EEXIST)
                        fail_msg("mkdir %s: %s", full, strerror(errno));
                *slash = '/';
        }
        file = fopen(full, "we");
        if (!file)
                fail_msg("creating %s: %s", full, strerror(errno));
        assert_int_equal(fwrite(content, 1, len, file), len);
        assert_int_equal(fclose(file), 0);
}

static void put(struct fixture *f, const char *path, const char *content)
{
        put_mem(f, path, content, strlen(content));
}

static void put_link(struct fixture *f, const char *path, const char *target)
{
        char full[1024];

        put(f, path, ""); /* the directories */
        full_path(f, path, full, sizeof(full));
        assert_int_equal(unlink(full), 0);
        assert_int_equal(symlink(target, full), 0);
}

/* ---- xp_root_read ---------------------------------------------------------------------------- */

static void read_trims_trailing_whitespace(void **state)
{
        struct fixture *f = *state;
        char *text = NULL;

        put(f, "sys/class/x/name", "  NVIDIA H100 \n\t\n");
        assert_int_equal(xp_root_read(&f->d, "sys/class/x/name", &text), 0);
        assert_string_equal(text, "  NVIDIA H100"); /* leading whitespace stays */
        free(text);

        /* a leading '/' is tolerated: paths are always below the root */
        assert_int_equal(xp_root_read(&f->d, "/sys/class/x/name", &text), 0);
        assert_string_equal(text, "  NVIDIA H100");
        free(text);

        put(f, "empty", "");
        assert_int_equal(xp_root_read(&f->d, "empty", &text), 0);
        assert_string_equal(text, "");
        free(text);

        put(f, "blank", "\n\n  \n");
        assert_int_equal(xp_root_read(&f->d, "blank", &text), 0);
        assert_string_equal(text, "");
        free(text);
}

static void read_errors(void **state)
{
        struct fixture *f = *state;
        char *text = (char *)"untouched";

        assert_int_equal(xp_root_read(&f->d, "missing", &text), -ENOENT);
        assert_string_equal(text, "untouched");
        assert_int_equal(xp_root_read(&f->d, "missing/dir/file", &text), -ENOENT);
        put(f, "dir/file", "x");
        assert_int_equal(xp_root_read(&f->d, "dir", &text), -EISDIR);
        assert_int_equal(xp_root_read(&f->d, "dir/file/below", &text), -ENOTDIR);
        assert_string_equal(text, "untouched");
}

/* Sizes around the buffer's growth steps read whole; past the limit is -EFBIG. */
static void read_sizes(void **state)
{
        struct fixture *f = *state;
        static const size_t sizes[] = {
            1, 4094, 4095, 4096, 4097, 8191, 8192, 65536, 512 * 1024, 1024 * 1024 - 1, 1024 * 1024};
        size_t big = 2 * 1024 * 1024;
        char *content = malloc(big);
        char *text = (char *)"untouched";

        assert_non_null(content);
        memset(content, 'a', big);
        for (size_t i = 0; i < XP_ELEMENTSOF(sizes); i++) {
                put_mem(f, "file", content, sizes[i]);
                assert_int_equal(xp_root_read(&f->d, "file", &text), 0);
                assert_int_equal(strlen(text), sizes[i]);
                free(text);
        }

        text = (char *)"untouched";
        put_mem(f, "file", content, 1024 * 1024 + 1);
        assert_int_equal(xp_root_read(&f->d, "file", &text), -EFBIG);
        put_mem(f, "file", content, big);
        assert_int_equal(xp_root_read(&f->d, "file", &text), -EFBIG);
        assert_string_equal(text, "untouched");
        free(content);
}

/* ---- numbers --------------------------------------------------------------------------------- */

static void read_u64(void **state)
{
        static const struct {
                const char *text;
                uint64_t value;
        } good[] = {
            {"0", 0},
            {"42\n", 42},
            {"0x1f", 31},
            {"0X1F\n", 31},
            {"0x10de", 0x10de},
            {"0x030200", 0x030200},
            {"18446744073709551615", UINT64_MAX},
            {"0xffffffffffffffff", UINT64_MAX},
            {"010", 10}, /* decimal, never octal */
        };
        static const char *const bad[] = {
            "",
            "\n",
            "-1",
            "abc",
            "12abc",
            "4 2",
            "0x",
            "0xg",
            "18446744073709551616",
            "1.5",
            " -5", /* no sign hidden behind blanks */
            " 5",
            "+5",
        };
        struct fixture *f = *state;
        uint64_t v;

        for (size_t i = 0; i < XP_ELEMENTSOF(good); i++) {
                put(f, "n", good[i].text);
                v = 7;
                assert_int_equal(xp_root_read_u64(&f->d, "n", &v), 0);
                assert_int_equal(v, good[i].value);
        }
        for (size_t i = 0; i < XP_ELEMENTSOF(bad); i++) {
                put(f, "n", bad[i]);
                v = 7;
                if (xp_root_read_u64(&f->d, "n", &v) != -EINVAL)
                        fail_msg("\"%s\" was accepted as a u64", bad[i]);
                assert_int_equal(v, 7); /* untouched */
        }
        assert_int_equal(xp_root_read_u64(&f->d, "missing", &v), -ENOENT);
        assert_int_equal(v, 7);
}

static void read_i64(void **state)
{
        static const struct {
                const char *text;
                int64_t value;
        } good[] = {
            {"0", 0},
            {"-1\n", -1},
            {"42", 42},
            {"0x10", 16},
            {"-0x10", -16},
            {"-010", -10},
            {"9223372036854775807", INT64_MAX},
            {"-9223372036854775808", INT64_MIN},
        };
        static const char *const bad[] = {
            "",
            "\n",
            "abc",
            "12abc",
            "- 1",
            "0x",
            "9223372036854775808",
            "-9223372036854775809",
        };
        struct fixture *f = *state;
        int64_t v;

        for (size_t i = 0; i < XP_ELEMENTSOF(good); i++) {
                put(f, "n", good[i].text);
                v = 7;
                assert_int_equal(xp_root_read_i64(&f->d, "n", &v), 0);
                assert_int_equal(v, good[i].value);
        }
        for (size_t i = 0; i < XP_ELEMENTSOF(bad); i++) {
                put(f, "n", bad[i]);
                v = 7;
                if (xp_root_read_i64(&f->d, "n", &v) != -EINVAL)
                        fail_msg("\"%s\" was accepted as an i64", bad[i]);
                assert_int_equal(v, 7);
        }
        assert_int_equal(xp_root_read_i64(&f->d, "missing", &v), -ENOENT);
        assert_int_equal(v, 7);
}

/* ---- links, directories, existence ----------------------------------------------------------- */

static void readlink_target(void **state)
{
        struct fixture *f = *state;
        char *target = (char *)"untouched";

        put_link(f,
                 "sys/bus/pci/devices/0000:03:00.0",
                 "../../../devices/pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:00.0/0000:03:00.0");
        assert_int_equal(xp_root_readlink(&f->d, "sys/bus/pci/devices/0000:03:00.0", &target), 0);
        assert_string_equal(
            target,
            "../../../devices/pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:00.0/0000:03:00.0");
        free(target);

        /* dangling links read too: the target is what was written */
        put_link(f, "driver", "/nowhere");
        assert_int_equal(xp_root_readlink(&f->d, "/driver", &target), 0);
        assert_string_equal(target, "/nowhere");
        free(target);

        target = (char *)"untouched";
        put(f, "plain", "x");
        assert_int_equal(xp_root_readlink(&f->d, "plain", &target), -EINVAL);
        assert_int_equal(xp_root_readlink(&f->d, "missing", &target), -ENOENT);
        assert_string_equal(target, "untouched");
}

static void list_sorted(void **state)
{
        struct fixture *f = *state;
        static const char *const want[] = {
            "0000:03:00.0", "0000:0a:00.0", "0000:23:00.0", "cpu1", "cpu10", "cpu2", "online"};
        char **names = NULL;
        size_t n = 99;

        /* created out of order */
        put(f, "d/online", "");
        put(f, "d/cpu2/x", "");
        put(f, "d/0000:23:00.0", "");
        put(f, "d/cpu10/x", "");
        put(f, "d/0000:03:00.0", "");
        put_link(f, "d/cpu1", "cpu2");
        put(f, "d/0000:0a:00.0", "");
        assert_int_equal(xp_root_list(&f->d, "d", &names, &n), 0);
        assert_int_equal(n, XP_ELEMENTSOF(want));
        for (size_t i = 0; i < n; i++)
                assert_string_equal(names[i], want[i]); /* byte order, no "." or ".." */
        xp_strv_free(names, n);

        /* the root itself */
        assert_int_equal(xp_root_list(&f->d, "/", &names, &n), 0);
        assert_int_equal(n, 1);
        assert_string_equal(names[0], "d");
        xp_strv_free(names, n);
}

static void list_empty_and_errors(void **state)
{
        struct fixture *f = *state;
        char full[1024];
        char **names = (char **)"untouched";
        size_t n = 99;

        full_path(f, "empty", full, sizeof(full));
        assert_int_equal(mkdir(full, 0755), 0);
        assert_int_equal(xp_root_list(&f->d, "empty", &names, &n), 0);
        assert_int_equal(n, 0);
        xp_strv_free(names, n);

        names = (char **)"untouched";
        n = 99;
        assert_int_equal(xp_root_list(&f->d, "missing", &names, &n), -ENOENT);
        put(f, "file", "x");
        assert_int_equal(xp_root_list(&f->d, "file", &names, &n), -ENOTDIR);
        assert_ptr_equal(names, (char **)"untouched");
        assert_int_equal(n, 99);
        xp_strv_free(NULL, 0);
}

static void exists(void **state)
{
        struct fixture *f = *state;

        put(f, "sys/devices/system/cpu/online", "0-1");
        assert_true(xp_root_exists(&f->d, "sys/devices/system/cpu/online"));
        assert_true(xp_root_exists(&f->d, "sys/devices/system/cpu"));
        assert_true(xp_root_exists(&f->d, "/sys/devices/system/cpu"));
        assert_true(xp_root_exists(&f->d, "/"));
        assert_true(xp_root_exists(&f->d, ""));
        assert_false(xp_root_exists(&f->d, "sys/devices/system/node"));
        assert_false(xp_root_exists(&f->d, "sys/devices/system/cpu/online/x"));
        put_link(f, "sys/class/drm/card0", "../../devices/nowhere");
        assert_false(xp_root_exists(&f->d, "sys/class/drm/card0")); /* links are followed */
        put_link(f, "sys/class/drm/card1", "../../devices/system/cpu");
        assert_true(xp_root_exists(&f->d, "sys/class/drm/card1"));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test_setup_teardown(read_trims_trailing_whitespace, setup, teardown),
            cmocka_unit_test_setup_teardown(read_errors, setup, teardown),
            cmocka_unit_test_setup_teardown(read_sizes, setup, teardown),
            cmocka_unit_test_setup_teardown(read_u64, setup, teardown),
            cmocka_unit_test_setup_teardown(read_i64, setup, teardown),
            cmocka_unit_test_setup_teardown(readlink_target, setup, teardown),
            cmocka_unit_test_setup_teardown(list_sorted, setup, teardown),
            cmocka_unit_test_setup_teardown(list_empty_and_errors, setup, teardown),
            cmocka_unit_test_setup_teardown(exists, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
