/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The store's insides, shared by its files (docs/store.md tells the whole story):
 *   open.c     opening (the damage check first, then the schema and the seal), read-only mode,
 *              closing, the checkpointer thread
 *   write.c    group commit: the queue, batches, versions, the seal after each commit
 *   read.c     reader connections: get, list, events, wait
 *   object.c   keys and bodies as stored
 *   compact.c  the bodies' compact JSON, written without jansson's writer
 *   seal.c     the seal file: the last committed version and the versions reserved, outside the
 *              database and its WAL
 *   check.c    what the files hold and whether they agree; xp_store_check()
 *   generation.c  per-kind write marks (xp_store_kind_generation())
 *   waiter.c   readers that wait for the writes of some kinds only (xp_store_waiter_new())
 *   writer_wait.c  where a writer sleeps until its writes are done or it is asked to lead
 *   walbuf.c   the VFS that writes a WAL's frames between two syncs in one write
 *   recover.c  xp_store_recover()
 *   sql.c      SQLite helpers
 *   checksum.c the objects rows' checksums
 *   schema.c   the tables, and the upgrade of an older store's objects table
 */

#include <jansson.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "xpool/histogram.h"
#include "xpool/store.h"
#include "xpool/storekeys.h"

/*
 * 2: objects rows carry a checksum (checksum.c); 3: an event row may read its body in objects
 * (STORE_EVENT_BODY); 4: objects is a rowid table (schema.c). An older store is upgraded at open.
 */
#define SCHEMA_VERSION 4
/* The oldest schema this code reads and writes as it is: a store at it whose open finds the disk
 * full opens read-only, the rest of its open left to the first write that finds room (write.c);
 * one with room to write but not for schema 4's copy of its objects table stays at it (open.c). */
#define SCHEMA_READABLE 3
#define APPLICATION_ID  0x78706f6c /* "xpol" */

/*
 * An event's body as its readers select it. A create's or an update's event row holds an empty
 * body while its object's row is still at that version: the body is written once, in objects,
 * and the event reads it there. The write that moves the object on (an update or a delete) first
 * copies the old body into that event row (write.c, fill_event()). Schema 3.
 */
#define STORE_EVENT_BODY                                                                           \
        "CASE WHEN events.body <> '' THEN events.body ELSE (SELECT objects.body FROM objects "     \
        "WHERE objects.kind = events.kind AND objects.namespace = events.namespace AND "           \
        "objects.name = events.name AND objects.version = events.version) END"

#define BUSY_TIMEOUT_MS  5000 /* another process holding the write lock: wait this long */
#define CHECKPOINT_PAGES 1000 /* WAL pages (4 MiB) that call for a checkpoint */
/* WAL pages past which writes wait for a checkpoint: the background one is not keeping up. */
#define CHECKPOINT_PAGES_HARD (4 * CHECKPOINT_PAGES)
/* Versions reserved by one durable write of the seal: one fdatasync per this many writes. */
#define RESERVE_STEP 10000
/* A read-only store tries writing again at most this often. */
#define READONLY_RETRY_MS 1000

#define SEAL_SUFFIX ".seal"
#define SEAL_SLOT   512 /* one record per sector, so that a torn write spoils only one */
#define SEAL_SLOTS  4   /* reservation A and B, commit A and B */
#define SEAL_SIZE   (SEAL_SLOT * SEAL_SLOTS)
#define SEAL_RECORD 64 /* the bytes of a record */

enum seal_kind {
        SEAL_RESERVE = 1, /* versions up to `version` may be handed out; written durably */
        SEAL_COMMIT = 2,  /* `version` (with `digest`) is the last commit; written after it */
};

struct seal_record {
        enum seal_kind kind;
        uint64_t store_id;
        uint64_t seq; /* grows with each record of its kind; the newest valid one counts */
        uint64_t version;
        uint64_t digest; /* SEAL_COMMIT: the store's chain digest at version */
        int64_t time;    /* seconds since the epoch, for people */
};

