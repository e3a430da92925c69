/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Damage detection: what the database holds (store_probe), whether it agrees with the seal
 * (store_judge, pure), and the read-only report of both (xp_store_check).
 *
 * The rule: every version up to the seal's last commit was acknowledged to a client, so a
 * database whose counter is below it lost writes; a database of another store, one without a
 * seal that was sealed before, or one that fails SQLite's integrity check is damaged too. A
 * database ahead of its seal is fine: the seal is written after each commit, so a kill between
 * the two, or a power cut, leaves it behind.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store_internal.h"
#include "xpool/macro.h"

static void set_corrupt(struct store_facts *f, sqlite3 *db, int rc)
{
        f->corrupt = true;
        f->not_db = (rc & 0xff) == SQLITE_NOTADB;
        snprintf(
            f->problem, sizeof(f->problem), "%s", db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
}

/* A query's first row into up to two integers: SQLITE_ROW, SQLITE_DONE or the error. */
static int query2(sqlite3 *db, const char *sql, int64_t *a, int64_t *b)
{
        sqlite3_stmt *st = NULL;
        int rc;

        rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
        if (rc != SQLITE_OK)
                return rc;
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
                *a = sqlite3_column_int64(st, 0);
                if (b)
                        *b = sqlite3_column_int64(st, 1);
        }
        sqlite3_finalize(st);
        return rc;
}

/* The meta rows: version, digest and store id (0 when a row is missing). */
static int read_meta(sqlite3 *db, struct store_facts *f)
{
        static const char *const sql[] = {
            "SELECT value FROM meta WHERE key = 'version'",
            "SELECT value FROM meta WHERE key = 'digest'",
            "SELECT value FROM meta WHERE key = 'store_id'",
        };
        uint64_t *out[] = {&f->version, &f->digest, &f->store_id};

        for (size_t i = 0; i < XP_ELEMENTSOF(sql); i++) {
                int64_t v = 0;
                int rc = query2(db, sql[i], &v, NULL);

                if (rc != SQLITE_ROW && rc != SQLITE_DONE)
                        return rc;
                *out[i] = (uint64_t)v;
        }
        f->sealed = f->store_id != 0;
        return SQLITE_OK;
}

/* PRAGMA quick_check or integrity_check: problem holds the first finding unless "ok". */
static int integrity(sqlite3 *db, bool full, struct store_facts *f)
{
        sqlite3_stmt *st = NULL;
        const char *text;
        int rc;

        rc = sqlite3_prepare_v2(
            db, full ? "PRAGMA integrity_check" : "PRAGMA quick_check", -1, &st, NULL);
        if (rc != SQLITE_OK)
                return rc;
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
                text = (const char *)sqlite3_column_text(st, 0);
                if (!text || strcmp(text, "ok") != 0) {
                        f->corrupt = true;
                        snprintf(f->problem, sizeof(f->problem), "%s", text ?: "(no answer)");
                }
                rc = SQLITE_OK;
        }
        sqlite3_finalize(st);
        return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

/*
 * What the database holds (db open, read-only or not, nothing written): the schema, the meta
 * rows, and the integrity check (full: integrity_check and the objects' count; else
 * quick_check). What SQLite calls corrupt (or not a database) is facts->corrupt; a failure
 * to read (I/O, a full disk that leaves no room for the WAL index, ...) is -errno.
 */
static int
store_probe(const char *path, sqlite3 *db, bool full, struct store_facts *f, struct xp_error *err)
{
        int64_t tables = 0, app_id = 0, user_version = 0, n = 0, max = 0;
        int rc;

        rc = query2(db, "SELECT count(*) FROM sqlite_schema WHERE type = 'table'", &tables, NULL);
        if (rc == SQLITE_ROW)
                rc = query2(db, "PRAGMA application_id", &app_id, NULL);
        if (rc == SQLITE_ROW)
                rc = query2(db, "PRAGMA user_version", &user_version, NULL);
        if (rc != SQLITE_ROW)
                goto corrupt;
        f->empty = tables == 0;
        f->foreign = (app_id != 0 && app_id != APPLICATION_ID) || (app_id == 0 && tables > 0);
        f->newer = user_version > SCHEMA_VERSION;
        if (f->empty || f->foreign || f->newer)
                return 0;
        rc = read_meta(db, f);
        f->schema = user_version;
        if (rc == SQLITE_OK)
                rc = integrity(db, full, f);
        /* a store from before checksums (schema 1) has none to check until its upgrade */
        if (rc == SQLITE_OK && !f->corrupt && user_version >= 2)
                rc = store_scan_checksums(db, f);
        if (rc == SQLITE_OK && full && !f->corrupt) {
                rc = query2(db, "SELECT count(*), max(version) FROM objects", &n, &max);
                f->objects = (uint64_t)n;
                f->max_object_version = (uint64_t)max;
                rc = rc == SQLITE_ROW ? SQLITE_OK : rc;
        }
        if (rc == SQLITE_OK)
                return 0;
corrupt:
        /* what says the file is damaged; anything else (I/O, a full disk, locks, memory) is
         * not a finding about the file but a failure to look at it */
        if ((rc & 0xff) != SQLITE_CORRUPT && (rc & 0xff) != SQLITE_NOTADB &&
            (rc & 0xff) != SQLITE_FORMAT)
                return store_sqlite_fail(path, db, rc, err, "cannot examine the database");
        set_corrupt(f, db, rc);
        return 0;
}

