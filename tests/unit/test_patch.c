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

#include "xpool/macro.h"
#include "xpool/patch.h"

static json_t *parse(const char *text)
{
        json_error_t error;
        json_t *value = json_loads(text, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &error);

        if (!value)
                fail_msg(
                    "bad test JSON at %d:%d: %s\n  %s", error.line, error.column, error.text, text);
        return value;
}

/* Replaces *slot with a newly parsed value, returning it (the test frees the last one). */
static json_t *parse_keep(json_t **slot, const char *text)
{
        json_decref(*slot);
        *slot = parse(text);
        return *slot;
}

static void assert_json(const json_t *actual, const char *expected_text)
{
        json_t *expected = parse(expected_text);

        if (!json_equal(actual, expected)) {
                char *a = json_dumps(actual, JSON_COMPACT | JSON_ENCODE_ANY);

                fail_msg("JSON differs:\n  got      %s\n  expected %s", a, expected_text);
        }
        json_decref(expected);
}

/*
 * xp_patch_apply_sharing() on the same: the result written byte for byte (member order too) as
 * xp_patch_apply()'s, the original unchanged while the result that shares it lives and after.
 */
static void check_sharing(enum xp_patch_type type,
                          const char *kind,
                          const json_t *original,
                          const json_t *patch,
                          const json_t *copied)
{
        json_t *before = json_deep_copy(original), *shared = NULL;
        struct xp_error err = {0};
        char *want, *got;

        assert_int_equal(xp_patch_apply_sharing(type, kind, original, patch, &shared, &err), 0);
        want = json_dumps(copied, JSON_COMPACT | JSON_ENCODE_ANY);
        got = json_dumps(shared, JSON_COMPACT | JSON_ENCODE_ANY);
        assert_non_null(want);
        assert_non_null(got);
        assert_string_equal(got, want);
        assert_true(json_equal(original, before));
        json_decref(shared);
        assert_true(json_equal(original, before));
        free(want);
        free(got);
        json_decref(before);
}

/* Checks the result and that the original came through unchanged. */
static void check_apply(enum xp_patch_type type,
                        const char *kind,
                        const char *original_text,
                        const char *patch_text,
                        const char *expected_text)
{
        json_t *original = parse(original_text), *patch = parse(patch_text);
        json_t *before = json_deep_copy(original), *patch_before = json_deep_copy(patch);
        struct xp_error err = {0};
        json_t *result = NULL;
        int r;

        r = xp_patch_apply(type, kind, original, patch, &result, &err);
        if (r < 0)
                fail_msg("apply failed (%d): %s\n  patch %s", r, err.msg, patch_text);
        assert_json(result, expected_text);
        assert_true(json_equal(original, before));
        assert_true(json_equal(patch, patch_before));
        check_sharing(type, kind, original, patch, result);
        json_decref(result);
        json_decref(original);
        json_decref(patch);
        json_decref(before);
        json_decref(patch_before);
}

static void check_fail(enum xp_patch_type type,
                       const char *kind,
                       const char *original_text,
                       const char *patch_text,
                       int code,
                       const char *message)
{
        json_t *original = parse(original_text), *patch = parse(patch_text);
        json_t *before = json_deep_copy(original);
        json_t *sentinel = json_string("untouched"), *result = sentinel;
        struct xp_error err = {0};
        int r;

        r = xp_patch_apply(type, kind, original, patch, &result, &err);
        if (r != code)
                fail_msg("expected %d, got %d (%s)\n  patch %s", code, r, err.msg, patch_text);
        assert_int_equal(err.code, code);
        assert_string_equal(err.msg, message);
        assert_ptr_equal(result, sentinel);
        assert_true(json_equal(original, before));
        /* the sharing variant refuses the same, in the same words */
        xp_error_clear(&err);
        r = xp_patch_apply_sharing(type, kind, original, patch, &result, &err);
        assert_int_equal(r, code);
        assert_string_equal(err.msg, message);
        assert_ptr_equal(result, sentinel);
        assert_true(json_equal(original, before));
        json_decref(sentinel);
        json_decref(original);
        json_decref(patch);
        json_decref(before);
}

#define JSON_OK(o, p, e)        check_apply(XP_PATCH_JSON, "Pod", o, p, e)
#define JSON_FAIL(o, p, c, m)   check_fail(XP_PATCH_JSON, "Pod", o, p, c, m)
#define MERGE_OK(o, p, e)       check_apply(XP_PATCH_MERGE, "Pod", o, p, e)
#define SMP_OK(k, o, p, e)      check_apply(XP_PATCH_STRATEGIC, k, o, p, e)
#define SMP_FAIL(k, o, p, c, m) check_fail(XP_PATCH_STRATEGIC, k, o, p, c, m)

static void content_types(void **state)
{
        enum xp_patch_type type = 0;
        struct xp_error err = {0};

        (void)state;
        assert_int_equal(
            xp_patch_type_from_content_type("application/json-patch+json", &type, &err), 0);
        assert_int_equal(type, XP_PATCH_JSON);
        assert_int_equal(xp_patch_type_from_content_type(
                             "Application/Merge-Patch+JSON; charset=utf-8", &type, &err),
                         0);
        assert_int_equal(type, XP_PATCH_MERGE);
        assert_int_equal(xp_patch_type_from_content_type(
                             " application/strategic-merge-patch+json ;charset=UTF-8", &type, &err),
                         0);
        assert_int_equal(type, XP_PATCH_STRATEGIC);
        assert_string_equal(xp_patch_type_to_content_type(XP_PATCH_MERGE),
                            "application/merge-patch+json");
        assert_null(xp_patch_type_to_content_type(0));

        type = 0;
        assert_int_equal(xp_patch_type_from_content_type("application/json", &type, &err), -EINVAL);
        assert_int_equal(type, 0);
        assert_string_equal(
            err.msg,
            "unsupported patch content type \"application/json\": use application/json-patch+json, application/merge-patch+json or application/strategic-merge-patch+json");
        assert_int_equal(
            xp_patch_type_from_content_type("application/json-patch+jsonx", &type, &err), -EINVAL);
        assert_int_equal(xp_patch_type_from_content_type(NULL, &type, &err), -EINVAL);
        assert_string_equal(
            err.msg,
            "missing patch content type: use application/json-patch+json, application/merge-patch+json or application/strategic-merge-patch+json");
}

