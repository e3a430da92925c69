/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The writer's VFS (STORE_WAL_VFS): SQLite's own unix VFS, but the WAL's writes between two
 * syncs gathered into one write. SQLite writes each WAL frame as two writes, its 24-byte header
 * and its page, one after the other: a commit of 15 pages was 30 pwrite() calls, then the
 * fdatasync(). Here the frames go into a buffer while they follow one another, and the buffer
 * is written, with one call through the unix VFS's own write (its retries and its errors: a full
 * disk is SQLITE_FULL as before), before anything that must see them: the sync (so that every
 * byte is on disk before a commit is acknowledged, as before), a read, a truncate, the file's
 * size, a file control, the close, and before the connection shows its frames to others.
 *
 * Other connections learn of frames from the wal-index (the -shm), never from the WAL's size,
 * and SQLite publishes a commit there (walIndexWriteHdr) through the database file's
 * xShmBarrier; it gives up the WAL's write lock through the database file's xShmLock. Only
 * with synchronous=FULL and no sector padding does a sync of the WAL come before those; with
 * NORMAL or OFF (no sync at a commit) or without SQLITE_IOCAP_POWERSAFE_OVERWRITE (padding
 * frames written after the sync) the frames would still be in the buffer. So each WAL's
 * handle is linked to its database file's handle (the same connection's: the same thread), and
 * the database file's barrier and every unlock of the -shm write out the WAL's buffer first.
 * Under FULL the sync has already written it and they find nothing to write: one write per
 * commit. Durability is unchanged: a write was never durable before the sync that follows it.
 * Only the WAL is buffered; the database file and every other file go straight through.
 */
#include <stdlib.h>
#include <string.h>

#include "store_internal.h"

/* Past this much gathered, it is written out first: the unix VFS writes at most 128 KiB - 1 in
 * one call (it masks the length to 17 bits), and takes a shorter write for a full disk. */
#define WALBUF_MAX 0x1ffff

struct walbuf_file {
        sqlite3_file base;
        sqlite3_file *real; /* the unix VFS's file, allocated right after this struct */
        bool wal;
        /* a WAL's: the error of a write-out that no call could return (see shm_flush_wal) */
        int poisoned;
        /* a WAL's: its database file's handle; a database file's: its WAL's handle, or NULL */
        struct walbuf_file *peer;
        char *buf;
        size_t len, cap;
        sqlite3_int64 start; /* the file offset of buf[0] */
};

static sqlite3_vfs *unix_vfs;
static atomic_uint_fast64_t wal_writes; /* writes of WALs passed to the unix VFS */

static struct walbuf_file *of(sqlite3_file *f)
{
        return (struct walbuf_file *)f;
}

/* Writes out what was gathered: SQLITE_OK, or the unix VFS's error for it. */
static int flush(struct walbuf_file *w)
{
        int rc;

        if (!w->len)
                return SQLITE_OK;
        atomic_fetch_add(&wal_writes, 1);
        rc = w->real->pMethods->xWrite(w->real, w->buf, (int)w->len, w->start);
        w->len = 0;
        return rc;
}

/* Writes out the WAL's buffer of the database file db before other connections may see its
 * frames. A barrier and an unlock cannot fail (SQLite ignores their result), so an error is kept
 * on the WAL's handle and its every write and sync returns it from then on: frames the wal-index
 * may already name are not in the file, so the connection writes nothing more (only without
 * synchronous=FULL: under FULL the commit's sync wrote them and returned any error). */
static void shm_flush_wal(struct walbuf_file *db)
{
        struct walbuf_file *wal = db->peer;
        int rc;

        if (!wal || !wal->len)
                return;
        rc = flush(wal);
        if (rc != SQLITE_OK && wal->poisoned == SQLITE_OK)
                wal->poisoned = rc;
}

static int wb_close(sqlite3_file *f)
{
        struct walbuf_file *w = of(f);
        int rc = flush(w);

        if (w->peer)
                w->peer->peer = NULL;
        w->peer = NULL;
        int rc_close = w->real->pMethods->xClose(w->real);

        free(w->buf);
        w->buf = NULL;
        return rc != SQLITE_OK ? rc : rc_close;
}

