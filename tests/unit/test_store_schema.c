/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Schema 4 (docs/store.md, "What is stored where"): the objects table is a rowid table. A store
 * at schema 3, made here by schema 3's own SQL, is upgraded at open in one transaction and reads
 * back as it was: every row's bytes, version and checksum, every list in the same order, every
 * event. An upgrade cut short (the process killed before its commit, or a statement failing)
 * leaves the schema 3 store, which the next open upgrades. Recover makes a schema 4 store from
 * either. A store of a newer schema is refused.
 */
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "store/store_internal.h"
#include "tmpdir.h"
#include "xpool/store.h"

#include "store_open.h"

/* Schema 3's tables, as xpool wrote them before schema 4. */
static const char schema3_sql[] =
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;"
    "CREATE TABLE objects (kind TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL, "
    "version INTEGER NOT NULL, body TEXT NOT NULL, checksum INTEGER, PRIMARY KEY (kind, "
    "namespace, name)) WITHOUT ROWID;"
    "CREATE TABLE events (version INTEGER PRIMARY KEY, type INTEGER NOT NULL, kind TEXT NOT "
    "NULL, namespace TEXT NOT NULL, name TEXT NOT NULL, body TEXT NOT NULL, checksum INTEGER);";

/*
 * The seams of the upgrade's statements: this test's sqlite3_exec() stands before the library's.
 * fail_at: that statement fails (fail_code, SQLITE_IOERR when 0) instead of running; the process
 * kills itself at the COMMIT that follows the statement kill_after.
 */
static const char *fail_at;
static int fail_code;
static const char *kill_after;
static bool kill_armed;

int sqlite3_exec(sqlite3 *db,
                 const char *sql,
                 int (*callback)(void *, int, char **, char **),
                 void *userdata,
                 char **errmsg)
{
        int (*real)(
            sqlite3 *, const char *, int (*)(void *, int, char **, char **), void *, char **);

        if (fail_at && strncmp(sql, fail_at, strlen(fail_at)) == 0) {
                if (errmsg)
                        *errmsg = sqlite3_mprintf("injected failure");
                return fail_code ?: SQLITE_IOERR;
        }
        if (kill_after && strncmp(sql, kill_after, strlen(kill_after)) == 0)
                kill_armed = true;
        if (kill_armed && strcmp(sql, "COMMIT") == 0)
                raise(SIGKILL);
        *(void **)&real = dlsym(RTLD_NEXT, "sqlite3_exec");
        assert_non_null(real);
        return real(db, sql, callback, userdata, errmsg);
}

/* free_bytes_cap: the file system's free space as statvfs() tells the store (0: as it is). */
static uint64_t free_bytes_cap;

int statvfs(const char *path, struct statvfs *buf)
{
        int (*real)(const char *, struct statvfs *);
        int r;

        *(void **)&real = dlsym(RTLD_NEXT, "statvfs");
        assert_non_null(real);
        r = real(path, buf);
        if (r == 0 && free_bytes_cap && (uint64_t)buf->f_bavail * buf->f_frsize > free_bytes_cap)
                buf->f_bavail = free_bytes_cap / buf->f_frsize;
        return r;
}

static int setup(void **state)
{
        return tmpdir_setup(state, "schema", "state.db");
}

static int teardown(void **state)
{
        fail_at = NULL;
        fail_code = 0;
        kill_after = NULL;
        kill_armed = false;
        free_bytes_cap = 0;
        return tmpdir_teardown(state);
}

static void exec_ok(sqlite3 *db, const char *sql)
{
        if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
                fail_msg("%s: %s", sql, sqlite3_errmsg(db));
}

static sqlite3_stmt *prepare_ok(sqlite3 *db, const char *sql)
{
        sqlite3_stmt *st = NULL;

        if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
                fail_msg("%s: %s", sql, sqlite3_errmsg(db));
        return st;
}