/* RFC 6902 appendix A, the examples that succeed */
static void json_patch_rfc_examples(void **state)
{
        (void)state;
        /* A.1 */
        JSON_OK("{\"foo\":\"bar\"}",
                "[{\"op\":\"add\",\"path\":\"/baz\",\"value\":\"qux\"}]",
                "{\"baz\":\"qux\",\"foo\":\"bar\"}");
        /* A.2 */
        JSON_OK("{\"foo\":[\"bar\",\"baz\"]}",
                "[{\"op\":\"add\",\"path\":\"/foo/1\",\"value\":\"qux\"}]",
                "{\"foo\":[\"bar\",\"qux\",\"baz\"]}");
        /* A.3 */
        JSON_OK("{\"baz\":\"qux\",\"foo\":\"bar\"}",
                "[{\"op\":\"remove\",\"path\":\"/baz\"}]",
                "{\"foo\":\"bar\"}");
        /* A.4 */
        JSON_OK("{\"foo\":[\"bar\",\"qux\",\"baz\"]}",
                "[{\"op\":\"remove\",\"path\":\"/foo/1\"}]",
                "{\"foo\":[\"bar\",\"baz\"]}");
        /* A.5 */
        JSON_OK("{\"baz\":\"qux\",\"foo\":\"bar\"}",
                "[{\"op\":\"replace\",\"path\":\"/baz\",\"value\":\"boo\"}]",
                "{\"baz\":\"boo\",\"foo\":\"bar\"}");
        /* A.6 */
        JSON_OK("{\"foo\":{\"bar\":\"baz\",\"waldo\":\"fred\"},\"qux\":{\"corge\":\"grault\"}}",
                "[{\"op\":\"move\",\"from\":\"/foo/waldo\",\"path\":\"/qux/thud\"}]",
                "{\"foo\":{\"bar\":\"baz\"},\"qux\":{\"corge\":\"grault\",\"thud\":\"fred\"}}");
        /* A.7 */
        JSON_OK("{\"foo\":[\"all\",\"grass\",\"cows\",\"eat\"]}",
                "[{\"op\":\"move\",\"from\":\"/foo/1\",\"path\":\"/foo/3\"}]",
                "{\"foo\":[\"all\",\"cows\",\"eat\",\"grass\"]}");
        /* A.8 */
        JSON_OK("{\"baz\":\"qux\",\"foo\":[\"a\",2,\"c\"]}",
                "[{\"op\":\"test\",\"path\":\"/baz\",\"value\":\"qux\"},"
                "{\"op\":\"test\",\"path\":\"/foo/1\",\"value\":2}]",
                "{\"baz\":\"qux\",\"foo\":[\"a\",2,\"c\"]}");
        /* A.10 */
        JSON_OK("{\"foo\":\"bar\"}",
                "[{\"op\":\"add\",\"path\":\"/child\",\"value\":{\"grandchild\":{}}}]",
                "{\"foo\":\"bar\",\"child\":{\"grandchild\":{}}}");
        /* A.11: members an operation does not use are ignored */
        JSON_OK("{\"foo\":\"bar\"}",
                "[{\"op\":\"add\",\"path\":\"/baz\",\"value\":\"qux\",\"xyz\":123}]",
                "{\"foo\":\"bar\",\"baz\":\"qux\"}");
        /* A.14: ~01 is "~1", not "/" */
        JSON_OK("{\"/\":9,\"~1\":10}",
                "[{\"op\":\"test\",\"path\":\"/~01\",\"value\":10}]",
                "{\"/\":9,\"~1\":10}");
        /* A.16 */
        JSON_OK("{\"foo\":[\"bar\"]}",
                "[{\"op\":\"add\",\"path\":\"/foo/-\",\"value\":[\"abc\",\"def\"]}]",
                "{\"foo\":[\"bar\",[\"abc\",\"def\"]]}");
}

static void json_patch_ops(void **state)
{
        (void)state;
        /* add to an existing member replaces it; add at the root replaces the document */
        JSON_OK("{\"a\":1}", "[{\"op\":\"add\",\"path\":\"/a\",\"value\":[2]}]", "{\"a\":[2]}");
        JSON_OK("{\"a\":1}", "[{\"op\":\"add\",\"path\":\"\",\"value\":{\"b\":2}}]", "{\"b\":2}");
        /* appending at the index equal to the size */
        JSON_OK("{\"a\":[1]}", "[{\"op\":\"add\",\"path\":\"/a/1\",\"value\":2}]", "{\"a\":[1,2]}");
        /* escapes: ~1 is '/', ~0 is '~' */
        JSON_OK("{\"a/b\":1,\"m~n\":2}",
                "[{\"op\":\"replace\",\"path\":\"/a~1b\",\"value\":3},"
                "{\"op\":\"remove\",\"path\":\"/m~0n\"}]",
                "{\"a/b\":3}");
        JSON_OK(
            "{\"metadata\":{\"labels\":{}}}",
            "[{\"op\":\"add\",\"path\":\"/metadata/labels/app.kubernetes.io~1name\",\"value\":\"x\"}]",
            "{\"metadata\":{\"labels\":{\"app.kubernetes.io/name\":\"x\"}}}");
        /* the empty key is a member like any other */
        JSON_OK("{\"\":1}", "[{\"op\":\"replace\",\"path\":\"/\",\"value\":2}]", "{\"\":2}");
        /* copy is deep: changing the copy leaves the source */
        JSON_OK("{\"a\":{\"x\":1}}",
                "[{\"op\":\"copy\",\"from\":\"/a\",\"path\":\"/b\"},"
                "{\"op\":\"replace\",\"path\":\"/b/x\",\"value\":2}]",
                "{\"a\":{\"x\":1},\"b\":{\"x\":2}}");
        /* move to itself changes nothing; move of a whole member */
        JSON_OK("{\"a\":{\"x\":1}}",
                "[{\"op\":\"move\",\"from\":\"/a\",\"path\":\"/a\"}]",
                "{\"a\":{\"x\":1}}");
        JSON_OK("{\"a\":{\"x\":1},\"ab\":2}",
                "[{\"op\":\"move\",\"from\":\"/a\",\"path\":\"/ab\"}]",
                "{\"ab\":{\"x\":1}}");
        /* test compares numbers by value and objects regardless of member order */
        JSON_OK("{\"a\":1,\"o\":{\"x\":1,\"y\":[1,2]}}",
                "[{\"op\":\"test\",\"path\":\"/a\",\"value\":1.0},"
                "{\"op\":\"test\",\"path\":\"/o\",\"value\":{\"y\":[1,2],\"x\":1}},"
                "{\"op\":\"test\",\"path\":\"\",\"value\":{\"o\":{\"x\":1,\"y\":[1,2]},\"a\":1}}]",
                "{\"a\":1,\"o\":{\"x\":1,\"y\":[1,2]}}");
        /* a value the patch adds is a copy: a later op changing it leaves the patch alone */
        JSON_OK("{}",
                "[{\"op\":\"add\",\"path\":\"/a\",\"value\":{\"x\":[]}},"
                "{\"op\":\"add\",\"path\":\"/a/x/-\",\"value\":1}]",
                "{\"a\":{\"x\":[1]}}");
        JSON_OK("{\"a\":1}", "[]", "{\"a\":1}");
}

