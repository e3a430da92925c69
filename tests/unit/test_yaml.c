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

#include "xpool/path.h"
#include "xpool/yaml.h"

static const char seed_pod[] = "apiVersion: v1\n"
                               "kind: Pod\n"
                               "metadata:\n"
                               "  name: ai-training\n"
                               "spec:\n"
                               "  containers:\n"
                               "  - name: trainer\n"
                               "    image: ai-framework:latest\n"
                               "    resources:\n"
                               "      limits:\n"
                               "        nvidia.com/gpu: 1\n"
                               "        vendor.com/npu: 2\n";

struct loaded {
        struct xp_yaml_document *docs;
        size_t n;
};

static void loaded_done(struct loaded *l)
{
        xp_yaml_documents_free(l->docs, l->n);
}

#define _cleanup_loaded_ _cleanup_(loaded_done)

/* Loads size bytes of text, which must succeed. */
static struct loaded load_mem(const char *text, size_t size)
{
        struct loaded l = {0};
        struct xp_error err = {0};
        int r = xp_yaml_load(text, size, "pod.yaml", &l.docs, &l.n, &err);

        if (r < 0)
                fail_msg("unexpected error %d: %s", r, xp_error_message(&err));
        assert_int_equal(err.code, 0);
        return l;
}

static struct loaded load(const char *text)
{
        return load_mem(text, strlen(text));
}

/* Loads text, which must fail with code and exactly message; the outputs stay untouched. */
static void expect_error_mem(const char *text, size_t size, int code, const char *message)
{
        struct xp_yaml_document sentinel;
        struct xp_yaml_document *docs = &sentinel;
        size_t n = 12345;
        struct xp_error err = {0};

        assert_int_equal(xp_yaml_load(text, size, "pod.yaml", &docs, &n, &err), code);
        assert_int_equal(err.code, code);
        assert_string_equal(err.msg, message);
        assert_ptr_equal(docs, &sentinel);
        assert_int_equal(n, 12345);
}

static void expect_error(const char *text, int code, const char *message)
{
        expect_error_mem(text, strlen(text), code, message);
}

/* The document's root must equal the JSON text (same types: 1 is an integer, 1.0 a real). */
static void assert_json(json_t *value, const char *expected)
{
        json_error_t jerr;
        json_auto_t *want = json_loads(expected, JSON_DECODE_ANY, &jerr);

        if (!want)
                fail_msg("bad expected JSON: %s", jerr.text);
        if (!json_equal(value, want)) {
                char *got = json_dumps(value, JSON_ENCODE_ANY | JSON_SORT_KEYS);

                print_error("got:  %s\nwant: %s\n", got, expected);
                free(got);
                fail();
        }
}

static void assert_pos(const struct xp_source_map *map,
                       const char *pointer,
                       unsigned value_line,
                       unsigned value_column,
                       unsigned key_line,
                       unsigned key_column)
{
        struct xp_source_entry e;
        int r = xp_source_map_lookup(map, pointer, &e);

        if (r < 0)
                fail_msg("no position for \"%s\": %d", pointer, r);
        if (e.value.line != value_line || e.value.column != value_column ||
            e.key.line != key_line || e.key.column != key_column)
                fail_msg("\"%s\": value %u:%u key %u:%u, want value %u:%u key %u:%u",
                         pointer,
                         e.value.line,
                         e.value.column,
                         e.key.line,
                         e.key.column,
                         value_line,
                         value_column,
                         key_line,
                         key_column);
}

static int lookup(const struct xp_source_map *map, const char *pointer)
{
        struct xp_source_entry e;

        return xp_source_map_lookup(map, pointer, &e);
}

static json_t *get(json_t *root, const char *path)
{
        json_t *v = root;
        char copy[256];
        char *save = NULL;

        snprintf(copy, sizeof(copy), "%s", path);
        for (char *t = strtok_r(copy, ".", &save); t && v; t = strtok_r(NULL, ".", &save)) {
                char *end;
                unsigned long i = strtoul(t, &end, 10);

                v = *end == '\0' ? json_array_get(v, i) : json_object_get(v, t);
        }
        assert_non_null(v);
        return v;
}

/* ------------------------------------------------------------------------------------------ */

