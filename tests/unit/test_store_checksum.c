/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The objects rows' checksums (docs/store.md, "Damage"): a row changed after it was written (its
 * body, key or version, or swapped with another) is refused at open naming it, reported by
 * xp_store_check(), left out by xp_store_recover(), and an error for a running store's reads;
 * a store from before checksums is upgraded at open. A damaged row can still be deleted; a hash
 * that fails fails its write (or the upgrade) instead of storing a checksum no read accepts.
 */
#include <dlfcn.h>
#include <errno.h>
#include <gnutls/crypto.h>
#include <inttypes.h>
#include <setjmp.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "store/store_internal.h"
#include "tmpdir.h"
#include "xpool/store.h"

#include "store_open.h"

/* The seam for a failing hash: this test's gnutls_hash_init() stands before the library's. */
static bool hash_fails;

int gnutls_hash_init(gnutls_hash_hd_t *h, gnutls_digest_algorithm_t algorithm)
{
        int (*real)(gnutls_hash_hd_t *, gnutls_digest_algorithm_t);

        if (hash_fails)
                return GNUTLS_E_MEMORY_ERROR;
        *(void **)&real = dlsym(RTLD_NEXT, "gnutls_hash_init");
        assert_non_null(real);
        return real(h, algorithm);
}

static int setup(void **state)
{
        return tmpdir_setup(state, "checksum", "state.db");
}

static int teardown(void **state)
{
        return tmpdir_teardown(state);
}

/* A store at path with ConfigMaps cm0..cm(n-1) in default, closed. */
static void fill(const char *path, int n)
{
        struct xp_store *store = open_ok(path);
        struct xp_error err = {0};
        char name[32];

        for (int i = 0; i < n; i++) {
                json_t *o;

                snprintf(name, sizeof(name), "cm%d", i);
                o = json_pack("{s:s, s:{s:s}, s:{s:s}}",
                              "apiVersion",
                              "v1",
                              "metadata",
                              "name",
                              name,
                              "data",
                              "k",
                              "value");
                assert_non_null(o);
                if (xp_store_create(store, "ConfigMap", "default", name, o, NULL, &err) < 0)
                        fail_msg("create %s: %s", name, err.msg);
                json_decref(o);
        }
        xp_store_close(store);
}

/* Runs sql on the database through SQLite directly, as damage that SQLite cannot see would. */
static void damage(const char *path, const char *sql)
{
        sqlite3 *db = NULL;

        assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
        if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
                fail_msg("%s: %s", sql, sqlite3_errmsg(db));
        sqlite3_close(db);
}

/* The store refuses to open naming the row, check reports it, recover leaves it out. */
static void refused_checked_recovered(const char *path, const char *row, int n)
{
        struct xp_store_recovery rec;
        struct xp_store_report report;
        struct xp_error err = {0};
        struct xp_store *store;
        json_t *items = NULL;

        assert_int_equal(open_err(path, &err), -EUCLEAN);
        assert_non_null(strstr(err.msg, "is damaged: object "));
        assert_non_null(strstr(err.msg, row));
        assert_non_null(strstr(err.msg, "fails its checksum"));

        assert_int_equal(xp_store_check(path, &report, &err), 0);
        assert_true(report.damaged);
        assert_int_equal(report.bad_checksums, 1);
        assert_non_null(strstr(report.bad_rows, row));

        assert_int_equal(xp_store_recover(path, &rec, &err), 0);
        assert_true(rec.recovered);
        assert_int_equal(rec.dropped, 1);
        assert_int_equal(rec.kept, n - 1);
        assert_non_null(strstr(rec.notes, "fails its checksum"));

        store = open_ok(path);
        assert_int_equal(xp_store_list(store, "ConfigMap", "default", &items, NULL, &err), 0);
        assert_int_equal(json_array_size(items), n - 1);
        json_decref(items);
        xp_store_close(store);
}

static void body_flipped(void **state)
{
        struct tmpdir *t = *state;

        fill(t->path, 5);
        /* one character of cm3's value, as a flipped bit would change it */
        damage(t->path,
               "UPDATE objects SET body = replace(body, '\"value\"', '\"valuf\"') WHERE name = "
               "'cm3'");
        refused_checked_recovered(t->path, "default/cm3 (type ConfigMap", 5);
}

static void key_changed(void **state)
{
        struct tmpdir *t = *state;

        fill(t->path, 5);
        damage(t->path, "UPDATE objects SET name = 'cm9' WHERE name = 'cm2'");
        refused_checked_recovered(t->path, "default/cm9 (type ConfigMap", 5);
}

static void version_changed(void **state)
{
        struct tmpdir *t = *state;

        fill(t->path, 5);
        damage(t->path, "UPDATE objects SET version = version - 1 WHERE name = 'cm4'");
        refused_checked_recovered(t->path, "default/cm4 (type ConfigMap", 5);
}

