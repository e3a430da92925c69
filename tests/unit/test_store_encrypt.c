/* SPDX-License-Identifier: Apache-2.0 */
/* The store's encryption at rest (src/store/envelope.c, keys.c, reencrypt.c). */
#include <errno.h>
#include <fcntl.h>
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

#include "xpool/macro.h"
#include "xpool/store.h"
#include "xpool/storekeys.h"

#define VALUE "c2VjcmV0LXZhbHVlLTQy" /* base64 of secret-value-42 */

struct fixture {
        char dir[64];
        char path[128];
        char keys_path[128];
        struct xp_store_keys *keys;
};

static struct xp_store *open_with(struct fixture *f, const struct xp_store_keys *keys)
{
        struct xp_store_options o = {
            .path = f->path, .keys = keys, .encrypted_kinds = XP_STORE_ENCRYPTED_KINDS};
        struct xp_error err = {0};
        struct xp_store *store = NULL;

        if (xp_store_open(&o, &store, &err) < 0)
                fail_msg("open %s: %s", f->path, err.msg);
        return store;
}

static int setup(void **state)
{
        struct fixture *f = calloc(1, sizeof(*f));
        struct xp_error err = {0};

        assert_non_null(f);
        snprintf(f->dir, sizeof(f->dir), "/tmp/xpool-enc-XXXXXX");
        assert_non_null(mkdtemp(f->dir));
        snprintf(f->path, sizeof(f->path), "%s/state.db", f->dir);
        snprintf(f->keys_path, sizeof(f->keys_path), "%s/encryption.keys", f->dir);
        assert_int_equal(xp_store_keys_load(f->keys_path, true, &f->keys, &err), 0);
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        struct fixture *f = *state;
        char cmd[128];

        xp_store_keys_free(f->keys);
        snprintf(cmd, sizeof(cmd), "rm -rf %s", f->dir);
        assert_int_equal(system(cmd), 0);
        free(f);
        return 0;
}

static json_t *secret(const char *value)
{
        return json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:s}}",
                         "apiVersion",
                         "v1",
                         "kind",
                         "Secret",
                         "metadata",
                         "name",
                         "db",
                         "namespace",
                         "default",
                         "data",
                         "password",
                         value);
}

/* Whether any file of the directory holds text (grep -r). */
static bool dir_holds(const char *dir, const char *text)
{
        char cmd[256];

        snprintf(cmd, sizeof(cmd), "grep -rqa -- '%s' %s", text, dir);
        return system(cmd) == 0;
}

static void put(struct xp_store *store, const char *value)
{
        json_auto_t *s = secret(value);
        struct xp_error err = {0};

        if (xp_store_create(store, "secrets", "default", "db", s, NULL, &err) < 0)
                fail_msg("create: %s", err.msg);
}

static void expect_secret(struct xp_store *store, const char *value)
{
        json_auto_t *got = NULL;
        struct xp_error err = {0};

        if (xp_store_get(store, "secrets", "default", "db", &got, NULL, &err) < 0)
                fail_msg("get: %s", err.msg);
        assert_string_equal(
            json_string_value(json_object_get(json_object_get(got, "data"), "password")), value);
}

