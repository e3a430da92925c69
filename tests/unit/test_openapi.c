/* SPDX-License-Identifier: Apache-2.0 */
/*
 * OpenAPI schemas generated from an API schema and its documentation (xpool/openapi.h,
 * xp_apischema_describe()): the shapes kubectl reads (allOf around a $ref in v3, a plain $ref in
 * v2), formats, required, the apply markers, the kinds' x-kubernetes-group-version-kind, and the
 * documentation's errors naming their line.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "xpool/apischema.h"
#include "xpool/openapi.h"

static const char text[] = "package io.example.v1\n"
                           "Thing\n"
                           "  kind        string\n"
                           "  size        int32\n"
                           "  parts       []Part map(name,protocol=TCP)\n"
                           "  tags        []string set\n"
                           "  labels      map[string] atomic\n"
                           "  ref         Ref\n"
                           "Part\n"
                           "  name        string\n"
                           "  protocol    string\n"
                           "Ref atomic\n"
                           "  name        string\n";

static const char docs[] = "# a comment\n"
                           "== Thing\n"
                           "A thing.\n"
                           "\n"
                           "Second paragraph.\n"
                           "== Thing.size required\n"
                           "How big it is,\n"
                           "in parts.\n"
                           "== Part.name required\n";

static struct xp_apischema *load(void)
{
        struct xp_apischema *schema = NULL;
        struct xp_error err = {0};

        if (xp_apischema_parse(text, strlen(text), &schema, &err) < 0 ||
            xp_apischema_describe(schema, docs, strlen(docs), &err) < 0)
                fail_msg("%s", err.msg);
        return schema;
}

static const struct xp_openapi_kind kinds[] = {
    {.type = "Thing", .group = "example.io", .version = "v1", .kind = "Thing"},
};

static json_t *schemas(const struct xp_apischema *schema, enum xp_openapi_version version)
{
        json_t *ret = NULL;

        assert_int_equal(xp_openapi_schemas(schema, version, kinds, 1, &ret), 0);
        return ret;
}

static char *dump(const json_t *v)
{
        return json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
}

static void expect_json(const json_t *v, const char *want)
{
        char *got = dump(v);

        if (!got || strcmp(got, want) != 0)
                fail_msg("got %s\nwant %s", got ? got : "(null)", want);
        free(got);
}

static void v3_shapes(void **state)
{
        struct xp_apischema *schema = load();
        json_t *all = schemas(schema, XP_OPENAPI_V3);
        const json_t *thing = json_object_get(all, "io.example.v1.Thing");
        const json_t *props = json_object_get(thing, "properties");

        (void)state;
        assert_non_null(thing);
        assert_string_equal(json_string_value(json_object_get(thing, "description")),
                            "A thing.\n\nSecond paragraph.");
        expect_json(json_object_get(thing, "required"), "[\"size\"]");
        expect_json(json_object_get(thing, "x-kubernetes-group-version-kind"),
                    "[{\"group\":\"example.io\",\"kind\":\"Thing\",\"version\":\"v1\"}]");
        expect_json(
            json_object_get(props, "size"),
            "{\"description\":\"How big it is, in parts.\",\"format\":\"int32\",\"type\":\"integer\"}");
        expect_json(
            json_object_get(props, "parts"),
            "{\"items\":{\"allOf\":[{\"$ref\":\"#/components/schemas/io.example.v1.Part\"}]},"
            "\"type\":\"array\",\"x-kubernetes-list-map-keys\":[\"name\",\"protocol\"],"
            "\"x-kubernetes-list-type\":\"map\"}");
        expect_json(
            json_object_get(props, "tags"),
            "{\"items\":{\"type\":\"string\"},\"type\":\"array\",\"x-kubernetes-list-type\":\"set\"}");
        expect_json(json_object_get(props, "labels"),
                    "{\"additionalProperties\":{\"type\":\"string\"},\"type\":\"object\","
                    "\"x-kubernetes-map-type\":\"atomic\"}");
        expect_json(
            json_object_get(json_object_get(all, "io.example.v1.Ref"), "x-kubernetes-map-type"),
            "\"atomic\"");
        expect_json(json_object_get(json_object_get(all, "io.example.v1.Part"), "required"),
                    "[\"name\"]");
        json_decref(all);
        xp_apischema_free(schema);
}

static void v2_refs_are_plain(void **state)
{
        struct xp_apischema *schema = load();
        json_t *all = schemas(schema, XP_OPENAPI_V2);
        const json_t *props =
            json_object_get(json_object_get(all, "io.example.v1.Thing"), "properties");

        (void)state;
        expect_json(json_object_get(props, "ref"),
                    "{\"$ref\":\"#/definitions/io.example.v1.Ref\"}");
        json_decref(all);
        xp_apischema_free(schema);
}

static void bad_docs_name_their_line(void **state)
{
        static const struct {
                const char *docs, *error;
        } cases[] = {
            {"== Nope\nx\n", "line 1: unknown type \"Nope\""},
            {"== Thing.nope\nx\n", "line 1: Thing has no field \"nope\""},
            {"== Thing\nx\n== Thing\ny\n", "line 3: described twice"},
            {"== Thing required\n", "line 1: expected \"== Type\" or \"== Type.field [required]\""},
            {"text first\n", "text before the first \"==\" line"},
        };

        (void)state;
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                struct xp_apischema *schema = NULL;
                struct xp_error err = {0};

                assert_int_equal(xp_apischema_parse(text, strlen(text), &schema, &err), 0);
                assert_int_equal(
                    xp_apischema_describe(schema, cases[i].docs, strlen(cases[i].docs), &err),
                    -EINVAL);
                assert_string_equal(err.msg, cases[i].error);
                xp_apischema_free(schema);
        }
}

/* The built-in schema's documents: every kind served, with its description. */
static void builtin_documents(void **state)
{
        static const struct xp_openapi_kind pod[] = {
            {.type = "Pod", .group = "", .version = "v1", .kind = "Pod"},
        };
        const struct xp_apischema *schema = NULL;
        struct xp_error err = {0};
        json_t *all = NULL;
        const json_t *container;

        (void)state;
        assert_int_equal(xp_apischema_builtin(&schema, &err), 0);
        assert_int_equal(xp_openapi_schemas(schema, XP_OPENAPI_V3, pod, 1, &all), 0);
        container = json_object_get(all, "io.k8s.api.core.v1.Container");
        expect_json(json_object_get(container, "required"), "[\"name\"]");
        assert_non_null(json_object_get(all, "io.k8s.apimachinery.pkg.api.resource.Quantity"));
        assert_non_null(json_object_get(all, "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"));
        json_decref(all);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(v3_shapes),
            cmocka_unit_test(v2_refs_are_plain),
            cmocka_unit_test(bad_docs_name_their_line),
            cmocka_unit_test(builtin_documents),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
