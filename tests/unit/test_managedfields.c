/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Server-side apply (xpool/managedfields.h) on a small schema: the FieldsV1 set of a
 * configuration, merging by the schema's list and map kinds, conflicts and their message,
 * force, shared ownership, and fields a manager gives up; the Update entries of other writes.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/managedfields_internal.h"
#include "xpool/apischema.h"
#include "xpool/managedfields.h"

static const char text[] = "Thing\n"
                           "  metadata    Meta\n"
                           "  parts       []Part map(name)\n"
                           "  tags        []string set\n"
                           "  args        []string\n"
                           "  env         map[string]\n"
                           "  sel         map[string] atomic\n"
                           "  ref         Ref\n"
                           "  status      string\n"
                           "Meta\n"
                           "  name        string\n"
                           "  labels      map[string]\n"
                           "  managedFields []object\n"
                           "Part\n"
                           "  name        string\n"
                           "  size        int32\n"
                           "Ref atomic\n"
                           "  a           string\n"
                           "  b           string\n";

static struct xp_apischema *schema;
static const struct xp_apitype *thing;

static int setup(void **state)
{
        struct xp_error err = {0};

        (void)state;
        if (xp_apischema_parse(text, strlen(text), &schema, &err) < 0)
                fail_msg("%s", err.msg);
        thing = xp_apischema_find(schema, "Thing");
        return 0;
}

static int teardown(void **state)
{
        (void)state;
        xp_apischema_free(schema);
        return 0;
}

static json_t *parse(const char *s)
{
        json_error_t jerr;
        json_t *v = json_loads(s, 0, &jerr);

        if (!v)
                fail_msg("test JSON: %s: %s", s, jerr.text);
        return v;
}

static void expect_json(const json_t *v, const char *want)
{
        char *got = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);

        if (!got || strcmp(got, want) != 0)
                fail_msg("got  %s\nwant %s", got ? got : "(null)", want);
        free(got);
}

static void fieldset_follows_the_schema(void **state)
{
        json_t *config = parse(
            "{\"apiVersion\":\"v1\",\"kind\":\"Thing\",\"status\":\"x\","
            "\"metadata\":{\"name\":\"t\",\"labels\":{\"a\":\"1\"}},"
            "\"parts\":[{\"name\":\"p\",\"size\":1}],\"tags\":[\"x\",2],\"args\":[\"a\"],"
            "\"env\":{\"K\":\"v\"},\"sel\":{\"k\":\"v\"},\"ref\":{\"a\":\"1\"},\"unknown\":{\"x\":1}}");
        json_t *set = xp_fieldset_of(thing, config);

        (void)state;
        expect_json(
            set,
            "{\"f:args\":{},\"f:env\":{\"f:K\":{}},\"f:metadata\":{\"f:labels\":{\"f:a\":{}}},"
            "\"f:parts\":{\"k:{\\\"name\\\":\\\"p\\\"}\":{\".\":{},\"f:name\":{},\"f:size\":{}}},"
            "\"f:ref\":{},\"f:sel\":{},\"f:tags\":{\"v:\\\"x\\\"\":{},\"v:2\":{}},\"f:unknown\":{}}");
        json_decref(set);
        json_decref(config);
}

static int apply(const json_t *live,
                 const char *config,
                 const char *manager,
                 bool force,
                 json_t **ret,
                 json_t **conflicts)
{
        struct xp_apply_request req = {
            .manager = manager, .api_version = "v1", .now = "2026-01-01T00:00:00Z", .force = force};
        struct xp_error err = {0};
        json_t *c = parse(config);
        int r = xp_apply(thing, live, c, &req, ret, conflicts, &err);

        json_decref(c);
        return r;
}