static int wb_read(sqlite3_file *f, void *data, int n, sqlite3_int64 off)
{
        struct walbuf_file *w = of(f);
        int rc = flush(w);

        return rc != SQLITE_OK ? rc : w->real->pMethods->xRead(w->real, data, n, off);
}

/* Adds a write to the buffer; false when it cannot (not right after it, too big, no memory). */
static bool gather(struct walbuf_file *w, const void *data, int n, sqlite3_int64 off)
{
        size_t need = w->len + (size_t)n;

        if (w->len && off != w->start + (sqlite3_int64)w->len)
                return false;
        if (need > WALBUF_MAX)
                return false;
        if (need > w->cap) {
                size_t cap = w->cap ? w->cap : 64 * 1024;
                char *buf;

                while (cap < need)
                        cap *= 2;
                buf = realloc(w->buf, cap);
                if (!buf)
                        return false;
                w->buf = buf;
                w->cap = cap;
        }
        if (!w->len)
                w->start = off;
        memcpy(w->buf + w->len, data, (size_t)n);
        w->len = need;
        return true;
}

static int wb_write(sqlite3_file *f, const void *data, int n, sqlite3_int64 off)
{
        struct walbuf_file *w = of(f);
        int rc;

        if (w->poisoned != SQLITE_OK)
                return w->poisoned;
        if (w->wal && n > 0 && gather(w, data, n, off))
                return SQLITE_OK;
        rc = flush(w);
        if (rc == SQLITE_OK && w->wal && n > 0 && gather(w, data, n, off))
                return SQLITE_OK;
        if (rc == SQLITE_OK && w->wal)
                atomic_fetch_add(&wal_writes, 1);
        return rc != SQLITE_OK ? rc : w->real->pMethods->xWrite(w->real, data, n, off);
}

static int wb_truncate(sqlite3_file *f, sqlite3_int64 size)
{
        struct walbuf_file *w = of(f);
        int rc = flush(w);

        return rc != SQLITE_OK ? rc : w->real->pMethods->xTruncate(w->real, size);
}

static int wb_sync(sqlite3_file *f, int flags)
{
        struct walbuf_file *w = of(f);
        int rc = w->poisoned != SQLITE_OK ? w->poisoned : flush(w);

        return rc != SQLITE_OK ? rc : w->real->pMethods->xSync(w->real, flags);
}

static int wb_file_size(sqlite3_file *f, sqlite3_int64 *ret)
{
        struct walbuf_file *w = of(f);
        int rc = flush(w);

        return rc != SQLITE_OK ? rc : w->real->pMethods->xFileSize(w->real, ret);
}

static int wb_lock(sqlite3_file *f, int level)
{
        return of(f)->real->pMethods->xLock(of(f)->real, level);
}

static int wb_unlock(sqlite3_file *f, int level)
{
        return of(f)->real->pMethods->xUnlock(of(f)->real, level);
}

static int wb_check_reserved(sqlite3_file *f, int *ret)
{
        return of(f)->real->pMethods->xCheckReservedLock(of(f)->real, ret);
}

static int wb_file_control(sqlite3_file *f, int op, void *arg)
{
        struct walbuf_file *w = of(f);
        int rc = flush(w);

        return rc != SQLITE_OK ? rc : w->real->pMethods->xFileControl(w->real, op, arg);
}

static int wb_sector_size(sqlite3_file *f)
{
        return of(f)->real->pMethods->xSectorSize(of(f)->real);
}

static int wb_device_characteristics(sqlite3_file *f)
{
        return of(f)->real->pMethods->xDeviceCharacteristics(of(f)->real);
}

static int wb_shm_map(sqlite3_file *f, int region, int size, int extend, void volatile **ret)
{
        return of(f)->real->pMethods->xShmMap(of(f)->real, region, size, extend, ret);
}