/* What a seal file holds. */
struct seal_state {
        bool present; /* there is a file */
        bool written; /* it holds at least one valid record */
        bool damaged; /* it holds bytes that are not a record and no valid record */
        bool has_commit, has_reserve;
        struct seal_record commit, reserve; /* the newest valid record of each kind */
};

/* An open, locked seal file. */
struct seal {
        int fd; /* -1 when closed */
        char *path;
        uint64_t store_id;
        uint64_t commit_seq, reserve_seq;
        bool created; /* made by this open and never written: removed again when the open fails */
};

/*
 * Per-kind write marks (generation.c): the leader sets a kind's to the version of its last
 * write after the commit, readers load it without the lock. Slots are filled in order and never
 * reused; a kind that finds them all taken counts in overflow, which also answers for every kind
 * that has no slot.
 */
#define KIND_GENERATION_SLOTS 32
struct kind_generation {
        char kind[XP_STORE_KEY_MAX + 1];
        _Atomic uint64_t generation;
};
struct kind_generations {
        struct kind_generation slot[KIND_GENERATION_SLOTS];
        _Atomic size_t n; /* slots whose kind is set */
        _Atomic uint64_t overflow;
};
/* Under the store's lock, after the commit of a write of kind at version. */
void store_kind_generation_bump(struct xp_store *store, const char *kind, uint64_t version);

/* Under the store's lock, after the commit of a write of kind: marks the waiters following it. */
void store_waiters_written(struct xp_store *store, const char *kind);
/* The waiters a batch's writes concern, to be signalled once its leader let go of the lock. */
#define STORE_DUE_MAX 64
struct store_due {
        struct xp_store_waiter *w[STORE_DUE_MAX];
        size_t n;
};
/*
 * Under lock, once a batch is settled: takes the waiters its writes concern into ret (signalling
 * at once those past its room), and keeps them from being freed until store_waiters_signal_due().
 * Signalled under the lock, each woke only to sleep again on it while the leader held it.
 */
void store_waiters_take_due(struct xp_store *store, struct store_due *ret);
/* Without the lock: signals the waiters store_waiters_take_due() took. */
void store_waiters_signal_due(struct xp_store *store, struct store_due *due);
/*
 * Where a writer sleeps (writer_wait.c): the number of its queued writes not yet done, and
 * WRITER_WAIT_TURN when the queue's head, its write, is asked to lead the next batch; its
 * thread's bit in the store's word of wake-ups.
 */
#define WRITER_WAIT_TURN 0x80000000u
struct writer_wait {
        atomic_uint word;
        unsigned int bit;
};
/* The store's one futex word that writers sleep on, moved on by every wake-up; calls counts. */
struct writer_wake {
        atomic_uint word;
        atomic_uint_fast64_t calls;
};
void writer_wait_init(struct writer_wait *w);
/* Under the store's lock, as one of its writes is queued. */
void writer_wait_queued(struct writer_wait *w);
/* By the leader, without the store's lock: a queued write is done (*done set first); own when
 * it is the leader's own wait. w may be gone as soon as this returns. The bit to wake (0: own). */
unsigned int writer_wait_done(struct writer_wait *w, atomic_bool *done, bool own);
/* Under the store's lock: the writer of the queue's head is to lead. The bit to wake. */
unsigned int writer_wait_turn(struct writer_wait *w);
/* Wakes the writers whose bits are in bits, with one system call (none for 0). */
void writer_wake(struct writer_wake *wake, unsigned int bits);
/* Sleeps until every queued write of w is done (true) or its writer is asked to lead (false). */
bool writer_wait(struct writer_wait *w, struct writer_wake *wake);

