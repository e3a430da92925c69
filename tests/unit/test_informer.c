/* SPDX-License-Identifier: Apache-2.0 */
/* The controllers' informer (src/controller/informer.c) over a temporary store. */
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "controller/informer.h"
#include "tmpdir.h"
#include "xpool/store.h"

#define HISTORY 8 /* events the store keeps: small, so that a test can outrun it */

/* What the callbacks saw, one line each: "add pods ns/name 12". */
struct seen {
        char lines[256][96];
        size_t n;
        unsigned resets;
};

struct fixture {
        struct tmpdir *dir;
        struct xp_store *store;
        struct xp_informer *informer;
        struct seen seen;
};

static void note(struct seen *s, const char *what, const char *kind, const json_t *o, uint64_t v)
{
        const json_t *meta = json_object_get(o, "metadata");
        const char *ns = json_string_value(json_object_get(meta, "namespace"));

        assert_true(s->n < 256);
        snprintf(s->lines[s->n++],
                 sizeof s->lines[0],
                 "%s %s %s%s%s %" PRIu64,
                 what,
                 kind,
                 ns ? ns : "",
                 ns ? "/" : "",
                 json_string_value(json_object_get(meta, "name")),
                 v);
}

static void pod_add(void *u, const json_t *o, uint64_t v)
{
        note(u, "add", "pods", o, v);
}
static void pod_update(void *u, const json_t *o, uint64_t v)
{
        note(u, "update", "pods", o, v);
}
static void pod_delete(void *u, const json_t *o, uint64_t v)
{
        note(u, "delete", "pods", o, v);
}
static void node_add(void *u, const json_t *o, uint64_t v)
{
        note(u, "add", "nodes", o, v);
}

static void reset(void *u)
{
        struct seen *s = u;

        s->resets++;
        s->n = 0;
}

/* nodes: only add (update and delete left out); pods: all three */
static const struct xp_informer_handler handlers[] = {
    {.resource = "nodes", .add = node_add},
    {.resource = "pods", .add = pod_add, .update = pod_update, .delete = pod_delete},
};

static int setup(void **state)
{
        struct fixture *f = calloc(1, sizeof *f);
        struct xp_error err = {0};
        void *dir;

        assert_non_null(f);
        tmpdir_setup(&dir, "informer", "state.db");
        f->dir = dir;
        struct xp_store_options store_options = {.path = f->dir->path, .event_history = HISTORY};
        if (xp_store_open(&store_options, &f->store, &err) < 0)
                fail_msg("store: %s", err.msg);
        struct xp_informer_options options = {
            .store = f->store,
            .handlers = handlers,
            .n_handlers = 2,
            .reset = reset,
            .userdata = &f->seen,
            .batch = 2, /* batches smaller than the backlog */
        };
        assert_int_equal(xp_informer_new(&options, &f->informer), 0);
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        struct fixture *f = *state;
        void *dir = f->dir;

        xp_informer_free(f->informer);
        xp_store_close(f->store);
        free(f);
        return tmpdir_teardown(&dir);
}

static uint64_t put(struct fixture *f, const char *kind, const char *ns, const char *name)
{
        json_t *o = json_pack("{s:{s:s, s:s}}", "metadata", "name", name, "namespace", ns);
        uint64_t version;

        if (!ns[0])
                json_object_del(json_object_get(o, "metadata"), "namespace");
        assert_int_equal(xp_store_create(f->store, kind, ns, name, o, &version, NULL), 0);
        json_decref(o);
        return version;
}

static uint64_t touch(struct fixture *f, const char *ns, const char *name)
{
        json_t *o = json_pack("{s:{s:s, s:s, s:{s:s}}}",
                              "metadata",
                              "name",
                              name,
                              "namespace",
                              ns,
                              "labels",
                              "touched",
                              "yes");
        uint64_t version;

        assert_int_equal(xp_store_update(f->store, "pods", ns, name, 0, o, &version, NULL), 0);
        json_decref(o);
        return version;
}

static void expect_lines(const struct seen *s, const char *const *want, size_t n)
{
        for (size_t i = 0; i < n && i < s->n; i++)
                assert_string_equal(s->lines[i], want[i]);
        assert_int_equal(s->n, n);
}

