/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The store's damage detection: the seal's records, the judgement of seal against database, and
 * the whole path on real files: damage refused at open with what was lost, xp_store_check()'s
 * report, xp_store_recover() keeping what is intact and never reusing a version.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <setjmp.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "store/store_internal.h"
#include "tmpdir.h"
#include "xpool/store.h"

#include "store_open.h"

static int setup(void **state)
{
        return tmpdir_setup(state, "damage", "state.db");
}

static int teardown(void **state)
{
        return tmpdir_teardown(state);
}

static uint64_t create(struct xp_store *store, const char *name)
{
        struct xp_error err = {0};
        json_t *o = json_pack("{s:{s:s}, s:s}", "metadata", "name", name, "pad", "0123456789");
        uint64_t v = 0;

        assert_non_null(o);
        if (xp_store_create(store, "Pod", "default", name, o, &v, &err) < 0)
                fail_msg("create %s: %s", name, err.msg);
        json_decref(o);
        return v;
}

/* A store at path with n pods p0..p(n-1), closed; its version. */
static uint64_t fill(const char *path, int n)
{
        struct xp_store *store = open_ok(path);
        uint64_t v = 0;
        char name[32];

        for (int i = 0; i < n; i++) {
                snprintf(name, sizeof(name), "p%d", i);
                v = create(store, name);
        }
        xp_store_close(store);
        return v;
}

static void seal_records(void **state)
{
        struct seal_record rec = {.kind = SEAL_COMMIT,
                                  .store_id = 42,
                                  .seq = 7,
                                  .version = 99,
                                  .digest = 0xabcdef,
                                  .time = 1700000000};
        struct seal_record back;
        uint8_t buf[SEAL_RECORD], zero[SEAL_RECORD] = {0};

        (void)state;
        seal_encode(&rec, buf);
        assert_int_equal(seal_decode(buf, &back), 0);
        assert_int_equal(back.kind, SEAL_COMMIT);
        assert_int_equal(back.store_id, 42);
        assert_int_equal(back.seq, 7);
        assert_int_equal(back.version, 99);
        assert_int_equal(back.digest, 0xabcdef);
        assert_int_equal(seal_decode(zero, &back), -ENODATA);
        /* one flipped bit anywhere in the record fails its check */
        for (size_t i = 0; i < SEAL_RECORD; i++) {
                uint8_t bad[SEAL_RECORD];

                memcpy(bad, buf, sizeof(bad));
                bad[i] ^= 0x10;
                assert_int_equal(seal_decode(bad, &back), -EBADMSG);
        }
}

static void put(uint8_t *file, size_t slot, enum seal_kind kind, uint64_t seq, uint64_t version)
{
        struct seal_record rec = {.kind = kind, .store_id = 5, .seq = seq, .version = version};

        seal_encode(&rec, file + slot * SEAL_SLOT);
}

static void seal_newest_wins(void **state)
{
        uint8_t file[SEAL_SIZE] = {0};
        struct seal_state st;

        (void)state;
        seal_parse(file, 0, &st);
        assert_false(st.written);
        assert_false(st.damaged);
        seal_parse(file, sizeof(file), &st);
        assert_false(st.written); /* allocated, never written: as good as absent */

        put(file, 0, SEAL_RESERVE, 1, 10000);
        put(file, 2, SEAL_COMMIT, 4, 40);
        put(file, 3, SEAL_COMMIT, 5, 50);
        seal_parse(file, sizeof(file), &st);
        assert_true(st.has_commit && st.has_reserve);
        assert_int_equal(st.commit.version, 50);
        assert_int_equal(st.reserve.version, 10000);

        /* the newest commit torn: the older one of its pair counts, the seal behind, not lost */
        file[3 * SEAL_SLOT + 33] ^= 1;
        seal_parse(file, sizeof(file), &st);
        assert_int_equal(st.commit.version, 40);
        assert_false(st.damaged);

        /* nothing valid left, but bytes that are not records: damaged */
        memset(file, 0x5a, sizeof(file));
        seal_parse(file, sizeof(file), &st);
        assert_false(st.written);
        assert_true(st.damaged);
}

