/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The durable object store: SQLite in WAL mode with synchronous=FULL, one writer connection used
 * by one thread at a time (the group-commit leader) and a small pool of reader connections.
 *
 * Group commit: a writer enqueues its operation and waits. The first waiter that finds no commit
 * in flight becomes the leader: it takes the queue (up to BATCH_MAX operations), runs them all in
 * one BEGIN IMMEDIATE ... COMMIT, and wakes every owner with its own result. Operations are
 * checked before they are applied, so one -EEXIST or -ESTALE changes nothing and does not fail
 * the others; a database failure fails the whole batch and nothing of it is written.
 *
 * Versions: meta('version') holds the last version handed out. The leader reads it inside the
 * write transaction, gives each successful write the next number, and stores the new value in
 * the same transaction. The counter never goes back: not after deletes (objects rows go, the
 * counter stays), not after the event log is trimmed (events rows go, the counter stays), not
 * after a restart. max(events.version) would not do: it is the same number only while the newest
 * event is kept, and an AUTOINCREMENT key would tie the counter to the events table's own
 * bookkeeping; an explicit counter says what it is.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "xpool/macro.h"
#include "xpool/store.h"

#define DEFAULT_EVENT_HISTORY 10000
#define BATCH_MAX             512  /* writes in one transaction at most */
#define READERS_IDLE_MAX      8    /* idle reader connections kept open */
#define BUSY_TIMEOUT_MS       5000 /* another process holding the write lock: wait this long */
#define SCHEMA_VERSION        1
#define APPLICATION_ID        0x78706f6c /* "xpol" */
#define CHECKPOINT_PAGES      1000       /* WAL pages (4 MiB) that call for a checkpoint */
/* WAL pages past which writes wait for a checkpoint: the background one is not keeping up. */
#define CHECKPOINT_PAGES_HARD (4 * CHECKPOINT_PAGES)

enum op_type {
        OP_CREATE,
        OP_UPDATE,
        OP_DELETE,
};

/* One queued write; lives on its owner's stack until done. */
struct op {
        enum op_type type;
        const char *kind;
        const char *namespace;
        const char *name;
        uint64_t expected_version;
        const char *body; /* serialised object without metadata.resourceVersion (not for delete) */
        size_t body_len;

        /* written by the leader, read by the owner once done */
        bool done;
        int result;
        uint64_t version;
        char *last_body; /* delete: the stored body, malloc'ed */
        struct xp_error err;

        struct op *next;
};

enum read_stmt {
        RS_GET,
        RS_LIST_NS,
        RS_LIST_ALL,
        RS_META_VERSION,
        RS_EVENTS_MIN,
        RS_EVENTS_NS,
        RS_EVENTS_ALL,
        RS_EVENT_BEFORE,
        RS_BEGIN,
        RS_COMMIT,
        RS_ROLLBACK,
        _RS_MAX,
};

static const char *const read_sql[_RS_MAX] = {
    [RS_GET] = "SELECT version, body FROM objects WHERE kind = ?1 AND namespace = ?2 AND "
               "name = ?3",
    [RS_LIST_NS] = "SELECT namespace, name, version, body FROM objects WHERE kind = ?1 AND "
                   "namespace = ?2 ORDER BY namespace, name",
    [RS_LIST_ALL] = "SELECT namespace, name, version, body FROM objects WHERE kind = ?1 "
                    "ORDER BY namespace, name",
    [RS_META_VERSION] = "SELECT value FROM meta WHERE key = 'version'",
    [RS_EVENTS_MIN] = "SELECT min(version) FROM events",
    [RS_EVENTS_NS] = "SELECT version, type, namespace, name, body FROM events WHERE "
                     "version > ?1 AND kind = ?2 AND namespace = ?3 ORDER BY version LIMIT ?4",
    [RS_EVENTS_ALL] = "SELECT version, type, namespace, name, body FROM events WHERE "
                      "version > ?1 AND kind = ?2 ORDER BY version LIMIT ?3",
    /* newest first from the version on: the primary key's order, no index needed */
    [RS_EVENT_BEFORE] = "SELECT type, body, version FROM events WHERE version <= ?1 AND "
                        "kind = ?2 AND namespace = ?3 AND name = ?4 ORDER BY version DESC LIMIT 1",
    [RS_BEGIN] = "BEGIN",
    [RS_COMMIT] = "COMMIT",
    [RS_ROLLBACK] = "ROLLBACK",
};

enum write_stmt {
        WS_BEGIN,
        WS_COMMIT,
        WS_ROLLBACK,
        WS_META_VERSION,
        WS_META_SET_VERSION,
        WS_OBJECT_GET,
        WS_OBJECT_INSERT,
        WS_OBJECT_UPDATE,
        WS_OBJECT_DELETE,
        WS_EVENT_INSERT,
        WS_EVENTS_MIN,
        WS_EVENTS_TRIM,
        _WS_MAX,
};

static const char *const write_sql[_WS_MAX] = {
    [WS_BEGIN] = "BEGIN IMMEDIATE",
    [WS_COMMIT] = "COMMIT",
    [WS_ROLLBACK] = "ROLLBACK",
    [WS_META_VERSION] = "SELECT value FROM meta WHERE key = 'version'",
    [WS_META_SET_VERSION] = "UPDATE meta SET value = ?1 WHERE key = 'version'",
    [WS_OBJECT_GET] = "SELECT version, body FROM objects WHERE kind = ?1 AND namespace = ?2 "
                      "AND name = ?3",
    [WS_OBJECT_INSERT] = "INSERT INTO objects (kind, namespace, name, version, body) "
                         "VALUES (?1, ?2, ?3, ?4, ?5)",
    [WS_OBJECT_UPDATE] = "UPDATE objects SET version = ?4, body = ?5 WHERE kind = ?1 AND "
                         "namespace = ?2 AND name = ?3",
    [WS_OBJECT_DELETE] = "DELETE FROM objects WHERE kind = ?1 AND namespace = ?2 AND "
                         "name = ?3",
    [WS_EVENT_INSERT] = "INSERT INTO events (version, type, kind, namespace, name, body) "
                        "VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    [WS_EVENTS_MIN] = "SELECT min(version) FROM events",
    [WS_EVENTS_TRIM] = "DELETE FROM events WHERE version <= ?1",
};