static void bodies_swapped(void **state)
{
        struct tmpdir *t = *state;
        struct xp_store_report report;
        struct xp_error err = {0};

        fill(t->path, 4);
        /* cm1 gets cm0's body and checksum: the key is in the checksum */
        damage(t->path,
               "UPDATE objects SET (body, checksum) = (SELECT body, checksum FROM objects WHERE "
               "name = 'cm0') WHERE name = 'cm1'");
        assert_int_equal(open_err(t->path, &err), -EUCLEAN);
        assert_non_null(strstr(err.msg, "default/cm1 (type ConfigMap"));
        assert_int_equal(xp_store_check(t->path, &report, &err), 0);
        assert_int_equal(report.bad_checksums, 1);
}

/* Every damaged row is named by the check. */
static void all_named(void **state)
{
        struct tmpdir *t = *state;
        struct xp_store_report report;
        struct xp_error err = {0};

        fill(t->path, 6);
        damage(t->path, "UPDATE objects SET checksum = checksum + 1 WHERE name IN ('cm1', 'cm5')");
        assert_int_equal(xp_store_check(t->path, &report, &err), 0);
        assert_true(report.damaged);
        assert_int_equal(report.bad_checksums, 2);
        assert_non_null(strstr(report.bad_rows, "default/cm1 "));
        assert_non_null(strstr(report.bad_rows, "default/cm5 "));
        assert_non_null(strstr(report.finding, "2 rows fail their checksums"));
}

/* A running store: a damaged row is an error for its reader, never its changed body. */
static void reads_refused(void **state)
{
        struct tmpdir *t = *state;
        struct xp_error err = {0};
        struct xp_store *store;
        json_t *o = NULL, *items = NULL;

        fill(t->path, 3);
        store = open_ok(t->path);
        damage(t->path,
               "UPDATE objects SET body = replace(body, 'value', 'valuf') WHERE name = 'cm1'");
        assert_int_equal(xp_store_get(store, "ConfigMap", "default", "cm1", &o, NULL, &err),
                         -EUCLEAN);
        assert_null(o);
        assert_non_null(strstr(err.msg, "default/cm1 (type ConfigMap"));
        assert_int_equal(xp_store_get(store, "ConfigMap", "default", "cm0", &o, NULL, &err), 0);
        json_decref(o);
        err = (struct xp_error){0};
        assert_int_equal(xp_store_list(store, "ConfigMap", "default", &items, NULL, &err),
                         -EUCLEAN);
        assert_null(items);
        assert_non_null(strstr(err.msg, "fails its checksum"));
        /* nor is the damaged body updated over: delete it, or recover the store */
        o = json_pack("{s:{s:s}}", "metadata", "name", "cm1");
        assert_int_equal(xp_store_update(store, "ConfigMap", "default", "cm1", 0, o, NULL, &err),
                         -EUCLEAN);
        json_decref(o);
        xp_store_close(store);
}

/* A damaged row is deleted: its DELETED event has its kind and name, never its changed body. */
static void damaged_deleted(void **state)
{
        struct tmpdir *t = *state;
        struct xp_store_event *events = NULL;
        struct xp_store_report report;
        struct xp_error err = {0};
        struct xp_store *store;
        json_t *last = NULL, *o = NULL, *meta;
        uint64_t version = 0;
        char rv[32];
        size_t n = 0;

        fill(t->path, 3);
        store = open_ok(t->path);
        damage(t->path,
               "UPDATE objects SET body = replace(body, 'value', 'valuf') WHERE name = 'cm1'");
        if (xp_store_delete(store, "ConfigMap", "default", "cm1", 0, &last, &version, &err) < 0)
                fail_msg("delete: %s", err.msg);
        assert_string_equal(json_string_value(json_object_get(last, "kind")), "ConfigMap");
        assert_string_equal(json_string_value(json_object_get(last, "apiVersion")), "v1");
        assert_null(json_object_get(last, "data"));
        meta = json_object_get(last, "metadata");
        assert_string_equal(json_string_value(json_object_get(meta, "name")), "cm1");
        assert_string_equal(json_string_value(json_object_get(meta, "namespace")), "default");
        snprintf(rv, sizeof(rv), "%" PRIu64, version);
        assert_string_equal(json_string_value(json_object_get(meta, "resourceVersion")), rv);
        json_decref(last);
        assert_int_equal(xp_store_get(store, "ConfigMap", "default", "cm1", &o, NULL, &err),
                         -ENOENT);
        assert_int_equal(
            xp_store_events_since(store, "ConfigMap", NULL, version - 1, 10, &events, &n, &err), 0);
        assert_int_equal(n, 1);
        assert_int_equal(events[0].type, XP_STORE_DELETED);
        assert_string_equal(events[0].name, "cm1");
        assert_null(json_object_get(events[0].object, "data"));
        xp_store_events_free(events, n);
        xp_store_close(store);

        assert_int_equal(xp_store_check(t->path, &report, &err), 0);
        assert_false(report.damaged);
        store = open_ok(t->path);
        assert_int_equal(
            xp_store_events_since(store, "ConfigMap", NULL, version - 1, 10, &events, &n, &err), 0);
        assert_int_equal(n, 1);
        assert_int_equal(events[0].type, XP_STORE_DELETED);
        xp_store_events_free(events, n);
        xp_store_close(store);
}

