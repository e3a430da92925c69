/* SPDX-License-Identifier: Apache-2.0 */
/*
 * xp_store_reencrypt(): every row of the encrypted kinds not under the primary key rewritten
 * under it, objects and event log alike, in one transaction on the writer's connection. The
 * rows keep their versions and the history its digest (the digest is of the plaintext), so the
 * seal needs no new record. secure_delete is on for the rewrite and the WAL is checkpointed
 * after it, so that the bytes replaced (plaintext from before encryption) do not stay behind in
 * free pages.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "store_internal.h"
#include "xpool/macro.h"

/* One row to rewrite: its key (version for events) and its new body. */
struct rewrite {
        char *ns, *name, *body;
        size_t body_len;
        int64_t version;
};

struct rewrites {
        struct rewrite *items;
        size_t n, cap;
};

static void rewrites_done(struct rewrites *w)
{
        for (size_t i = 0; i < w->n; i++) {
                free(w->items[i].ns);
                free(w->items[i].name);
                free(w->items[i].body);
        }
        free(w->items);
        *w = (struct rewrites){0};
}

/* The row's body under the primary key, appended to w (a row under it already is skipped). */
static int add_rewrite(struct xp_store *store,
                       struct rewrites *w,
                       const char *kind,
                       sqlite3_stmt *st,
                       bool events,
                       struct xp_error *err)
{
        const char *ns = (const char *)sqlite3_column_text(st, 1) ?: "";
        const char *name = (const char *)sqlite3_column_text(st, 2) ?: "";
        const char *body = (const char *)sqlite3_column_text(st, 3);
        size_t len = (size_t)sqlite3_column_bytes(st, 3), plain_len = len;
        _cleanup_free_ char *plain = NULL;
        struct rewrite *it;
        int r;

        /* a damaged row is refused, not rewritten under a fresh checksum */
        if (!events && !store_row_intact(st, 4))
                return store_row_damaged(
                    store->path, kind, ns, name, (uint64_t)sqlite3_column_int64(st, 7), err);
        if (events && !store_event_intact(st, 4))
                return store_event_damaged(
                    store->path, kind, ns, name, (uint64_t)sqlite3_column_int64(st, 4), err);
        if (!body || store_envelope_primary(store, body, len))
                return 0;
        r = store_envelope_open(store, kind, ns, name, body, len, &plain, &plain_len, err);
        if (r < 0)
                return xp_error_prefix(err, r, "%s", events ? "the event log" : "stored");
        if (w->n == w->cap) {
                size_t cap = w->cap ? w->cap * 2 : 16;
                void *p = reallocarray(w->items, cap, sizeof(*w->items));

                if (!p)
                        return xp_errorf(err, -ENOMEM, "out of memory");
                w->items = p;
                w->cap = cap;
        }
        it = &w->items[w->n++];
        *it = (struct rewrite){
            .ns = strdup(ns), .name = strdup(name), .version = sqlite3_column_int64(st, 0)};
        if (!it->ns || !it->name)
                return xp_errorf(err, -ENOMEM, "out of memory");
        return store_envelope_seal(store,
                                   kind,
                                   ns,
                                   name,
                                   r > 0 ? plain : body,
                                   r > 0 ? plain_len : len,
                                   &it->body,
                                   &it->body_len,
                                   err);
}

static int collect(
    struct xp_store *store, const char *kind, bool events, struct rewrites *w, struct xp_error *err)
{
        static const char *const sql[] = {
            /* then the columns store_row_intact() and store_event_intact() check */
            "SELECT 0, namespace, name, body, kind, namespace, name, version, body, checksum "
            "FROM objects WHERE kind = ?1",
            /* an empty body is the objects row's, rewritten there (STORE_EVENT_BODY) */
            "SELECT version, namespace, name, body, version, type, kind, namespace, name, body, "
            "checksum FROM events WHERE kind = ?1 AND body <> ''",
        };
        sqlite3_stmt *st = NULL;
        int rc, r = 0;

        rc = sqlite3_prepare_v2(store->writer, sql[events], -1, &st, NULL);
        if (rc != SQLITE_OK)
                return store_sqlite_fail(store->path, store->writer, rc, err, "reading rows");
        sqlite3_bind_text(st, 1, kind, -1, SQLITE_STATIC);
        while (r >= 0 && (rc = sqlite3_step(st)) == SQLITE_ROW)
                r = add_rewrite(store, w, kind, st, events, err);
        if (r >= 0 && rc != SQLITE_DONE)
                r = store_sqlite_fail(store->path, store->writer, rc, err, "reading rows");
        sqlite3_finalize(st);
        return r;
}