/* what, formatted; returns true (damaged) so that judging reads as a list of findings */
_printf_(2, 3) static bool damaged(struct store_verdict *v, const char *fmt, ...)
{
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(v->what, sizeof(v->what), fmt, ap);
        va_end(ap);
        v->damaged = true;
        return true;
}

static void lost(struct store_verdict *v, uint64_t from, uint64_t to)
{
        v->lost_from = from;
        v->lost_to = to;
}

/* A database and a seal that holds records. */
static void
judge_sealed(const struct seal_state *seal, const struct store_facts *db, struct store_verdict *v)
{
        uint64_t sealed = seal->has_commit ? seal->commit.version : 0;
        uint64_t id = seal->has_commit ? seal->commit.store_id : seal->reserve.store_id;

        if (db->absent || db->empty) {
                if (sealed == 0)
                        return; /* a store that never committed: nothing to lose */
                lost(v, 1, sealed);
                damaged(v,
                        "the database is %s, but its seal records versions up to %" PRIu64
                        ": versions 1..%" PRIu64 " were acknowledged and are lost",
                        db->absent ? "missing" : "empty",
                        sealed,
                        sealed);
                return;
        }
        if (!db->sealed) {
                /* an upgrade from before seals, cut short after the seal was written */
                if (db->version == sealed)
                        return;
                if (db->version < sealed)
                        lost(v, db->version + 1, sealed);
                damaged(v,
                        "the database has no store id, but a seal of store %016" PRIx64
                        " records version %" PRIu64 " (the database holds %" PRIu64 ")",
                        id,
                        sealed,
                        db->version);
                return;
        }
        if (db->store_id != id) {
                damaged(v,
                        "the database is store %016" PRIx64 ", but its seal is store %016" PRIx64
                        "'s (version %" PRIu64 "): one of them is a copy from elsewhere",
                        db->store_id,
                        id,
                        sealed);
                return;
        }
        if (db->version < sealed) {
                lost(v, db->version + 1, sealed);
                damaged(v,
                        "versions %" PRIu64 "..%" PRIu64 " were acknowledged but are not in the "
                        "database (it holds up to %" PRIu64 "; its seal records %" PRIu64 ")",
                        db->version + 1,
                        sealed,
                        db->version,
                        sealed);
                return;
        }
        if (seal->has_commit && db->version == sealed && db->digest != seal->commit.digest) {
                damaged(v,
                        "the database at version %" PRIu64 " is not the history its seal "
                        "records (digest %016" PRIx64 ", sealed %016" PRIx64 ")",
                        sealed,
                        db->digest,
                        seal->commit.digest);
                return;
        }
        if (seal->has_reserve && seal->reserve.store_id == id &&
            db->version > seal->reserve.version)
                damaged(v,
                        "the database holds version %" PRIu64 ", past the %" PRIu64
                        " its seal reserved: the seal is older than the database",
                        db->version,
                        seal->reserve.version);
}

static void
judge_files(const struct seal_state *seal, const struct store_facts *db, struct store_verdict *v)
{
        uint64_t sealed = seal->has_commit ? seal->commit.version : 0;

        *v = (struct store_verdict){0};
        if (db->corrupt) {
                if (sealed > 0)
                        damaged(v,
                                "the database is corrupt (%s); versions up to %" PRIu64
                                " were acknowledged: `recover` keeps what can still be read",
                                db->problem,
                                sealed);
                else
                        damaged(v, "the database is corrupt (%s)", db->problem);
                return;
        }
        if (db->foreign || db->newer) {
                damaged(v,
                        "the database is %s",
                        db->foreign ? "not an xpool store" : "of a newer xpool's schema");
                return;
        }
        if (seal->damaged) {
                damaged(v,
                        "the seal holds no valid record: whether acknowledged writes are lost "
                        "cannot be told");
                return;
        }
        if (!seal->written) {
                if (db->sealed)
                        damaged(v,
                                "the seal is missing, though the database (store %016" PRIx64
                                ", version %" PRIu64 ") had one: whether writes after version "
                                "%" PRIu64 " were acknowledged and lost cannot be told",
                                db->store_id,
                                db->version,
                                db->version);
                return;
        }
        judge_sealed(seal, db, v);
}

void store_judge(const struct seal_state *seal,
                 const struct store_facts *db,
                 struct store_verdict *v)
{
        judge_files(seal, db, v);
        if (v->damaged || db->bad_checksums == 0)
                return;
        if (db->bad_checksums == 1)
                damaged(v,
                        "%s fails its checksum: its row was changed after it was written",
                        db->bad_rows);
        else
                damaged(v,
                        "%" PRIu64 " rows fail their checksums (they were changed after they "
                        "were written): %s%s",
                        db->bad_checksums,
                        db->bad_rows,
                        db->bad_rows_unnamed ? ", and more" : "");
}

