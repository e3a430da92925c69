/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The store's ring of recent writes and its registered readers (recent.c, waiter.c): a shared
 * object stays in the ring until every waiter following its kind has passed it, then the next
 * batch's leader lets it go; a reader that comes later gets it parsed from the text. What the ring
 * holds shows in the object's reference count (the test keeps one reference of its own).
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "xpool/store.h"

struct fixture {
        char dir[64];
        char path[128];
        struct xp_store *store;
};

static int open_with_history(void **state, size_t history)
{
        struct fixture *f = calloc(1, sizeof(*f));
        struct xp_store_options options = {.event_history = history};
        struct xp_error err = {0};

        assert_non_null(f);
        snprintf(f->dir, sizeof(f->dir), "/tmp/xpool-ring-XXXXXX");
        assert_non_null(mkdtemp(f->dir));
        snprintf(f->path, sizeof(f->path), "%s/state.db", f->dir);
        options.path = f->path;
        if (xp_store_open(&options, &f->store, &err) < 0)
                fail_msg("open %s: %s", f->path, err.msg);
        *state = f;
        return 0;
}

static int setup(void **state)
{
        return open_with_history(state, 0);
}

/* A ring of 8 writes (the ring keeps no more than the log). */
static int setup_small(void **state)
{
        return open_with_history(state, 8);
}

static int teardown(void **state)
{
        struct fixture *f = *state;
        static const char *const suffixes[] = {"", "-wal", "-shm", ".seal"};
        char p[160];

        xp_store_close(f->store);
        for (size_t i = 0; i < sizeof(suffixes) / sizeof(*suffixes); i++) {
                snprintf(p, sizeof(p), "%s%s", f->path, suffixes[i]);
                unlink(p);
        }
        rmdir(f->dir);
        free(f);
        return 0;
}

static const char *const pods[] = {"Pod"};

/* Creates pod name, shared with the ring; returns the object (the caller's reference). */
static json_t *create_shared(struct xp_store *store, const char *name, uint64_t *ret_version)
{
        json_t *o = json_pack(
            "{s:s, s:{s:s, s:s}}", "kind", "Pod", "metadata", "name", name, "namespace", "a");
        struct xp_store_written w = {.share = true};
        struct xp_error err = {0};

        assert_non_null(o);
        if (xp_store_create_text(store, "Pod", "a", name, o, &w, &err) < 0)
                fail_msg("create %s: %s", name, err.msg);
        if (ret_version)
                *ret_version = w.version;
        return o;
}

/* A write of a kind no reader follows: its leader frees what the readers have let go. */
static void next_batch(struct xp_store *store)
{
        static int n;
        struct xp_error err = {0};
        char name[16];
        json_t *o;

        snprintf(name, sizeof(name), "n%d", n++);
        o = json_pack("{s:s, s:{s:s}}", "kind", "Node", "metadata", "name", name);
        assert_non_null(o);
        if (xp_store_create(store, "Node", "", name, o, NULL, &err) < 0)
                fail_msg("create node %s: %s", name, err.msg);
        json_decref(o);
}

/* A waiter on pods that has waited once: a reader from now on. */
static struct xp_store_waiter *reader(struct xp_store *store, uint64_t *since)
{
        struct xp_store_waiter *w = NULL;

        assert_int_equal(xp_store_waiter_new(store, pods, 1, &w), 0);
        *since = xp_store_version(store);
        xp_store_waiter_wait(w, since, 0);
        return w;
}

/* The reader's scan from *since: the one event expected, its object checked; moves *since. */
static void scan_one(struct xp_store_waiter *w, uint64_t *since, json_t *expect)
{
        struct xp_store_event_buffer buf = {0};
        struct xp_error err = {0};

        assert_int_equal(xp_store_waiter_scan_into(w, 0, *since, 16, &buf, since, &err), 0);
        assert_int_equal(buf.n, 1);
        assert_ptr_equal(buf.events[0].object, expect);
        xp_store_event_buffer_free(&buf);
}