static void seed_pod_values(void **state)
{
        _cleanup_loaded_ struct loaded l = load(seed_pod);
        json_t *root, *limits;

        (void)state;
        assert_int_equal(l.n, 1);
        root = l.docs[0].root;
        assert_true(json_is_object(root));
        assert_string_equal(json_string_value(get(root, "apiVersion")), "v1");
        assert_string_equal(json_string_value(get(root, "kind")), "Pod");
        assert_string_equal(json_string_value(get(root, "metadata.name")), "ai-training");
        assert_true(json_is_array(get(root, "spec.containers")));
        assert_int_equal(json_array_size(get(root, "spec.containers")), 1);
        assert_string_equal(json_string_value(get(root, "spec.containers.0.name")), "trainer");
        assert_string_equal(json_string_value(get(root, "spec.containers.0.image")),
                            "ai-framework:latest");
        limits = get(root, "spec.containers.0.resources.limits");
        assert_true(json_is_integer(json_object_get(limits, "nvidia.com/gpu")));
        assert_int_equal(json_integer_value(json_object_get(limits, "nvidia.com/gpu")), 1);
        assert_int_equal(json_integer_value(json_object_get(limits, "vendor.com/npu")), 2);
        assert_json(
            root,
            "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"ai-training\"},"
            "\"spec\":{\"containers\":[{\"name\":\"trainer\",\"image\":\"ai-framework:latest\","
            "\"resources\":{\"limits\":{\"nvidia.com/gpu\":1,\"vendor.com/npu\":2}}}]}}");
        assert_int_equal(l.docs[0].start.line, 1);
        assert_int_equal(l.docs[0].start.column, 1);
}

static void seed_pod_positions(void **state)
{
        _cleanup_loaded_ struct loaded l = load(seed_pod);
        const struct xp_source_map *map;

        (void)state;
        map = l.docs[0].map;
        assert_pos(map, "", 1, 1, 1, 1);
        assert_pos(map, "/apiVersion", 1, 13, 1, 1);
        assert_pos(map, "/kind", 2, 7, 2, 1);
        assert_pos(map, "/metadata", 4, 3, 3, 1);
        assert_pos(map, "/metadata/name", 4, 9, 4, 3);
        assert_pos(map, "/spec", 6, 3, 5, 1);
        assert_pos(map, "/spec/containers", 7, 3, 6, 3);
        assert_pos(map, "/spec/containers/0", 7, 5, 7, 5);
        assert_pos(map, "/spec/containers/0/name", 7, 11, 7, 5);
        assert_pos(map, "/spec/containers/0/image", 8, 12, 8, 5);
        assert_pos(map, "/spec/containers/0/resources/limits", 11, 9, 10, 7);
        assert_pos(map, "/spec/containers/0/resources/limits/nvidia.com~1gpu", 11, 25, 11, 9);
        assert_pos(map, "/spec/containers/0/resources/limits/vendor.com~1npu", 12, 25, 12, 9);

        assert_int_equal(lookup(map, "/spec/nope"), -ENOENT);
        assert_int_equal(lookup(map, "/spec/containers/1"), -ENOENT);
        assert_int_equal(lookup(map, "/spec/containers/00"), -ENOENT);
        assert_int_equal(lookup(map, "/spec/containers/-"), -ENOENT);
        assert_int_equal(lookup(map, "/spec/containers/name"), -ENOENT);
        assert_int_equal(lookup(map, "/kind/x"), -ENOENT);
        assert_int_equal(lookup(map, "/spec/containers/0/resources/limits/nvidia.com/gpu"),
                         -ENOENT);
        assert_int_equal(lookup(map, "kind"), -EINVAL);
        assert_int_equal(lookup(map, "/a~2b"), -EINVAL);
        assert_int_equal(lookup(map, "/a~"), -EINVAL);
}

static void pointers_from_paths(void **state)
{
        _cleanup_loaded_ struct loaded l = load(seed_pod);
        struct xp_path path = {0};
        char pointer[XP_PATH_TEXT_MAX];

        (void)state;
        xp_path_push_field(&path, "spec");
        xp_path_push_field(&path, "containers");
        xp_path_push_index(&path, 0);
        xp_path_push_field(&path, "resources");
        xp_path_push_field(&path, "limits");
        xp_path_push_key(&path, "nvidia.com/gpu");
        xp_path_pointer(&path, pointer, sizeof(pointer));
        assert_pos(l.docs[0].map, pointer, 11, 25, 11, 9);
}

