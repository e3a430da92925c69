/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The kind waiters (src/store/waiter.c): their waits and wake-ups take no lock of the store's, and
 * no write is missed by a waiter whose reader keeps up with concurrent writers.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "store/store_internal.h"
#include "store_open.h"

#define LIMIT_S  60    /* a limit, not an expectation */
#define LIMIT_MS 60000 /* a wait that only a lost wake-up would reach */

struct fixture {
        char dir[64];
        char path[96];
        struct xp_store *store;
};

static int setup(void **state)
{
        struct fixture *f = calloc(1, sizeof(*f));

        assert_non_null(f);
        snprintf(f->dir, sizeof(f->dir), "/tmp/xpool-waiter-XXXXXX");
        assert_non_null(mkdtemp(f->dir));
        snprintf(f->path, sizeof(f->path), "%s/state.db", f->dir);
        f->store = open_ok(f->path);
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        struct fixture *f = *state;
        char cmd[160];

        xp_store_close(f->store);
        snprintf(cmd, sizeof(cmd), "rm -rf -- '%s'", f->dir);
        assert_int_equal(system(cmd), 0);
        free(f);
        return 0;
}

static uint64_t create(struct xp_store *store, const char *kind, const char *name)
{
        json_t *o = json_pack(
            "{s:s, s:s, s:{s:s}}", "apiVersion", "v1", "kind", kind, "metadata", "name", name);
        struct xp_error err = {0};
        uint64_t v = 0;

        if (xp_store_create(store, kind, "", name, o, &v, &err) < 0)
                fail_msg("create %s %s: %s", kind, name, err.msg);
        json_decref(o);
        return v;
}

static time_t now_s(void)
{
        struct timespec t;

        clock_gettime(CLOCK_MONOTONIC, &t);
        return t.tv_sec;
}

/* Waits, bounded, for a flag another thread sets. */
static bool flag_set_within_limit(atomic_bool *flag)
{
        time_t deadline = now_s() + LIMIT_S;

        while (!atomic_load(flag) && now_s() <= deadline)
                usleep(1000);
        return atomic_load(flag);
}

struct waiting {
        struct xp_store_waiter *waiter;
        uint64_t since[1];
        int timeout_ms;
        int result;
        atomic_bool asleep, returned;
};

static void *wait_main(void *arg)
{
        struct waiting *w = arg;

        atomic_store(&w->asleep, true);
        w->result = xp_store_waiter_wait(w->waiter, w->since, w->timeout_ms);
        atomic_store(&w->returned, true);
        return NULL;
}

/*
 * News, and a wake-up, reach a waiter while a writer holds the store's lock: the wait took that
 * lock (a condition variable on it), and each wake-up collided with the leaders that hold it.
 */
static void waits_without_the_store_lock(void **state)
{
        static const char *const kinds[] = {"Pod"};
        struct fixture *f = *state;
        struct waiting w = {.timeout_ms = 0};
        pthread_t thread;
        bool returned;

        assert_int_equal(xp_store_waiter_new(f->store, kinds, 1, &w.waiter), 0);
        create(f->store, "Pod", "a");

        /* news already there: seen at once */
        pthread_mutex_lock(&f->store->lock);
        assert_int_equal(pthread_create(&thread, NULL, wait_main, &w), 0);
        returned = flag_set_within_limit(&w.returned);
        pthread_mutex_unlock(&f->store->lock);
        pthread_join(thread, NULL);
        assert_true(returned);
        assert_int_equal(w.result, 1);

        /* asleep without news: a wake-up from another thread ends it */
        w.since[0] = xp_store_version(f->store);
        w.timeout_ms = LIMIT_MS;
        atomic_store(&w.asleep, false);
        atomic_store(&w.returned, false);
        assert_int_equal(pthread_create(&thread, NULL, wait_main, &w), 0);
        assert_true(flag_set_within_limit(&w.asleep));
        pthread_mutex_lock(&f->store->lock);
        xp_store_waiter_wake(w.waiter);
        returned = flag_set_within_limit(&w.returned);
        pthread_mutex_unlock(&f->store->lock);
        pthread_join(thread, NULL);
        assert_true(returned);
        assert_int_equal(w.result, 1);
        xp_store_waiter_free(w.waiter);
}

#define WRITERS       4
#define CREATES       300
#define READERS       4
#define READER_ROUNDS (WRITERS * CREATES + 1)

struct race {
        struct xp_store *store;
        pthread_barrier_t start;
        atomic_int next_name;
};

struct reader {
        struct race *race;
        struct xp_store_waiter *waiter;
        uint64_t since[2]; /* Pods, Stops */
        int timeouts;
};

static void *writer_main(void *arg)
{
        struct race *race = arg;
        char name[32];

        pthread_barrier_wait(&race->start);
        for (int i = 0; i < CREATES; i++) {
                snprintf(name, sizeof(name), "p%d", atomic_fetch_add(&race->next_name, 1));
                create(race->store, "Pod", name);
        }
        return NULL;
}

/* A reader as an informer is: waits for news, then reads how far each kind is. */
static void *reader_main(void *arg)
{
        struct reader *r = arg;

        pthread_barrier_wait(&r->race->start);
        for (int round = 0; round < READER_ROUNDS && r->since[1] == 0; round++) {
                if (xp_store_waiter_wait(r->waiter, r->since, LIMIT_MS) == 0)
                        r->timeouts++;
                r->since[0] = xp_store_kind_generation(r->race->store, "Pod");
                r->since[1] = xp_store_kind_generation(r->race->store, "Stop");
        }
        return NULL;
}

/* Readers and writers started at one barrier: every reader sees every write, with no wait left
 * to its limit (a wake-up lost between a reader's check and its sleep). */
static void readers_miss_no_write(void **state)
{
        static const char *const kinds[] = {"Pod", "Stop"};
        struct fixture *f = *state;
        struct race race = {.store = f->store};
        struct reader readers[READERS] = {0};
        pthread_t writers[WRITERS], reader_threads[READERS];
        uint64_t last_pod;

        pthread_barrier_init(&race.start, NULL, WRITERS + READERS);
        for (int i = 0; i < READERS; i++) {
                readers[i].race = &race;
                assert_int_equal(xp_store_waiter_new(f->store, kinds, 2, &readers[i].waiter), 0);
                assert_int_equal(pthread_create(&reader_threads[i], NULL, reader_main, &readers[i]),
                                 0);
        }
        for (int i = 0; i < WRITERS; i++)
                assert_int_equal(pthread_create(&writers[i], NULL, writer_main, &race), 0);
        for (int i = 0; i < WRITERS; i++)
                pthread_join(writers[i], NULL);
        last_pod = xp_store_kind_generation(f->store, "Pod");
        create(f->store, "Stop", "stop");
        for (int i = 0; i < READERS; i++) {
                pthread_join(reader_threads[i], NULL);
                assert_int_equal(readers[i].timeouts, 0);
                assert_true(readers[i].since[0] == last_pod);
                assert_true(readers[i].since[1] > last_pod);
                xp_store_waiter_free(readers[i].waiter);
        }
        pthread_barrier_destroy(&race.start);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test_setup_teardown(waits_without_the_store_lock, setup, teardown),
            cmocka_unit_test_setup_teardown(readers_miss_no_write, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