/* The ring keeps the object until the last reader passes it, whether by a scan or a wait. */
static void let_go_after_last_reader(void **state)
{
        struct fixture *f = *state;
        uint64_t at_a, at_b, v;
        struct xp_store_waiter *a = reader(f->store, &at_a), *b = reader(f->store, &at_b);
        json_t *o = create_shared(f->store, "p", &v);

        assert_int_equal(o->refcount, 2); /* ours and the ring's */
        scan_one(a, &at_a, o);
        assert_int_equal(at_a, v);
        assert_int_equal(o->refcount, 2); /* b has not read it */
        xp_store_waiter_wait(b, &v, 0);   /* b says it has, without a scan */
        next_batch(f->store);
        assert_int_equal(o->refcount, 1);
        json_decref(o);

        /* the next: the last reader's own scan lets it go */
        o = create_shared(f->store, "q", &v);
        xp_store_waiter_wait(b, &v, 0);
        next_batch(f->store);
        assert_int_equal(o->refcount, 2);
        scan_one(a, &at_a, o);
        next_batch(f->store);
        assert_int_equal(o->refcount, 1);
        json_decref(o);
        xp_store_waiter_free(a);
        xp_store_waiter_free(b);
}

/* After the ring let an object go, a later reader gets the same object parsed from the text. */
static void late_reader_parses_text(void **state)
{
        struct fixture *f = *state;
        struct xp_store_event *ev = NULL;
        struct xp_error err = {0};
        uint64_t at, v, through;
        struct xp_store_waiter *w = reader(f->store, &at);
        json_t *o = create_shared(f->store, "p", &v);
        size_t n = 0;
        char version[24];

        scan_one(w, &at, o);
        next_batch(f->store);
        assert_int_equal(o->refcount, 1);
        assert_int_equal(
            xp_store_events_scan(f->store, "Pod", NULL, v - 1, 16, &ev, &n, &through, &err), 0);
        assert_int_equal(n, 1);
        assert_int_equal(through, xp_store_version(f->store));
        assert_non_null(ev[0].object);
        assert_ptr_not_equal(ev[0].object, o);
        assert_true(json_equal(ev[0].object, o));
        snprintf(version, sizeof(version), "%" PRIu64, v);
        assert_string_equal(json_string_value(json_object_get(
                                json_object_get(ev[0].object, "metadata"), "resourceVersion")),
                            version);
        /* and the ring does not take the parsed one back: nobody is to read it any more */
        assert_int_equal(ev[0].object->refcount, 1);
        xp_store_events_free(ev, n);
        json_decref(o);
        xp_store_waiter_free(w);
}

/* A reader that leaves passes everything; one that never waited holds nothing. */
static void leaving_and_idle_readers(void **state)
{
        struct fixture *f = *state;
        struct xp_store_waiter *idle = NULL;
        uint64_t at_a, at_b;
        struct xp_store_waiter *a = reader(f->store, &at_a), *b = reader(f->store, &at_b);
        json_t *o;

        assert_int_equal(xp_store_waiter_new(f->store, pods, 1, &idle), 0);
        o = create_shared(f->store, "p", NULL);
        scan_one(a, &at_a, o);
        assert_int_equal(o->refcount, 2);
        xp_store_waiter_free(b);
        next_batch(f->store);
        assert_int_equal(o->refcount, 1);
        json_decref(o);
        xp_store_waiter_free(a);
        xp_store_waiter_free(idle);
}

/* A reader whose scan starts past some writes (after a list) passes those too. */
static void skipped_writes_let_go(void **state)
{
        struct fixture *f = *state;
        uint64_t at, v1, v2;
        struct xp_store_waiter *w = reader(f->store, &at);
        json_t *o1 = create_shared(f->store, "p", &v1), *o2 = create_shared(f->store, "q", &v2);

        at = v1;
        scan_one(w, &at, o2);
        next_batch(f->store);
        assert_int_equal(o1->refcount, 1);
        assert_int_equal(o2->refcount, 1);
        json_decref(o1);
        json_decref(o2);
        xp_store_waiter_free(w);
}

/* A waiter that follows a kind twice (two handlers) has passed it when both positions have. */
static void kind_followed_twice(void **state)
{
        static const char *const twice[] = {"Pod", "Node", "Pod"};
        struct fixture *f = *state;
        struct xp_store_waiter *w = NULL;
        uint64_t since[3], v;
        json_t *o;

        assert_int_equal(xp_store_waiter_new(f->store, twice, 3, &w), 0);
        since[0] = since[1] = since[2] = xp_store_version(f->store);
        xp_store_waiter_wait(w, since, 0);
        o = create_shared(f->store, "p", &v);
        since[0] = since[1] = v;
        xp_store_waiter_wait(w, since, 0);
        assert_int_equal(o->refcount, 2);
        since[2] = v;
        xp_store_waiter_wait(w, since, 0);
        next_batch(f->store);
        assert_int_equal(o->refcount, 1);
        json_decref(o);
        xp_store_waiter_free(w);
}