/* The body of write w of an object: about 2 KB, as a pod's. */
static char *body_of(const char *const key[3], int w)
{
        char *body = NULL;

        assert_true(asprintf(&body,
                             "{\"apiVersion\":\"v1\",\"kind\":\"%s\",\"metadata\":{\"name\":"
                             "\"%s\",\"namespace\":\"%s\"},\"data\":{\"write\":\"%d\","
                             "\"filler\":\"%01900d\"}}",
                             key[0],
                             key[2],
                             key[1],
                             w,
                             w) > 0);
        return body;
}

/* The statements that write a schema 3 store's rows, with the rows' checksums. */
struct writer3 {
        sqlite3_stmt *object, *event;
        uint64_t version;
};

static void put_event(
    struct writer3 *w, int type, const char *const key[3], const char *body, bool body_in_objects)
{
        sqlite3_stmt *st = w->event;

        sqlite3_bind_int64(st, 1, (int64_t)w->version);
        sqlite3_bind_int(st, 2, type);
        for (int i = 0; i < 3; i++)
                sqlite3_bind_text(st, 3 + i, key[i], -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 6, body_in_objects ? "" : body, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 7, body, -1, SQLITE_STATIC);
        assert_int_equal(sqlite3_step(st), SQLITE_DONE);
        sqlite3_reset(st);
}

/* An object's history: writes creates and updates, then a delete or its objects row. */
static void put_history(struct writer3 *w, const char *const key[3], int writes, bool deleted)
{
        char *body = NULL;

        for (int i = 0; i < writes; i++) {
                bool last = i == writes - 1;

                free(body);
                body = body_of(key, i);
                w->version++;
                /* schema 3: the event of the object's current version reads its body there */
                put_event(w, i == 0 ? 1 : 2, key, body, last && !deleted);
        }
        if (deleted) {
                w->version++;
                put_event(w, 3, key, body, false);
        } else {
                for (int i = 0; i < 3; i++)
                        sqlite3_bind_text(w->object, 1 + i, key[i], -1, SQLITE_STATIC);
                sqlite3_bind_int64(w->object, 4, (int64_t)w->version);
                sqlite3_bind_text(w->object, 5, body, -1, SQLITE_STATIC);
                assert_int_equal(sqlite3_step(w->object), SQLITE_DONE);
                sqlite3_reset(w->object);
        }
        free(body);
}

/*
 * A store at schema 3 at path, made by its own SQL, without a seal (as before seals: the open
 * makes one): n objects of three kinds (namespaced in two namespaces, and cluster-scoped), some
 * updated, some deleted, with their events.
 */
static void make_schema3(const char *path, int n)
{
        static const char *const kinds[] = {"ConfigMap", "Node", "Pod"};
        static const char *const namespaces[] = {"default", "kube-system"};
        struct xp_error err = {0};
        struct writer3 w = {0};
        sqlite3 *db = NULL;
        char sql[256], name[32];

        assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
        assert_int_equal(store_checksum_register(path, db, &err), 0);
        exec_ok(db, "PRAGMA journal_mode = WAL; BEGIN");
        exec_ok(db, schema3_sql);
        w.object = prepare_ok(db,
                              "INSERT INTO objects VALUES (?1, ?2, ?3, ?4, ?5, "
                              "xpool_checksum(?1, ?2, ?3, ?4, ?5))");
        w.event = prepare_ok(db,
                             "INSERT INTO events VALUES (?1, ?2, ?3, ?4, ?5, ?6, "
                             "xpool_event_checksum(?2, ?3, ?4, ?5, ?1, ?7))");
        for (int i = 0; i < n; i++) {
                /* the names out of key order, so that the copy's order is the key's, not theirs */
                snprintf(name, sizeof(name), "o%d", (i * 7919) % n);
                const char *const key[3] = {
                    kinds[i % 3], i % 3 == 1 ? "" : namespaces[(i / 3) % 2], name};

                put_history(&w, key, 1 + (i % 5 == 0), i % 7 == 0);
        }
        sqlite3_finalize(w.object);
        sqlite3_finalize(w.event);
        snprintf(sql,
                 sizeof(sql),
                 "INSERT INTO meta VALUES ('version', %" PRIu64 "), ('digest', 0);"
                 "PRAGMA application_id = %d; PRAGMA user_version = 3; COMMIT",
                 w.version,
                 APPLICATION_ID);
        exec_ok(db, sql);
        assert_int_equal(sqlite3_close(db), SQLITE_OK);
}

