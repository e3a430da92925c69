/* SPDX-License-Identifier: Apache-2.0 */
/*
 * xp_store_recover(): a damaged store starts over from what is intact, and never hands out a
 * version twice.
 *
 * 1. Build PATH.recover: every object that reads back from the old database (through a read-only
 *    connection, which sees the WAL up to its damage), an empty event log, the counter at the
 *    floor (the highest version the seal, its reservation or the database says was handed
 *    out), a new store id; and PATH.seal.recover for it. Both fsync'ed.
 * 2. Hard-link the old files into PATH.damaged-TIMESTAMP/.
 * 3. Remove the old -wal and -shm (SQLite would replay an old WAL onto the new file), rename the
 *    new database over the old, then the new seal over the old.
 * A crash between any two steps leaves files that the next open reports as damaged (the old
 * seal disagrees with whatever database is there) or accepts as recovered: never a silent loss.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "store_internal.h"
#include "xpool/macro.h"

static void sqlite_closep(sqlite3 **db)
{
        sqlite3_close(*db);
}

static int fsync_path(const char *path, bool dir)
{
        _cleanup_close_ int fd = open(path, (dir ? O_DIRECTORY : 0) | O_RDONLY | O_CLOEXEC);

        if (fd < 0 || fsync(fd) < 0)
                return -errno;
        return 0;
}

static int fsync_parent(const char *path)
{
        _cleanup_free_ char *copy = strdup(path);

        return copy ? fsync_path(dirname(copy), true) : -ENOMEM;
}

/* A row recover leaves out: counted, and named in the notes while they have room. */
static void drop_row(sqlite3_stmt *from, const char *why, struct xp_store_recovery *ret)
{
        size_t used = strlen(ret->notes);
        const char *ns = (const char *)sqlite3_column_text(from, 1) ?: "?";

        ret->dropped++;
        if (used + 1 < sizeof(ret->notes))
                snprintf(ret->notes + used,
                         sizeof(ret->notes) - used,
                         "%s%s %s%s%s (type %s)",
                         used ? "; " : "left out: ",
                         why,
                         ns,
                         store_key_ns(ns),
                         (const char *)sqlite3_column_text(from, 2) ?: "?",
                         (const char *)sqlite3_column_text(from, 0) ?: "?");
}

/* Why a row of the old objects table is not carried over, or NULL when it is. */
static const char *row_fault(sqlite3_stmt *from, bool checksums)
{
        const char *body = (const char *)sqlite3_column_text(from, 4);
        size_t len = (size_t)sqlite3_column_bytes(from, 4);
        json_t *o;

        if (!body || !sqlite3_column_text(from, 0) || !sqlite3_column_text(from, 2))
                return "unreadable";
        if (checksums && !store_row_intact(from, 0))
                return "fails its checksum:";
        /* an encrypted body is kept as it is: the key file still opens it */
        if (store_envelope_is(body, len))
                return NULL;
        o = store_parse_body(body, len, (uint64_t)sqlite3_column_int64(from, 3));
        json_decref(o);
        return o ? NULL : "not a JSON object:";
}

/* Copies the objects that read back; stops at the first row SQLite cannot read. */
static int copy_objects(sqlite3 *old, sqlite3 *db, struct xp_store_recovery *ret)
{
        sqlite3_stmt *from = NULL, *to = NULL;
        bool checksums = true;
        struct store_checked_row row;
        int64_t sum;
        int rc;

        rc = sqlite3_prepare_v2(old,
                                "SELECT kind, namespace, name, version, body, checksum FROM "
                                "objects",
                                -1,
                                &from,
                                NULL);
        if (rc != SQLITE_OK) { /* a store from before checksums */
                checksums = false;
                rc = sqlite3_prepare_v2(old,
                                        "SELECT kind, namespace, name, version, body FROM objects",
                                        -1,
                                        &from,
                                        NULL);
        }
        if (rc == SQLITE_OK)
                rc = sqlite3_prepare_v2(db,
                                        "INSERT INTO objects (kind, namespace, name, version, "
                                        "body, checksum) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                                        -1,
                                        &to,
                                        NULL);
        while (rc == SQLITE_OK && (rc = sqlite3_step(from)) == SQLITE_ROW) {
                const char *why = row_fault(from, checksums);

                rc = SQLITE_OK;
                if (why) {
                        drop_row(from, why, ret);
                        continue;
                }
                for (int i = 0; i < 5; i++)
                        sqlite3_bind_value(to, i + 1, sqlite3_column_value(from, i));
                row = (struct store_checked_row){
                    .event_type = STORE_NOT_AN_EVENT,
                    .kind = (const char *)sqlite3_column_text(from, 0),
                    .ns = (const char *)sqlite3_column_text(from, 1) ?: "",
                    .name = (const char *)sqlite3_column_text(from, 2),
                    .version = (uint64_t)sqlite3_column_int64(from, 3),
                    .body = (const char *)sqlite3_column_text(from, 4),
                    .len = (size_t)sqlite3_column_bytes(from, 4),
                };
                if (store_checksum_of(&row, &sum) < 0) {
                        rc = SQLITE_NOMEM;
                        break;
                }
                sqlite3_bind_int64(to, 6, sum);
                rc = store_step_done(to);
                rc = rc == SQLITE_DONE ? SQLITE_OK : rc;
                ret->kept += rc == SQLITE_OK;
        }
        if (rc != SQLITE_DONE && rc != SQLITE_OK)
                snprintf(ret->notes,
                         sizeof(ret->notes),
                         "the old objects table could be read only in part (%s): the objects "
                         "after the last one kept may be lost",
                         sqlite3_errstr(rc));
        sqlite3_finalize(from);
        sqlite3_finalize(to);
        return 0;
}