static void escaped_keys(void **state)
{
        _cleanup_loaded_ struct loaded l = load("a/b: 1\n"
                                                "c~d: 2\n"
                                                "~/: 3\n"
                                                "\"\": 4\n"
                                                "a: {b: 5}\n");
        const struct xp_source_map *map;

        (void)state;
        map = l.docs[0].map;
        assert_pos(map, "/a~1b", 1, 6, 1, 1);
        assert_pos(map, "/c~0d", 2, 6, 2, 1);
        assert_pos(map, "/~0~1", 3, 5, 3, 1);
        assert_pos(map, "/", 4, 5, 4, 1);
        assert_pos(map, "/a/b", 5, 8, 5, 5);
        assert_int_equal(lookup(map, "/a~0b"), -ENOENT);
}

static void multiple_documents(void **state)
{
        (void)state;
        {
                _cleanup_loaded_ struct loaded l = load("a: 1\n---\nb: 2\n");

                assert_int_equal(l.n, 2);
                assert_json(l.docs[0].root, "{\"a\":1}");
                assert_json(l.docs[1].root, "{\"b\":2}");
                assert_int_equal(l.docs[1].start.line, 3);
                assert_int_equal(l.docs[1].start.column, 1);
                assert_pos(l.docs[1].map, "/b", 3, 4, 3, 1);
                assert_int_equal(lookup(l.docs[1].map, "/a"), -ENOENT);
        }
        {
                /* leading and trailing ---, empty and comment-only documents */
                _cleanup_loaded_ struct loaded l = load("---\n"
                                                        "# only a comment\n"
                                                        "---\n"
                                                        "kind: Pod\n"
                                                        "---\n"
                                                        "---\n"
                                                        "--- null\n"
                                                        "--- ~\n"
                                                        "---\n"
                                                        "kind: Service\n"
                                                        "---\n");

                assert_int_equal(l.n, 2);
                assert_json(l.docs[0].root, "{\"kind\":\"Pod\"}");
                assert_json(l.docs[1].root, "{\"kind\":\"Service\"}");
                assert_pos(l.docs[1].map, "/kind", 10, 7, 10, 1);
        }
        {
                /* ... ends a document */
                _cleanup_loaded_ struct loaded l = load("a: 1\n...\n---\nb: [x]\n...\n");

                assert_int_equal(l.n, 2);
                assert_json(l.docs[1].root, "{\"b\":[\"x\"]}");
                assert_pos(l.docs[1].map, "/b/0", 4, 5, 4, 5);
        }
        {
                /* a scalar document is kept */
                _cleanup_loaded_ struct loaded l = load("--- hello\n");

                assert_int_equal(l.n, 1);
                assert_json(l.docs[0].root, "\"hello\"");
                assert_pos(l.docs[0].map, "", 1, 5, 1, 5);
                assert_int_equal(lookup(l.docs[0].map, "/x"), -ENOENT);
        }
}

static void nothing_to_load(void **state)
{
        static const char *const inputs[] = {
            "", "# comment\n", "\n\n", "---\n", "null\n", "--- ~\n...\n"};

        (void)state;
        for (size_t i = 0; i < XP_ELEMENTSOF(inputs); i++) {
                struct loaded l = load(inputs[i]);

                assert_int_equal(l.n, 0);
                loaded_done(&l);
        }
        {
                struct xp_yaml_document *docs = NULL;
                size_t n = 1;

                assert_int_equal(xp_yaml_load(NULL, 0, NULL, &docs, &n, NULL), 0);
                assert_int_equal(n, 0);
                xp_yaml_documents_free(docs, n);
        }
}

static void json_input(void **state)
{
        _cleanup_loaded_ struct loaded l =
            load("{\n"
                 "  \"apiVersion\": \"v1\",\n"
                 "  \"kind\": \"Pod\",\n"
                 "  \"spec\": {\n"
                 "    \"containers\": [\n"
                 "      {\"name\": \"a\", \"ports\": [80, 443]}\n"
                 "    ],\n"
                 "    \"ratio\": 0.5, \"on\": true, \"none\": null,\n"
                 "    \"exp\": 1e2, \"neg\": -3\n"
                 "  }\n"
                 "}\n");
        const struct xp_source_map *map;

        (void)state;
        assert_int_equal(l.n, 1);
        assert_json(
            l.docs[0].root,
            "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"spec\":{\"containers\":[{\"name\":\"a\","
            "\"ports\":[80,443]}],\"ratio\":0.5,\"on\":true,\"none\":null,\"exp\":100.0,"
            "\"neg\":-3}}");
        map = l.docs[0].map;
        assert_pos(map, "", 1, 1, 1, 1);
        assert_pos(map, "/apiVersion", 2, 17, 2, 3);
        assert_pos(map, "/spec", 4, 11, 4, 3);
        assert_pos(map, "/spec/containers", 5, 19, 5, 5);
        assert_pos(map, "/spec/containers/0", 6, 7, 6, 7);
        assert_pos(map, "/spec/containers/0/name", 6, 16, 6, 8);
        assert_pos(map, "/spec/containers/0/ports/1", 6, 35, 6, 35);
        assert_pos(map, "/spec/none", 8, 39, 8, 31);
}