/* Every row that sql selects, its columns as text, in one string (caller frees). */
static char *rows_of(sqlite3 *db, const char *sql)
{
        sqlite3_stmt *st = prepare_ok(db, sql);
        char *all = NULL;
        size_t len = 0;
        FILE *out = open_memstream(&all, &len);
        int rc;

        assert_non_null(out);
        while ((rc = sqlite3_step(st)) == SQLITE_ROW)
                for (int i = 0; i < sqlite3_column_count(st); i++)
                        fprintf(out,
                                "%s%c",
                                (const char *)sqlite3_column_text(st, i) ?: "NULL",
                                i + 1 == sqlite3_column_count(st) ? '\n' : '|');
        assert_int_equal(rc, SQLITE_DONE);
        sqlite3_finalize(st);
        fclose(out);
        return all;
}

/* What a store's file holds, read without the store: its schema and its rows. */
struct contents {
        int64_t schema;
        bool without_rowid;
        char *objects_sql; /* the objects table's CREATE statement */
        char *objects;     /* every row, in key order */
        char *events;      /* every event, its body wherever it is, in version order */
};

static void contents_free(struct contents *c)
{
        free(c->objects_sql);
        free(c->objects);
        free(c->events);
}

static struct contents contents_of(const char *path)
{
        struct xp_error err = {0};
        struct contents c = {0};
        sqlite3 *db = NULL;

        assert_int_equal(store_open_db(path, SQLITE_OPEN_READONLY, &db, &err), 0);
        assert_int_equal(store_query_int(path, db, "PRAGMA user_version", &c.schema, &err), 0);
        assert_int_equal(store_objects_without_rowid(path, db, &c.without_rowid, &err), 0);
        c.objects_sql = rows_of(db, "SELECT sql FROM sqlite_schema WHERE name = 'objects'");
        c.objects = rows_of(db,
                            "SELECT kind, namespace, name, version, body, checksum FROM objects "
                            "ORDER BY kind, namespace, name");
        c.events = rows_of(db,
                           "SELECT version, type, kind, namespace, name, " STORE_EVENT_BODY
                           ", checksum FROM events ORDER BY version");
        sqlite3_close(db);
        return c;
}

/* A list's texts, one a line. */
static int append_text(const char *ns, const char *name, const char *text, size_t len, void *out)
{
        fprintf(out, "%s/%s %.*s\n", ns, name, (int)len, text);
        return 0;
}

/* What the store hands out, as text: each kind's list (in its order), each object's get, every
 * event. Caller frees. */
static char *served(struct xp_store *store)
{
        static const char *const kinds[] = {"ConfigMap", "Node", "Pod"};
        struct xp_store_event *events = NULL;
        struct xp_error err = {0};
        char *all = NULL;
        size_t len = 0, n = 0;
        uint64_t through = 0;
        FILE *out = open_memstream(&all, &len);

        assert_non_null(out);
        for (size_t k = 0; k < 3; k++) {
                json_t *items = NULL, *item, *got = NULL;
                size_t i;

                assert_int_equal(
                    xp_store_list_text(store, kinds[k], NULL, append_text, out, NULL, &err), 0);
                assert_int_equal(xp_store_list(store, kinds[k], NULL, &items, NULL, &err), 0);
                json_array_foreach(items, i, item)
                {
                        json_t *meta = json_object_get(item, "metadata");
                        const char *ns = json_string_value(json_object_get(meta, "namespace"));
                        const char *name = json_string_value(json_object_get(meta, "name"));

                        assert_int_equal(
                            xp_store_get(store, kinds[k], ns ?: "", name, &got, NULL, &err), 0);
                        assert_true(json_equal(got, item));
                        json_decref(got);
                }
                json_decref(items);
                assert_int_equal(xp_store_events_scan_text(
                                     store, kinds[k], NULL, 0, 100000, &events, &n, &through, &err),
                                 0);
                for (i = 0; i < n; i++)
                        fprintf(out,
                                "%d %" PRIu64 " %s\n",
                                (int)events[i].type,
                                events[i].resource_version,
                                events[i].text);
                xp_store_events_free(events, n);
        }
        fclose(out);
        return all;
}

