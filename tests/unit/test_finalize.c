/* SPDX-License-Identifier: Apache-2.0 */
/* Finalizers (src/registry/finalize.c, pod.c) on a temporary store: marks, removals, words. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "registry_fixture.h"

static int setup(void **state)
{
        struct registry_fixture *f = calloc(1, sizeof *f);

        assert_non_null(f);
        fixture_open(f, "finalize", 0);
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        fixture_close(*state);
        free(*state);
        return 0;
}

static json_t *load(const char *text)
{
        json_error_t jerr;
        json_t *j = json_loads(text, 0, &jerr);

        if (!j)
                fail_msg("bad test JSON at %d:%d: %s", jerr.line, jerr.column, jerr.text);
        return j;
}

static const char *meta_str(const json_t *j, const char *key)
{
        return json_string_value(json_object_get(json_object_get(j, "metadata"), key));
}

static json_int_t meta_int(const json_t *j, const char *key)
{
        return json_integer_value(json_object_get(json_object_get(j, "metadata"), key));
}

static void marks_once(void **state)
{
        json_t *cm =
            load("{\"metadata\":{\"name\":\"a\",\"generation\":3,\"finalizers\":[\"x/y\"]}}");

        (void)state;
        assert_int_equal(xp_registry_mark_deleting(cm, 1800000000), 1);
        assert_string_equal(meta_str(cm, "deletionTimestamp"), "2027-01-15T08:00:00Z");
        assert_int_equal(meta_int(cm, "deletionGracePeriodSeconds"), 0);
        assert_int_equal(meta_int(cm, "generation"), 4);
        /* a second mark changes nothing: the earlier moment stays, generation too */
        assert_int_equal(xp_registry_mark_deleting(cm, 1800000100), 0);
        assert_string_equal(meta_str(cm, "deletionTimestamp"), "2027-01-15T08:00:00Z");
        assert_int_equal(meta_int(cm, "generation"), 4);
        json_decref(cm);

        /* a graceful mark's later moment is brought forward, the grace to 0 */
        cm = load("{\"metadata\":{\"name\":\"p\",\"deletionTimestamp\":\"2027-01-15T08:00:30Z\","
                  "\"deletionGracePeriodSeconds\":30}}");
        assert_int_equal(xp_registry_mark_deleting(cm, 1800000000), 1);
        assert_string_equal(meta_str(cm, "deletionTimestamp"), "2027-01-15T08:00:00Z");
        assert_int_equal(meta_int(cm, "deletionGracePeriodSeconds"), 0);
        json_decref(cm);
}

static void update_removes_only_when_due(void **state)
{
        json_t *due = load("{\"metadata\":{\"deletionTimestamp\":\"2027-01-15T08:00:00Z\","
                           "\"deletionGracePeriodSeconds\":0}}");
        json_t *held = load("{\"metadata\":{\"deletionTimestamp\":\"2027-01-15T08:00:00Z\","
                            "\"deletionGracePeriodSeconds\":0,\"finalizers\":[\"x/y\"]}}");
        json_t *grace = load("{\"metadata\":{\"deletionTimestamp\":\"2027-01-15T08:00:30Z\","
                             "\"deletionGracePeriodSeconds\":30}}");
        json_t *ns = load("{\"metadata\":{\"deletionTimestamp\":\"2027-01-15T08:00:00Z\"}}");
        json_t *live = load("{\"metadata\":{\"name\":\"a\"}}");

        (void)state;
        assert_true(xp_registry_update_removes(due));
        assert_false(xp_registry_update_removes(held));
        assert_false(xp_registry_update_removes(grace));
        assert_false(xp_registry_update_removes(ns)); /* a namespace: its contents decide */
        assert_false(xp_registry_update_removes(live));
        json_decref(due);
        json_decref(held);
        json_decref(grace);
        json_decref(ns);
        json_decref(live);
}

