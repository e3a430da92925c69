/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Opening the store checks before it writes: the seal is locked and read, the database examined
 * (PRAGMA quick_check, its counter, its store id) through a connection that does not checkpoint
 * when closed, and the two judged against each other. Damage is refused with -EUCLEAN, the files
 * as they were. Only then does the open write: the seal (a reservation of versions, durably, and
 * the current commit), then the schema and the store id when they are new, or an older schema's
 * upgrade (schema.c, checksum.c), in one transaction. When the disk cannot take those writes but
 * the database can be read, the store opens read-only and tries again with later writes
 * (write.c).
 *
 * Closing: the last connection checkpoints the WAL into the database file and removes it.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "store_internal.h"
#include "xpool/log.h"
#include "xpool/macro.h"
#include "xpool/random.h"

#define DEFAULT_EVENT_HISTORY 10000

static const char meta_rows_sql[] = "INSERT OR IGNORE INTO meta (key, value) VALUES ('version', 0);"
                                    "INSERT OR IGNORE INTO meta (key, value) VALUES ('digest', 0);";

/* Whether the schema, the store id and the digest row are all there: nothing to write. */
static bool schema_complete(struct xp_store *store)
{
        int64_t app_id = 0, user_version = 0, rows = 0;

        return store_query_int(
                   store->path, store->writer, "PRAGMA application_id", &app_id, NULL) >= 0 &&
               store_query_int(
                   store->path, store->writer, "PRAGMA user_version", &user_version, NULL) >= 0 &&
               app_id == APPLICATION_ID && user_version == SCHEMA_VERSION &&
               store_query_int(store->path,
                               store->writer,
                               "SELECT count(*) FROM sqlite_schema WHERE name = 'meta'",
                               &rows,
                               NULL) >= 0 &&
               rows == 1 &&
               store_query_int(store->path,
                               store->writer,
                               "SELECT count(*) FROM meta WHERE key IN ('store_id', 'digest')",
                               &rows,
                               NULL) >= 0 &&
               rows == 2;
}

/* The file system of the store's directory: 0, -ENOMEM, or statvfs()'s -errno. */
static int store_fs(const struct xp_store *store, struct statvfs *ret)
{
        _cleanup_free_ char *copy = strdup(store->path);

        if (!copy)
                return -ENOMEM;
        return statvfs(dirname(copy), ret) < 0 ? -errno : 0;
}

/*
 * Whether the file system has room for schema 4's copy: the new table's pages go to the WAL and
 * then, at the checkpoint, past the end of the database (the old table's pages are free only once
 * it is dropped), so about two copies of the table. The file's pages in use bound the old table
 * (the other tables are in them too), and a tenth more covers the new table's key index. When
 * this cannot be told, the copy is tried: a full disk rolls it back.
 */
static bool room_for_copy(struct xp_store *store, uint64_t *ret_need, uint64_t *ret_free)
{
        int64_t pages = 0, free_pages = 0, page_size = 0;
        struct statvfs fs;
        uint64_t used;

        if (store_fs(store, &fs) < 0 ||
            store_query_int(store->path, store->writer, "PRAGMA page_count", &pages, NULL) < 0 ||
            store_query_int(
                store->path, store->writer, "PRAGMA freelist_count", &free_pages, NULL) < 0 ||
            store_query_int(store->path, store->writer, "PRAGMA page_size", &page_size, NULL) < 0)
                return true;
        used = (uint64_t)(pages > free_pages ? pages - free_pages : 0) * (uint64_t)page_size;
        *ret_need = 2 * used + used / 5;
        *ret_free = (uint64_t)fs.f_bavail * (uint64_t)fs.f_frsize;
        return *ret_free >= *ret_need;
}

/* The copy's transaction: 0, or -errno with err (rolled back, the WAL given back its room). */
static int copy_objects(struct xp_store *store, struct xp_error *err)
{
        const char *path = store->path;
        char sql[64];
        int r;

        snprintf(sql, sizeof(sql), "PRAGMA user_version = %d", SCHEMA_VERSION);
        r = store_exec(path, store->writer, "BEGIN IMMEDIATE", err);
        if (r >= 0)
                r = store_objects_upgrade(path, store->writer, err);
        if (r >= 0)
                r = store_exec(path, store->writer, sql, err);
        if (r >= 0)
                r = store_exec(path, store->writer, "COMMIT", err);
        if (r < 0) {
                sqlite3_exec(store->writer, "ROLLBACK", NULL, NULL, NULL);
                /* a rollback leaves the WAL as large as the copy made it */
                sqlite3_exec(store->writer, "PRAGMA wal_checkpoint(TRUNCATE)", NULL, NULL, NULL);
        }
        return r;
}