/* About 5 MB of bodies: more than SQLite's page cache, so that the upgrade writes into the WAL
 * before its commit. */
#define OBJECTS 2500

/*
 * What the store at path, as its file holds it now, should hand out (as served() writes it):
 * each stored body with its version filled in (store_text_versioned()).
 */
static char *expected_served(const char *path)
{
        static const char *const kinds[] = {"ConfigMap", "Node", "Pod"};
        static const char *const sql[] = {
            "SELECT namespace || '/' || name || ' ', version, body FROM objects WHERE kind = ?1 "
            "ORDER BY namespace, name",
            "SELECT type || ' ' || version || ' ', version, " STORE_EVENT_BODY
            " FROM events WHERE kind = ?1 ORDER BY version",
        };
        struct xp_error err = {0};
        sqlite3 *db = NULL;
        char *all = NULL;
        size_t len = 0;
        FILE *out = open_memstream(&all, &len);

        assert_non_null(out);
        assert_int_equal(store_open_db(path, SQLITE_OPEN_READONLY, &db, &err), 0);
        for (size_t k = 0; k < 3; k++)
                for (size_t q = 0; q < 2; q++) {
                        sqlite3_stmt *st = prepare_ok(db, sql[q]);

                        sqlite3_bind_text(st, 1, kinds[k], -1, SQLITE_STATIC);
                        while (sqlite3_step(st) == SQLITE_ROW) {
                                char *text = NULL;
                                size_t text_len = 0;

                                assert_int_equal(store_text_versioned_dup(
                                                     (const char *)sqlite3_column_text(st, 2),
                                                     (size_t)sqlite3_column_bytes(st, 2),
                                                     (uint64_t)sqlite3_column_int64(st, 1),
                                                     &text,
                                                     &text_len),
                                                 0);
                                fprintf(out, "%s%s\n", sqlite3_column_text(st, 0), text);
                                free(text);
                        }
                        sqlite3_finalize(st);
                }
        sqlite3_close(db);
        fclose(out);
        return all;
}

/* A list (of a kind, of a kind in a namespace) is a range of the key's index, in its order. */
static void assert_lists_by_index(const char *path)
{
        static const char *const sql[] = {
            "EXPLAIN QUERY PLAN SELECT kind, namespace, name, version, body, checksum FROM "
            "objects WHERE kind = 'Pod' ORDER BY namespace, name",
            "EXPLAIN QUERY PLAN SELECT kind, namespace, name, version, body, checksum FROM "
            "objects WHERE kind = 'Pod' AND namespace = 'default' ORDER BY namespace, name",
        };
        struct xp_error err = {0};
        sqlite3 *db = NULL;

        assert_int_equal(store_open_db(path, SQLITE_OPEN_READONLY, &db, &err), 0);
        for (size_t i = 0; i < 2; i++) {
                char *plan = rows_of(db, sql[i]);

                assert_non_null(
                    strstr(plan, "SEARCH objects USING INDEX sqlite_autoindex_objects_1"));
                assert_null(strstr(plan, "TEMP B-TREE"));
                free(plan);
        }
        sqlite3_close(db);
}

/* The store at path is at schema (its objects table WITHOUT ROWID below 4, a rowid table at 4). */
static void assert_at_schema(const char *path, int64_t schema)
{
        struct contents after = contents_of(path);

        assert_int_equal(after.schema, schema);
        assert_int_equal(after.without_rowid, schema < SCHEMA_VERSION);
        contents_free(&after);
}