/* A hash that fails fails the write: nothing acknowledged, nothing a later read refuses. */
static void hash_failed(void **state)
{
        struct tmpdir *t = *state;
        struct xp_store_report report;
        struct xp_error err = {0};
        struct xp_store *store;
        json_t *o, *got = NULL;
        int r;

        fill(t->path, 1);
        store = open_ok(t->path);
        o = json_pack("{s:{s:s}}", "metadata", "name", "late");
        hash_fails = true;
        r = xp_store_create(store, "ConfigMap", "default", "late", o, NULL, &err);
        hash_fails = false;
        json_decref(o);
        assert_int_equal(r, -ENOMEM);
        assert_non_null(strstr(err.msg, "default/late not written: out of memory"));
        assert_int_equal(xp_store_get(store, "ConfigMap", "default", "late", &got, NULL, &err),
                         -ENOENT);
        xp_store_close(store);
        assert_int_equal(xp_store_check(t->path, &report, &err), 0);
        assert_false(report.damaged);

        /* the upgrade's SQL function: the upgrade fails whole, and is done at the next open */
        damage(t->path,
               "ALTER TABLE objects DROP COLUMN checksum; ALTER TABLE events DROP COLUMN "
               "checksum; PRAGMA user_version = 1");
        hash_fails = true;
        r = open_err(t->path, &err);
        hash_fails = false;
        assert_int_equal(r, -ENOMEM);
        xp_store_close(open_ok(t->path));
        assert_int_equal(xp_store_check(t->path, &report, &err), 0);
        assert_false(report.damaged);
}

/* An event row: refused at open, named by the check, an error for a watch's history read. */
static void event_changed(void **state)
{
        struct tmpdir *t = *state;
        struct xp_store_report report;
        struct xp_store_event *events = NULL;
        struct xp_error err = {0};
        struct xp_store *store;
        size_t n = 0;

        fill(t->path, 3);
        store = open_ok(t->path); /* just opened: the history is read from SQLite */
        /* a create's event reads its body in objects (schema 3): given one of its own */
        damage(t->path,
               "UPDATE events SET body = replace((SELECT body FROM objects WHERE name = 'cm1'), "
               "'value', 'valuf') WHERE name = 'cm1'");
        assert_int_equal(xp_store_events_since(store, "ConfigMap", NULL, 0, 100, &events, &n, &err),
                         -EUCLEAN);
        assert_non_null(strstr(err.msg, "of default/cm1 (type ConfigMap) fails its checksum"));
        xp_store_events_free(events, n);
        xp_store_close(store);

        assert_int_equal(open_err(t->path, &err), -EUCLEAN);
        assert_non_null(strstr(err.msg, "is damaged: event "));
        assert_int_equal(xp_store_check(t->path, &report, &err), 0);
        assert_true(report.damaged);
        assert_int_equal(report.bad_checksums, 1);
        assert_non_null(strstr(report.bad_rows, "of default/cm1 (type ConfigMap)"));
}

/* The body of the event row at version v, as the table holds it (SQLite directly). */
static char *event_body(const char *path, uint64_t v)
{
        sqlite3 *db = NULL;
        sqlite3_stmt *st = NULL;
        char *body = NULL;

        assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
        assert_int_equal(
            sqlite3_prepare_v2(db, "SELECT body FROM events WHERE version = ?1", -1, &st, NULL),
            SQLITE_OK);
        sqlite3_bind_int64(st, 1, (sqlite3_int64)v);
        assert_int_equal(sqlite3_step(st), SQLITE_ROW);
        body = strdup((const char *)sqlite3_column_text(st, 0));
        assert_non_null(body);
        sqlite3_finalize(st);
        sqlite3_close(db);
        return body;
}

static json_t *config_map(const char *value)
{
        json_t *o = json_pack("{s:s, s:{s:s}, s:{s:s}}",
                              "apiVersion",
                              "v1",
                              "metadata",
                              "name",
                              "a",
                              "data",
                              "k",
                              value);

        assert_non_null(o);
        return o;
}