static void conflicts_force_and_shared_fields(void **state)
{
        json_t *one = NULL, *two = NULL, *three = NULL, *conflicts = NULL;
        char *message;

        (void)state;
        assert_int_equal(
            apply(NULL,
                  "{\"metadata\":{\"name\":\"t\",\"labels\":{\"a\":\"1\",\"b\":\"1\"}},"
                  "\"parts\":[{\"name\":\"p\",\"size\":1}],\"ref\":{\"a\":\"1\"}}",
                  "m1",
                  false,
                  &one,
                  &conflicts),
            0);
        /* the same value is no conflict: both own it */
        assert_int_equal(
            apply(
                one,
                "{\"metadata\":{\"labels\":{\"a\":\"1\"}},\"parts\":[{\"name\":\"q\",\"size\":2}]}",
                "m2",
                false,
                &two,
                &conflicts),
            0);
        expect_json(json_object_get(two, "parts"),
                    "[{\"name\":\"p\",\"size\":1},{\"name\":\"q\",\"size\":2}]");
        /* a changed value another manager owns: one conflict per field, nothing applied */
        assert_int_equal(
            apply(
                two,
                "{\"metadata\":{\"labels\":{\"b\":\"2\"}},\"parts\":[{\"name\":\"p\",\"size\":5}],\"ref\":{\"b\":\"x\"}}",
                "m2",
                false,
                &three,
                &conflicts),
            -EBUSY);
        assert_null(three);
        message = xp_apply_conflict_message(conflicts);
        assert_string_equal(message,
                            "Apply failed with 3 conflicts: conflicts with \"m1\":\n"
                            "- .metadata.labels.b\n- .parts[name=\"p\"].size\n- .ref");
        free(message);
        json_decref(conflicts);
        conflicts = NULL;
        /* force: the values change and m1 no longer owns them */
        assert_int_equal(
            apply(two,
                  "{\"metadata\":{\"labels\":{\"a\":\"1\",\"b\":\"2\"}},\"ref\":{\"b\":\"x\"}}",
                  "m2",
                  true,
                  &three,
                  &conflicts),
            0);
        expect_json(json_object_get(three, "ref"), "{\"b\":\"x\"}");
        expect_json(json_object_get(json_object_get(three, "metadata"), "labels"),
                    "{\"a\":\"1\",\"b\":\"2\"}");
        expect_json(
            json_object_get(
                json_array_get(json_object_get(json_object_get(three, "metadata"), "managedFields"),
                               0),
                "fieldsV1"),
            "{\"f:metadata\":{\"f:labels\":{\"f:a\":{}}},\"f:parts\":{\"k:{\\\"name\\\":\\\"p\\\"}\":"
            "{\".\":{},\"f:name\":{},\"f:size\":{}}}}");
        /* m2 gave up the part q, which it alone owned: gone */
        expect_json(json_object_get(three, "parts"), "[{\"name\":\"p\",\"size\":1}]");
        json_decref(one);
        json_decref(two);
        json_decref(three);
}

static void one_conflict_and_update_managers(void **state)
{
        json_t *live = parse(
            "{\"metadata\":{\"labels\":{\"a\":\"1\"},\"managedFields\":[{\"manager\":\"kubectl-client-side-apply\","
            "\"operation\":\"Update\",\"apiVersion\":\"v1\",\"fieldsType\":\"FieldsV1\","
            "\"fieldsV1\":{\"f:metadata\":{\"f:labels\":{\"f:a\":{}}}}}]}}");
        json_t *out = NULL, *conflicts = NULL,
               *bad = parse("{\"metadata\":{\"managedFields\":{}}}");
        struct xp_apply_request req = {.manager = "m", .api_version = "v1", .now = "t"};
        struct xp_error err = {0};
        char *message;

        (void)state;
        assert_int_equal(
            apply(live, "{\"metadata\":{\"labels\":{\"a\":\"2\"}}}", "m", false, &out, &conflicts),
            -EBUSY);
        message = xp_apply_conflict_message(conflicts);
        assert_string_equal(
            message,
            "Apply failed with 1 conflict: conflict with \"kubectl-client-side-apply\" using v1: .metadata.labels.a");
        free(message);
        json_decref(conflicts);
        assert_int_equal(xp_apply(thing, bad, live, &req, &out, &conflicts, &err), -EINVAL);
        assert_string_equal(err.msg, "metadata.managedFields: must be a list");
        json_decref(bad);
        json_decref(live);
}

