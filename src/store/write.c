/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Writes, group-committed: a writer enqueues its operation and waits. The first waiter that
 * finds no commit in flight becomes the leader: it takes the queue (up to BATCH_MAX operations),
 * runs them all in one BEGIN IMMEDIATE ... COMMIT, and wakes every owner with its own result.
 * Operations are checked before they are applied, so one -EEXIST or -ESTALE changes nothing and
 * does not fail the others; a database failure fails the whole batch and nothing of it is
 * written.
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
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store_internal.h"
#include "xpool/log.h"
#include "xpool/macro.h"

#define BATCH_MAX 512 /* writes in one transaction at most */

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
        struct store_text_mark mark; /* where body takes its resourceVersion (not for delete) */
        uint64_t hash;               /* store_op_hash() of the write, for the digest chain */
        uint64_t row_hash; /* store_row_hash() of the key and what the row gets (stored) */

        /* written by the leader, read by the owner once done; done is set last, under the
         * writer's wait lock, and the op may go away as soon as it is */
        atomic_bool done;
        int result;
        uint64_t version;
        char *last_body; /* delete: the stored body (opened, when encrypted), malloc'ed */
        /* what the rows get: body, or body sealed (an encrypted kind); a delete's event gets
         * last_stored, the object's row as it was (NULL: last_body) */
        const char *stored;
        size_t stored_len;
        char *last_stored;
        char *text; /* the object as written, with its version (store_text_versioned()) */
        size_t text_len;
        bool want_text; /* the writer takes text; the ring of recent writes gets a copy */
        json_t *shared; /* the writer's object, given up to the ring (xp_store_written.share) */
        /* its writer waits here until done, or until its turn to lead: a batch wakes its own
         * writers and the next leader, not every writer */
        struct writer_wait *wake;
        struct writer_wait own_wake;
        struct xp_error err;
        /* written only if this write was (a group's Event after its binding): else -ECANCELED */
        struct op *after;
        char *own_body, *own_sealed; /* what body and stored point into, freed with the op */

        struct op *next;
};

/* The type of a write's event (and of its hash in the digest chain and the event's checksum). */
static const int event_types[] = {
    [OP_CREATE] = XP_STORE_ADDED,
    [OP_UPDATE] = XP_STORE_MODIFIED,
    [OP_DELETE] = XP_STORE_DELETED,
};

static const char *const write_sql[_WS_MAX] = {
    [WS_BEGIN] = "BEGIN IMMEDIATE",
    [WS_COMMIT] = "COMMIT",
    [WS_ROLLBACK] = "ROLLBACK",
    [WS_META_VERSION] = "SELECT value FROM meta WHERE key = 'version'",
    [WS_META_SET_VERSION] = "UPDATE meta SET value = ?1 WHERE key = 'version'",
    [WS_META_SET_DIGEST] = "UPDATE meta SET value = ?1 WHERE key = 'digest'",
    [WS_OBJECT_GET] = "SELECT kind, namespace, name, version, body, checksum FROM objects WHERE "
                      "kind = ?1 AND namespace = ?2 AND name = ?3",
    [WS_OBJECT_INSERT] = "INSERT INTO objects (kind, namespace, name, version, body, checksum) "
                         "VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    [WS_OBJECT_UPDATE] = "UPDATE objects SET version = ?4, body = ?5, checksum = ?6 WHERE "
                         "kind = ?1 AND namespace = ?2 AND name = ?3",
    [WS_OBJECT_DELETE] = "DELETE FROM objects WHERE kind = ?1 AND namespace = ?2 AND "
                         "name = ?3",
    [WS_EVENT_INSERT] = "INSERT INTO events (version, type, kind, namespace, name, body, "
                        "checksum) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    [WS_EVENT_FILL] = "UPDATE events SET body = ?2 WHERE version = ?1 AND body = ''",
    [WS_EVENTS_MIN] = "SELECT min(version) FROM events",
    [WS_EVENTS_TRIM] = "DELETE FROM events WHERE version <= ?1",
};

int store_writer_prepare(struct xp_store *store, struct xp_error *err)
{
        for (size_t i = 0; i < _WS_MAX; i++) {
                int rc = sqlite3_prepare_v3(store->writer,
                                            write_sql[i],
                                            -1,
                                            SQLITE_PREPARE_PERSISTENT,
                                            &store->wstmts[i],
                                            NULL);
                if (rc != SQLITE_OK)
                        return store_sqlite_fail(
                            store->path, store->writer, rc, err, "preparing a query");
        }
        return 0;
}

static void bind_key(sqlite3_stmt *st, const struct op *op)
{
        sqlite3_bind_text(st, 1, op->kind, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, op->namespace, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, op->name, -1, SQLITE_STATIC);
}