static void scalar_types(void **state)
{
        _cleanup_loaded_ struct loaded l = load("n1: null\n"
                                                "n2: ~\n"
                                                "n3:\n"
                                                "n4: Null\n"
                                                "n5: NULL\n"
                                                "b1: true\n"
                                                "b2: False\n"
                                                "b3: TRUE\n"
                                                "b4: false\n"
                                                "y: yes\n"
                                                "n: no\n"
                                                "on: on\n"
                                                "off: Off\n"
                                                "i1: 42\n"
                                                "i2: -17\n"
                                                "i3: +5\n"
                                                "i4: 0o17\n"
                                                "i5: 0x1F\n"
                                                "i6: 007\n"
                                                "i7: -9223372036854775808\n"
                                                "i8: 0x7FFFFFFFFFFFFFFF\n"
                                                "big: 9223372036854775808\n"
                                                "bighex: 0x10000000000000000\n"
                                                "f1: 1.5\n"
                                                "f2: .5\n"
                                                "f3: 1e3\n"
                                                "f4: -2.5E-3\n"
                                                "f5: 1.\n"
                                                "f6: +0.25\n"
                                                "s1: \"42\"\n"
                                                "s2: '3.5'\n"
                                                "s3: \"true\"\n"
                                                "s4: 'null'\n"
                                                "s5: 1_000\n"
                                                "s6: 0x\n"
                                                "s7: 0b101\n"
                                                "s8: -0x10\n"
                                                "s9: 1.2.3\n"
                                                "s10: .\n"
                                                "s11: \"\"\n"
                                                "s12: ''\n"
                                                "s13: 12:30\n"
                                                "s14: inf\n"
                                                "lit: |\n"
                                                "  42\n"
                                                "fold: >\n"
                                                "  a\n"
                                                "  b\n"
                                                "esc: \"tab\\there \\u00e9\"\n");

        (void)state;
        assert_json(
            l.docs[0].root,
            "{\"n1\":null,\"n2\":null,\"n3\":null,\"n4\":null,\"n5\":null,"
            "\"b1\":true,\"b2\":false,\"b3\":true,\"b4\":false,"
            "\"y\":\"yes\",\"n\":\"no\",\"on\":\"on\",\"off\":\"Off\","
            "\"i1\":42,\"i2\":-17,\"i3\":5,\"i4\":15,\"i5\":31,\"i6\":7,"
            "\"i7\":-9223372036854775808,\"i8\":9223372036854775807,"
            "\"big\":9223372036854775808.0,\"bighex\":18446744073709551616.0,"
            "\"f1\":1.5,\"f2\":0.5,\"f3\":1000.0,\"f4\":-0.0025,\"f5\":1.0,\"f6\":0.25,"
            "\"s1\":\"42\",\"s2\":\"3.5\",\"s3\":\"true\",\"s4\":\"null\",\"s5\":\"1_000\","
            "\"s6\":\"0x\",\"s7\":\"0b101\",\"s8\":\"-0x10\",\"s9\":\"1.2.3\",\"s10\":\".\","
            "\"s11\":\"\",\"s12\":\"\",\"s13\":\"12:30\",\"s14\":\"inf\","
            "\"lit\":\"42\\n\",\"fold\":\"a b\\n\",\"esc\":\"tab\\there \\u00e9\"}");
}

static void keys_are_raw_text(void **state)
{
        _cleanup_loaded_ struct loaded l = load("1: a\n"
                                                "true: b\n"
                                                "~: c\n"
                                                "0x10: d\n"
                                                "\"quoted\": e\n"
                                                "? explicit\n"
                                                ": f\n"
                                                "? \n"
                                                ": g\n");

        (void)state;
        assert_json(l.docs[0].root,
                    "{\"1\":\"a\",\"true\":\"b\",\"~\":\"c\",\"0x10\":\"d\",\"quoted\":\"e\","
                    "\"explicit\":\"f\",\"\":\"g\"}");
        assert_pos(l.docs[0].map, "/explicit", 7, 3, 6, 3);
}

