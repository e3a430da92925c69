/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The durable object store behind the API server: Kubernetes-style objects (JSON bodies) keyed by
 * kind, namespace and name, in SQLite with write-ahead logging. An acknowledged write is on disk
 * (fsync'ed) before the call returns, and survives kill -9 of the process. Concurrent writers
 * are group-committed: writes that arrive while a commit is in flight share the next
 * transaction and its one fsync.
 *
 * Every write gets the next resourceVersion, a single counter for the whole store that only
 * grows, across restarts too. Each write also appends an event (ADDED, MODIFIED, DELETED with the
 * object as written) to a log kept for the last `event_history` writes, from which watches
 * resume; asking for events older than the log holds is -EXPIRED (the API's 410 Gone).
 *
 * Thread-safe: any number of threads may call any function on one store, except that
 * xp_store_close() must not run concurrently with any other call on the same store. One process
 * opens a store at a time (the server owns its data directory).
 *
 * What is where (docs/store.md has the full story): table objects(kind, namespace, name, version,
 * body) holds the current state, table events(version, type, kind, namespace, name, body) the
 * recent history, table meta the version counter. Bodies are stored without
 * metadata.resourceVersion; the store fills it in from the version column on every read.
 */

#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "xpool/error.h"

/*
 * The error of a watch that asks for history the store no longer keeps (the API's 410 Gone):
 * functions return -XP_STORE_EXPIRED. ("-EXPIRED" in the text below.)
 */
#define XP_STORE_EXPIRED EKEYEXPIRED

/* Limits on what one write may carry: longer keys are -EINVAL, larger bodies -E2BIG. */
#define XP_STORE_KEY_MAX  253               /* kind, namespace and name, each, in bytes */
#define XP_STORE_ROWS_MAX 2048              /* xp_store_report.bad_rows: the damaged rows named */
#define XP_STORE_BODY_MAX (3 * 1024 * 1024) /* the serialised object, in bytes */

struct xp_store;
struct xp_store_keys;

struct xp_store_options {
        const char *path;     /* the database file; its directory must exist */
        size_t event_history; /* events kept for watch resumption; 0 means 10000 */
        /*
         * Encryption at rest (xpool/storekeys.h): the bodies of these kinds (NULL-terminated, as
         * stored: "secrets") are sealed under keys' primary key in every row written, and opened
         * with the key their prefix names when read. Both NULL: nothing is encrypted. The store
         * keeps a copy of keys. A body that does not open is an error naming the object and the
         * key (-ENOKEY: the key file lacks it; -EKEYREJECTED: another key of that name).
         */
        const struct xp_store_keys *keys;
        const char *const *encrypted_kinds;
};

enum xp_store_event_type {
        XP_STORE_ADDED = 1,
        XP_STORE_MODIFIED,
        XP_STORE_DELETED,
};

struct xp_store_event {
        enum xp_store_event_type type;
        uint64_t resource_version;
        char *kind;
        char *namespace; /* "" for cluster-scoped kinds */
        char *name;
        /*
         * A reference to the object as written (for DELETED, its last state). It may be shared
         * with the store's other readers: read it, never change it (json_deep_copy() first).
         * NULL from xp_store_events_scan_text().
         */
        json_t *object;
        /* xp_store_events_scan_text(): the object as compact JSON text (UTF-8); from
         * xp_store_events_scan() too when the store had it at hand (a recent write), else NULL:
         * a reader that passes the object on unchanged sends it without encoding it again */
        char *text;
        size_t text_len;
        /* what kind, namespace, name and text point into when not allocated each (the store's
         * own, released by xp_store_events_free(): read the strings, never free or change them) */
        json_t *hold;
};

/*
 * Opens (creating when absent) the store. -errno with err naming the file and saying what went
 * wrong: -ENOENT when its directory is missing, -EACCES, -EBADMSG when the file is not an xpool
 * store, -EPROTO when it was written by a newer schema, -EBUSY when another process has it open.
 *
 * Damage is never silent: the store keeps its last committed version and a digest of its history
 * in a seal file beside the database (PATH.seal), outside the WAL, and checks the database
 * (PRAGMA quick_check) and the seal against each other before anything is written. When they
 * disagree (a zero-length or corrupt database, a WAL cut short, a seal missing) it is -EUCLEAN,
 * err saying what is wrong and which acknowledged versions are lost, and nothing was changed:
 * xp_store_check() reports, xp_store_recover() starts over from what is intact.
 *
 * All files are created 0600 (looser existing ones are made 0600). When the disk cannot take
 * the open's own writes (full: -ENOSPC, -EDQUOT; a database file SQLite cannot write: -EROFS)
 * but the database can be read, the store opens read-only (xp_store_readonly()). Caller frees
 * with xp_store_close().
 */
int xp_store_open(const struct xp_store_options *options,
                  struct xp_store **ret,
                  struct xp_error *err);
/* Closes the store; NULL is fine. No call on the store may be in progress. */
void xp_store_close(struct xp_store *store);

/*
 * Creates an object. namespace is "" for cluster-scoped kinds. The store sets
 * metadata.resourceVersion in object (a decimal string, as Kubernetes writes it) before storing
 * it, and returns the new version. -EEXIST when the key exists. object is borrowed and modified
 * (only on success). -EINVAL when object is not a JSON object (or its metadata is not one) or a
 * key is empty or longer than XP_STORE_KEY_MAX; -E2BIG for a body over XP_STORE_BODY_MAX; -EIO,
 * -ENOSPC, ... when the database fails, after which nothing was written.
 */
int xp_store_create(struct xp_store *store,
                    const char *kind,
                    const char *namespace,
                    const char *name,
                    json_t *object,
                    uint64_t *ret_version,
                    struct xp_error *err);

/*
 * Replaces an object. expected_version 0 writes unconditionally; otherwise the stored version
 * must equal it, else -ESTALE (the API's 409 Conflict). -ENOENT when absent. Sets
 * metadata.resourceVersion in object on success, as create does.
 */
int xp_store_update(struct xp_store *store,
                    const char *kind,
                    const char *namespace,
                    const char *name,
                    uint64_t expected_version,
                    json_t *object,
                    uint64_t *ret_version,
                    struct xp_error *err);

/* What xp_store_create_text() and xp_store_update_text() hand back. */
struct xp_store_written {
        bool want_text; /* in: fill text */
        /*
         * in: the caller will not change the object after the write (and it has no
         * metadata.resourceVersion): the store keeps a reference for the readers of its event log
         * (xp_store_events_scan()), who would each parse the text again otherwise.
         */
        bool share;
        uint64_t version; /* the write's resourceVersion */
        /*
         * The object as written: compact JSON (UTF-8, not escaped to ASCII) with
         * metadata.resourceVersion as its metadata's last member, as a read gives it; the text
         * the store serialised, so a reply need not encode the object again. Caller frees; NULL
         * when not asked for, or when out of memory (the write is done all the same).
         */
        char *text;
        size_t text_len;
};

/* As xp_store_create(), handing back the version and (want_text) the text written. */
int xp_store_create_text(struct xp_store *store,
                         const char *kind,
                         const char *namespace,
                         const char *name,
                         json_t *object,
                         struct xp_store_written *ret,
                         struct xp_error *err);

/* As xp_store_update(), handing back the version and (want_text) the text written. */
int xp_store_update_text(struct xp_store *store,
                         const char *kind,
                         const char *namespace,
                         const char *name,
                         uint64_t expected_version,
                         json_t *object,
                         struct xp_store_written *ret,
                         struct xp_error *err);

/* One write of a group (xp_store_write_group()): a create or an update. */
struct xp_store_group_write {
        bool update; /* false: a create */
        const char *kind;
        const char *namespace;
        const char *name;
        uint64_t expected_version; /* an update's precondition, as xp_store_update()'s */
        json_t *object;            /* gets metadata.resourceVersion once written */
        /* written only if the write before it in the group is (an Event about a binding):
         * else result is -ECANCELED */
        bool after_previous;
        /* the writer will not change object after the write: the event log's readers share it
         * (xp_store_written.share) instead of each parsing the text again; a write refused
         * leaves it without metadata.resourceVersion */
        bool share;

        int result; /* 0 when written, else -errno with err, as the single write would */
        uint64_t version;
        struct xp_error err;
};

/*
 * Writes n creates and updates queued together, in their order: they share a transaction and its
 * fsync (several, when there are more than one commit takes), and each is durable before the
 * call returns, or refused with its own result (a stale update fails alone). Returns the number
 * written, or -ENOMEM when none was tried. For writers that have many writes at once (the
 * scheduler's bindings and their Events): one wait for the disk instead of one per write.
 */
int xp_store_write_group(struct xp_store *store, struct xp_store_group_write *w, size_t n);

/*
 * Deletes; expected_version as for update. *ret_last (may be NULL) receives the last state (a new
 * reference; its metadata.resourceVersion is the deletion's version, as in the DELETED event).
 */
int xp_store_delete(struct xp_store *store,
                    const char *kind,
                    const char *namespace,
                    const char *name,
                    uint64_t expected_version,
                    json_t **ret_last,
                    uint64_t *ret_version,
                    struct xp_error *err);

/* The object (a new reference) and its version. -ENOENT when absent. */
int xp_store_get(struct xp_store *store,
                 const char *kind,
                 const char *namespace,
                 const char *name,
                 json_t **ret_object,
                 uint64_t *ret_version,
                 struct xp_error *err);

/*
 * As xp_store_get(), but the object may be the one the store keeps for the readers of its event
 * log (a recent write's), shared with them: read-only, the caller never changes it (nor a member
 * it hands on). It spares a parse of the text, for a reader that only looks (a node's status
 * write reads the pod it replaces).
 */
int xp_store_get_shared(struct xp_store *store,
                        const char *kind,
                        const char *namespace,
                        const char *name,
                        json_t **ret_object,
                        uint64_t *ret_version,
                        struct xp_error *err);

/*
 * All objects of a kind (in one namespace, or all when namespace is NULL), ordered by namespace
 * then name, as a new JSON array, with the store's version at the time of the read (a
 * consistent snapshot: the version to start a watch from).
 */
int xp_store_list(struct xp_store *store,
                  const char *kind,
                  const char *namespace,
                  json_t **ret_items,
                  uint64_t *ret_version,
                  struct xp_error *err);

/* Told of an object a list leaves out because it cannot be decrypted (why: the store's message,
 * naming the object and the key). */
struct xp_store_skip {
        void (*fn)(const char *namespace, const char *name, const char *why, void *userdata);
        void *userdata;
};

/*
 * As xp_store_list(), but an encrypted object that the key file cannot open (its key lost or
 * replaced, its body damaged) is left out and handed to skip instead of failing the list: for
 * the controllers, which must keep serving everything else (docs/security.md). skip NULL: as
 * xp_store_list().
 */
int xp_store_list_readable(struct xp_store *store,
                           const char *kind,
                           const char *namespace,
                           const struct xp_store_skip *skip,
                           json_t **ret_items,
                           uint64_t *ret_version,
                           struct xp_error *err);

/*
 * What xp_store_list_text() hands over per object: its namespace and name, and its text (compact
 * JSON, UTF-8, with metadata.resourceVersion, as xp_store_list() would give it parsed), all
 * borrowed until it returns. A negative return stops the list and is returned (set err through
 * userdata).
 */
typedef int (*xp_store_text_fn)(
    const char *namespace, const char *name, const char *text, size_t len, void *userdata);

/*
 * Where an object's metadata is in its text as the store hands it out (xp_store_list_text(),
 * xp_store_events_scan_text()): 0 with the span of the JSON object (from its '{' to its '}'),
 * -ENOENT when it has none, -EBADMSG when text is not a JSON object. For a reader that needs
 * only the metadata (labels) and need not parse the rest.
 */
int xp_store_text_metadata(const char *text, size_t len, size_t *ret_start, size_t *ret_len);

/*
 * Where metadata.labels is in an object's text, as xp_store_text_metadata(): 0 with the span of
 * its value, -ENOENT when the object has no labels (or no metadata), -EBADMSG when the text is not
 * a JSON object. A label selector then parses the labels alone, not metadata's managedFields.
 */
int xp_store_text_labels(const char *text, size_t len, size_t *ret_start, size_t *ret_len);

/*
 * As xp_store_list(), handing each object to fn as text instead of building an array: for a
 * reader that passes the objects on (a list answer) without the tree of every object in memory.
 */
int xp_store_list_text(struct xp_store *store,
                       const char *kind,
                       const char *namespace,
                       xp_store_text_fn fn,
                       void *userdata,
                       uint64_t *ret_version,
                       struct xp_error *err);

/*
 * A list read in steps from one snapshot (xp_store_list_text() in parts), for a reader that sends
 * the objects on as it reads them: open starts a read transaction (*ret_version the store's version
 * in it), each next hands up to max objects to fn in xp_store_list_text()'s order and returns 1
 * while objects may remain, 0 once all were read (and the read ended), or fn's or a read's
 * negative errno. close ends it at any point (NULL is fine). The snapshot stays the same however
 * long the reader takes; while it is open, SQLite cannot checkpoint its log past it, so a reader
 * should not hold one open without reason.
 */
struct xp_store_cursor;
int xp_store_list_open(struct xp_store *store,
                       const char *kind,
                       const char *namespace,
                       struct xp_store_cursor **ret,
                       uint64_t *ret_version,
                       struct xp_error *err);
int xp_store_list_next(struct xp_store_cursor *cursor,
                       size_t max,
                       xp_store_text_fn fn,
                       void *userdata,
                       struct xp_error *err);
void xp_store_list_close(struct xp_store_cursor *cursor);

/*
 * Up to max events of a kind (all namespaces when namespace is NULL) with a version greater than
 * since, in version order. -EXPIRED when events after since are no longer kept. Free with
 * xp_store_events_free().
 *
 * The boundary: the log keeps every event from version `oldest` to the newest. The events after
 * since are complete when since + 1 >= oldest, i.e. since >= oldest - 1; a smaller since is
 * -EXPIRED, whatever kind it asks for. A store with no event kept (nothing written yet) expires
 * nothing. A since at or past the newest version gives 0 events. max must be at least 1 (else
 * -EINVAL): it bounds the memory of one call whatever the backlog.
 */
int xp_store_events_since(struct xp_store *store,
                          const char *kind,
                          const char *namespace,
                          uint64_t since,
                          size_t max,
                          struct xp_store_event **ret_events,
                          size_t *ret_n,
                          struct xp_error *err);
void xp_store_events_free(struct xp_store_event *events, size_t n);

/*
 * As xp_store_events_since(), and *ret_through receives the version up to which the log was
 * read: every matching event with since < version <= *ret_through was returned. It is the version
 * of the last event returned when max events came back, else the store's version at the read. A
 * watcher resumes from *ret_through rather than from its last event, so that a stream of writes
 * to other kinds or namespaces does not age its position out of the log.
 */
int xp_store_events_scan(struct xp_store *store,
                         const char *kind,
                         const char *namespace,
                         uint64_t since,
                         size_t max,
                         struct xp_store_event **ret_events,
                         size_t *ret_n,
                         uint64_t *ret_through,
                         struct xp_error *err);

/*
 * A reader's array of events kept from one scan to the next (zero it to start), so that a reader
 * that scans on every commit (a controller's informer) allocates nothing under the store's lock:
 * the array grows to max once, before the lock is taken.
 */
struct xp_store_event_buffer {
        struct xp_store_event *events;
        size_t n;   /* the events of the last scan */
        size_t cap; /* room in events */
};

/*
 * As xp_store_events_scan(), into buf->events[0 .. buf->n): what the last scan left in buf is
 * released first. On an error buf holds no event.
 */
int xp_store_events_scan_into(struct xp_store *store,
                              const char *kind,
                              const char *namespace,
                              uint64_t since,
                              size_t max,
                              struct xp_store_event_buffer *buf,
                              uint64_t *ret_through,
                              struct xp_error *err);
/* Releases the events of buf, keeping its array for the next scan. */
void xp_store_event_buffer_clear(struct xp_store_event_buffer *buf);
/* Releases the events and the array; buf is zeroed. */
void xp_store_event_buffer_free(struct xp_store_event_buffer *buf);

/*
 * As xp_store_events_scan(), with each event's object as text (event.text: compact JSON with
 * metadata.resourceVersion, as the store wrote it) instead of parsed, for a reader that only
 * passes it on.
 */
int xp_store_events_scan_text(struct xp_store *store,
                              const char *kind,
                              const char *namespace,
                              uint64_t since,
                              size_t max,
                              struct xp_store_event **ret_events,
                              size_t *ret_n,
                              uint64_t *ret_through,
                              struct xp_error *err);

/*
 * The newest event of one object at or before version that the log still holds (what the object
 * was at that version, for a watch that resumes with a selector): 1 with *ret_type and
 * *ret_object (a new reference; may be NULL), 0 when the log holds none.
 */
int xp_store_event_before(struct xp_store *store,
                          const char *kind,
                          const char *namespace,
                          const char *name,
                          uint64_t version,
                          enum xp_store_event_type *ret_type,
                          json_t **ret_object,
                          struct xp_error *err);

/* The latest version written. */
uint64_t xp_store_version(struct xp_store *store);

/*
 * A mark that changes after every committed write of kind (create, update or delete, in any
 * namespace), set once the write is visible to reads: what a reader read of kind after seeing
 * mark m is still current while the mark is m. Costs no query and no lock (every create asks).
 */
uint64_t xp_store_kind_generation(struct xp_store *store, const char *kind);

/*
 * Rewrites every row (objects and the event log) of the encrypted kinds that is not under the
 * primary key (an older key, or plaintext from before encryption) under the primary, in one
 * transaction: versions and the history's digest do not change. *ret_n (may be NULL): rows
 * rewritten. A row that does not open fails the whole rewrite (err names it); nothing changed.
 */
int xp_store_reencrypt(struct xp_store *store, uint64_t *ret_n, struct xp_error *err);

/*
 * Blocks until a write newer than version happens or timeout_ms passes (-1: no limit). Returns 1
 * when there is something newer, 0 on timeout.
 */
int xp_store_wait(struct xp_store *store, uint64_t version, int timeout_ms);

/*
 * A reader that waits for the writes of some kinds only (a controller's informer, following
 * pods and nodes, sleeps through the Events and Leases written meanwhile: with a dozen
 * controllers, each write would otherwise wake them all). kinds (n of them) are borrowed until
 * xp_store_waiter_free(), which must come before the store closes. -ENOMEM.
 */
struct xp_store_waiter;
int xp_store_waiter_new(struct xp_store *store,
                        const char *const *kinds,
                        size_t n,
                        struct xp_store_waiter **ret);
/*
 * Blocks until a write of kinds[i] newer than since[i] happens (returns at once when one already
 * has), xp_store_waiter_wake() is called (or was, since the last wait), or timeout_ms passes (-1:
 * no limit). Returns 1 for news, 0 on timeout. One thread waits on a waiter at a time. Takes no
 * lock of the store's (the kinds' write marks tell the news): take it only to read the rows.
 */
int xp_store_waiter_wait(struct xp_store_waiter *w, const uint64_t *since, int timeout_ms);
/* Ends the waiter's wait, or the next one at once: news of another kind (any thread). */
void xp_store_waiter_wake(struct xp_store_waiter *w);
/* NULL is fine. */
void xp_store_waiter_free(struct xp_store_waiter *w);
/* How many waiters the store has now (a reader that batches its reads when many wait). */
size_t xp_store_waiters(struct xp_store *store);

/* Counters since open, for tests, benchmarks and /metrics. */
struct xp_store_stats {
        uint64_t writes;         /* writes acknowledged: each took one version */
        uint64_t rejected;       /* writes refused without effect: -EEXIST, -ENOENT, -ESTALE, ... */
        uint64_t commits;        /* transactions committed: one WAL fsync each (synchronous=FULL) */
        uint64_t max_batch;      /* the most writes one commit carried */
        uint64_t trims;          /* times the event log was cut back to event_history */
        uint64_t checkpoints;    /* WAL checkpoints into the database file */
        uint64_t reservations;   /* durable seal writes that reserved versions ahead */
        uint64_t writer_wakeups; /* system calls that woke writers: one per batch at most */
};

void xp_store_stats(struct xp_store *store, struct xp_store_stats *ret);

struct xp_histogram_snapshot;
/* Each commit's duration (seconds, from BEGIN to the seal) and writes, for /metrics. */
void xp_store_histograms(struct xp_store *store,
                         struct xp_histogram_snapshot *ret_commit_seconds,
                         struct xp_histogram_snapshot *ret_batch_writes);

/*
 * Read-only mode: after the disk filled up (at open, or under a commit), writes fail at once
 * with -ENOSPC (-EROFS, -EDQUOT) and a message saying so ("store PATH is read-only: the disk is
 * full; ..."), and at most once every second a write tries again; the first that succeeds ends
 * the mode. Reads go on. Returns true with the reason in why (size bytes) while it lasts.
 */
bool xp_store_readonly(struct xp_store *store, char *why, size_t size);

/* What xp_store_check() found. */
struct xp_store_report {
        bool exists;  /* a database file or a seal is there */
        bool in_use;  /* another process has the store open: the figures may be moving */
        bool damaged; /* the database and its seal disagree, or the database is corrupt */
        bool sealed;  /* the seal holds a record */
        uint64_t store_id;
        uint64_t version;            /* the database's version counter */
        uint64_t objects;            /* objects in the database */
        uint64_t sealed_version;     /* the last commit the seal records */
        uint64_t reserved;           /* versions up to this may have been handed out */
        uint64_t lost_from, lost_to; /* acknowledged versions not in the database; 0: none known */
        char integrity[256];         /* "ok", or what PRAGMA integrity_check found first */
        char finding[512];           /* the verdict, one sentence */
        uint64_t bad_checksums;      /* rows (objects, events) that fail their checksum */
        /* those rows: "object NS/NAME (type KIND)", "event V of NS/NAME (type KIND)", ", and N
         * more" */
        char bad_rows[XP_STORE_ROWS_MAX];
};

/*
 * Examines the store at path without changing anything: the database's integrity
 * (PRAGMA integrity_check) and counter, the seal, whether they agree. 0 with *ret filled in
 * (also when damaged or absent); -errno when it cannot be examined.
 */
int xp_store_check(const char *path, struct xp_store_report *ret, struct xp_error *err);

/* What xp_store_recover() did. */
struct xp_store_recovery {
        struct xp_store_report before; /* what the check found first */
        bool recovered;                /* false: nothing was damaged and nothing changed */
        uint64_t kept;                 /* objects carried into the new database */
        uint64_t dropped;              /* rows that could not be read back as objects */
        uint64_t next_version;         /* the first version the recovered store hands out */
        char aside[512];               /* the directory the damaged files were moved into */
        char notes[256];               /* what could not be read, when something could not */
};

/*
 * Starts a damaged store over from what is intact: a new database with every object that can be
 * read from the old one (the watch history starts afresh: watchers get 410 and list again), its
 * counter above every version any file says was handed out, so no resourceVersion is ever used
 * twice; the damaged files (database, WAL, shared memory, seal) are moved into
 * PATH.damaged-TIMESTAMP/. Every step leaves files that an open either accepts as recovered or
 * reports as damaged. Nothing is done for a store that is not damaged (recovered false).
 * -EBUSY when a process has the store open.
 */
int xp_store_recover(const char *path, struct xp_store_recovery *ret, struct xp_error *err);