/* Writes other than apply: Update entries take what they add or change, others lose it. */
static void update_records_what_a_write_changes(void **state)
{
        struct xp_apply_request req = {
            .manager = "kubectl-create", .api_version = "v1", .now = "t1"};
        json_t *created = parse("{\"metadata\":{\"name\":\"x\",\"labels\":{\"a\":\"1\"}},"
                                "\"parts\":[{\"name\":\"p\",\"size\":1}],\"status\":\"s\"}");
        json_t *live, *next;

        (void)state;
        assert_int_equal(xp_managed_update(thing, NULL, created, &req), 0);
        expect_json(
            json_object_get(json_object_get(created, "metadata"), "managedFields"),
            "[{\"apiVersion\":\"v1\",\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{\"f:metadata\":"
            "{\"f:labels\":{\"f:a\":{}}},\"f:parts\":{\"k:{\\\"name\\\":\\\"p\\\"}\":{\".\":{},"
            "\"f:name\":{},\"f:size\":{}}}},\"manager\":\"kubectl-create\",\"operation\":"
            "\"Update\",\"time\":\"t1\"}]");
        /* a label added and a size changed by another manager: only those are its own */
        live = created;
        next = json_deep_copy(live);
        json_object_set_new(
            json_object_get(json_object_get(next, "metadata"), "labels"), "b", json_string("2"));
        json_object_set_new(
            json_array_get(json_object_get(next, "parts"), 0), "size", json_integer(2));
        req =
            (struct xp_apply_request){.manager = "kubectl-edit", .api_version = "v1", .now = "t2"};
        assert_int_equal(xp_managed_update(thing, live, next, &req), 0);
        expect_json(
            json_object_get(json_object_get(next, "metadata"), "managedFields"),
            "[{\"apiVersion\":\"v1\",\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{\"f:metadata\":"
            "{\"f:labels\":{\"f:a\":{}}},\"f:parts\":{\"k:{\\\"name\\\":\\\"p\\\"}\":{\".\":{},"
            "\"f:name\":{}}}},\"manager\":\"kubectl-create\",\"operation\":\"Update\",\"time\":"
            "\"t1\"},{\"apiVersion\":\"v1\",\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{\"f:metadata\":"
            "{\"f:labels\":{\"f:b\":{}}},\"f:parts\":{\"k:{\\\"name\\\":\\\"p\\\"}\":{\"f:size\":{}}}},"
            "\"manager\":\"kubectl-edit\",\"operation\":\"Update\",\"time\":\"t2\"}]");
        json_decref(live);
        /* a write that changes no field leaves the entries (and their times) alone; one that
         * removes the only field of an entry drops it */
        live = next;
        next = json_deep_copy(live);
        req.now = "t3";
        assert_int_equal(xp_managed_update(thing, live, next, &req), 0);
        assert_true(json_equal(next, live));
        json_object_del(json_object_get(json_object_get(next, "metadata"), "labels"), "b");
        json_object_del(json_array_get(json_object_get(next, "parts"), 0), "size");
        req.manager = "kubectl-label";
        assert_int_equal(xp_managed_update(thing, live, next, &req), 0);
        expect_json(
            json_object_get(json_object_get(next, "metadata"), "managedFields"),
            "[{\"apiVersion\":\"v1\",\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{\"f:metadata\":"
            "{\"f:labels\":{\"f:a\":{}}},\"f:parts\":{\"k:{\\\"name\\\":\\\"p\\\"}\":{\".\":{},"
            "\"f:name\":{}}}},\"manager\":\"kubectl-create\",\"operation\":\"Update\",\"time\":"
            "\"t1\"}]");
        json_decref(live);
        json_decref(next);
}

/* What xp_fieldset_of() documents: the set of the object less apiVersion, kind, status and
 * the metadata but labels and annotations, members in their order; the object left as it was. */