static void explicit_tags(void **state)
{
        _cleanup_loaded_ struct loaded l = load("a: !!str 123\n"
                                                "b: !!str true\n"
                                                "c: !!str\n"
                                                "d: !!int \"42\"\n"
                                                "e: !!int 0x10\n"
                                                "f: !!float 1\n"
                                                "g: !!float \"2.5\"\n"
                                                "h: !!bool \"false\"\n"
                                                "i: !!null \"\"\n"
                                                "j: !!null null\n"
                                                "k: ! 12\n"
                                                "l: !!map {x: 1}\n"
                                                "m: !!seq [1]\n"
                                                "n: !<tag:yaml.org,2002:int> '7'\n"
                                                "o: !!str ~\n");

        (void)state;
        assert_json(l.docs[0].root,
                    "{\"a\":\"123\",\"b\":\"true\",\"c\":\"\",\"d\":42,\"e\":16,\"f\":1.0,"
                    "\"g\":2.5,\"h\":false,\"i\":null,\"j\":null,\"k\":\"12\",\"l\":{\"x\":1},"
                    "\"m\":[1],\"n\":7,\"o\":\"~\"}");
}

static void anchors_and_aliases(void **state)
{
        _cleanup_loaded_ struct loaded l = load("base: &base\n"
                                                "  image: nginx\n"
                                                "  ports: [80]\n"
                                                "copy: *base\n"
                                                "list: &l [1, 2]\n"
                                                "again: *l\n"
                                                "s: &s hello\n"
                                                "t: *s\n"
                                                "key: &k name\n"
                                                "*k : value\n"
                                                "nested: [*base, *s]\n");
        json_t *root;
        const struct xp_source_map *map;

        (void)state;
        root = l.docs[0].root;
        map = l.docs[0].map;
        assert_json(root,
                    "{\"base\":{\"image\":\"nginx\",\"ports\":[80]},"
                    "\"copy\":{\"image\":\"nginx\",\"ports\":[80]},\"list\":[1,2],\"again\":[1,2],"
                    "\"s\":\"hello\",\"t\":\"hello\",\"key\":\"name\",\"name\":\"value\","
                    "\"nested\":[{\"image\":\"nginx\",\"ports\":[80]},\"hello\"]}");
        /* aliases share the anchored value */
        assert_ptr_equal(json_object_get(root, "copy"), json_object_get(root, "base"));
        /* the alias itself is where it was written, its content where the anchor was */
        assert_pos(map, "/copy", 4, 7, 4, 1);
        assert_pos(map, "/copy/image", 2, 10, 2, 3);
        assert_pos(map, "/copy/ports/0", 3, 11, 3, 11);
        assert_pos(map, "/again", 6, 8, 6, 1);
        assert_pos(map, "/again/1", 5, 14, 5, 14);
        assert_pos(map, "/t", 8, 4, 8, 1);
        assert_pos(map, "/name", 10, 6, 10, 1);
        assert_pos(map, "/nested/0/image", 2, 10, 2, 3);
        assert_pos(map, "/nested/1", 11, 17, 11, 17);
}

static void merge_keys(void **state)
{
        _cleanup_loaded_ struct loaded l = load("defaults: &d\n"
                                                "  image: nginx\n"
                                                "  pull: Always\n"
                                                "extra: &e\n"
                                                "  pull: Never\n"
                                                "  port: 80\n"
                                                "a:\n"
                                                "  <<: *d\n"
                                                "  image: custom\n"
                                                "b:\n"
                                                "  name: b\n"
                                                "  <<: [*e, *d]\n"
                                                "c:\n"
                                                "  <<: {inline: 1}\n"
                                                "  \"<<\": quoted\n"
                                                "d: {<<: *d, pull: IfNotPresent}\n");
        const struct xp_source_map *map;

        (void)state;
        map = l.docs[0].map;
        assert_json(json_object_get(l.docs[0].root, "a"),
                    "{\"image\":\"custom\",\"pull\":\"Always\"}");
        assert_json(json_object_get(l.docs[0].root, "b"),
                    "{\"name\":\"b\",\"pull\":\"Never\",\"port\":80,\"image\":\"nginx\"}");
        assert_json(json_object_get(l.docs[0].root, "c"), "{\"inline\":1,\"<<\":\"quoted\"}");
        assert_json(json_object_get(l.docs[0].root, "d"),
                    "{\"image\":\"nginx\",\"pull\":\"IfNotPresent\"}");
        assert_int_equal(lookup(map, "/a/<<"), -ENOENT);
        assert_pos(map, "/a/image", 9, 10, 9, 3);
        assert_pos(map, "/a/pull", 3, 9, 3, 3);
        assert_pos(map, "/b/pull", 5, 9, 5, 3);
        assert_pos(map, "/b/image", 2, 10, 2, 3);
        assert_pos(map, "/c/inline", 14, 16, 14, 8);
        assert_pos(map, "/c/<<", 15, 9, 15, 3);
        assert_pos(map, "/d/pull", 16, 19, 16, 13);
}

