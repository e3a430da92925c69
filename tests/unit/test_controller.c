/* SPDX-License-Identifier: Apache-2.0 */
/* The controllers' loop (src/controller/controller.c): a settling controller's rounds. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <cmocka.h>

#include "controller/controller.h"
#include "controller/informer.h"
#include "tmpdir.h"
#include "xpool/store.h"

#define WRITES   5
#define LONG_MS  60000 /* longer than any test: a rest that only a stop ends */
#define BOUND_MS 30000 /* the most a wait for a round may take: inside a LONG_MS rest */

/* One controller over the store: its rounds, and the pods its informer delivered. */
struct counted {
        struct xp_informer *informer;
        struct xp_controller *loop;
        atomic_uint rounds;
        atomic_uint pods;
};

struct fixture {
        struct tmpdir *dir;
        struct xp_store *store;
};

static void pod_seen(void *userdata, const json_t *pod, uint64_t version)
{
        struct counted *c = userdata;

        (void)pod;
        (void)version;
        atomic_fetch_add(&c->pods, 1);
}

static int64_t count_round(void *userdata)
{
        struct counted *c = userdata;

        atomic_fetch_add(&c->rounds, 1);
        return LONG_MS;
}

static const struct xp_informer_handler pods[] = {
    {.resource = "pods", .add = pod_seen, .update = pod_seen},
};

static const struct xp_controller_ops witness_ops = {.name = "witness", .work = count_round};
static const struct xp_controller_ops settling_ops = {
    .name = "settling", .work = count_round, .settle_ms = LONG_MS};

static int setup(void **state)
{
        struct fixture *f = calloc(1, sizeof *f);
        struct xp_error err = {0};
        void *dir;

        assert_non_null(f);
        tmpdir_setup(&dir, "controller", "state.db");
        f->dir = dir;
        struct xp_store_options store_options = {.path = f->dir->path};
        if (xp_store_open(&store_options, &f->store, &err) < 0)
                fail_msg("store: %s", err.msg);
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        struct fixture *f = *state;
        void *dir = f->dir;

        xp_store_close(f->store);
        free(f);
        return tmpdir_teardown(&dir);
}

static void start(struct fixture *f, const struct xp_controller_ops *ops, struct counted *c)
{
        struct xp_informer_options options = {
            .store = f->store, .handlers = pods, .n_handlers = 1, .userdata = c};
        struct xp_error err = {0};

        assert_int_equal(xp_informer_new(&options, &c->informer), 0);
        assert_int_equal(xp_informer_list(c->informer, &err), 0);
        assert_int_equal(xp_controller_start(ops, c->informer, c, &c->loop, &err), 0);
}

static void stop(struct counted *c)
{
        xp_controller_stop(c->loop);
        xp_informer_free(c->informer);
}

/* Waits, in steps of 10 ms up to BOUND_MS, until *value reaches want. */
static void wait_for_count(atomic_uint *value, unsigned want)
{
        struct timespec step = {.tv_nsec = 10 * 1000 * 1000};

        for (int waited = 0; atomic_load(value) < want && waited < BOUND_MS; waited += 10)
                nanosleep(&step, NULL);
        assert_true(atomic_load(value) >= want);
}

static void put_pod(struct fixture *f, int i)
{
        char name[32];
        uint64_t version;
        json_t *o;

        snprintf(name, sizeof name, "p%d", i);
        o = json_pack("{s:{s:s, s:s}}", "metadata", "name", name, "namespace", "default");
        assert_int_equal(xp_store_create(f->store, "pods", "default", name, o, &version, NULL), 0);
        json_decref(o);
}

/*
 * The writes that wake a controller with no settle at once (the witness, which has read them all)
 * wait for a settling controller's rest to end: no round of its read them. A stop ends the rest.
 */
static void writes_wait_for_the_settle(void **state)
{
        struct fixture *f = *state;
        struct counted witness = {0}, settling = {0};

        start(f, &witness_ops, &witness);
        start(f, &settling_ops, &settling);
        wait_for_count(&witness.rounds, 1);
        wait_for_count(&settling.rounds, 1);
        for (int i = 0; i < WRITES; i++)
                put_pod(f, i);
        wait_for_count(&witness.pods, WRITES);
        assert_int_equal(atomic_load(&settling.rounds), 1);
        assert_int_equal(atomic_load(&settling.pods), 0);
        stop(&settling);
        stop(&witness);
}

static void settle_never_delays_due_work(void **state)
{
        (void)state;
        assert_int_equal(xp_controller_settle_ms(0, 1000), 0);
        assert_int_equal(xp_controller_settle_ms(50, 0), 0);
        assert_int_equal(xp_controller_settle_ms(50, 20), 20);
        assert_int_equal(xp_controller_settle_ms(50, 1000), 50);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test_setup_teardown(writes_wait_for_the_settle, setup, teardown),
            cmocka_unit_test(settle_never_delays_due_work),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