static void fieldset_is_that_of_the_pruned_object(void **state)
{
        static const char *const configs[][2] = {
            {"{\"parts\":[{\"name\":\"p\"}],\"kind\":\"Thing\",\"metadata\":{\"name\":\"t\","
             "\"annotations\":{\"n\":\"1\"},\"labels\":{\"a\":\"1\"}},\"status\":\"s\","
             "\"env\":{\"K\":\"v\"},\"apiVersion\":\"v1\"}",
             "{\"parts\":[{\"name\":\"p\"}],\"metadata\":{\"labels\":{\"a\":\"1\"},"
             "\"annotations\":{\"n\":\"1\"}},\"env\":{\"K\":\"v\"}}"},
            {"{\"metadata\":{\"name\":\"t\",\"uid\":\"u\"},\"tags\":[\"x\"],\"status\":\"s\"}",
             "{\"tags\":[\"x\"]}"},
            {"{\"ref\":{\"a\":\"1\"},\"metadata\":3,\"args\":[\"a\"]}",
             "{\"ref\":{\"a\":\"1\"},\"args\":[\"a\"]}"},
        };

        (void)state;
        for (size_t i = 0; i < sizeof(configs) / sizeof(configs[0]); i++) {
                json_t *config = parse(configs[i][0]), *before = json_deep_copy(config);
                json_t *pruned = parse(configs[i][1]);
                json_t *got = xp_fieldset_of(thing, config), *want = xp_fieldset_of(thing, pruned);
                /* not sorted: the order of the members is part of what a client reads */
                char *got_text = json_dumps(got, JSON_COMPACT);
                char *want_text = json_dumps(want, JSON_COMPACT);

                assert_non_null(got_text);
                assert_string_equal(got_text, want_text);
                assert_true(json_equal(config, before));
                free(got_text);
                free(want_text);
                json_decref(got);
                json_decref(want);
                json_decref(config);
                json_decref(before);
                json_decref(pruned);
        }
}

/* A write of the status alone (one set for both sides) leaves every entry as it was, as a write
 * that changes nothing; a label key too long for a set's path is owned anew by each writer, as
 * the comparison of both sides has always found it. */
static void status_write_keeps_every_owner(void **state)
{
        struct xp_apply_request req = {
            .manager = "kubectl-create", .api_version = "v1", .now = "t1"};
        json_t *live = parse("{\"metadata\":{\"name\":\"x\",\"labels\":{\"a\":\"1\"}},"
                             "\"parts\":[{\"name\":\"p\",\"size\":1}],\"status\":\"s\"}");
        json_t *next, *long_label, *entries;
        char key[1100];

        (void)state;
        assert_int_equal(xp_managed_update(thing, NULL, live, &req), 0);
        entries =
            json_deep_copy(json_object_get(json_object_get(live, "metadata"), "managedFields"));
        next = json_deep_copy(live);
        json_object_set_new(next, "status", json_string("Running"));
        req = (struct xp_apply_request){.manager = "xpool-agent", .api_version = "v1", .now = "t2"};
        assert_int_equal(xp_managed_update(thing, live, next, &req), 0);
        assert_true(json_equal(json_object_get(json_object_get(next, "metadata"), "managedFields"),
                               entries));
        json_decref(next);
        json_decref(entries);

        /* a label whose key is longer than a path element holds: its path names no field */
        memset(key, 'k', sizeof(key) - 1);
        key[sizeof(key) - 1] = '\0';
        long_label = json_object_get(json_object_get(live, "metadata"), "labels");
        json_object_set_new(long_label, key, json_string("v"));
        next = json_deep_copy(live);
        json_object_set_new(next, "status", json_string("Succeeded"));
        assert_int_equal(xp_managed_update(thing, live, next, &req), 0);
        entries = json_object_get(json_object_get(next, "metadata"), "managedFields");
        assert_int_equal(json_array_size(entries), 2);
        assert_string_equal(
            json_string_value(json_object_get(json_array_get(entries, 0), "manager")),
            "kubectl-create");
        assert_string_equal(
            json_string_value(json_object_get(json_array_get(entries, 1), "manager")),
            "xpool-agent");
        assert_int_equal(
            json_object_size(json_object_get(
                json_object_get(json_object_get(json_array_get(entries, 1), "fieldsV1"),
                                "f:metadata"),
                "f:labels")),
            1);
        json_decref(next);
        json_decref(live);
}

/* Whether every path of a source's set names its value, said only where sure: a name longer than
 * a path element holds, or a list item whose key finds an earlier one (a key twice, a keyless
 * item after another), is not sure, and the update then makes and walks the set. */