/* The size of the store's WAL file at path. */
static off_t wal_size(const char *path)
{
        char wal[128];
        struct stat st;

        snprintf(wal, sizeof(wal), "%s-wal", path);
        assert_int_equal(stat(wal, &st), 0);
        return st.st_size;
}

/* The store at path is at schema 4 and holds what before held. */
static void assert_upgraded(const struct contents *before, const char *path)
{
        struct contents after = contents_of(path);

        assert_int_equal(after.schema, SCHEMA_VERSION);
        assert_false(after.without_rowid);
        assert_string_equal(after.objects, before->objects);
        assert_string_equal(after.events, before->events);
        contents_free(&after);
        assert_lists_by_index(path);
}

/* Writes on an upgraded store: a create, a create refused, an update of an upgraded object
 * (which copies its body into its event); then it checks intact and opens again. */
static void assert_writable(const char *path, const char *name)
{
        struct xp_store *store = open_ok(path);
        struct xp_store_report report;
        struct xp_error err = {0};
        json_t *o = json_pack("{s:{s:s}}", "metadata", "name", name);
        json_t *items = NULL, *first, *meta;
        uint64_t version = 0;

        assert_int_equal(xp_store_create(store, "Pod", "default", name, o, NULL, &err), 0);
        assert_int_equal(xp_store_create(store, "Pod", "default", name, o, NULL, &err), -EEXIST);
        json_decref(o);
        assert_int_equal(xp_store_list(store, "ConfigMap", NULL, &items, NULL, &err), 0);
        first = json_array_get(items, 0);
        meta = json_object_get(first, "metadata");
        version = strtoull(json_string_value(json_object_get(meta, "resourceVersion")), NULL, 10);
        assert_int_equal(xp_store_update(store,
                                         "ConfigMap",
                                         json_string_value(json_object_get(meta, "namespace")),
                                         json_string_value(json_object_get(meta, "name")),
                                         version,
                                         first,
                                         NULL,
                                         &err),
                         0);
        json_decref(items);
        xp_store_close(store);
        assert_int_equal(xp_store_check(path, &report, &err), 0);
        assert_false(report.damaged);
        xp_store_close(open_ok(path));
}

/* A schema 3 store opens at 4 and reads back as it was, its table made as a new store's. */
static void upgraded(void **state)
{
        struct tmpdir *t = *state;
        struct xp_store_report report;
        struct xp_error err = {0};
        struct contents before, fresh, after;
        char fresh_path[128];
        struct xp_store *store;
        char *expected, *got;

        make_schema3(t->path, OBJECTS);
        before = contents_of(t->path);
        assert_int_equal(before.schema, 3);
        assert_true(before.without_rowid);
        assert_int_equal(xp_store_check(t->path, &report, &err), 0);
        assert_false(report.damaged);
        assert_non_null(
            strstr(report.finding, "it is at schema 3, which the next open upgrades to 4"));
        expected = expected_served(t->path);

        store = open_ok(t->path);
        /* the copy's pages (more than 1 MiB here: see killed) left the WAL at the upgrade */
        assert_true(wal_size(t->path) < 256 * 1024);
        got = served(store);
        xp_store_close(store);
        assert_string_equal(got, expected);
        assert_upgraded(&before, t->path);
        assert_int_equal(xp_store_check(t->path, &report, &err), 0);
        assert_null(strstr(report.finding, "schema"));

        snprintf(fresh_path, sizeof(fresh_path), "%s/fresh.db", t->dir);
        xp_store_close(open_ok(fresh_path));
        fresh = contents_of(fresh_path);
        after = contents_of(t->path);
        assert_string_equal(after.objects_sql, fresh.objects_sql);
        contents_free(&after);
        contents_free(&fresh);
        assert_writable(t->path, "late");
        free(expected);
        free(got);
        contents_free(&before);
}

/* The upgrade killed before its commit: the store is at 3 as it was, and the next open upgrades
 * it. */
