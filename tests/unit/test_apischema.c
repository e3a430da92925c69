/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The API schema (src/core/apischema.txt): the reader, the check of every kind of value, the
 * bound on nesting, the codec running the check on every Pod and Node, and the schema agreeing
 * with what the codec models.
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

#include "core/schema.h"
#include "xpool/apischema.h"
#include "xpool/codec.h"
#include "xpool/manifest.h"

#define DATA XPOOL_TEST_DATA "/manifests/"

/* One field of every kind, and a type inside, for the check's tests. */
static const char test_schema[] = "package test\n"
                                  "\n"
                                  "T   # comments go anywhere\n"
                                  "  s  string\n"
                                  "  b  bool\n"
                                  "  i  int32\n"
                                  "  l  int64\n"
                                  "  d  double\n"
                                  "  q  quantity\n"
                                  "  p  int-or-string\n"
                                  "  t  time\n"
                                  "  m  microtime\n"
                                  "  o  object\n"
                                  "  ss []string\n"
                                  "  mq map[quantity]\n"
                                  "  lu []U\n"
                                  "  ml map[[]int32]\n"
                                  "  self T\n"
                                  "  ...Base\n"
                                  "U\n"
                                  "  x int32\n"
                                  "package test.base\n"
                                  "Base\n"
                                  "  inherited bool\n";

static struct xp_apischema *parse_test_schema(void)
{
        struct xp_apischema *schema = NULL;
        struct xp_error err = {0};

        if (xp_apischema_parse(test_schema, strlen(test_schema), &schema, &err) < 0)
                fail_msg("%s", err.msg);
        return schema;
}

/* Checks JSON text against type T of the test schema: 0, or the error's code with *msg set. */
static int check_text(const char *text, unsigned flags, char msg[static XP_ERROR_MSG_MAX])
{
        struct xp_apischema *schema = parse_test_schema();
        struct xp_error err = {0};
        json_t *json = json_loads(text, 0, NULL);
        int r;

        assert_non_null(json);
        r = xp_apischema_check(xp_apischema_find(schema, "T"), json, flags, &err);
        snprintf(msg, XP_ERROR_MSG_MAX, "%s", err.msg);
        json_decref(json);
        xp_apischema_free(schema);
        return r;
}

static void passes(const char *text)
{
        char msg[XP_ERROR_MSG_MAX];

        if (check_text(text, 0, msg) != 0)
                fail_msg("%s: %s", text, msg);
}

static void fails(const char *text, int code, const char *expected)
{
        char msg[XP_ERROR_MSG_MAX];
        int r = check_text(text, 0, msg);

        if (r != code || strcmp(msg, expected) != 0)
                fail_msg("%s: got %d \"%s\"\n  expected %d \"%s\"", text, r, msg, code, expected);
}

static void reads_the_syntax(void **state)
{
        struct xp_apischema *schema = parse_test_schema();
        const struct xp_apitype *t = xp_apischema_find(schema, "T");
        const struct xp_apifield *f;

        (void)state;
        assert_int_equal(xp_apischema_count(schema), 3);
        assert_string_equal(xp_apischema_type(schema, 0)->name, "T");
        assert_string_equal(xp_apischema_type(schema, 2)->name, "Base");
        assert_null(xp_apischema_type(schema, 3));
        assert_null(xp_apischema_find(schema, "Nope"));
        assert_string_equal(t->package, "test");
        assert_string_equal(xp_apischema_find(schema, "Base")->package, "test.base");
        /* fields in source order, the inlined one last where it was inlined */
        assert_int_equal(t->n_fields, 16);
        assert_string_equal(t->fields[0].name, "s");
        assert_string_equal(t->fields[15].name, "inherited");
        assert_int_equal(xp_apitype_field(t, "p")->value->kind, XP_APIVALUE_INT_OR_STRING);
        f = xp_apitype_field(t, "ml");
        assert_int_equal(f->value->kind, XP_APIVALUE_MAP);
        assert_int_equal(f->value->element->kind, XP_APIVALUE_LIST);
        assert_int_equal(f->value->element->element->kind, XP_APIVALUE_INT32);
        f = xp_apitype_field(t, "lu");
        assert_ptr_equal(f->value->element->type, xp_apischema_find(schema, "U"));
        assert_ptr_equal(xp_apitype_field(t, "self")->value->type, t);
        assert_null(xp_apitype_field(t, "x"));
        assert_string_equal(xp_apivalue_kind_to_string(XP_APIVALUE_INT_OR_STRING), "int-or-string");
        assert_string_equal(xp_apivalue_kind_to_string(XP_APIVALUE_LIST), "");
        xp_apischema_free(schema);
        xp_apischema_free(NULL);
}