/*
 * Schema 4's copy of a schema 3 objects table, in a transaction of its own that sets the version
 * to 4: a crash or a failed statement leaves the store at 3. The copy only saves space: without
 * room for it the store stays at 3, which reads and writes as it is, and the next open tries
 * again. Not at a read-only store's first write (in_service): a copy of 20 s would hold it.
 */
static int upgrade_objects(struct xp_store *store, bool in_service, struct xp_error *err)
{
        uint64_t need = 0, free_bytes = 0;
        int r;

        if (in_service)
                return 0;
        if (!room_for_copy(store, &need, &free_bytes)) {
                xp_log(LOG_WARNING,
                       "store %s: not upgraded to schema %d: its copy of the objects table needs "
                       "about %" PRIu64 " MiB free, %" PRIu64 " MiB are; it stays at %d, which "
                       "serves as before, and the next start tries again",
                       store->path,
                       SCHEMA_VERSION,
                       need >> 20,
                       free_bytes >> 20,
                       SCHEMA_READABLE);
                return 0;
        }
        r = copy_objects(store, err);
        if (r < 0 && !store_space_error(r))
                return r;
        if (r < 0) {
                xp_log(LOG_WARNING,
                       "store %s: not upgraded to schema %d: %s; it stays at %d, which serves "
                       "as before, and the next start tries again",
                       store->path,
                       SCHEMA_VERSION,
                       err && err->msg[0] ? err->msg : strerror(-r),
                       SCHEMA_READABLE);
                if (err)
                        *err = (struct xp_error){0};
                return 0;
        }
        /* the copy went through the WAL: give its pages back now, not at the server's stop; the
         * checkpointer tries again where this cannot (the upgrade is committed either way) */
        if (sqlite3_exec(store->writer, "PRAGMA wal_checkpoint(TRUNCATE)", NULL, NULL, NULL) !=
            SQLITE_OK)
                xp_log(LOG_WARNING,
                       "store %s: upgraded to schema %d; its WAL is checkpointed later: %s",
                       store->path,
                       SCHEMA_VERSION,
                       sqlite3_errmsg(store->writer));
        return 0;
}

/*
 * Creates what is missing of the schema and records the store id (the seal's), in one commit;
 * then schema 4's copy of an older objects table, in another.
 */
static int init_schema(struct xp_store *store, bool in_service, struct xp_error *err)
{
        const char *path = store->path;
        bool without_rowid = false;
        char sql[256];
        int r;

        if (schema_complete(store))
                return 0;
        r = store_exec(path, store->writer, "BEGIN IMMEDIATE", err);
        if (r < 0)
                return r;
        r = store_exec(path, store->writer, store_tables_sql, err);
        if (r >= 0)
                r = store_exec(path, store->writer, meta_rows_sql, err);
        if (r >= 0)
                r = store_checksum_upgrade(path, store->writer, err);
        if (r >= 0)
                r = store_objects_without_rowid(path, store->writer, &without_rowid, err);
        if (r >= 0) {
                snprintf(sql,
                         sizeof(sql),
                         "INSERT OR IGNORE INTO meta (key, value) VALUES ('store_id', %" PRId64
                         ");PRAGMA application_id = %d; PRAGMA user_version = %d;",
                         (int64_t)store->seal.store_id,
                         APPLICATION_ID,
                         without_rowid ? SCHEMA_READABLE : SCHEMA_VERSION);
                r = store_exec(path, store->writer, sql, err);
        }
        if (r >= 0)
                r = store_exec(path, store->writer, "COMMIT", err);
        if (r < 0) {
                sqlite3_exec(store->writer, "ROLLBACK", NULL, NULL, NULL);
                return r;
        }
        return without_rowid ? upgrade_objects(store, in_service, err) : 0;
}

/*
 * When the file system says it has no room left, whether the database can still take a commit
 * (root may write into reserved blocks): an empty one, so that a full disk is known at open.
 */
static int probe_space(struct xp_store *store, struct xp_error *err)
{
        struct statvfs fs;
        int r = store_fs(store, &fs);

        if (r == -ENOMEM)
                return r;
        if (r < 0 || fs.f_bavail > 0)
                return 0;
        r = store_exec(store->path,
                       store->writer,
                       "BEGIN IMMEDIATE; UPDATE meta SET value = value WHERE key = 'version'; "
                       "COMMIT",
                       err);
        if (r < 0)
                sqlite3_exec(store->writer, "ROLLBACK", NULL, NULL, NULL);
        return r;
}