static void json_patch_errors(void **state)
{
        (void)state;
        /* A.9, A.12, A.15 */
        JSON_FAIL("{\"baz\":\"qux\"}",
                  "[{\"op\":\"test\",\"path\":\"/baz\",\"value\":\"bar\"}]",
                  -EINVAL,
                  "testing value /baz failed: test failed");
        JSON_FAIL("{\"foo\":\"bar\"}",
                  "[{\"op\":\"add\",\"path\":\"/baz/bat\",\"value\":\"qux\"}]",
                  -EINVAL,
                  "add operation does not apply: doc is missing path: \"/baz/bat\": missing value");
        JSON_FAIL("{\"/\":9,\"~1\":10}",
                  "[{\"op\":\"test\",\"path\":\"/~01\",\"value\":\"10\"}]",
                  -EINVAL,
                  "testing value /~01 failed: test failed");

        /* a failing op after ones that succeeded leaves nothing applied */
        JSON_FAIL(
            "{\"spec\":{\"a\":1}}",
            "[{\"op\":\"remove\",\"path\":\"/spec/a\"},{\"op\":\"add\",\"path\":\"/x\",\"value\":1},"
            "{\"op\":\"replace\",\"path\":\"/spec/foo\",\"value\":1}]",
            -EINVAL,
            "replace operation does not apply: doc is missing key: /spec/foo: missing value");
        JSON_FAIL("{}",
                  "{\"op\":\"add\"}",
                  -EINVAL,
                  "patch: a JSON patch must be an array of operations");
        /* null decodes to no operations in Go: the object as it was */
        JSON_OK("{\"spec\":{\"a\":1}}", "null", "{\"spec\":{\"a\":1}}");
        JSON_FAIL("{}", "[1]", -EINVAL, "patch[0]: operation is not an object");
        JSON_FAIL("{}", "[{\"path\":\"/a\"}]", -EINVAL, "patch[0]: missing \"op\"");
        JSON_FAIL(
            "{}", "[{\"op\":1,\"path\":\"/a\"}]", -EINVAL, "patch[0]: \"op\" is not a string");
        JSON_FAIL(
            "{}",
            "[{\"op\":\"merge\",\"path\":\"/a\"}]",
            -EINVAL,
            "patch[0]: unknown op \"merge\" (expected add, remove, replace, move, copy or test)");
        JSON_FAIL("{}", "[{\"op\":\"remove\"}]", -EINVAL, "patch[0] (remove): missing \"path\"");
        JSON_FAIL("{}",
                  "[{\"op\":\"remove\",\"path\":1}]",
                  -EINVAL,
                  "patch[0] (remove): \"path\" is not a string");
        JSON_FAIL("{}",
                  "[{\"op\":\"add\",\"path\":\"/a\"}]",
                  -EINVAL,
                  "patch[0] (add /a): missing \"value\"");
        JSON_FAIL("{}",
                  "[{\"op\":\"test\",\"path\":\"/a\"}]",
                  -EINVAL,
                  "patch[0] (test /a): missing \"value\"");
        JSON_FAIL("{}",
                  "[{\"op\":\"copy\",\"path\":\"/a\"}]",
                  -EINVAL,
                  "patch[0] (copy /a): missing \"from\"");
        JSON_FAIL("{}",
                  "[{\"op\":\"move\",\"path\":\"/a\",\"from\":2}]",
                  -EINVAL,
                  "patch[0] (move /a): \"from\" is not a string");
        JSON_FAIL("{\"a\":1}",
                  "[{\"op\":\"remove\",\"path\":\"a\"}]",
                  -EINVAL,
                  "patch[0] (remove a): invalid JSON pointer: must be empty or start with '/'");
        JSON_FAIL(
            "{\"a\":1}",
            "[{\"op\":\"remove\",\"path\":\"/a~2\"}]",
            -EINVAL,
            "patch[0] (remove /a~2): invalid JSON pointer: '~' at offset 2 must be followed by 0 or 1");
        JSON_FAIL(
            "{\"a\":1}",
            "[{\"op\":\"remove\",\"path\":\"/a~\"}]",
            -EINVAL,
            "patch[0] (remove /a~): invalid JSON pointer: '~' at offset 2 must be followed by 0 or 1");
        JSON_FAIL(
            "{\"a\":1}",
            "[{\"op\":\"copy\",\"from\":\"x\",\"path\":\"/b\"}]",
            -EINVAL,
            "patch[0] (copy /b): from \"x\": invalid JSON pointer: must be empty or start with '/'");
        JSON_FAIL("{\"a\":1}",
                  "[{\"op\":\"remove\",\"path\":\"/b\"}]",
                  -EINVAL,
                  "remove operation does not apply: doc is missing path: \"/b\": missing value");
        JSON_FAIL("{\"a\":1}",
                  "[{\"op\":\"remove\",\"path\":\"/a/b\"}]",
                  -EINVAL,
                  "remove operation does not apply: doc is missing path: \"/a/b\": missing value");
        JSON_FAIL("{\"a\":1}",
                  "[{\"op\":\"remove\",\"path\":\"\"}]",
                  -EINVAL,
                  "patch[0] (remove ): cannot remove the whole document");
        JSON_FAIL("{\"a\":[1,2]}",
                  "[{\"op\":\"add\",\"path\":\"/a/3\",\"value\":0}]",
                  -EINVAL,
                  "patch[0] (add /a/3): array index 3 out of range (the array has 2 elements)");
        JSON_FAIL("{\"a\":[1,2]}",
                  "[{\"op\":\"replace\",\"path\":\"/a/2\",\"value\":0}]",
                  -EINVAL,
                  "patch[0] (replace /a/2): array index 2 out of range (the array has 2 elements)");
        JSON_FAIL(
            "{\"a\":[1,2]}",
            "[{\"op\":\"remove\",\"path\":\"/a/-\"}]",
            -EINVAL,
            "patch[0] (remove /a/-): \"-\" (past the end of the array) is only valid for add");
        JSON_FAIL("{\"a\":[1,2]}",
                  "[{\"op\":\"remove\",\"path\":\"/a/01\"}]",
                  -EINVAL,
                  "patch[0] (remove /a/01): invalid array index \"01\"");
        JSON_FAIL("{\"a\":[1,2]}",
                  "[{\"op\":\"add\",\"path\":\"/a/-1\",\"value\":0}]",
                  -EINVAL,
                  "patch[0] (add /a/-1): invalid array index \"-1\"");
        JSON_FAIL(
            "{\"a\":[1,2]}",
            "[{\"op\":\"remove\",\"path\":\"/a/99999999999999999999999\"}]",
            -EINVAL,
            "patch[0] (remove /a/99999999999999999999999): array index 99999999999999999999999 out of range (the array has 2 elements)");
        JSON_FAIL("{\"a\":[[1]]}",
                  "[{\"op\":\"test\",\"path\":\"/a/1/0\",\"value\":1}]",
                  -EINVAL,
                  "patch[0] (test /a/1/0): array index 1 out of range (the array has 1 elements)");
        JSON_FAIL("{\"a\":{\"b\":{}}}",
                  "[{\"op\":\"move\",\"from\":\"/a\",\"path\":\"/a/b/c\"}]",
                  -EINVAL,
                  "patch[0] (move /a/b/c): cannot move \"/a\" into its own child");
        JSON_FAIL("{\"a\":1}",
                  "[{\"op\":\"move\",\"from\":\"/b\",\"path\":\"/c\"}]",
                  -EINVAL,
                  "move operation does not apply: doc is missing from path: /b: missing value");
        JSON_FAIL("{\"a\":1}",
                  "[{\"op\":\"copy\",\"from\":\"/b\",\"path\":\"/c\"}]",
                  -EINVAL,
                  "copy operation does not apply: doc is missing from path: /b: missing value");
        JSON_FAIL("{\"a\":1}",
                  "[{\"op\":\"test\",\"path\":\"/b\",\"value\":null}]",
                  -EINVAL,
                  "testing value /b failed: test failed");
}