static void names_all_only_where_sure(void **state)
{
        static const char *const sure[] = {
            "{\"metadata\":{\"labels\":{\"a\":\"1\"}},\"parts\":[{\"name\":\"p\",\"size\":1},"
            "{\"name\":\"q\"}],\"tags\":[\"x\",2],\"args\":[\"a\",\"a\"],\"env\":{\"k\":\"v\"},"
            "\"sel\":{\"s\":\"1\"},\"ref\":{\"a\":\"1\"},\"unknown\":{\"u\":1}}",
            "{\"parts\":[{\"size\":1}]}",
            "{}",
        };
        static const char *const unsure[] = {
            "{\"parts\":[{\"name\":\"p\",\"size\":1},{\"name\":\"p\"}]}",
            "{\"parts\":[{\"name\":\"p\"},{\"size\":1}]}",
            "{\"tags\":[\"x\",\"y\",\"x\"]}",
        };
        char key[1023];
        json_t *source;

        (void)state;
        for (size_t i = 0; i < sizeof(sure) / sizeof(*sure); i++) {
                source = parse(sure[i]);
                assert_true(xp_fieldset_names_all(thing, source));
                json_decref(source);
        }
        for (size_t i = 0; i < sizeof(unsure) / sizeof(*unsure); i++) {
                source = parse(unsure[i]);
                assert_false(xp_fieldset_names_all(thing, source));
                json_decref(source);
        }
        /* "f:" and 1,021 bytes fill managedfields.c's 1,024-byte element; 1,022 do not fit */
        memset(key, 'k', sizeof(key) - 1);
        key[sizeof(key) - 1] = '\0';
        source = parse("{\"metadata\":{\"labels\":{}}}");
        json_object_set_new(
            json_object_get(json_object_get(source, "metadata"), "labels"), key, json_string("v"));
        assert_false(xp_fieldset_names_all(thing, source));
        json_object_clear(json_object_get(json_object_get(source, "metadata"), "labels"));
        key[sizeof(key) - 2] = '\0';
        json_object_set_new(
            json_object_get(json_object_get(source, "metadata"), "labels"), key, json_string("v"));
        assert_true(xp_fieldset_names_all(thing, source));
        json_decref(source);
}

/* Entries' times as metav1.Time writes them: UTC, whole seconds, "Z"; those already so, and one
 * that does not parse, are left; the mended entries are copies, the shared ones untouched. */
static void entry_times_are_written_as_kubernetes_does(void **state)
{
        json_t *object = parse("{\"metadata\":{\"managedFields\":["
                               "{\"manager\":\"a\",\"time\":\"2026-12-05T19:40:00+00:00\"},"
                               "{\"manager\":\"b\",\"time\":\"2026-12-05T21:40:00.75+02:00\"},"
                               "{\"manager\":\"c\",\"time\":\"2026-12-05T19:40:00Z\"},"
                               "{\"manager\":\"d\",\"time\":\"yesterday\"},{\"manager\":\"e\"}]}}");
        json_t *before =
            json_incref(json_object_get(json_object_get(object, "metadata"), "managedFields"));
        json_t *first = json_incref(json_array_get(before, 0)), *after;
        const char *want[] = {"2026-12-05T19:40:00Z",
                              "2026-12-05T19:40:00Z",
                              "2026-12-05T19:40:00Z",
                              "yesterday",
                              NULL};

        (void)state;
        assert_int_equal(xp_managed_times_canonical(object), 0);
        after = json_object_get(json_object_get(object, "metadata"), "managedFields");
        for (size_t i = 0; i < 5; i++)
                if (want[i])
                        assert_string_equal(
                            json_string_value(json_object_get(json_array_get(after, i), "time")),
                            want[i]);
        assert_null(json_object_get(json_array_get(after, 4), "time"));
        /* the entry mended is a copy; one left as it was is the same */
        assert_string_equal(json_string_value(json_object_get(first, "time")),
                            "2026-12-05T19:40:00+00:00");
        assert_ptr_equal(json_array_get(after, 2), json_array_get(before, 2));
        json_decref(first);
        json_decref(before);
        /* nothing to mend: the list stays the same list */
        assert_int_equal(xp_managed_times_canonical(object), 0);
        assert_ptr_equal(json_object_get(json_object_get(object, "metadata"), "managedFields"),
                         after);
        json_decref(object);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(fieldset_follows_the_schema),
            cmocka_unit_test(conflicts_force_and_shared_fields),
            cmocka_unit_test(one_conflict_and_update_managers),
            cmocka_unit_test(update_records_what_a_write_changes),
            cmocka_unit_test(fieldset_is_that_of_the_pruned_object),
            cmocka_unit_test(status_write_keeps_every_owner),
            cmocka_unit_test(names_all_only_where_sure),
            cmocka_unit_test(entry_times_are_written_as_kubernetes_does),
        };

        return cmocka_run_group_tests(tests, setup, teardown);
}
