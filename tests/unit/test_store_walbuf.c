/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The store's VFS (src/store/walbuf.c): a commit's WAL frames reach the file in one write, at the
 * commit's sync, not two per frame; what is committed is read back by another connection (which
 * reads the WAL itself) and after the database is opened again; a transaction larger than one
 * write can carry (the unix VFS's 128 KiB) commits whole; a transaction's own uncommitted pages,
 * spilled to the WAL and read back by its connection, are its own. With synchronous=NORMAL (no
 * sync at a commit) or without power-safe overwrite (padding frames after the sync) another
 * connection still sees every committed frame in the file, and checkpoints them.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "store/store_internal.h"
#include "tmpdir.h"

#define ROW_BYTES 3000

static int setup(void **state)
{
        return tmpdir_setup(state, "walbuf", "state.db");
}

static int teardown(void **state)
{
        return tmpdir_teardown(state);
}

static sqlite3 *open_durable(const char *path)
{
        struct xp_error err = {0};
        sqlite3 *db = NULL;

        assert_int_equal(store_open_db(path, SQLITE_OPEN_CREATE, &db, &err), 0);
        assert_int_equal(store_db_durable(path, db, &err), 0);
        assert_int_equal(sqlite3_exec(db, "PRAGMA wal_autocheckpoint = 0", NULL, NULL, NULL), 0);
        return db;
}

static void exec(sqlite3 *db, const char *sql)
{
        char *msg = NULL;
        int rc = sqlite3_exec(db, sql, NULL, NULL, &msg);

        if (rc != SQLITE_OK)
                fail_msg("%s: %s", sql, msg ? msg : sqlite3_errstr(rc));
}

/* Inserts rows rows of ROW_BYTES from first on, in one transaction. */
static void insert_rows(sqlite3 *db, int first, int rows)
{
        char sql[128];

        exec(db, "BEGIN IMMEDIATE");
        for (int i = first; i < first + rows; i++) {
                snprintf(sql,
                         sizeof(sql),
                         "INSERT INTO t VALUES (%d, printf('%%.*c', %d, 'a'))",
                         i,
                         ROW_BYTES);
                exec(db, sql);
        }
        exec(db, "COMMIT");
}

static int64_t count(sqlite3 *db)
{
        sqlite3_stmt *st = NULL;
        int64_t n;

        assert_int_equal(
            sqlite3_prepare_v2(db, "SELECT count(*), sum(length(b)) FROM t", -1, &st, NULL), 0);
        assert_int_equal(sqlite3_step(st), SQLITE_ROW);
        n = sqlite3_column_int64(st, 0);
        assert_int_equal(sqlite3_column_int64(st, 1), n * ROW_BYTES);
        sqlite3_finalize(st);
        return n;
}

/* Closes db, opens its file again (its WAL read back at the open) and counts the rows. */
static int64_t count_reopened(sqlite3 *db, const char *path)
{
        int64_t n;

        sqlite3_close(db);
        db = open_durable(path);
        n = count(db);
        sqlite3_close(db);
        return n;
}

static void one_write_per_commit(void **state)
{
        struct tmpdir *t = *state;
        sqlite3 *db = open_durable(t->path);
        sqlite3 *reader = NULL;
        uint64_t before;

        exec(db, "CREATE TABLE t (a INTEGER PRIMARY KEY, b TEXT)");
        insert_rows(db, 0, 1); /* the WAL's header is written and synced alone at its start */
        before = store_wal_writes();
        insert_rows(db, 1, 4); /* 4 rows of 3000 bytes: several frames, each a header and page */
        assert_int_equal(store_wal_writes() - before, 1);
        /* another connection reads the frames from the file */
        assert_int_equal(sqlite3_open_v2(t->path, &reader, SQLITE_OPEN_READONLY, NULL), 0);
        assert_int_equal(count(reader), 5);
        sqlite3_close(reader);
        assert_int_equal(count_reopened(db, t->path), 5);
}

/* 100 rows of 3000 bytes: over 300 KiB of frames, more than one write of the unix VFS takes. */
static void larger_than_one_write(void **state)
{
        struct tmpdir *t = *state;
        sqlite3 *db = open_durable(t->path);
        uint64_t before;

        exec(db, "CREATE TABLE t (a INTEGER PRIMARY KEY, b TEXT)");
        insert_rows(db, 0, 1);
        before = store_wal_writes();
        insert_rows(db, 1, 100);
        assert_true(store_wal_writes() - before > 1);
        assert_true(store_wal_writes() - before < 100);
        assert_int_equal(count(db), 101);
        assert_int_equal(count_reopened(db, t->path), 101);
}

/* A page cache of 10 pages: the transaction's pages go to the WAL before its commit and are read
 * back from there by the same connection. */
static void spilled_pages_read_back(void **state)
{
        struct tmpdir *t = *state;
        sqlite3 *db = open_durable(t->path);

        exec(db, "PRAGMA cache_size = 10");
        exec(db, "CREATE TABLE t (a INTEGER PRIMARY KEY, b TEXT)");
        exec(db, "BEGIN IMMEDIATE");
        exec(db,
             "WITH RECURSIVE s(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM s WHERE x < 200) "
             "INSERT INTO t SELECT x, printf('%.*c', 3000, 'b') FROM s");
        assert_int_equal(count(db), 200);
        exec(db, "UPDATE t SET b = printf('%.*c', 3000, 'c') WHERE a % 2 = 0");
        exec(db, "COMMIT");
        assert_int_equal(count(db), 200);
        assert_int_equal(count_reopened(db, t->path), 200);
}

/* Opens path as a URI (query parameters such as psow=0 taken) through the store's VFS. */
static sqlite3 *open_uri(const char *path, const char *query)
{
        char uri[4200];
        sqlite3 *db = NULL;

        snprintf(uri, sizeof(uri), "file:%s%s", path, query);
        assert_int_equal(sqlite3_open_v2(uri,
                                         &db,
                                         SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
                                             SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX,
                                         store_wal_vfs()),
                         SQLITE_OK);
        exec(db, "PRAGMA journal_mode = WAL");
        exec(db, "PRAGMA wal_autocheckpoint = 0");
        return db;
}

/* Commits on one connection with the given settings; another counts after each commit, then
 * checkpoints everything into the database file, which a third connection reads. */
static void other_connection_sees_commits(const char *path, const char *query, const char *sync)
{
        sqlite3 *writer = open_uri(path, query);
        sqlite3 *other = NULL;
        int frames = -1, checkpointed = -1;

        exec(writer, sync);
        exec(writer, "CREATE TABLE t (a INTEGER PRIMARY KEY, b TEXT)");
        other = open_uri(path, query);
        for (int i = 0; i < 3; i++) {
                insert_rows(writer, i * 2, 2);
                assert_int_equal(count(other), (i + 1) * 2);
        }
        assert_int_equal(sqlite3_wal_checkpoint_v2(
                             other, NULL, SQLITE_CHECKPOINT_TRUNCATE, &frames, &checkpointed),
                         SQLITE_OK);
        assert_int_equal(frames, 0); /* TRUNCATE: every frame copied and the WAL emptied */
        /* the WAL starts over: frames written again from its start are still read right */
        insert_rows(writer, 6, 2);
        assert_int_equal(count(other), 8);
        assert_int_equal(
            sqlite3_wal_checkpoint_v2(other, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL),
            SQLITE_OK);
        sqlite3_close(other);
        assert_int_equal(count_reopened(writer, path), 8);
}

static void synchronous_normal(void **state)
{
        other_connection_sees_commits(
            ((struct tmpdir *)*state)->path, "", "PRAGMA synchronous = NORMAL");
}

static void synchronous_off(void **state)
{
        other_connection_sees_commits(
            ((struct tmpdir *)*state)->path, "", "PRAGMA synchronous = OFF");
}

/* psow=0: SQLite pads the commit's last frames to the sector after the sync. */
static void padding_after_sync(void **state)
{
        other_connection_sees_commits(
            ((struct tmpdir *)*state)->path, "?psow=0", "PRAGMA synchronous = FULL");
}

/* A transaction spilled to the WAL, then rolled back, under the store's own FULL: the next commit,
 * by another connection, is not overwritten by the spilled frames. */
static void rolled_back_spill(void **state)
{
        struct tmpdir *t = *state;
        sqlite3 *first = open_uri(t->path, "");
        sqlite3 *second = NULL;

        exec(first, "PRAGMA synchronous = FULL");
        exec(first, "CREATE TABLE t (a INTEGER PRIMARY KEY, b TEXT)");
        second = open_uri(t->path, "");
        exec(first, "PRAGMA cache_size = 10");
        exec(first, "BEGIN IMMEDIATE");
        exec(first,
             "WITH RECURSIVE s(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM s WHERE x < 30) "
             "INSERT INTO t SELECT x, printf('%.*c', 3000, 'b') FROM s");
        exec(first, "ROLLBACK");
        insert_rows(second, 100, 4);
        assert_int_equal(count(first), 4);
        assert_int_equal(count(second), 4);
        sqlite3_close(second);
        assert_int_equal(count_reopened(first, t->path), 4);
}

/* A write-out at the barrier that fails (the WAL may not grow: RLIMIT_FSIZE at its size) cannot
 * fail the commit that SQLite publishes there; the connection's next write returns the error. */
static void failed_write_out_poisons_the_wal(void **state)
{
        struct tmpdir *t = *state;
        sqlite3 *db = open_uri(t->path, "");
        char wal[128];
        struct rlimit saved, limit;
        struct stat st;
        int rc;

        exec(db, "PRAGMA synchronous = NORMAL");
        exec(db, "CREATE TABLE t (a INTEGER PRIMARY KEY, b TEXT)");
        snprintf(wal, sizeof(wal), "%s-wal", t->path);
        assert_int_equal(stat(wal, &st), 0);
        assert_int_equal(getrlimit(RLIMIT_FSIZE, &saved), 0);
        limit = (struct rlimit){.rlim_cur = (rlim_t)st.st_size, .rlim_max = saved.rlim_max};
        signal(SIGXFSZ, SIG_IGN);
        assert_int_equal(setrlimit(RLIMIT_FSIZE, &limit), 0);
        insert_rows(db, 0, 2); /* NORMAL: no sync; the frames go out at the barrier, and fail */
        assert_int_equal(setrlimit(RLIMIT_FSIZE, &saved), 0);
        signal(SIGXFSZ, SIG_DFL);
        rc = sqlite3_exec(db, "INSERT INTO t VALUES (100, 'x')", NULL, NULL, NULL);
        assert_int_not_equal(rc, SQLITE_OK);
        rc = sqlite3_exec(db, "INSERT INTO t VALUES (101, 'x')", NULL, NULL, NULL);
        assert_int_not_equal(rc, SQLITE_OK);
        sqlite3_close(db);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test_setup_teardown(one_write_per_commit, setup, teardown),
            cmocka_unit_test_setup_teardown(larger_than_one_write, setup, teardown),
            cmocka_unit_test_setup_teardown(spilled_pages_read_back, setup, teardown),
            cmocka_unit_test_setup_teardown(synchronous_normal, setup, teardown),
            cmocka_unit_test_setup_teardown(synchronous_off, setup, teardown),
            cmocka_unit_test_setup_teardown(padding_after_sync, setup, teardown),
            cmocka_unit_test_setup_teardown(rolled_back_spill, setup, teardown),
            cmocka_unit_test_setup_teardown(failed_write_out_poisons_the_wal, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