int store_finish_open(struct xp_store *store, bool *ret_reserved, struct xp_error *err)
{
        uint64_t reserve;
        int r;

        /* The seal first: a database with a store id and no seal would be judged damaged. */
        if (store->reserved <= store->version) {
                reserve = (store->reserved > store->version ? store->reserved : store->version) +
                          RESERVE_STEP;
                r = seal_write(&store->seal, SEAL_RESERVE, reserve, 0, true, err);
                if (r < 0)
                        return r;
                store->reserved = reserve;
                *ret_reserved = true;
        }
        r = seal_write(&store->seal, SEAL_COMMIT, store->version, store->digest, true, err);
        if (r < 0)
                return r;
        /* init_pending: a read-only store's first write that finds room finishes its open */
        r = init_schema(store, store->init_pending, err);
        if (r < 0)
                return r;
        return probe_space(store, err);
}

int store_new_id(uint64_t *ret, struct xp_error *err)
{
        uint64_t id = 0;

        while (id == 0) {
                int r = xp_random_bytes(&id, sizeof(id));

                if (r < 0)
                        return xp_errorf(err, r, "store: getrandom: %s", strerror(-r));
        }
        /* SQLite keeps it as a signed 64-bit integer: either half of the range will do */
        *ret = id;
        return 0;
}

/* The errors of a file that is not ours, as they were before the seal existed. */
static int refuse(const char *path,
                  const struct seal_state *seal,
                  const struct store_facts *db,
                  struct xp_error *err)
{
        struct store_verdict v;

        if (db->not_db && !seal->written)
                return xp_errorf(err, -EBADMSG, "store %s: cannot read it: %s", path, db->problem);
        if (db->foreign)
                return xp_errorf(err,
                                 -EBADMSG,
                                 "store %s: an SQLite database of another program, not an xpool "
                                 "store",
                                 path);
        if (db->newer)
                return xp_errorf(err,
                                 -EPROTO,
                                 "store %s: written by a newer xpool (this one reads schema %d)",
                                 path,
                                 SCHEMA_VERSION);
        store_judge(seal, db, &v);
        return v.damaged ? store_damage_error(path, &v, err) : 0;
}

/* The store's files are the cluster's: 0600, whatever made them (SQLite copies state.db's mode
 * to -wal and -shm, so a private state.db keeps them private). */
static int make_private(const char *path, struct xp_error *err)
{
        static const char *const suffixes[] = {"", "-wal", "-shm"};

        for (size_t i = 0; i < XP_ELEMENTSOF(suffixes); i++) {
                _cleanup_free_ char *p = NULL;
                struct stat st;

                if (asprintf(&p, "%s%s", path, suffixes[i]) < 0)
                        return -ENOMEM;
                if (stat(p, &st) < 0 || (st.st_mode & 0077) == 0)
                        continue;
                if (chmod(p, st.st_mode & 0700) < 0 && errno != EROFS)
                        return xp_errorf(
                            err, -errno, "store %s: cannot make '%s' private: %m", path, p);
        }
        return 0;
}