/* What the database file holds, as far as the store's checks go. */
struct store_facts {
        bool absent;  /* no file */
        bool empty;   /* no table: a new file, or one that lost everything */
        bool foreign; /* another program's database */
        bool newer;   /* written by a newer schema */
        bool not_db;  /* not an SQLite database at all */
        bool sealed;  /* it has a store id: a seal belongs to it */
        uint64_t store_id, version, digest;
        bool corrupt;      /* unreadable, or the integrity check found problems */
        char problem[256]; /* what the integrity check or SQLite said, when corrupt */
        uint64_t objects;  /* xp_store_check() only: rows of objects */
        uint64_t max_object_version;
        int64_t schema;            /* PRAGMA user_version */
        uint64_t bad_checksums;    /* objects and events rows that fail their checksum */
        uint64_t bad_rows_unnamed; /* of those, how many bad_rows has no room for */
        char bad_rows[XP_STORE_ROWS_MAX - 64]; /* "object NS/NAME (type KIND)", ... */
};

/* Whether the files agree: store_judge()'s finding. */
struct store_verdict {
        bool damaged;
        uint64_t lost_from, lost_to; /* acknowledged versions not in the database; 0 when unknown */
        char what[512];              /* the finding, in one sentence */
};

struct op;
struct conn;

enum write_stmt {
        WS_BEGIN,
        WS_COMMIT,
        WS_ROLLBACK,
        WS_META_VERSION,
        WS_META_SET_VERSION,
        WS_META_SET_DIGEST,
        WS_OBJECT_GET,
        WS_OBJECT_INSERT,
        WS_OBJECT_UPDATE,
        WS_OBJECT_DELETE,
        WS_EVENT_INSERT,
        WS_EVENT_FILL,
        WS_EVENTS_MIN,
        WS_EVENTS_TRIM,
        _WS_MAX,
};

struct xp_store {
        /* /metrics (xp_store_histograms()): each commit's duration and writes */
        struct xp_histogram commit_seconds, batch_writes;
        char *path;
        size_t event_history;
        /* encryption at rest (envelope.c): a copy of the keys, the kinds; NULL/0: none */
        struct xp_store_keys *keys;
        char **encrypted;
        size_t n_encrypted;
        size_t trim_slack;

        pthread_mutex_t lock;
        pthread_cond_t version_bumped;   /* a commit made the version grow (CLOCK_MONOTONIC) */
        struct xp_store_waiter *waiters; /* under lock: those of waiter.c */
        atomic_size_t n_waiters;         /* how many (changed under lock) */
        atomic_uint waiter_signallers;   /* leaders signalling waiters outside the lock */
        struct writer_wake writer_wake;  /* where writers sleep (writer_wait.c) */

        /* under lock */
        struct op *queue_head;
        struct op *queue_tail;
        bool committing;
        uint64_t version;
        int broken; /* set after a failed commit whose outcome on disk is unknown */
        struct xp_store_stats stats;
        struct kind_generations kind_generations; /* written under lock, read without */
        struct conn *idle_readers;
        size_t n_idle_readers;
        /* recent.c: the last writes, version v at recent[v % recent_cap]; lo..hi are kept */
        struct recent *recent;
        size_t recent_cap;
        uint64_t recent_lo, recent_hi;

        /*
         * Read-only mode (under lock): readonly is the -errno writes get (-ENOSPC when the disk
         * is full, -EROFS, -EDQUOT), 0 when the store takes writes. A write after
         * readonly_retry_at (CLOCK_MONOTONIC ms) tries again; init_pending says that the open's
         * own writes (schema, store id, seal) are still to do.
         */
        int readonly;
        char readonly_why[128];
        int64_t readonly_retry_at;
        bool init_pending;

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

        /* used only by the leader (committing == true), and by open before any thread */
        sqlite3 *writer;
        sqlite3_stmt *wstmts[_WS_MAX];
        int wal_pages;     /* the WAL's size after the last commit, from wal_hook() */
        struct seal seal;  /* the seal file, locked while the store is open */
        uint64_t digest;   /* the chain digest at the last commit */
        uint64_t reserved; /* versions up to this are reserved durably in the seal */
};