int store_damage_error(const char *path, const struct store_verdict *v, struct xp_error *err)
{
        return xp_errorf(err, -EUCLEAN, "store %s is damaged: %s", path, v->what);
}

uint64_t store_floor(const struct seal_state *seal, const struct store_facts *db)
{
        uint64_t floor =
            db->version > db->max_object_version ? db->version : db->max_object_version;

        if (seal->has_commit && seal->commit.version > floor)
                floor = seal->commit.version;
        if (seal->has_reserve && seal->reserve.version > floor)
                floor = seal->reserve.version;
        return floor;
}

/* Whether a process holds the seal's lock (has the store open). */
static bool in_use(const char *db_path)
{
        _cleanup_free_ char *path = seal_path(db_path);
        _cleanup_close_ int fd = -1;

        if (!path)
                return false;
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
        if (fd < 0)
                return false;
        if (flock(fd, LOCK_SH | LOCK_NB) < 0)
                return errno == EWOULDBLOCK;
        flock(fd, LOCK_UN);
        return false;
}

void store_report_fill(const struct seal_state *seal,
                       const struct store_facts *db,
                       const struct store_verdict *v,
                       struct xp_store_report *ret)
{
        *ret = (struct xp_store_report){
            .exists = !db->absent || seal->present,
            .damaged = v->damaged,
            .sealed = seal->written,
            .store_id = db->sealed         ? db->store_id
                        : seal->has_commit ? seal->commit.store_id
                                           : 0,
            .version = db->version,
            .objects = db->objects,
            .sealed_version = seal->has_commit ? seal->commit.version : 0,
            .reserved = seal->has_reserve ? seal->reserve.version : 0,
            .lost_from = v->lost_from,
            .lost_to = v->lost_to,
            .bad_checksums = db->bad_checksums,
        };
        if (db->bad_rows_unnamed)
                snprintf(ret->bad_rows,
                         sizeof(ret->bad_rows),
                         "%s, and %" PRIu64 " more",
                         db->bad_rows,
                         db->bad_rows_unnamed);
        else
                snprintf(ret->bad_rows, sizeof(ret->bad_rows), "%s", db->bad_rows);
        snprintf(ret->integrity,
                 sizeof(ret->integrity),
                 "%s",
                 db->absent || db->empty ? "no database"
                 : db->corrupt           ? db->problem
                                         : "ok");
        if (v->damaged)
                snprintf(ret->finding, sizeof(ret->finding), "%s", v->what);
        else
                snprintf(ret->finding,
                         sizeof(ret->finding),
                         "%s",
                         !ret->exists ? "there is no store here yet"
                         : db->absent || db->empty
                             ? "the store is empty and nothing was acknowledged"
                         : !seal->written ? "the database is intact; it has no seal yet (the "
                                            "next open writes one)"
                                          : "the database is intact and agrees with its seal");
        if (!v->damaged && !db->absent && !db->empty && db->schema > 0 &&
            db->schema < SCHEMA_VERSION) {
                size_t used = strlen(ret->finding);

                snprintf(ret->finding + used,
                         sizeof(ret->finding) - used,
                         "; it is at schema %" PRId64 ", which the next open upgrades to %d",
                         db->schema,
                         SCHEMA_VERSION);
        }
}

int store_examine(const char *path,
                  int flags,
                  bool full,
                  sqlite3 **ret_db,
                  struct store_facts *ret,
                  struct xp_error *err)
{
        struct stat st;
        sqlite3 *db = NULL;
        int r;

        *ret = (struct store_facts){0};
        if (stat(path, &st) < 0) {
                if (errno != ENOENT)
                        return xp_errorf(err, -errno, "store %s: cannot examine it: %m", path);
                ret->absent = true;
                return 0;
        }
        r = store_open_db(path, flags, &db, err);
        if (r < 0)
                return r;
        /* Closing the last connection checkpoints the WAL into the file and removes it: not
         * before the files are known to agree, or a damaged WAL's evidence would go. */
        sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, NULL);
        r = store_probe(path, db, full, ret, err);
        if (r < 0 || !ret_db)
                sqlite3_close(db);
        else
                *ret_db = db;
        return r;
}

int xp_store_check(const char *path, struct xp_store_report *ret, struct xp_error *err)
{
        struct seal_state seal;
        struct store_facts db;
        struct store_verdict v;
        bool busy;
        int r;

        if (!path || !path[0])
                return xp_errorf(err, -EINVAL, "store: no database path given");
        busy = in_use(path);
        r = seal_read(path, &seal, err);
        if (r < 0)
                return r;
        r = store_examine(path, SQLITE_OPEN_READONLY, true, NULL, &db, err);
        if (r < 0)
                return r;
        store_judge(&seal, &db, &v);
        store_report_fill(&seal, &db, &v, ret);
        ret->in_use = busy;
        return 0;
}