static int apply(struct xp_store *store,
                 const char *kind,
                 bool events,
                 const struct rewrites *w,
                 struct xp_error *err)
{
        static const char *const sql[] = {
            "UPDATE objects SET body = ?4, checksum = xpool_checksum(kind, namespace, name, "
            "version, ?4) WHERE kind = ?1 AND namespace = ?2 AND name = ?3",
            "UPDATE events SET body = ?4, checksum = xpool_event_checksum(type, kind, namespace, "
            "name, version, ?4) WHERE version = ?5",
        };
        sqlite3_stmt *st = NULL;
        int rc;

        rc = sqlite3_prepare_v2(store->writer, sql[events], -1, &st, NULL);
        for (size_t i = 0; rc == SQLITE_OK && i < w->n; i++) {
                sqlite3_bind_text(st, 1, kind, -1, SQLITE_STATIC);
                sqlite3_bind_text(st, 2, w->items[i].ns, -1, SQLITE_STATIC);
                sqlite3_bind_text(st, 3, w->items[i].name, -1, SQLITE_STATIC);
                sqlite3_bind_text(
                    st, 4, w->items[i].body, (int)w->items[i].body_len, SQLITE_STATIC);
                sqlite3_bind_int64(st, 5, w->items[i].version);
                rc = store_step_done(st);
                rc = rc == SQLITE_DONE ? SQLITE_OK : rc;
        }
        sqlite3_finalize(st);
        return rc == SQLITE_OK
                   ? 0
                   : store_sqlite_fail(store->path, store->writer, rc, err, "rewriting rows");
}

/* After the kind's objects are rewritten: the checksums of the events that read their body
 * there, over the bytes they now read. */
static int resum_read_through(struct xp_store *store, const char *kind, struct xp_error *err)
{
        sqlite3_stmt *st = NULL;
        int rc;

        rc = sqlite3_prepare_v2(store->writer,
                                "UPDATE events SET checksum = xpool_event_checksum(type, kind, "
                                "namespace, name, version, " STORE_EVENT_BODY
                                ") WHERE kind = ?1 AND body = ''",
                                -1,
                                &st,
                                NULL);
        if (rc == SQLITE_OK) {
                sqlite3_bind_text(st, 1, kind, -1, SQLITE_STATIC);
                rc = store_step_done(st);
                rc = rc == SQLITE_DONE ? SQLITE_OK : rc;
        }
        sqlite3_finalize(st);
        return rc == SQLITE_OK
                   ? 0
                   : store_sqlite_fail(store->path, store->writer, rc, err, "rewriting rows");
}

/* Inside the transaction: every encrypted kind's rows, both tables. */
static int rewrite_all(struct xp_store *store, uint64_t *ret_n, struct xp_error *err)
{
        int r = 0;

        for (size_t k = 0; r >= 0 && k < store->n_encrypted; k++)
                for (int events = 0; r >= 0 && events < 2; events++) {
                        struct rewrites w = {0};

                        r = collect(store, store->encrypted[k], events, &w, err);
                        if (r >= 0)
                                r = apply(store, store->encrypted[k], events, &w, err);
                        if (r >= 0 && events)
                                r = resum_read_through(store, store->encrypted[k], err);
                        *ret_n += w.n;
                        rewrites_done(&w);
                }
        return r;
}

int xp_store_reencrypt(struct xp_store *store, uint64_t *ret_n, struct xp_error *err)
{
        uint64_t n = 0;
        int r;

        if (!store->keys)
                return xp_errorf(err, -EINVAL, "store %s: opened without keys", store->path);
        pthread_mutex_lock(&store->lock);
        r = store->readonly;
        pthread_mutex_unlock(&store->lock);
        if (r < 0)
                return xp_errorf(err, r, "store %s: read-only: %s", store->path, strerror(-r));
        r = store_exec(store->path, store->writer, "PRAGMA secure_delete = ON", err);
        if (r >= 0)
                r = store_exec(store->path, store->writer, "BEGIN IMMEDIATE", err);
        if (r < 0)
                return r;
        r = rewrite_all(store, &n, err);
        if (r < 0) {
                (void)store_exec(store->path, store->writer, "ROLLBACK", NULL);
                return r;
        }
        r = store_exec(store->path, store->writer, "COMMIT", err);
        if (r >= 0)
                r = store_exec(store->path, store->writer, "PRAGMA wal_checkpoint(TRUNCATE)", err);
        (void)store_exec(store->path, store->writer, "PRAGMA secure_delete = OFF", NULL);
        if (r >= 0 && ret_n)
                *ret_n = n;
        return r;
}
