/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Row checksums: every objects row and every event row carries one, so that a row changed after it
 * was written (a flipped bit in the file that SQLite's own checks do not see: they check pages, not
 * values) is refused instead of served. The checksum is the key-and-body hash the digest chain
 * already takes of each write (store_row_hash(): no second SHA-256 on the write path) mixed with
 * the row's version, so a row swapped with another, or given another version, fails too.
 */
#include <errno.h>
#include <gnutls/crypto.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "store_internal.h"

static uint64_t first64(const uint8_t *p)
{
        uint64_t v = 0;

        for (int i = 0; i < 8; i++)
                v |= (uint64_t)p[i] << (8 * i);
        return v;
}

/* No result but a failure: a hash that failed must never stand as a row's checksum. */
int store_row_hash(
    const char *kind, const char *ns, const char *name, const char *body, size_t len, uint64_t *ret)
{
        gnutls_hash_hd_t h;
        uint8_t out[32];
        int r;

        if (gnutls_hash_init(&h, GNUTLS_DIG_SHA256) < 0)
                return -ENOMEM;
        /* the NULs keep ("ab", "c") apart from ("a", "bc") */
        r = gnutls_hash(h, kind, strlen(kind) + 1);
        r = r < 0 ? r : gnutls_hash(h, ns, strlen(ns) + 1);
        r = r < 0 ? r : gnutls_hash(h, name, strlen(name) + 1);
        if (body && r >= 0)
                r = gnutls_hash(h, body, len);
        gnutls_hash_deinit(h, out);
        if (r < 0)
                return -ENOMEM;
        *ret = first64(out);
        return 0;
}

/* A bijection of 64-bit numbers (splitmix64's finaliser): any change of the version shows. */
static uint64_t mix(uint64_t x)
{
        x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
        x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
        return x ^ (x >> 31);
}

int64_t store_row_checksum(uint64_t row_hash, uint64_t version)
{
        return (int64_t)(row_hash ^ mix(version));
}

int store_checksum_of(const struct store_checked_row *row, int64_t *ret)
{
        uint64_t hash;
        int r = store_row_hash(row->kind, row->ns, row->name, row->body, row->len, &hash);

        if (r < 0)
                return r;
        if (row->event_type != STORE_NOT_AN_EVENT)
                hash = store_op_hash(row->event_type, hash);
        *ret = store_row_checksum(hash, row->version);
        return 0;
}

/* Where a table's checksummed columns are, counted from a statement's first one. */
struct checked_columns {
        int version, event_type, kind, ns, name, body, checksum; /* event_type -1: none */
};

static const struct checked_columns object_columns = {3, -1, 0, 1, 2, 4, 5};
static const struct checked_columns event_columns = {0, 1, 2, 3, 4, 5, 6};

static bool columns_intact(sqlite3_stmt *st, int first, const struct checked_columns *at)
{
        struct store_checked_row row = {
            .event_type = at->event_type < 0 ? STORE_NOT_AN_EVENT
                                             : sqlite3_column_int(st, first + at->event_type),
            .kind = (const char *)sqlite3_column_text(st, first + at->kind),
            .ns = (const char *)sqlite3_column_text(st, first + at->ns),
            .name = (const char *)sqlite3_column_text(st, first + at->name),
            .version = (uint64_t)sqlite3_column_int64(st, first + at->version),
            .body = (const char *)sqlite3_column_text(st, first + at->body),
            .len = (size_t)sqlite3_column_bytes(st, first + at->body),
        };
        int64_t sum;

        if (!row.kind || !row.ns || !row.name || !row.body ||
            sqlite3_column_type(st, first + at->version) != SQLITE_INTEGER ||
            sqlite3_column_type(st, first + at->checksum) != SQLITE_INTEGER)
                return false;
        /* a row that cannot be checked (out of memory) is not served either */
        return store_checksum_of(&row, &sum) >= 0 &&
               sqlite3_column_int64(st, first + at->checksum) == sum;
}

bool store_event_intact(sqlite3_stmt *st, int first)
{
        return columns_intact(st, first, &event_columns);
}

bool store_row_intact(sqlite3_stmt *st, int first)
{
        return columns_intact(st, first, &object_columns);
}

/* -EUCLEAN: "store PATH is damaged: WHAT fails its checksum ...". */
static int fails(const char *path, const char *what, struct xp_error *err)
{
        return xp_errorf(err,
                         -EUCLEAN,
                         "store %s is damaged: %s fails its checksum: its row was changed after "
                         "it was written; see xpool store check, and xpool store recover",
                         path,
                         what);
}

int store_event_damaged(const char *path,
                        const char *kind,
                        const char *ns,
                        const char *name,
                        uint64_t version,
                        struct xp_error *err)
{
        char what[4 * XP_STORE_KEY_MAX];

        snprintf(what,
                 sizeof(what),
                 "event %" PRIu64 " of %s%s%s (type %s)",
                 version,
                 ns,
                 store_key_ns(ns),
                 name,
                 kind);
        return fails(path, what, err);
}

int store_row_damaged(const char *path,
                      const char *kind,
                      const char *ns,
                      const char *name,
                      uint64_t version,
                      struct xp_error *err)
{
        char what[4 * XP_STORE_KEY_MAX];

        snprintf(what,
                 sizeof(what),
                 "object %s%s%s (type %s, version %" PRIu64 ")",
                 ns,
                 store_key_ns(ns),
                 name,
                 kind,
                 version);
        return fails(path, what, err);
}

