/* SPDX-License-Identifier: Apache-2.0 */
/* SQLite helpers of the store: errors as -errno with a message, one-shot statements. */
#include <errno.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdint.h>
#include <strings.h>

#include "store_internal.h"

int store_errno(sqlite3 *db, int rc)
{
        int sys = db ? sqlite3_system_errno(db) : 0;

        switch (rc & 0xff) {
        case SQLITE_OK:
        case SQLITE_ROW:
        case SQLITE_DONE:
                return 0;
        case SQLITE_NOMEM:
                return -ENOMEM;
        case SQLITE_BUSY:
        case SQLITE_LOCKED:
                return -EBUSY;
        case SQLITE_READONLY:
                return -EROFS;
        case SQLITE_PERM:
        case SQLITE_AUTH:
                return -EACCES;
        case SQLITE_FULL:
                return -ENOSPC;
        case SQLITE_TOOBIG:
                return -E2BIG;
        case SQLITE_CONSTRAINT:
                return -EEXIST;
        case SQLITE_CORRUPT:
        case SQLITE_NOTADB:
        case SQLITE_FORMAT:
                return -EBADMSG;
        case SQLITE_CANTOPEN:
                return sys > 0 ? -sys : -ENOENT;
        case SQLITE_IOERR:
                return sys > 0 ? -sys : -EIO;
        default:
                return -EIO;
        }
}

int store_sqlite_fail(const char *path, sqlite3 *db, int rc, struct xp_error *err, const char *what)
{
        int r = store_errno(db, rc);

        if (r == 0)
                r = -EIO;
        return xp_errorf(
            err, r, "store %s: %s: %s", path, what, db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
}

void store_stmts_finalize(sqlite3_stmt **stmts, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                sqlite3_finalize(stmts[i]);
                stmts[i] = NULL;
        }
}

int store_pragma(
    const char *path, sqlite3 *db, const char *sql, const char *expect, struct xp_error *err)
{
        sqlite3_stmt *st = NULL;
        int rc, r = 0;

        rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
        if (rc != SQLITE_OK)
                return store_sqlite_fail(path, db, rc, err, sql);
        rc = sqlite3_step(st);
        if (rc != SQLITE_ROW && rc != SQLITE_DONE)
                r = store_sqlite_fail(path, db, rc, err, sql);
        else if (expect &&
                 (rc != SQLITE_ROW ||
                  strcasecmp((const char *)sqlite3_column_text(st, 0) ?: "", expect) != 0))
                r = xp_errorf(err,
                              -EIO,
                              "store %s: %s: got \"%s\", not \"%s\"",
                              path,
                              sql,
                              rc == SQLITE_ROW ? (const char *)sqlite3_column_text(st, 0) : "",
                              expect);
        sqlite3_finalize(st);
        return r;
}

int store_query_int(
    const char *path, sqlite3 *db, const char *sql, int64_t *ret, struct xp_error *err)
{
        sqlite3_stmt *st = NULL;
        int rc, r = 0;

        rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
        if (rc != SQLITE_OK)
                return store_sqlite_fail(path, db, rc, err, sql);
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW)
                *ret = sqlite3_column_int64(st, 0);
        else if (rc == SQLITE_DONE)
                *ret = 0;
        else
                r = store_sqlite_fail(path, db, rc, err, sql);
        sqlite3_finalize(st);
        return r;
}

/*
 * SQLite counts every allocation under one process-wide mutex for sqlite3_memory_used(), which
 * xpool never reads: each statement of every reader and of the writer took it (thread dumps of
 * a busy server showed dozens waiting there). Only possible before SQLite initialises; when
 * something else in the process was first, SQLite refuses it and keeps counting.
 */
static void sqlite_setup(void)
{
        (void)sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}

int store_open_db(const char *path, int flags, sqlite3 **ret, struct xp_error *err)
{
        static pthread_once_t setup = PTHREAD_ONCE_INIT;
        sqlite3 *db = NULL;
        int rc, r;

        pthread_once(&setup, sqlite_setup);
        flags |= SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE;
        if (!(flags & SQLITE_OPEN_READONLY))
                flags |= SQLITE_OPEN_READWRITE;
        /* every connection through it: only the writer's WAL has writes to gather (walbuf.c) */
        rc = sqlite3_open_v2(path, &db, flags, store_wal_vfs());
        if (rc != SQLITE_OK) {
                r = store_sqlite_fail(path, db, rc, err, "cannot open the database");
                sqlite3_close(db);
                return r;
        }
        sqlite3_extended_result_codes(db, 1);
        rc = sqlite3_busy_timeout(db, BUSY_TIMEOUT_MS);
        if (rc != SQLITE_OK) {
                r = store_sqlite_fail(path, db, rc, err, "setting the busy timeout");
                sqlite3_close(db);
                return r;
        }
        *ret = db;
        return 0;
}

int store_db_durable(const char *path, sqlite3 *db, struct xp_error *err)
{
        int r;

        /* WAL and FULL: the WAL is fsync'ed at every commit, so an acknowledged write survives
         * a power cut, not only the death of the process. */
        r = store_pragma(path, db, "PRAGMA journal_mode = WAL", "wal", err);
        if (r >= 0)
                r = store_pragma(path, db, "PRAGMA synchronous = FULL", NULL, err);
        return r;
}

int store_exec(const char *path, sqlite3 *db, const char *sql, struct xp_error *err)
{
        char *msg = NULL;
        int rc, r;

        rc = sqlite3_exec(db, sql, NULL, NULL, &msg);
        if (rc == SQLITE_OK)
                return 0;
        r = store_errno(db, rc) ?: -EIO;
        xp_errorf(err, r, "store %s: %s", path, msg ?: sqlite3_errstr(rc));
        sqlite3_free(msg);
        return r;
}

/* Steps a statement that returns no row, and resets it. SQLITE_DONE or the error code. */
int store_step_done(sqlite3_stmt *st)
{
        int rc = sqlite3_step(st);

        sqlite3_reset(st);
        return rc == SQLITE_ROW ? SQLITE_DONE : rc;
}
