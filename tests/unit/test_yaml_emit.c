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
#include "xpool/yaml.h"

/* Dumps value, checks the text, and returns it (caller frees). */
static char *dump(const json_t *value)
{
        char *text = NULL;
        size_t len = 0;

        assert_int_equal(xp_yaml_dump(value, &text, &len), 0);
        assert_non_null(text);
        assert_int_equal(strlen(text), len);
        return text;
}

/* Loads text, which must hold exactly one document, and returns its root (caller decrefs). */
static json_t *load_one(const char *text)
{
        struct xp_yaml_document *docs = NULL;
        struct xp_error err = {0};
        size_t n = 0;
        json_t *root;

        if (xp_yaml_load(text, strlen(text), "dump.yaml", &docs, &n, &err) < 0)
                fail_msg("dump does not load: %s\n%s", err.msg, text);
        assert_int_equal(n, 1);
        root = json_incref(docs[0].root);
        xp_yaml_documents_free(docs, n);
        return root;
}

/* Dumps value and loads it back: the same value must come back. Returns the text. */
static char *round_trip(const json_t *value)
{
        char *text = dump(value);
        json_auto_t *back = load_one(text);

        if (!json_equal(back, value)) {
                _cleanup_free_ char *want = json_dumps(value, JSON_ENCODE_ANY);
                _cleanup_free_ char *got = json_dumps(back, JSON_ENCODE_ANY);

                fail_msg("round trip of %s gave %s through:\n%s", want, got, text);
        }
        return text;
}

static json_t *parse_json(const char *text)
{
        json_error_t error;
        json_t *value = json_loads(text, JSON_DECODE_ANY, &error);

        if (!value)
                fail_msg("bad test JSON: %s", error.text);
        return value;
}

static void pod_prints_like_kubectl(void **state)
{
        json_auto_t *pod = parse_json(
            "{\"apiVersion\": \"v1\", \"kind\": \"Pod\","
            " \"metadata\": {\"name\": \"train-0\", \"labels\": {}, \"annotations\": {\"note\": "
            "\"a: b\", \"enabled\": \"true\", \"replicas\": \"3\"}},"
            " \"spec\": {\"containers\": [{\"name\": \"trainer\", \"image\": \"ai:1.0\","
            " \"args\": [\"--lr\", \"0.001\", \"- x\"], \"env\": [],"
            " \"resources\": {\"limits\": {\"cpu\": \"8\", \"memory\": \"64Gi\","
            " \"nvidia.com/gpu\": \"4\"}},"
            " \"ports\": [{\"containerPort\": 29500, \"protocol\": \"TCP\"}]}],"
            " \"priority\": -10, \"ratio\": 0.5, \"whole\": 2.0, \"hostNetwork\": false,"
            " \"paused\": true, \"nodeName\": null, \"y\": \"yes\","
            " \"script\": \"set -e\\nrun\\n\", \"name\": \"GPU 显卡\"}}");
        _cleanup_free_ char *text = round_trip(pod);

        (void)state;
        assert_string_equal(text,
                            "apiVersion: v1\n"
                            "kind: Pod\n"
                            "metadata:\n"
                            "  name: train-0\n"
                            "  labels: {}\n"
                            "  annotations:\n"
                            "    note: 'a: b'\n"
                            "    enabled: \"true\"\n"
                            "    replicas: \"3\"\n"
                            "spec:\n"
                            "  containers:\n"
                            "  - name: trainer\n"
                            "    image: ai:1.0\n"
                            "    args:\n"
                            "    - --lr\n"
                            "    - \"0.001\"\n"
                            "    - '- x'\n"
                            "    env: []\n"
                            "    resources:\n"
                            "      limits:\n"
                            "        cpu: \"8\"\n"
                            "        memory: 64Gi\n"
                            "        nvidia.com/gpu: \"4\"\n"
                            "    ports:\n"
                            "    - containerPort: 29500\n"
                            "      protocol: TCP\n"
                            "  priority: -10\n"
                            "  ratio: 0.5\n"
                            "  whole: 2.0\n"
                            "  hostNetwork: false\n"
                            "  paused: true\n"
                            "  nodeName: null\n"
                            "  \"y\": \"yes\"\n"
                            "  script: |\n"
                            "    set -e\n"
                            "    run\n"
                            "  name: GPU 显卡\n");
}