static void bad_schema_text_is_refused_with_its_line(void **state)
{
        static const struct {
                const char *text, *error;
        } cases[] = {
            {"T\n  a Nope\n", "line 2: unknown type \"Nope\""},
            {"T\n  a string\nT\n  b string\n", "line 3: type T is declared twice"},
            {"T\n  a string\n  a int32\n", "line 1: type T has two fields \"a\""},
            {"T\n  a string\n  ...U\nU\n  a bool\n", "line 1: type T has two fields \"a\""},
            {"T\n  ...U\nU\n  ...T\n", "line 1: type T inlines itself"},
            {"T\n  ...Nope\n", "line 2: unknown type \"Nope\" to inline"},
            {"  a string\n", "line 1: a field outside a type"},
            {"T U\n",
             "line 1: expected a type name at column 0 (letters and digits), optionally \"atomic\", or an indented field"},
            {"my-type\n",
             "line 1: expected a type name at column 0 (letters and digits), optionally \"atomic\", or an indented field"},
            {"T\n  a\n",
             "line 2: expected \"jsonName TYPE [atomic|set|map(KEY,...)]\" or \"...TypeName\""},
            {"T\n  a-b string\n",
             "line 2: expected \"jsonName TYPE [atomic|set|map(KEY,...)]\" or \"...TypeName\""},
            {"T\n  a string extra words\n", "line 2: too many words"},
            {"package\n", "line 1: expected \"package NAME\""},
            {"T\n  a []\n", "line 2: unknown type \"[]\""},
            {"T\n  a map[string\n", "line 2: unknown type \"map[string\""},
        };
        (void)state;
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                struct xp_apischema *schema = NULL;
                struct xp_error err = {0};
                int r = xp_apischema_parse(cases[i].text, strlen(cases[i].text), &schema, &err);

                if (r != -EINVAL || strcmp(err.msg, cases[i].error) != 0)
                        fail_msg("case %zu: got %d \"%s\", expected \"%s\"",
                                 i,
                                 r,
                                 err.msg,
                                 cases[i].error);
                assert_null(schema);
        }
}

static void long_type_expressions_are_refused(void **state)
{
        char text[4096] = "T\n  a ";
        struct xp_apischema *schema = NULL;
        struct xp_error err = {0};

        (void)state;
        for (size_t i = 0; i < 1000; i++)
                strcat(text, "[]");
        strcat(text, "string\n");
        assert_int_equal(xp_apischema_parse(text, strlen(text), &schema, &err), -EINVAL);
        assert_string_equal(
            err.msg,
            "line 2: expected \"jsonName TYPE [atomic|set|map(KEY,...)]\" or \"...TypeName\"");
        assert_int_equal(xp_apischema_parse("T\0", 2, &schema, &err), -EINVAL);
        assert_string_equal(err.msg, "the schema text holds a NUL byte");
}

static void scalars_are_checked(void **state)
{
        (void)state;
        passes("{}");
        passes("{\"s\": \"x\", \"b\": false, \"i\": 7, \"l\": 9007199254740993, \"d\": 0.5}");
        /* null means absent, for every type */
        passes("{\"s\": null, \"i\": null, \"lu\": null, \"self\": null, \"inherited\": null}");
        fails("{\"s\": 1}",
              -EINVAL,
              "s: expected a string, got a number (quote the value to make it a string)");
        fails("{\"s\": true}",
              -EINVAL,
              "s: expected a string, got a boolean (quote the value to make it a string)");
        fails("{\"s\": [\"x\"]}", -EINVAL, "s: expected a string, got a list");
        fails("{\"b\": \"true\"}", -EINVAL, "b: expected a boolean (true or false), got a string");
        fails("{\"d\": \"1\"}", -EINVAL, "d: expected a number, got a string");
        fails("{\"l\": 1.5}", -EINVAL, "l: expected an integer, got 1.5");
        fails("{\"l\": {}}", -EINVAL, "l: expected an integer, got a mapping");
        fails("{\"o\": []}", -EINVAL, "o: expected a mapping, got a list");
        passes("{\"o\": {\"anything\": [1, {\"goes\": null}]}}");
        fails("{\"inherited\": 1}",
              -EINVAL,
              "inherited: expected a boolean (true or false), got a number");
}

