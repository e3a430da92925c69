/* SPDX-License-Identifier: Apache-2.0 */
/* The ServiceAccount `default` and ConfigMap kube-root-ca.crt controller (xpool/serviceaccounts.h),
 * stepped without its thread over a store of the test's. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "registry_fixture.h"

#include "xpool/doc.h"
#include "xpool/serviceaccounts.h"

#define CA "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"

struct state {
        struct registry_fixture f;
        struct xp_serviceaccounts *c;
};

static int setup(void **state)
{
        struct state *s = calloc(1, sizeof(*s));

        assert_non_null(s);
        fixture_open(&s->f, "serviceaccounts", 0);
        *state = s;
        return 0;
}

static int teardown(void **state)
{
        struct state *s = *state;

        xp_serviceaccounts_free(s->c);
        fixture_close(&s->f);
        free(s);
        return 0;
}

static void put_namespace(struct state *s, const char *name, bool terminating)
{
        fixture_put_text(
            &s->f,
            "namespaces",
            "",
            name,
            "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"%s\"%s},"
            "\"status\":{\"phase\":\"%s\"}}",
            name,
            terminating ? ",\"deletionTimestamp\":\"2027-01-15T08:00:00Z\"" : "",
            terminating ? "Terminating" : "Active");
}

static void step(struct state *s)
{
        struct xp_error err = {0};

        if (xp_serviceaccounts_step(s->c, &err) < 0)
                fail_msg("step: %s", err.msg);
}

static const char *ca_of(struct state *s, const char *ns, json_t **hold)
{
        *hold = fixture_get(&s->f, "configmaps", ns, XP_ROOT_CA_CONFIGMAP);
        return *hold ? json_string_value(json_object_get(json_object_get(*hold, "data"), "ca.crt"))
                     : NULL;
}

static void every_namespace_gets_both(void **state)
{
        struct state *s = *state;
        struct xp_error err = {0};
        json_t *account, *cm = NULL;

        put_namespace(s, "a", false);
        put_namespace(s, "gone", true);
        assert_int_equal(xp_serviceaccounts_new(s->f.registry, CA, &s->c, &err), 0);
        step(s);
        account = fixture_get(&s->f, "serviceaccounts", "a", "default");
        assert_non_null(account);
        assert_non_null(xp_json_str_at(account, "metadata.uid", NULL));
        json_decref(account);
        assert_string_equal(ca_of(s, "a", &cm), CA);
        json_decref(cm);
        /* a namespace being deleted gets nothing */
        assert_null(fixture_get(&s->f, "serviceaccounts", "gone", "default"));
        assert_null(fixture_get(&s->f, "configmaps", "gone", XP_ROOT_CA_CONFIGMAP));
        /* a namespace added later */
        put_namespace(s, "b", false);
        step(s);
        account = fixture_get(&s->f, "serviceaccounts", "b", "default");
        assert_non_null(account);
        json_decref(account);
}

static void deleted_or_changed_they_come_back(void **state)
{
        struct state *s = *state;
        struct xp_error err = {0};
        json_t *account, *cm = NULL;

        put_namespace(s, "a", false);
        assert_int_equal(xp_serviceaccounts_new(s->f.registry, CA, &s->c, &err), 0);
        step(s);
        assert_int_equal(
            xp_store_delete(s->f.store, "serviceaccounts", "a", "default", 0, NULL, NULL, NULL), 0);
        fixture_put_text(&s->f,
                         "configmaps",
                         "a",
                         XP_ROOT_CA_CONFIGMAP,
                         "{\"metadata\":{\"name\":\"" XP_ROOT_CA_CONFIGMAP
                         "\",\"namespace\":\"a\"},\"data\":{\"ca.crt\":\"x\",\"other\":\"y\"}}");
        step(s);
        account = fixture_get(&s->f, "serviceaccounts", "a", "default");
        assert_non_null(account);
        json_decref(account);
        assert_string_equal(ca_of(s, "a", &cm), CA);
        assert_string_equal(
            json_string_value(json_object_get(json_object_get(cm, "data"), "other")), "y");
        json_decref(cm);
}

static void no_ca_no_configmap(void **state)
{
        struct state *s = *state;
        struct xp_error err = {0};
        json_t *account;

        put_namespace(s, "a", false);
        assert_int_equal(xp_serviceaccounts_new(s->f.registry, NULL, &s->c, &err), 0);
        step(s);
        account = fixture_get(&s->f, "serviceaccounts", "a", "default");
        assert_non_null(account);
        json_decref(account);
        assert_null(fixture_get(&s->f, "configmaps", "a", XP_ROOT_CA_CONFIGMAP));
        /* the admission's own call finds it there: nothing more */
        assert_int_equal(xp_serviceaccount_default_ensure(s->f.registry, "a", &err), 0);
        assert_int_equal(xp_serviceaccount_default_ensure(s->f.registry, "nope", &err), -ENOENT);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test_setup_teardown(every_namespace_gets_both, setup, teardown),
            cmocka_unit_test_setup_teardown(deleted_or_changed_they_come_back, setup, teardown),
            cmocka_unit_test_setup_teardown(no_ca_no_configmap, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