/* sql.c */
int store_errno(sqlite3 *db, int rc);
/* Sets err to "store PATH: WHAT: sqlite's message" and returns the matching -errno. */
int store_sqlite_fail(
    const char *path, sqlite3 *db, int rc, struct xp_error *err, const char *what);
void store_stmts_finalize(sqlite3_stmt **stmts, size_t n);
/* One statement; with expect, its first column must be that text (case-insensitively). */
int store_pragma(
    const char *path, sqlite3 *db, const char *sql, const char *expect, struct xp_error *err);
/* The first column of the first row (0 when none). */
int store_query_int(
    const char *path, sqlite3 *db, const char *sql, int64_t *ret, struct xp_error *err);
/* A connection (read-write unless flags has SQLITE_OPEN_READONLY; SQLITE_OPEN_CREATE to make the
 * file) with the busy timeout set and nothing else run, through store_wal_vfs(). */
int store_open_db(const char *path, int flags, sqlite3 **ret, struct xp_error *err);
/*
 * The name of SQLite's unix VFS with a WAL's writes between two syncs gathered into one write
 * (walbuf.c), registered at the first call; NULL (the default VFS) when it could not be.
 */
#define STORE_WAL_VFS "xpool-walbuf"
const char *store_wal_vfs(void);
/* The writes of WAL files that store_wal_vfs() passed on to the unix VFS, in the process. */
uint64_t store_wal_writes(void);
/* journal_mode=WAL and synchronous=FULL: every commit is fsync'ed before it returns. */
int store_db_durable(const char *path, sqlite3 *db, struct xp_error *err);
int store_exec(const char *path, sqlite3 *db, const char *sql, struct xp_error *err);
/* Steps a statement that returns no row, and resets it. SQLITE_DONE or the error code. */
int store_step_done(sqlite3_stmt *st);

/* object.c */
const char *store_key_ns(const char *namespace);
int store_check_key(struct xp_store *store,
                    const char *kind,
                    const char *namespace,
                    const char *name,
                    struct xp_error *err);
/*
 * Where store_text_versioned() writes resourceVersion into a body: found by a scan of the text
 * (store_text_mark_find()), or noted by the writer that wrote the text (compact.c), which saves
 * the leader a scan of every write's text while the batch holds the commit.
 */
struct store_text_mark {
        size_t at;  /* the '}' that closes metadata, or the object when whole */
        bool empty; /* that object has no member */
        bool whole; /* no metadata: one of its own goes at the object's end */
        bool found; /* (compact.c) metadata was written */
        bool bad;   /* metadata is not an object: no text with a version */
};
/* The object's text as stored: without metadata.resourceVersion. Caller frees. */
int store_serialise(struct xp_store *store,
                    json_t *object,
                    char **ret,
                    size_t *ret_len,
                    struct store_text_mark *ret_mark,
                    struct xp_error *err);
/* The same text as jansson writes it (the slow path store_serialise() falls back to). */
int store_serialise_jansson(
    struct xp_store *store, json_t *object, char **ret, size_t *ret_len, struct xp_error *err);
int store_set_resource_version(json_t *object, uint64_t version);

/* compact.c */
/*
 * object (a JSON object) as json_dumpb(JSON_COMPACT) writes it, less the member
 * drop_in_metadata (NULL: none) of its metadata, malloc'ed with a NUL: 0, -E2BIG when longer
 * than max, -ENOMEM, or -EBADMSG for what it leaves to jansson (reals, strings that are not
 * UTF-8, deep nesting).
 */
int store_json_compact(
    const json_t *object, const char *drop_in_metadata, size_t max, char **ret, size_t *ret_len);
/* As store_json_compact(), noting where resourceVersion goes in the text (*ret_mark). */
int store_json_compact_marked(const json_t *object,
                              const char *drop_in_metadata,
                              size_t max,
                              char **ret,
                              size_t *ret_len,
                              struct store_text_mark *ret_mark);