static void int32_range_is_checked(void **state)
{
        (void)state;
        passes("{\"i\": 2147483647}");
        passes("{\"i\": -2147483648}");
        passes("{\"i\": 80.0}"); /* an integral number, as modelled fields take it */
        fails(
            "{\"i\": 2147483648}",
            -ERANGE,
            "i: invalid value 2147483648: must be a 32-bit integer (between -2147483648 and 2147483647)");
        fails(
            "{\"i\": -2147483649}",
            -ERANGE,
            "i: invalid value -2147483649: must be a 32-bit integer (between -2147483648 and 2147483647)");
        fails(
            "{\"i\": 99999999999}",
            -ERANGE,
            "i: invalid value 99999999999: must be a 32-bit integer (between -2147483648 and 2147483647)");
        fails("{\"i\": \"often\"}", -EINVAL, "i: expected an integer, got a string");
        /* int-or-string: a string, or a number that fits an int32 */
        passes("{\"p\": \"http\"}");
        passes("{\"p\": 8080}");
        fails(
            "{\"p\": 3000000000}",
            -ERANGE,
            "p: invalid value 3000000000: must be a 32-bit integer (between -2147483648 and 2147483647)");
        fails("{\"p\": true}", -EINVAL, "p: expected an integer or a string, got a boolean");
        fails("{\"p\": 1.5}", -EINVAL, "p: expected an integer, got 1.5");
}

static void quantities_and_times_are_checked(void **state)
{
        (void)state;
        passes("{\"q\": \"500m\", \"mq\": {\"cpu\": 2, \"memory\": \"1Gi\", \"x\": 0.5}}");
        fails("{\"q\": \"1.5x\"}", -EINVAL, "q: \"1.5x\" is not a valid quantity");
        fails(
            "{\"q\": true}",
            -EINVAL,
            "q: expected a quantity (a string such as \"500m\" or \"2Gi\", or a number), got a boolean");
        fails("{\"mq\": {\"nvidia.com/gpu\": \"lots\"}}",
              -EINVAL,
              "mq[nvidia.com/gpu]: \"lots\" is not a valid quantity");
        fails("{\"mq\": [1]}",
              -EINVAL,
              "mq: expected a mapping of resource names to quantities, got a list");
        passes("{\"t\": \"2026-12-02T15:04:05Z\", \"m\": \"2026-12-02T15:04:05.123456Z\"}");
        fails(
            "{\"t\": \"yesterday\"}",
            -EINVAL,
            "t: invalid timestamp \"yesterday\": expected RFC 3339, e.g. \"2026-12-02T15:04:05Z\"");
        fails("{\"t\": 1}", -EINVAL, "t: expected an RFC 3339 timestamp string, got a number");
        fails(
            "{\"m\": \"2026-12-02\"}",
            -EINVAL,
            "m: invalid timestamp \"2026-12-02\": expected RFC 3339 with microseconds, e.g. \"2026-12-02T15:04:05.123456Z\"");
}