static void json_patch_limits(void **state)
{
        json_t *original = parse("{\"a\":{}}"), *patch = json_array(), *result = NULL;
        struct xp_error err = {0};

        (void)state;
        for (int i = 0; i <= XP_PATCH_MAX_OPS; i++)
                assert_int_equal(
                    json_array_append_new(
                        patch, parse("{\"op\":\"test\",\"path\":\"\",\"value\":{\"a\":{}}}")),
                    0);
        assert_int_equal(xp_patch_apply(XP_PATCH_JSON, "Pod", original, patch, &result, &err),
                         -E2BIG);
        assert_string_equal(err.msg, "patch: 10001 operations, more than the limit of 10000");
        assert_null(result);
        /* exactly the limit is fine */
        assert_int_equal(json_array_remove(patch, 0), 0);
        assert_int_equal(xp_patch_apply(XP_PATCH_JSON, "Pod", original, patch, &result, &err), 0);
        json_decref(result);
        result = NULL;
        json_decref(patch);

        /* copying a list into itself doubles it each time: stopped before memory runs out */
        patch = json_array();
        for (int i = 0; i < 40; i++)
                assert_int_equal(
                    json_array_append_new(
                        patch, parse("{\"op\":\"copy\",\"from\":\"/a/l\",\"path\":\"/a/l/-\"}")),
                    0);
        assert_int_equal(xp_patch_apply(XP_PATCH_JSON,
                                        "Pod",
                                        parse_keep(&original, "{\"a\":{\"l\":[0]}}"),
                                        patch,
                                        &result,
                                        &err),
                         -E2BIG);
        assert_string_equal(
            err.msg, "patch[18] (copy /a/l/-): the result would hold more than 1048576 values");
        assert_null(result);
        json_decref(patch);

        /* nesting grows one level per copy into a child */
        patch = json_array();
        for (int i = 0; i < 150; i++)
                assert_int_equal(
                    json_array_append_new(
                        patch, parse("{\"op\":\"copy\",\"from\":\"/a\",\"path\":\"/a/x\"}")),
                    0);
        assert_int_equal(
            xp_patch_apply(
                XP_PATCH_JSON, "Pod", parse_keep(&original, "{\"a\":{}}"), patch, &result, &err),
            -E2BIG);
        assert_string_equal(err.msg,
                            "patch[99] (copy /a/x): the result would nest deeper than 100 levels");
        assert_null(result);
        json_decref(patch);
        json_decref(original);
}

/* RFC 7386 appendix A */
static void merge_patch_rfc_examples(void **state)
{
        static const char *const cases[][3] = {
            {"{\"a\":\"b\"}", "{\"a\":\"c\"}", "{\"a\":\"c\"}"},
            {"{\"a\":\"b\"}", "{\"b\":\"c\"}", "{\"a\":\"b\",\"b\":\"c\"}"},
            {"{\"a\":\"b\"}", "{\"a\":null}", "{}"},
            {"{\"a\":\"b\",\"b\":\"c\"}", "{\"a\":null}", "{\"b\":\"c\"}"},
            {"{\"a\":[\"b\"]}", "{\"a\":\"c\"}", "{\"a\":\"c\"}"},
            {"{\"a\":\"c\"}", "{\"a\":[\"b\"]}", "{\"a\":[\"b\"]}"},
            {"{\"a\":{\"b\":\"c\"}}", "{\"a\":{\"b\":\"d\",\"c\":null}}", "{\"a\":{\"b\":\"d\"}}"},
            {"{\"a\":[{\"b\":\"c\"}]}", "{\"a\":[1]}", "{\"a\":[1]}"},
            {"[\"a\",\"b\"]", "[\"c\",\"d\"]", "[\"c\",\"d\"]"},
            {"{\"a\":\"b\"}", "[\"c\"]", "[\"c\"]"},
            {"{\"a\":\"foo\"}", "null", "null"},
            {"{\"a\":\"foo\"}", "\"bar\"", "\"bar\""},
            {"{\"e\":null}", "{\"a\":1}", "{\"e\":null,\"a\":1}"},
            {"[1,2]", "{\"a\":\"b\",\"c\":null}", "{\"a\":\"b\"}"},
            {"{}", "{\"a\":{\"bb\":{\"ccc\":null}}}", "{\"a\":{\"bb\":{}}}"},
        };

        (void)state;
        for (size_t i = 0; i < XP_ELEMENTSOF(cases); i++)
                MERGE_OK(cases[i][0], cases[i][1], cases[i][2]);
        /* merge patch knows no merge keys: lists are replaced even for a Pod */
        MERGE_OK("{\"spec\":{\"containers\":[{\"name\":\"a\"},{\"name\":\"b\"}]}}",
                 "{\"spec\":{\"containers\":[{\"name\":\"c\"}]}}",
                 "{\"spec\":{\"containers\":[{\"name\":\"c\"}]}}");
}

/* n nested lists: "[[...]]" */
static json_t *nested(int n)
{
        char text[512] = "";

        assert_true(n * 2 < (int)sizeof(text));
        memset(text, '[', (size_t)n);
        memset(text + n, ']', (size_t)n);
        return parse(text);
}

static void depth_limits(void **state)
{
        struct xp_error err = {0};
        json_t *value = nested(101), *result = NULL, *small = parse("{}");

        (void)state;
        assert_int_equal(xp_patch_apply(XP_PATCH_MERGE, "Pod", small, value, &result, &err),
                         -E2BIG);
        assert_string_equal(err.msg, "patch: nesting deeper than 100 levels");
        assert_int_equal(xp_patch_apply(XP_PATCH_STRATEGIC, "Pod", value, small, &result, &err),
                         -E2BIG);
        assert_string_equal(err.msg, "object: nesting deeper than 100 levels");
        assert_int_equal(xp_patch_merge_diff(small, value, &result), -E2BIG);
        assert_null(result);
        json_decref(value);

        /* 100 levels are allowed */
        value = nested(100);
        assert_int_equal(xp_patch_apply(XP_PATCH_MERGE, "Pod", small, value, &result, &err), 0);
        assert_true(json_equal(result, value));
        json_decref(result);
        json_decref(value);
        json_decref(small);
}

static const char *pod =
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\","
    "\"metadata\":{\"name\":\"web\",\"labels\":{\"app\":\"web\"},\"finalizers\":[\"a\",\"b\"]},"
    "\"spec\":{\"nodeName\":\"n1\",\"containers\":["
    "{\"name\":\"web\",\"image\":\"nginx:1\",\"env\":[{\"name\":\"A\",\"value\":\"1\"}],"
    "\"ports\":[{\"containerPort\":80,\"protocol\":\"TCP\"}]},"
    "{\"name\":\"sidecar\",\"image\":\"busybox\"}],"
    "\"tolerations\":[{\"key\":\"t1\"},{\"key\":\"t2\"}]},"
    "\"status\":{\"phase\":\"Running\",\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\"},"
    "{\"type\":\"Initialized\",\"status\":\"True\"}]}}";

/* What kubectl apply sends to change an image, add an env var and drop a container. */
/* The agent's status write: the result shares the spec, and below a changed map what the patch
 * leaves alone, with the original, which stays as it was. */
static void strategic_sharing_copies_only_the_patched_path(void **state)
{
        json_t *original = parse(
            "{\"metadata\":{\"name\":\"p\",\"labels\":{\"a\":\"1\"},\"annotations\":{\"n\":\"1\"}},"
            "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]},"
            "\"status\":{\"phase\":\"Pending\",\"conditions\":[{\"type\":\"PodScheduled\"}]}}");
        json_t *status = parse("{\"status\":{\"$patch\":\"replace\",\"phase\":\"Running\"}}");
        json_t *labels = parse("{\"metadata\":{\"labels\":{\"b\":\"2\"}}}");
        json_t *before = json_deep_copy(original), *copied = NULL, *shared = NULL;
        struct xp_error err = {0};

        (void)state;
        assert_int_equal(
            xp_patch_apply_sharing(XP_PATCH_STRATEGIC, "Pod", original, status, &shared, &err), 0);
        assert_ptr_equal(json_object_get(shared, "spec"), json_object_get(original, "spec"));
        assert_ptr_equal(json_object_get(shared, "metadata"),
                         json_object_get(original, "metadata"));
        assert_json(json_object_get(shared, "status"), "{\"phase\":\"Running\"}");
        assert_true(json_equal(original, before));
        assert_int_equal(xp_patch_apply(XP_PATCH_STRATEGIC, "Pod", original, status, &copied, &err),
                         0);
        assert_true(json_equal(shared, copied));
        assert_ptr_not_equal(json_object_get(copied, "spec"), json_object_get(original, "spec"));
        json_decref(shared);
        json_decref(copied);

        assert_int_equal(
            xp_patch_apply_sharing(XP_PATCH_STRATEGIC, "Pod", original, labels, &shared, &err), 0);
        assert_ptr_not_equal(json_object_get(shared, "metadata"),
                             json_object_get(original, "metadata"));
        assert_ptr_equal(json_object_get(json_object_get(shared, "metadata"), "annotations"),
                         json_object_get(json_object_get(original, "metadata"), "annotations"));
        assert_json(json_object_get(json_object_get(shared, "metadata"), "labels"),
                    "{\"a\":\"1\",\"b\":\"2\"}");
        assert_true(json_equal(original, before));
        json_decref(shared);
        json_decref(original);
        json_decref(status);
        json_decref(labels);
        json_decref(before);
}