/* Nothing of the value in the files; every read gives it back. */
static void no_plaintext_on_disk(void **state)
{
        struct fixture *f = *state;
        struct xp_store *store = open_with(f, f->keys);
        struct xp_store_event *events = NULL;
        size_t n = 0;
        struct stat st;

        put(store, VALUE);
        expect_secret(store, VALUE);
        assert_int_equal(xp_store_events_since(store, "secrets", NULL, 0, 10, &events, &n, NULL),
                         0);
        assert_int_equal(n, 1);
        assert_non_null(events[0].object);
        xp_store_events_free(events, n);
        assert_false(dir_holds(f->dir, VALUE));
        xp_store_close(store);
        assert_false(dir_holds(f->dir, VALUE));
        assert_true(dir_holds(f->dir, "k8s:enc:aesgcm:v1:key1:"));
        assert_int_equal(stat(f->keys_path, &st), 0);
        assert_int_equal(st.st_mode & 0777, 0600);

        /* after a reopen, from the database rather than memory: get, list, events, delete */
        store = open_with(f, f->keys);
        expect_secret(store, VALUE);
        json_auto_t *items = NULL;
        assert_int_equal(xp_store_list(store, "secrets", NULL, &items, NULL, NULL), 0);
        assert_int_equal(json_array_size(items), 1);
        assert_int_equal(xp_store_events_since(store, "secrets", NULL, 0, 10, &events, &n, NULL),
                         0);
        assert_int_equal(n, 1);
        assert_string_equal(json_string_value(json_object_get(
                                json_object_get(events[0].object, "data"), "password")),
                            VALUE);
        xp_store_events_free(events, n);
        json_auto_t *last = NULL;
        assert_int_equal(xp_store_delete(store, "secrets", "default", "db", 0, &last, NULL, NULL),
                         0);
        assert_non_null(json_object_get(last, "data"));
        xp_store_close(store);
        assert_false(dir_holds(f->dir, VALUE));
}

/* Another kind is stored as it is. */
static void other_kinds_plain(void **state)
{
        struct fixture *f = *state;
        struct xp_store *store = open_with(f, f->keys);
        json_auto_t *cm = secret(VALUE);

        assert_int_equal(xp_store_create(store, "configmaps", "default", "db", cm, NULL, NULL), 0);
        xp_store_close(store);
        assert_true(dir_holds(f->dir, VALUE));
}

/* A missing key and a wrong key: errors naming the Secret and the key, never garbage. */
static void count_skip(const char *ns, const char *name, const char *why, void *userdata)
{
        assert_string_equal(ns, "default");
        assert_string_equal(name, "db");
        assert_non_null(strstr(why, "cannot be decrypted"));
        (*(int *)userdata)++;
}

static void missing_and_wrong_key(void **state)
{
        struct fixture *f = *state;
        struct xp_store *store = open_with(f, f->keys);
        struct xp_store_keys other = {0};
        struct xp_error err = {0};
        json_t *got = NULL;

        put(store, VALUE);
        xp_store_close(store);

        assert_int_equal(xp_store_keys_add(&other, NULL, NULL), 0); /* another "key1" */
        store = open_with(f, &other);
        assert_int_equal(xp_store_get(store, "secrets", "default", "db", &got, NULL, &err),
                         -EKEYREJECTED);
        assert_null(got);
        assert_non_null(strstr(err.msg, "secrets default/db cannot be decrypted with the keys"));
        xp_store_close(store);

        snprintf(other.keys[0].name, sizeof(other.keys[0].name), "key7");
        store = open_with(f, &other);
        assert_int_equal(xp_store_get(store, "secrets", "default", "db", &got, NULL, &err),
                         -ENOKEY);
        assert_non_null(strstr(err.msg,
                               "secrets default/db cannot be decrypted with the keys in the data "
                               "directory's encryption.keys: it is encrypted with key key1, which "
                               "that file does not hold"));
        json_t *items = NULL;
        assert_int_equal(xp_store_list(store, "secrets", NULL, &items, NULL, &err), -ENOKEY);
        /* the controllers' list leaves it out, says which, and reads the rest */
        int skipped = 0;
        err = (struct xp_error){0};
        assert_int_equal(
            xp_store_list_readable(store,
                                   "secrets",
                                   NULL,
                                   &(struct xp_store_skip){.fn = count_skip, .userdata = &skipped},
                                   &items,
                                   NULL,
                                   &err),
            0);
        assert_int_equal(skipped, 1);
        assert_int_equal(json_array_size(items), 0);
        assert_int_equal(err.code, 0);
        json_decref(items);
        xp_store_close(store);
}