static const char schema_sql[] =
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS objects (kind TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT "
    "NOT NULL, version INTEGER NOT NULL, body TEXT NOT NULL, PRIMARY KEY (kind, namespace, "
    "name)) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS events (version INTEGER PRIMARY KEY, type INTEGER NOT NULL, kind "
    "TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL, body TEXT NOT NULL);"
    "INSERT OR IGNORE INTO meta (key, value) VALUES ('version', 0);";

struct conn {
        sqlite3 *db;
        sqlite3_stmt *stmts[_RS_MAX];
        struct conn *next;
};

struct xp_store {
        char *path;
        size_t event_history;
        size_t trim_slack;

        pthread_mutex_t lock;
        pthread_cond_t op_done;        /* a batch finished */
        pthread_cond_t version_bumped; /* a commit made the version grow (CLOCK_MONOTONIC) */

        /* under lock */
        struct op *queue_head;
        struct op *queue_tail;
        bool committing;
        uint64_t version;
        int broken; /* set after a failed commit whose outcome on disk is unknown */
        struct xp_store_stats stats;
        struct conn *idle_readers;
        size_t n_idle_readers;

        /*
         * The checkpointer: a thread with its own connection that copies the WAL into the
         * database file while writers go on committing, so that no batch waits for it (unless
         * the WAL outgrows CHECKPOINT_PAGES_HARD).
         */
        pthread_t checkpointer;
        bool checkpointer_running;
        sqlite3 *checkpoint_db;    /* used only by the checkpointer thread */
        pthread_cond_t checkpoint; /* checkpoint_wanted or closing changed */
        bool checkpoint_wanted;    /* under lock */
        int checkpoint_asked_at;   /* under lock: wal_pages when the last one was asked for */
        bool closing;              /* under lock */

        /* used only by the leader (committing == true) */
        sqlite3 *writer;
        sqlite3_stmt *wstmts[_WS_MAX];
        int wal_pages; /* the WAL's size after the last commit, from wal_hook() */
};

static int errno_from_sqlite(sqlite3 *db, int rc)
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

/* Sets err to "store PATH: WHAT: sqlite's message" and returns the matching -errno. */
static int
sqlite_fail(const char *path, sqlite3 *db, int rc, struct xp_error *err, const char *what)
{
        int r = errno_from_sqlite(db, rc);

        if (r == 0)
                r = -EIO;
        return xp_errorf(
            err, r, "store %s: %s: %s", path, what, db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
}

static const char *key_ns(const char *namespace)
{
        return namespace[0] ? "/" : "";
}

static void stmts_finalize(sqlite3_stmt **stmts, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                sqlite3_finalize(stmts[i]);
                stmts[i] = NULL;
        }
}

static int exec_pragma(
    const char *path, sqlite3 *db, const char *sql, const char *expect, struct xp_error *err)
{
        sqlite3_stmt *st = NULL;
        int rc, r = 0;

        rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
        if (rc != SQLITE_OK)
                return sqlite_fail(path, db, rc, err, sql);
        rc = sqlite3_step(st);
        if (rc != SQLITE_ROW && rc != SQLITE_DONE)
                r = sqlite_fail(path, db, rc, err, sql);
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

static int
query_int(const char *path, sqlite3 *db, const char *sql, int64_t *ret, struct xp_error *err)
{
        sqlite3_stmt *st = NULL;
        int rc, r = 0;

        rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
        if (rc != SQLITE_OK)
                return sqlite_fail(path, db, rc, err, sql);
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW)
                *ret = sqlite3_column_int64(st, 0);
        else if (rc == SQLITE_DONE)
                *ret = 0;
        else
                r = sqlite_fail(path, db, rc, err, sql);
        sqlite3_finalize(st);
        return r;
}

static int open_db(const char *path, bool create, sqlite3 **ret, struct xp_error *err)
{
        sqlite3 *db = NULL;
        int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE;
        int rc, r;

        if (create)
                flags |= SQLITE_OPEN_CREATE;
        rc = sqlite3_open_v2(path, &db, flags, NULL);
        if (rc != SQLITE_OK) {
                r = sqlite_fail(path, db, rc, err, "cannot open the database");
                sqlite3_close(db);
                return r;
        }
        sqlite3_extended_result_codes(db, 1);
        rc = sqlite3_busy_timeout(db, BUSY_TIMEOUT_MS);
        if (rc != SQLITE_OK) {
                r = sqlite_fail(path, db, rc, err, "setting the busy timeout");
                sqlite3_close(db);
                return r;
        }
        /* WAL and FULL: the WAL is fsync'ed at every commit, so an acknowledged write survives
         * a power cut, not only the death of the process. */
        r = exec_pragma(path, db, "PRAGMA journal_mode = WAL", "wal", err);
        if (r >= 0)
                r = exec_pragma(path, db, "PRAGMA synchronous = FULL", NULL, err);
        if (r < 0) {
                sqlite3_close(db);
                return r;
        }
        *ret = db;
        return 0;
}

static int exec_sql(const char *path, sqlite3 *db, const char *sql, struct xp_error *err)
{
        char *msg = NULL;
        int rc, r;

        rc = sqlite3_exec(db, sql, NULL, NULL, &msg);
        if (rc == SQLITE_OK)
                return 0;
        r = errno_from_sqlite(db, rc) ?: -EIO;
        xp_errorf(err, r, "store %s: %s", path, msg ?: sqlite3_errstr(rc));
        sqlite3_free(msg);
        return r;
}

/* Checks the file is ours (or new), creates the tables, and returns the version counter. */
static int init_schema(const char *path, sqlite3 *db, uint64_t *ret_version, struct xp_error *err)
{
        int64_t app_id, user_version, version;
        char sql[128];
        int r;

        r = exec_sql(path, db, "BEGIN IMMEDIATE", err);
        if (r < 0)
                return r;
        r = query_int(path, db, "PRAGMA application_id", &app_id, err);
        if (r >= 0)
                r = query_int(path, db, "PRAGMA user_version", &user_version, err);
        if (r < 0)
                goto rollback;
        if (app_id != 0 && app_id != APPLICATION_ID) {
                r = xp_errorf(err,
                              -EBADMSG,
                              "store %s: not an xpool store (SQLite application_id %#" PRIx64 ")",
                              path,
                              (uint64_t)app_id);
                goto rollback;
        }
        if (user_version > SCHEMA_VERSION) {
                r = xp_errorf(err,
                              -EPROTO,
                              "store %s: written by a newer xpool (schema %" PRId64 ", this one "
                              "reads up to %d)",
                              path,
                              user_version,
                              SCHEMA_VERSION);
                goto rollback;
        }
        if (app_id == 0) {
                int64_t n_tables;

                r = query_int(path,
                              db,
                              "SELECT count(*) FROM sqlite_schema WHERE type = 'table'",
                              &n_tables,
                              err);
                if (r < 0)
                        goto rollback;
                if (n_tables > 0) {
                        r = xp_errorf(err,
                                      -EBADMSG,
                                      "store %s: an SQLite database of another program, not an "
                                      "xpool store",
                                      path);
                        goto rollback;
                }
        }
        snprintf(sql,
                 sizeof(sql),
                 "PRAGMA application_id = %d; PRAGMA user_version = %d;",
                 APPLICATION_ID,
                 SCHEMA_VERSION);
        r = exec_sql(path, db, schema_sql, err);
        if (r >= 0)
                r = exec_sql(path, db, sql, err);
        if (r >= 0)
                r = query_int(
                    path, db, "SELECT value FROM meta WHERE key = 'version'", &version, err);
        if (r < 0)
                goto rollback;
        r = exec_sql(path, db, "COMMIT", err);
        if (r < 0)
                goto rollback;
        *ret_version = (uint64_t)version;
        return 0;
rollback:
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
        return r;
}

/* Steps a statement that returns no row, and resets it. SQLITE_DONE or the error code. */
static int step_done(sqlite3_stmt *st)
{
        int rc = sqlite3_step(st);

        sqlite3_reset(st);
        return rc == SQLITE_ROW ? SQLITE_DONE : rc;
}

static void conn_free(struct conn *c)
{
        if (!c)
                return;
        stmts_finalize(c->stmts, _RS_MAX);
        sqlite3_close(c->db);
        free(c);
}

/* A reader connection: an idle one from the pool, or a new one. Give back with conn_put(). */
static int conn_get(struct xp_store *store, struct conn **ret, struct xp_error *err)
{
        struct conn *c;
        int r;

        pthread_mutex_lock(&store->lock);
        c = store->idle_readers;
        if (c) {
                store->idle_readers = c->next;
                store->n_idle_readers--;
        }
        pthread_mutex_unlock(&store->lock);
        if (c) {
                *ret = c;
                return 0;
        }

        c = calloc(1, sizeof(*c));
        if (!c)
                return xp_errorf(err, -ENOMEM, "store %s: out of memory", store->path);
        r = open_db(store->path, false, &c->db, err);
        if (r < 0) {
                free(c);
                return r;
        }
        for (size_t i = 0; i < _RS_MAX; i++) {
                int rc = sqlite3_prepare_v3(
                    c->db, read_sql[i], -1, SQLITE_PREPARE_PERSISTENT, &c->stmts[i], NULL);
                if (rc != SQLITE_OK) {
                        r = sqlite_fail(store->path, c->db, rc, err, "preparing a query");
                        conn_free(c);
                        return r;
                }
        }
        *ret = c;
        return 0;
}

static void conn_put(struct xp_store *store, struct conn *c)
{
        if (!c)
                return;
        for (size_t i = 0; i < _RS_MAX; i++)
                sqlite3_reset(c->stmts[i]);
        if (!sqlite3_get_autocommit(c->db))
                step_done(c->stmts[RS_ROLLBACK]); /* a read that failed half-way */
        pthread_mutex_lock(&store->lock);
        if (store->n_idle_readers < READERS_IDLE_MAX) {
                c->next = store->idle_readers;
                store->idle_readers = c;
                store->n_idle_readers++;
                c = NULL;
        }
        pthread_mutex_unlock(&store->lock);
        conn_free(c);
}

void xp_store_close(struct xp_store *store)
{
        if (!store)
                return;
        if (store->checkpointer_running) {
                pthread_mutex_lock(&store->lock);
                store->closing = true;
                pthread_cond_signal(&store->checkpoint);
                pthread_mutex_unlock(&store->lock);
                pthread_join(store->checkpointer, NULL);
        }
        sqlite3_close(store->checkpoint_db); /* before the writer, the last connection */
        while (store->idle_readers) {
                struct conn *c = store->idle_readers;

                store->idle_readers = c->next;
                conn_free(c);
        }
        stmts_finalize(store->wstmts, _WS_MAX);
        sqlite3_close(store->writer); /* the last connection checkpoints and removes the WAL */
        pthread_cond_destroy(&store->version_bumped);
        pthread_cond_destroy(&store->checkpoint);
        pthread_cond_destroy(&store->op_done);
        pthread_mutex_destroy(&store->lock);
        free(store->path);
        free(store);
}

XP_DEFINE_FREEP(struct xp_store, xp_store_close)

/* Called by SQLite after each commit on the writer with the WAL's size in pages. */
static int wal_hook(void *userdata, sqlite3 *db, const char *name, int pages)
{
        struct xp_store *store = userdata;

        (void)db;
        (void)name;
        store->wal_pages = pages;
        return SQLITE_OK;
}

static void *checkpointer_main(void *userdata)
{
        struct xp_store *store = userdata;

        pthread_mutex_lock(&store->lock);
        for (;;) {
                int rc;

                while (!store->checkpoint_wanted && !store->closing)
                        pthread_cond_wait(&store->checkpoint, &store->lock);
                if (store->closing)
                        break;
                pthread_mutex_unlock(&store->lock);
                /* PASSIVE: copies what no reader still needs and never waits; the writer starts
                 * the WAL over at its next commit once all of it is copied */
                rc = sqlite3_wal_checkpoint_v2(
                    store->checkpoint_db, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
                pthread_mutex_lock(&store->lock);
                store->checkpoint_wanted = false;
                if (rc == SQLITE_OK)
                        store->stats.checkpoints++;
        }
        pthread_mutex_unlock(&store->lock);
        return NULL;
}

int xp_store_open(const struct xp_store_options *options,
                  struct xp_store **ret,
                  struct xp_error *err)
{
        _cleanup_(xp_store_closep) struct xp_store *store = NULL;
        pthread_condattr_t attr;
        int r;

        if (!options || !options->path || !options->path[0])
                return xp_errorf(err, -EINVAL, "store: no database path given");
        if (!sqlite3_threadsafe())
                return xp_errorf(err,
                                 -ENOTSUP,
                                 "store %s: the SQLite library was built without thread support",
                                 options->path);

        store = calloc(1, sizeof(*store));
        if (!store)
                return xp_errorf(err, -ENOMEM, "store %s: out of memory", options->path);
        /* Until the locks exist, close must not destroy them: set them up first. */
        pthread_mutex_init(&store->lock, NULL);
        pthread_cond_init(&store->op_done, NULL);
        pthread_cond_init(&store->checkpoint, NULL);
        pthread_condattr_init(&attr);
        pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
        pthread_cond_init(&store->version_bumped, &attr);
        pthread_condattr_destroy(&attr);

        store->path = strdup(options->path);
        if (!store->path)
                return xp_errorf(err, -ENOMEM, "store %s: out of memory", options->path);
        store->event_history = options->event_history ?: DEFAULT_EVENT_HISTORY;
        /* Trim in batches: let the log grow by an eighth (at least 16 events) past the history. */
        store->trim_slack = store->event_history / 8 > 16 ? store->event_history / 8 : 16;

        r = open_db(store->path, true, &store->writer, err);
        if (r < 0)
                return r;
        r = init_schema(store->path, store->writer, &store->version, err);
        if (r < 0)
                return r;
        for (size_t i = 0; i < _WS_MAX; i++) {
                int rc = sqlite3_prepare_v3(store->writer,
                                            write_sql[i],
                                            -1,
                                            SQLITE_PREPARE_PERSISTENT,
                                            &store->wstmts[i],
                                            NULL);
                if (rc != SQLITE_OK)
                        return sqlite_fail(
                            store->path, store->writer, rc, err, "preparing a query");
        }
        /* Checkpoints run after the batch's writers are woken, not inside its COMMIT. */
        r = exec_sql(store->path, store->writer, "PRAGMA wal_autocheckpoint = 0", err);
        if (r < 0)
                return r;
        sqlite3_wal_hook(store->writer, wal_hook, store);
        r = open_db(store->path, false, &store->checkpoint_db, err);
        if (r < 0)
                return r;
        r = -pthread_create(&store->checkpointer, NULL, checkpointer_main, store);
        if (r < 0)
                return xp_errorf(err,
                                 r,
                                 "store %s: cannot start the checkpointer: %s",
                                 store->path,
                                 strerror(-r));
        store->checkpointer_running = true;
        *ret = TAKE_PTR(store);
        return 0;
}

static void bind_key(sqlite3_stmt *st, const struct op *op)
{
        sqlite3_bind_text(st, 1, op->kind, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, op->namespace, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, op->name, -1, SQLITE_STATIC);
}

/*
 * Applies one operation inside the batch's transaction with the given new version. Returns 1
 * when applied, 0 when refused (op->result and op->err say why; nothing changed), or an SQLite
 * error code (negated) that fails the batch.
 */
static int apply_op(struct xp_store *store, struct op *op, uint64_t version)
{
        static const int event_types[] = {
            [OP_CREATE] = XP_STORE_ADDED,
            [OP_UPDATE] = XP_STORE_MODIFIED,
            [OP_DELETE] = XP_STORE_DELETED,
        };
        sqlite3_stmt *st;
        const char *body = op->body;
        size_t body_len = op->body_len;
        int rc;

        if (op->type == OP_UPDATE || op->type == OP_DELETE) {
                uint64_t stored;

                st = store->wstmts[WS_OBJECT_GET];
                bind_key(st, op);
                rc = sqlite3_step(st);
                if (rc == SQLITE_DONE) {
                        sqlite3_reset(st);
                        op->result = xp_errorf(&op->err,
                                               -ENOENT,
                                               "%s %s%s%s not found",
                                               op->kind,
                                               op->namespace,
                                               key_ns(op->namespace),
                                               op->name);
                        return 0;
                }
                if (rc != SQLITE_ROW) {
                        sqlite3_reset(st);
                        return -rc;
                }
                stored = (uint64_t)sqlite3_column_int64(st, 0);
                if (op->expected_version != 0 && op->expected_version != stored) {
                        sqlite3_reset(st);
                        op->result = xp_errorf(&op->err,
                                               -ESTALE,
                                               "%s %s%s%s: version %" PRIu64
                                               " expected, the stored one is %" PRIu64,
                                               op->kind,
                                               op->namespace,
                                               key_ns(op->namespace),
                                               op->name,
                                               op->expected_version,
                                               stored);
                        return 0;
                }
                if (op->type == OP_DELETE) {
                        const char *text = (const char *)sqlite3_column_text(st, 1);
                        int len = sqlite3_column_bytes(st, 1);

                        op->last_body = text ? strndup(text, (size_t)len) : NULL;
                        sqlite3_reset(st);
                        if (!op->last_body) {
                                op->result = xp_errorf(&op->err, -ENOMEM, "out of memory");
                                return 0;
                        }
                        body = op->last_body;
                        body_len = (size_t)len;
                } else
                        sqlite3_reset(st);
        }

        switch (op->type) {
        case OP_CREATE:
                st = store->wstmts[WS_OBJECT_INSERT];
                break;
        case OP_UPDATE:
                st = store->wstmts[WS_OBJECT_UPDATE];
                break;
        case OP_DELETE:
        default:
                st = store->wstmts[WS_OBJECT_DELETE];
                break;
        }
        bind_key(st, op);
        if (op->type != OP_DELETE) {
                sqlite3_bind_int64(st, 4, (sqlite3_int64)version);
                sqlite3_bind_text(st, 5, body, (int)body_len, SQLITE_STATIC);
        }
        rc = step_done(st);
        if (rc == SQLITE_CONSTRAINT_PRIMARYKEY && op->type == OP_CREATE) {
                /* a failed statement undoes only itself: the transaction goes on */
                op->result = xp_errorf(&op->err,
                                       -EEXIST,
                                       "%s %s%s%s already exists",
                                       op->kind,
                                       op->namespace,
                                       key_ns(op->namespace),
                                       op->name);
                return 0;
        }
        if (rc != SQLITE_DONE)
                return -rc;

        st = store->wstmts[WS_EVENT_INSERT];
        sqlite3_bind_int64(st, 1, (sqlite3_int64)version);
        sqlite3_bind_int(st, 2, event_types[op->type]);
        sqlite3_bind_text(st, 3, op->kind, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 4, op->namespace, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 5, op->name, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 6, body, (int)body_len, SQLITE_STATIC);
        rc = step_done(st);
        if (rc != SQLITE_DONE)
                return -rc;
        op->result = 0;
        op->version = version;
        return 1;
}

/* Cuts the event log back to event_history once it has grown trim_slack past it. */
static int trim_events(struct xp_store *store, uint64_t version, bool *ret_trimmed)
{
        sqlite3_stmt *st = store->wstmts[WS_EVENTS_MIN];
        uint64_t oldest;
        int rc;

        rc = sqlite3_step(st);
        if (rc != SQLITE_ROW) {
                sqlite3_reset(st);
                return rc;
        }
        if (sqlite3_column_type(st, 0) == SQLITE_NULL) {
                sqlite3_reset(st);
                return SQLITE_DONE;
        }
        oldest = (uint64_t)sqlite3_column_int64(st, 0);
        sqlite3_reset(st);
        if (version < oldest || version - oldest + 1 < store->event_history + store->trim_slack)
                return SQLITE_DONE;

        st = store->wstmts[WS_EVENTS_TRIM];
        sqlite3_bind_int64(st, 1, (sqlite3_int64)(version - store->event_history));
        rc = step_done(st);
        if (rc == SQLITE_DONE)
                *ret_trimmed = true;
        return rc;
}

/*
 * Runs a batch in one transaction. Sets every op's result. Returns the number of writes
 * committed, or -errno when the batch failed as a whole (each op then carries the error).
 */
static int
run_batch(struct xp_store *store, struct op *batch, uint64_t *ret_version, bool *ret_trimmed)
{
        sqlite3_stmt *st;
        uint64_t version;
        int rc, applied = 0, r;
        const char *what;

        what = "beginning a transaction";
        rc = step_done(store->wstmts[WS_BEGIN]);
        if (rc != SQLITE_DONE)
                goto fail;

        what = "reading the version counter";
        st = store->wstmts[WS_META_VERSION];
        rc = sqlite3_step(st);
        if (rc != SQLITE_ROW) {
                sqlite3_reset(st);
                if (rc == SQLITE_DONE)
                        rc = SQLITE_CORRUPT;
                goto fail;
        }
        version = (uint64_t)sqlite3_column_int64(st, 0);
        sqlite3_reset(st);

        what = "writing";
        for (struct op *op = batch; op; op = op->next) {
                r = apply_op(store, op, version + 1);
                if (r < 0) {
                        rc = -r;
                        goto fail;
                }
                if (r > 0) {
                        version++;
                        applied++;
                }
        }
        if (applied == 0) {
                /* nothing to make durable: no commit, no fsync */
                step_done(store->wstmts[WS_ROLLBACK]);
                return 0;
        }

        what = "updating the version counter";
        st = store->wstmts[WS_META_SET_VERSION];
        sqlite3_bind_int64(st, 1, (sqlite3_int64)version);
        rc = step_done(st);
        if (rc != SQLITE_DONE)
                goto fail;

        what = "trimming the event log";
        rc = trim_events(store, version, ret_trimmed);
        if (rc != SQLITE_DONE)
                goto fail;

        what = "committing";
        rc = step_done(store->wstmts[WS_COMMIT]);
        if (rc != SQLITE_DONE)
                goto fail;
        *ret_version = version;
        return applied;

fail:
        r = errno_from_sqlite(store->writer, rc) ?: -EIO;
        for (struct op *op = batch; op; op = op->next) {
                op->result = xp_errorf(
                    &op->err, r, "store %s: %s: %s", store->path, what, sqlite3_errstr(rc));
                op->version = 0;
                free(op->last_body);
                op->last_body = NULL;
        }
        if (!sqlite3_get_autocommit(store->writer))
                step_done(store->wstmts[WS_ROLLBACK]);
        /* A failed commit or fsync leaves the file's state unknown to us: refuse further writes
         * rather than hand out versions that may already be on disk. */
        if ((rc & 0xff) == SQLITE_IOERR || (rc & 0xff) == SQLITE_CORRUPT)
                *ret_version = UINT64_MAX;
        return r;
}

/* Queues op and waits for its result, leading a batch when no commit is in flight. */
static void submit(struct xp_store *store, struct op *op)
{
        pthread_mutex_lock(&store->lock);
        if (store->broken) {
                op->result = xp_errorf(&op->err,
                                       store->broken,
                                       "store %s: refusing writes after an I/O error on commit; "
                                       "restart to recover from the database file",
                                       store->path);
                pthread_mutex_unlock(&store->lock);
                return;
        }
        op->next = NULL;
        if (store->queue_tail)
                store->queue_tail->next = op;
        else
                store->queue_head = op;
        store->queue_tail = op;

        while (!op->done) {
                struct op *batch, *last;
                uint64_t version = 0;
                bool trimmed = false, checkpoint;
                size_t n = 1;
                int r;

                if (store->committing) {
                        pthread_cond_wait(&store->op_done, &store->lock);
                        continue;
                }

                /* Lead: take up to BATCH_MAX queued ops. */
                store->committing = true;
                batch = last = store->queue_head;
                while (last->next && n < BATCH_MAX) {
                        last = last->next;
                        n++;
                }
                store->queue_head = last->next;
                if (!store->queue_head)
                        store->queue_tail = NULL;
                last->next = NULL;
                pthread_mutex_unlock(&store->lock);

                r = run_batch(store, batch, &version, &trimmed);

                pthread_mutex_lock(&store->lock);
                /* A checkpoint is due: the checkpointer copies while writes go on. When the WAL
                 * has grown far past that anyway, keep the commit slot through a checkpoint
                 * here, so the next batch waits for it but the batch just committed does not. */
                if (r > 0 && store->wal_pages >= CHECKPOINT_PAGES && !store->checkpoint_wanted &&
                    (store->wal_pages < store->checkpoint_asked_at ||
                     store->wal_pages - store->checkpoint_asked_at >= CHECKPOINT_PAGES / 4)) {
                        store->checkpoint_wanted = true;
                        store->checkpoint_asked_at = store->wal_pages;
                        pthread_cond_signal(&store->checkpoint);
                }
                checkpoint = r > 0 && store->wal_pages >= CHECKPOINT_PAGES_HARD;
                store->committing = checkpoint;
                if (r > 0) {
                        store->version = version;
                        store->stats.commits++;
                        store->stats.writes += (uint64_t)r;
                        if ((uint64_t)r > store->stats.max_batch)
                                store->stats.max_batch = (uint64_t)r;
                        if (trimmed)
                                store->stats.trims++;
                        pthread_cond_broadcast(&store->version_bumped);
                } else if (r < 0 && version == UINT64_MAX)
                        store->broken = r;
                store->stats.rejected += n - (r > 0 ? (uint64_t)r : 0);
                for (struct op *o = batch, *next; o; o = next) {
                        next = o->next; /* o may go away as soon as done is seen */
                        o->next = NULL;
                        o->done = true;
                }
                pthread_cond_broadcast(&store->op_done);
                if (checkpoint) {
                        pthread_mutex_unlock(&store->lock);
                        /* PASSIVE: copies what no reader still needs, never waits for readers;
                         * the WAL starts over at the next write once all of it is copied */
                        r = sqlite3_wal_checkpoint_v2(
                            store->writer, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
                        store->wal_pages = 0;
                        pthread_mutex_lock(&store->lock);
                        if (r == SQLITE_OK)
                                store->stats.checkpoints++;
                        store->committing = false;
                        pthread_cond_broadcast(&store->op_done);
                }
        }
        pthread_mutex_unlock(&store->lock);
}

static int check_key(struct xp_store *store,
                     const char *kind,
                     const char *namespace,
                     const char *name,
                     struct xp_error *err)
{
        if (!kind || !namespace || !name || !kind[0] || !name[0] ||
            strlen(kind) > XP_STORE_KEY_MAX || strlen(namespace) > XP_STORE_KEY_MAX ||
            strlen(name) > XP_STORE_KEY_MAX)
                return xp_errorf(err,
                                 -EINVAL,
                                 "store %s: a key needs a kind and a name of 1 to %d bytes and a "
                                 "namespace of at most %d",
                                 store->path,
                                 XP_STORE_KEY_MAX,
                                 XP_STORE_KEY_MAX);
        return 0;
}

/* The object's text as stored: without metadata.resourceVersion. Caller frees. */
static int
serialise(struct xp_store *store, json_t *object, char **ret, size_t *ret_len, struct xp_error *err)
{
        json_t *metadata, *copy = NULL, *meta_copy = NULL;
        char *text;
        size_t len;

        if (!json_is_object(object))
                return xp_errorf(
                    err, -EINVAL, "store %s: the object is not a JSON object", store->path);
        metadata = json_object_get(object, "metadata");
        if (metadata && !json_is_object(metadata))
                return xp_errorf(
                    err, -EINVAL, "store %s: metadata is not a JSON object", store->path);
        if (metadata && json_object_get(metadata, "resourceVersion")) {
                /* shallow copies: the caller's object stays untouched until the write is done */
                copy = json_copy(object);
                meta_copy = json_copy(metadata);
                if (!copy || !meta_copy || json_object_del(meta_copy, "resourceVersion") < 0 ||
                    json_object_set_new(copy, "metadata", meta_copy) < 0) {
                        json_decref(copy);
                        return xp_errorf(err, -ENOMEM, "store %s: out of memory", store->path);
                }
                object = copy;
        }
        text = json_dumps(object, JSON_COMPACT);
        json_decref(copy);
        if (!text)
                return xp_errorf(
                    err, -ENOMEM, "store %s: cannot serialise the object", store->path);
        len = strlen(text);
        if (len > XP_STORE_BODY_MAX) {
                free(text);
                return xp_errorf(err,
                                 -E2BIG,
                                 "store %s: the object is %zu bytes, more than the %d allowed",
                                 store->path,
                                 len,
                                 XP_STORE_BODY_MAX);
        }
        *ret = text;
        *ret_len = len;
        return 0;
}

static int set_resource_version(json_t *object, uint64_t version)
{
        json_t *metadata = json_object_get(object, "metadata");
        char buf[24];

        if (!metadata) {
                metadata = json_object();
                if (!metadata || json_object_set_new(object, "metadata", metadata) < 0)
                        return -ENOMEM;
        }
        snprintf(buf, sizeof(buf), "%" PRIu64, version);
        return json_object_set_new(metadata, "resourceVersion", json_string(buf)) < 0 ? -ENOMEM : 0;
}

/* The stored text as an object with metadata.resourceVersion filled in. */
static json_t *parse_body(const char *text, size_t len, uint64_t version)
{
        json_t *object = json_loadb(text, len, 0, NULL);

        if (object && (!json_is_object(object) || set_resource_version(object, version) < 0)) {
                json_decref(object);
                return NULL;
        }
        return object;
}

static int write_op(struct xp_store *store,
                    struct op *op,
                    json_t *object,
                    json_t **ret_last,
                    uint64_t *ret_version,
                    struct xp_error *err)
{
        _cleanup_free_ char *body = NULL;
        _cleanup_free_ char *last_body = NULL;
        json_t *last = NULL;
        int r;

        r = check_key(store, op->kind, op->namespace, op->name, err);
        if (r < 0)
                return r;
        if (op->type != OP_DELETE) {
                r = serialise(store, object, &body, &op->body_len, err);
                if (r < 0)
                        return r;
                op->body = body;
        }

        submit(store, op);
        last_body = op->last_body;
        if (op->result < 0) {
                if (err)
                        *err = op->err;
                return op->result;
        }
        /* Durable now; what is left cannot fail the write, only what the caller gets back. */
        if (object && set_resource_version(object, op->version) < 0)
                return xp_errorf(err,
                                 -ENOMEM,
                                 "store %s: written as version %" PRIu64
                                 " but out of memory setting resourceVersion",
                                 store->path,
                                 op->version);
        if (ret_last) {
                last = parse_body(last_body, strlen(last_body), op->version);
                if (!last)
                        return xp_errorf(err,
                                         -ENOMEM,
                                         "store %s: deleted as version %" PRIu64
                                         " but cannot read back the last state",
                                         store->path,
                                         op->version);
                *ret_last = last;
        }
        if (ret_version)
                *ret_version = op->version;
        return 0;
}

int xp_store_create(struct xp_store *store,
                    const char *kind,
                    const char *namespace,
                    const char *name,
                    json_t *object,
                    uint64_t *ret_version,
                    struct xp_error *err)
{
        struct op op = {
            .type = OP_CREATE,
            .kind = kind,
            .namespace = namespace,
            .name = name,
        };

        return write_op(store, &op, object, NULL, ret_version, err);
}

int xp_store_update(struct xp_store *store,
                    const char *kind,
                    const char *namespace,
                    const char *name,
                    uint64_t expected_version,
                    json_t *object,
                    uint64_t *ret_version,
                    struct xp_error *err)
{
        struct op op = {
            .type = OP_UPDATE,
            .kind = kind,
            .namespace = namespace,
            .name = name,
            .expected_version = expected_version,
        };

        return write_op(store, &op, object, NULL, ret_version, err);
}

int xp_store_delete(struct xp_store *store,
                    const char *kind,
                    const char *namespace,
                    const char *name,
                    uint64_t expected_version,
                    json_t **ret_last,
                    uint64_t *ret_version,
                    struct xp_error *err)
{
        struct op op = {
            .type = OP_DELETE,
            .kind = kind,
            .namespace = namespace,
            .name = name,
            .expected_version = expected_version,
        };

        return write_op(store, &op, NULL, ret_last, ret_version, err);
}

static int read_fail(struct xp_store *store, struct conn *c, int rc, struct xp_error *err)
{
        return sqlite_fail(store->path, c->db, rc, err, "reading");
}

static int corrupt_body(struct xp_store *store,
                        const char *kind,
                        const char *namespace,
                        const char *name,
                        uint64_t version,
                        struct xp_error *err)
{
        return xp_errorf(err,
                         -EBADMSG,
                         "store %s: %s %s%s%s at version %" PRIu64
                         ": the stored body is not a JSON object (or out of memory)",
                         store->path,
                         kind,
                         namespace,
                         key_ns(namespace),
                         name,
                         version);
}

int xp_store_get(struct xp_store *store,
                 const char *kind,
                 const char *namespace,
                 const char *name,
                 json_t **ret_object,
                 uint64_t *ret_version,
                 struct xp_error *err)
{
        struct conn *c = NULL;
        sqlite3_stmt *st;
        json_t *object = NULL;
        uint64_t version = 0;
        int rc, r;

        r = check_key(store, kind, namespace, name, err);
        if (r < 0)
                return r;
        r = conn_get(store, &c, err);
        if (r < 0)
                return r;
        st = c->stmts[RS_GET];
        sqlite3_bind_text(st, 1, kind, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, namespace, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, name, -1, SQLITE_STATIC);
        rc = sqlite3_step(st);
        if (rc == SQLITE_DONE)
                r = xp_errorf(
                    err, -ENOENT, "%s %s%s%s not found", kind, namespace, key_ns(namespace), name);
        else if (rc != SQLITE_ROW)
                r = read_fail(store, c, rc, err);
        else {
                version = (uint64_t)sqlite3_column_int64(st, 0);
                object = parse_body((const char *)sqlite3_column_text(st, 1),
                                    (size_t)sqlite3_column_bytes(st, 1),
                                    version);
                if (!object)
                        r = corrupt_body(store, kind, namespace, name, version, err);
        }
        conn_put(store, c);
        if (r < 0)
                return r;
        if (ret_object)
                *ret_object = object;
        else
                json_decref(object);
        if (ret_version)
                *ret_version = version;
        return 0;
}

int xp_store_event_before(struct xp_store *store,
                          const char *kind,
                          const char *namespace,
                          const char *name,
                          uint64_t version,
                          enum xp_store_event_type *ret_type,
                          json_t **ret_object,
                          struct xp_error *err)
{
        struct conn *c = NULL;
        sqlite3_stmt *st;
        json_t *object = NULL;
        int type = 0, rc, r;

        r = check_key(store, kind, namespace, name, err);
        if (r < 0)
                return r;
        r = conn_get(store, &c, err);
        if (r < 0)
                return r;
        st = c->stmts[RS_EVENT_BEFORE];
        sqlite3_bind_int64(st, 1, (sqlite3_int64)version);
        sqlite3_bind_text(st, 2, kind, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, namespace, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 4, name, -1, SQLITE_STATIC);
        rc = sqlite3_step(st);
        if (rc == SQLITE_DONE)
                r = 0;
        else if (rc != SQLITE_ROW)
                r = read_fail(store, c, rc, err);
        else {
                uint64_t at = (uint64_t)sqlite3_column_int64(st, 2);

                type = sqlite3_column_int(st, 0);
                object = parse_body((const char *)sqlite3_column_text(st, 1),
                                    (size_t)sqlite3_column_bytes(st, 1),
                                    at);
                r = object ? 1 : corrupt_body(store, kind, namespace, name, at, err);
        }
        conn_put(store, c);
        if (r <= 0)
                return r;
        *ret_type = (enum xp_store_event_type)type;
        if (ret_object)
                *ret_object = object;
        else
                json_decref(object);
        return 1;
}

/* Starts a read transaction and reads the version counter in it. */
static int
read_begin(struct xp_store *store, struct conn *c, uint64_t *ret_version, struct xp_error *err)
{
        sqlite3_stmt *st = c->stmts[RS_META_VERSION];
        int rc;

        rc = step_done(c->stmts[RS_BEGIN]);
        if (rc != SQLITE_DONE)
                return read_fail(store, c, rc, err);
        rc = sqlite3_step(st);
        if (rc != SQLITE_ROW) {
                sqlite3_reset(st);
                return read_fail(store, c, rc == SQLITE_DONE ? SQLITE_CORRUPT : rc, err);
        }
        *ret_version = (uint64_t)sqlite3_column_int64(st, 0);
        sqlite3_reset(st);
        return 0;
}

int xp_store_list(struct xp_store *store,
                  const char *kind,
                  const char *namespace,
                  json_t **ret_items,
                  uint64_t *ret_version,
                  struct xp_error *err)
{
        struct conn *c = NULL;
        sqlite3_stmt *st;
        json_t *items = NULL;
        uint64_t version;
        int rc, r;

        r = check_key(store, kind, namespace ?: "", "-", err);
        if (r < 0)
                return r;
        items = json_array();
        if (!items)
                return xp_errorf(err, -ENOMEM, "store %s: out of memory", store->path);
        r = conn_get(store, &c, err);
        if (r < 0)
                goto out;
        r = read_begin(store, c, &version, err);
        if (r < 0)
                goto out;
        st = c->stmts[namespace ? RS_LIST_NS : RS_LIST_ALL];
        sqlite3_bind_text(st, 1, kind, -1, SQLITE_STATIC);
        if (namespace)
                sqlite3_bind_text(st, 2, namespace, -1, SQLITE_STATIC);
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                uint64_t v = (uint64_t)sqlite3_column_int64(st, 2);
                json_t *object = parse_body((const char *)sqlite3_column_text(st, 3),
                                            (size_t)sqlite3_column_bytes(st, 3),
                                            v);

                if (!object || json_array_append_new(items, object) < 0) {
                        r = corrupt_body(store,
                                         kind,
                                         (const char *)sqlite3_column_text(st, 0),
                                         (const char *)sqlite3_column_text(st, 1),
                                         v,
                                         err);
                        goto out;
                }
        }
        if (rc != SQLITE_DONE) {
                r = read_fail(store, c, rc, err);
                goto out;
        }
        sqlite3_reset(st);
        rc = step_done(c->stmts[RS_COMMIT]);
        if (rc != SQLITE_DONE) {
                r = read_fail(store, c, rc, err);
                goto out;
        }
        if (ret_version)
                *ret_version = version;
        *ret_items = TAKE_PTR(items);
        r = 0;
out:
        conn_put(store, c);
        json_decref(items);
        return r;
}

void xp_store_events_free(struct xp_store_event *events, size_t n)
{
        if (!events)
                return;
        for (size_t i = 0; i < n; i++) {
                free(events[i].kind);
                free(events[i].namespace);
                free(events[i].name);
                json_decref(events[i].object);
        }
        free(events);
}

int xp_store_events_scan(struct xp_store *store,
                         const char *kind,
                         const char *namespace,
                         uint64_t since,
                         size_t max,
                         struct xp_store_event **ret_events,
                         size_t *ret_n,
                         uint64_t *ret_through,
                         struct xp_error *err)
{
        struct xp_store_event *events = NULL;
        struct conn *c = NULL;
        sqlite3_stmt *st;
        uint64_t version, oldest;
        size_t n = 0, cap = 0;
        int rc, r;

        r = check_key(store, kind, namespace ?: "", "-", err);
        if (r < 0)
                return r;
        if (max == 0)
                return xp_errorf(
                    err, -EINVAL, "store %s: events_since needs max >= 1", store->path);
        if (since > INT64_MAX)
                since = INT64_MAX;
        r = conn_get(store, &c, err);
        if (r < 0)
                return r;
        r = read_begin(store, c, &version, err);
        if (r < 0)
                goto out;

        st = c->stmts[RS_EVENTS_MIN];
        rc = sqlite3_step(st);
        if (rc != SQLITE_ROW) {
                r = read_fail(store, c, rc, err);
                goto out;
        }
        /* no event kept: nothing written yet, the next one will be version + 1 */
        oldest = sqlite3_column_type(st, 0) == SQLITE_NULL ? version + 1
                                                           : (uint64_t)sqlite3_column_int64(st, 0);
        sqlite3_reset(st);
        if (since + 1 < oldest) {
                r = xp_errorf(err,
                              -XP_STORE_EXPIRED,
                              "store %s: events after version %" PRIu64
                              " are no longer kept (the oldest kept is %" PRIu64 "); list again",
                              store->path,
                              since,
                              oldest);
                goto out;
        }

        st = c->stmts[namespace ? RS_EVENTS_NS : RS_EVENTS_ALL];
        sqlite3_bind_int64(st, 1, (sqlite3_int64)since);
        sqlite3_bind_text(st, 2, kind, -1, SQLITE_STATIC);
        if (namespace)
                sqlite3_bind_text(st, 3, namespace, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, namespace ? 4 : 3, max > INT64_MAX ? INT64_MAX : (sqlite3_int64)max);
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                struct xp_store_event *e;
                uint64_t v = (uint64_t)sqlite3_column_int64(st, 0);

                if (n == cap) {
                        size_t want = cap ? cap * 2 : 16;
                        void *p;

                        if (want > max)
                                want = max;
                        p = reallocarray(events, want, sizeof(*events));
                        if (!p) {
                                r = xp_errorf(err, -ENOMEM, "store %s: out of memory", store->path);
                                goto out;
                        }
                        events = p;
                        cap = want;
                }
                e = &events[n];
                *e = (struct xp_store_event){
                    .type = (enum xp_store_event_type)sqlite3_column_int(st, 1),
                    .resource_version = v,
                    .kind = strdup(kind),
                    .namespace = strdup((const char *)sqlite3_column_text(st, 2) ?: ""),
                    .name = strdup((const char *)sqlite3_column_text(st, 3) ?: ""),
                    .object = parse_body((const char *)sqlite3_column_text(st, 4),
                                         (size_t)sqlite3_column_bytes(st, 4),
                                         v),
                };
                n++;
                if (!e->kind || !e->namespace || !e->name || !e->object) {
                        r = corrupt_body(store, kind, e->namespace ?: "", e->name ?: "", v, err);
                        goto out;
                }
        }
        if (rc != SQLITE_DONE) {
                r = read_fail(store, c, rc, err);
                goto out;
        }
        sqlite3_reset(st);
        rc = step_done(c->stmts[RS_COMMIT]);
        if (rc != SQLITE_DONE) {
                r = read_fail(store, c, rc, err);
                goto out;
        }
        if (ret_through)
                *ret_through =
                    n == max ? events[n - 1].resource_version : (version > since ? version : since);
        *ret_events = TAKE_PTR(events);
        *ret_n = n;
        n = 0;
        r = 0;
out:
        conn_put(store, c);
        xp_store_events_free(events, n);
        return r;
}

int xp_store_events_since(struct xp_store *store,
                          const char *kind,
                          const char *namespace,
                          uint64_t since,
                          size_t max,
                          struct xp_store_event **ret_events,
                          size_t *ret_n,
                          struct xp_error *err)
{
        return xp_store_events_scan(
            store, kind, namespace, since, max, ret_events, ret_n, NULL, err);
}

uint64_t xp_store_version(struct xp_store *store)
{
        uint64_t v;

        pthread_mutex_lock(&store->lock);
        v = store->version;
        pthread_mutex_unlock(&store->lock);
        return v;
}

int xp_store_wait(struct xp_store *store, uint64_t version, int timeout_ms)
{
        struct timespec deadline;
        int r;

        if (timeout_ms >= 0) {
                clock_gettime(CLOCK_MONOTONIC, &deadline);
                deadline.tv_sec += timeout_ms / 1000;
                deadline.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
                if (deadline.tv_nsec >= 1000000000L) {
                        deadline.tv_sec++;
                        deadline.tv_nsec -= 1000000000L;
                }
        }
        pthread_mutex_lock(&store->lock);
        while (store->version <= version) {
                if (timeout_ms < 0)
                        pthread_cond_wait(&store->version_bumped, &store->lock);
                else if (pthread_cond_timedwait(&store->version_bumped, &store->lock, &deadline) ==
                         ETIMEDOUT)
                        break;
        }
        r = store->version > version;
        pthread_mutex_unlock(&store->lock);
        return r;
}

void xp_store_stats(struct xp_store *store, struct xp_store_stats *ret)
{
        pthread_mutex_lock(&store->lock);
        *ret = store->stats;
        pthread_mutex_unlock(&store->lock);
}