static void no_new_finalizers_once_deleting(void **state)
{
        json_t *old = load("{\"metadata\":{\"deletionTimestamp\":\"2027-01-15T08:00:00Z\","
                           "\"finalizers\":[\"x/hold\"]}}");
        json_t *fewer = load("{\"metadata\":{}}");
        json_t *more = load("{\"metadata\":{\"finalizers\":[\"x/hold\",\"x/b\",\"x/a\",\"x/b\"]}}");
        json_t *alive = load("{\"metadata\":{\"finalizers\":[\"x/hold\"]}}");
        struct xp_error err = {0};

        (void)state;
        assert_int_equal(xp_registry_finalizers_check(old, fewer, &err), 0);
        assert_int_equal(xp_registry_finalizers_check(old, old, &err), 0);
        /* an object not deleting may take any */
        assert_int_equal(xp_registry_finalizers_check(alive, more, &err), 0);
        assert_int_equal(xp_registry_finalizers_check(old, more, &err), -EINVAL);
        /* kube's sets.List: sorted, each once */
        assert_string_equal(
            err.msg,
            "metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{\"x/a\", \"x/b\"}");
        json_decref(old);
        json_decref(fewer);
        json_decref(more);
        json_decref(alive);
}

static void delete_marks_or_removes(void **state)
{
        struct registry_fixture *f = *state;
        struct xp_error err = {0};
        json_t *last = NULL, *now = NULL;

        fixture_put(f,
                    "configmaps",
                    "default",
                    "held",
                    load("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":"
                         "\"held\",\"namespace\":\"default\",\"finalizers\":[\"x/y\"]}}"));
        fixture_put(f,
                    "configmaps",
                    "default",
                    "free",
                    load("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":"
                         "\"free\",\"namespace\":\"default\"}}"));
        assert_int_equal(
            xp_registry_delete(f->registry, "configmaps", "default", "held", 0, &last, &err), 0);
        assert_non_null(meta_str(last, "deletionTimestamp"));
        json_decref(last);
        assert_int_equal(xp_store_get(f->store, "configmaps", "default", "held", &now, NULL, &err),
                         0);
        assert_int_equal(meta_int(now, "deletionGracePeriodSeconds"), 0);
        json_decref(now);
        /* a stale expected version is a conflict, and changes nothing */
        assert_int_equal(
            xp_registry_delete(f->registry, "configmaps", "default", "free", 99999, NULL, &err),
            -ESTALE);
        assert_int_equal(
            xp_registry_delete(f->registry, "configmaps", "default", "free", 0, &last, &err), 1);
        assert_string_equal(meta_str(last, "name"), "free");
        json_decref(last);
        assert_int_equal(xp_store_get(f->store, "configmaps", "default", "free", &now, NULL, &err),
                         -ENOENT);
}

static void pod_due_is_held(void **state)
{
        struct registry_fixture *f = *state;
        struct xp_registry_delete_options options = {0};
        struct xp_error err = {0};
        json_t *pod = NULL;
        bool removed = true;

        /* unbound: due at once, but its finalizer holds it */
        fixture_put(f,
                    "pods",
                    "default",
                    "p",
                    load("{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\","
                         "\"namespace\":\"default\",\"finalizers\":[\"x/y\"]},\"spec\":{"
                         "\"containers\":[{\"name\":\"c\",\"image\":\"i\"}]}}"));
        assert_int_equal(
            xp_registry_pod_delete(f->registry, "default", "p", &options, &pod, &removed, &err), 0);
        assert_false(removed);
        assert_int_equal(meta_int(pod, "deletionGracePeriodSeconds"), 0);
        assert_non_null(meta_str(pod, "deletionTimestamp"));
        json_decref(pod);
        assert_int_equal(xp_store_get(f->store, "pods", "default", "p", &pod, NULL, &err), 0);
        json_decref(pod);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(marks_once),
            cmocka_unit_test(update_removes_only_when_due),
            cmocka_unit_test(no_new_finalizers_once_deleting),
            cmocka_unit_test_setup_teardown(delete_marks_or_removes, setup, teardown),
            cmocka_unit_test_setup_teardown(pod_due_is_held, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