static void killed(void **state)
{
        struct tmpdir *t = *state;
        struct xp_store_report report;
        struct xp_error err = {0};
        struct contents before, after;
        pid_t pid;
        int status = 0;

        make_schema3(t->path, OBJECTS);
        before = contents_of(t->path);
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                kill_after = "DROP TABLE objects_v3";
                xp_store_open(
                    &(struct xp_store_options){.path = t->path}, &(struct xp_store *){NULL}, &err);
                _exit(1); /* not killed: the upgrade never reached its commit */
        }
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFSIGNALED(status));
        assert_int_equal(WTERMSIG(status), SIGKILL);
        /* the upgrade had written its pages into the WAL, uncommitted */
        assert_true(wal_size(t->path) > 1024 * 1024);

        after = contents_of(t->path);
        assert_int_equal(after.schema, 3);
        assert_true(after.without_rowid);
        assert_string_equal(after.objects, before.objects);
        assert_string_equal(after.events, before.events);
        contents_free(&after);
        assert_int_equal(xp_store_check(t->path, &report, &err), 0);
        assert_false(report.damaged);

        xp_store_close(open_ok(t->path));
        assert_upgraded(&before, t->path);
        contents_free(&before);
}

/* A statement of the upgrade fails: the open fails saying why, the store is at 3 as it was, and
 * the next open upgrades it. */
static void failed(void **state)
{
        struct tmpdir *t = *state;
        struct xp_error err = {0};
        struct contents before, after;

        make_schema3(t->path, 300);
        before = contents_of(t->path);
        fail_at = "DROP TABLE objects_v3";
        assert_int_equal(open_err(t->path, &err), -EIO);
        fail_at = NULL;
        assert_non_null(strstr(err.msg, "injected failure"));
        after = contents_of(t->path);
        assert_int_equal(after.schema, 3);
        assert_true(after.without_rowid);
        assert_string_equal(after.objects, before.objects);
        contents_free(&after);

        xp_store_close(open_ok(t->path));
        assert_upgraded(&before, t->path);
        contents_free(&before);
}

/*
 * A full disk at the open: the schema 3 store opens read-only and serves what it holds; the
 * first write that finds room finishes the open, then goes in; the next open upgrades it.
 */
static void full_disk(void **state)
{
        struct tmpdir *t = *state;
        struct xp_error err = {0};
        struct xp_store *store;
        json_t *o = json_pack("{s:{s:s}}", "metadata", "name", "late");
        char *expected, *got, why[128];

        make_schema3(t->path, 300);
        expected = expected_served(t->path);
        fail_at = "CREATE TABLE IF NOT EXISTS meta";
        fail_code = SQLITE_FULL;
        store = open_ok(t->path);
        assert_true(xp_store_readonly(store, why, sizeof(why)));
        assert_string_equal(why, "the disk is full");
        got = served(store);
        assert_string_equal(got, expected);
        free(got);
        assert_int_equal(xp_store_create(store, "Secret", "default", "late", o, NULL, &err),
                         -ENOSPC);

        fail_at = NULL;
        pthread_mutex_lock(&store->lock);
        store->readonly_retry_at = 0; /* the retry is due now, not in a second */
        pthread_mutex_unlock(&store->lock);
        assert_int_equal(xp_store_create(store, "Secret", "default", "late", o, NULL, &err), 0);
        assert_false(xp_store_readonly(store, why, sizeof(why)));
        got = served(store);
        assert_string_equal(got, expected);
        free(got);
        xp_store_close(store);
        /* the copy is left to the next start: it would hold that write for its whole length */
        assert_at_schema(t->path, SCHEMA_READABLE);
        xp_store_close(open_ok(t->path));
        assert_at_schema(t->path, SCHEMA_VERSION);
        json_decref(o);
        free(expected);
}

/*
 * Room to write but not for the copy: the store opens writable at schema 3 (the copy only saves
 * space), takes writes, and the next open upgrades it; the failed copy is not tried again before.
 */
