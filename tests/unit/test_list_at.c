/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "registry_fixture.h"

static uint64_t put(struct registry_fixture *f, const char *ns, const char *name, const char *v)
{
        json_t *o =
            json_pack("{s:{s:s, s:s}, s:s}", "metadata", "name", name, "namespace", ns, "v", v);
        uint64_t version = 0;

        assert_non_null(o);
        if (xp_store_create(f->store, "pods", ns, name, o, &version, NULL) == -EEXIST)
                assert_int_equal(xp_store_update(f->store, "pods", ns, name, 0, o, &version, NULL),
                                 0);
        json_decref(o);
        return version;
}

/* "ns/name=v ..." of a list. */
static void expect_items(const json_t *items, const char *want)
{
        char got[512] = "";
        const json_t *item;
        size_t i;

        json_array_foreach(items, i, item)
        {
                const json_t *meta = json_object_get(item, "metadata");
                size_t used = strlen(got);

                snprintf(got + used,
                         sizeof(got) - used,
                         "%s%s/%s=%s",
                         i ? " " : "",
                         json_string_value(json_object_get(meta, "namespace")),
                         json_string_value(json_object_get(meta, "name")),
                         json_string_value(json_object_get(item, "v")));
        }
        assert_string_equal(got, want);
}

static void a_list_as_it_was(void **state)
{
        struct registry_fixture f;
        struct xp_error err = {0};
        json_t *items = NULL;
        uint64_t at, version;

        (void)state;
        fixture_open(&f, "list-at", 0);
        put(&f, "a", "p1", "1");
        put(&f, "a", "p2", "1");
        at = put(&f, "b", "p3", "1");
        /* after the snapshot: one changed, one deleted, one created, another namespace written */
        put(&f, "a", "p1", "2");
        assert_int_equal(xp_store_delete(f.store, "pods", "a", "p2", 0, NULL, &version, NULL), 0);
        put(&f, "a", "p0", "1");
        put(&f, "b", "p3", "2");

        assert_int_equal(xp_registry_list_at(f.store, "pods", "a", at, &items, &version, &err), 0);
        assert_int_equal(version, at);
        expect_items(items, "a/p1=1 a/p2=1");
        json_decref(items);
        assert_int_equal(xp_registry_list_at(f.store, "pods", NULL, at, &items, &version, &err), 0);
        expect_items(items, "a/p1=1 a/p2=1 b/p3=1");
        json_decref(items);
        /* 0, or now: the current list */
        assert_int_equal(xp_registry_list_at(f.store, "pods", NULL, 0, &items, &version, &err), 0);
        assert_int_equal(version, xp_store_version(f.store));
        expect_items(items, "a/p0=1 a/p1=2 b/p3=2");
        json_decref(items);
        fixture_close(&f);
}

static void older_than_the_log_is_expired(void **state)
{
        struct registry_fixture f;
        struct xp_error err = {0};
        json_t *items = NULL;
        uint64_t at, version;

        (void)state;
        fixture_open(&f, "list-at-expired", 16);
        at = put(&f, "a", "p1", "1");
        for (int i = 0; i < 40; i++)
                put(&f, "a", "p1", i % 2 ? "odd" : "even");
        assert_int_equal(xp_registry_list_at(f.store, "pods", "a", at, &items, &version, &err),
                         -XP_STORE_EXPIRED);
        assert_non_null(strstr(err.msg, "no longer"));
        fixture_close(&f);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(a_list_as_it_was),
            cmocka_unit_test(older_than_the_log_is_expired),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