static const char *data_k(const json_t *o)
{
        return json_string_value(json_object_get(json_object_get(o, "data"), "k"));
}

/*
 * A body is written once: a create's and an update's event row is empty while the object is at
 * its version, and takes the body when an update or a delete moves the object on. The history
 * read from SQLite (after a reopen: no ring) has every version's body, and the check passes.
 */
static void event_body_once(void **state)
{
        struct tmpdir *t = *state;
        struct xp_store *store = open_ok(t->path);
        struct xp_store_event *ev = NULL;
        struct xp_store_report report;
        struct xp_error err = {0};
        json_t *o = config_map("v1");
        uint64_t v[4];
        size_t n = 0;
        char *body;

        assert_int_equal(xp_store_create(store, "ConfigMap", "default", "a", o, &v[0], &err), 0);
        json_decref(o);
        body = event_body(t->path, v[0]);
        assert_string_equal(body, "");
        free(body);
        o = config_map("v2");
        assert_int_equal(xp_store_update(store, "ConfigMap", "default", "a", 0, o, &v[1], &err), 0);
        json_decref(o);
        body = event_body(t->path, v[0]);
        assert_non_null(strstr(body, "\"v1\""));
        free(body);
        body = event_body(t->path, v[1]);
        assert_string_equal(body, "");
        free(body);
        assert_int_equal(xp_store_delete(store, "ConfigMap", "default", "a", 0, NULL, &v[2], &err),
                         0);
        body = event_body(t->path, v[1]);
        assert_non_null(strstr(body, "\"v2\""));
        free(body);
        o = config_map("v3");
        assert_int_equal(xp_store_create(store, "ConfigMap", "default", "a", o, &v[3], &err), 0);
        json_decref(o);
        xp_store_close(store);

        store = open_ok(t->path);
        assert_int_equal(xp_store_events_since(store, "ConfigMap", NULL, 0, 100, &ev, &n, &err), 0);
        assert_int_equal(n, 4);
        assert_string_equal(data_k(ev[0].object), "v1");
        assert_string_equal(data_k(ev[1].object), "v2");
        assert_int_equal(ev[2].type, XP_STORE_DELETED);
        assert_string_equal(data_k(ev[2].object), "v2");
        assert_string_equal(data_k(ev[3].object), "v3");
        for (size_t i = 0; i < n; i++)
                assert_int_equal(ev[i].resource_version, v[i]);
        xp_store_events_free(ev, n);
        xp_store_close(store);
        assert_int_equal(xp_store_check(t->path, &report, &err), 0);
        assert_false(report.damaged);
}

/* A store from before checksums: upgraded at open, its rows checked from then on. */
static void upgraded(void **state)
{
        struct tmpdir *t = *state;
        struct xp_store_report report;
        struct xp_error err = {0};
        struct xp_store *store;
        json_t *items = NULL;
        int64_t schema = 0;

        fill(t->path, 4);
        damage(t->path,
               "ALTER TABLE objects DROP COLUMN checksum; ALTER TABLE events DROP COLUMN "
               "checksum; PRAGMA user_version = 1");
        store = open_ok(t->path);
        assert_int_equal(xp_store_list(store, "ConfigMap", NULL, &items, NULL, &err), 0);
        assert_int_equal(json_array_size(items), 4);
        json_decref(items);
        assert_int_equal(
            store_query_int(t->path, store->writer, "PRAGMA user_version", &schema, &err), 0);
        assert_int_equal(schema, SCHEMA_VERSION);
        xp_store_close(store);
        assert_int_equal(xp_store_check(t->path, &report, &err), 0);
        assert_false(report.damaged);
        damage(t->path,
               "UPDATE objects SET body = replace(body, 'value', 'valuf') WHERE name = 'cm2'");
        assert_int_equal(open_err(t->path, &err), -EUCLEAN);
        assert_non_null(strstr(err.msg, "default/cm2 (type ConfigMap"));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test_setup_teardown(body_flipped, setup, teardown),
            cmocka_unit_test_setup_teardown(key_changed, setup, teardown),
            cmocka_unit_test_setup_teardown(version_changed, setup, teardown),
            cmocka_unit_test_setup_teardown(bodies_swapped, setup, teardown),
            cmocka_unit_test_setup_teardown(all_named, setup, teardown),
            cmocka_unit_test_setup_teardown(reads_refused, setup, teardown),
            cmocka_unit_test_setup_teardown(event_changed, setup, teardown),
            cmocka_unit_test_setup_teardown(upgraded, setup, teardown),
            cmocka_unit_test_setup_teardown(damaged_deleted, setup, teardown),
            cmocka_unit_test_setup_teardown(hash_failed, setup, teardown),
            cmocka_unit_test_setup_teardown(event_body_once, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
