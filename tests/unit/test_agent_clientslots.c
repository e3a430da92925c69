/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The agent's client slots (src/agent/clientslots.h), which the status and event writers and the
 * clients of pods' starts share: a set keeps at most its limit, gives back the client put last,
 * forgets only the one dropped, and once cancelled cancels what it holds and what comes after,
 * but nothing it no longer holds; a writer pool's threads each hold a client of the set until
 * they end. Clients of a closed loopback port: a request that was not
 * cancelled fails to connect instead.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "agent/clientslots.h"

static const struct xp_apiclient_options api = {.server = "http://127.0.0.1:1", .timeout_ms = 2000};

static struct xp_apiclient *client(void)
{
        struct xp_apiclient *c = NULL;
        struct xp_error err = {0};

        assert_int_equal(xp_apiclient_new(&api, &c, &err), 0);
        return c;
}

static bool cancelled(struct xp_apiclient *c)
{
        struct xp_error err = {0};

        return xp_apiclient_json(c, "GET", "/version", NULL, NULL, NULL, NULL, &err) == -ECANCELED;
}

static void keeps_at_most_its_limit(void **state)
{
        struct xp_client_slots s;
        struct xp_apiclient *a = client(), *b = client(), *c = client();

        (void)state;
        xp_client_slots_init(&s, 2);
        assert_true(xp_client_slots_put(&s, a));
        assert_true(xp_client_slots_put(&s, b));
        assert_false(xp_client_slots_put(&s, c));
        assert_ptr_equal(xp_client_slots_pop(&s), b);
        assert_true(xp_client_slots_put(&s, c));
        assert_ptr_equal(xp_client_slots_pop(&s), c);
        assert_ptr_equal(xp_client_slots_pop(&s), a);
        assert_null(xp_client_slots_pop(&s));
        xp_apiclient_free(a);
        xp_apiclient_free(b);
        xp_apiclient_free(c);

        /* a limit past the slots there are is the slots there are */
        xp_client_slots_init(&s, 1000);
        assert_int_equal(s.limit, XP_CLIENT_SLOTS_MAX);
}

static void drop_forgets_only_that_one(void **state)
{
        struct xp_client_slots s;
        struct xp_apiclient *a = client(), *b = client(), *c = client(), *stranger = client();

        (void)state;
        xp_client_slots_init(&s, 4);
        xp_client_slots_put(&s, a);
        xp_client_slots_put(&s, b);
        xp_client_slots_put(&s, c);
        xp_client_slots_drop(&s, stranger);
        assert_int_equal(s.n, 3);
        xp_client_slots_drop(&s, a);
        assert_int_equal(s.n, 2);
        xp_client_slots_drop(&s, a);
        assert_int_equal(s.n, 2);
        xp_client_slots_close(&s, b);
        assert_ptr_equal(xp_client_slots_pop(&s), c);
        assert_null(xp_client_slots_pop(&s));
        xp_client_slots_close(&s, NULL);
        xp_apiclient_free(a);
        xp_apiclient_free(c);
        xp_apiclient_free(stranger);
}

/* Stopping writers: the clients in the set and those opened after are cancelled, one closed
 * before is not touched (it is freed), and one outside the set neither. */
static void cancel_reaches_held_and_later_clients(void **state)
{
        struct xp_client_slots s;
        struct xp_apiclient *held = NULL, *closed = NULL, *later = NULL, *outside = client();
        struct xp_error err = {0};

        (void)state;
        xp_client_slots_init(&s, 3);
        assert_int_equal(xp_client_slots_open(&s, &api, &held, &err), 0);
        assert_int_equal(xp_client_slots_open(&s, &api, &closed, &err), 0);
        assert_false(cancelled(held));
        xp_client_slots_close(&s, closed);
        assert_int_equal(s.n, 1);
        xp_client_slots_cancel(&s);
        assert_true(cancelled(held));
        assert_int_equal(xp_client_slots_open(&s, &api, &later, &err), 0);
        assert_true(cancelled(later));
        assert_false(cancelled(outside));
        xp_apiclient_free(outside);
        xp_client_slots_free_all(&s);
        assert_int_equal(s.n, 0);
}