static void lists_maps_and_types_are_checked_at_every_depth(void **state)
{
        (void)state;
        passes(
            "{\"ss\": [\"a\", null, \"b\"], \"lu\": [{\"x\": 1}, null], \"ml\": {\"k\": [1, 2]}}");
        fails("{\"ss\": \"80\"}", -EINVAL, "ss: expected a list of strings, got a string");
        fails("{\"ss\": [\"a\", 2]}",
              -EINVAL,
              "ss[1]: expected a string, got a number (quote the value to make it a string)");
        fails("{\"lu\": {\"x\": 1}}", -EINVAL, "lu: expected a list, got a mapping");
        fails("{\"lu\": [{\"x\": 1}, \"y\"]}", -EINVAL, "lu[1]: expected a mapping, got a string");
        fails(
            "{\"lu\": [{}, {\"x\": 4294967296}]}",
            -ERANGE,
            "lu[1].x: invalid value 4294967296: must be a 32-bit integer (between -2147483648 and 2147483647)");
        fails("{\"ml\": {\"k\": [1, \"2\"]}}",
              -EINVAL,
              "ml[k][1]: expected an integer, got a string");
        fails("{\"ml\": []}", -EINVAL, "ml: expected a mapping, got a list");
        fails("{\"self\": {\"self\": {\"lu\": [{\"x\": \"no\"}]}}}",
              -EINVAL,
              "self.self.lu[0].x: expected an integer, got a string");
        fails("{\"self\": 3}", -EINVAL, "self: expected a mapping, got a number");
}

static void unknown_fields_pass_unless_strict(void **state)
{
        char msg[XP_ERROR_MSG_MAX];

        (void)state;
        passes("{\"future\": \"anything\", \"lu\": [{\"later\": [1]}]}");
        assert_int_equal(check_text("{\"lu\": [{\"x\": 1, \"later\": 1}]}", XP_DECODE_STRICT, msg),
                         -EINVAL);
        assert_string_equal(msg, "lu[0].later: unknown field \"later\" in U");
        assert_int_equal(check_text("{\"s\": \"x\", \"inherited\": true}", XP_DECODE_STRICT, msg),
                         0);
}

/* {"a": {"a": ... {}}}, levels deep in all. */
static json_t *nested(size_t levels)
{
        json_t *json = json_object();

        for (size_t i = 1; json && i < levels; i++)
                json = json_pack("{s:o}", "a", json);
        return json;
}

static void nesting_is_bounded(void **state)
{
        struct xp_apischema *schema = parse_test_schema();
        const struct xp_apitype *t = xp_apischema_find(schema, "T");
        json_t *ok = json_pack("{s:o}", "o", nested(XP_OBJECT_MAX_DEPTH - 1));
        json_t *deep = json_pack("{s:o}", "o", nested(XP_OBJECT_MAX_DEPTH));
        json_t *list = json_pack("{s:[o]}", "unknown", nested(XP_OBJECT_MAX_DEPTH - 1));
        json_t *one = json_integer(1), *empty = json_object();
        struct xp_error err = {0};

        (void)state;
        assert_false(xp_json_deeper_than(ok, XP_OBJECT_MAX_DEPTH));
        assert_true(xp_json_deeper_than(deep, XP_OBJECT_MAX_DEPTH));
        assert_false(xp_json_deeper_than(one, 0));
        assert_true(xp_json_deeper_than(empty, 0));
        assert_false(xp_json_deeper_than(empty, 1));
        assert_int_equal(xp_apischema_check(t, ok, 0, &err), 0);
        assert_int_equal(xp_apischema_check(t, deep, 0, &err), -E2BIG);
        assert_string_equal(
            err.msg,
            "o.a: invalid value: nested too deeply: an object may nest at most 100 levels of mappings and lists");
        /* lists count as levels, and unknown fields are bounded too */
        assert_int_equal(xp_apischema_check(t, list, 0, &err), -E2BIG);
        assert_string_equal(
            err.msg,
            "unknown[0]: invalid value: nested too deeply: an object may nest at most 100 levels of mappings and lists");
        json_decref(ok);
        json_decref(deep);
        json_decref(list);
        json_decref(one);
        json_decref(empty);
        xp_apischema_free(schema);
}

/* ---- the built-in schema -------------------------------------------------------------------- */

static const struct xp_apischema *builtin(void)
{
        const struct xp_apischema *schema = NULL;
        struct xp_error err = {0};

        if (xp_apischema_builtin(&schema, &err) < 0)
                fail_msg("%s", err.msg);
        return schema;
}