static struct seal_state sealed_at(uint64_t id, uint64_t version, uint64_t digest)
{
        return (struct seal_state){
            .present = true,
            .written = true,
            .has_commit = true,
            .has_reserve = true,
            .commit = {.kind = SEAL_COMMIT, .store_id = id, .version = version, .digest = digest},
            .reserve = {.kind = SEAL_RESERVE, .store_id = id, .version = version + RESERVE_STEP},
        };
}

static void judge_table(void **state)
{
        struct store_facts db = {.sealed = true, .store_id = 7, .version = 30, .digest = 3};
        struct seal_state seal = sealed_at(7, 30, 3), none = {0};
        struct store_verdict v;

        (void)state;
        store_judge(&seal, &db, &v);
        assert_false(v.damaged);

        /* the database ahead of its seal: a kill between commit and seal, or a power cut */
        db.version = 31;
        store_judge(&seal, &db, &v);
        assert_false(v.damaged);

        /* behind: a WAL cut short */
        db.version = 14;
        store_judge(&seal, &db, &v);
        assert_true(v.damaged);
        assert_int_equal(v.lost_from, 15);
        assert_int_equal(v.lost_to, 30);
        assert_non_null(strstr(v.what, "versions 15..30 were acknowledged"));

        /* same version, another history */
        db.version = 30;
        db.digest = 4;
        store_judge(&seal, &db, &v);
        assert_true(v.damaged);
        assert_non_null(strstr(v.what, "not the history"));
        db.digest = 3;

        /* an empty (zero-length) database under a seal */
        struct store_facts empty = {.empty = true};
        store_judge(&seal, &empty, &v);
        assert_true(v.damaged);
        assert_int_equal(v.lost_from, 1);
        assert_int_equal(v.lost_to, 30);

        /* another store's database */
        db.store_id = 8;
        store_judge(&seal, &db, &v);
        assert_true(v.damaged);
        assert_non_null(strstr(v.what, "copy from elsewhere"));
        db.store_id = 7;

        /* the seal missing under a sealed database; fine for a store from before seals */
        store_judge(&none, &db, &v);
        assert_true(v.damaged);
        assert_non_null(strstr(v.what, "seal is missing"));
        db.sealed = false;
        db.store_id = 0;
        store_judge(&none, &db, &v);
        assert_false(v.damaged);
        /* ... and an upgrade cut short after the seal was written */
        store_judge(&seal, &db, &v);
        assert_false(v.damaged);

        /* corrupt beats everything */
        db = (struct store_facts){.sealed = true, .store_id = 7, .version = 30, .corrupt = true};
        snprintf(db.problem, sizeof(db.problem), "database disk image is malformed");
        store_judge(&seal, &db, &v);
        assert_true(v.damaged);
        assert_non_null(strstr(v.what, "malformed"));

        /* the floor: the highest version anything says was handed out */
        db = (struct store_facts){.version = 14, .max_object_version = 12};
        assert_int_equal(store_floor(&seal, &db), 30 + RESERVE_STEP);
        assert_int_equal(store_floor(&none, &db), 14);
}

static void check_paths(struct tmpdir *t, const char *suffix, char *buf, size_t size)
{
        snprintf(buf, size, "%s%s", t->path, suffix);
}

static uint64_t create_after_recovery(const char *path)
{
        struct xp_store *store = open_ok(path);
        uint64_t v = create(store, "after");

        xp_store_close(store);
        return v;
}

static void zero_length(void **state)
{
        struct tmpdir *t = *state;
        struct xp_store_report report;
        struct xp_store_recovery rec;
        struct xp_error err = {0};
        uint64_t acked;
        char aside_db[256];
        struct stat st;

        acked = fill(t->path, 10);
        assert_int_equal(truncate(t->path, 0), 0);

        assert_int_equal(open_err(t->path, &err), -EUCLEAN);
        assert_non_null(strstr(err.msg, "is damaged"));
        assert_non_null(strstr(err.msg, "were acknowledged and are lost"));
        /* refused without a change: still zero bytes */
        assert_int_equal(stat(t->path, &st), 0);
        assert_int_equal(st.st_size, 0);

        assert_int_equal(xp_store_check(t->path, &report, &err), 0);
        assert_true(report.damaged);
        assert_int_equal(report.lost_from, 1);
        assert_int_equal(report.lost_to, acked);
        assert_int_equal(report.sealed_version, acked);

        assert_int_equal(xp_store_recover(t->path, &rec, &err), 0);
        assert_true(rec.recovered);
        assert_int_equal(rec.kept, 0);
        assert_true(rec.next_version > acked);
        snprintf(aside_db, sizeof(aside_db), "%s/state.db.seal", rec.aside);
        assert_int_equal(access(aside_db, F_OK), 0);

        assert_true(create_after_recovery(t->path) > acked);
        assert_int_equal(xp_store_check(t->path, &report, &err), 0);
        assert_false(report.damaged);

        /* recover on an intact store does nothing */
        assert_int_equal(xp_store_recover(t->path, &rec, &err), 0);
        assert_false(rec.recovered);
}