static void list_then_follow(void **state)
{
        struct fixture *f = *state;
        struct xp_error err = {0};
        char want[6][96];
        uint64_t n1, p1, p2, v;

        n1 = put(f, "nodes", "", "n1");
        p1 = put(f, "pods", "a", "p1");
        assert_int_equal(xp_informer_list(f->informer, &err), 0);
        snprintf(want[0], sizeof want[0], "add nodes n1 %" PRIu64, n1);
        snprintf(want[1], sizeof want[1], "add pods a/p1 %" PRIu64, p1);
        expect_lines(&f->seen, (const char *const[]){want[0], want[1]}, 2);
        assert_int_equal(xp_informer_position(f->informer), p1);
        assert_int_equal(xp_informer_sync(f->informer, &err), 0); /* nothing new */
        assert_int_equal(xp_informer_wait(f->informer, 0), 0);

        f->seen.n = 0;
        p2 = put(f, "pods", "b", "p2");
        v = touch(f, "a", "p1");
        put(f, "nodes", "", "n2");
        assert_int_equal(xp_informer_wait(f->informer, 1000), 1);
        assert_int_equal(xp_store_delete(f->store, "pods", "b", "p2", 0, NULL, NULL, NULL), 0);
        assert_int_equal(xp_informer_sync(f->informer, &err), 1);
        /* kinds in the handlers' order, each kind's events in the order written */
        snprintf(want[0], sizeof want[0], "add nodes n2 %" PRIu64, v + 1);
        snprintf(want[1], sizeof want[1], "add pods b/p2 %" PRIu64, p2);
        snprintf(want[2], sizeof want[2], "update pods a/p1 %" PRIu64, v);
        snprintf(want[3], sizeof want[3], "delete pods b/p2 %" PRIu64, v + 2);
        expect_lines(&f->seen, (const char *const[]){want[0], want[1], want[2], want[3]}, 4);
        assert_int_equal(xp_informer_position(f->informer), v + 2);
        assert_int_equal(xp_informer_wait(f->informer, 0), 0);
        assert_int_equal(f->seen.resets, 0);
}

static void missing_callbacks_are_skipped(void **state)
{
        struct fixture *f = *state;
        struct xp_error err = {0};

        assert_int_equal(xp_informer_list(f->informer, &err), 0);
        put(f, "nodes", "", "n1");
        assert_int_equal(xp_store_delete(f->store, "nodes", "", "n1", 0, NULL, NULL, NULL), 0);
        /* read, but nodes have no delete callback */
        assert_int_equal(xp_informer_sync(f->informer, &err), 1);
        assert_int_equal(f->seen.n, 1);
        assert_non_null(strstr(f->seen.lines[0], "add nodes n1"));
}

static void relist_when_the_log_moved_past(void **state)
{
        struct fixture *f = *state;
        struct xp_error err = {0};
        char name[16];

        put(f, "pods", "a", "old");
        assert_int_equal(xp_informer_list(f->informer, &err), 0);
        assert_int_equal(xp_store_delete(f->store, "pods", "a", "old", 0, NULL, NULL, NULL), 0);
        /* more writes than the log keeps: the deletion above is no longer in it */
        for (int i = 0; i < 3 * HISTORY; i++) {
                snprintf(name, sizeof name, "n%d", i);
                put(f, "nodes", "", name);
        }
        assert_int_equal(xp_informer_sync(f->informer, &err), 2);
        assert_int_equal(f->seen.resets, 1);
        /* everything again, as adds; the deleted pod is not among them */
        assert_int_equal(f->seen.n, 3 * HISTORY);
        for (size_t i = 0; i < f->seen.n; i++)
                assert_non_null(strstr(f->seen.lines[i], "add nodes"));
        assert_int_equal(xp_informer_position(f->informer), xp_store_version(f->store));
        assert_int_equal(xp_informer_sync(f->informer, &err), 0);
}

static void bad_options(void **state)
{
        struct xp_informer_options none = {0};
        struct xp_informer *informer = NULL;

        (void)state;
        assert_int_equal(xp_informer_new(&none, &informer), -EINVAL);
        assert_null(informer);
        xp_informer_free(NULL);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test_setup_teardown(list_then_follow, setup, teardown),
            cmocka_unit_test_setup_teardown(missing_callbacks_are_skipped, setup, teardown),
            cmocka_unit_test_setup_teardown(relist_when_the_log_moved_past, setup, teardown),
            cmocka_unit_test(bad_options),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