/*
 * A node's whole status (`$patch: replace`) is taken from the patch as it is, not rebuilt value
 * by value, where the merge would rebuild it unchanged; where it would not (a key twice, a null, a
 * directive, a value twice in a set) the merge runs, and the shared result is the copied one.
 */
static void strategic_sharing_takes_plain_values_from_the_patch(void **state)
{
        json_t *original = parse("{\"metadata\":{\"name\":\"p\"},\"spec\":{},"
                                 "\"status\":{\"phase\":\"Pending\",\"conditions\":[{\"type\":"
                                 "\"PodScheduled\",\"status\":\"True\"}]}}");
        json_t *patch = parse(
            "{\"status\":{\"$patch\":\"replace\",\"phase\":\"Running\",\"podIPs\":[{\"ip\":\"1.2.3.4\"}],"
            "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"},{\"type\":\"PodScheduled\","
            "\"status\":\"True\"}],\"containerStatuses\":[{\"name\":\"c\",\"state\":{\"running\":{}},"
            "\"ready\":true}],\"startTime\":\"2026-12-06T08:00:00Z\"}}");
        const json_t *given = json_object_get(patch, "status"), *status;
        json_t *shared = NULL;
        struct xp_error err = {0};

        (void)state;
        assert_int_equal(
            xp_patch_apply_sharing(XP_PATCH_STRATEGIC, "Pod", original, patch, &shared, &err), 0);
        status = json_object_get(shared, "status");
        assert_ptr_equal(json_object_get(status, "conditions"),
                         json_object_get(given, "conditions"));
        assert_ptr_equal(json_object_get(status, "containerStatuses"),
                         json_object_get(given, "containerStatuses"));
        assert_ptr_equal(json_object_get(status, "podIPs"), json_object_get(given, "podIPs"));
        assert_null(json_object_get(status, "$patch"));
        json_decref(shared);
        json_decref(original);
        json_decref(patch);

        /* a merge key twice: the two merge into one */
        SMP_OK("Pod",
               "{\"status\":{\"phase\":\"Pending\"}}",
               "{\"status\":{\"$patch\":\"replace\",\"conditions\":[{\"type\":\"Ready\",\"status\":"
               "\"False\"},{\"type\":\"Ready\",\"reason\":\"x\"}]}}",
               "{\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\",\"reason\":"
               "\"x\"}]}}");
        /* a null in a new map deletes its member; in a list without a strategy it stays */
        SMP_OK(
            "Pod",
            "{\"metadata\":{\"name\":\"p\"}}",
            "{\"metadata\":{\"labels\":{\"a\":\"1\",\"b\":null}},\"spec\":{\"tolerations\":[null,"
            "{\"key\":\"k\"}]}}",
            "{\"metadata\":{\"name\":\"p\",\"labels\":{\"a\":\"1\"}},\"spec\":{\"tolerations\":["
            "null,{\"key\":\"k\"}]}}");
        /* a value twice in a set goes once */
        SMP_OK("Pod",
               "{\"metadata\":{\"name\":\"p\"}}",
               "{\"metadata\":{\"finalizers\":[\"a\",\"b\",\"a\"]}}",
               "{\"metadata\":{\"name\":\"p\",\"finalizers\":[\"a\",\"b\"]}}");
        /* a directive deep in a new list applies */
        SMP_OK(
            "Pod",
            "{\"spec\":{}}",
            "{\"spec\":{\"containers\":[{\"name\":\"c\",\"env\":[{\"name\":\"A\",\"value\":\"1\"},"
            "{\"name\":\"B\",\"$patch\":\"delete\"}]}]}}",
            "{\"spec\":{\"containers\":[{\"name\":\"c\",\"env\":[{\"name\":\"A\",\"value\":"
            "\"1\"}]}]}}");
}

static void strategic_kubectl_apply(void **state)
{
        (void)state;
        SMP_OK(
            "Pod",
            pod,
            "{\"metadata\":{\"labels\":{\"tier\":\"front\"}},"
            "\"spec\":{\"$setElementOrder/containers\":[{\"name\":\"web\"}],"
            "\"containers\":[{\"name\":\"web\",\"image\":\"nginx:2\","
            "\"$setElementOrder/env\":[{\"name\":\"A\"},{\"name\":\"B\"}],"
            "\"env\":[{\"name\":\"B\",\"value\":\"2\"}]},"
            "{\"name\":\"sidecar\",\"$patch\":\"delete\"}]}}",
            "{\"apiVersion\":\"v1\",\"kind\":\"Pod\","
            "\"metadata\":{\"name\":\"web\",\"labels\":{\"app\":\"web\",\"tier\":\"front\"},\"finalizers\":[\"a\",\"b\"]},"
            "\"spec\":{\"nodeName\":\"n1\",\"containers\":["
            "{\"name\":\"web\",\"image\":\"nginx:2\",\"env\":[{\"name\":\"A\",\"value\":\"1\"},{\"name\":\"B\",\"value\":\"2\"}],"
            "\"ports\":[{\"containerPort\":80,\"protocol\":\"TCP\"}]}],"
            "\"tolerations\":[{\"key\":\"t1\"},{\"key\":\"t2\"}]},"
            "\"status\":{\"phase\":\"Running\",\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\"},"
            "{\"type\":\"Initialized\",\"status\":\"True\"}]}}");
}