/* Copies src to dst whole. */
static void copy_file(const char *src, const char *dst)
{
        char cmd[600];

        snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", src, dst);
        assert_int_equal(system(cmd), 0);
}

static void corrupt_wal(void **state)
{
        struct tmpdir *t = *state;
        struct xp_store_recovery rec;
        struct xp_store *store;
        struct xp_error err = {0};
        char live[160], p[200], q[200];
        uint64_t acked = 0;
        uint8_t hdr[32];
        long frames;
        int fd;

        /* a crash image: the files of a store that is still open, as a kill -9 leaves them */
        snprintf(live, sizeof(live), "%s/live.db", t->dir);
        store = open_ok(live);
        for (int i = 0; i < 40; i++) {
                snprintf(p, sizeof(p), "p%d", i);
                acked = create(store, p);
        }
        copy_file(live, t->path);
        snprintf(p, sizeof(p), "%s-wal", live);
        check_paths(t, "-wal", q, sizeof(q));
        copy_file(p, q);
        snprintf(p, sizeof(p), "%s.seal", live);
        check_paths(t, ".seal", q, sizeof(q));
        copy_file(p, q);
        xp_store_close(store);

        /* one byte of a frame in the middle of the WAL */
        check_paths(t, "-wal", q, sizeof(q));
        fd = open(q, O_RDWR);
        assert_true(fd >= 0);
        assert_int_equal(pread(fd, hdr, sizeof(hdr), 0), sizeof(hdr));
        {
                uint32_t page = (uint32_t)hdr[8] << 24 | hdr[9] << 16 | hdr[10] << 8 | hdr[11];
                off_t size = lseek(fd, 0, SEEK_END), off;
                uint8_t b;

                frames = (long)((size - 32) / (24 + page));
                assert_true(frames > 10);
                off = 32 + (frames / 2) * (off_t)(24 + page) + 24 + 200;
                assert_int_equal(pread(fd, &b, 1, off), 1);
                b ^= 0xff;
                assert_int_equal(pwrite(fd, &b, 1, off), 1);
        }
        close(fd);

        assert_int_equal(open_err(t->path, &err), -EUCLEAN);
        assert_non_null(strstr(err.msg, "were acknowledged but are not in the database"));

        assert_int_equal(xp_store_recover(t->path, &rec, &err), 0);
        assert_true(rec.recovered);
        assert_true(rec.before.lost_from > 1);
        assert_int_equal(rec.before.lost_to, acked);
        /* what was before the damaged frame is kept */
        assert_true(rec.kept > 0 && rec.kept < 40);
        assert_int_equal(rec.kept, rec.before.lost_from - 1);
        assert_true(create_after_recovery(t->path) > acked);
}

static void seal_missing(void **state)
{
        struct tmpdir *t = *state;
        struct xp_store_recovery rec;
        struct xp_error err = {0};
        uint64_t acked;
        char p[200];

        acked = fill(t->path, 3);
        check_paths(t, ".seal", p, sizeof(p));
        assert_int_equal(unlink(p), 0);
        assert_int_equal(open_err(t->path, &err), -EUCLEAN);
        assert_non_null(strstr(err.msg, "seal is missing"));
        assert_int_equal(xp_store_recover(t->path, &rec, &err), 0);
        assert_int_equal(rec.kept, 3);
        assert_true(rec.next_version > acked + RESERVE_STEP);
}

static void digest_differs(void **state)
{
        struct tmpdir *t = *state;
        struct xp_error err = {0};
        sqlite3 *db = NULL;

        fill(t->path, 3);
        assert_int_equal(sqlite3_open(t->path, &db), SQLITE_OK);
        assert_int_equal(
            sqlite3_exec(
                db, "UPDATE meta SET value = 12345 WHERE key = 'digest'", NULL, NULL, NULL),
            SQLITE_OK);
        sqlite3_close(db);
        assert_int_equal(open_err(t->path, &err), -EUCLEAN);
        assert_non_null(strstr(err.msg, "not the history"));
}

