/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The store's tables (schema 4), and the conversion of an older store's objects table to them.
 *
 * Schema 4 keeps objects in a rowid table, its key (kind, namespace, name) a unique index (the
 * PRIMARY KEY of a rowid table). Schemas 1-3 kept it WITHOUT ROWID, a B-tree of the key whose
 * leaves hold at most ~489 bytes of a row in a 4 KiB page: a 2 KiB pod went to an overflow page
 * of its own, 4 KiB written for ~1.5 KiB. A rowid table keeps rows up to 4,061 bytes whole
 * (docs/store.md, "What is stored where").
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>

#include "store_internal.h"
#include "xpool/log.h"
#include "xpool/macro.h"
#include "xpool/timeutil.h"

#define OBJECTS_COLUMNS                                                                            \
        "(kind TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL, version INTEGER NOT "   \
        "NULL, body TEXT NOT NULL, checksum INTEGER, PRIMARY KEY (kind, namespace, name))"

const char store_tables_sql[] =
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS objects " OBJECTS_COLUMNS ";"
    "CREATE TABLE IF NOT EXISTS events (version INTEGER PRIMARY KEY, type INTEGER NOT NULL, kind "
    "TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL, body TEXT NOT NULL, checksum "
    "INTEGER);";

int store_objects_without_rowid(const char *path, sqlite3 *db, bool *ret, struct xp_error *err)
{
        int64_t without_rowid = 0;
        int r = store_query_int(path,
                                db,
                                "SELECT wr FROM pragma_table_list WHERE schema = 'main' AND "
                                "name = 'objects'",
                                &without_rowid,
                                err);

        *ret = r >= 0 && without_rowid != 0;
        return r;
}

int store_objects_upgrade(const char *path, sqlite3 *db, struct xp_error *err)
{
        /*
         * The old table renamed first, so that the new one is made by the same statement as a
         * new store's and its key's index gets the same name. Copied in key order: the rowids
         * then follow the key, and a list (a range of the key's index) reads the table's pages
         * in order.
         */
        static const char *const steps[] = {
            "ALTER TABLE objects RENAME TO objects_v3",
            "CREATE TABLE objects " OBJECTS_COLUMNS,
            "INSERT INTO objects (kind, namespace, name, version, body, checksum) SELECT kind, "
            "namespace, name, version, body, checksum FROM objects_v3 ORDER BY kind, namespace, "
            "name",
            "DROP TABLE objects_v3",
        };
        enum {
                COPY_STEP = 2
        };
        bool without_rowid = false;
        sqlite3_int64 copied = 0;
        int64_t start = xp_monotonic_ms();
        int r = store_objects_without_rowid(path, db, &without_rowid, err);

        if (r < 0 || !without_rowid)
                return r;
        /* a large store takes a while (20 s for 100,000 pods): say why the start waits */
        xp_log(LOG_INFO,
               "store %s: upgrading to schema %d, a copy of the objects table (once)",
               path,
               SCHEMA_VERSION);
        for (size_t i = 0; r >= 0 && i < XP_ELEMENTSOF(steps); i++) {
                r = store_exec(path, db, steps[i], err);
                if (i == COPY_STEP)
                        copied = sqlite3_changes64(db);
        }
        if (r >= 0)
                xp_log(LOG_INFO,
                       "store %s: %" PRId64 " objects copied in %" PRId64 " ms, committing",
                       path,
                       (int64_t)copied,
                       xp_monotonic_ms() - start);
        return r;
}