/* Strings that plain would turn into something else, or that plain YAML cannot write. */
static const char *const tricky[] = {
    "",
    " a",
    "a ",
    " ",
    "true",
    "True",
    "FALSE",
    "yes",
    "Yes",
    "No",
    "on",
    "OFF",
    "y",
    "n",
    "~",
    "null",
    "Null",
    "NULL",
    "1",
    "-1",
    "+1",
    "1.5",
    "1e3",
    "1E-3",
    "0x10",
    "0X1F",
    "0o7",
    "017",
    "0b101",
    "1_000",
    ".5",
    "1.",
    ".inf",
    "-.inf",
    "+.Inf",
    ".nan",
    ".NaN",
    "1:20",
    "-1:20:30.5",
    "2026-12-02",
    "2026-12-02T15:04:05Z",
    "<<",
    "=",
    "- a",
    "-",
    "---",
    "...",
    "a: b",
    "a:",
    "a #b",
    "#a",
    "@a",
    "`a",
    "*a",
    "&a",
    "!a",
    "%a",
    "|a",
    ">a",
    "'a",
    "\"a",
    "{a",
    "[a",
    "]a",
    "}a",
    ",a",
    "?a",
    "? a",
    ":a",
    ": a",
    "a,b",
    "a\nb",
    "a\n",
    "a\n\n",
    "\n",
    "\na",
    " a\nb",
    "a \nb",
    "a\n b",
    "a\r\nb",
    "a\rb",
    "a\xc2\x85"
    "b",
    "a\xe2\x80\xa8"
    "b",
    "tab\there",
    "\t",
    "\\",
    "\xef\xbb\xbf"
    "bom",
    "\x7f",
    "\x01",
    "GPU 显卡",
    "\xf0\x9f\x98\x80",
    "nvidia.com/gpu",
    "500m",
    "2Gi",
    "0.5",
    "1.2.3",
    "v1.2.3",
    "9f1c3c2e-51a7-4d8e-9a55-2f1f6c0f0d11",
    "6.1.0-26-amd64",
    "10.0.0.5",
};

static void tricky_strings_round_trip(void **state)
{
        char long_string[301];

        (void)state;
        memset(long_string, 'x', sizeof(long_string) - 1);
        long_string[sizeof(long_string) - 1] = '\0';
        for (size_t i = 0; i <= XP_ELEMENTSOF(tricky); i++) {
                const char *s = i < XP_ELEMENTSOF(tricky) ? tricky[i] : long_string;
                json_auto_t *mapping = json_pack("{s:s}", "key", s);
                json_auto_t *list = json_pack("[s, s]", s, "after");
                json_auto_t *keyed = json_pack("{s:s, s:s}", s, "value", "next", s);
                json_auto_t *scalar = json_string(s);

                assert_non_null(mapping);
                assert_non_null(list);
                assert_non_null(keyed);
                assert_non_null(scalar);
                free(round_trip(mapping));
                free(round_trip(list));
                free(round_trip(keyed));
                free(round_trip(scalar));
        }
}

static void strings_with_nul_round_trip(void **state)
{
        json_auto_t *value = json_pack("{s:s%}", "k", "a\0b", (size_t)3);
        _cleanup_free_ char *text = round_trip(value);

        (void)state;
        assert_string_equal(text, "k: \"a\\0b\"\n");
}

static const struct {
        const char *string;
        const char *yaml; /* as the value of key k */
} exact[] = {
    {"", "k: \"\"\n"},
    {"true", "k: \"true\"\n"},
    {"yes", "k: \"yes\"\n"},
    {"1", "k: \"1\"\n"},
    {"0.5", "k: \"0.5\"\n"},
    {"1:20", "k: \"1:20\"\n"},
    {"~", "k: \"~\"\n"},
    {"2026-12-02T15:04:05Z", "k: \"2026-12-02T15:04:05Z\"\n"},
    {"- a", "k: '- a'\n"},
    {"*a", "k: '*a'\n"},
    {"a #b", "k: 'a #b'\n"},
    {"'a", "k: '''a'\n"},
    {" a", "k: ' a'\n"},
    {"tab\there", "k: \"tab\\there\"\n"},
    {"a\nb", "k: |-\n  a\n  b\n"},
    {"a\nb\n", "k: |\n  a\n  b\n"},
    {"a\r\nb", "k: \"a\\r\\nb\"\n"},
    {"nvidia.com/gpu", "k: nvidia.com/gpu\n"},
    {"500m", "k: 500m\n"},
    {"2Gi", "k: 2Gi\n"},
    {"GPU 显卡", "k: GPU 显卡\n"},
    {"a: b # c", "k: 'a: b # c'\n"},
    {"9f1c3c2e-51a7", "k: 9f1c3c2e-51a7\n"},
    {"1.2.3", "k: 1.2.3\n"},
    {"10.0.0.5", "k: 10.0.0.5\n"},
    {"1_000", "k: \"1_000\"\n"},
    {"0b101", "k: \"0b101\"\n"},
    {"y", "k: \"y\"\n"},
};

