/* SPDX-License-Identifier: Apache-2.0 */
/* The namespace-level controller's queue (src/controller/nsqueue.h): which objects make their
 * namespace synced, anchors (a controller's own kind) and the objects that depend on them. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "controller/nsqueue.h"
#include "registry_fixture.h"
#include "xpool/doc.h"
#include "xpool/macro.h"

/* The namespaces synced, in order, joined by spaces. */
static char synced[1024];

static int record_sync(void *userdata, const char *ns, int64_t *recheck, struct xp_error *err)
{
        (void)userdata;
        (void)recheck;
        (void)err;
        snprintf(synced + strlen(synced), sizeof synced - strlen(synced), "%s ", ns);
        return 0;
}

/* A "configmaps" object is an anchor when it carries data. */
static bool has_data(const json_t *object)
{
        return xp_json_at(object, "data") != NULL;
}

static const struct xp_informer_handler followed[] = {
    {.resource = "configmaps",
     .add = xp_nsqueue_anchor,
     .update = xp_nsqueue_anchor,
     .delete = xp_nsqueue_anchor_deleted},
    {.resource = "pods",
     .add = xp_nsqueue_dependent,
     .update = xp_nsqueue_dependent,
     .delete = xp_nsqueue_dependent},
    {.resource = "secrets", .add = xp_nsqueue_object, .update = xp_nsqueue_object},
};

static const struct xp_nsqueue_ops ops = {
    .name = "test",
    .handlers = followed,
    .n_handlers = XP_ELEMENTSOF(followed),
    .sync = record_sync,
    .anchor = has_data,
};

static void put_object(struct registry_fixture *f,
                       const char *kind,
                       const char *ns,
                       const char *name,
                       const char *extra)
{
        fixture_put_text(f,
                         kind,
                         ns,
                         name,
                         "{\"metadata\": {\"name\": \"%s\", \"namespace\": \"%s\"}%s}",
                         name,
                         ns,
                         extra);
}

/* Runs the informer and the queue, and returns what was synced (then forgotten). */
static const char *step(struct xp_nsqueue *q)
{
        static char seen[sizeof synced];
        struct xp_error err = {0};

        synced[0] = '\0';
        assert_int_equal(xp_nsqueue_step(q, &err), 0);
        memcpy(seen, synced, sizeof seen);
        return seen;
}

static void
delete_object(struct registry_fixture *f, const char *kind, const char *ns, const char *name)
{
        struct xp_error err = {0};

        assert_int_equal(xp_store_delete(f->store, kind, ns, name, 0, NULL, NULL, &err), 0);
}

static void dependents_wait_for_an_anchor(void **state)
{
        struct registry_fixture f;
        struct xp_nsqueue *q = NULL;
        struct xp_error err = {0};

        (void)state;
        fixture_open(&f, "nsqueue", 0);
        put_object(&f, "configmaps", "a", "anchor", ", \"data\": {\"k\": \"v\"}");
        put_object(&f, "pods", "b", "p0", "");
        assert_int_equal(xp_nsqueue_new(f.registry, &ops, NULL, &q, &err), 0);
        /* listed: the anchor's namespace, not the pod's, which holds none */
        assert_string_equal(step(q), "a ");
        put_object(&f, "pods", "a", "p1", "");
        put_object(&f, "pods", "b", "p2", "");
        assert_string_equal(step(q), "a ");
        /* a plain object of the anchor kind (no data) is no anchor, but its change is synced */
        put_object(&f, "configmaps", "b", "plain", "");
        assert_string_equal(step(q), "b ");
        put_object(&f, "pods", "b", "p3", "");
        assert_string_equal(step(q), "");
        /* it turns into one: b's pods count from then on */
        put_object(&f, "configmaps", "b", "plain", ", \"data\": {}");
        put_object(&f, "pods", "b", "p4", "");
        assert_string_equal(step(q), "b ");
        /* a kind followed with xp_nsqueue_object counts everywhere */
        put_object(&f, "secrets", "c", "s", "");
        assert_string_equal(step(q), "c ");
        /* the anchor goes: its deletion is synced, its pods' changes no longer */
        delete_object(&f, "configmaps", "a", "anchor");
        assert_string_equal(step(q), "a ");
        delete_object(&f, "pods", "a", "p1");
        assert_string_equal(step(q), "");
        /* b held one anchor, updated twice: once uncounted, no anchor is left */
        put_object(&f, "configmaps", "b", "plain", "");
        assert_string_equal(step(q), "b ");
        delete_object(&f, "pods", "b", "p4");
        assert_string_equal(step(q), "");
        xp_nsqueue_free(q);
        fixture_close(&f);
}

/* Two anchors in a namespace: it keeps counting until both are gone. */
static void last_anchor_counts(void **state)
{
        struct registry_fixture f;
        struct xp_nsqueue *q = NULL;
        struct xp_error err = {0};

        (void)state;
        fixture_open(&f, "nsqueue", 0);
        assert_int_equal(xp_nsqueue_new(f.registry, &ops, NULL, &q, &err), 0);
        assert_string_equal(step(q), "");
        put_object(&f, "configmaps", "a", "one", ", \"data\": {}");
        put_object(&f, "configmaps", "a", "two", ", \"data\": {}");
        assert_string_equal(step(q), "a ");
        delete_object(&f, "configmaps", "a", "one");
        assert_string_equal(step(q), "a ");
        put_object(&f, "pods", "a", "p", "");
        assert_string_equal(step(q), "a ");
        delete_object(&f, "configmaps", "a", "two");
        assert_string_equal(step(q), "a ");
        delete_object(&f, "pods", "a", "p");
        assert_string_equal(step(q), "");
        xp_nsqueue_free(q);
        fixture_close(&f);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(dependents_wait_for_an_anchor),
            cmocka_unit_test(last_anchor_counts),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