static void legacy_store(void **state)
{
        struct tmpdir *t = *state;
        struct xp_store_report report;
        struct xp_error err = {0};
        struct xp_store *store;
        sqlite3 *db = NULL;
        char p[200];

        /* a store from before seals: no store id, no digest row, no seal */
        fill(t->path, 2);
        check_paths(t, ".seal", p, sizeof(p));
        assert_int_equal(unlink(p), 0);
        assert_int_equal(sqlite3_open(t->path, &db), SQLITE_OK);
        assert_int_equal(
            sqlite3_exec(
                db, "DELETE FROM meta WHERE key IN ('store_id', 'digest')", NULL, NULL, NULL),
            SQLITE_OK);
        sqlite3_close(db);
        store = open_ok(t->path);
        assert_true(create(store, "new") > 2);
        xp_store_close(store);
        assert_int_equal(xp_store_check(t->path, &report, &err), 0);
        assert_false(report.damaged);
        assert_true(report.sealed);
        assert_int_equal(report.objects, 3);
}

static void private_files(void **state)
{
        struct tmpdir *t = *state;
        mode_t old = umask(022);
        struct xp_store *store;
        char p[200];
        struct stat st;

        store = open_ok(t->path);
        create(store, "a");
        check_paths(t, "-wal", p, sizeof(p));
        assert_int_equal(stat(p, &st), 0);
        assert_int_equal(st.st_mode & 0777, 0600);
        xp_store_close(store);
        assert_int_equal(stat(t->path, &st), 0);
        assert_int_equal(st.st_mode & 0777, 0600);
        check_paths(t, ".seal", p, sizeof(p));
        assert_int_equal(stat(p, &st), 0);
        assert_int_equal(st.st_mode & 0777, 0600);

        /* a file an older xpool left 0644 is made private */
        assert_int_equal(chmod(t->path, 0644), 0);
        store = open_ok(t->path);
        assert_int_equal(stat(t->path, &st), 0);
        assert_int_equal(st.st_mode & 0777, 0600);
        xp_store_close(store);
        umask(old);
}

static void one_process(void **state)
{
        struct tmpdir *t = *state;
        struct xp_store_recovery rec;
        struct xp_error err = {0};
        struct xp_store *store = open_ok(t->path);

        /* the lock is per open file description: a second open in this process is refused too */
        assert_int_equal(open_err(t->path, &err), -EBUSY);
        assert_non_null(strstr(err.msg, "open in another process"));
        assert_int_equal(xp_store_recover(t->path, &rec, &err), -EBUSY);
        xp_store_close(store);
}

static void reservations(void **state)
{
        struct tmpdir *t = *state;
        struct xp_store_stats stats;
        struct seal_state seal;
        struct xp_error err = {0};
        struct xp_store *store = open_ok(t->path);

        xp_store_stats(store, &stats);
        assert_int_equal(stats.reservations, 1);
        for (int i = 0; i < 20; i++) {
                char name[16];

                snprintf(name, sizeof(name), "r%d", i);
                create(store, name);
        }
        xp_store_stats(store, &stats);
        assert_int_equal(stats.reservations, 1); /* one durable seal write per RESERVE_STEP */
        assert_int_equal(seal_read(t->path, &seal, &err), 0);
        assert_int_equal(seal.commit.version, xp_store_version(store));
        assert_true(seal.reserve.version >= xp_store_version(store));
        xp_store_close(store);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(seal_records),
            cmocka_unit_test(seal_newest_wins),
            cmocka_unit_test(judge_table),
            cmocka_unit_test_setup_teardown(zero_length, setup, teardown),
            cmocka_unit_test_setup_teardown(corrupt_wal, setup, teardown),
            cmocka_unit_test_setup_teardown(seal_missing, setup, teardown),
            cmocka_unit_test_setup_teardown(digest_differs, setup, teardown),
            cmocka_unit_test_setup_teardown(legacy_store, setup, teardown),
            cmocka_unit_test_setup_teardown(private_files, setup, teardown),
            cmocka_unit_test_setup_teardown(one_process, setup, teardown),
            cmocka_unit_test_setup_teardown(reservations, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