static void strategic_lists(void **state)
{
        (void)state;
        /* by merge key: the element merges, others stay */
        SMP_OK(
            "Pod",
            "{\"spec\":{\"containers\":[{\"name\":\"a\",\"image\":\"x\",\"tty\":true},{\"name\":\"b\"}]}}",
            "{\"spec\":{\"containers\":[{\"name\":\"a\",\"image\":\"y\",\"tty\":null}]}}",
            "{\"spec\":{\"containers\":[{\"name\":\"a\",\"image\":\"y\"},{\"name\":\"b\"}]}}");
        /* new elements from a patch without $setElementOrder go before the server's (as Kubernetes)
         */
        SMP_OK("Pod",
               "{\"spec\":{\"containers\":[{\"name\":\"a\"},{\"name\":\"b\"}]}}",
               "{\"spec\":{\"containers\":[{\"name\":\"c\"}]}}",
               "{\"spec\":{\"containers\":[{\"name\":\"c\"},{\"name\":\"a\"},{\"name\":\"b\"}]}}");
        /* patch order wins for elements it names; server-only ones keep their place */
        SMP_OK(
            "Pod",
            "{\"spec\":{\"containers\":[{\"name\":\"a\"},{\"name\":\"b\"},{\"name\":\"c\"}]}}",
            "{\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"i\"},{\"name\":\"a\"}]}}",
            "{\"spec\":{\"containers\":[{\"name\":\"b\"},{\"name\":\"c\",\"image\":\"i\"},{\"name\":\"a\"}]}}");
        /* $setElementOrder alone reorders */
        SMP_OK(
            "Pod",
            "{\"spec\":{\"containers\":[{\"name\":\"a\"},{\"name\":\"b\"},{\"name\":\"c\"}]}}",
            "{\"spec\":{\"$setElementOrder/containers\":[{\"name\":\"c\"},{\"name\":\"a\"},{\"name\":\"b\"}]}}",
            "{\"spec\":{\"containers\":[{\"name\":\"c\"},{\"name\":\"a\"},{\"name\":\"b\"}]}}");
        /* paths through list elements: env by name, ports by containerPort, mounts by mountPath */
        SMP_OK(
            "Pod",
            "{\"spec\":{\"initContainers\":[{\"name\":\"i\",\"env\":[{\"name\":\"A\",\"value\":\"1\"}],"
            "\"ports\":[{\"containerPort\":80,\"name\":\"http\"}],"
            "\"volumeMounts\":[{\"mountPath\":\"/d\",\"name\":\"v\"}]}]}}",
            "{\"spec\":{\"initContainers\":[{\"name\":\"i\",\"env\":[{\"name\":\"A\",\"value\":\"2\"}],"
            "\"ports\":[{\"containerPort\":80,\"protocol\":\"TCP\"}],"
            "\"volumeMounts\":[{\"mountPath\":\"/d\",\"readOnly\":true}]}]}}",
            "{\"spec\":{\"initContainers\":[{\"name\":\"i\",\"env\":[{\"name\":\"A\",\"value\":\"2\"}],"
            "\"ports\":[{\"containerPort\":80,\"name\":\"http\",\"protocol\":\"TCP\"}],"
            "\"volumeMounts\":[{\"mountPath\":\"/d\",\"name\":\"v\",\"readOnly\":true}]}]}}");
        /* lists without a strategy are replaced: Pod tolerations, Node taints */
        SMP_OK("Pod",
               "{\"spec\":{\"tolerations\":[{\"key\":\"t1\"},{\"key\":\"t2\"}]}}",
               "{\"spec\":{\"tolerations\":[{\"key\":\"t3\"}]}}",
               "{\"spec\":{\"tolerations\":[{\"key\":\"t3\"}]}}");
        SMP_OK("Node",
               "{\"spec\":{\"taints\":[{\"key\":\"a\",\"effect\":\"NoSchedule\"}]}}",
               "{\"spec\":{\"taints\":[{\"key\":\"b\",\"effect\":\"NoSchedule\"}]}}",
               "{\"spec\":{\"taints\":[{\"key\":\"b\",\"effect\":\"NoSchedule\"}]}}");
        /* Node status lists by type; podCIDRs merge as a set */
        SMP_OK(
            "Node",
            "{\"spec\":{\"podCIDRs\":[\"10.0.0.0/24\"]},\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}],"
            "\"addresses\":[{\"type\":\"InternalIP\",\"address\":\"10.1.1.1\"}]}}",
            "{\"spec\":{\"podCIDRs\":[\"fd00::/64\"]},\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\"}],"
            "\"addresses\":[{\"type\":\"Hostname\",\"address\":\"n1\"}]}}",
            "{\"spec\":{\"podCIDRs\":[\"fd00::/64\",\"10.0.0.0/24\"]},\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\"}],"
            "\"addresses\":[{\"type\":\"Hostname\",\"address\":\"n1\"},{\"type\":\"InternalIP\",\"address\":\"10.1.1.1\"}]}}");
        /* the same path on a kind without the tag is replaced */
        SMP_OK("Event",
               "{\"status\":{\"conditions\":[{\"type\":\"A\"}]}}",
               "{\"status\":{\"conditions\":[{\"type\":\"B\"}]}}",
               "{\"status\":{\"conditions\":[{\"type\":\"B\"}]}}");
        SMP_OK("Namespace",
               "{\"status\":{\"conditions\":[{\"type\":\"A\"}]}}",
               "{\"status\":{\"conditions\":[{\"type\":\"B\"}]}}",
               "{\"status\":{\"conditions\":[{\"type\":\"B\"},{\"type\":\"A\"}]}}");
        /* metadata lists for every known kind: finalizers union, ownerReferences by uid */
        SMP_OK(
            "Lease",
            "{\"metadata\":{\"finalizers\":[\"a\",\"b\"],\"ownerReferences\":[{\"uid\":\"1\",\"name\":\"x\"}]}}",
            "{\"metadata\":{\"finalizers\":[\"b\",\"c\"],\"ownerReferences\":[{\"uid\":\"1\",\"name\":\"y\"}]}}",
            "{\"metadata\":{\"finalizers\":[\"a\",\"b\",\"c\"],\"ownerReferences\":[{\"uid\":\"1\",\"name\":\"y\"}]}}");
        /* an unknown kind makes a strategic patch a merge patch: lists replaced, no directives */
        SMP_OK("Widget",
               "{\"metadata\":{\"finalizers\":[\"a\"]}}",
               "{\"metadata\":{\"finalizers\":[\"b\"],\"x\":null}}",
               "{\"metadata\":{\"finalizers\":[\"b\"]}}");
        /* a list the original lacks is taken from the patch, directives applied */
        SMP_OK(
            "Pod",
            "{\"spec\":{}}",
            "{\"spec\":{\"containers\":[{\"name\":\"a\",\"env\":[{\"name\":\"X\",\"$patch\":\"delete\"}]},{\"name\":\"b\",\"$patch\":\"delete\"}]}}",
            "{\"spec\":{\"containers\":[{\"name\":\"a\",\"env\":[]}]}}");
}