/* A delete's last state from its row: plaintext in op->last_body, the row in op->last_stored
 * when it is an envelope (the DELETED event keeps it sealed). */
static int open_last(struct xp_store *store, struct op *op, const char *text, size_t len)
{
        size_t n;
        int r;

        if (!text)
                return xp_errorf(&op->err, -ENOMEM, "out of memory");
        r = store_envelope_open(
            store, op->kind, op->namespace, op->name, text, len, &op->last_body, &n, &op->err);
        if (r < 0)
                return r;
        if (r > 0) {
                op->last_stored = strndup(text, len);
                return op->last_stored ? 0 : xp_errorf(&op->err, -ENOMEM, "out of memory");
        }
        op->last_body = strndup(text, len);
        return op->last_body ? 0 : xp_errorf(&op->err, -ENOMEM, "out of memory");
}

/* "v1", "apps/v1", "xpool.io/v1alpha1": a damaged row's apiVersion as it must look to be kept. */
static bool plausible_api_version(const char *s)
{
        size_t n = strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789.-/");

        return n > 0 && n < 64 && s[n] == '\0';
}

/*
 * A damaged row's delete: its body is never chained into the DELETED event (nor handed back), so
 * the event carries what a watcher needs, the kind and the name, and a checksum of its own. Without
 * this, one changed row would refuse the agent's, the GC's and namespace deletion's deletes until
 * an offline xpool store recover.
 */
static int damaged_last(struct xp_store *store, struct op *op, const char *text, size_t len)
{
        json_t *o = json_pack("{s:s, s:{s:s}}", "kind", op->kind, "metadata", "name", op->name);
        json_t *damaged = json_loadb(text, len, 0, NULL);
        const char *api_version = json_string_value(json_object_get(damaged, "apiVersion"));

        xp_log(LOG_WARNING,
               "store %s: %s %s%s%s fails its checksum (its row was changed after it was "
               "written): deleted, its DELETED event carries only its kind and name",
               store->path,
               op->kind,
               op->namespace,
               store_key_ns(op->namespace),
               op->name);
        if (o && op->namespace[0])
                json_object_set_new(
                    json_object_get(o, "metadata"), "namespace", json_string(op->namespace));
        /* a watch's client (kubectl's unstructured decoder) wants one; the store knows no API */
        if (o && api_version && plausible_api_version(api_version))
                json_object_set_new(o, "apiVersion", json_string(api_version));
        json_decref(damaged);
        op->last_body = o ? json_dumps(o, JSON_COMPACT) : NULL;
        json_decref(o);
        return op->last_body ? 0 : xp_errorf(&op->err, -ENOMEM, "out of memory");
}

/*
 * Update and delete: the object must be there at the expected version. 1 to go on (a delete's
 * last body in op->last_body), 0 when refused (op->result says why), or -(SQLite error).
 */
/*
 * Before the object's row moves on from version stored: its event row (if still kept) takes the
 * body it read in objects (STORE_EVENT_BODY), the bytes as stored, so its checksum still holds.
 * row is the objects row, stepped. SQLITE_DONE when done.
 */
static int fill_event(struct xp_store *store, uint64_t stored, sqlite3_stmt *row)
{
        sqlite3_stmt *st = store->wstmts[WS_EVENT_FILL];

        sqlite3_bind_int64(st, 1, (sqlite3_int64)stored);
        sqlite3_bind_value(st, 2, sqlite3_column_value(row, 4));
        return store_step_done(st);
}

static int check_stored(struct xp_store *store, struct op *op)
{
        sqlite3_stmt *st = store->wstmts[WS_OBJECT_GET];
        uint64_t stored;
        bool intact;
        int rc;

        bind_key(st, op);
        rc = sqlite3_step(st);
        if (rc == SQLITE_DONE) {
                sqlite3_reset(st);
                op->result = xp_errorf(&op->err,
                                       -ENOENT,
                                       "%s %s%s%s not found",
                                       op->kind,
                                       op->namespace,
                                       store_key_ns(op->namespace),
                                       op->name);
                return 0;
        }
        if (rc != SQLITE_ROW) {
                sqlite3_reset(st);
                return -rc;
        }
        stored = (uint64_t)sqlite3_column_int64(st, 3);
        intact = store_row_intact(st, 0);
        if (!intact && op->type != OP_DELETE) { /* delete it, or recover the store */
                sqlite3_reset(st);
                op->result = store_row_damaged(
                    store->path, op->kind, op->namespace, op->name, stored, &op->err);
                return 0;
        }
        if (op->expected_version != 0 && op->expected_version != stored) {
                sqlite3_reset(st);
                op->result =
                    xp_errorf(&op->err,
                              -ESTALE,
                              "%s %s%s%s: version %" PRIu64 " expected, the stored one is %" PRIu64,
                              op->kind,
                              op->namespace,
                              store_key_ns(op->namespace),
                              op->name,
                              op->expected_version,
                              stored);
                return 0;
        }
        if (op->type == OP_DELETE) {
                const char *text = (const char *)sqlite3_column_text(st, 4);
                size_t len = (size_t)sqlite3_column_bytes(st, 4);

                op->result =
                    intact ? open_last(store, op, text, len) : damaged_last(store, op, text, len);
                if (op->result < 0) {
                        sqlite3_reset(st);
                        return 0;
                }
        }
        /* a damaged row's event is left to read it (and fail) as its object did */
        rc = intact ? fill_event(store, stored, st) : SQLITE_DONE;
        sqlite3_reset(st);
        return rc == SQLITE_DONE ? 1 : -rc;
}