static void strings_print_exactly(void **state)
{
        (void)state;
        for (size_t i = 0; i < XP_ELEMENTSOF(exact); i++) {
                json_auto_t *value = json_pack("{s:s}", "k", exact[i].string);
                _cleanup_free_ char *text = round_trip(value);

                assert_string_equal(text, exact[i].yaml);
        }
}

static void keys_are_quoted_too(void **state)
{
        json_auto_t *value = parse_json("{\"true\": 1, \"1\": 2, \"<<\": 3, \"\": 4, \"on\": 5}");
        _cleanup_free_ char *text = round_trip(value);

        (void)state;
        assert_string_equal(text, "\"true\": 1\n\"1\": 2\n\"<<\": 3\n\"\": 4\n\"on\": 5\n");
}

static void long_strings_stay_on_one_line(void **state)
{
        char s[301];
        char want[320];
        json_auto_t *value;
        _cleanup_free_ char *text = NULL;

        (void)state;
        for (size_t i = 0; i < sizeof(s) - 1; i++)
                s[i] = i % 5 == 4 ? ' ' : 'w';
        s[sizeof(s) - 2] = 'w';
        s[sizeof(s) - 1] = '\0';
        value = json_pack("{s:s}", "k", s);
        text = round_trip(value);
        snprintf(want, sizeof(want), "k: %s\n", s);
        assert_string_equal(text, want);
}

static void numbers_keep_their_type(void **state)
{
        json_auto_t *value = json_pack("[I, I, I, f, f, f, f, f, f, f, b, b, n]",
                                       (json_int_t)0,
                                       (json_int_t)INT64_MAX,
                                       (json_int_t)INT64_MIN,
                                       2.0,
                                       0.1,
                                       -0.5,
                                       1.0 / 3.0,
                                       1e300,
                                       1e-300,
                                       123456789012345678.0,
                                       1,
                                       0,
                                       NULL);
        _cleanup_free_ char *text = NULL;

        (void)state;
        assert_non_null(value);
        text = round_trip(value);
        assert_string_equal(text,
                            "- 0\n"
                            "- 9223372036854775807\n"
                            "- -9223372036854775808\n"
                            "- 2.0\n"
                            "- 0.1\n"
                            "- -0.5\n"
                            "- 0.3333333333333333\n"
                            "- 1.0e+300\n"
                            "- 1.0e-300\n"
                            "- 1.2345678901234568e+17\n"
                            "- true\n"
                            "- false\n"
                            "- null\n");
}

static void nested_lists_and_empties(void **state)
{
        json_auto_t *value =
            parse_json("{\"a\": [[1, [2]], {}, [], {\"b\": []}], \"c\": {\"d\": {\"e\": {}}}}");
        _cleanup_free_ char *text = round_trip(value);

        (void)state;
        assert_string_equal(text,
                            "a:\n"
                            "- - 1\n"
                            "  - - 2\n"
                            "- {}\n"
                            "- []\n"
                            "- b: []\n"
                            "c:\n"
                            "  d:\n"
                            "    e: {}\n");
}

static void scalar_roots(void **state)
{
        static const char *const roots[] = {"\"text\"", "1", "2.5", "true", "[]", "{}", "\"\\n\""};

        (void)state;
        for (size_t i = 0; i < XP_ELEMENTSOF(roots); i++) {
                json_auto_t *value = parse_json(roots[i]);

                free(round_trip(value));
        }
}