static void no_room_for_copy(void **state)
{
        struct tmpdir *t = *state;
        struct xp_error err = {0};
        struct xp_store *store;
        struct contents after;
        json_t *o = json_pack("{s:{s:s}}", "metadata", "name", "late");
        char why[128];

        make_schema3(t->path, 300);
        fail_at = "INSERT INTO objects (kind, namespace, name, version, body, checksum) SELECT";
        fail_code = SQLITE_FULL;
        store = open_ok(t->path);
        assert_false(xp_store_readonly(store, why, sizeof(why)));
        assert_int_equal(xp_store_create(store, "Secret", "default", "late", o, NULL, &err), 0);
        fail_at = NULL;
        assert_int_equal(xp_store_create(store, "Secret", "default", "later", o, NULL, &err), 0);
        xp_store_close(store);
        after = contents_of(t->path);
        assert_int_equal(after.schema, SCHEMA_READABLE);
        assert_true(after.without_rowid);
        assert_non_null(strstr(after.objects, "late"));
        contents_free(&after);

        xp_store_close(open_ok(t->path));
        after = contents_of(t->path);
        assert_int_equal(after.schema, SCHEMA_VERSION);
        assert_false(after.without_rowid);
        assert_non_null(strstr(after.objects, "later"));
        contents_free(&after);
        json_decref(o);
}

/*
 * Less room than two copies of the table (the WAL's, then the checkpoint's past the file's end):
 * the copy is not begun, the store opens writable at 3 with a WAL as small as before, and an open
 * with room upgrades it.
 */
static void too_little_room(void **state)
{
        struct tmpdir *t = *state;
        struct xp_error err = {0};
        struct xp_store *store;
        struct stat st;
        json_t *o = json_pack("{s:{s:s}}", "metadata", "name", "late");

        make_schema3(t->path, OBJECTS);
        assert_int_equal(stat(t->path, &st), 0);
        free_bytes_cap = (uint64_t)st.st_size + (uint64_t)st.st_size / 2;
        store = open_ok(t->path);
        assert_true(wal_size(t->path) <
                    256 * 1024); /* the copy (more than 1 MiB: killed) never began */
        assert_int_equal(xp_store_create(store, "Secret", "default", "late", o, NULL, &err), 0);
        xp_store_close(store);
        assert_at_schema(t->path, SCHEMA_READABLE);

        free_bytes_cap = 0;
        xp_store_close(open_ok(t->path));
        assert_at_schema(t->path, SCHEMA_VERSION);
        json_decref(o);
}

/* A copy that finds the disk full after writing its pages: rolled back, and the WAL it grew
 * given back (a rollback alone leaves the file as large as the copy made it). */
static void full_during_copy(void **state)
{
        struct tmpdir *t = *state;
        struct xp_store *store;

        make_schema3(t->path, OBJECTS);
        fail_at = "DROP TABLE objects_v3";
        fail_code = SQLITE_FULL;
        store = open_ok(t->path);
        assert_true(wal_size(t->path) < 256 * 1024);
        xp_store_close(store);
        assert_at_schema(t->path, SCHEMA_READABLE);
}

/* The checkpoint after a committed copy finds no room: the upgrade stands, the store writable. */
static void checkpoint_after_copy_fails(void **state)
{
        struct tmpdir *t = *state;
        struct xp_store *store;
        char why[128];

        make_schema3(t->path, 300);
        fail_at = "PRAGMA wal_checkpoint(TRUNCATE)";
        fail_code = SQLITE_FULL;
        store = open_ok(t->path);
        assert_false(xp_store_readonly(store, why, sizeof(why)));
        fail_at = NULL;
        xp_store_close(store);
        assert_at_schema(t->path, SCHEMA_VERSION);
}

/*
 * A store from before checksums (schema 1), its objects table WITHOUT ROWID as xpool wrote it
 * then: the checksums' upgrade and the copy in one open, every object served as it was.
 */