/* The value of a field along a path of field names ("Pod", "spec", "containers", ...). */
static const struct xp_apivalue *field_value(const char *type, const char *path)
{
        const struct xp_apitype *t = xp_apischema_find(builtin(), type);
        const struct xp_apivalue *v = NULL;
        char *copy = strdup(path), *save = NULL;

        for (char *name = strtok_r(copy, ".", &save); name; name = strtok_r(NULL, ".", &save)) {
                const struct xp_apifield *f;

                if (!t)
                        fail_msg("%s: %s is not an object type", path, name);
                f = xp_apitype_field(t, name);
                if (!f)
                        fail_msg("%s: no field %s in %s", path, name, t->name);
                v = f->value;
                while (v->kind == XP_APIVALUE_LIST || v->kind == XP_APIVALUE_MAP)
                        v = v->element;
                t = v->kind == XP_APIVALUE_TYPE ? v->type : NULL;
        }
        free(copy);
        return v;
}

static void builtin_schema_describes_pods_and_nodes(void **state)
{
        const struct xp_apischema *schema = builtin();
        const struct xp_apitype *ephemeral = xp_apischema_find(schema, "EphemeralContainer");
        const struct xp_apitype *container = xp_apischema_find(schema, "Container");

        (void)state;
        assert_true(xp_apischema_count(schema) > 150);
        assert_string_equal(xp_apischema_find(schema, "Pod")->package, "io.k8s.api.core.v1");
        assert_string_equal(xp_apischema_find(schema, "ObjectMeta")->package,
                            "io.k8s.apimachinery.pkg.apis.meta.v1");
        assert_string_equal(xp_apischema_find(schema, "NodeInventory")->package, "io.xpool.v1");
        assert_int_equal(field_value("Pod", "spec.containers.ports.containerPort")->kind,
                         XP_APIVALUE_INT32);
        assert_int_equal(field_value("Pod", "spec.containers.livenessProbe.httpGet.port")->kind,
                         XP_APIVALUE_INT_OR_STRING);
        assert_int_equal(field_value("Pod", "spec.volumes.hostPath.path")->kind,
                         XP_APIVALUE_STRING);
        assert_int_equal(
            field_value("Pod", "spec.volumes.ephemeral.volumeClaimTemplate.spec.resources.requests")
                ->kind,
            XP_APIVALUE_QUANTITY);
        assert_int_equal(field_value("Pod", "spec.topologySpreadConstraints.maxSkew")->kind,
                         XP_APIVALUE_INT32);
        assert_int_equal(field_value("Pod", "metadata.managedFields.fieldsV1")->kind,
                         XP_APIVALUE_OBJECT);
        assert_int_equal(
            field_value("Pod", "status.containerStatuses.state.running.startedAt")->kind,
            XP_APIVALUE_TIME);
        assert_int_equal(field_value("Node", "status.daemonEndpoints.kubeletEndpoint.Port")->kind,
                         XP_APIVALUE_INT32);
        assert_int_equal(field_value("Node", "status.xpool.devices.fp16TFLOPS")->kind,
                         XP_APIVALUE_DOUBLE);
        assert_int_equal(field_value("Node", "spec.taints.timeAdded")->kind, XP_APIVALUE_TIME);
        /* an ephemeral container inlines every field of a container */
        assert_int_equal(ephemeral->n_fields, container->n_fields + 1);
        for (size_t i = 0; i < container->n_fields; i++)
                assert_non_null(xp_apitype_field(ephemeral, container->fields[i].name));
        assert_non_null(xp_apitype_field(ephemeral, "targetContainerName"));
}

/* Whether a codec field type may hold a value of the API schema's type. */
static bool compatible(const struct xp_field *field, const struct xp_apivalue *v)
{
        enum xp_apivalue_kind k = v->kind;
        enum xp_apivalue_kind e = v->element ? v->element->kind : 0;

        switch (field->type) {
        case XP_FT_STRING:
        case XP_FT_ENUM:
                return k == XP_APIVALUE_STRING;
        case XP_FT_INT32:
        case XP_FT_OPT_INT32:
                return k == XP_APIVALUE_INT32;
        case XP_FT_INT64:
        case XP_FT_OPT_INT64: /* a wider model is fine: the check holds the value to 32 bits */
                return k == XP_APIVALUE_INT64 || k == XP_APIVALUE_INT32;
        case XP_FT_BOOL:
        case XP_FT_OPT_BOOL:
                return k == XP_APIVALUE_BOOL;
        case XP_FT_DOUBLE:
                return k == XP_APIVALUE_DOUBLE;
        case XP_FT_TIME:
                return k == XP_APIVALUE_TIME;
        case XP_FT_MICROTIME:
                return k == XP_APIVALUE_MICROTIME;
        case XP_FT_STRING_LIST:
                return k == XP_APIVALUE_LIST && e == XP_APIVALUE_STRING;
        case XP_FT_STRING_MAP:
                return k == XP_APIVALUE_MAP && e == XP_APIVALUE_STRING;
        case XP_FT_RESOURCES:
                return k == XP_APIVALUE_MAP && e == XP_APIVALUE_QUANTITY;
        case XP_FT_STRUCT:
        case XP_FT_STRUCT_PTR:
                return k == XP_APIVALUE_TYPE;
        case XP_FT_STRUCT_LIST:
                return k == XP_APIVALUE_LIST && e == XP_APIVALUE_TYPE;
        }
        return false;
}