/* Rotation: old rows open while the old key is there; after the rewrite, the new key alone. */
static void rotate(void **state)
{
        struct fixture *f = *state;
        struct xp_store *store = open_with(f, f->keys);
        struct xp_store_keys *loaded = NULL;
        struct xp_error err = {0};
        const char *name = NULL;
        uint64_t n = 0;

        put(store, VALUE);
        xp_store_close(store);
        assert_int_equal(xp_store_keys_add(f->keys, &name, &err), 0);
        assert_string_equal(name, "key2");
        assert_int_equal(xp_store_keys_save(f->keys_path, f->keys, &err), 0);
        assert_int_equal(xp_store_keys_load(f->keys_path, false, &loaded, &err), 0);
        assert_int_equal(loaded->n, 2);
        assert_string_equal(loaded->keys[0].name, "key2");
        assert_memory_equal(loaded->keys[1].secret, f->keys->keys[1].secret, XP_STORE_KEY_BYTES);
        xp_store_keys_free(loaded);

        store = open_with(f, f->keys);
        expect_secret(store, VALUE); /* under key1 still */
        assert_int_equal(xp_store_reencrypt(store, &n, &err), 0);
        assert_int_equal(n, 1); /* the object: its event reads the body there */
        assert_int_equal(xp_store_reencrypt(store, &n, &err), 0);
        assert_int_equal(n, 0); /* all under key2 now */
        xp_store_close(store);
        assert_false(dir_holds(f->dir, "k8s:enc:aesgcm:v1:key1:"));

        xp_store_keys_retire(f->keys);
        assert_int_equal(f->keys->n, 1);
        store = open_with(f, f->keys);
        expect_secret(store, VALUE);
        xp_store_close(store);
}

/* Secrets stored before encryption read as they are, and the rewrite encrypts them. */
static void plaintext_before(void **state)
{
        struct fixture *f = *state;
        struct xp_store *store = open_with(f, NULL);
        uint64_t n = 0;

        put(store, VALUE);
        xp_store_close(store);
        store = open_with(f, f->keys);
        expect_secret(store, VALUE);
        assert_int_equal(xp_store_reencrypt(store, &n, NULL), 0);
        assert_int_equal(n, 1);
        xp_store_close(store);
        assert_false(dir_holds(f->dir, VALUE));
        store = open_with(f, f->keys);
        expect_secret(store, VALUE);
        xp_store_close(store);
}

/* A bad key file is refused with the line; one others may read, with the mode. */
static void bad_key_files(void **state)
{
        struct fixture *f = *state;
        struct xp_store_keys *keys = NULL;
        struct xp_error err = {0};
        FILE *fp;

        assert_int_equal(chmod(f->keys_path, 0644), 0);
        assert_int_equal(xp_store_keys_load(f->keys_path, false, &keys, &err), -EPERM);
        assert_non_null(strstr(err.msg, "mode 644"));
        unlink(f->keys_path);
        assert_int_equal(xp_store_keys_load(f->keys_path, false, &keys, &err), -ENOENT);
        fp = fopen(f->keys_path, "w");
        assert_non_null(fp);
        fputs("# c\nkey1 aesgcm c2hvcnQ=\n", fp);
        fclose(fp);
        assert_int_equal(chmod(f->keys_path, 0600), 0);
        assert_int_equal(xp_store_keys_load(f->keys_path, false, &keys, &err), -EBADMSG);
        assert_non_null(strstr(err.msg, "encryption.keys:2: key key1 is not 32 bytes"));
        assert_null(keys);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test_setup_teardown(no_plaintext_on_disk, setup, teardown),
            cmocka_unit_test_setup_teardown(other_kinds_plain, setup, teardown),
            cmocka_unit_test_setup_teardown(missing_and_wrong_key, setup, teardown),
            cmocka_unit_test_setup_teardown(rotate, setup, teardown),
            cmocka_unit_test_setup_teardown(plaintext_before, setup, teardown),
            cmocka_unit_test_setup_teardown(bad_key_files, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