/* The new database at tmp: what reads back of old (may be NULL), the counter at floor. */
static int build_db(const char *tmp,
                    sqlite3 *old,
                    uint64_t floor,
                    uint64_t store_id,
                    struct xp_store_recovery *ret,
                    struct xp_error *err)
{
        _cleanup_(sqlite_closep) sqlite3 *db = NULL;
        char sql[256];
        int fd, r;

        fd = open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return xp_errorf(err, -errno, "store: cannot create '%s': %m", tmp);
        close(fd);
        r = store_open_db(tmp, 0, &db, err);
        if (r < 0)
                return r;
        r = store_exec(tmp, db, "PRAGMA synchronous = FULL; BEGIN", err);
        if (r >= 0)
                r = store_exec(tmp, db, store_tables_sql, err);
        if (r < 0)
                return r;
        if (old)
                copy_objects(old, db, ret);
        snprintf(sql,
                 sizeof(sql),
                 "INSERT INTO meta VALUES ('version', %" PRId64 "), ('digest', 0), "
                 "('store_id', %" PRId64 "); PRAGMA application_id = %d; PRAGMA user_version = "
                 "%d; COMMIT",
                 (int64_t)floor,
                 (int64_t)store_id,
                 APPLICATION_ID,
                 SCHEMA_VERSION);
        r = store_exec(tmp, db, sql, err);
        if (r >= 0)
                r = store_pragma(tmp, db, "PRAGMA journal_mode = WAL", "wal", err);
        if (r < 0)
                return r;
        sqlite3_close(TAKE_PTR(db)); /* checkpoints: everything is in the file now */
        r = fsync_path(tmp, false);
        return r < 0 ? xp_errorf(err, r, "store: cannot sync '%s': %s", tmp, strerror(-r)) : 0;
}

/* The new seal at tmp: the commit at floor, versions reserved a step beyond. */
static int build_seal(const char *tmp, uint64_t floor, uint64_t store_id, struct xp_error *err)
{
        struct seal seal = {.path = (char *)tmp, .store_id = store_id};
        int r;

        seal.fd = open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (seal.fd < 0)
                return xp_errorf(err, -errno, "store: cannot create '%s': %m", tmp);
        r = -posix_fallocate(seal.fd, 0, SEAL_SIZE);
        if (r < 0 && r != -EOPNOTSUPP) {
                close(seal.fd);
                return xp_errorf(err, r, "store: cannot allocate '%s': %s", tmp, strerror(-r));
        }
        r = seal_write(&seal, SEAL_RESERVE, floor + RESERVE_STEP, 0, false, err);
        if (r >= 0)
                r = seal_write(&seal, SEAL_COMMIT, floor, 0, true, err);
        close(seal.fd);
        return r;
}

/* PATH.damaged-TIMESTAMP (with -N when taken), made 0700, into ret. */
static int make_aside(const char *path, char *ret, size_t size, struct xp_error *err)
{
        time_t now = time(NULL);
        struct tm tm;
        char stamp[32];

        gmtime_r(&now, &tm);
        strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", &tm);
        for (int i = 0; i < 100; i++) {
                if (i == 0)
                        snprintf(ret, size, "%s.damaged-%s", path, stamp);
                else
                        snprintf(ret, size, "%s.damaged-%s-%d", path, stamp, i);
                if (mkdir(ret, 0700) == 0)
                        return 0;
                if (errno != EEXIST)
                        return xp_errorf(err, -errno, "store: cannot create '%s': %m", ret);
        }
        return xp_errorf(err, -EEXIST, "store: no free name for '%s.damaged-%s'", path, stamp);
}

