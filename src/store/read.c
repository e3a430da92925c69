/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Reads: a small pool of reader connections of their own (WAL lets them read while the writer
 * writes; they never wait for a commit), and the get, list, events and wait calls.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store_internal.h"
#include "xpool/macro.h"
#include "xpool/timeutil.h"

/* Idle reader connections kept open: one per client of a busy server (the API serves each
 * connection on its own thread), since opening one (file, WAL index, a dozen prepared queries)
 * costs more than most reads. 8 made 32 writing clients open and close a connection per read. */
#define READERS_IDLE_MAX 32

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
    /* the columns store_row_intact() checks */
    [RS_GET] = "SELECT kind, namespace, name, version, body, checksum FROM objects WHERE "
               "kind = ?1 AND namespace = ?2 AND name = ?3",
    [RS_LIST_NS] = "SELECT kind, namespace, name, version, body, checksum FROM objects WHERE "
                   "kind = ?1 AND namespace = ?2 ORDER BY namespace, name",
    [RS_LIST_ALL] = "SELECT kind, namespace, name, version, body, checksum FROM objects WHERE "
                    "kind = ?1 ORDER BY namespace, name",
    [RS_META_VERSION] = "SELECT value FROM meta WHERE key = 'version'",
    [RS_EVENTS_MIN] = "SELECT min(version) FROM events",
    /* the columns store_event_intact() checks */
    [RS_EVENTS_NS] =
        "SELECT version, type, kind, namespace, name, " STORE_EVENT_BODY ", checksum FROM events "
        "WHERE version > ?1 AND kind = ?2 AND namespace = ?3 ORDER BY version "
        "LIMIT ?4",
    [RS_EVENTS_ALL] =
        "SELECT version, type, kind, namespace, name, " STORE_EVENT_BODY ", checksum FROM events "
        "WHERE version > ?1 AND kind = ?2 ORDER BY version LIMIT ?3",
    /* newest first from the version on: the primary key's order, no index needed */
    [RS_EVENT_BEFORE] =
        "SELECT version, type, kind, namespace, name, " STORE_EVENT_BODY ", checksum FROM events "
        "WHERE version <= ?1 AND kind = ?2 AND namespace = ?3 AND name = ?4 "
        "ORDER BY version DESC LIMIT 1",
    [RS_BEGIN] = "BEGIN",
    [RS_COMMIT] = "COMMIT",
    [RS_ROLLBACK] = "ROLLBACK",
};

struct conn {
        sqlite3 *db;
        sqlite3_stmt *stmts[_RS_MAX];
        struct conn *next;
};

