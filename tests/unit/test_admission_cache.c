/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The caches under pod admission: the store's per-kind write marks (src/store/generation.c) and
 * the registry's ResourceQuota and LimitRange lists by namespace (src/registry/kind_cache.c).
 * Admission must see every create, update and delete of a quota or range at the next pod.
 */
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
#include "xpool/doc.h"

static json_t *named(const char *name, json_t *spec)
{
        return json_pack("{s:{s:s}, s:o}", "metadata", "name", name, "spec", spec);
}

static void put(struct registry_fixture *f, const char *kind, const char *ns, json_t *object)
{
        const char *name = xp_json_str_at(object, "metadata.name", "");
        struct xp_error err = {0};
        uint64_t version;
        int r = xp_store_update(f->store, kind, ns, name, 0, object, &version, &err);

        if (r == -ENOENT)
                r = xp_store_create(f->store, kind, ns, name, object, &version, &err);
        if (r < 0)
                fail_msg("writing %s %s/%s: %s", kind, ns, name, err.msg);
        json_decref(object);
}

static void drop(struct registry_fixture *f, const char *kind, const char *ns, const char *name)
{
        struct xp_error err = {0};
        uint64_t version;

        if (xp_store_delete(f->store, kind, ns, name, 0, NULL, &version, &err) < 0)
                fail_msg("deleting %s %s/%s: %s", kind, ns, name, err.msg);
}

static json_t *pod_asking(const char *cpu)
{
        return json_pack("{s:{s:s}, s:{s:[{s:s, s:{s:{s:s}}}]}}",
                         "metadata",
                         "name",
                         "p",
                         "spec",
                         "containers",
                         "name",
                         "c",
                         "resources",
                         "requests",
                         "cpu",
                         cpu);
}

/* xp_registry_quota_admit() of a pod asking for cpu in ns. */
static int admit(struct registry_fixture *f, const char *ns, const char *cpu)
{
        json_t *pod = pod_asking(cpu);
        struct xp_error err = {0};
        int r = xp_registry_quota_admit(f->registry, ns, pod, &err);

        json_decref(pod);
        return r;
}

static json_t *cpu_quota(const char *hard)
{
        return named("q", json_pack("{s:{s:s}}", "hard", "requests.cpu", hard));
}

static void quota_cache_follows_writes(void **state)
{
        struct registry_fixture f;

        (void)state;
        fixture_open(&f, "quota-cache", 0);
        assert_int_equal(admit(&f, "a", "500m"), 0); /* kept: no quota in a */
        put(&f, "resourcequotas", "a", cpu_quota("100m"));
        assert_int_equal(admit(&f, "a", "500m"), -EDQUOT);
        assert_int_equal(admit(&f, "b", "500m"), 0); /* another namespace's quota */
        put(&f, "resourcequotas", "a", cpu_quota("10"));
        assert_int_equal(admit(&f, "a", "500m"), 0);
        put(&f, "resourcequotas", "a", cpu_quota("100m"));
        assert_int_equal(admit(&f, "a", "500m"), -EDQUOT);
        drop(&f, "resourcequotas", "a", "q");
        assert_int_equal(admit(&f, "a", "500m"), 0);
        /* a quota in b, read after a's answer was kept: each namespace sees only its own */
        put(&f, "resourcequotas", "b", cpu_quota("100m"));
        assert_int_equal(admit(&f, "a", "500m"), 0);
        assert_int_equal(admit(&f, "b", "500m"), -EDQUOT);
        fixture_close(&f);
}

/* The cpu limit LimitRange admission gives a pod without one in ns ("" for none). */
static char *defaulted_limit(struct registry_fixture *f, const char *ns)
{
        json_t *pod = pod_asking("100m");
        struct xp_error err = {0};
        char *limit;

        if (xp_registry_limitrange_admit(f->registry, ns, pod, &err) < 0)
                fail_msg("limitrange admission in %s: %s", ns, err.msg);
        limit = strdup(xp_json_str_at(
            json_array_get(xp_json_at(pod, "spec.containers"), 0), "resources.limits.cpu", ""));
        json_decref(pod);
        return limit;
}

static json_t *default_limit(const char *cpu)
{
        return named(
            "lr",
            json_pack(
                "{s:[{s:s, s:{s:s}}]}", "limits", "type", "Container", "default", "cpu", cpu));
}

static void expect_limit(struct registry_fixture *f, const char *ns, const char *want)
{
        char *got = defaulted_limit(f, ns);

        assert_string_equal(got, want);
        free(got);
}

static void limitrange_cache_follows_writes(void **state)
{
        struct registry_fixture f;

        (void)state;
        fixture_open(&f, "limitrange-cache", 0);
        expect_limit(&f, "a", "");
        put(&f, "limitranges", "a", default_limit("500m"));
        expect_limit(&f, "a", "500m");
        expect_limit(&f, "b", "");
        put(&f, "limitranges", "a", default_limit("300m"));
        expect_limit(&f, "a", "300m");
        expect_limit(&f, "a", "300m"); /* from the cache, and not changed by the first pod */
        drop(&f, "limitranges", "a", "lr");
        expect_limit(&f, "a", "");
        fixture_close(&f);
}

static void kind_marks_move_with_their_kind(void **state)
{
        struct registry_fixture f;
        uint64_t before, pods_before;

        (void)state;
        fixture_open(&f, "kind-marks", 0);
        before = xp_store_kind_generation(f.store, "limitranges");
        put(&f, "limitranges", "a", default_limit("1"));
        assert_int_not_equal(xp_store_kind_generation(f.store, "limitranges"), before);
        before = xp_store_kind_generation(f.store, "limitranges");
        pods_before = xp_store_kind_generation(f.store, "pods");
        put(&f, "pods", "a", pod_asking("1"));
        assert_int_equal(xp_store_kind_generation(f.store, "limitranges"), before);
        assert_int_not_equal(xp_store_kind_generation(f.store, "pods"), pods_before);
        drop(&f, "limitranges", "a", "lr");
        assert_int_not_equal(xp_store_kind_generation(f.store, "limitranges"), before);

        /* more kinds than slots: a kind without one still sees its writes */
        for (int i = 0; i < 40; i++) {
                char kind[32];

                snprintf(kind, sizeof(kind), "kind%d", i);
                before = xp_store_kind_generation(f.store, kind);
                put(&f, kind, "", named("x", json_object()));
                assert_int_not_equal(xp_store_kind_generation(f.store, kind), before);
        }
        fixture_close(&f);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(quota_cache_follows_writes),
            cmocka_unit_test(limitrange_cache_follows_writes),
            cmocka_unit_test(kind_marks_move_with_their_kind),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