/* The writer connection, on a database judged intact (or on a new one, created 0600). */
static int open_writer(struct xp_store *store, bool absent, struct xp_error *err)
{
        int fd, r;

        if (absent) {
                fd = open(store->path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
                if (fd < 0)
                        return xp_errorf(
                            err, -errno, "store %s: cannot create the database: %m", store->path);
                close(fd);
                r = store_open_db(store->path, 0, &store->writer, err);
                if (r < 0)
                        return r;
        } else {
                sqlite3_db_config(store->writer, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 0, NULL);
                r = make_private(store->path, err);
                if (r < 0)
                        return r;
        }
        r = store_checksum_register(store->path, store->writer, err);
        if (r < 0)
                return r;
        return store_db_durable(store->path, store->writer, err);
}

/*
 * A store from before row checksums is rewritten once to add them: on a full (or read-only) disk
 * it cannot be, and cannot be read without them, so it does not open even read-only.
 */
static int upgrade_needs_space(const char *path, int r, struct xp_error *err)
{
        const char *slash = strrchr(path, '/');
        int dir_len = slash ? (int)(slash - path) : 1;

        return xp_errorf(err,
                         r,
                         "store %s: the store needs free space to add row checksums (a one-time "
                         "upgrade): free some space on %.*s and start again",
                         path,
                         slash == path ? 1 : dir_len,
                         slash ? path : ".");
}

/* Checks the files, then opens the writer and makes the store's own writes (or goes read-only). */
static int open_checked(struct xp_store *store, struct xp_error *err)
{
        struct seal_state seal;
        struct store_facts db;
        bool fresh, reserved = false;
        int r;

        r = seal_open(store->path, &store->seal, &seal, err);
        if (r < 0)
                return r;
        r = store_examine(store->path, 0, false, &store->writer, &db, err);
        if (r < 0)
                return r;
        r = refuse(store->path, &seal, &db, err);
        if (r < 0)
                return r;
        fresh = db.absent || db.empty;
        r = open_writer(store, db.absent, err);
        if (r < 0)
                return r;
        store->version = db.version;
        store->digest = db.digest;
        if (db.sealed)
                store->seal.store_id = db.store_id;
        else if (seal.written)
                store->seal.store_id =
                    seal.has_commit ? seal.commit.store_id : seal.reserve.store_id;
        else if ((r = store_new_id(&store->seal.store_id, err)) < 0)
                return r;
        if (seal.has_reserve && seal.reserve.store_id == store->seal.store_id)
                store->reserved = seal.reserve.version;
        r = store_finish_open(store, &reserved, err);
        store->stats.reservations += reserved;
        /* a store still to upgrade to checksums (schema 1) cannot be read without it; one at
         * schema 3 reads as it is until its objects table is rebuilt */
        if (r < 0 && store_space_error(r) && !fresh && db.schema >= SCHEMA_READABLE) {
                /* the disk is full (or read-only), the database readable: serve reads */
                store_readonly_enter(store, r);
                store->init_pending = true;
                r = 0;
        } else if (r < 0 && store_space_error(r) && !fresh) {
                r = upgrade_needs_space(store->path, r, err);
        }
        return r;
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
        store_readers_free(store);
        store_recent_free(store);
        store_stmts_finalize(store->wstmts, _WS_MAX);
        sqlite3_close(store->writer); /* the last connection checkpoints and removes the WAL */
        seal_sync(&store->seal);
        seal_close(&store->seal, true);
        pthread_cond_destroy(&store->version_bumped);
        pthread_cond_destroy(&store->checkpoint);
        pthread_mutex_destroy(&store->lock);
        xp_histogram_done(&store->commit_seconds);
        xp_histogram_done(&store->batch_writes);
        xp_store_keys_free(store->keys);
        for (size_t i = 0; i < store->n_encrypted; i++)
                free(store->encrypted[i]);
        free(store->encrypted);
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
                /* the database file is synced now: sync the seal's last commit with it, so that
                 * after a power cut the seal is at most one checkpoint behind */
                if (rc == SQLITE_OK)
                        seal_sync(&store->seal);
                pthread_mutex_lock(&store->lock);
                store->checkpoint_wanted = false;
                if (rc == SQLITE_OK)
                        store->stats.checkpoints++;
        }
        pthread_mutex_unlock(&store->lock);
        return NULL;
}

/* The writer's statements, the checkpoint split (write.c) and the checkpointer thread. */
static int start(struct xp_store *store, struct xp_error *err)
{
        int r;

        r = store_writer_prepare(store, err);
        if (r < 0)
                return r;
        /* Checkpoints run after the batch's writers are woken, not inside its COMMIT. */
        r = store_exec(store->path, store->writer, "PRAGMA wal_autocheckpoint = 0", err);
        if (r < 0)
                return r;
        sqlite3_wal_hook(store->writer, wal_hook, store);
        /* synchronous=FULL as the writer: the checkpoint then syncs the WAL before copying it,
         * which keeps the writers' fsyncs short (with the default, p99 doubles at 32 writers) */
        r = store_open_db(store->path, 0, &store->checkpoint_db, err);
        if (r >= 0)
                r = store_db_durable(store->path, store->checkpoint_db, err);
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
        return 0;
}

/* The options' keys and encrypted kinds, copied. */
static int copy_encryption(struct xp_store *store, const struct xp_store_options *options)
{
        size_t n = 0;

        if (!options->keys || !options->encrypted_kinds || options->keys->n == 0)
                return 0;
        while (options->encrypted_kinds[n])
                n++;
        store->keys = malloc(sizeof(*store->keys));
        store->encrypted = calloc(n + 1, sizeof(char *));
        if (!store->keys || !store->encrypted)
                return -ENOMEM;
        *store->keys = *options->keys;
        for (size_t i = 0; i < n; i++) {
                store->encrypted[i] = strdup(options->encrypted_kinds[i]);
                if (!store->encrypted[i])
                        return -ENOMEM;
                store->n_encrypted++;
        }
        return 0;
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
        store->seal.fd = -1;
        /* Until the locks exist, close must not destroy them: set them up first. */
        pthread_mutex_init(&store->lock, NULL);
        xp_histogram_init(
            &store->commit_seconds, xp_histogram_latency_bounds, xp_histogram_latency_n);
        xp_histogram_init(&store->batch_writes, xp_histogram_size_bounds, xp_histogram_size_n);
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
        if (store_recent_init(store) < 0 || copy_encryption(store, options) < 0)
                return xp_errorf(err, -ENOMEM, "store %s: out of memory", options->path);

        r = open_checked(store, err);
        if (r < 0)
                return r;
        r = start(store, err);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(store);
        return 0;
}