/* A set that is full still cancels a client opened after its cancel (a thread's own). */
static void a_full_set_still_cancels_what_it_opens(void **state)
{
        struct xp_client_slots s;
        struct xp_apiclient *first = NULL, *second = NULL;
        struct xp_error err = {0};

        (void)state;
        xp_client_slots_init(&s, 1);
        assert_int_equal(xp_client_slots_open(&s, &api, &first, &err), 0);
        xp_client_slots_cancel(&s);
        assert_int_equal(xp_client_slots_open(&s, &api, &second, &err), 0);
        assert_int_equal(s.n, 1);
        assert_true(cancelled(second));
        xp_client_slots_close(&s, second);
        xp_client_slots_free_all(&s);
}

/* A client that cannot be made is an error, and the set holds nothing of it. */
static void a_bad_server_is_refused(void **state)
{
        const struct xp_apiclient_options none = {0};
        struct xp_client_slots s;
        struct xp_apiclient *c = NULL;
        struct xp_error err = {0};

        (void)state;
        xp_client_slots_init(&s, 2);
        assert_true(xp_client_slots_open(&s, &none, &c, &err) < 0);
        assert_int_equal(s.n, 0);
}

/* A writer thread's context: its client first, kept in the set until the thread ends. */
struct writer {
        struct xp_apiclient *client;
        int mine;
};

/* A writer pool's callbacks, its userdata the set: each thread's client kept until it ends,
 * stopping cancels them all. */
static void a_writer_pool_holds_its_threads_clients(void **state)
{
        struct xp_client_slots s;
        void *ctx = NULL, *other = NULL;
        struct writer *w;

        (void)state;
        xp_client_slots_init_writers(&s, 2, &api, sizeof(struct writer), "a test writer");
        assert_int_equal(xp_client_slots_thread_begin(&s, &ctx), 0);
        assert_int_equal(xp_client_slots_thread_begin(&s, &other), 0);
        w = ctx;
        assert_non_null(w->client);
        assert_int_equal(w->mine, 0);
        assert_int_equal(s.n, 2);
        xp_client_slots_stopping(&s);
        assert_true(s.cancelled);
        assert_true(cancelled(w->client));
        assert_true(cancelled(((struct writer *)other)->client));
        xp_client_slots_thread_end(&s, ctx);
        assert_int_equal(s.n, 1);
        assert_ptr_equal(s.items[0], ((struct writer *)other)->client);
        xp_client_slots_thread_end(&s, other);
        assert_int_equal(s.n, 0);
        xp_client_slots_thread_end(&s, NULL);
}

/* A thread whose client cannot be made does not begin, and the set holds nothing of it. */
static void a_writer_without_a_client_does_not_begin(void **state)
{
        const struct xp_apiclient_options none = {0};
        struct xp_client_slots s;
        void *ctx = &s;

        (void)state;
        xp_client_slots_init_writers(&s, 2, &none, sizeof(struct writer), "a test writer");
        assert_true(xp_client_slots_thread_begin(&s, &ctx) < 0);
        assert_ptr_equal(ctx, &s);
        assert_int_equal(s.n, 0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(keeps_at_most_its_limit),
            cmocka_unit_test(drop_forgets_only_that_one),
            cmocka_unit_test(cancel_reaches_held_and_later_clients),
            cmocka_unit_test(a_full_set_still_cancels_what_it_opens),
            cmocka_unit_test(a_bad_server_is_refused),
            cmocka_unit_test(a_writer_pool_holds_its_threads_clients),
            cmocka_unit_test(a_writer_without_a_client_does_not_begin),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
