/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The streamed list (src/server/api_list_text.c): read in pieces of any size, it is byte for byte
 * the answer the general path encodes from the store's objects (the list's head with the
 * snapshot's version, the items escaped to ASCII, a newline), with selectors or without, and it
 * stays the snapshot it opened on while writes go on.
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
#include "server/internal.h"
#include "xpool/kind.h"
#include "xpool/selector.h"

static const size_t pieces[] = {1, 7, 1000, 32768, 1 << 22};

static void put(struct registry_fixture *f, const char *ns, const char *name, int group)
{
        char value[8];
        json_t *o;

        snprintf(value, sizeof(value), "g%d", group);
        o = json_pack("{s:s, s:s, s:{s:s, s:s, s:{s:s}}, s:{s:s}}",
                      "apiVersion",
                      "v1",
                      "kind",
                      "Pod",
                      "metadata",
                      "name",
                      name,
                      "namespace",
                      ns,
                      "labels",
                      "group",
                      value,
                      "spec",
                      "schedulerName",
                      "xpool");
        assert_non_null(o);
        /* one object is not ASCII: the answer escapes it as the general path does */
        if (group == 2 && strcmp(ns, "team") == 0)
                json_object_set_new(o, "note", json_string("caf\xc3\xa9 \xe2\x9c\x93"));
        assert_int_equal(xp_store_create(f->store, "pods", ns, name, o, NULL, NULL), 0);
        json_decref(o);
}

/* What the general path answers: the list encoded whole, and a newline. */
static char *expected(struct registry_fixture *f,
                      const struct xp_kind *kind,
                      const char *ns,
                      const struct xp_label_selector *labels,
                      uint64_t *ret_version)
{
        json_t *items = NULL, *kept = json_array(), *item, *list;
        struct xp_error err = {0};
        char rv[24], *text, *line;
        size_t i;

        assert_int_equal(xp_store_list(f->store, kind->plural, ns, &items, ret_version, &err), 0);
        json_array_foreach(items, i, item)
        {
                if (!labels ||
                    xp_label_selector_matches(
                        labels, json_object_get(json_object_get(item, "metadata"), "labels")))
                        json_array_append(kept, item);
        }
        json_decref(items);
        xp_registry_version_format(*ret_version, rv);
        list = json_pack("{s:s, s:s, s:{s:s}, s:o}",
                         "kind",
                         kind->list_kind,
                         "apiVersion",
                         kind->api_version,
                         "metadata",
                         "resourceVersion",
                         rv,
                         "items",
                         kept);
        text = json_dumps(list, JSON_COMPACT | JSON_ENSURE_ASCII);
        json_decref(list);
        assert_non_null(text);
        assert_true(asprintf(&line, "%s\n", text) > 0);
        free(text);
        return line;
}

/* The whole stream read max bytes at a time; a write after the open is not in it. */
static char *read_all(struct registry_fixture *f,
                      const struct xp_kind *kind,
                      const char *ns,
                      const char *selector,
                      size_t max,
                      int *writes)
{
        struct xp_label_selector *labels = NULL;
        struct list_stream *l = NULL;
        struct xp_error err = {0};
        size_t len = 0, cap = 1 << 16, calls = 0;
        char *out = malloc(cap), *buf = malloc(max);
        char name[32];
        ssize_t n;

        assert_non_null(out);
        assert_non_null(buf);
        if (selector)
                assert_int_equal(xp_label_selector_parse(selector, &labels, &err), 0);
        assert_int_equal(list_stream_open(f->store, kind, ns, labels, NULL, &l, &err), 0);
        snprintf(name, sizeof(name), "late-%d", (*writes)++);
        put(f, "team", name, 1);
        while ((n = list_stream_read(l, buf, max)) > 0) {
                assert_true((size_t)n <= max);
                assert_true(++calls < 10000000);
                if (len + (size_t)n + 1 > cap) {
                        cap = 2 * (len + (size_t)n + 1);
                        out = realloc(out, cap);
                        assert_non_null(out);
                }
                memcpy(out + len, buf, (size_t)n);
                len += (size_t)n;
        }
        assert_int_equal(n, 0);
        assert_int_equal(list_stream_read(l, buf, max), 0); /* the end stays the end */
        out[len] = '\0';
        list_stream_free(l);
        free(buf);
        return out;
}

static void check(struct registry_fixture *f, const char *ns, const char *selector, int *writes)
{
        const struct xp_kind *kind = xp_kind_by_resource("", "pods");
        struct xp_label_selector *labels = NULL;
        struct xp_error err = {0};
        uint64_t version;
        char *want;

        assert_non_null(kind);
        if (selector)
                assert_int_equal(xp_label_selector_parse(selector, &labels, &err), 0);
        want = expected(f, kind, ns, labels, &version);
        if (!ns && !selector) /* the object that is not ASCII is in it, escaped */
                assert_non_null(strstr(want, "\"note\":\"caf\\u00E9 \\u2713\""));
        for (size_t i = 0; i < sizeof(pieces) / sizeof(pieces[0]); i++) {
                char *got = read_all(f, kind, ns, selector, pieces[i], writes);

                assert_string_equal(got, want);
                free(got);
                /* the next read sees the write the last one did not */
                free(want);
                want = expected(f, kind, ns, labels, &version);
        }
        free(want);
        xp_label_selector_free(labels);
}

static void streamed_equals_whole(void **state)
{
        struct registry_fixture f;
        int writes = 0;

        (void)state;
        fixture_open(&f, "list_stream", 0);
        for (int i = 0; i < 300; i++) {
                char name[32];

                snprintf(name, sizeof(name), "pod-%03d", i);
                put(&f, i % 3 ? "default" : "team", name, i % 4);
        }
        check(&f, NULL, NULL, &writes);
        check(&f, "team", NULL, &writes);
        check(&f, NULL, "group=g2", &writes);
        check(&f, "default", "group in (g0,g3)", &writes);
        check(&f, "nobody", NULL, &writes); /* no items: the head and the tail */
        fixture_close(&f);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(streamed_equals_whole),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