static void bounded_expansion_succeeds(void **state)
{
        /* 10^5 values after expansion cost a few hundred bytes of text and of memory */
        _cleanup_loaded_ struct loaded l = load("a: &a [x, x, x, x, x, x, x, x, x, x]\n"
                                                "b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
                                                "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\n"
                                                "d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
                                                "e: [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\n");

        (void)state;
        assert_int_equal(l.n, 1);
        assert_string_equal(json_string_value(get(l.docs[0].root, "e.9.9.9.9.9")), "x");
        assert_pos(l.docs[0].map, "/e/9/9/9/9/9", 1, 35, 1, 35);
        assert_pos(l.docs[0].map, "/e/9", 5, 41, 5, 41);
}

static void syntax_errors(void **state)
{
        (void)state;
        expect_error("apiVersion: v1\nkind: Pod\nimage: a: b\n",
                     -EINVAL,
                     "pod.yaml:3:9: mapping values are not allowed in this context");
        expect_error(
            "apiVersion: v1\nkind: Pod\nspec: [a, b\n",
            -EINVAL,
            "pod.yaml:4:1: did not find expected ',' or ']' (while parsing a flow sequence at 3:7)");
        expect_error(
            "a: \"abc\n",
            -EINVAL,
            "pod.yaml:2:1: found unexpected end of stream (while scanning a quoted scalar at 1:4)");
        expect_error(
            "a: 1\nb:\n  - x\n c: 2\n",
            -EINVAL,
            "pod.yaml:4:2: did not find expected key (while parsing a block mapping at 1:1)");
}

static void tab_indentation(void **state)
{
        (void)state;
        expect_error(
            "spec:\n\tcontainers: []\n",
            -EINVAL,
            "pod.yaml:2:1: found character that cannot start any token (tabs are not allowed for indentation)");
}

static void semantic_errors(void **state)
{
        (void)state;
        expect_error("apiVersion: v1\n"
                     "metadata:\n"
                     "  name: a\n"
                     "  labels: {}\n"
                     "  name: b\n",
                     -EINVAL,
                     "pod.yaml:5:3: duplicate key \"name\"");
        expect_error("{\"a\": 1, \"a\": 2}", -EINVAL, "pod.yaml:1:10: duplicate key \"a\"");
        expect_error(
            "a: 1\n<<: {b: 1}\n<<: {c: 1}\n", -EINVAL, "pod.yaml:3:1: duplicate key \"<<\"");
        expect_error("? [a, b]\n: 1\n",
                     -EINVAL,
                     "pod.yaml:1:3: mapping key must be a scalar, not a sequence");
        expect_error(
            "{{a: 1}: 2}\n", -EINVAL, "pod.yaml:1:2: mapping key must be a scalar, not a mapping");
        expect_error("x: &x [1]\n*x : 2\n",
                     -EINVAL,
                     "pod.yaml:2:1: mapping key must be a scalar, not a sequence");
        expect_error("a: 1\nlimit: .inf\n",
                     -EINVAL,
                     "pod.yaml:2:8: .inf is not a valid value: JSON has no infinity");
        expect_error("a: -.Inf\n",
                     -EINVAL,
                     "pod.yaml:1:4: -.Inf is not a valid value: JSON has no infinity");
        expect_error(
            "a: [.NaN]\n", -EINVAL, "pod.yaml:1:5: .NaN is not a valid value: JSON has no NaN");
        expect_error("a: !!float .nan\n",
                     -EINVAL,
                     "pod.yaml:1:4: .nan is not a valid value: JSON has no NaN");
        expect_error(
            "a: 1e999\n", -EINVAL, "pod.yaml:1:4: \"1e999\" is out of range: JSON has no infinity");
        expect_error("a: *nope\n", -EINVAL, "pod.yaml:1:4: undefined alias \"nope\"");
        expect_error("a: !!int abc\n", -EINVAL, "pod.yaml:1:4: \"abc\" is not a valid !!int");
        expect_error("a: !!bool yes\n", -EINVAL, "pod.yaml:1:4: \"yes\" is not a valid !!bool");
        expect_error("a: !!float x\n", -EINVAL, "pod.yaml:1:4: \"x\" is not a valid !!float");
        expect_error("a: !!null 0\n", -EINVAL, "pod.yaml:1:4: \"0\" is not a valid !!null");
        expect_error("a: !Ref x\n", -EINVAL, "pod.yaml:1:4: unsupported tag \"!Ref\"");
        expect_error("a: !!binary aGk=\n", -EINVAL, "pod.yaml:1:4: unsupported tag \"!!binary\"");
        expect_error("a: !!set {x}\n", -EINVAL, "pod.yaml:1:4: unsupported tag \"!!set\"");
        expect_error("a: !!str [x]\n", -EINVAL, "pod.yaml:1:4: unsupported tag \"!!str\"");
        expect_error(
            "<<: 1\n",
            -EINVAL,
            "pod.yaml:1:5: the value of a merge key must be a mapping or a list of mappings");
        expect_error(
            "a: &a [1]\n<<: [*a]\n",
            -EINVAL,
            "pod.yaml:2:6: the value of a merge key must be a mapping or a list of mappings");
        expect_error("other: {}\n---\na: *a\n---\nb: &a 1\n",
                     -EINVAL,
                     "pod.yaml:3:4: undefined alias \"a\"");
        /* the default source name */
        {
                struct xp_yaml_document *docs = NULL;
                size_t n = 0;
                struct xp_error err = {0};

                assert_int_equal(xp_yaml_load("a: [", 4, NULL, &docs, &n, &err), -EINVAL);
                assert_string_equal(err.msg, "<input>:2:1: did not find expected node content");
        }
}