static int wb_shm_lock(sqlite3_file *f, int offset, int n, int flags)
{
        /* the write lock's release: a rolled-back transaction's spilled frames too must be in the
         * file before the next writer writes its own over them */
        if (flags & SQLITE_SHM_UNLOCK)
                shm_flush_wal(of(f));
        return of(f)->real->pMethods->xShmLock(of(f)->real, offset, n, flags);
}

static void wb_shm_barrier(sqlite3_file *f)
{
        shm_flush_wal(of(f));
        of(f)->real->pMethods->xShmBarrier(of(f)->real);
}

static int wb_shm_unmap(sqlite3_file *f, int delete)
{
        return of(f)->real->pMethods->xShmUnmap(of(f)->real, delete);
}

static int wb_fetch(sqlite3_file *f, sqlite3_int64 off, int n, void **ret)
{
        return of(f)->real->pMethods->xFetch(of(f)->real, off, n, ret);
}

static int wb_unfetch(sqlite3_file *f, sqlite3_int64 off, void *p)
{
        return of(f)->real->pMethods->xUnfetch(of(f)->real, off, p);
}

static const sqlite3_io_methods walbuf_methods = {
    .iVersion = 3,
    .xClose = wb_close,
    .xRead = wb_read,
    .xWrite = wb_write,
    .xTruncate = wb_truncate,
    .xSync = wb_sync,
    .xFileSize = wb_file_size,
    .xLock = wb_lock,
    .xUnlock = wb_unlock,
    .xCheckReservedLock = wb_check_reserved,
    .xFileControl = wb_file_control,
    .xSectorSize = wb_sector_size,
    .xDeviceCharacteristics = wb_device_characteristics,
    .xShmMap = wb_shm_map,
    .xShmLock = wb_shm_lock,
    .xShmBarrier = wb_shm_barrier,
    .xShmUnmap = wb_shm_unmap,
    .xFetch = wb_fetch,
    .xUnfetch = wb_unfetch,
};

/* Links a WAL's handle and its database file's: the pager opens the database file first and
 * closes it last, but each side unlinks itself at its close all the same. */
static void link_database_file(struct walbuf_file *wal, sqlite3_filename name)
{
        sqlite3_file *db_file = sqlite3_database_file_object(name);
        struct walbuf_file *db;

        if (!db_file || db_file->pMethods != &walbuf_methods)
                return;
        db = of(db_file);
        if (db->peer)
                db->peer->peer = NULL;
        db->peer = wal;
        wal->peer = db;
}

static int
wb_open(sqlite3_vfs *vfs, sqlite3_filename name, sqlite3_file *f, int flags, int *ret_flags)
{
        struct walbuf_file *w = of(f);
        int rc;

        (void)vfs;
        *w = (struct walbuf_file){.real = (sqlite3_file *)(w + 1),
                                  .wal = (flags & SQLITE_OPEN_WAL) != 0};
        rc = unix_vfs->xOpen(unix_vfs, name, w->real, flags, ret_flags);
        /* SQLite closes a file whose open failed only when pMethods is set */
        if (rc == SQLITE_OK || w->real->pMethods)
                w->base.pMethods = &walbuf_methods;
        if (rc == SQLITE_OK && w->wal)
                link_database_file(w, name);
        return rc;
}

static sqlite3_vfs walbuf_vfs;

static void walbuf_register(void)
{
        unix_vfs = sqlite3_vfs_find(NULL);
        if (!unix_vfs)
                return;
        walbuf_vfs = *unix_vfs;
        walbuf_vfs.szOsFile = (int)sizeof(struct walbuf_file) + unix_vfs->szOsFile;
        walbuf_vfs.zName = STORE_WAL_VFS;
        walbuf_vfs.pNext = NULL;
        walbuf_vfs.xOpen = wb_open;
        (void)sqlite3_vfs_register(&walbuf_vfs, 0);
}

const char *store_wal_vfs(void)
{
        static pthread_once_t once = PTHREAD_ONCE_INIT;

        pthread_once(&once, walbuf_register);
        return sqlite3_vfs_find(STORE_WAL_VFS) ? STORE_WAL_VFS : NULL;
}

uint64_t store_wal_writes(void)
{
        return atomic_load(&wal_writes);
}