/* The checksum of the event row of op at version that holds stored. */
static int event_checksum(
    const struct op *op, const char *stored, size_t stored_len, uint64_t version, int64_t *ret)
{
        uint64_t hash;

        if (op->type == OP_DELETE) { /* the row holds the object's last state: hashed only now */
                if (store_row_hash(op->kind, op->namespace, op->name, stored, stored_len, &hash) <
                    0)
                        return -ENOMEM;
                hash = store_op_hash(XP_STORE_DELETED, hash);
        } else if (op->stored == op->body) { /* the digest chain's own hash */
                hash = op->hash;
        } else {
                hash = store_op_hash(event_types[op->type], op->row_hash);
        }
        *ret = store_row_checksum(hash, version);
        return 0;
}

/*
 * Applies one operation inside the batch's transaction with the given new version. Returns 1
 * when applied, 0 when refused (op->result and op->err say why; nothing changed), or an SQLite
 * error code (negated) that fails the batch.
 */
static int apply_op(struct xp_store *store, struct op *op, uint64_t version)
{
        sqlite3_stmt *st;
        const char *body = op->body, *stored = op->stored;
        size_t body_len = op->body_len, stored_len = op->stored_len;
        int64_t event_sum;
        int rc;

        /* the write it follows is applied (version set) in this batch or an earlier one */
        if (op->after && op->after->version == 0) {
                op->result = xp_errorf(&op->err,
                                       -ECANCELED,
                                       "%s %s%s%s not written: the write it follows was not",
                                       op->kind,
                                       op->namespace,
                                       store_key_ns(op->namespace),
                                       op->name);
                return 0;
        }
        if (op->type == OP_UPDATE || op->type == OP_DELETE) {
                rc = check_stored(store, op);
                if (rc <= 0)
                        return rc;
                if (op->type == OP_DELETE) {
                        body = op->last_body;
                        body_len = strlen(op->last_body);
                        stored = op->last_stored ? op->last_stored : body;
                        stored_len = strlen(stored);
                }
        }
        if (event_checksum(op, stored, stored_len, version, &event_sum) < 0)
                return -SQLITE_NOMEM; /* fails the batch: nothing acknowledged */

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
                sqlite3_bind_text(st, 5, stored, (int)stored_len, SQLITE_STATIC);
                sqlite3_bind_int64(st, 6, store_row_checksum(op->row_hash, version));
        }
        rc = store_step_done(st);
        if (rc == SQLITE_CONSTRAINT_PRIMARYKEY && op->type == OP_CREATE) {
                /* a failed statement undoes only itself: the transaction goes on */
                op->result = xp_errorf(&op->err,
                                       -EEXIST,
                                       "%s %s%s%s already exists",
                                       op->kind,
                                       op->namespace,
                                       store_key_ns(op->namespace),
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
        /* a create's or an update's body is read in objects while the row is at version */
        if (op->type == OP_DELETE)
                sqlite3_bind_text(st, 6, stored, (int)stored_len, SQLITE_STATIC);
        else
                sqlite3_bind_text(st, 6, "", 0, SQLITE_STATIC);
        sqlite3_bind_int64(st, 7, event_sum);
        rc = store_step_done(st);
        if (rc != SQLITE_DONE)
                return -rc;
        op->result = 0;
        op->version = version;
        /* for the writer and the event log's readers: NULL when it does not read as text; the
         * writer found where the version goes as it serialised, a delete's last body is scanned */
        if ((op->type == OP_DELETE
                 ? store_text_versioned_dup(body, body_len, version, &op->text, &op->text_len)
                 : store_text_versioned_dup_marked(
                       body, body_len, &op->mark, version, &op->text, &op->text_len)) < 0)
                op->text = NULL;
        /* the shared object gets its version before any reader sees it (the writer waits) */
        if (op->shared && store_set_resource_version(op->shared, version) < 0)
                op->shared = NULL;
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
        rc = store_step_done(st);
        if (rc == SQLITE_DONE)
                *ret_trimmed = true;
        return rc;
}

/* A batch as the leader runs it. */
struct batch {
        struct op *ops;
        size_t n;
        uint64_t version;    /* the counter after it */
        uint64_t digest;     /* the chain digest after it */
        bool trimmed;        /* it cut the event log back */
        bool reserved;       /* it reserved versions ahead in the seal */
        bool unknown;        /* it failed where its outcome on disk is unknown */
        struct xp_error err; /* why it failed as a whole */
        struct recent *old;  /* the ring's entries it replaced, freed after the lock */
        size_t n_old;
};

/* Sets b->err from SQLite's rc while doing what; returns the -errno. */
static int batch_sqlite_fail(struct xp_store *store, struct batch *b, int rc, const char *what)
{
        int r = store_errno(store->writer, rc) ?: -EIO;

        /* A failed commit or fsync leaves the file's state unknown to us: refuse further writes
         * rather than hand out versions that may already be on disk. */
        b->unknown = (rc & 0xff) == SQLITE_IOERR || (rc & 0xff) == SQLITE_CORRUPT;
        return xp_errorf(&b->err, r, "store %s: %s: %s", store->path, what, sqlite3_errstr(rc));
}

/*
 * Inside the transaction, with the counter read: the versions this batch may take must be
 * reserved in the seal, durably, before any of them can be acknowledged.
 */
static int reserve(struct xp_store *store, struct batch *b, uint64_t version)
{
        uint64_t want = version + b->n + RESERVE_STEP;
        int r;

        if (version + b->n <= store->reserved)
                return 0;
        r = seal_write(&store->seal, SEAL_RESERVE, want, 0, true, &b->err);
        if (r < 0)
                return r;
        store->reserved = want;
        b->reserved = true;
        return 0;
}

/* Applies the batch's operations from version on; the number applied, or -errno. */
static int apply_all(struct xp_store *store, struct batch *b, uint64_t version)
{
        int applied = 0;

        b->digest = store->digest;
        for (struct op *op = b->ops; op; op = op->next) {
                int r = apply_op(store, op, version + 1);

                if (r < 0)
                        return batch_sqlite_fail(store, b, -r, "writing");
                if (r > 0) {
                        version++;
                        applied++;
                        b->digest = store_digest_next(b->digest, version, op->hash);
                }
        }
        b->version = version;
        return applied;
}

/* The counter, the digest and the trim, then COMMIT: 0 or -errno. */
static int commit(struct xp_store *store, struct batch *b)
{
        sqlite3_stmt *st;
        int rc;

        st = store->wstmts[WS_META_SET_VERSION];
        sqlite3_bind_int64(st, 1, (sqlite3_int64)b->version);
        rc = store_step_done(st);
        if (rc != SQLITE_DONE)
                return batch_sqlite_fail(store, b, rc, "updating the version counter");
        st = store->wstmts[WS_META_SET_DIGEST];
        sqlite3_bind_int64(st, 1, (sqlite3_int64)b->digest);
        rc = store_step_done(st);
        if (rc != SQLITE_DONE)
                return batch_sqlite_fail(store, b, rc, "updating the digest");
        rc = trim_events(store, b->version, &b->trimmed);
        if (rc != SQLITE_DONE)
                return batch_sqlite_fail(store, b, rc, "trimming the event log");
        rc = store_step_done(store->wstmts[WS_COMMIT]);
        if (rc != SQLITE_DONE)
                return batch_sqlite_fail(store, b, rc, "committing");
        return 0;
}

/*
 * Runs a batch in one transaction: the number of writes committed, or -errno with b->err when
 * it failed as a whole. Every op's own refusal is in the op.
 */
static int run_batch(struct xp_store *store, struct batch *b)
{
        sqlite3_stmt *st;
        uint64_t version;
        int rc, applied, r;

        rc = store_step_done(store->wstmts[WS_BEGIN]);
        if (rc != SQLITE_DONE)
                return batch_sqlite_fail(store, b, rc, "beginning a transaction");
        st = store->wstmts[WS_META_VERSION];
        rc = sqlite3_step(st);
        version = (uint64_t)sqlite3_column_int64(st, 0);
        sqlite3_reset(st);
        if (rc != SQLITE_ROW)
                r = batch_sqlite_fail(
                    store, b, rc == SQLITE_DONE ? SQLITE_CORRUPT : rc, "reading the counter");
        else
                r = reserve(store, b, version);
        applied = r < 0 ? r : apply_all(store, b, version);
        if (applied == 0) {
                /* nothing to make durable: no commit, no fsync */
                store_step_done(store->wstmts[WS_ROLLBACK]);
                return 0;
        }
        r = applied < 0 ? applied : commit(store, b);
        if (r < 0) {
                if (!sqlite3_get_autocommit(store->writer))
                        store_step_done(store->wstmts[WS_ROLLBACK]);
                return r;
        }
        /* Sealed before any writer hears of it: a kill now leaves the record in the page cache.
         * A failure leaves the seal behind, which the next commit or open mends. */
        seal_write(&store->seal, SEAL_COMMIT, b->version, b->digest, false, NULL);
        store->digest = b->digest;
        return applied;
}

bool store_space_error(int r)
{
        return r == -ENOSPC || r == -EDQUOT || r == -EROFS;
}

void store_readonly_enter(struct xp_store *store, int r)
{
        struct timespec now;

        clock_gettime(CLOCK_MONOTONIC, &now);
        store->readonly = r;
        store->readonly_retry_at = now.tv_sec * 1000 + now.tv_nsec / 1000000 + READONLY_RETRY_MS;
        snprintf(store->readonly_why,
                 sizeof(store->readonly_why),
                 "%s",
                 r == -ENOSPC   ? "the disk is full"
                 : r == -EDQUOT ? "the disk quota is used up"
                                : "the database or its file system is read-only");
}

/* Under lock: the error of a write refused while read-only. */
static int readonly_error(struct xp_store *store, struct xp_error *err)
{
        return xp_errorf(err,
                         store->readonly,
                         "store %s is read-only: %s; writes are refused until that changes "
                         "(tried again at most every %d ms)",
                         store->path,
                         store->readonly_why,
                         READONLY_RETRY_MS);
}

bool xp_store_readonly(struct xp_store *store, char *why, size_t size)
{
        bool readonly;

        pthread_mutex_lock(&store->lock);
        readonly = store->readonly != 0;
        if (readonly && why && size > 0)
                snprintf(why, size, "%s", store->readonly_why);
        pthread_mutex_unlock(&store->lock);
        return readonly;
}

/*
 * Under lock, before a write is queued: 0 to go on, else the error it gets at once (the store is
 * broken, or read-only and not due to try again; the write that finds it due is the try).
 */
static int admit(struct xp_store *store, struct op *op)
{
        struct timespec now;
        int64_t ms;

        if (store->broken)
                return xp_errorf(&op->err,
                                 store->broken,
                                 "store %s: refusing writes after an I/O error on commit; "
                                 "restart to recover from the database file",
                                 store->path);
        if (!store->readonly)
                return 0;
        clock_gettime(CLOCK_MONOTONIC, &now);
        ms = now.tv_sec * 1000 + now.tv_nsec / 1000000;
        if (ms < store->readonly_retry_at)
                return readonly_error(store, &op->err);
        store->readonly_retry_at = ms + READONLY_RETRY_MS;
        return 0;
}

/* As the leader, without the lock: the open's own writes first when they are still to do. */
static int lead(struct xp_store *store, struct batch *b)
{
        if (store->init_pending) {
                int r = store_finish_open(store, &b->reserved, &b->err);

                if (r < 0)
                        return r;
                store->init_pending = false;
        }
        struct timespec start, end;
        int r;

        clock_gettime(CLOCK_MONOTONIC, &start);
        r = run_batch(store, b);
        clock_gettime(CLOCK_MONOTONIC, &end);
        if (r > 0) {
                xp_histogram_observe(&store->commit_seconds,
                                     (double)(end.tv_sec - start.tv_sec) +
                                         (double)(end.tv_nsec - start.tv_nsec) / 1e9);
                xp_histogram_observe(&store->batch_writes, r);
        }
        return r;
}

void xp_store_histograms(struct xp_store *store,
                         struct xp_histogram_snapshot *ret_commit_seconds,
                         struct xp_histogram_snapshot *ret_batch_writes)
{
        xp_histogram_read(&store->commit_seconds, ret_commit_seconds);
        xp_histogram_read(&store->batch_writes, ret_batch_writes);
}

/* Under lock, in version order: a write for the ring of recent ones (recent.c). */
static void recent_add(struct xp_store *store, struct batch *b, struct op *o)
{
        struct recent gone;

        /* the ring copies the text into its block: the writer keeps its own for the reply */
        store_recent_add(store,
                         o->version,
                         event_types[o->type],
                         o->kind,
                         o->namespace,
                         o->name,
                         o->text,
                         o->text_len,
                         json_incref(o->shared),
                         &gone);
        if (b->old)
                b->old[b->n_old++] = gone;
        else
                store_recent_clear(&gone); /* no room to keep it for later: now, then */
}

/* Outside the lock: what a batch's writes pushed out of the ring. */
static void free_old(struct recent *old, size_t n)
{
        store_recent_clear_all(old, n);
        free(old);
}

/* Under lock, after a batch: the counters, the mode, and every op's result. */
static void settle(struct xp_store *store, struct batch *b, int r, struct store_due *due)
{
        if (r > 0) {
                store->version = b->version;
                store->readonly = 0;
                store->stats.commits++;
                store->stats.writes += (uint64_t)r;
                if ((uint64_t)r > store->stats.max_batch)
                        store->stats.max_batch = (uint64_t)r;
        } else if (r < 0 && b->unknown) {
                store->broken = r;
        } else if (r < 0 && store_space_error(r)) {
                store_readonly_enter(store, r);
                readonly_error(store, &b->err);
        }
        store->stats.trims += b->trimmed;
        store->stats.reservations += b->reserved;
        store->stats.rejected += b->n - (r > 0 ? (uint64_t)r : 0);
        for (struct op *o = b->ops; o; o = o->next) {
                if (r < 0) {
                        o->result = r;
                        o->err = b->err;
                        o->version = 0;
                        free(o->last_body);
                        o->last_body = NULL;
                        free(o->last_stored);
                        o->last_stored = NULL;
                        free(o->text);
                        o->text = NULL;
                        if (o->shared) /* as it was: without a version */
                                json_object_del(json_object_get(o->shared, "metadata"),
                                                "resourceVersion");
                } else if (o->result == 0 && o->version != 0) {
                        store_kind_generation_bump(store, o->kind, o->version);
                        store_waiters_written(store, o->kind);
                        recent_add(store, b, o);
                }
        }
        /* the readers last, as they wake wanting this lock */
        if (r > 0)
                pthread_cond_broadcast(&store->version_bumped);
        store_waiters_take_due(store, due);
}

/*
 * Outside the store's lock, after settle(): marks each write of the batch done; the bits of
 * their writers to wake (writer_wake(), once for the batch).
 */
static unsigned int settled_done(struct op *ops, const struct writer_wait *own)
{
        unsigned int bits = 0;

        for (struct op *o = ops, *next; o; o = next) {
                struct writer_wait *w = o->wake;

                next = o->next; /* o may go away as soon as its writer sees it done */
                o->next = NULL;
                bits |= writer_wait_done(w, &o->done, w == own);
        }
        return bits;
}

/*
 * Under lock, when no commit is in flight: the first queued writer leads the next batch. The
 * bit of its writer to wake (0: none).
 */
static unsigned int next_leader(struct xp_store *store)
{
        if (store->committing || !store->queue_head)
                return 0;
        /* a queued write is not done, so its writer and its wait stay */
        return writer_wait_turn(store->queue_head->wake);
}

/*
 * Under lock, after a batch committed: a checkpoint is due when the WAL has grown. The
 * checkpointer copies while writes go on; when the WAL has grown far past that anyway, the
 * leader keeps the commit slot through a checkpoint of its own (true), so the next batch waits
 * for it but the batch just committed does not.
 */
static bool want_checkpoint(struct xp_store *store)
{
        if (store->wal_pages >= CHECKPOINT_PAGES && !store->checkpoint_wanted &&
            (store->wal_pages < store->checkpoint_asked_at ||
             store->wal_pages - store->checkpoint_asked_at >= CHECKPOINT_PAGES / 4)) {
                store->checkpoint_wanted = true;
                store->checkpoint_asked_at = store->wal_pages;
                pthread_cond_signal(&store->checkpoint);
        }
        return store->wal_pages >= CHECKPOINT_PAGES_HARD;
}

/* Without the lock, holding the commit slot: the leader's own checkpoint; returns locked. */
static void checkpoint_inline(struct xp_store *store)
{
        int rc;

        /* PASSIVE: copies what no reader still needs, never waits for readers; the WAL starts
         * over at the next write once all of it is copied */
        rc = sqlite3_wal_checkpoint_v2(store->writer, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
        store->wal_pages = 0;
        if (rc == SQLITE_OK)
                seal_sync(&store->seal);
        pthread_mutex_lock(&store->lock);
        if (rc == SQLITE_OK)
                store->stats.checkpoints++;
        store->committing = false;
        writer_wake(&store->writer_wake, next_leader(store));
}

/* Under lock: queues each op the store admits (one refused is done at once); the last queued. */
static struct op *enqueue(struct xp_store *store, struct op **ops, size_t n)
{
        struct op *mine = NULL;

        for (size_t i = 0; i < n; i++) {
                struct op *op = ops[i];

                op->result = admit(store, op);
                if (op->result < 0) {
                        op->done = true;
                        continue;
                }
                op->next = NULL;
                writer_wait_queued(op->wake);
                if (store->queue_tail)
                        store->queue_tail->next = op;
                else
                        store->queue_head = op;
                store->queue_tail = op;
                mine = op;
        }
        return mine;
}

/*
 * Queues the ops (one after another in the queue, so in version order) and waits for their
 * results, leading a batch when no commit is in flight. Batches take the queue in order, but
 * their leaders wake their writers after letting go of the lock, so a later batch's writers may
 * be woken first: each op is waited for.
 */
static void submit(struct xp_store *store, struct op **ops, size_t n)
{
        struct recent *old = NULL;
        size_t n_old = 0;
        bool locked = true;
        struct op *op;

        pthread_mutex_lock(&store->lock);
        op = enqueue(store, ops, n);
        while (op && !op->done) {
                struct batch b = {.n = 1};
                struct store_due due;
                struct op *last;
                unsigned int turn;
                bool checkpoint;
                int r;

                /* an empty queue: op is in a batch settled but not yet woken (settled_done()) */
                if (store->committing || !store->queue_head) {
                        pthread_mutex_unlock(&store->lock);
                        locked = !writer_wait(op->wake, &store->writer_wake);
                        if (!locked)
                                break; /* done */
                        pthread_mutex_lock(&store->lock);
                        continue;
                }

                /* Lead: take up to BATCH_MAX queued ops. */
                store->committing = true;
                b.ops = last = store->queue_head;
                while (last->next && b.n < BATCH_MAX) {
                        last = last->next;
                        b.n++;
                }
                store->queue_head = last->next;
                if (!store->queue_head)
                        store->queue_tail = NULL;
                last->next = NULL;
                pthread_mutex_unlock(&store->lock);

                free_old(old, n_old);
                b.old = calloc(b.n, sizeof(*b.old));
                r = lead(store, &b);

                pthread_mutex_lock(&store->lock);
                checkpoint = r > 0 && want_checkpoint(store);
                store->committing = checkpoint;
                settle(store, &b, r, &due);
                old = b.old;
                n_old = b.n_old;
                turn = next_leader(store); /* none while the checkpoint keeps the commit slot */
                pthread_mutex_unlock(&store->lock);
                writer_wake(&store->writer_wake, turn | settled_done(b.ops, op->wake));
                store_waiters_signal_due(store, &due);
                if (checkpoint)
                        checkpoint_inline(store);
                else
                        pthread_mutex_lock(&store->lock);
        }
        if (locked)
                pthread_mutex_unlock(&store->lock);
        /* A group's writes may be settled by two batches whose leaders wake them out of order:
         * its ops and its wait stay until every one is done, not only the last. None is queued
         * any more, so none is asked to lead. */
        while (n > 0 && !writer_wait(ops[0]->wake, &store->writer_wake))
                continue;
        free_old(old, n_old);
}

/*
 * Before queuing, by each writer, so that the leader only binds and chains: the key checked, the
 * body serialised (and sealed for an encrypted kind) into the op's own buffers, the hash.
 */
static int op_prepare(struct xp_store *store, struct op *op, json_t *object, struct xp_error *err)
{
        int r;

        op->wake = &op->own_wake;
        r = store_check_key(store, op->kind, op->namespace, op->name, err);
        if (r < 0)
                return r;
        if (op->type != OP_DELETE) {
                r = store_serialise(store, object, &op->own_body, &op->body_len, &op->mark, err);
                if (r < 0)
                        return r;
                op->body = op->stored = op->own_body;
                op->stored_len = op->body_len;
                if (store_encrypts(store, op->kind)) {
                        r = store_envelope_seal(store,
                                                op->kind,
                                                op->namespace,
                                                op->name,
                                                op->own_body,
                                                op->body_len,
                                                &op->own_sealed,
                                                &op->stored_len,
                                                err);
                        if (r < 0)
                                return r;
                        op->stored = op->own_sealed;
                }
        }
        /* one SHA-256 of key and body serves the digest chain and the row's checksum */
        r = store_row_hash(
            op->kind, op->namespace, op->name, op->body, op->body_len, &op->row_hash);
        op->hash = store_op_hash(event_types[op->type], op->row_hash);
        if (r >= 0 && op->stored != op->body) /* sealed: the row holds other bytes */
                r = store_row_hash(
                    op->kind, op->namespace, op->name, op->stored, op->stored_len, &op->row_hash);
        if (r < 0) /* never a checksum that a later read refuses: the write is not acknowledged */
                return xp_errorf(err,
                                 -ENOMEM,
                                 "%s %s%s%s not written: out of memory hashing it for its checksum",
                                 op->kind,
                                 op->namespace,
                                 store_key_ns(op->namespace),
                                 op->name);
        return 0;
}

static void op_release(struct op *op)
{
        free(op->own_body);
        free(op->own_sealed);
        free(op->last_body);
        free(op->last_stored);
        free(op->text);
}

/* After the op is done: its result, and what the writer gets back (object's version, ...). */
static int op_finish(struct xp_store *store,
                     struct op *op,
                     json_t *object,
                     json_t **ret_last,
                     struct xp_store_written *ret,
                     struct xp_error *err)
{
        if (op->result < 0) {
                if (err)
                        *err = op->err;
                return op->result;
        }
        /* Durable now; what is left cannot fail the write, only what the caller gets back. A
         * shared object has its version already, and readers may be reading it. */
        if (object && !op->shared && store_set_resource_version(object, op->version) < 0)
                return xp_errorf(err,
                                 -ENOMEM,
                                 "store %s: written as version %" PRIu64
                                 " but out of memory setting resourceVersion",
                                 store->path,
                                 op->version);
        if (ret_last) {
                json_t *last = store_parse_body(op->last_body, strlen(op->last_body), op->version);

                if (!last)
                        return xp_errorf(err,
                                         -ENOMEM,
                                         "store %s: deleted as version %" PRIu64
                                         " but cannot read back the last state",
                                         store->path,
                                         op->version);
                *ret_last = last;
        }
        if (ret) {
                ret->version = op->version;
                ret->text = NULL;
                ret->text_len = 0;
                if (ret->want_text && op->text) {
                        ret->text = TAKE_PTR(op->text);
                        ret->text_len = op->text_len;
                }
        }
        return 0;
}

static int write_op(struct xp_store *store,
                    struct op *op,
                    json_t *object,
                    json_t **ret_last,
                    struct xp_store_written *ret,
                    struct xp_error *err)
{
        int r;

        r = op_prepare(store, op, object, err);
        if (r >= 0) {
                op->want_text = ret && ret->want_text;
                op->shared = ret && ret->share && object ? object : NULL;
                writer_wait_init(&op->own_wake);
                submit(store, &op, 1);
                r = op_finish(store, op, object, ret_last, ret, err);
        }
        op_release(op);
        return r;
}

int xp_store_write_group(struct xp_store *store, struct xp_store_group_write *w, size_t n)
{
        _cleanup_free_ struct op *ops = calloc(n ? n : 1, sizeof(*ops));
        _cleanup_free_ struct op **queued = calloc(n ? n : 1, sizeof(*queued));
        struct writer_wait wake;
        size_t n_queued = 0;
        int written = 0;

        if (!ops || !queued)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                struct op *op = &ops[i];

                *op = (struct op){.type = w[i].update ? OP_UPDATE : OP_CREATE,
                                  .kind = w[i].kind,
                                  .namespace = w[i].namespace,
                                  .name = w[i].name,
                                  .expected_version = w[i].expected_version,
                                  .after = i > 0 && w[i].after_previous ? &ops[i - 1] : NULL};
                w[i].err = (struct xp_error){0};
                w[i].result = op_prepare(store, op, w[i].object, &w[i].err);
                op->shared = w[i].share ? w[i].object : NULL;
                op->wake = &wake;
                if (w[i].result >= 0)
                        queued[n_queued++] = op;
                else
                        op->done = true; /* never queued: version 0, so what follows is not */
        }
        writer_wait_init(&wake);
        submit(store, queued, n_queued);
        for (size_t i = 0; i < n; i++) {
                if (w[i].result >= 0)
                        w[i].result = op_finish(store, &ops[i], w[i].object, NULL, NULL, &w[i].err);
                w[i].version = w[i].result >= 0 ? ops[i].version : 0;
                written += w[i].result >= 0;
                op_release(&ops[i]);
        }
        return written;
}

int xp_store_create_text(struct xp_store *store,
                         const char *kind,
                         const char *namespace,
                         const char *name,
                         json_t *object,
                         struct xp_store_written *ret,
                         struct xp_error *err)
{
        struct op op = {
            .type = OP_CREATE,
            .kind = kind,
            .namespace = namespace,
            .name = name,
        };

        return write_op(store, &op, object, NULL, ret, err);
}

int xp_store_create(struct xp_store *store,
                    const char *kind,
                    const char *namespace,
                    const char *name,
                    json_t *object,
                    uint64_t *ret_version,
                    struct xp_error *err)
{
        struct xp_store_written w = {0};
        int r = xp_store_create_text(store, kind, namespace, name, object, &w, err);

        if (r >= 0 && ret_version)
                *ret_version = w.version;
        return r;
}

int xp_store_update_text(struct xp_store *store,
                         const char *kind,
                         const char *namespace,
                         const char *name,
                         uint64_t expected_version,
                         json_t *object,
                         struct xp_store_written *ret,
                         struct xp_error *err)
{
        struct op op = {
            .type = OP_UPDATE,
            .kind = kind,
            .namespace = namespace,
            .name = name,
            .expected_version = expected_version,
        };

        return write_op(store, &op, object, NULL, ret, err);
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
        struct xp_store_written w = {0};
        int r =
            xp_store_update_text(store, kind, namespace, name, expected_version, object, &w, err);

        if (r >= 0 && ret_version)
                *ret_version = w.version;
        return r;
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

        struct xp_store_written w = {0};
        int r = write_op(store, &op, NULL, ret_last, &w, err);

        if (r >= 0 && ret_version)
                *ret_version = w.version;
        return r;
}