/* The shared trees' texts (xpool/sharedtree.h) this thread's writes copied: for the tests. */
size_t store_json_shared_text_copies(void);
/* The stored text as an object with metadata.resourceVersion filled in; NULL when not one. */
json_t *store_parse_body(const char *text, size_t len, uint64_t version);
int store_corrupt_body(struct xp_store *store,
                       const char *kind,
                       const char *namespace,
                       const char *name,
                       uint64_t version,
                       struct xp_error *err);

/* envelope.c */
/* Whether kind's bodies are encrypted in this store. */
bool store_encrypts(const struct xp_store *store, const char *kind);
/* Whether a stored body is an envelope (and under the primary key). */
bool store_envelope_is(const char *body, size_t len);
bool store_envelope_primary(const struct xp_store *store, const char *body, size_t len);
/* body sealed under the primary key for the object's row: *ret (caller frees). -errno, err. */
int store_envelope_seal(struct xp_store *store,
                        const char *kind,
                        const char *ns,
                        const char *name,
                        const char *body,
                        size_t len,
                        char **ret,
                        size_t *ret_len,
                        struct xp_error *err);
/*
 * A stored body opened: 1 with the plaintext in *ret (caller frees, NUL-terminated), 0 when it
 * is no envelope (use it as it is), -ENOKEY / -EKEYREJECTED / -EBADMSG with err naming the object
 * and the key.
 */
int store_envelope_open(struct xp_store *store,
                        const char *kind,
                        const char *ns,
                        const char *name,
                        const char *body,
                        size_t len,
                        char **ret,
                        size_t *ret_len,
                        struct xp_error *err);

/* read.c */
void store_readers_free(struct xp_store *store);
/* The events a scan found so far, grown as they come, up to max. */
struct store_event_list {
        struct xp_store_event *events;
        size_t n, cap, max;
        bool text; /* as text (xp_store_events_scan_text()), not objects */
};
/* Room for one more event: 0 or -ENOMEM. */
int store_event_list_grow(struct store_event_list *l);

/* recent.c: the newest writes in memory, for the event log's readers */
#define RECENT_MAX 1024 /* writes kept (at most event_history) */
struct recent {
        uint64_t version; /* 0: empty */
        int type;
        /*
         * kind, namespace, name and the object's text as written (with its resourceVersion), each
         * NUL-terminated, in one reference-counted block (a jansson string, which may hold NULs):
         * the readers' events point into it and hold a reference, nothing is copied per reader
         */
        json_t *blob;
        const char *kind, *namespace, *name, *text;
        size_t text_len;
        json_t *object; /* the object as written, shared read-only; NULL: parse text */
};
/* Frees what an entry holds (outside the store's lock: freeing a tree takes a while). */
void store_recent_clear(struct recent *e);
/* As store_recent_clear() of each of n entries, walking the trees to free together first. */
void store_recent_clear_all(struct recent *entries, size_t n);
int store_recent_init(struct xp_store *store);
void store_recent_free(struct xp_store *store);
/*
 * Under lock, in version order: the write of version; copies text (may be NULL), takes
 * object (a reference, may be NULL: readers parse text). The entry it replaces goes to *ret_old,
 * for the caller to free after the lock (store_recent_clear()).
 */
void store_recent_add(struct xp_store *store,
                      uint64_t version,
                      int type,
                      const char *kind,
                      const char *namespace,
                      const char *name,
                      const char *text,
                      size_t text_len,
                      json_t *object,
                      struct recent *ret_old);
/*
 * The object of the write of version when the ring still holds it parsed and it is the write of
 * kind/namespace/name: a new reference, shared read-only with the event log's readers; else NULL
 * (the caller parses the row's text).
 */
json_t *store_recent_object(struct xp_store *store,
                            uint64_t version,
                            const char *kind,
                            const char *namespace,
                            const char *name);
/*
 * The matching events after since from memory, when the ring reaches back to since: 1 with l
 * filled and *ret_through as xp_store_events_scan() sets it, 0 when it does not (read SQLite),
 * -ENOMEM, -EBADMSG (l holds what to free).
 */