/* Every field the codec models is in the API schema, with a type that fits, at every depth; and
 * the type of the codec schema's name (strict decoding's word) has the same fields. */
static void agree(const struct xp_schema *codec, const struct xp_apitype *api)
{
        const struct xp_apitype *named = xp_apischema_find(builtin(), codec->name);

        if (!named)
                fail_msg("the API schema has no type %s", codec->name);
        assert_int_equal(named->n_fields, api->n_fields);
        for (size_t i = 0; i < codec->n_fields; i++) {
                const struct xp_field *field = &codec->fields[i];
                const struct xp_apifield *f = xp_apitype_field(api, field->name);

                if (!f)
                        fail_msg("%s.%s is modelled but not in the API schema's %s",
                                 codec->name,
                                 field->name,
                                 api->name);
                if (!compatible(field, f->value))
                        fail_msg("%s.%s: the codec's type does not fit the API schema's",
                                 codec->name,
                                 field->name);
                if (field->schema)
                        agree(field->schema,
                              f->value->kind == XP_APIVALUE_LIST ? f->value->element->type
                                                                 : f->value->type);
        }
}

static void codec_and_api_schema_agree(void **state)
{
        (void)state;
        agree(&xp_pod_schema, xp_apischema_find(builtin(), "Pod"));
        agree(&xp_node_schema, xp_apischema_find(builtin(), "Node"));
        agree(&xp_node_inventory_schema, xp_apischema_find(builtin(), "NodeInventory"));
}

/* ---- the codec runs the check ---------------------------------------------------------------- */

static void decode_fails(const char *pod_spec, const char *expected)
{
        char text[4096];
        struct xp_pod *pod = NULL;
        struct xp_error err = {0};

        snprintf(text,
                 sizeof(text),
                 "{\"apiVersion\": \"v1\", \"kind\": \"Pod\", \"metadata\": {\"name\": \"p\"}, "
                 "\"spec\": {\"containers\": [{\"name\": \"c\", \"image\": \"i\", %s}]}}",
                 pod_spec);
        assert_true(xp_pod_from_json_text(text, strlen(text), NULL, 0, &pod, &err) < 0);
        assert_null(pod);
        assert_string_equal(err.msg, expected);
}

static void pods_with_wrong_types_in_unmodelled_fields_are_refused(void **state)
{
        (void)state;
        decode_fails(
            "\"ports\": [{\"containerPort\": 99999999999}]",
            "spec.containers[0].ports[0].containerPort: invalid value 99999999999: must be a 32-bit integer (between -2147483648 and 2147483647)");
        decode_fails("\"ports\": \"80\"",
                     "spec.containers[0].ports: expected a list, got a string");
        decode_fails(
            "\"livenessProbe\": {\"periodSeconds\": \"often\"}",
            "spec.containers[0].livenessProbe.periodSeconds: expected an integer, got a string");
        decode_fails(
            "\"lifecycle\": {\"preStop\": {\"httpGet\": {\"port\": 1e10}}}",
            "spec.containers[0].lifecycle.preStop.httpGet.port: invalid value 10000000000: must be a 32-bit integer (between -2147483648 and 2147483647)");
}