static void from_schema1(void **state)
{
        struct tmpdir *t = *state;
        struct xp_store_report report;
        struct xp_error err = {0};
        struct xp_store *store;
        sqlite3 *db = NULL;
        char *expected, *got;

        make_schema3(t->path, 300);
        expected = expected_served(t->path);
        assert_int_equal(sqlite3_open(t->path, &db), SQLITE_OK);
        exec_ok(db,
                "ALTER TABLE objects DROP COLUMN checksum; ALTER TABLE events DROP COLUMN "
                "checksum; PRAGMA user_version = 1");
        got = rows_of(db,
                      "SELECT user_version, wr FROM pragma_user_version, pragma_table_list "
                      "WHERE name = 'objects'");
        assert_string_equal(got, "1|1\n");
        free(got);
        assert_int_equal(sqlite3_close(db), SQLITE_OK);

        store = open_ok(t->path);
        got = served(store);
        xp_store_close(store);
        assert_string_equal(got, expected);
        assert_at_schema(t->path, SCHEMA_VERSION);
        assert_int_equal(xp_store_check(t->path, &report, &err), 0);
        assert_false(report.damaged);
        free(got);
        free(expected);
}

/* A row's body changed behind the store's back (its checksum no longer holds). */
static void damage_a_row(const char *path)
{
        sqlite3 *db = NULL;

        assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
        exec_ok(db,
                "UPDATE objects SET body = replace(body, 'filler', 'fillex') WHERE name = "
                "(SELECT max(name) FROM objects)");
        sqlite3_close(db);
}

/* The store at path recovered: damaged, it is rebuilt at schema 4 without the damaged row. */
static void assert_recovered(const char *path, uint64_t objects, const char *late)
{
        struct xp_store_recovery rec;
        struct xp_error err = {0};

        assert_int_equal(open_err(path, &err), -EUCLEAN);
        assert_int_equal(xp_store_recover(path, &rec, &err), 0);
        assert_true(rec.recovered);
        assert_int_equal(rec.kept, objects - 1);
        assert_int_equal(rec.dropped, 1);
        assert_at_schema(path, SCHEMA_VERSION);
        assert_lists_by_index(path);
        assert_writable(path, late);
}

/* Recover rebuilds a damaged store at 3 as a store at 4, and one at 4 too. */
static void recovered(void **state)
{
        struct tmpdir *t = *state;
        struct xp_store_report report;
        struct xp_error err = {0};

        make_schema3(t->path, 300);
        assert_int_equal(xp_store_check(t->path, &report, &err), 0);
        damage_a_row(t->path);
        assert_recovered(t->path, report.objects, "late3");

        assert_int_equal(xp_store_check(t->path, &report, &err), 0);
        assert_false(report.damaged);
        damage_a_row(t->path);
        assert_recovered(t->path, report.objects, "late4");
}

/* A store of a newer schema is refused, saying so, and left as it was. */
static void newer_refused(void **state)
{
        struct tmpdir *t = *state;
        struct xp_error err = {0};
        struct contents after;
        sqlite3 *db = NULL;

        xp_store_close(open_ok(t->path));
        assert_int_equal(sqlite3_open(t->path, &db), SQLITE_OK);
        exec_ok(db, "PRAGMA user_version = 5");
        sqlite3_close(db);
        assert_int_equal(open_err(t->path, &err), -EPROTO);
        assert_non_null(strstr(err.msg, "written by a newer xpool (this one reads schema 4)"));
        after = contents_of(t->path);
        assert_int_equal(after.schema, 5);
        contents_free(&after);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test_setup_teardown(upgraded, setup, teardown),
            cmocka_unit_test_setup_teardown(killed, setup, teardown),
            cmocka_unit_test_setup_teardown(failed, setup, teardown),
            cmocka_unit_test_setup_teardown(full_disk, setup, teardown),
            cmocka_unit_test_setup_teardown(no_room_for_copy, setup, teardown),
            cmocka_unit_test_setup_teardown(too_little_room, setup, teardown),
            cmocka_unit_test_setup_teardown(full_during_copy, setup, teardown),
            cmocka_unit_test_setup_teardown(checkpoint_after_copy_fails, setup, teardown),
            cmocka_unit_test_setup_teardown(from_schema1, setup, teardown),
            cmocka_unit_test_setup_teardown(recovered, setup, teardown),
            cmocka_unit_test_setup_teardown(newer_refused, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
