/* SPDX-License-Identifier: Apache-2.0 */
/* The ResourceQuota status controller (src/controller/quotastatus.c), step by step. */
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
#include "xpool/quotastatus.h"

static void put(struct registry_fixture *f, const char *kind, const char *text)
{
        json_error_t jerr;
        json_t *object = json_loads(text, 0, &jerr);
        struct xp_error err = {0};
        uint64_t version;

        if (!object)
                fail_msg("bad JSON: %s", jerr.text);
        if (xp_store_create(
                f->store,
                kind,
                "team",
                json_string_value(json_object_get(json_object_get(object, "metadata"), "name")),
                object,
                &version,
                &err) < 0)
                fail_msg("%s", err.msg);
        json_decref(object);
}

static void expect_used(struct registry_fixture *f, const char *want)
{
        json_t *quota = fixture_get(f, "resourcequotas", "team", "gpu");
        char *got = json_dumps(json_object_get(json_object_get(quota, "status"), "used"),
                               JSON_COMPACT | JSON_SORT_KEYS);

        if (!got || strcmp(got, want) != 0)
                fail_msg("status.used: got %s, want %s", got ? got : "(none)", want);
        free(got);
        json_decref(quota);
}

#define POD(name, phase)                                                                           \
        "{\"metadata\": {\"name\": \"" name                                                        \
        "\", \"namespace\": \"team\"}, \"spec\": {\"containers\":"                                 \
        " [{\"name\": \"c\", \"resources\": {\"requests\": {\"nvidia.com/gpu\": \"1\"}}}]},"       \
        " \"status\": {\"phase\": \"" phase "\"}}"

static void used_follows_the_pods(void **state)
{
        struct registry_fixture f;
        struct xp_quotastatus *c = NULL;
        struct xp_error err = {0};

        (void)state;
        fixture_open(&f, "quotastatus", 0);
        put(&f,
            "resourcequotas",
            "{\"metadata\": {\"name\": \"gpu\", \"namespace\": \"team\"}, \"spec\": {\"hard\":"
            " {\"requests.nvidia.com/gpu\": \"2\", \"pods\": \"5\"}}}");
        put(&f, "pods", POD("a", "Running"));
        assert_int_equal(xp_quotastatus_new(f.registry, &c, &err), 0);
        assert_int_equal(xp_quotastatus_step(c, &err), 0);
        expect_used(&f, "{\"pods\":\"1\",\"requests.nvidia.com/gpu\":\"1\"}");
        put(&f, "pods", POD("b", "Pending"));
        put(&f, "pods", POD("done", "Succeeded"));
        assert_int_equal(xp_quotastatus_step(c, &err), 0);
        expect_used(&f, "{\"pods\":\"2\",\"requests.nvidia.com/gpu\":\"2\"}");
        assert_int_equal(xp_store_delete(f.store, "pods", "team", "a", 0, NULL, NULL, &err), 0);
        assert_int_equal(xp_quotastatus_step(c, &err), 0);
        expect_used(&f, "{\"pods\":\"1\",\"requests.nvidia.com/gpu\":\"1\"}");
        xp_quotastatus_free(c);
        fixture_close(&f);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(used_follows_the_pods),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