int store_recent_scan(struct xp_store *store,
                      const char *kind,
                      const char *namespace,
                      uint64_t since,
                      bool text,
                      struct store_event_list *l,
                      uint64_t *ret_through);

/* text.c */
/* The most bytes store_text_versioned() adds to a body of len bytes (without the NUL). */
size_t store_text_versioned_max(size_t len);
/*
 * The stored body with "resourceVersion":"VERSION" as the last member of its metadata (where
 * store_set_resource_version() puts it in the parsed object), into out (size bytes, with a NUL):
 * 0 with *ret_len, -ENOBUFS when it does not fit, -EBADMSG when body is not a JSON object.
 */
int store_text_versioned(
    const char *body, size_t len, uint64_t version, char *out, size_t size, size_t *ret_len);
/* As store_text_versioned(), into a new buffer (caller frees). */
int store_text_versioned_dup(
    const char *body, size_t len, uint64_t version, char **ret, size_t *ret_len);
/* Where resourceVersion goes in body: 0, or -EBADMSG when body is not a JSON object. */
int store_text_mark_find(const char *body, size_t len, struct store_text_mark *ret);
/* As store_text_versioned_dup(), at the mark found in body before. */
int store_text_versioned_dup_marked(const char *body,
                                    size_t len,
                                    const struct store_text_mark *mark,
                                    uint64_t version,
                                    char **ret,
                                    size_t *ret_len);

/* write.c */
int store_writer_prepare(struct xp_store *store, struct xp_error *err);
/* Under lock: writes are refused with r (a full disk, ...) and tried again in a while. */
void store_readonly_enter(struct xp_store *store, int r);
/* Whether r from a write says that the disk cannot take writes now (full, read-only). */
bool store_space_error(int r);

/* open.c */
/* A new store's id: 64 random bits, never 0 (0 means "no id"). */
int store_new_id(uint64_t *ret, struct xp_error *err);
/*
 * The open's own writes (seal, schema, store id); 0, or -errno (a space error: read-only).
 * *ret_reserved is set when it reserved versions (a durable seal write).
 */
int store_finish_open(struct xp_store *store, bool *ret_reserved, struct xp_error *err);

/* seal.c */
/* path + SEAL_SUFFIX (caller frees), or NULL. */
char *seal_path(const char *db_path);
void seal_encode(const struct seal_record *rec, uint8_t out[SEAL_RECORD]);
/* 0, -ENODATA when the slot was never written (all zero), -EBADMSG when it is not a record. */
int seal_decode(const uint8_t in[SEAL_RECORD], struct seal_record *ret);
/* The state of a seal file's bytes (size may be short or 0). */
void seal_parse(const uint8_t *buf, size_t size, struct seal_state *ret);
/* Reads the seal of db_path without changing or locking anything (absent: !present). */
int seal_read(const char *db_path, struct seal_state *ret, struct xp_error *err);
/*
 * Opens (creating it, 0600 and preallocated, when missing) and locks the seal of db_path, and
 * reads it into *ret_state. -EBUSY when another process has the store open.
 */
int seal_open(const char *db_path,
              struct seal *ret,
              struct seal_state *ret_state,
              struct xp_error *err);
/* Writes a record (the next seq of its kind); with sync, fdatasync()s it before returning. */
int seal_write(struct seal *seal,
               enum seal_kind kind,
               uint64_t version,
               uint64_t digest,
               bool sync,
               struct xp_error *err);
int seal_sync(struct seal *seal);
/* Unlocks and closes; with discard, removes a file that this open created and never wrote. */
void seal_close(struct seal *seal, bool discard);

/* check.c */
/* Whether the seal and the database agree (pure). */
void store_judge(const struct seal_state *seal,
                 const struct store_facts *db,
                 struct store_verdict *ret);
/*
 * The facts of the database at path: absent when there is no file, else probed through a new
 * connection (flags as store_open_db(); it never checkpoints on close), handed back in *ret_db
 * when that is not NULL (caller closes).
 */