static void a_real_world_pod_passes_and_round_trips(void **state)
{
        struct xp_manifest m = {0};
        struct xp_error err = {0};
        json_t *json = NULL, *again = NULL;
        struct xp_pod *pod = NULL;

        (void)state;
        if (xp_manifest_load_file(DATA "real-world-pod.yaml", XP_DECODE_STRICT, &m, &err) < 0)
                fail_msg("%s", err.msg);
        assert_int_equal(m.n, 1);
        assert_int_equal(xp_pod_to_json(m.objects[0].pod, &json), 0);
        assert_int_equal(
            json_integer_value(json_object_get(
                json_array_get(
                    json_object_get(
                        json_array_get(json_object_get(json_object_get(json, "spec"), "containers"),
                                       0),
                        "ports"),
                    0),
                "containerPort")),
            8080);
        assert_int_equal(xp_pod_from_json(json, NULL, XP_DECODE_STRICT, &pod, &err), 0);
        assert_int_equal(xp_pod_to_json(pod, &again), 0);
        assert_true(json_equal(json, again));
        xp_pod_free(pod);
        json_decref(json);
        json_decref(again);
        xp_manifest_done(&m);
}

static void kept_integral_numbers_become_integers(void **state)
{
        static const char text[] =
            "{\"metadata\": {\"name\": \"p\"}, \"spec\": {\"containers\": [{\"name\": \"c\", "
            "\"image\": \"i\", \"ports\": [{\"containerPort\": 80.0}], \"x\": [1.5, 2.0]}]}}";
        struct xp_pod *pod = NULL;
        struct xp_error err = {0};
        json_t *json, *c;

        (void)state;
        assert_int_equal(xp_pod_from_json_text(text, strlen(text), NULL, 0, &pod, &err), 0);
        assert_int_equal(xp_pod_to_json(pod, &json), 0);
        c = json_array_get(json_object_get(json_object_get(json, "spec"), "containers"), 0);
        assert_true(json_is_integer(
            json_object_get(json_array_get(json_object_get(c, "ports"), 0), "containerPort")));
        assert_true(json_is_real(json_array_get(json_object_get(c, "x"), 0)));
        assert_true(json_is_integer(json_array_get(json_object_get(c, "x"), 1)));
        json_decref(json);
        xp_pod_free(pod);
}

static void decoding_bounds_nesting(void **state)
{
        json_t *pod = json_pack("{s:{s:s}, s:{s:[{s:s, s:s}], s:o}}",
                                "metadata",
                                "name",
                                "p",
                                "spec",
                                "containers",
                                "name",
                                "c",
                                "image",
                                "i",
                                "deep",
                                nested(XP_OBJECT_MAX_DEPTH));
        struct xp_pod *out = NULL;
        struct xp_error err = {0};

        (void)state;
        assert_int_equal(xp_pod_from_json(pod, NULL, 0, &out, &err), -E2BIG);
        assert_string_equal(
            err.msg,
            "spec.deep: invalid value: nested too deeply: an object may nest at most 100 levels of mappings and lists");
        /* one level less fits: the pod itself and spec are two levels */
        json_object_set_new(json_object_get(pod, "spec"), "deep", nested(XP_OBJECT_MAX_DEPTH - 2));
        assert_int_equal(xp_pod_from_json(pod, NULL, 0, &out, &err), 0);
        xp_pod_free(out);
        json_decref(pod);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(reads_the_syntax),
            cmocka_unit_test(bad_schema_text_is_refused_with_its_line),
            cmocka_unit_test(long_type_expressions_are_refused),
            cmocka_unit_test(scalars_are_checked),
            cmocka_unit_test(int32_range_is_checked),
            cmocka_unit_test(quantities_and_times_are_checked),
            cmocka_unit_test(lists_maps_and_types_are_checked_at_every_depth),
            cmocka_unit_test(unknown_fields_pass_unless_strict),
            cmocka_unit_test(nesting_is_bounded),
            cmocka_unit_test(builtin_schema_describes_pods_and_nodes),
            cmocka_unit_test(codec_and_api_schema_agree),
            cmocka_unit_test(pods_with_wrong_types_in_unmodelled_fields_are_refused),
            cmocka_unit_test(a_real_world_pod_passes_and_round_trips),
            cmocka_unit_test(kept_integral_numbers_become_integers),
            cmocka_unit_test(decoding_bounds_nesting),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