static void strategic_directives(void **state)
{
        (void)state;
        /* $patch: replace in a map replaces it */
        SMP_OK("Pod",
               "{\"metadata\":{\"labels\":{\"a\":\"1\",\"b\":\"2\"}}}",
               "{\"metadata\":{\"labels\":{\"$patch\":\"replace\",\"c\":\"3\"}}}",
               "{\"metadata\":{\"labels\":{\"c\":\"3\"}}}");
        /* $patch: delete in a map deletes it */
        SMP_OK("Pod",
               "{\"metadata\":{\"labels\":{\"a\":\"1\"},\"name\":\"p\"}}",
               "{\"metadata\":{\"labels\":{\"$patch\":\"delete\"}}}",
               "{\"metadata\":{\"name\":\"p\"}}");
        /* $patch: merge is the default, spelled out */
        SMP_OK("Pod",
               "{\"metadata\":{\"labels\":{\"a\":\"1\"}}}",
               "{\"metadata\":{\"labels\":{\"$patch\":\"merge\",\"b\":\"2\"}}}",
               "{\"metadata\":{\"labels\":{\"a\":\"1\",\"b\":\"2\"}}}");
        /* $patch: replace as a list element: the patch's elements are the list */
        SMP_OK("Pod",
               "{\"spec\":{\"containers\":[{\"name\":\"a\",\"image\":\"x\"},{\"name\":\"b\"}]}}",
               "{\"spec\":{\"containers\":[{\"name\":\"a\"},{\"$patch\":\"replace\"}]}}",
               "{\"spec\":{\"containers\":[{\"name\":\"a\"}]}}");
        /* $patch: delete as a list element, by merge key */
        SMP_OK("Pod",
               "{\"spec\":{\"volumes\":[{\"name\":\"a\"},{\"name\":\"b\"}]}}",
               "{\"spec\":{\"volumes\":[{\"name\":\"a\",\"$patch\":\"delete\"}]}}",
               "{\"spec\":{\"volumes\":[{\"name\":\"b\"}]}}");
        /* $deleteFromPrimitiveList */
        SMP_OK("Pod",
               "{\"metadata\":{\"finalizers\":[\"a\",\"b\",\"c\"]}}",
               "{\"metadata\":{\"$deleteFromPrimitiveList/finalizers\":[\"b\",\"x\"]}}",
               "{\"metadata\":{\"finalizers\":[\"a\",\"c\"]}}");
        /* with the list and an order, as kubectl apply sends */
        SMP_OK("Pod",
               "{\"metadata\":{\"finalizers\":[\"a\",\"b\",\"c\"]}}",
               "{\"metadata\":{\"$setElementOrder/finalizers\":[\"d\",\"c\",\"a\"],"
               "\"$deleteFromPrimitiveList/finalizers\":[\"b\"],\"finalizers\":[\"d\"]}}",
               "{\"metadata\":{\"finalizers\":[\"d\",\"c\",\"a\"]}}");
        /* $retainKeys drops what it does not list */
        SMP_OK(
            "Pod",
            "{\"spec\":{\"volumes\":[{\"name\":\"v\",\"emptyDir\":{},\"hostPath\":{\"path\":\"/x\"}}]}}",
            "{\"spec\":{\"volumes\":[{\"name\":\"v\",\"$retainKeys\":[\"name\",\"configMap\"],\"configMap\":{\"name\":\"c\"}}]}}",
            "{\"spec\":{\"volumes\":[{\"name\":\"v\",\"configMap\":{\"name\":\"c\"}}]}}");
        /* $patch: delete at the top empties the object */
        SMP_OK("Pod", "{\"a\":1}", "{\"$patch\":\"delete\"}", "{}");
        /* null deletes; nulls in new maps are dropped */
        SMP_OK("Pod",
               "{\"metadata\":{\"name\":\"p\",\"labels\":{\"a\":\"1\"}}}",
               "{\"metadata\":{\"labels\":null,\"annotations\":{\"x\":\"1\",\"y\":null}}}",
               "{\"metadata\":{\"name\":\"p\",\"annotations\":{\"x\":\"1\"}}}");
}

static void strategic_errors(void **state)
{
        (void)state;
        SMP_FAIL(
            "Pod", "{}", "[]", -EINVAL, "patch: a strategic merge patch must be a JSON object");
        SMP_FAIL(
            "Pod",
            "{\"metadata\":{}}",
            "{\"metadata\":{\"$foo\":1}}",
            -EINVAL,
            "metadata: unknown directive \"$foo\" (expected $patch, $retainKeys, $setElementOrder/<field> or $deleteFromPrimitiveList/<field>)");
        SMP_FAIL("Pod",
                 "{}",
                 "{\"$setElementOrder/\":[]}",
                 -EINVAL,
                 "patch: directive \"$setElementOrder/\" names no field");
        SMP_FAIL(
            "Pod",
            "{\"metadata\":{\"labels\":{}}}",
            "{\"metadata\":{\"labels\":{\"$patch\":\"nuke\"}}}",
            -EINVAL,
            "metadata.labels: unknown $patch value \"nuke\" (expected replace, delete or merge)");
        SMP_FAIL("Pod",
                 "{\"metadata\":{\"labels\":{}}}",
                 "{\"metadata\":{\"labels\":{\"$patch\":true}}}",
                 -EINVAL,
                 "metadata.labels: $patch is not a string");
        SMP_FAIL("Pod",
                 "{\"spec\":{\"containers\":[{\"name\":\"a\"}]}}",
                 "{\"spec\":{\"containers\":[{\"name\":\"a\"},{\"image\":\"x\"}]}}",
                 -EINVAL,
                 "spec.containers[1]: missing merge key \"name\"");
        SMP_FAIL("Pod",
                 "{\"spec\":{\"containers\":[{\"name\":\"a\"}]}}",
                 "{\"spec\":{\"containers\":[{\"name\":\"a\",\"env\":[{\"value\":\"1\"}]}]}}",
                 -EINVAL,
                 "spec.containers[0].env[0]: missing merge key \"name\"");
        SMP_FAIL("Pod",
                 "{\"spec\":{\"containers\":[{\"name\":\"a\"}]}}",
                 "{\"spec\":{\"containers\":[\"a\"]}}",
                 -EINVAL,
                 "spec.containers[0]: not an object, but this list merges objects by \"name\"");
        SMP_FAIL("Pod",
                 "{\"spec\":{\"containers\":[{\"name\":\"a\"}]}}",
                 "{\"spec\":{\"containers\":[{\"$patch\":\"delete\"}]}}",
                 -EINVAL,
                 "spec.containers[0]: $patch: delete needs the merge key \"name\"");
        SMP_FAIL(
            "Pod",
            "{\"spec\":{\"containers\":[{\"name\":\"a\"}]}}",
            "{\"spec\":{\"containers\":[{\"name\":\"a\",\"$patch\":\"drop\"}]}}",
            -EINVAL,
            "spec.containers[0]: unknown $patch value \"drop\" (expected replace, delete or merge)");
        SMP_FAIL("Pod",
                 "{\"spec\":{\"containers\":[{\"name\":\"a\"}]}}",
                 "{\"spec\":{\"$setElementOrder/containers\":[{\"image\":\"a\"}]}}",
                 -EINVAL,
                 "spec.containers: $setElementOrder[0]: missing merge key \"name\"");
        SMP_FAIL("Pod",
                 "{\"spec\":{\"containers\":[]}}",
                 "{\"spec\":{\"$setElementOrder/containers\":{}}}",
                 -EINVAL,
                 "spec.containers: $setElementOrder/containers is not a list");
        SMP_FAIL("Pod",
                 "{\"metadata\":{\"finalizers\":[]}}",
                 "{\"metadata\":{\"$deleteFromPrimitiveList/finalizers\":\"a\"}}",
                 -EINVAL,
                 "metadata.finalizers: $deleteFromPrimitiveList/finalizers is not a list");
        SMP_FAIL("Pod",
                 "{\"metadata\":{\"finalizers\":[\"a\"]}}",
                 "{\"metadata\":{\"$setElementOrder/finalizers\":[\"a\"],\"finalizers\":{}}}",
                 -EINVAL,
                 "metadata.finalizers: $setElementOrder/finalizers and finalizers need a list");
        SMP_FAIL(
            "Pod",
            "{\"metadata\":{\"finalizers\":[]}}",
            "{\"metadata\":{\"finalizers\":[{\"a\":1}]}}",
            -EINVAL,
            "metadata.finalizers: element 0 is an object, but this list merges primitive values");
        SMP_FAIL(
            "Pod",
            "{\"spec\":{\"volumes\":[{\"name\":\"v\"}]}}",
            "{\"spec\":{\"volumes\":[{\"name\":\"v\",\"$retainKeys\":[\"name\"],\"emptyDir\":{}}]}}",
            -EINVAL,
            "spec.volumes[0]: \"emptyDir\" is set but not in $retainKeys");
        SMP_FAIL("Pod",
                 "{\"spec\":{}}",
                 "{\"spec\":{\"$retainKeys\":\"name\"}}",
                 -EINVAL,
                 "spec: $retainKeys is not a list");
        SMP_FAIL("Pod",
                 "{\"spec\":{}}",
                 "{\"spec\":{\"$retainKeys\":[1]}}",
                 -EINVAL,
                 "spec: $retainKeys[0] is not a string");
        /* a failure deep in the patch after earlier changes leaves the original as it was */
        SMP_FAIL(
            "Pod",
            pod,
            "{\"metadata\":{\"labels\":{\"x\":\"y\"}},\"spec\":{\"nodeName\":null,\"containers\":[{\"name\":\"web\",\"image\":\"z\",\"env\":[{\"$patch\":\"delete\"}]}]}}",
            -EINVAL,
            "spec.containers[0].env[0]: $patch: delete needs the merge key \"name\"");
}