/*
 * Appends "object NS/NAME (type KIND)" (or "event V of ...") to the list while it fits, else
 * counts it among the rest.
 */
static void name_row(sqlite3_stmt *st, int key, int64_t event, struct store_facts *f)
{
        const char *kind = (const char *)sqlite3_column_text(st, key) ?: "?";
        const char *ns = (const char *)sqlite3_column_text(st, key + 1) ?: "?";
        const char *name = (const char *)sqlite3_column_text(st, key + 2) ?: "?";
        size_t used = strlen(f->bad_rows);
        char what[32] = "object";
        int n;

        f->bad_checksums++;
        if (event)
                snprintf(what, sizeof(what), "event %" PRId64 " of", event);
        n = snprintf(f->bad_rows + used,
                     sizeof(f->bad_rows) - used,
                     "%s%s %s%s%s (type %s)",
                     used ? ", " : "",
                     what,
                     ns,
                     store_key_ns(ns),
                     name,
                     kind);
        if (n < 0 || (size_t)n >= sizeof(f->bad_rows) - used) {
                f->bad_rows[used] = '\0';
                f->bad_rows_unnamed++;
        }
}

int store_scan_checksums(sqlite3 *db, struct store_facts *f)
{
        static const char *const sql[] = {
            "SELECT kind, namespace, name, version, body, checksum FROM objects",
            /* an event that reads its body in objects is checked with that row, and when read */
            "SELECT version, type, kind, namespace, name, body, checksum FROM events WHERE "
            "body <> ''",
        };
        sqlite3_stmt *st = NULL;
        int rc = SQLITE_OK;

        for (size_t events = 0; events < 2 && rc == SQLITE_OK; events++) {
                rc = sqlite3_prepare_v2(db, sql[events], -1, &st, NULL);
                while (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
                        rc = SQLITE_OK;
                        if (events && !store_event_intact(st, 0))
                                name_row(st, 2, sqlite3_column_int64(st, 0), f);
                        else if (!events && !store_row_intact(st, 0))
                                name_row(st, 0, 0, f);
                }
                sqlite3_finalize(st);
                rc = rc == SQLITE_DONE ? SQLITE_OK : rc;
        }
        return rc;
}

/* xpool_checksum(kind, namespace, name, version, body) and xpool_event_checksum(type, kind,
 * namespace, name, version, body): a row's checksum, for the upgrade. The user data says whether
 * the type comes first. */
static void checksum_fn(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
        int first = sqlite3_user_data(ctx) ? 1 : 0;
        struct store_checked_row row = {
            .event_type = first ? sqlite3_value_int(argv[0]) : STORE_NOT_AN_EVENT,
            .kind = (const char *)sqlite3_value_text(argv[first]),
            .ns = (const char *)sqlite3_value_text(argv[first + 1]),
            .name = (const char *)sqlite3_value_text(argv[first + 2]),
            .version = (uint64_t)sqlite3_value_int64(argv[first + 3]),
            .body = (const char *)sqlite3_value_text(argv[first + 4]),
            .len = (size_t)sqlite3_value_bytes(argv[first + 4]),
        };
        int64_t sum;

        (void)argc;
        if (!row.kind || !row.ns || !row.name) {
                sqlite3_result_null(ctx);
                return;
        }
        if (store_checksum_of(&row, &sum) < 0)
                sqlite3_result_error_nomem(ctx); /* fails the upgrade: nothing half-filled */
        else
                sqlite3_result_int64(ctx, sum);
}

int store_checksum_register(const char *path, sqlite3 *db, struct xp_error *err)
{
        static char type_first; /* its address marks xpool_event_checksum() */
        const int flags = SQLITE_UTF8 | SQLITE_DETERMINISTIC;
        int rc =
            sqlite3_create_function(db, "xpool_checksum", 5, flags, NULL, checksum_fn, NULL, NULL);

        if (rc == SQLITE_OK)
                rc = sqlite3_create_function(
                    db, "xpool_event_checksum", 6, flags, &type_first, checksum_fn, NULL, NULL);

        return rc == SQLITE_OK ? 0 : store_sqlite_fail(path, db, rc, err, "row checksums");
}

/* Whether table has a checksum column. */
static bool has_checksum(sqlite3 *db, const char *table)
{
        char sql[64];
        sqlite3_stmt *st = NULL;
        int rc;

        snprintf(sql, sizeof(sql), "SELECT checksum FROM %s LIMIT 0", table);
        rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
        sqlite3_finalize(st);
        return rc == SQLITE_OK;
}

int store_checksum_upgrade(const char *path, sqlite3 *db, struct xp_error *err)
{
        int r = 0;

        /* a store from before checksums has no such columns: add them and fill them */
        if (!has_checksum(db, "objects"))
                r = store_exec(path,
                               db,
                               "ALTER TABLE objects ADD COLUMN checksum INTEGER;"
                               "UPDATE objects SET checksum = xpool_checksum(kind, namespace, "
                               "name, version, body);",
                               err);
        if (r >= 0 && !has_checksum(db, "events"))
                r = store_exec(path,
                               db,
                               "ALTER TABLE events ADD COLUMN checksum INTEGER;"
                               "UPDATE events SET checksum = xpool_event_checksum(type, kind, "
                               "namespace, name, version, " STORE_EVENT_BODY ");",
                               err);
        return r;
}