static void conn_free(struct conn *c)
{
        if (!c)
                return;
        store_stmts_finalize(c->stmts, _RS_MAX);
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
        r = store_open_db(store->path, 0, &c->db, err);
        if (r < 0) {
                free(c);
                return r;
        }
        r = store_db_durable(store->path, c->db, err);
        if (r < 0) {
                conn_free(c);
                return r;
        }
        for (size_t i = 0; i < _RS_MAX; i++) {
                int rc = sqlite3_prepare_v3(
                    c->db, read_sql[i], -1, SQLITE_PREPARE_PERSISTENT, &c->stmts[i], NULL);
                if (rc != SQLITE_OK) {
                        r = store_sqlite_fail(store->path, c->db, rc, err, "preparing a query");
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
                store_step_done(c->stmts[RS_ROLLBACK]); /* a read that failed half-way */
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

void store_readers_free(struct xp_store *store)
{
        while (store->idle_readers) {
                struct conn *c = store->idle_readers;

                store->idle_readers = c->next;
                conn_free(c);
        }
}

static int read_fail(struct xp_store *store, struct conn *c, int rc, struct xp_error *err)
{
        return store_sqlite_fail(store->path, c->db, rc, err, "reading");
}

/*
 * A row's body as readers get it: opened when it is sealed (xp_store_options.keys), else as
 * stored. *body and *len are replaced by the plaintext, which *ret_free holds (caller frees).
 */
static int row_body(struct xp_store *store,
                    const char *kind,
                    const char *namespace,
                    const char *name,
                    const char **body,
                    size_t *len,
                    char **ret_free,
                    struct xp_error *err)
{
        int r;

        *ret_free = NULL;
        if (!*body || !store_envelope_is(*body, *len))
                return 0;
        r = store_envelope_open(store, kind, namespace, name, *body, *len, ret_free, len, err);
        if (r > 0)
                *body = *ret_free;
        return r < 0 ? r : 0;
}

/*
 * Whether an objects row (the columns store_row_intact() reads) is as written: 0, or -EUCLEAN
 * naming it, so that a damaged row is an error for its reader, never wrong data.
 */
static int row_checked(struct xp_store *store, sqlite3_stmt *st, struct xp_error *err)
{
        if (store_row_intact(st, 0))
                return 0;
        return store_row_damaged(store->path,
                                 (const char *)sqlite3_column_text(st, 0) ?: "?",
                                 (const char *)sqlite3_column_text(st, 1) ?: "?",
                                 (const char *)sqlite3_column_text(st, 2) ?: "?",
                                 (uint64_t)sqlite3_column_int64(st, 3),
                                 err);
}

/* The same for an event row (the columns store_event_intact() reads). */
static int event_checked(struct xp_store *store, sqlite3_stmt *st, struct xp_error *err)
{
        if (store_event_intact(st, 0))
                return 0;
        return store_event_damaged(store->path,
                                   (const char *)sqlite3_column_text(st, 2) ?: "?",
                                   (const char *)sqlite3_column_text(st, 3) ?: "?",
                                   (const char *)sqlite3_column_text(st, 4) ?: "?",
                                   (uint64_t)sqlite3_column_int64(st, 0),
                                   err);
}

/* xp_store_get() and xp_store_get_shared() (shared: the ring's object when it holds the row's
 * version parsed, after the same checks of the row) */
static int get_row(struct xp_store *store,
                   const char *kind,
                   const char *namespace,
                   const char *name,
                   json_t **ret_object,
                   uint64_t *ret_version,
                   bool shared,
                   struct xp_error *err)
{
        struct conn *c = NULL;
        sqlite3_stmt *st;
        json_t *object = NULL;
        uint64_t version = 0;
        int rc, r;

        r = store_check_key(store, kind, namespace, name, err);
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
                r = xp_errorf(err,
                              -ENOENT,
                              "%s %s%s%s not found",
                              kind,
                              namespace,
                              store_key_ns(namespace),
                              name);
        else if (rc != SQLITE_ROW)
                r = read_fail(store, c, rc, err);
        else {
                const char *body = (const char *)sqlite3_column_text(st, 4);
                size_t len = (size_t)sqlite3_column_bytes(st, 4);
                _cleanup_free_ char *plain = NULL;

                version = (uint64_t)sqlite3_column_int64(st, 3);
                r = row_checked(store, st, err);
                if (r >= 0)
                        r = row_body(store, kind, namespace, name, &body, &len, &plain, err);
                if (r >= 0 && shared)
                        object = store_recent_object(store, version, kind, namespace, name);
                if (r >= 0 && !object)
                        object = store_parse_body(body, len, version);
                if (!object && r >= 0)
                        r = store_corrupt_body(store, kind, namespace, name, version, err);
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

int xp_store_get(struct xp_store *store,
                 const char *kind,
                 const char *namespace,
                 const char *name,
                 json_t **ret_object,
                 uint64_t *ret_version,
                 struct xp_error *err)
{
        return get_row(store, kind, namespace, name, ret_object, ret_version, false, err);
}

int xp_store_get_shared(struct xp_store *store,
                        const char *kind,
                        const char *namespace,
                        const char *name,
                        json_t **ret_object,
                        uint64_t *ret_version,
                        struct xp_error *err)
{
        return get_row(store, kind, namespace, name, ret_object, ret_version, true, err);
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

        r = store_check_key(store, kind, namespace, name, err);
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
                uint64_t at = (uint64_t)sqlite3_column_int64(st, 0);
                const char *body = (const char *)sqlite3_column_text(st, 5);
                size_t len = (size_t)sqlite3_column_bytes(st, 5);
                _cleanup_free_ char *plain = NULL;

                type = sqlite3_column_int(st, 1);
                r = event_checked(store, st, err);
                if (r >= 0)
                        r = row_body(store, kind, namespace, name, &body, &len, &plain, err);
                object = r < 0 ? NULL : store_parse_body(body, len, at);
                if (r >= 0)
                        r = object ? 1 : store_corrupt_body(store, kind, namespace, name, at, err);
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

        rc = store_step_done(c->stmts[RS_BEGIN]);
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

/* One row of a list: namespace, name, version and the stored body (borrowed until it returns). */
typedef int (*row_fn)(const char *namespace,
                      const char *name,
                      uint64_t version,
                      const char *body,
                      size_t len,
                      void *userdata);

/* Whether r (from row_body) says the row cannot be opened with the store's keys. */
static bool undecryptable(int r)
{
        return r == -ENOKEY || r == -EKEYREJECTED || r == -EBADMSG;
}

/*
 * The rows of a kind (in one namespace, or all when NULL) in one read transaction, ordered by
 * namespace then name: rows_begin() starts it, rows_step() hands rows to fn, rows_end() ends it.
 * A list read whole takes all three at once (list_rows()); a cursor (xp_store_list_open()) keeps
 * the transaction between steps, so that every row comes from the snapshot at one version.
 */
struct rows {
        struct xp_store *store;
        const char *kind;
        struct conn *c;
        sqlite3_stmt *st;
        uint64_t version; /* the store's version at the read */
};

static int rows_begin(struct rows *rows,
                      struct xp_store *store,
                      const char *kind,
                      const char *namespace,
                      struct xp_error *err)
{
        int r;

        *rows = (struct rows){.store = store, .kind = kind};
        r = store_check_key(store, kind, namespace ?: "", "-", err);
        if (r < 0)
                return r;
        r = conn_get(store, &rows->c, err);
        if (r < 0)
                return r;
        r = read_begin(store, rows->c, &rows->version, err);
        if (r < 0) {
                conn_put(store, rows->c);
                rows->c = NULL;
                return r;
        }
        rows->st = rows->c->stmts[namespace ? RS_LIST_NS : RS_LIST_ALL];
        sqlite3_bind_text(rows->st, 1, kind, -1, SQLITE_STATIC);
        if (namespace)
                sqlite3_bind_text(rows->st, 2, namespace, -1, SQLITE_STATIC);
        return 0;
}

/*
 * Up to max rows to fn (a negative return stops it and is returned, err set by fn): 1 when rows
 * may remain, 0 when every row was read.
 */
static int rows_step(struct rows *rows,
                     size_t max,
                     row_fn fn,
                     void *userdata,
                     const struct xp_store_skip *skip,
                     struct xp_error *err)
{
        sqlite3_stmt *st = rows->st;
        int rc = SQLITE_DONE, r;

        for (size_t i = 0; i < max && (rc = sqlite3_step(st)) == SQLITE_ROW; i++) {
                const char *ns = (const char *)sqlite3_column_text(st, 1) ?: "";
                const char *name = (const char *)sqlite3_column_text(st, 2) ?: "";
                const char *body = (const char *)sqlite3_column_text(st, 4);
                size_t len = (size_t)sqlite3_column_bytes(st, 4);
                char *plain = NULL;

                r = row_checked(rows->store, st, err);
                if (r >= 0)
                        r = row_body(rows->store, rows->kind, ns, name, &body, &len, &plain, err);
                if (undecryptable(r) && skip && skip->fn) {
                        /* a lost key: the caller is told, and the others are read */
                        skip->fn(ns, name, xp_error_message(err), skip->userdata);
                        if (err)
                                *err = (struct xp_error){0};
                        continue;
                }
                if (r >= 0)
                        r = fn(
                            ns, name, (uint64_t)sqlite3_column_int64(st, 3), body, len, userdata);
                free(plain);
                if (r < 0)
                        return r;
        }
        if (rc == SQLITE_ROW)
                return 1;
        if (rc != SQLITE_DONE)
                return read_fail(rows->store, rows->c, rc, err);
        return 0;
}

/* Ends the read: 0, or a negative errno when done (every row read) and the commit failed. */
static int rows_end(struct rows *rows, bool done, struct xp_error *err)
{
        int r = 0, rc;

        if (!rows->c)
                return 0;
        sqlite3_reset(rows->st);
        if (done) {
                rc = store_step_done(rows->c->stmts[RS_COMMIT]);
                if (rc != SQLITE_DONE)
                        r = read_fail(rows->store, rows->c, rc, err);
        }
        conn_put(rows->store, rows->c); /* rolls back a read that did not end */
        rows->c = NULL;
        return r;
}

/* Every row at once, as rows_step(); *ret_version the store's version at the read. */
static int list_rows(struct xp_store *store,
                     const char *kind,
                     const char *namespace,
                     row_fn fn,
                     void *userdata,
                     const struct xp_store_skip *skip,
                     uint64_t *ret_version,
                     struct xp_error *err)
{
        struct rows rows;
        int r;

        r = rows_begin(&rows, store, kind, namespace, err);
        if (r < 0)
                return r;
        r = rows_step(&rows, SIZE_MAX, fn, userdata, skip, err);
        if (r < 0) {
                rows_end(&rows, false, err);
                return r;
        }
        r = rows_end(&rows, true, err);
        if (r >= 0 && ret_version)
                *ret_version = rows.version;
        return r;
}

struct list_objects {
        struct xp_store *store;
        const char *kind;
        json_t *items;
        struct xp_error *err;
};

static int add_object(const char *namespace,
                      const char *name,
                      uint64_t version,
                      const char *body,
                      size_t len,
                      void *userdata)
{
        struct list_objects *l = userdata;
        json_t *object = body ? store_parse_body(body, len, version) : NULL;

        if (!object || json_array_append_new(l->items, object) < 0)
                return store_corrupt_body(l->store, l->kind, namespace, name, version, l->err);
        return 0;
}

int xp_store_list(struct xp_store *store,
                  const char *kind,
                  const char *namespace,
                  json_t **ret_items,
                  uint64_t *ret_version,
                  struct xp_error *err)
{
        return xp_store_list_readable(store, kind, namespace, NULL, ret_items, ret_version, err);
}

int xp_store_list_readable(struct xp_store *store,
                           const char *kind,
                           const char *namespace,
                           const struct xp_store_skip *skip,
                           json_t **ret_items,
                           uint64_t *ret_version,
                           struct xp_error *err)
{
        struct list_objects l = {.store = store, .kind = kind, .items = json_array(), .err = err};
        int r;

        if (!l.items)
                return xp_errorf(err, -ENOMEM, "store %s: out of memory", store->path);
        r = list_rows(store, kind, namespace, add_object, &l, skip, ret_version, err);
        if (r < 0) {
                json_decref(l.items);
                return r;
        }
        *ret_items = l.items;
        return 0;
}

struct list_texts {
        struct xp_store *store;
        const char *kind;
        xp_store_text_fn fn;
        void *userdata;
        char *buf; /* the row's text with its version, reused from row to row */
        size_t size;
        struct xp_error *err;
};

static int add_text(const char *namespace,
                    const char *name,
                    uint64_t version,
                    const char *body,
                    size_t len,
                    void *userdata)
{
        struct list_texts *l = userdata;
        size_t want = store_text_versioned_max(len) + 1, n;

        if (want > l->size) {
                char *buf = realloc(l->buf, want);

                if (!buf)
                        return xp_errorf(
                            l->err, -ENOMEM, "store %s: out of memory", l->store->path);
                l->buf = buf;
                l->size = want;
        }
        if (!body || store_text_versioned(body, len, version, l->buf, l->size, &n) < 0)
                return store_corrupt_body(l->store, l->kind, namespace, name, version, l->err);
        return l->fn(namespace, name, l->buf, n, l->userdata);
}

int xp_store_list_text(struct xp_store *store,
                       const char *kind,
                       const char *namespace,
                       xp_store_text_fn fn,
                       void *userdata,
                       uint64_t *ret_version,
                       struct xp_error *err)
{
        struct list_texts l = {
            .store = store, .kind = kind, .fn = fn, .userdata = userdata, .err = err};
        int r = list_rows(store, kind, namespace, add_text, &l, NULL, ret_version, err);

        free(l.buf);
        return r;
}

struct xp_store_cursor {
        struct rows rows;
        struct list_texts texts;
        char *kind, *namespace; /* the query's, bound to it */
        bool done;
};

int xp_store_list_open(struct xp_store *store,
                       const char *kind,
                       const char *namespace,
                       struct xp_store_cursor **ret,
                       uint64_t *ret_version,
                       struct xp_error *err)
{
        struct xp_store_cursor *cur = calloc(1, sizeof *cur);
        int r;

        if (cur) {
                cur->kind = strdup(kind);
                cur->namespace = namespace ? strdup(namespace) : NULL;
        }
        if (!cur || !cur->kind || (namespace && !cur->namespace)) {
                xp_store_list_close(cur);
                return xp_errorf(err, -ENOMEM, "store %s: out of memory", store->path);
        }
        r = rows_begin(&cur->rows, store, cur->kind, cur->namespace, err);
        if (r < 0) {
                xp_store_list_close(cur);
                return r;
        }
        cur->texts = (struct list_texts){.store = store, .kind = cur->kind};
        if (ret_version)
                *ret_version = cur->rows.version;
        *ret = cur;
        return 0;
}

int xp_store_list_next(struct xp_store_cursor *cur,
                       size_t max,
                       xp_store_text_fn fn,
                       void *userdata,
                       struct xp_error *err)
{
        int r;

        if (cur->done)
                return 0;
        cur->texts.fn = fn;
        cur->texts.userdata = userdata;
        cur->texts.err = err;
        r = rows_step(&cur->rows, max, add_text, &cur->texts, NULL, err);
        if (r == 0) {
                cur->done = true;
                r = rows_end(&cur->rows, true, err);
        }
        return r;
}

void xp_store_list_close(struct xp_store_cursor *cur)
{
        if (!cur)
                return;
        rows_end(&cur->rows, false, NULL);
        free(cur->texts.buf);
        free(cur->kind);
        free(cur->namespace);
        free(cur);
}

/* What the events hold, not their array. */
static void events_release(struct xp_store_event *events, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                json_decref(events[i].object);
                if (events[i].hold) { /* the strings point into it */
                        json_decref(events[i].hold);
                        continue;
                }
                free(events[i].kind);
                free(events[i].namespace);
                free(events[i].name);
                free(events[i].text);
        }
}

void xp_store_events_free(struct xp_store_event *events, size_t n)
{
        if (!events)
                return;
        events_release(events, n);
        free(events);
}

void xp_store_event_buffer_clear(struct xp_store_event_buffer *buf)
{
        events_release(buf->events, buf->n);
        buf->n = 0;
}

void xp_store_event_buffer_free(struct xp_store_event_buffer *buf)
{
        xp_store_event_buffer_clear(buf);
        free(buf->events);
        *buf = (struct xp_store_event_buffer){0};
}

/* Inside the read transaction: -EXPIRED when events after since are no longer kept. */
static int check_kept(
    struct xp_store *store, struct conn *c, uint64_t version, uint64_t since, struct xp_error *err)
{
        sqlite3_stmt *st = c->stmts[RS_EVENTS_MIN];
        uint64_t oldest;
        int rc;

        rc = sqlite3_step(st);
        if (rc != SQLITE_ROW)
                return read_fail(store, c, rc, err);
        /* no event kept: nothing written yet, the next one will be version + 1 */
        oldest = sqlite3_column_type(st, 0) == SQLITE_NULL ? version + 1
                                                           : (uint64_t)sqlite3_column_int64(st, 0);
        sqlite3_reset(st);
        if (since + 1 >= oldest)
                return 0;
        return xp_errorf(err,
                         -XP_STORE_EXPIRED,
                         "store %s: events after version %" PRIu64
                         " are no longer kept (the oldest kept is %" PRIu64 "); list again",
                         store->path,
                         since,
                         oldest);
}

int store_event_list_grow(struct store_event_list *l)
{
        size_t want = l->cap ? l->cap * 2 : 16;
        void *p;

        if (l->n < l->cap)
                return 0;
        if (want > l->max)
                want = l->max;
        p = reallocarray(l->events, want, sizeof(*l->events));
        if (!p)
                return -ENOMEM;
        l->events = p;
        l->cap = want;
        return 0;
}

/* Appends the current row of st (an RS_EVENTS_* query for kind), as an object or as text. */
static int append_event(struct xp_store *store,
                        struct store_event_list *l,
                        sqlite3_stmt *st,
                        const char *kind,
                        struct xp_error *err)
{
        const char *body = (const char *)sqlite3_column_text(st, 5);
        size_t len = (size_t)sqlite3_column_bytes(st, 5);
        uint64_t v = (uint64_t)sqlite3_column_int64(st, 0);
        _cleanup_free_ char *plain = NULL;
        struct xp_store_event *e;
        bool ok;
        int r;

        r = event_checked(store, st, err);
        if (r < 0)
                return r;
        if (store_event_list_grow(l) < 0)
                return xp_errorf(err, -ENOMEM, "store %s: out of memory", store->path);
        e = &l->events[l->n];
        *e = (struct xp_store_event){
            .type = (enum xp_store_event_type)sqlite3_column_int(st, 1),
            .resource_version = v,
            .kind = strdup(kind),
            .namespace = strdup((const char *)sqlite3_column_text(st, 3) ?: ""),
            .name = strdup((const char *)sqlite3_column_text(st, 4) ?: ""),
        };
        l->n++;
        r = row_body(store, kind, e->namespace ?: "", e->name ?: "", &body, &len, &plain, err);
        if (r < 0)
                return r;
        if (l->text)
                ok = body && store_text_versioned_dup(body, len, v, &e->text, &e->text_len) >= 0;
        else
                ok = (e->object = store_parse_body(body, len, v)) != NULL;
        if (!e->kind || !e->namespace || !e->name || !ok)
                return store_corrupt_body(store, kind, e->namespace ?: "", e->name ?: "", v, err);
        return 0;
}

/* Inside the read transaction: the events after since, up to l->max. */
static int read_events(struct xp_store *store,
                       struct conn *c,
                       const char *kind,
                       const char *namespace,
                       uint64_t since,
                       struct store_event_list *l,
                       struct xp_error *err)
{
        sqlite3_stmt *st = c->stmts[namespace ? RS_EVENTS_NS : RS_EVENTS_ALL];
        int rc, r;

        sqlite3_bind_int64(st, 1, (sqlite3_int64)since);
        sqlite3_bind_text(st, 2, kind, -1, SQLITE_STATIC);
        if (namespace)
                sqlite3_bind_text(st, 3, namespace, -1, SQLITE_STATIC);
        sqlite3_bind_int64(
            st, namespace ? 4 : 3, l->max > INT64_MAX ? INT64_MAX : (sqlite3_int64)l->max);
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                r = append_event(store, l, st, kind, err);
                if (r < 0)
                        return r;
        }
        if (rc != SQLITE_DONE)
                return read_fail(store, c, rc, err);
        sqlite3_reset(st);
        return 0;
}

/* The events after since into l (its max and text set; its array may be lent, room for max);
 * on an error, what l gathered is the caller's to release. */
static int events_scan(struct xp_store *store,
                       const char *kind,
                       const char *namespace,
                       uint64_t since,
                       struct store_event_list *l,
                       uint64_t *ret_through,
                       struct xp_error *err)
{
        struct conn *c = NULL;
        uint64_t version, through;
        int rc, r;

        r = store_check_key(store, kind, namespace ?: "", "-", err);
        if (r < 0)
                return r;
        if (l->max == 0)
                return xp_errorf(
                    err, -EINVAL, "store %s: events_since needs max >= 1", store->path);
        if (since > INT64_MAX)
                since = INT64_MAX;
        r = store_recent_scan(store, kind, namespace, since, l->text, l, &through);
        if (r < 0)
                return r == -ENOMEM ? xp_errorf(err, r, "store %s: out of memory", store->path)
                                    : xp_errorf(err,
                                                r,
                                                "store %s: a recent %s event does not parse",
                                                store->path,
                                                kind);
        if (r > 0) {
                if (ret_through)
                        *ret_through = through;
                return 0;
        }
        r = conn_get(store, &c, err);
        if (r < 0)
                return r;
        r = read_begin(store, c, &version, err);
        if (r >= 0)
                r = check_kept(store, c, version, since, err);
        if (r >= 0)
                r = read_events(store, c, kind, namespace, since, l, err);
        if (r >= 0) {
                rc = store_step_done(c->stmts[RS_COMMIT]);
                if (rc != SQLITE_DONE)
                        r = read_fail(store, c, rc, err);
        }
        conn_put(store, c);
        if (r < 0)
                return r;
        if (ret_through)
                *ret_through = l->n == l->max ? l->events[l->n - 1].resource_version
                                              : (version > since ? version : since);
        return 0;
}

/* The two public scans differ only in what each event carries: the object, or its text. */
#define EVENTS_SCAN(name, as_text)                                                                 \
        int name(struct xp_store *store,                                                           \
                 const char *kind,                                                                 \
                 const char *namespace,                                                            \
                 uint64_t since,                                                                   \
                 size_t max,                                                                       \
                 struct xp_store_event **ret_events,                                               \
                 size_t *ret_n,                                                                    \
                 uint64_t *ret_through,                                                            \
                 struct xp_error *err)                                                             \
        {                                                                                          \
                struct store_event_list l = {.max = max, .text = as_text};                         \
                int r = events_scan(store, kind, namespace, since, &l, ret_through, err);          \
                                                                                                   \
                if (r < 0) {                                                                       \
                        xp_store_events_free(l.events, l.n);                                       \
                        return r;                                                                  \
                }                                                                                  \
                *ret_events = l.events;                                                            \
                *ret_n = l.n;                                                                      \
                return 0;                                                                          \
        }

EVENTS_SCAN(xp_store_events_scan, false)
EVENTS_SCAN(xp_store_events_scan_text, true)

int xp_store_events_scan_into(struct xp_store *store,
                              const char *kind,
                              const char *namespace,
                              uint64_t since,
                              size_t max,
                              struct xp_store_event_buffer *buf,
                              uint64_t *ret_through,
                              struct xp_error *err)
{
        struct store_event_list l;
        int r;

        xp_store_event_buffer_clear(buf);
        if (max > buf->cap) {
                /* once per reader, outside the store's lock: the scans then only fill it */
                void *p = reallocarray(buf->events, max, sizeof(*buf->events));

                if (!p)
                        return xp_errorf(err, -ENOMEM, "store %s: out of memory", store->path);
                buf->events = p;
                buf->cap = max;
        }
        l = (struct store_event_list){.events = buf->events, .cap = buf->cap, .max = max};
        r = events_scan(store, kind, namespace, since, &l, ret_through, err);
        buf->n = l.n;
        if (r < 0)
                xp_store_event_buffer_clear(buf);
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

        if (timeout_ms >= 0)
                deadline = xp_monotonic_deadline(timeout_ms);
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
        ret->writer_wakeups = atomic_load(&store->writer_wake.calls);
}