static void strategic_limits(void **state)
{
        json_t *original = parse("{\"spec\":{}}"), *patch = parse("{\"spec\":{\"containers\":[]}}");
        json_t *list = json_object_get(json_object_get(patch, "spec"), "containers"),
               *result = NULL;
        struct xp_error err = {0};
        char name[32];

        (void)state;
        for (int i = 0; i <= 10000; i++) {
                snprintf(name, sizeof(name), "c%d", i);
                assert_int_equal(json_array_append_new(list, json_pack("{ss}", "name", name)), 0);
        }
        assert_int_equal(xp_patch_apply(XP_PATCH_STRATEGIC, "Pod", original, patch, &result, &err),
                         -E2BIG);
        assert_string_equal(
            err.msg,
            "spec.containers: the patch list has 10001 elements, more than the limit of 10000 for a merged list");
        assert_null(result);
        json_decref(original);
        json_decref(patch);
}

static void list_strategies(void **state)
{
        const char *key = "unset";

        (void)state;
        assert_true(
            xp_patch_list_strategy("Pod", "spec.ephemeralContainers[].volumeDevices", &key));
        assert_string_equal(key, "devicePath");
        assert_true(xp_patch_list_strategy("Pod", "spec.hostAliases", &key));
        assert_string_equal(key, "ip");
        assert_true(xp_patch_list_strategy("Pod", "spec.imagePullSecrets", &key));
        assert_string_equal(key, "name");
        assert_true(xp_patch_list_strategy("Node", "metadata.finalizers", &key));
        assert_null(key);
        assert_false(xp_patch_list_strategy("Node", "spec.taints", &key));
        assert_false(xp_patch_list_strategy("Pod", "spec.tolerations", &key));
        assert_false(xp_patch_list_strategy("Widget", "metadata.finalizers", &key));
        assert_false(xp_patch_list_strategy(NULL, "metadata.finalizers", &key));
        assert_true(xp_patch_kind_known("Lease"));
        assert_false(xp_patch_kind_known("lease"));
}

static void check_diff(const char *from_text, const char *to_text, const char *expected)
{
        json_t *from = parse(from_text), *to = parse(to_text), *patch = NULL, *applied = NULL;

        assert_int_equal(xp_patch_merge_diff(from, to, &patch), 0);
        assert_json(patch, expected);
        /* and the diff is the patch that makes to out of from */
        assert_int_equal(xp_patch_apply(XP_PATCH_MERGE, NULL, from, patch, &applied, NULL), 0);
        assert_true(json_equal(applied, to));
        json_decref(from);
        json_decref(to);
        json_decref(patch);
        json_decref(applied);
}

static void merge_diff(void **state)
{
        (void)state;
        check_diff("{\"a\":1,\"b\":{\"c\":[1]}}", "{\"a\":1,\"b\":{\"c\":[1]}}", "{}");
        check_diff("{\"a\":1,\"b\":2}", "{\"a\":3}", "{\"a\":3,\"b\":null}");
        check_diff("{\"m\":{\"x\":1,\"y\":2}}",
                   "{\"m\":{\"x\":1,\"z\":3}}",
                   "{\"m\":{\"y\":null,\"z\":3}}");
        check_diff("{\"l\":[1,2,3]}", "{\"l\":[1,3]}", "{\"l\":[1,3]}");
        check_diff("{\"m\":{\"x\":1}}", "{\"m\":5}", "{\"m\":5}");
        check_diff("{\"m\":5}", "{\"m\":{\"x\":1}}", "{\"m\":{\"x\":1}}");
        check_diff("[1]", "[2]", "[2]");
        check_diff("[1]", "[1]", "[1]");
        check_diff("5", "{\"a\":1}", "{\"a\":1}");
        check_diff("{\"a\":1}", "{}", "{\"a\":null}");
}

static void
check_three_way(const char *last, const char *modified, const char *current, const char *expected)
{
        json_t *l = last ? parse(last) : NULL, *m = parse(modified), *c = parse(current),
               *patch = NULL;

        assert_int_equal(xp_patch_merge_three_way(l, m, c, &patch), 0);
        assert_json(patch, expected);
        json_decref(l);
        json_decref(m);
        json_decref(c);
        json_decref(patch);
}

static void merge_three_way(void **state)
{
        json_t *patch = NULL, *obj = parse("{}"), *list = parse("[]");

        (void)state;
        /* unchanged: nothing to send */
        check_three_way(
            "{\"spec\":{\"image\":\"a\"}}",
            "{\"spec\":{\"image\":\"a\"}}",
            "{\"spec\":{\"image\":\"a\",\"nodeName\":\"n1\"},\"status\":{\"phase\":\"Running\"}}",
            "{}");
        /* a field dropped from the manifest is deleted; fields set by others stay */
        check_three_way(
            "{\"metadata\":{\"labels\":{\"a\":\"1\",\"b\":\"2\"}},\"spec\":{\"image\":\"a\"}}",
            "{\"metadata\":{\"labels\":{\"a\":\"1\"}},\"spec\":{\"image\":\"b\"}}",
            "{\"metadata\":{\"labels\":{\"a\":\"1\",\"b\":\"2\",\"c\":\"3\"}},\"spec\":{\"image\":\"a\",\"nodeName\":\"n1\"},\"status\":{}}",
            "{\"metadata\":{\"labels\":{\"b\":null}},\"spec\":{\"image\":\"b\"}}");
        /* without a last applied state nothing is deleted; a field changed live is set back */
        check_three_way(NULL,
                        "{\"spec\":{\"replicas\":2,\"l\":[1]}}",
                        "{\"spec\":{\"replicas\":5,\"l\":[1],\"x\":1}}",
                        "{\"spec\":{\"replicas\":2}}");
        /* a whole map dropped from the manifest */
        check_three_way(
            "{\"a\":{\"x\":1},\"b\":1}", "{\"b\":1}", "{\"a\":{\"x\":1},\"b\":1}", "{\"a\":null}");
        /* new in the manifest */
        check_three_way("{}", "{\"a\":{\"x\":1}}", "{\"a\":7}", "{\"a\":{\"x\":1}}");
        assert_int_equal(xp_patch_merge_three_way(NULL, list, obj, &patch), -EINVAL);
        assert_int_equal(xp_patch_merge_three_way(list, obj, obj, &patch), -EINVAL);
        assert_null(patch);
        json_decref(obj);
        json_decref(list);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(content_types),
            cmocka_unit_test(json_patch_rfc_examples),
            cmocka_unit_test(json_patch_ops),
            cmocka_unit_test(json_patch_errors),
            cmocka_unit_test(json_patch_limits),
            cmocka_unit_test(merge_patch_rfc_examples),
            cmocka_unit_test(depth_limits),
            cmocka_unit_test(strategic_kubectl_apply),
            cmocka_unit_test(strategic_sharing_copies_only_the_patched_path),
            cmocka_unit_test(strategic_sharing_takes_plain_values_from_the_patch),
            cmocka_unit_test(strategic_lists),
            cmocka_unit_test(strategic_directives),
            cmocka_unit_test(strategic_errors),
            cmocka_unit_test(strategic_limits),
            cmocka_unit_test(list_strategies),
            cmocka_unit_test(merge_diff),
            cmocka_unit_test(merge_three_way),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