/* Hard links of the damaged files in the aside directory; the originals stay until replaced. */
static int link_aside(const char *path, const char *aside, struct xp_error *err)
{
        static const char *const suffixes[] = {"", "-wal", "-shm", SEAL_SUFFIX};
        _cleanup_free_ char *copy = strdup(path);
        const char *base;

        if (!copy)
                return -ENOMEM;
        base = basename(copy);
        for (size_t i = 0; i < XP_ELEMENTSOF(suffixes); i++) {
                _cleanup_free_ char *from = NULL, *to = NULL;

                if (asprintf(&from, "%s%s", path, suffixes[i]) < 0 ||
                    asprintf(&to, "%s/%s%s", aside, base, suffixes[i]) < 0)
                        return -ENOMEM;
                if (link(from, to) < 0 && errno != ENOENT)
                        return xp_errorf(
                            err, -errno, "store: cannot keep '%s' as '%s': %m", from, to);
        }
        return fsync_path(aside, true);
}

/* Steps 2 and 3: the old files aside, the new ones in their place. */
static int swap_in(const char *path,
                   const char *db_tmp,
                   const char *seal_tmp,
                   char *aside,
                   size_t size,
                   struct xp_error *err)
{
        static const char *const derived[] = {"-wal", "-shm"};
        _cleanup_free_ char *seal = seal_path(path);
        int r;

        if (!seal)
                return -ENOMEM;
        r = make_aside(path, aside, size, err);
        if (r >= 0)
                r = link_aside(path, aside, err);
        if (r < 0)
                return r;
        for (size_t i = 0; i < XP_ELEMENTSOF(derived); i++) {
                _cleanup_free_ char *p = NULL;

                if (asprintf(&p, "%s%s", path, derived[i]) < 0)
                        return -ENOMEM;
                if (unlink(p) < 0 && errno != ENOENT)
                        return xp_errorf(err, -errno, "store: cannot remove '%s': %m", p);
        }
        if (rename(db_tmp, path) < 0)
                return xp_errorf(err, -errno, "store: cannot move '%s' to '%s': %m", db_tmp, path);
        if (rename(seal_tmp, seal) < 0)
                return xp_errorf(
                    err, -errno, "store: cannot move '%s' to '%s': %m", seal_tmp, seal);
        return fsync_parent(path);
}

/* With the lock held and the damage known: steps 1 to 3. */
static int rebuild(const char *path,
                   sqlite3 **old,
                   const struct seal_state *seal,
                   const struct store_facts *db,
                   struct xp_store_recovery *ret,
                   struct xp_error *err)
{
        _cleanup_free_ char *db_tmp = NULL, *seal_tmp = NULL;
        uint64_t floor = store_floor(seal, db), id = 0;
        int r;

        /* Without a seal nothing says how far the lost one had reserved: a step past the
         * database, the most the seal ever runs ahead of the counter it reserved from. */
        if (!seal->written)
                floor += RESERVE_STEP;
        r = store_new_id(&id, err);
        if (r < 0)
                return r;
        if (asprintf(&db_tmp, "%s.recover", path) < 0 ||
            asprintf(&seal_tmp, "%s" SEAL_SUFFIX ".recover", path) < 0)
                return -ENOMEM;
        r = build_db(db_tmp, db->absent || db->empty ? NULL : *old, floor, id, ret, err);
        sqlite3_close(*old); /* read-only: it leaves the old files as they are */
        *old = NULL;
        if (r >= 0)
                r = build_seal(seal_tmp, floor, id, err);
        if (r >= 0)
                r = swap_in(path, db_tmp, seal_tmp, ret->aside, sizeof(ret->aside), err);
        if (r < 0) {
                unlink(db_tmp);
                unlink(seal_tmp);
                return r;
        }
        ret->recovered = true;
        ret->next_version = floor + 1;
        return 0;
}

int xp_store_recover(const char *path, struct xp_store_recovery *ret, struct xp_error *err)
{
        _cleanup_(sqlite_closep) sqlite3 *old = NULL;
        struct seal lock = {.fd = -1};
        struct seal_state seal;
        struct store_facts db;
        struct store_verdict v;
        int r;

        if (!path || !path[0])
                return xp_errorf(err, -EINVAL, "store: no database path given");
        *ret = (struct xp_store_recovery){0};
        /* the seal's lock keeps a server from opening the store meanwhile */
        r = seal_open(path, &lock, &seal, err);
        if (r < 0)
                return r;
        r = store_examine(path, SQLITE_OPEN_READONLY, true, &old, &db, err);
        if (r >= 0) {
                store_judge(&seal, &db, &v);
                store_report_fill(&seal, &db, &v, &ret->before);
                if (v.damaged)
                        r = rebuild(path, &old, &seal, &db, ret, err);
        }
        /* a seal made by this call is removed unless it was replaced by the recovered one */
        seal_close(&lock, !ret->recovered);
        return r;
}