int store_examine(const char *path,
                  int flags,
                  bool full,
                  sqlite3 **ret_db,
                  struct store_facts *ret,
                  struct xp_error *err);
/* The report of xp_store_check() from what was found. */
void store_report_fill(const struct seal_state *seal,
                       const struct store_facts *db,
                       const struct store_verdict *v,
                       struct xp_store_report *ret);
/* The error xp_store_open() returns for a damaged store: -EUCLEAN, saying what and where. */
int store_damage_error(const char *path, const struct store_verdict *v, struct xp_error *err);
/* The highest version any file says was handed out (what a recovered store continues above). */
uint64_t store_floor(const struct seal_state *seal, const struct store_facts *db);

/*
 * The digest chain: each write's own hash (of its type, key and body) folded into the digest
 * with its version, so that the digest at version V names the whole history up to V.
 */
uint64_t store_op_hash(int type, uint64_t row_hash);
uint64_t store_digest_next(uint64_t digest, uint64_t version, uint64_t op_hash);

/* schema.c */
/* The tables of a store at SCHEMA_VERSION, each made when missing. */
extern const char store_tables_sql[];
/* Whether the objects table is WITHOUT ROWID (schemas 1-3): 0, or -errno with err. */
int store_objects_without_rowid(const char *path, sqlite3 *db, bool *ret, struct xp_error *err);
/*
 * Inside a write transaction: objects of schemas 1-3 (WITHOUT ROWID, with its checksum column)
 * rebuilt as schema 4's rowid table, every row as it was; nothing when it is one already.
 */
int store_objects_upgrade(const char *path, sqlite3 *db, struct xp_error *err);

/* checksum.c */
/* The hash of a row's key and body (the first 8 bytes of their SHA-256): 0, or -ENOMEM. */
int store_row_hash(const char *kind,
                   const char *ns,
                   const char *name,
                   const char *body,
                   size_t len,
                   uint64_t *ret);
/* The checksum an objects row carries: its row hash and its version. */
int64_t store_row_checksum(uint64_t row_hash, uint64_t version);
/* What a row's checksum covers: an event row also folds its type in (as store_op_hash() does for
 * the digest chain); an objects row has event_type STORE_NOT_AN_EVENT. */
#define STORE_NOT_AN_EVENT (-1)
struct store_checked_row {
        int event_type;
        const char *kind, *ns, *name;
        uint64_t version;
        const char *body;
        size_t len;
};
/* The checksum the row carries: 0, or -ENOMEM (the hash failed). */
int store_checksum_of(const struct store_checked_row *row, int64_t *ret);
/* Whether the row at column first (kind, namespace, name, version, body, checksum) is intact. */
bool store_row_intact(sqlite3_stmt *st, int first);
/* The same for an event row at column first (version, type, kind, namespace, name, body,
 * checksum). */
bool store_event_intact(sqlite3_stmt *st, int first);
/* -EUCLEAN: "store PATH is damaged: event V of NS/NAME (type KIND) fails its checksum ...". */
int store_event_damaged(const char *path,
                        const char *kind,
                        const char *ns,
                        const char *name,
                        uint64_t version,
                        struct xp_error *err);
/* -EUCLEAN: "store PATH is damaged: object NS/NAME (type KIND, ...) fails its checksum ...". */
int store_row_damaged(const char *path,
                      const char *kind,
                      const char *ns,
                      const char *name,
                      uint64_t version,
                      struct xp_error *err);
/* Every objects and events row checked: the failures counted and named in f. An SQLite code. */
int store_scan_checksums(sqlite3 *db, struct store_facts *f);
/* xpool_checksum(kind, namespace, name, version, body) and xpool_event_checksum(type, kind,
 * namespace, name, version, body) on db (the upgrade and re-encryption). */
int store_checksum_register(const char *path, sqlite3 *db, struct xp_error *err);
/* Inside a write transaction: adds and fills the checksum column of a store from before it. */
int store_checksum_upgrade(const char *path, sqlite3 *db, struct xp_error *err);