static void key_with_nul_byte(void **state)
{
        (void)state;
        expect_error(
            "\"a\\0b\": 1\n", -EINVAL, "pod.yaml:1:1: mapping key \"a\\x00b\" contains a NUL byte");
        {
                /* a NUL byte written as an escape is fine inside a string value */
                _cleanup_loaded_ struct loaded l = load("a: \"x\\0y\"\n");

                assert_int_equal(json_string_length(json_object_get(l.docs[0].root, "a")), 3);
        }
}

static void invalid_bytes(void **state)
{
        static const char nul[] = "a: 1\nb: x\0y\n";
        static const char utf8[] = "a: 1\nb: x\x80y\n";
        static const char truncated[] = "a: \xc3";

        (void)state;
        expect_error_mem(nul,
                         sizeof(nul) - 1,
                         -EINVAL,
                         "pod.yaml:2:5: control characters are not allowed (U+0000)");
        expect_error_mem(utf8,
                         sizeof(utf8) - 1,
                         -EINVAL,
                         "pod.yaml:2:5: invalid leading UTF-8 octet (byte 0x80)");
        expect_error_mem(truncated,
                         sizeof(truncated) - 1,
                         -EINVAL,
                         "pod.yaml:1:4: incomplete UTF-8 octet sequence");
        /* the NUL byte past size is not read */
        {
                _cleanup_loaded_ struct loaded l = load_mem(nul, 4);

                assert_json(l.docs[0].root, "{\"a\":1}");
        }
}

static void billion_laughs(void **state)
{
        (void)state;
        expect_error("a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"
                     "b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
                     "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\n"
                     "d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
                     "e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]\n"
                     "f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]\n"
                     "g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f]\n"
                     "h: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g]\n"
                     "i: &i [*h, *h, *h, *h, *h, *h, *h, *h, *h]\n",
                     -E2BIG,
                     "pod.yaml:7:8: document has more than 1000000 values after alias expansion");
        /* through merge keys: each level doubles */
        {
                char text[4096] = "m0: &m0 {k0: [a, b, c, d, e, f, g, h]}\n";
                size_t used = strlen(text);

                for (int i = 1; i < 40; i++)
                        used += (size_t)snprintf(text + used,
                                                 sizeof(text) - used,
                                                 "m%d: &m%d {<<: *m%d, k%d: [*m%d, *m%d]}\n",
                                                 i,
                                                 i,
                                                 i - 1,
                                                 i,
                                                 i - 1,
                                                 i - 1);
                struct xp_yaml_document *docs = NULL;
                size_t n = 0;
                struct xp_error err = {0};

                assert_int_equal(xp_yaml_load(text, used, "pod.yaml", &docs, &n, &err), -E2BIG);
                assert_non_null(strstr(err.msg, "values after alias expansion"));
        }
}