/* Writes pushed out of the ring before a reader passed them go with it; the reader's later
 * pass over what the ring holds then touches none of them twice. */
static void pushed_out_before_passed(void **state)
{
        struct fixture *f = *state;
        json_t *o[20];
        uint64_t at, v = 0;
        struct xp_store_waiter *w = reader(f->store, &at);
        char name[16];

        for (int i = 0; i < 20; i++) {
                snprintf(name, sizeof(name), "p%d", i);
                o[i] = create_shared(f->store, name, &v);
        }
        for (int i = 0; i < 20; i++)
                assert_int_equal(o[i]->refcount, i < 12 ? 1 : 2); /* the ring keeps 8 */
        xp_store_waiter_wait(w, &v, 0);
        next_batch(f->store);
        for (int i = 0; i < 20; i++) {
                assert_int_equal(o[i]->refcount, 1);
                json_decref(o[i]);
        }
        xp_store_waiter_free(w);
}

#define RACE_WRITES  600
#define RACE_READERS 3

struct race_reader {
        struct xp_store *store;
        int seen;
        int wrong;
};

/* Reads every pod to the last through its waiter, checking each object's name and version. */
static void *race_thread(void *arg)
{
        struct race_reader *r = arg;
        struct xp_store_event_buffer buf = {0};
        struct xp_store_waiter *w = NULL;
        struct xp_error err = {0};
        uint64_t at = 0;

        if (xp_store_waiter_new(r->store, pods, 1, &w) < 0) {
                r->wrong++; /* no cmocka assertion off the test's thread */
                return NULL;
        }
        /* bounded: each round waits for news at most 100 ms, and every write is news */
        for (int round = 0; round < 100000 && r->seen < RACE_WRITES; round++) {
                if (xp_store_waiter_scan_into(w, 0, at, 32, &buf, &at, &err) < 0)
                        break;
                for (size_t i = 0; i < buf.n; i++) {
                        const char *name = json_string_value(json_object_get(
                            json_object_get(buf.events[i].object, "metadata"), "name"));
                        char expect[16];

                        snprintf(expect, sizeof(expect), "p%d", r->seen);
                        r->wrong += !name || strcmp(name, expect) != 0;
                        r->seen++;
                }
                xp_store_waiter_wait(w, &at, 100);
        }
        xp_store_event_buffer_free(&buf);
        xp_store_waiter_free(w);
        return NULL;
}

/* Readers racing the writer see every write in order, whole, whoever lets the object go. */
static void readers_race_writer(void **state)
{
        struct fixture *f = *state;
        struct race_reader r[RACE_READERS];
        pthread_t th[RACE_READERS];
        char name[16];

        for (int i = 0; i < RACE_READERS; i++) {
                r[i] = (struct race_reader){.store = f->store};
                assert_int_equal(pthread_create(&th[i], NULL, race_thread, &r[i]), 0);
        }
        for (int i = 0; i < RACE_WRITES; i++) {
                snprintf(name, sizeof(name), "p%d", i);
                json_decref(create_shared(f->store, name, NULL));
        }
        for (int i = 0; i < RACE_READERS; i++) {
                pthread_join(th[i], NULL);
                assert_int_equal(r[i].seen, RACE_WRITES);
                assert_int_equal(r[i].wrong, 0);
        }
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test_setup_teardown(let_go_after_last_reader, setup, teardown),
            cmocka_unit_test_setup_teardown(late_reader_parses_text, setup, teardown),
            cmocka_unit_test_setup_teardown(leaving_and_idle_readers, setup, teardown),
            cmocka_unit_test_setup_teardown(skipped_writes_let_go, setup, teardown),
            cmocka_unit_test_setup_teardown(kind_followed_twice, setup, teardown),
            cmocka_unit_test_setup_teardown(pushed_out_before_passed, setup_small, teardown),
            cmocka_unit_test_setup_teardown(readers_race_writer, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