static void several_documents(void **state)
{
        json_t *values[] = {
            parse_json("{\"kind\": \"Pod\"}"),
            parse_json("\"keep\\n\\n\""),
            parse_json("[1, \"2\"]"),
        };
        struct xp_yaml_document *docs = NULL;
        struct xp_error err = {0};
        char *text = NULL;
        size_t len = 0, n = 0;

        (void)state;
        assert_int_equal(xp_yaml_dump_documents(values, 3, &text, &len), 0);
        assert_int_equal(strlen(text), len);
        assert_string_equal(text, "kind: Pod\n--- |+\n  keep\n\n---\n- 1\n- \"2\"\n");
        assert_int_equal(xp_yaml_load(text, len, "docs.yaml", &docs, &n, &err), 0);
        assert_int_equal(n, 3);
        for (size_t i = 0; i < 3; i++)
                assert_true(json_equal(docs[i].root, values[i]));
        xp_yaml_documents_free(docs, n);
        free(text);

        assert_int_equal(xp_yaml_dump_documents(NULL, 0, &text, NULL), 0);
        assert_string_equal(text, "");
        free(text);
        for (size_t i = 0; i < 3; i++)
                json_decref(values[i]);
}

static void refuses_bad_values(void **state)
{
        json_auto_t *bad_utf8 = json_pack("{s:o}", "k", json_stringn_nocheck("a\xff", 2));
        json_auto_t *deep = json_array();
        json_t *inner = deep;
        char *text = (char *)"untouched";
        size_t len = 7;

        (void)state;
        assert_int_equal(xp_yaml_dump(NULL, &text, &len), -EINVAL);
        assert_int_equal(xp_yaml_dump(bad_utf8, &text, &len), -EINVAL);
        /* XP_YAML_DUMP_MAX_DEPTH nested arrays print, one more is refused */
        for (size_t i = 1; i < XP_YAML_DUMP_MAX_DEPTH; i++) {
                json_t *next = json_array();

                assert_int_equal(json_array_append_new(inner, next), 0);
                inner = next;
        }
        assert_int_equal(xp_yaml_dump(deep, &text, &len), 0);
        free(text);
        text = (char *)"untouched";
        len = 7;
        assert_int_equal(json_array_append_new(inner, json_array()), 0);
        assert_int_equal(xp_yaml_dump(deep, &text, &len), -EINVAL);
        assert_string_equal(text, "untouched");
        assert_int_equal(len, 7);
        assert_int_equal(xp_yaml_dump(deep, NULL, &len), -EINVAL);
}

static char *read_file(const char *path, size_t *ret_len)
{
        FILE *f = fopen(path, "re");
        char *data = NULL;
        size_t len = 0;

        assert_non_null(f);
        for (;;) {
                size_t got;

                data = realloc(data, len + 4096 + 1);
                assert_non_null(data);
                got = fread(data + len, 1, 4096, f);
                len += got;
                if (got < 4096)
                        break;
        }
        fclose(f);
        data[len] = '\0';
        *ret_len = len;
        return data;
}

static void manifest_round_trip(const char *name)
{
        char path[512];
        _cleanup_free_ char *data = NULL;
        struct xp_yaml_document *docs = NULL;
        struct xp_error err = {0};
        size_t len, n = 0;

        snprintf(path, sizeof(path), "%s/manifests/%s", XPOOL_TEST_DATA, name);
        data = read_file(path, &len);
        if (xp_yaml_load(data, len, name, &docs, &n, &err) < 0)
                fail_msg("%s", err.msg);
        assert_true(n > 0);
        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *text = round_trip(docs[i].root);
                _cleanup_free_ char *again = NULL;
                json_auto_t *back = load_one(text);

                /* dumping what was read back gives the same text */
                again = dump(back);
                assert_string_equal(again, text);
        }
        xp_yaml_documents_free(docs, n);
}

static void manifests_round_trip(void **state)
{
        (void)state;
        manifest_round_trip("full-pod.yaml");
        manifest_round_trip("gpu-node.yaml");
        manifest_round_trip("multi.yaml");
        manifest_round_trip("seed-pod.yaml");
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(pod_prints_like_kubectl),
            cmocka_unit_test(tricky_strings_round_trip),
            cmocka_unit_test(strings_with_nul_round_trip),
            cmocka_unit_test(strings_print_exactly),
            cmocka_unit_test(keys_are_quoted_too),
            cmocka_unit_test(long_strings_stay_on_one_line),
            cmocka_unit_test(numbers_keep_their_type),
            cmocka_unit_test(nested_lists_and_empties),
            cmocka_unit_test(scalar_roots),
            cmocka_unit_test(several_documents),
            cmocka_unit_test(refuses_bad_values),
            cmocka_unit_test(manifests_round_trip),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