static void bounded_across_documents(void **state)
{
        static const char doc[] = "---\n"
                                  "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
                                  "b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
                                  "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\n"
                                  "d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
                                  "e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\n"
                                  "f: [*e, *e, *e, *e, *e, *e, *e]\n";
        char text[5 * sizeof(doc)] = "";
        struct xp_yaml_document *docs = NULL;
        size_t n = 0;
        struct xp_error err = {0};

        (void)state;
        /* each document is within its bound; together they pass XP_YAML_MAX_TOTAL_VALUES */
        for (int i = 0; i < 4; i++)
                strcat(text, doc);
        {
                _cleanup_loaded_ struct loaded l = load(text);

                assert_int_equal(l.n, 4);
        }
        strcat(text, doc);
        assert_int_equal(xp_yaml_load(text, strlen(text), "pod.yaml", &docs, &n, &err), -E2BIG);
        assert_non_null(strstr(err.msg, ": input has more than 4000000 values in all documents"));
        assert_int_equal(n, 0);
}

static void too_deep(void **state)
{
        char text[2 * (XP_YAML_MAX_DEPTH + 1) + 1];

        (void)state;
        memset(text, '[', XP_YAML_MAX_DEPTH);
        memset(text + XP_YAML_MAX_DEPTH, ']', XP_YAML_MAX_DEPTH);
        text[2 * XP_YAML_MAX_DEPTH] = '\0';
        {
                _cleanup_loaded_ struct loaded l = load(text);

                assert_int_equal(l.n, 1);
        }
        memset(text, '[', XP_YAML_MAX_DEPTH + 1);
        memset(text + XP_YAML_MAX_DEPTH + 1, ']', XP_YAML_MAX_DEPTH + 1);
        text[2 * (XP_YAML_MAX_DEPTH + 1)] = '\0';
        expect_error(text, -E2BIG, "pod.yaml:1:129: nesting is deeper than 128 levels");
        {
                /* aliases nest the anchored depth again */
                char deep[1024];
                int used = snprintf(deep, sizeof(deep), "a: &a ");

                for (int i = 0; i < 100; i++)
                        deep[used++] = '[';
                for (int i = 0; i < 100; i++)
                        deep[used++] = ']';
                used += snprintf(deep + used, sizeof(deep) - (size_t)used, "\nb: [[[[[[[[[[");
                for (int i = 0; i < 9; i++)
                        used += snprintf(deep + used, sizeof(deep) - (size_t)used, "[[[");
                used += snprintf(deep + used, sizeof(deep) - (size_t)used, "*a]]]]]]]]]]");
                for (int i = 0; i < 9; i++)
                        used += snprintf(deep + used, sizeof(deep) - (size_t)used, "]]]");
                expect_error(deep, -E2BIG, "pod.yaml:2:41: nesting is deeper than 128 levels");
        }
}

static void all_or_nothing(void **state)
{
        (void)state;
        expect_error("kind: Pod\n"
                     "---\n"
                     "kind: Service\n"
                     "spec: [\n",
                     -EINVAL,
                     "pod.yaml:5:1: did not find expected node content");
        expect_error("kind: Pod\n---\nkind: Service\nkind: Deployment\n",
                     -EINVAL,
                     "pod.yaml:4:1: duplicate key \"kind\"");
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(seed_pod_values),
            cmocka_unit_test(seed_pod_positions),
            cmocka_unit_test(pointers_from_paths),
            cmocka_unit_test(escaped_keys),
            cmocka_unit_test(multiple_documents),
            cmocka_unit_test(nothing_to_load),
            cmocka_unit_test(json_input),
            cmocka_unit_test(scalar_types),
            cmocka_unit_test(keys_are_raw_text),
            cmocka_unit_test(explicit_tags),
            cmocka_unit_test(anchors_and_aliases),
            cmocka_unit_test(merge_keys),
            cmocka_unit_test(bounded_expansion_succeeds),
            cmocka_unit_test(syntax_errors),
            cmocka_unit_test(tab_indentation),
            cmocka_unit_test(semantic_errors),
            cmocka_unit_test(key_with_nul_byte),
            cmocka_unit_test(invalid_bytes),
            cmocka_unit_test(billion_laughs),
            cmocka_unit_test(bounded_across_documents),
            cmocka_unit_test(too_deep),
            cmocka_unit_test(all_or_nothing),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
